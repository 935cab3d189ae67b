"""Tests of pipeline.named_metrics: paper-000 metric names mapped to calib calls."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from calib.calibrators import AffineCalibrator, HistogramBinning, IsotonicCalibrator, TemperatureScaling
from calib.data.synthetic import gaussian_posteriors
from calib.scoring.scores import cross_entropy
from pipeline.named_metrics import (
    EceOptions,
    HistogramOptions,
    MetricOptions,
    calibrated_posteriors,
    calibrator_for,
    compute,
)

OPTIONS = MetricOptions(
    ece=EceOptions(n_bins=15, closed="right"),
    histogram=HistogramOptions(n_bins=10, empty_bin="zero"),
    n_folds=5,
    seed=0,
)
SIMPLE = ["NCE", "NBS", "NRisk-01", "NRisk-01r", "NRisk-imb", "ECE", "ECEbin", "ECEmc"]


@pytest.fixture(scope="module")
def binary():
    data = gaussian_posteriors(n_classes=2, n_samples=400, prior1=0.7, variance=0.2, scale=3.0, seed=0)
    return data.systems["mcs"], data.labels


@pytest.fixture(scope="module")
def with_zero(binary):
    """The binary set with one exact zero probability, on a class that is not the sample's label."""
    logp, labels = binary
    logp = logp.copy()
    row = int(np.flatnonzero(labels == 0)[0])
    logp[row] = [0.0, -np.inf]
    return logp, labels


def test_defaults():
    assert OPTIONS.rcl_zero_probability == "smooth" and OPTIONS.implementation == "calib"


def test_ecebin_is_ece(binary):
    logp, labels = binary
    assert compute("ECEbin", logp, labels, OPTIONS) == compute("ECE", logp, labels, OPTIONS)


@pytest.mark.parametrize("name", SIMPLE)
def test_simple_metrics_are_finite_fractions(binary, name):
    logp, labels = binary
    value = compute(name, logp, labels, OPTIONS)
    assert np.isfinite(value)
    assert 0 <= value <= 2


def test_nce_matches_calib(binary):
    logp, labels = binary
    assert compute("NCE", logp, labels, OPTIONS) == pytest.approx(
        cross_entropy(logp, labels, kind="logprobs", normalize=True)
    )


def test_pav_beats_affine_on_its_own_training_data(binary):
    logp, labels = binary
    pav = compute("RCL-CE-Ptt", logp, labels, OPTIONS)
    affine = compute("RCL-CE-Dtt", logp, labels, OPTIONS)
    assert pav >= affine - 1e-9
    assert 0 < affine < 1


def test_rcl_is_relative_drop_of_cross_entropy(binary):
    logp, labels = binary
    calibrated = calibrated_posteriors("D", "tt", logp, labels, OPTIONS)
    raw = cross_entropy(logp, labels, kind="logprobs")
    cal = cross_entropy(calibrated, labels, kind="logprobs")
    assert compute("RCL-CE-Dtt", logp, labels, OPTIONS) == pytest.approx((raw - cal) / raw)


@pytest.mark.parametrize(
    ("letter", "cls"),
    [("D", AffineCalibrator), ("T", TemperatureScaling), ("P", IsotonicCalibrator), ("H", HistogramBinning)],
)
def test_calibrator_for(letter, cls):
    calibrator = calibrator_for(letter, OPTIONS)
    assert type(calibrator) is cls


def test_calibrator_for_histogram_options():
    calibrator = calibrator_for("H", OPTIONS)
    assert calibrator.n_bins == 10
    assert calibrator.closed == "right"
    assert calibrator.empty_bin == "zero"


def test_temperature_scaling_has_no_bias():
    assert calibrator_for("T", OPTIONS).bias is False
    assert calibrator_for("D", OPTIONS).bias is True


def test_exact_zero_probability_under_nan_policy(with_zero):
    logp, labels = with_zero
    nan_options = replace(OPTIONS, rcl_zero_probability="nan")
    assert math.isnan(compute("RCL-CE-Dxv", logp, labels, nan_options))
    assert math.isnan(compute("RCL-BS-Ptt", logp, labels, nan_options))
    # the policy concerns RCL only
    assert np.isfinite(compute("ECE", logp, labels, nan_options))


