"""Sample weights in the binnings and the binned errors: integer weights are repeated rows (issue 56)."""

import numpy as np
import pytest
from weighted_rows import weighted_rows

from calib.calibration_errors.binned import BinnedCalibrationError, reliability_bins
from calib.calibration_errors.binning import (
    bin_statistics,
    equal_mass_bin_ids,
    equal_mass_edges,
    strategy_edges,
)
from calib.validation import CalibInputError

SEEDS = range(6)


def posteriors(seed: int, n: int = 80, k: int = 3):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(k), size=n)
    labels = rng.integers(0, k, size=n)
    w = rng.integers(0, 5, size=n)
    w[:3] = 0
    return probs, labels, w


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n_bins", [1, 3, 7, 15])
@pytest.mark.parametrize("ties", [True, False])
def test_equal_mass_edges_of_integer_weights_are_those_of_repeated_rows(seed, n_bins, ties):
    x, _, w = weighted_rows(seed, ties=ties)
    assert np.array_equal(equal_mass_edges(x, n_bins, sample_weight=w), equal_mass_edges(np.repeat(x, w), n_bins))
    assert np.array_equal(equal_mass_edges(x, n_bins, sample_weight=np.ones(x.size)), equal_mass_edges(x, n_bins))
    ids = equal_mass_bin_ids(x, n_bins, sample_weight=w)
    assert np.array_equal(np.repeat(ids, w), equal_mass_bin_ids(np.repeat(x, w), n_bins))


@pytest.mark.parametrize("seed", SEEDS)
def test_equal_mass_edges_of_columns_take_the_row_weights(seed):
    probs, _, w = posteriors(seed)
    both = equal_mass_edges(probs, 5, sample_weight=w)
    for j in range(probs.shape[1]):
        assert np.array_equal(both[:, j], equal_mass_edges(probs[:, j], 5, sample_weight=w))
    assert np.array_equal(strategy_edges("equal-mass", 5, probs, sample_weight=w), both)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("n_bins", [2, 5, 10])
def test_weighted_equal_mass_bins_hold_equal_weight_within_one_row(seed, n_bins):
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=300)  # no ties: only the rows' granularity keeps the bins from being equal
    w = rng.uniform(0.0, 3.0, size=300)
    ids = equal_mass_bin_ids(x, n_bins, sample_weight=w)
    held = np.bincount(ids, weights=w, minlength=n_bins)
    assert np.all(np.abs(held - w.sum() / n_bins) <= w.max() + 1e-9)


def test_weighted_edges_follow_the_tie_rule():
    # 0.2 weighs 3 of W = 6: the boundary 3 (of 2 bins) ends its block, so it stays below.
    assert equal_mass_edges([0.1, 0.2, 0.7, 0.9], 2, sample_weight=[0, 3, 2, 1]).tolist() == [0.0, 0.2, 1.0]
    # 0.2 holds masses 1 to 4 of W = 6, the boundaries 2 and 4 of 3 bins: nearer its start, it goes up.
    assert equal_mass_edges([0.1, 0.2, 0.7, 0.9], 3, sample_weight=[1, 3, 1, 1]).tolist() == [0.0, 0.1, 0.2, 1.0]


@pytest.mark.parametrize("weights", [[1.0, -1.0, 1.0], [0, 0, 0], [1.0, np.nan, 1.0], [1, 2]])
def test_bad_weights_are_refused(weights):
    with pytest.raises(CalibInputError, match="sample_weight"):
        equal_mass_edges([0.1, 0.5, 0.9], 2, sample_weight=weights)
    with pytest.raises(CalibInputError, match="sample_weight"):
        reliability_bins([0.1, 0.5, 0.9], [0, 1, 1], n_bins=2, sample_weight=weights)


