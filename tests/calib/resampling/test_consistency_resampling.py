"""Tests of the consistency-resampling test and deviation diagrams of Vaicenavicius et al. (2019),
Sects. 4.2-4.4 (calib.resampling.significance: miscalibration_resampling, deviation_diagram).

Acceptance items (notes/003 §3 and §6 item 8): under calibrated data the p-values are uniform
(Kolmogorov-Smirnov over many seeded data sets), strongly miscalibrated data are rejected, and the
canonical uniform grid is heavily biased for diffuse predictions (Table 5's LeNet 0.219 vs 0.215).
"""

from dataclasses import dataclass

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import softmax
from scipy.stats import binom, kstest
from support import draw_labels

from calib.calibration_errors.lenses import Canonical, TopK
from calib.calibration_errors.miscalibration import expected_miscalibration
from calib.calibration_errors.simplex_binning import DataDependent, UniformGrid
from calib.data.gaussian_mixture import LogisticModel, sample
from calib.resampling.significance import (
    MiscalibrationResampling,
    deviation_diagram,
    miscalibration_resampling,
    sample_labels,
)
from calib.validation import CalibInputError

# Two computations of the same sums in different order: float rounding only.
EXACT_TOL = 1e-12


def _calibrated(seed, n=300, n_classes=3):
    rng = np.random.default_rng([7, seed])
    probs = rng.dirichlet(np.ones(n_classes), size=n)
    return probs, draw_labels(probs, rng)


@dataclass(frozen=True)
class _Refitted:
    """A fixed grid flagged data-dependent, forcing the refit-per-resample code path."""

    grid: UniformGrid
    data_independent = False

    def cells(self, probs):
        return self.grid.cells(probs)


# --- size and power ------------------------------------------------------------------------------

N_DATASETS = 200
N_RESAMPLES = 199


@pytest.mark.parametrize("lens", [TopK(1), Canonical()], ids=["max", "canonical"])
def test_p_values_are_uniform_under_calibration(lens):
    p_values = np.array(
        [
            miscalibration_resampling(
                *_calibrated(s), kind="probs", binning=UniformGrid(5), lens=lens, n_resamples=N_RESAMPLES, seed=s
            ).p_value_plus_one[0]
            for s in range(N_DATASETS)
        ]
    )
    grid = np.arange(1, N_RESAMPLES + 2) / (N_RESAMPLES + 1)
    assert np.all(np.isin(np.round(p_values * (N_RESAMPLES + 1)), np.round(grid * (N_RESAMPLES + 1))))
    # p_value_plus_one lives on {1/200, ..., 1}; under H0 (exchangeable statistics, no ties) it is
    # uniform there. Subtracting U / 200 with U ~ U(0, 1) (seeded) spreads each atom over its cell
    # ((j-1)/200, j/200], giving an exactly U(0, 1) variable, so the continuous KS test applies. The
    # resampling is approximate (bootstrapped predictions) and ties make it conservative; level 0.01.
    jittered = p_values - np.random.default_rng(99).random(N_DATASETS) / (N_RESAMPLES + 1)
    assert kstest(jittered, "uniform").pvalue > 0.01
    # Rejections at alpha = 0.05: P(p+1 <= 10/200) = 0.05 exactly; 99.9% binomial band for 200 sets.
    low, high = binom.interval(0.999, N_DATASETS, 0.05)
    assert low <= np.count_nonzero(p_values <= 0.05) <= high


def test_strong_miscalibration_is_rejected():
    # The model says softmax(z) but labels follow softmax(3 z): underconfident by temperature 3.
    p_values = []
    for s in range(20):
        rng = np.random.default_rng([11, s])
        logits = rng.normal(size=(300, 3))
        labels = draw_labels(softmax(3.0 * logits, axis=1), rng)
        for lens in (TopK(1), Canonical()):
            result = miscalibration_resampling(
                softmax(logits, axis=1),
                labels,
                kind="probs",
                binning=UniformGrid(5),
                lens=lens,
                n_resamples=199,
                seed=s,
            )
            p_values.append(result.p_value_plus_one[0])
    assert max(p_values) < 0.05


# --- the returned quantities ----------------------------------------------------------------------


