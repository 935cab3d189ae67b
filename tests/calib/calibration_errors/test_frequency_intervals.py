"""Per-bin Clopper-Pearson intervals of the reliability bins (issue 57): exact binomial against scipy for
unweighted bins, Kish's effective size per bin with sample weights (the weights' scale does not matter),
a non-degenerate interval for a bin of all 0 or all 1, the engine's bins equal to the arrays', and coverage."""

import numpy as np
import pytest
from scipy.stats import binomtest

import calib
from calib.calibration_errors.binned import BinnedCalibrationError, ReliabilityBins, reliability_bins
from calib.validation import kish_effective_size


def _rows(seed: int, n: int = 300):
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=n)
    y = (rng.uniform(size=n) < x**1.3).astype(float)
    return x, y, rng


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("level", [0.8, 0.95, 0.99])
def test_unweighted_intervals_are_scipys_exact_binomial(seed, level):
    x, y, _ = _rows(seed, n=120)
    bins = reliability_bins(x, y, n_bins=10)
    low, high = bins.frequency_intervals(level)
    assert bins.weight_squares is None
    for b in range(10):
        n = int(bins.counts[b])
        if n == 0:
            assert np.isnan(low[b]) and np.isnan(high[b])
            continue
        k = round(float(bins.frequency[b]) * n)
        expected = binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
        assert low[b] == pytest.approx(expected.low, abs=1e-12)
        assert high[b] == pytest.approx(expected.high, abs=1e-12)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("c", [0.001, 1.0, 1000.0, 7.0])
def test_constant_weights_of_any_scale_give_the_unweighted_intervals(seed, c):
    x, y, _ = _rows(seed)
    plain = reliability_bins(x, y, n_bins=15).frequency_intervals(0.95)
    weighted = reliability_bins(x, y, n_bins=15, sample_weight=np.full(x.size, c))
    for a, b in zip(weighted.frequency_intervals(0.95), plain, strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-9)
    np.testing.assert_allclose(weighted.effective_sizes(), reliability_bins(x, y, n_bins=15).counts, rtol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_scaling_the_weights_leaves_the_intervals(seed):
    x, y, rng = _rows(seed)
    w = rng.uniform(0.1, 5.0, size=x.size)
    base = reliability_bins(x, y, n_bins=15, sample_weight=w).frequency_intervals(0.9)
    for c in (0.001, 1000.0):
        scaled = reliability_bins(x, y, n_bins=15, sample_weight=c * w).frequency_intervals(0.9)
        for a, b in zip(scaled, base, strict=True):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-9)


@pytest.mark.parametrize("outcome", [0.0, 1.0])
@pytest.mark.parametrize("level", [0.9, 0.95])
def test_a_bin_of_all_zeros_or_all_ones_has_the_closed_form_bound_in_its_effective_size(outcome, level):
    w = np.array([1.0, 2.0, 3.0, 0.5, 4.0, 1.5])
    x = np.full(w.size, 0.33)
    bins = reliability_bins(x, np.full(w.size, outcome), n_bins=3, sample_weight=w)
    n_eff = kish_effective_size(w)
    assert bins.effective_sizes()[0] == pytest.approx(n_eff, rel=1e-12)
    low, high = bins.frequency_intervals(level)
    bound = (1 - level) / 2
    if outcome == 0.0:
        assert low[0] == 0.0 and high[0] == pytest.approx(1 - bound ** (1 / n_eff), rel=1e-12)
    else:
        assert high[0] == 1.0 and low[0] == pytest.approx(bound ** (1 / n_eff), rel=1e-12)
    assert 0.0 < high[0] - low[0] < 1.0  # not collapsed to a point
    assert np.isnan(low[1:]).all() and np.isnan(high[1:]).all()


def test_unweighted_intervals_are_unchanged_bit_for_bit():
    # The field defaults to None, and None is the former counts-of-samples rule, to the bit
    x, y, _ = _rows(5)
    bins = reliability_bins(x, y, n_bins=15)
    again = ReliabilityBins(bins.edges, bins.counts, bins.mean_confidence, bins.frequency)
    for a, b in zip(again.frequency_intervals(), bins.frequency_intervals(), strict=True):
        assert np.array_equal(a, b, equal_nan=True)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("weighted", [False, True])
def test_the_engines_bins_carry_the_same_intervals_as_the_arrays(seed, weighted):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(3), size=400)
    labels = rng.integers(0, 3, size=400)
    w = rng.uniform(0.05, 4.0, size=400) if weighted else None
    summary = calib.evaluate(probs, labels, kind="probs", sample_weight=w)
    (engine,) = summary.reliability["ECE top-label"]
    (arrays,) = BinnedCalibrationError("top_label", n_bins=engine.counts.size).reliability(
        probs, labels, kind="probs", sample_weight=w
    )
    assert (engine.weight_squares is None) == (not weighted) == (arrays.weight_squares is None)
    for a, b in zip(engine.frequency_intervals(), arrays.frequency_intervals(), strict=True):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)
    for a, b in zip(summary.reliability["ECE class-wise"], BinnedCalibrationError("classwise").reliability(
        probs, labels, kind="probs", sample_weight=w
    ), strict=True):  # fmt: skip
        np.testing.assert_allclose(a.effective_sizes(), b.effective_sizes(), rtol=1e-10)


def test_the_95_interval_covers_a_rare_frequency_at_least_at_its_level():
    # 2000 bins of n = 20 with p = 0.05 (a third of them all 0): Clopper-Pearson is conservative
    rng = np.random.default_rng(57)
    n, p, reps = 20, 0.05, 2000
    k = rng.binomial(n, p, size=reps)
    bins = ReliabilityBins(None, np.full(reps, n), np.full(reps, p), k / n)
    low, high = bins.frequency_intervals(0.95)
    covered = np.mean((low <= p) & (p <= high))
    assert covered >= 0.95 - 3 * np.sqrt(0.95 * 0.05 / reps)


def test_the_95_interval_of_weighted_bins_covers_at_its_level():
    # Skewed weights: the effective-size interval keeps its level (0.98 here); reading the weights as counts
    # (the former rule) covers 0.73 of these bins
    rng = np.random.default_rng(58)
    n, p, reps = 30, 0.2, 2000
    w = rng.lognormal(0.0, 1.0, size=(reps, n))
    y = rng.random((reps, n)) < p
    counts, squares = w.sum(axis=1), (w**2).sum(axis=1)
    bins = ReliabilityBins(None, counts, np.full(reps, p), (w * y).sum(axis=1) / counts, squares)
    low, high = bins.frequency_intervals(0.95)
    covered = np.mean((low <= p) & (p <= high))
    assert covered >= 0.95 - 3 * np.sqrt(0.95 * 0.05 / reps)
