"""SKCE (Widmann et al. 2019) against a dense reference, its binary closed form and its null mean."""

from __future__ import annotations

import numpy as np
import pytest

from calib.calibration_errors.kernel_calibration import median_bandwidth, mmce, skce
from calib.validation import CalibInputError


def _data(seed: int, n: int, k: int, calibrated: bool = True, scale: float = 1.0):
    rng = np.random.default_rng(seed)
    logits = 2.0 * rng.normal(size=(n, k))
    truth = np.exp(logits - logits.max(axis=1, keepdims=True))
    truth /= truth.sum(axis=1, keepdims=True)
    labels = (rng.random(n)[:, None] > np.cumsum(truth, axis=1)).sum(axis=1).clip(max=k - 1)
    model = logits if calibrated else scale * logits
    probs = np.exp(model - model.max(axis=1, keepdims=True))
    return probs / probs.sum(axis=1, keepdims=True), labels


def _dense(p, y, nu, kernel):
    """Every pair written out: kappa(p_i, p_j) (e_yi - p_i)^T (e_yj - p_j)."""
    residual = np.eye(p.shape[1])[y] - p
    dist = np.linalg.norm(p[:, None, :] - p[None, :, :], axis=2)
    kappa = np.exp(-dist / nu) if kernel == "laplacian" else np.exp(-(dist**2) / (2 * nu**2))
    return kappa * (residual @ residual.T)


