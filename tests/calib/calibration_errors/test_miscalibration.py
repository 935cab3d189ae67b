"""Tests of calib.calibration_errors.miscalibration: eta_hat (eq. 6 of Vaicenavicius et al. 2019) and the
Gaussian-mixture models of Sect. 5.1 (calib.data.gaussian_mixture).

Golden values: eta_TV ~ 0.56 for the uncalibrated model (paper, Sect. 5.1; 0.56375 by quadrature in
notes/003 §5.1), the fixed-partition limit 0.5584 with 10 bins (notes/003 §5.1, Theorem 2), the
deviations r_1(mu) - mu of notes/003 §5.1, Example 5 (bias 1/2 vs 0), and the identity with Guo et
al.'s ECE (paper Sect. 3.3; notes/003 §2.2).
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.integrate import quad
from scipy.special import expit
from scipy.stats import norm
from support import draw_labels

from calib.calibration_errors.binned import BinnedCalibrationError
from calib.calibration_errors.lenses import Canonical, TopK
from calib.calibration_errors.miscalibration import (
    batch_estimates,
    cell_statistics,
    check_distances,
    distance,
    expected_miscalibration,
    refitted_estimates,
    relabelled_estimates,
)
from calib.calibration_errors.simplex_binning import DataDependent, Triangles, UniformGrid
from calib.data.gaussian_mixture import LogisticModel, density, sample
from calib.validation import CalibInputError

# Identities between two computations of the same float sums: rounding of O(N) terms of size <= 1.
EXACT_TOL = 1e-12


def _eta_by_definition(probs, labels, ids, name):
    """eq. (6) with an explicit loop over the occupied cells."""
    onehot = np.eye(probs.shape[1])[labels]
    total = 0.0
    for cell in np.unique(ids):
        members = ids == cell
        gap = onehot[members].mean(axis=0) - probs[members].mean(axis=0)
        d = {"tv": 0.5 * np.abs(gap).sum(), "l2": np.sqrt(np.sum(gap**2)), "sq_l2": np.sum(gap**2)}[name]
        total += members.mean() * d
    return total


# --- identities with ECE -------------------------------------------------------------------------


@pytest.mark.parametrize(("n_classes", "n_bins"), [(3, 10), (5, 15), (10, 7)])
def test_max_lens_tv_uniform_grid_is_guo_ece(n_classes, n_bins):
    rng = np.random.default_rng(n_classes)
    probs = rng.dirichlet(np.full(n_classes, 0.5), size=2000)
    labels = rng.integers(0, n_classes, size=2000)  # miscalibrated on purpose: a non-trivial ECE
    eta = expected_miscalibration(probs, labels, kind="probs", binning=UniformGrid(n_bins), lens=TopK(1))
    ece = BinnedCalibrationError("top_label", n_bins=n_bins, closed="left")(probs, labels, kind="probs")
    assert ece > 0.05
    assert eta == pytest.approx(ece, abs=EXACT_TOL)


def test_binary_tv_is_first_column_histogram_gap():
    rng = np.random.default_rng(1)
    g = rng.beta(2, 3, size=3000)
    labels = (rng.random(3000) >= g**0.7).astype(int)  # label 0 with probability g^0.7, not g
    probs = np.column_stack([g, 1 - g])
    # Definition: bins [k/10, (k+1)/10) of column 0 (floor is exact off the edges of random data),
    # gap |frequency of label 0 - mean of column 0|, weighted by count / N.
    bins = np.minimum(np.floor(10 * g), 9).astype(int)
    direct = sum(
        np.mean(bins == b) * abs(np.mean(labels[bins == b] == 0) - g[bins == b].mean()) for b in np.unique(bins)
    )
    eta = expected_miscalibration(probs, labels, kind="probs", binning=UniformGrid(10), distance="tv")
    assert direct > 0.02
    assert eta == pytest.approx(direct, abs=EXACT_TOL)


@pytest.mark.parametrize("name", ["tv", "l2", "sq_l2"])
@pytest.mark.parametrize(
    ("lens", "binning"),
    [(Canonical(), UniformGrid(4)), (Canonical(), DataDependent(50)), (Canonical(), Triangles(3)), (TopK(2), None)],
    ids=["grid", "data-dependent", "triangles", "top2-grid"],
)
def test_estimate_matches_definition(name, lens, binning):
    rng = np.random.default_rng(2)
    probs = rng.dirichlet(np.ones(3), size=600) if lens == Canonical() else rng.dirichlet(np.ones(5), size=600)
    labels = draw_labels(probs**2 / (probs**2).sum(axis=1, keepdims=True), rng)
    binning = binning or UniformGrid(5)
    problem = lens(probs, labels, kind="probs")
    ids, _ = binning.cells(problem.probs)
    direct = _eta_by_definition(problem.probs, problem.labels, ids, name)
    eta = expected_miscalibration(probs, labels, kind="probs", binning=binning, distance=name, lens=lens)
    assert eta == pytest.approx(direct, abs=EXACT_TOL)


# --- distances -----------------------------------------------------------------------------------


def test_distance_formulas():
    rng = np.random.default_rng(3)
    a = rng.dirichlet(np.ones(4), size=50)
    b = rng.dirichlet(np.ones(4), size=50)
    assert_allclose(distance(a, b, "tv"), 0.5 * np.abs(a - b).sum(axis=1), rtol=0, atol=1e-15)
    assert_allclose(distance(a, b, "sq_l2"), ((a - b) ** 2).sum(axis=1), rtol=0, atol=1e-15)
    assert_allclose(distance(a, b, "l2"), np.linalg.norm(a - b, axis=1), rtol=0, atol=1e-15)
    # TV of distributions is at most 1 and equals 1 between disjoint point masses.
    assert distance([1.0, 0.0], [0.0, 1.0], "tv") == 1.0


def test_l2_is_sqrt2_tv_for_binary_problems():
    # For (d, -d): ||.||_2 = sqrt(2)|d| and TV = |d|, cell by cell, hence for the weighted sum.
    rng = np.random.default_rng(4)
    probs = rng.dirichlet(np.ones(6), size=1000)
    labels = rng.integers(0, 6, size=1000)
    kwargs = {"kind": "probs", "binning": UniformGrid(10), "lens": TopK(1)}
    tv = expected_miscalibration(probs, labels, distance="tv", **kwargs)
    l2 = expected_miscalibration(probs, labels, distance="l2", **kwargs)
    sq = expected_miscalibration(probs, labels, distance="sq_l2", **kwargs)
    assert tv > 0.05
    assert l2 == pytest.approx(np.sqrt(2) * tv, abs=EXACT_TOL)
    assert sq < tv  # 2 d^2 < |d| for |d| < 1/2: squared Euclidean is not the tables' "SqE" (notes §2.5)


@pytest.mark.parametrize("name", ["l1", "euclidean", ""])
def test_unknown_distance_raises(name):
    with pytest.raises(CalibInputError):
        distance([0.5, 0.5], [0.4, 0.6], name)
    with pytest.raises(CalibInputError):
        expected_miscalibration([[0.5, 0.5]], [0], kind="probs", binning=UniformGrid(2), distance=name)
    with pytest.raises(CalibInputError):
        check_distances(("tv", name))


def test_check_distances_accepts_a_single_name():
    assert check_distances("l2") == ("l2",)
    assert check_distances(["tv", "sq_l2"]) == ("tv", "sq_l2")
    with pytest.raises(CalibInputError):
        check_distances(())


# --- cell statistics and batches ----------------------------------------------------------------


def test_cell_statistics_shares_and_single_cell():
    rng = np.random.default_rng(5)
    probs = rng.dirichlet(np.ones(4), size=500)
    labels = rng.integers(0, 4, size=500)
    ids, n_cells = UniformGrid(3).cells(probs)
    stats = cell_statistics(probs, labels, ids, n_cells)
    assert stats.share.sum() == pytest.approx(1.0, abs=1e-15)
    assert_allclose(stats.frequency.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    # One cell: eta_hat = d(overall label frequency, overall mean prediction).
    single = cell_statistics(probs, labels, np.zeros(500, dtype=np.int64), 1)
    freq = np.bincount(labels, minlength=4) / 500
    for name in ("tv", "l2", "sq_l2"):
        assert single.estimate(name) == pytest.approx(float(distance(freq, probs.mean(axis=0), name)), abs=1e-15)
    grid_one = expected_miscalibration(probs, labels, kind="probs", binning=UniformGrid(1))
    assert grid_one == pytest.approx(0.5 * np.abs(freq - probs.mean(axis=0)).sum(), abs=1e-15)


def test_cell_statistics_empty_cells_contribute_nothing():
    probs = np.array([[0.2, 0.8], [0.6, 0.4]])
    labels = np.array([1, 0])
    stats = cell_statistics(probs, labels, np.array([0, 2]), 4)  # cells 1 and 3 empty
    assert stats.counts.tolist() == [1, 0, 1, 0]
    assert np.all(np.isfinite(stats.mean_prediction)) and np.all(np.isfinite(stats.frequency))
    # (1/2)(TV((0,1),(.2,.8)) + TV((1,0),(.6,.4))) = (0.2 + 0.4) / 2
    assert stats.estimate("tv") == pytest.approx(0.3, abs=1e-15)


def test_batch_estimates_equal_loop_of_single_computations():
    rng = np.random.default_rng(6)
    n, n_resamples = 400, 25
    probs = rng.dirichlet(np.ones(3), size=n)
    ids, n_cells = UniformGrid(4).cells(probs)
    rows = rng.integers(0, n, size=(n_resamples, n))
    labels = rng.integers(0, 3, size=(n_resamples, n))
    names = ("tv", "l2", "sq_l2")
    batch = batch_estimates(probs, ids, n_cells, rows, labels, names)
    assert batch.shape == (n_resamples, 3)
    loop = np.array(
        [[_eta_by_definition(probs[r], y, ids[r], d) for d in names] for r, y in zip(rows, labels, strict=True)]
    )
    assert_allclose(batch, loop, rtol=0, atol=EXACT_TOL)
    assert np.unique(batch[:, 0]).size > 1  # the resamples differ


@pytest.mark.parametrize("order", ["C", "F"])
def test_refitted_estimates_are_each_resample_over_its_own_partition_bit_for_bit(order):
    rng = np.random.default_rng(7)
    n, n_resamples = 3000, 12
    probs = np.asarray(rng.dirichlet(np.ones(3), size=n), order=order)
    rows = rng.integers(0, n, size=(n_resamples, n))
    labels = rng.integers(0, 3, size=(n_resamples, n))
    binning = DataDependent(min_size=250)
    fitted = [binning.cells(probs[r]) for r in rows]
    cells = np.array([ids for ids, _ in fitted])
    n_cells = np.array([k for _, k in fitted])
    assert np.unique(n_cells).size > 1  # partitions of different sizes, numbered across resamples
    names = ("tv", "l2", "sq_l2")
    together = refitted_estimates(probs, cells, n_cells, rows, labels, names)
    whole = np.arange(n)[None, :]
    alone = [
        batch_estimates(probs[r], ids, k, whole, y[None, :], names)[0]
        for r, (ids, k), y in zip(rows, fitted, labels, strict=True)
    ]
    assert np.array_equal(together, np.array(alone))  # the same sums in the same order: the same bits
    by_definition = [
        [_eta_by_definition(probs[r], y, ids, d) for d in names]
        for r, (ids, _), y in zip(rows, fitted, labels, strict=True)
    ]
    assert_allclose(together, by_definition, rtol=0, atol=EXACT_TOL)


@pytest.mark.parametrize("order", ["C", "F"])
def test_relabelled_estimates_are_batch_estimates_of_all_points_bit_for_bit(order):
    rng = np.random.default_rng(8)
    n, n_resamples = 500, 20
    probs = np.asarray(rng.dirichlet(np.ones(4), size=n), order=order)
    ids, n_cells = UniformGrid(3).cells(probs)
    ids, n_cells = ids * 2, 2 * n_cells  # every other cell empty: empty cells must not count
    labels = rng.integers(0, 4, size=(n_resamples, n))
    names = ("tv", "l2", "sq_l2")
    relabelled = relabelled_estimates(probs, ids, n_cells, labels, names)
    every_point = np.broadcast_to(np.arange(n), labels.shape)
    assert np.array_equal(relabelled, batch_estimates(probs, ids, n_cells, every_point, labels, names))
    by_definition = [[_eta_by_definition(probs, y, ids, d) for d in names] for y in labels]
    assert_allclose(relabelled, by_definition, rtol=0, atol=EXACT_TOL)
    assert np.unique(relabelled[:, 0]).size > 1  # the label draws differ


# --- Gaussian mixture (Sect. 5.1) and Theorem 2 ---------------------------------------------------

UNCALIBRATED = LogisticModel.named("uncalibrated")
ETA_TV_QUADRATURE = 0.56375  # notes/003 §5.1 [S]; paper: "approximately 0.56"
N_LARGE = 2_000_000


@pytest.fixture(scope="module")
def large_sample():
    return sample(UNCALIBRATED, N_LARGE, np.random.default_rng(2019))


def test_uncalibrated_eta_matches_quadrature_and_paper():
    eta = UNCALIBRATED.expected_miscalibration("tv")
    assert eta == pytest.approx(ETA_TV_QUADRATURE, abs=5e-4)  # the notes' quadrature, 5 digits
    assert round(eta, 2) == 0.56  # the paper's "approximately 0.56"


def test_uncalibrated_eta_other_distances():
    # Binary gaps (d, -d): l2 = sqrt(2)|d| exactly; sq_l2 = 2 E[d^2] = 0.7974 (notes/003 §5.1, 4 digits).
    tv = UNCALIBRATED.expected_miscalibration("tv")
    assert UNCALIBRATED.expected_miscalibration("l2") == pytest.approx(np.sqrt(2) * tv, rel=1e-9)
    assert UNCALIBRATED.expected_miscalibration("sq_l2") == pytest.approx(0.7974, abs=1e-4)


@pytest.mark.parametrize("name", ["perfect", "constant"])
def test_calibrated_models_have_zero_eta(name):
    model = LogisticModel.named(name)
    for d in ("tv", "l2", "sq_l2"):
        assert model.expected_miscalibration(d) == pytest.approx(0.0, abs=1e-12)
        assert model.fixed_partition_limit(10, d) == pytest.approx(0.0, abs=1e-12)


def test_unknown_model_raises():
    with pytest.raises(CalibInputError):
        LogisticModel.named("overconfident")


def test_fixed_partition_limit_is_a_lower_bound():
    # Theorem 2 (Jensen, cell by cell): the limit is <= eta for every fixed partition, and the notes'
    # quadrature gives 0.5584 with 10 bins and 0.5637 with 100 bins (4 digits).
    eta = UNCALIBRATED.expected_miscalibration("tv")
    assert UNCALIBRATED.fixed_partition_limit(10) == pytest.approx(0.5584, abs=5e-5)
    assert UNCALIBRATED.fixed_partition_limit(100) == pytest.approx(0.5637, abs=1e-4)
    for m in (1, 2, 5, 10, 30):
        assert UNCALIBRATED.fixed_partition_limit(m) <= eta + 1e-12
    # One bin: |P(Y=-1) - E[g_1]| = |1/2 - E[sigma(1 + X)]|, with X ~ (N(-1, 1) + N(1, 1)) / 2 (quadrature
    # to ~1e-12 here; the library's own quadrature is equally accurate, so 1e-9).
    mean_g1 = quad(lambda x: 0.5 * (norm.pdf(x, -1, 1) + norm.pdf(x, 1, 1)) * expit(1 + x), -np.inf, np.inf)[0]
    assert UNCALIBRATED.fixed_partition_limit(1) == pytest.approx(abs(0.5 - mean_g1), abs=1e-9)


def test_estimator_with_100_bins_matches_eta(large_sample):
    # The fixed-partition limit with 100 bins is within 3e-6 of eta; the sampling sd of eta_hat at
    # n = 2e6 is about sqrt(0.25 / n) = 3.5e-4, and the per-bin bias (~20,000 points a bin) is smaller.
    # Tolerance 2e-3: about 6 sd.
    probs, labels = large_sample
    eta_hat = expected_miscalibration(probs, labels, kind="probs", binning=UniformGrid(100))
    assert eta_hat == pytest.approx(UNCALIBRATED.expected_miscalibration("tv"), abs=2e-3)


def test_estimator_with_10_bins_converges_below_eta(large_sample):
    # Theorem 2: with 10 bins eta_hat -> 0.5584 < eta = 0.5638. Same 2e-3 (6 sd) tolerance around
    # the limit; the gap eta - limit = 5.4e-3 is 15 sd, so eta_hat < eta is no accident.
    probs, labels = large_sample
    eta_hat = expected_miscalibration(probs, labels, kind="probs", binning=UniformGrid(10))
    limit = UNCALIBRATED.fixed_partition_limit(10)
    assert eta_hat == pytest.approx(limit, abs=2e-3)
    assert eta_hat < UNCALIBRATED.expected_miscalibration("tv") - 2e-3


def test_prediction_shares_of_ten_bins(large_sample):
    # P(g_1 in [k/10, (k+1)/10)) = F(x_{k+1}) - F(x_k) at x_k = logit(k/10) - 1, F the mixture CDF;
    # notes/003 §5.1 lists these shares to 3 decimals as the compiler's own check [S], apparently
    # Monte Carlo: the third share is 0.0587 by quadrature vs 0.058 listed. Tolerance 1e-3.
    published = np.array([0.007, 0.035, 0.058, 0.075, 0.086, 0.095, 0.107, 0.130, 0.189, 0.218])
    with np.errstate(divide="ignore"):
        x = np.log(np.arange(11) / (10 - np.arange(11))) - 1.0
    cdf = 0.5 * (norm.cdf(x, -1, 1) + norm.cdf(x, 1, 1))
    analytic = np.diff(cdf)
    assert_allclose(analytic, published, rtol=0, atol=1e-3)
    # The sample's shares: sd sqrt(0.25 / 2e6) < 3.6e-4 each; tolerance 5 sd.
    probs, labels = large_sample
    ids, n_cells = UniformGrid(10).cells(probs)
    assert n_cells == 10
    assert_allclose(cell_statistics(probs, labels, ids, n_cells).share, analytic, rtol=0, atol=1.8e-3)


def test_density_is_the_normal_mixture_of_scipy_stats():
    # The same expression as scipy.stats.norm.pdf, in the same order (equal today); 1e-15 relative leaves
    # room for a scipy release that rounds its constant differently, and nothing more.
    x = np.linspace(-12.0, 12.0, 2001)
    assert_allclose(density(x), 0.5 * (norm.pdf(x, -1, 1) + norm.pdf(x, 1, 1)), rtol=1e-15, atol=0)
    assert quad(density, -np.inf, np.inf)[0] == pytest.approx(1.0, abs=1e-10)


def test_sample_follows_the_mixture():
    probs, labels = sample(LogisticModel.named("perfect"), 100_000, np.random.default_rng(8))
    # Balanced classes and the perfect model's g_1 = sigma(-2x) = P(Y=-1 | x), so mean g_1 = 1/2.
    # sd of a mean of 1e5 Bernoulli(1/2) is 1.6e-3: tolerance 8e-3 (5 sd).
    assert np.mean(labels == 0) == pytest.approx(0.5, abs=8e-3)
    assert probs[:, 0].mean() == pytest.approx(0.5, abs=8e-3)
    assert_allclose(probs.sum(axis=1), 1.0, rtol=0, atol=1e-15)


@pytest.mark.parametrize("binning", [UniformGrid(10), UniformGrid(100), DataDependent(10)], ids=["10", "100", "dd"])
@pytest.mark.parametrize("n", [1, 7, 1000])
def test_constant_model_estimate_is_frequency_gap(binning, n):
    probs, labels = sample(LogisticModel.named("constant"), n, np.random.default_rng(n))
    assert_allclose(probs, 0.5, rtol=0, atol=0)
    eta_hat = expected_miscalibration(probs, labels, kind="probs", binning=binning)
    assert eta_hat == pytest.approx(abs(np.mean(labels == 0) - 0.5), abs=1e-15)


def test_calibration_function_deviations_from_notes():
    mu = np.array([0.1, 0.3, 0.5, 0.7, 0.9])
    published = np.array([0.898, 0.676, 0.381, -0.124, -0.816])  # notes/003 §5.1, 3 decimals
    assert_allclose(UNCALIBRATED.calibration_function(mu) - mu, published, rtol=0, atol=1e-3)
    # Closed form of the notes: r_1(mu) = 1 / (1 + e^-2 (mu / (1 - mu))^2); r_1 = 1/2 at sigma(1).
    assert_allclose(
        UNCALIBRATED.calibration_function(mu), 1 / (1 + np.exp(-2) * (mu / (1 - mu)) ** 2), rtol=1e-12, atol=0
    )
    assert UNCALIBRATED.calibration_function(1 / (1 + np.exp(-1))) == pytest.approx(0.5, abs=1e-12)
    perfect = LogisticModel.named("perfect")
    assert_allclose(perfect.calibration_function(mu), mu, rtol=1e-12, atol=0)
    assert_allclose(LogisticModel.named("constant").calibration_function(np.array([0.5])), [0.5])


def test_calibration_function_monte_carlo():
    # Tower property: the frequency of label 0 in a bin of g_1 estimates E[r_1(g_1) | bin] exactly
    # (no linearisation). Tolerance: 4.5 binomial sd per bin (Bonferroni over <= 50 bins at ~1e-5 each).
    probs, labels = sample(UNCALIBRATED, 400_000, np.random.default_rng(9))
    g = probs[:, 0]
    bins = np.minimum(np.floor(50 * g), 49).astype(int)
    r = UNCALIBRATED.calibration_function(g)
    checked = 0
    for b in np.unique(bins):
        members = bins == b
        n = members.sum()
        if n < 500:
            continue
        expected = r[members].mean()
        sd = np.sqrt(max(expected * (1 - expected), 1e-4) / n)
        assert abs(np.mean(labels[members] == 0) - expected) <= 4.5 * sd, b
        checked += 1
    assert checked >= 40


# --- Example 5 ------------------------------------------------------------------------------------


@pytest.mark.parametrize("label", [0, 1])
@pytest.mark.parametrize("binning", [UniformGrid(1), UniformGrid(10), DataDependent(2)], ids=["1", "10", "dd"])
def test_example5_single_point(label, binning):
    # One bin, one data point: the constant (1/2, 1/2) model gives 1/2 whatever the label; g^opt =
    # onehot(y) gives 0. Both models are calibrated, so the biases differ by 1/2.
    constant = expected_miscalibration([[0.5, 0.5]], [label], kind="probs", binning=binning)
    perfect = expected_miscalibration(np.eye(2)[[label]], [label], kind="probs", binning=binning)
    assert constant == 0.5
    assert perfect == 0.0


def test_example5_perfect_separation_on_a_sample():
    rng = np.random.default_rng(10)
    labels = rng.integers(0, 2, size=200)
    for binning in (UniformGrid(1), UniformGrid(10), DataDependent(5)):
        assert expected_miscalibration(np.eye(2)[labels], labels, kind="probs", binning=binning) == 0.0
