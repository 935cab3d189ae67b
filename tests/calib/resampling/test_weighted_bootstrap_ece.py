"""bootstrap_ece with sample weights: the weighted ECE, resampled as rows keeping their weights (issue 56)."""

import numpy as np
import pytest

from calib.calibration_errors.binned import BinnedCalibrationError
from calib.resampling.bootstrap import bootstrap_ece, resample_blocks, resample_counts

ESTIMATORS = [BinnedCalibrationError(), BinnedCalibrationError("classwise", n_bins=6, strategy="equal-mass")]


def weighted_posteriors(seed: int, n: int = 120):
    rng = np.random.default_rng(seed)
    probs, labels = rng.dirichlet(np.ones(3), size=n), rng.integers(0, 3, size=n)
    w = rng.integers(0, 5, size=n)
    w[:4] = 0
    return probs, labels, w


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=repr)
def test_weighted_estimate_is_the_weighted_ece_and_that_of_repeated_rows(seed, estimator):
    probs, labels, w = weighted_posteriors(seed)
    result = bootstrap_ece(probs, labels, kind="probs", estimator=estimator, n_boot=20, sample_weight=w)
    expected = estimator(np.repeat(probs, w, axis=0), np.repeat(labels, w), kind="probs")
    assert result.estimate[0] == pytest.approx(expected, abs=1e-12)
    assert result.estimate[0] == pytest.approx(estimator(probs, labels, kind="probs", sample_weight=w), abs=1e-12)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=repr)
def test_unit_weights_give_the_unweighted_bootstrap(estimator):
    probs, labels, _ = weighted_posteriors(9)
    a = bootstrap_ece(probs, labels, kind="probs", estimator=estimator, n_boot=50, sample_weight=np.ones(120))
    b = bootstrap_ece(probs, labels, kind="probs", estimator=estimator, n_boot=50)
    assert np.array_equal(a.values, b.values) and np.array_equal(a.estimate, b.estimate)


@pytest.mark.parametrize("seed", range(3))
def test_each_resample_counts_its_rows_times_their_weights(seed):
    """A resample of the rows of positive weight, drawn c_i times, is the weighted ECE with weights c_i w_i."""
    probs, labels, w = weighted_posteriors(seed)
    estimator = BinnedCalibrationError(n_bins=10)
    result = bootstrap_ece(probs, labels, kind="probs", estimator=estimator, n_boot=30, seed=seed, sample_weight=w)
    kept = w > 0
    (rows,) = list(resample_blocks(int(kept.sum()), n_boot=30, seed=seed))
    counts = resample_counts(rows, int(kept.sum()))
    for j in range(30):
        expected = estimator(probs[kept], labels[kept], kind="probs", sample_weight=counts[:, j] * w[kept])
        assert result.values[j, 0] == pytest.approx(expected, abs=1e-12)