@pytest.mark.parametrize("kernel", ["laplacian", "gaussian"])
@pytest.mark.parametrize("k", [2, 4])
def test_estimators_match_a_dense_reference(kernel, k):
    p, y = _data(0, 150, k, calibrated=False, scale=2.0)
    p, y = np.vstack([p, p[:20], p[:5] + 1e-9 * np.eye(k)[0] - 1e-9 * np.eye(k)[1]]), np.r_[y, y[:20], y[:5]]
    h = _dense(p, y, 0.3, kernel)
    n = y.size
    unbiased = (h.sum() - np.trace(h)) / (n * (n - 1))
    # The library forms squared distances as |a|^2 + |b|^2 - 2 a.b (one matrix product), whose ~1e-16
    # cancellation the Laplacian's square root would turn into ~1e-8 for the duplicated and nearly
    # duplicated rows above; it recomputes such pairs from their differences, so 1e-12 holds for both.
    rel = 1e-12
    assert skce(p, y, kind="probs", kernel=kernel, bandwidth=0.3) == pytest.approx(unbiased, rel=rel)
    biased = skce(p, y, kind="probs", kernel=kernel, bandwidth=0.3, estimator="biased")
    assert biased == pytest.approx(h.mean(), rel=rel)
    linear = np.mean([h[2 * i, 2 * i + 1] for i in range(n // 2)])
    assert skce(p, y, kind="probs", kernel=kernel, bandwidth=0.3, estimator="block") == pytest.approx(linear, rel=rel)


def test_binary_closed_form():
    # two classes: <e_y - p, e_y' - p'> = 2 (y - p_1)(y' - p'_1)
    p, y = _data(1, 120, 2, calibrated=False, scale=3.0)
    r = y - p[:, 1]
    dist = np.abs(p[:, None, 1] - p[None, :, 1]) * np.sqrt(2)
    h = np.exp(-dist / 0.2) * 2 * np.outer(r, r)
    n = y.size
    expected = (h.sum() - np.trace(h)) / (n * (n - 1))
    assert skce(p, y, kind="probs", bandwidth=0.2) == pytest.approx(expected, rel=1e-7)  # Laplacian: see above


def test_unbiased_estimator_has_mean_zero_under_calibration_and_not_otherwise():
    calibrated = [skce(*_data(s, 300, 3), kind="probs", bandwidth=0.5) for s in range(40)]
    mean, se = np.mean(calibrated), np.std(calibrated, ddof=1) / np.sqrt(len(calibrated))
    assert abs(mean) < 4 * se  # E = 0 under calibration; 4 standard errors
    overconfident = [
        skce(*_data(s, 300, 3, calibrated=False, scale=3.0), kind="probs", bandwidth=0.5) for s in range(5)
    ]
    assert min(overconfident) > mean + 10 * se


def test_tiles_do_not_change_the_value(monkeypatch):
    import calib.calibration_errors.kernel_calibration as module

    p, y = _data(2, 400, 3, calibrated=False, scale=2.0)
    whole = skce(p, y, kind="probs", bandwidth=0.4)
    blocks = skce(p, y, kind="probs", bandwidth=0.4, estimator="block", block_size=40)
    monkeypatch.setattr(module, "_TILE_ROWS", 7)  # ragged tiles: 400 = 57 * 7 + 1
    monkeypatch.setattr(module, "_TILE_COLS", 13)
    monkeypatch.setattr(module, "_BLOCK_PAIRS", 3 * 40 * 40)  # 3 blocks at a time
    assert skce(p, y, kind="probs", bandwidth=0.4) == pytest.approx(whole, rel=1e-12)
    assert skce(p, y, kind="probs", bandwidth=0.4, estimator="block", block_size=40) == pytest.approx(blocks, rel=1e-12)


def test_median_bandwidth_and_bad_arguments():
    p, y = _data(3, 50, 3)
    d = np.linalg.norm(p[:, None] - p[None, :], axis=2)[np.triu_indices(50, 1)]
    assert median_bandwidth(p) == pytest.approx(np.median(d), rel=1e-12)
    with pytest.raises(CalibInputError, match="estimator"):
        skce(p, y, kind="probs", estimator="quadratic")
    with pytest.raises(CalibInputError, match="bandwidth"):
        skce(p, y, kind="probs", bandwidth=-1.0)
    with pytest.raises(CalibInputError, match="distinct predictions"):
        skce(np.full((5, 3), 1 / 3), np.zeros(5, dtype=int), kind="probs")


def _dense_mmce_sum(p, y, nu):
    r = p.max(axis=1)
    a = (p.argmax(axis=1) == y) - r
    return np.sum(np.outer(a, a) * np.exp(-np.abs(r[:, None] - r[None, :]) / nu)), a


@pytest.mark.parametrize("nu", [0.4, 0.05, 0.005])
def test_mmce_sorted_cumulative_sums_match_every_pair(nu):
    p, y = _data(4, 300, 5, calibrated=False, scale=2.0)
    total, a = _dense_mmce_sum(p, y, nu)
    n = y.size
    # the cumulative sums reorder float additions of terms up to exp(1/nu): 1e-9 relative
    assert mmce(p, y, kind="probs", bandwidth=nu) == pytest.approx(np.sqrt(total / n**2), rel=1e-9)
    unbiased = (total - np.sum(a * a)) / (n * (n - 1))
    assert mmce(p, y, kind="probs", bandwidth=nu, estimator="unbiased") == pytest.approx(unbiased, rel=1e-9)


def test_mmce_is_zero_for_exact_confidences_and_grows_with_overconfidence():
    # a prediction whose confidence is 1 and right has c - r = 0: MMCE = 0 exactly
    p = np.eye(3)[[0, 1, 2, 0]]
    assert mmce(p, np.array([0, 1, 2, 0]), kind="probs") == 0.0
    values = [mmce(*_data(5, 2000, 3, calibrated=False, scale=s), kind="probs") for s in (1.0, 2.0, 4.0)]
    assert values[0] < values[1] < values[2]
    with pytest.raises(CalibInputError, match="bandwidth"):
        mmce(p, np.array([0, 1, 2, 0]), kind="probs", bandwidth=0.0)


def test_median_bandwidth_of_near_identical_predictions_is_exact():
    # Hypothesis found two rows 1e-5 apart whose SKCE from logits and from the same probabilities
    # differed by 8e-7: the median came from |a|^2 + |b|^2 - 2 <a, b>, which cancels to a few digits.
    from scipy.special import softmax

    logits = np.array([[0.0, 1e-5], [1e-5, 1e-5]])
    probs = softmax(logits, axis=1)
    exact = np.sqrt(2.0) * abs(probs[0, 1] - probs[1, 1])
    assert median_bandwidth(probs) == pytest.approx(exact, rel=1e-9)
    labels = np.array([0, 0])
    assert skce(logits, labels, kind="logits") == pytest.approx(skce(probs, labels, kind="probs"), rel=1e-9)