@pytest.mark.parametrize("seed", SEEDS)
def test_bin_statistics_of_integer_weights_are_those_of_repeated_rows(seed):
    x, y, w = weighted_rows(seed)
    ids = np.minimum((x * 4).astype(int), 3)
    weighted = bin_statistics(ids, x, y, 4, sample_weight=w)
    repeated = bin_statistics(np.repeat(ids, w), np.repeat(x, w), np.repeat(y, w), 4)
    np.testing.assert_allclose(weighted.counts, repeated.counts, rtol=0, atol=1e-12)
    np.testing.assert_allclose(weighted.mean_score, repeated.mean_score, rtol=0, atol=1e-12)
    np.testing.assert_allclose(weighted.frequency, repeated.frequency, rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("strategy", ["equal-width", "equal-mass"])
def test_reliability_bins_of_integer_weights_are_those_of_repeated_rows(seed, strategy):
    x, y, w = weighted_rows(seed)
    weighted = reliability_bins(x, y, n_bins=6, strategy=strategy, sample_weight=w)
    repeated = reliability_bins(np.repeat(x, w), np.repeat(y, w), n_bins=6, strategy=strategy)
    assert np.array_equal(weighted.edges, repeated.edges)
    np.testing.assert_allclose(weighted.counts, repeated.counts, rtol=0, atol=1e-12)
    np.testing.assert_allclose(weighted.frequency, repeated.frequency, rtol=0, atol=1e-12)
    for norm in ("l1", "l2", "max"):
        assert weighted.ece(norm) == pytest.approx(repeated.ece(norm), abs=1e-12)
    assert weighted.ece("squared", debiased=True) == pytest.approx(repeated.ece("squared", debiased=True), abs=1e-12)
    unit = reliability_bins(x, y, n_bins=6, strategy=strategy, sample_weight=np.ones(x.size))
    plain = reliability_bins(x, y, n_bins=6, strategy=strategy)
    assert unit.ece() == plain.ece() and np.array_equal(unit.counts, plain.counts)


ESTIMATORS = [
    BinnedCalibrationError(),
    BinnedCalibrationError("classwise", n_bins=7, strategy="equal-mass"),
    BinnedCalibrationError(n_bins=10, norm="squared", debiased=True),
    BinnedCalibrationError(norm="max", closed="left", one_in_extra_bin=True),
    BinnedCalibrationError("canonical", n_bins=3),
    BinnedCalibrationError("classwise", n_bins=5, average=True, norm="l2"),
]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=repr)
def test_binned_error_of_integer_weights_is_that_of_repeated_rows(seed, estimator):
    probs, labels, w = posteriors(seed)
    weighted = estimator(probs, labels, kind="probs", sample_weight=w)
    repeated = estimator(np.repeat(probs, w, axis=0), np.repeat(labels, w), kind="probs")
    assert weighted == pytest.approx(repeated, abs=1e-12)
    assert estimator(probs, labels, kind="probs", sample_weight=np.ones(labels.size)) == estimator(
        probs, labels, kind="probs"
    )
    assert estimator.with_scores(probs, kind="probs", sample_weight=w)(labels) == weighted


@pytest.mark.parametrize("seed", SEEDS)
def test_reliability_of_the_estimator_takes_weights(seed):
    probs, labels, w = posteriors(seed)
    estimator = BinnedCalibrationError("classwise", n_bins=4, strategy="equal-mass")
    weighted = estimator.reliability(probs, labels, kind="probs", sample_weight=w)
    repeated = estimator.reliability(np.repeat(probs, w, axis=0), np.repeat(labels, w), kind="probs")
    for a, b in zip(weighted, repeated, strict=True):
        assert np.array_equal(a.edges, b.edges)
        np.testing.assert_allclose(a.counts, b.counts, rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_weighted_ece_by_hand(seed):
    """The top-label ECE, 15 equal-width right-closed bins: sum_b W_b |ybar_b - sbar_b| / W, written out."""
    rng = np.random.default_rng(seed)
    probs, labels = rng.dirichlet(np.ones(4), size=200), rng.integers(0, 4, size=200)
    w = rng.uniform(0.0, 5.0, size=200)
    confidence, correct = probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(float)
    total = 0.0
    for b in range(15):
        inside = (confidence > b / 15) & (confidence <= (b + 1) / 15)
        if w[inside].sum() > 0:
            gap = np.average(correct[inside], weights=w[inside]) - np.average(confidence[inside], weights=w[inside])
            total += w[inside].sum() * abs(gap)
    expected = total / w.sum()
    assert BinnedCalibrationError(n_bins=15)(probs, labels, kind="probs", sample_weight=w) == pytest.approx(
        expected, abs=1e-12
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_frequency_intervals_of_weights_read_the_bins_effective_sizes_not_repeated_rows(seed):
    # Weights are not frequencies here (issue 57): n is Kish's effective size (sum w)^2 / sum w^2 per bin
    x, y, w = weighted_rows(seed)
    bins = reliability_bins(x, y, n_bins=5, sample_weight=w)
    ids = np.clip(np.searchsorted(np.arange(6) / 5, x, side="left") - 1, 0, 4)  # right-closed bins of k / 5
    for b in range(5):
        inside = (ids == b) & (w > 0)
        expected = w[inside].sum() ** 2 / (w[inside] ** 2).sum() if inside.any() else 0.0
        assert bins.effective_sizes()[b] == pytest.approx(expected, rel=1e-12)
    repeated = reliability_bins(np.repeat(x, w), np.repeat(y, w), n_bins=5).frequency_intervals(0.9)
    low, high = bins.frequency_intervals(0.9)
    occupied = bins.occupied
    assert np.all(high[occupied] - low[occupied] >= repeated[1][occupied] - repeated[0][occupied] - 1e-12)
