"""The SKCE tests (Widmann et al. 2019): block test and asymptotic (wild bootstrap) test, size and power."""

from __future__ import annotations

import numpy as np
import pytest

import calib.calibration_errors.kernel_calibration as kernel_calibration
from calib.calibration_errors.kernel_calibration import skce, skce_kernel
from calib.resampling.significance import skce_asymptotic_test, skce_block_test
from calib.validation import CalibInputError


def _data(seed: int, n: int, k: int = 3, scale: float = 1.0):
    """Labels drawn from softmax(logits); the model reports softmax(scale * logits) (calibrated at 1)."""
    rng = np.random.default_rng(seed)
    logits = 1.5 * rng.normal(size=(n, k))
    truth = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = (rng.random(n)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1).clip(max=k - 1)
    model = np.exp(scale * logits)
    return model / model.sum(axis=1, keepdims=True), labels


def _dense_h(p, y, nu):
    residual = np.eye(p.shape[1])[y] - p
    dist = np.linalg.norm(p[:, None, :] - p[None, :, :], axis=2)
    return np.exp(-dist / nu) * (residual @ residual.T)


def test_quadratic_forms_match_every_pair(monkeypatch):
    monkeypatch.setattr(kernel_calibration, "_TILE_ROWS", 9)
    monkeypatch.setattr(kernel_calibration, "_TILE_COLS", 20)
    p, y = _data(0, 101, scale=2.0)
    weights = np.random.default_rng(1).normal(size=(5, 101))
    h = _dense_h(p, y, 0.5)
    off = h - np.diag(np.diag(h))
    expected = np.einsum("bi,ij,bj->b", weights, off, weights)
    got = skce_kernel(p, y, kind="probs", bandwidth=0.5).quadratic_forms(weights)
    # the library forms distances from one matrix product; the square root of a ~1e-16 cancellation: 1e-7
    np.testing.assert_allclose(got, expected, rtol=1e-7)


def test_wild_bootstrap_has_the_closed_form_mean_and_variance():
    # Rademacher signs: E U* = 0 and Var U* = 2 sum_{i != j} h_ij^2 / (n (n - 1))^2 exactly
    p, y = _data(2, 60, scale=2.0)
    n = y.size
    h = _dense_h(p, y, 0.4)
    off = h - np.diag(np.diag(h))
    sd = np.sqrt(2.0 * np.sum(off**2)) / (n * (n - 1))
    null = skce_asymptotic_test(p, y, kind="probs", bandwidth=0.4, n_resamples=4000, seed=3).null_statistics
    assert abs(null.mean()) < 4 * sd / np.sqrt(null.size)  # 4 Monte Carlo standard errors
    # the sd of a sample sd of 4000 near-normal draws is about 1.1 %; 5 % allows the heavier tails
    assert null.std() == pytest.approx(sd, rel=0.05)


def test_block_test_statistic_is_the_block_estimator():
    p, y = _data(4, 500, scale=2.0)
    result = skce_block_test(p, y, kind="probs", block_size=5, bandwidth=0.5)
    assert result.statistic == pytest.approx(skce(p, y, kind="probs", estimator="block", block_size=5, bandwidth=0.5))
    assert result.method == "block" and result.standard_error > 0


@pytest.mark.parametrize("test", ["block", "asymptotic"])
def test_size_under_calibration(test):
    # 300 calibrated data sets, level 5 %: the rejection count is Binomial(300, 0.05) (mean 15, sd 3.8);
    # [4, 28] is a 3-sd band on either side.
    p_values = []
    for seed in range(300):
        p, y = _data(100 + seed, 120)
        if test == "block":
            p_values.append(skce_block_test(p, y, kind="probs", bandwidth=0.5).p_value)
        else:
            p_values.append(skce_asymptotic_test(p, y, kind="probs", bandwidth=0.5, n_resamples=199, seed=seed).p_value)
    rejections = int(np.sum(np.array(p_values) <= 0.05))
    assert 4 <= rejections <= 28


def test_both_tests_reject_overconfidence():
    p, y = _data(7, 600, scale=3.0)
    assert skce_asymptotic_test(p, y, kind="probs", n_resamples=199, seed=0).p_value == pytest.approx(1 / 200)
    # the block test uses only the pairs within blocks, so it needs more data for the same power
    p, y = _data(7, 3000, scale=3.0)
    assert skce_block_test(p, y, kind="probs", block_size=10).p_value < 1e-4


def test_seeded_and_validated():
    p, y = _data(8, 80)
    first = skce_asymptotic_test(p, y, kind="probs", n_resamples=50, seed=5).null_statistics
    np.testing.assert_array_equal(
        first, skce_asymptotic_test(p, y, kind="probs", n_resamples=50, seed=5).null_statistics
    )
    with pytest.raises(CalibInputError, match="2 blocks"):
        skce_block_test(p[:3], y[:3], kind="probs", block_size=2, bandwidth=0.5)
    with pytest.raises(CalibInputError, match="n_resamples"):
        skce_asymptotic_test(p, y, kind="probs", n_resamples=0)