def test_p_value_formulas_on_a_hand_example():
    result = MiscalibrationResampling(
        "consistency", ("tv", "l2"), np.array([0.3, 0.5]), np.array([[0.1, 0.6], [0.3, 0.4], [0.5, 0.5], [0.2, 0.9]])
    )
    # tv: 0.3 and 0.5 are >= 0.3 -> 2/4 and (1 + 2)/5; l2: 0.6, 0.5, 0.9 are >= 0.5 -> 3/4 and 4/5.
    assert_allclose(result.p_value, [0.5, 0.75])
    assert_allclose(result.p_value_plus_one, [0.6, 0.8])
    assert_allclose(result.mean, [0.275, 0.6])
    assert_allclose(result.sd, [np.std([0.1, 0.3, 0.5, 0.2]), np.std([0.6, 0.4, 0.5, 0.9])])  # ddof = 0


@pytest.mark.parametrize("method", ["consistency", "bootstrap"])
@pytest.mark.parametrize("lens", [None, TopK(1), TopK(2)], ids=["canonical", "top1", "top2"])
def test_observed_and_p_values_on_returned_arrays(method, lens):
    probs, labels = _calibrated(1, n=400, n_classes=4)
    names = ("tv", "l2", "sq_l2")
    result = miscalibration_resampling(
        probs, labels, kind="probs", binning=UniformGrid(4), lens=lens, distances=names, method=method, n_resamples=60
    )
    assert result.method == method and result.distances == names
    assert result.resampled.shape == (60, 3)
    for j, name in enumerate(names):
        direct = expected_miscalibration(probs, labels, kind="probs", binning=UniformGrid(4), distance=name, lens=lens)
        assert result.observed[j] == pytest.approx(direct, abs=EXACT_TOL)
    count = (result.resampled >= result.observed).sum(axis=0)
    assert_allclose(result.p_value, count / 60, rtol=0, atol=0)
    assert_allclose(result.p_value_plus_one, (1 + count) / 61, rtol=0, atol=0)
    assert np.all(result.sd > 0)


def test_seeds_control_the_resamples():
    probs, labels = _calibrated(2)
    kwargs = {"kind": "probs", "binning": UniformGrid(5), "n_resamples": 40}
    first = miscalibration_resampling(probs, labels, seed=123, **kwargs).resampled
    again = miscalibration_resampling(probs, labels, seed=123, **kwargs).resampled
    other = miscalibration_resampling(probs, labels, seed=124, **kwargs).resampled
    assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    boot = miscalibration_resampling(probs, labels, seed=123, method="bootstrap", **kwargs).resampled
    assert not np.array_equal(first, boot)


def test_one_hot_predictions_separate_consistency_from_bootstrap():
    # g = onehot(c): consistency labels always equal c, so every resample has eta_hat = 0. With the
    # observed labels all different from c, eta_hat = 1 (TV of disjoint point masses) on the data and
    # on every pair-bootstrap resample.
    rng = np.random.default_rng(3)
    predicted = rng.integers(0, 3, size=100)
    probs = np.eye(3)[predicted]
    labels = (predicted + 1) % 3
    kwargs = {"kind": "probs", "binning": UniformGrid(3), "n_resamples": 30}
    consistency = miscalibration_resampling(probs, labels, **kwargs)
    bootstrap = miscalibration_resampling(probs, labels, method="bootstrap", **kwargs)
    assert consistency.observed[0] == 1.0
    assert_array_equal(consistency.resampled, 0.0)
    assert consistency.p_value[0] == 0.0 and consistency.p_value_plus_one[0] == pytest.approx(1 / 31)
    assert_array_equal(bootstrap.resampled, 1.0)


def test_consistency_null_mean_single_cell_closed_form():
    # One cell, d = sq_l2: a consistency resample takes N rows i* with replacement and draws y ~ p_i*,
    # so E||freq - mean p*||^2 = sum_i sum_k p_i*k (1 - p_i*k) / N^2, whose bootstrap mean is
    # (1 - mean_i sum_k p_ik^2) / N. The statistic's sd is about its mean (chi-squared-like), so the
    # Monte Carlo sd of the mean of 8000 resamples is ~1.1% of it; tolerance 6% (> 5 sd).
    rng = np.random.default_rng(4)
    probs = rng.dirichlet(np.ones(3), size=50)
    labels = draw_labels(probs, rng)
    result = miscalibration_resampling(
        probs, labels, kind="probs", binning=UniformGrid(1), distances="sq_l2", n_resamples=8000, seed=5
    )
    expected = (1 - np.mean(np.sum(probs**2, axis=1))) / 50
    assert result.mean[0] == pytest.approx(expected, rel=0.06)