def test_exact_zero_probability_under_smooth_policy(with_zero, binary):
    logp, labels = with_zero
    value = compute("RCL-CE-Dxv", logp, labels, OPTIONS)
    assert np.isfinite(value)
    # one smoothed row barely moves the result
    assert value == pytest.approx(compute("RCL-CE-Dxv", *binary, OPTIONS), abs=0.05)


def test_nan_policy_without_zeros_is_the_smooth_value(binary):
    logp, labels = binary
    nan_options = replace(OPTIONS, rcl_zero_probability="nan")
    assert compute("RCL-CE-Dxv", logp, labels, nan_options) == compute("RCL-CE-Dxv", logp, labels, OPTIONS)


@pytest.mark.parametrize("name", ["ECE-top", "RCL-CE-Xxv", "RCL-LL-Dxv", "RCL-CE-Dxx", "rcl-ce-dxv", "nce", ""])
def test_unknown_metric_name(binary, name):
    logp, labels = binary
    with pytest.raises(ValueError, match="unknown metric name") as info:
        compute(name, logp, labels, OPTIONS)
    message = str(info.value)
    for known in SIMPLE:
        assert f"'{known}'" in message
    assert "RCL-<CE|BS>-<D|T|H|P><xv|tt>" in message


def test_cache_is_filled_and_reused(binary):
    logp, labels = binary
    cache: dict = {}
    first = calibrated_posteriors("D", "xv", logp, labels, OPTIONS, cache=cache)
    assert set(cache) == {("D", "xv")}
    assert cache[("D", "xv")] is first
    second = calibrated_posteriors("D", "xv", logp, labels, OPTIONS, cache=cache)
    assert second is first
    # the cache is keyed by calibrator and protocol: a different pair is computed afresh
    other = calibrated_posteriors("D", "tt", logp, labels, OPTIONS, cache=cache)
    assert other is not first
    assert set(cache) == {("D", "xv"), ("D", "tt")}


def test_cache_is_what_compute_uses(binary):
    logp, labels = binary
    cache: dict = {}
    value = compute("RCL-CE-Dxv", logp, labels, OPTIONS, cache=cache)
    assert set(cache) == {("D", "xv")}
    # the Brier RCL shares the calibrated posteriors: it reads them from the cache
    cached = cache[("D", "xv")]
    compute("RCL-BS-Dxv", logp, labels, OPTIONS, cache=cache)
    assert cache[("D", "xv")] is cached and len(cache) == 1
    # a planted entry is used as is (perfect posteriors: the whole CE is calibration loss)
    perfect = np.where(np.eye(2, dtype=bool)[labels], 0.0, -50.0)
    planted = {("D", "xv"): perfect}
    assert compute("RCL-CE-Dxv", logp, labels, OPTIONS, cache=planted) == pytest.approx(1.0, abs=1e-12)
    assert value < 1


def test_without_cache_results_are_recomputed_identically(binary):
    logp, labels = binary
    a = calibrated_posteriors("T", "xv", logp, labels, OPTIONS)
    b = calibrated_posteriors("T", "xv", logp, labels, OPTIONS)
    assert a is not b
    assert np.array_equal(a, b)


def test_explicit_folds_apply_to_xv_only(binary):
    logp, labels = binary
    folds = {"D": np.arange(labels.size) % 2}
    two_fold = calibrated_posteriors("D", "xv", logp, labels, OPTIONS, folds=folds)
    five_fold = calibrated_posteriors("D", "xv", logp, labels, OPTIONS)
    assert not np.allclose(two_fold, five_fold)
    tt = calibrated_posteriors("D", "tt", logp, labels, OPTIONS, folds=folds)
    assert np.allclose(tt, calibrated_posteriors("D", "tt", logp, labels, OPTIONS))
    # a letter without explicit folds falls back to the seeded folds
    assert np.array_equal(
        calibrated_posteriors("T", "xv", logp, labels, OPTIONS, folds=folds),
        calibrated_posteriors("T", "xv", logp, labels, OPTIONS),
    )