def test_bootstrap_mean_single_cell_closed_form():
    # One cell, d = sq_l2, pair bootstrap: the statistic is ||mean of (e_y - p) over the resample||^2,
    # whose bootstrap mean is ||dbar||^2 + mean_i ||e_yi - p_i - dbar||^2 / N (mean plus variance of a
    # bootstrap mean, ddof 0). Monte Carlo sd of the mean of 8000 resamples ~1.1%; tolerance 5% (4.5 sd).
    rng = np.random.default_rng(6)
    probs = rng.dirichlet(np.ones(3), size=80)
    labels = draw_labels(probs**3 / (probs**3).sum(axis=1, keepdims=True), rng)
    result = miscalibration_resampling(
        probs, labels, kind="probs", binning=UniformGrid(1), distances="sq_l2", method="bootstrap", n_resamples=8000
    )
    diff = np.eye(3)[labels] - probs
    dbar = diff.mean(axis=0)
    expected = np.sum(dbar**2) + np.mean(np.sum((diff - dbar) ** 2, axis=1)) / 80
    assert result.observed[0] == pytest.approx(np.sum(dbar**2), abs=1e-15)
    assert result.mean[0] == pytest.approx(expected, rel=0.05)


# --- refitted partitions ---------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["consistency", "bootstrap"])
def test_refit_path_equals_fixed_grid_path(method):
    # Refitting a fixed grid on each resample gives the resampled points their original cells (up
    # to renumbering), so the per-resample loop must reproduce the vectorised batch path exactly.
    probs, labels = _calibrated(8, n=250)
    kwargs = {"kind": "probs", "distances": ("tv", "l2"), "method": method, "n_resamples": 30, "seed": 9}
    batch = miscalibration_resampling(probs, labels, binning=UniformGrid(5), **kwargs)
    refit = miscalibration_resampling(probs, labels, binning=_Refitted(UniformGrid(5)), **kwargs)
    assert_allclose(refit.observed, batch.observed, rtol=0, atol=EXACT_TOL)
    assert_allclose(refit.resampled, batch.resampled, rtol=0, atol=EXACT_TOL)


@pytest.mark.parametrize("method", ["consistency", "bootstrap"])
def test_data_dependent_path(method):
    probs, labels = _calibrated(10, n=300)
    binning = DataDependent(30)
    result = miscalibration_resampling(probs, labels, kind="probs", binning=binning, method=method, n_resamples=30)
    direct = expected_miscalibration(probs, labels, kind="probs", binning=binning)
    assert result.observed[0] == pytest.approx(direct, abs=EXACT_TOL)
    assert result.resampled.shape == (30, 1)
    assert result.sd[0] > 0
    # A data-dependent tree that never splits (min_size > N) is the single cell of UniformGrid(1).
    whole = miscalibration_resampling(probs, labels, kind="probs", binning=DataDependent(301), method=method)
    single = miscalibration_resampling(probs, labels, kind="probs", binning=UniformGrid(1), method=method)
    assert_allclose(whole.resampled, single.resampled, rtol=0, atol=EXACT_TOL)


# --- the bias of the canonical grid (Table 5, LeNet) ------------------------------------------------


def test_canonical_grid_is_biased_for_diffuse_calibrated_predictions():
    # 10 classes, 10 bins per axis: diffuse calibrated predictions scatter over ~1,600 nearly empty
    # cells, so eta_hat is large although eta = 0 (the paper's LeNet 0.219 vs null 0.215).
    rng = np.random.default_rng(12)
    probs = rng.dirichlet(np.ones(10), size=2000)
    labels = draw_labels(probs, rng)
    result = miscalibration_resampling(probs, labels, kind="probs", binning=UniformGrid(10), n_resamples=50)
    assert result.observed[0] > 0.1
    assert result.mean[0] > 0.1
    # The exact null given these predictions (labels redrawn, predictions kept) holds the observed value.
    null = [
        expected_miscalibration(probs, y, kind="probs", binning=UniformGrid(10))
        for y in sample_labels(probs, 50, np.random.default_rng(13))
    ]
    assert min(null) <= result.observed[0] <= max(null)
    assert np.mean(null) > 0.1


def test_labels_method_is_the_exact_null_given_the_predictions():
    # method="labels" redraws labels only: the same null as the loop above, vectorized.
    rng = np.random.default_rng(12)
    probs = rng.dirichlet(np.ones(10), size=2000)
    labels = draw_labels(probs, rng)
    result = miscalibration_resampling(
        probs, labels, kind="probs", binning=UniformGrid(10), method="labels", n_resamples=200, seed=3
    )
    assert result.resampled.min() <= result.observed[0] <= result.resampled.max()
    assert 0.01 < result.p_value[0] < 0.99


def test_consistency_null_is_low_when_cells_are_sparse():
    # Bootstrap duplicates share cells and lower eta_hat: with ~1 point per cell the paper's null
    # lies below the labels-only null by many of its sds (0.665 vs 0.769 in our measurements).
    rng = np.random.default_rng(12)
    probs = rng.dirichlet(np.ones(10), size=2000)
    labels = draw_labels(probs, rng)
    common = {"kind": "probs", "binning": UniformGrid(10), "n_resamples": 100, "seed": 5}
    paper = miscalibration_resampling(probs, labels, method="consistency", **common)
    given = miscalibration_resampling(probs, labels, method="labels", **common)
    assert given.mean[0] - paper.mean[0] > 10 * max(paper.sd[0], given.sd[0])


@pytest.mark.parametrize("lens", [Canonical(), TopK(1)], ids=["canonical", "maximum"])
def test_labels_method_holds_its_size_on_sparse_cells(lens):
    # 100 calibrated 10-class datasets of 300 points, 10 bins per axis (canonical: ~1 point per cell).
    # Rejections at 5 % follow Binomial(100, 0.05): 13 or more has probability < 0.001.
    p_values = []
    for seed in range(100):
        rng = np.random.default_rng([31, seed])
        probs = rng.dirichlet(np.ones(10), size=300)
        result = miscalibration_resampling(
            probs,
            draw_labels(probs, rng),
            kind="probs",
            lens=lens,
            binning=UniformGrid(10),
            method="labels",
            n_resamples=99,
            seed=seed,
        )
        p_values.append(result.p_value_plus_one[0])
    assert np.sum(np.array(p_values) <= 0.05) < 13


def test_observed_lies_in_consistency_null_for_repeated_diffuse_predictions():
    # 50 diffuse 10-class predictions, each made 40 times: cells hold ~40 points, eta_hat stays
    # large (> 0.1) under calibration and the consistency null reproduces it.
    rng = np.random.default_rng([21, 0])
    probs = np.repeat(rng.dirichlet(np.ones(10), size=50), 40, axis=0)
    labels = draw_labels(probs, rng)
    result = miscalibration_resampling(probs, labels, kind="probs", binning=UniformGrid(10), n_resamples=200)
    assert result.mean[0] > 0.1
    assert result.resampled.min() <= result.observed[0] <= result.resampled.max()
    assert 0.01 < result.p_value[0] < 0.99


# --- deviation diagrams ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lens", "binning", "column"),
    [(None, UniformGrid(10), 0), (TopK(1), UniformGrid(8), 0), (None, DataDependent(40), 2), (None, UniformGrid(3), 1)],
    ids=["binary-grid", "max-grid", "dd-col2", "grid-col1"],
)
def test_deviation_diagram_cells(lens, binning, column):
    rng = np.random.default_rng(14)
    n_classes = 2 if column == 0 and lens is None else 4
    probs = rng.dirichlet(np.ones(n_classes), size=600)
    labels = draw_labels(probs, rng)
    diagram = deviation_diagram(
        probs, labels, kind="probs", binning=binning, lens=lens, column=column, n_resamples=100, seed=1
    )
    problem = (lens or Canonical())(probs, labels, kind="probs")
    ids, n_cells = binning.cells(problem.probs)
    occupied = np.unique(ids)
    for arr in (diagram.mean_prediction, diagram.deviation, diagram.share, diagram.low, diagram.high):
        assert arr.shape == (occupied.size,)
    assert diagram.extent.shape == (occupied.size, 2)
    values = problem.probs[:, column]
    hits = problem.labels == column
    assert_allclose(diagram.mean_prediction, [values[ids == c].mean() for c in occupied], rtol=0, atol=EXACT_TOL)
    assert_allclose(
        diagram.deviation, [hits[ids == c].mean() - values[ids == c].mean() for c in occupied], rtol=0, atol=EXACT_TOL
    )
    assert_allclose(diagram.share, [np.mean(ids == c) for c in occupied], rtol=0, atol=1e-15)
    assert diagram.share.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(diagram.low <= diagram.high)
    assert_array_equal(diagram.extent[:, 0], [values[ids == c].min() for c in occupied])
    assert_array_equal(diagram.extent[:, 1], [values[ids == c].max() for c in occupied])
    assert np.all(diagram.extent[:, 0] <= diagram.mean_prediction + 1e-15)
    assert np.all(diagram.mean_prediction <= diagram.extent[:, 1] + 1e-15)


def test_deviation_diagram_binary_columns_mirror():
    # Binary induced problem: the deviation of column 1 is minus that of column 0 in every resample,
    # so (same seed) deviations flip and the 5th/95th percentiles swap with a sign change.
    rng = np.random.default_rng(15)
    probs = rng.dirichlet(np.ones(5), size=800)
    labels = draw_labels(probs, rng)
    kwargs = {"kind": "probs", "binning": UniformGrid(10), "lens": TopK(1), "n_resamples": 200, "seed": 3}
    col0 = deviation_diagram(probs, labels, column=0, **kwargs)
    col1 = deviation_diagram(probs, labels, column=1, **kwargs)
    assert_allclose(col1.deviation, -col0.deviation, rtol=0, atol=EXACT_TOL)
    assert_allclose(col1.low, -col0.high, rtol=0, atol=EXACT_TOL)
    assert_allclose(col1.high, -col0.low, rtol=0, atol=EXACT_TOL)
    assert_allclose(col1.mean_prediction, 1 - col0.mean_prediction, rtol=0, atol=EXACT_TOL)


def test_consistency_bars_cover_about_90_percent_under_calibration():
    inside = []
    for s in range(15):
        rng = np.random.default_rng([13, s])
        g = rng.beta(2, 2, size=10_000)
        labels = (rng.random(10_000) >= g).astype(int)  # label 0 with probability g: calibrated
        diagram = deviation_diagram(
            np.column_stack([g, 1 - g]), labels, kind="probs", binning=UniformGrid(10), n_resamples=200, seed=s
        )
        inside.append((diagram.low <= diagram.deviation) & (diagram.deviation <= diagram.high))
    inside = np.concatenate(inside)
    assert inside.size == 150
    # Each bar is a 5-95% band: coverage 0.9 per cell (cells hold ~300-1,500 points, so the lattice of
    # possible deviations is fine). Binomial sd over 150 cells is 0.024; band of 3.5 sd.
    sd = np.sqrt(0.9 * 0.1 / inside.size)
    assert abs(inside.mean() - 0.9) <= 3.5 * sd


def test_bars_flag_the_uncalibrated_gaussian_mixture_model():
    # The uncalibrated model's deviations r_1 - mu range from +0.9 to -0.8 (notes/003 §5.1); with
    # 10,000 points (the paper's Fig. 14 setting) nearly every cell lies outside its bars.
    probs, labels = sample(LogisticModel.named("uncalibrated"), 10_000, np.random.default_rng(16))
    diagram = deviation_diagram(probs, labels, kind="probs", binning=UniformGrid(10), n_resamples=200)
    outside = (diagram.deviation < diagram.low) | (diagram.deviation > diagram.high)
    assert np.mean(outside) >= 0.8


# --- bad inputs --------------------------------------------------------------------------------------


def _bad_call_kwargs():
    probs, labels = _calibrated(17, n=50)
    return probs, labels


@pytest.mark.parametrize(
    "kwargs",
    [{"method": "permutation"}, {"n_resamples": 0}, {"n_resamples": 2.5}, {"distances": ("tv", "hellinger")}],
    ids=["method", "zero-resamples", "float-resamples", "distance"],
)
def test_miscalibration_resampling_rejects_bad_arguments(kwargs):
    probs, labels = _bad_call_kwargs()
    with pytest.raises(CalibInputError):
        miscalibration_resampling(probs, labels, kind="probs", binning=UniformGrid(5), **kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [{"column": 3}, {"column": -1}, {"column": 2, "lens": TopK(1)}, {"n_resamples": 0}],
    ids=["column-3", "column-neg", "column-after-lens", "zero-resamples"],
)
def test_deviation_diagram_rejects_bad_arguments(kwargs):
    probs, labels = _bad_call_kwargs()
    with pytest.raises(CalibInputError):
        deviation_diagram(probs, labels, kind="probs", binning=UniformGrid(5), **kwargs)


def test_resampling_rejects_bad_labels():
    probs, labels = _bad_call_kwargs()
    with pytest.raises(CalibInputError):
        miscalibration_resampling(probs, labels + 3, kind="probs", binning=UniformGrid(5))
    with pytest.raises(CalibInputError):
        deviation_diagram(probs, labels[:-1], kind="probs", binning=UniformGrid(5))
