"""Tests of calib.scoring.risk_curves: binary Bayes-risk curves (eq. 34) and their integrals (eqs. 10-12)."""

import numpy as np
import pytest

from calib.data.synthetic import gaussian_posteriors
from calib.scoring.decisions import bayes_decisions, expected_cost
from calib.scoring.risk_curves import BRIER_INTEGRAL_FACTOR, bayes_risk_curve, integrated_risk
from calib.scoring.scores import brier, cross_entropy
from calib.validation import CalibInputError

# integrated_risk uses the trapezoid rule on 200001 points of (0, 1): the integrand is a step function (steps at
# the N posteriors) times a smooth weight, so each step costs at most one spacing (5e-6) of error, and the end
# slivers of width 2.5e-6 are left out; observed errors are ~3e-6 relative, 1e-4 leaves a wide margin.
GRID_RTOL = 1e-4
EXACT = 1e-12  # float rounding of sums of N ~ 500 terms


def _binary_data(n=500, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.dirichlet([1.0, 1.0], size=n)
    y = (rng.random(n) < q[:, 1]).astype(int)
    return q, y


def _naive(y):
    p = np.bincount(y, minlength=2) / y.size
    return np.tile(p, (y.size, 1))


def test_uniform_integral_is_cross_entropy():
    q, y = _binary_data()
    value = integrated_risk(q, y, kind="probs", weight="uniform")
    assert value == pytest.approx(cross_entropy(q, y, kind="probs"), rel=GRID_RTOL)


def test_uniform_integral_of_a_single_sample_is_minus_log_q():
    # Closed form: a class-1 sample adds P_1 (1/a) for a >= q1, integral -P_1 log q1; a class-0 sample
    # adds P_0 / (1 - a) for a < q1, integral -P_0 log q0. Here P_0 = P_1 = 1/2.
    q = np.array([[0.6, 0.4], [0.8, 0.2]])
    y = np.array([0, 1])
    expected = (-np.log(0.6) - np.log(0.2)) / 2
    assert integrated_risk(q, y, kind="probs", weight="uniform") == pytest.approx(expected, rel=GRID_RTOL)


def test_beta22_integral_is_a_multiple_of_the_brier_score():
    q, y = _binary_data()
    value = integrated_risk(q, y, kind="probs", weight="beta22")
    expected = BRIER_INTEGRAL_FACTOR * brier(q, y, kind="probs", scaling="mean")
    assert value == pytest.approx(expected, rel=GRID_RTOL)
    # the factor is 3 for the paper's 1/K scaling, i.e. 1.5 x the classic Brier score (K = 2)
    assert value == pytest.approx(1.5 * brier(q, y, kind="probs", scaling="sum"), rel=GRID_RTOL)


def test_normalized_integrals_are_nce_and_nbs():
    q, y = _binary_data()
    naive = _naive(y)
    for weight, metric in (
        ("beta22", brier(q, y, kind="probs", scaling="mean", normalize=True)),
        ("uniform", cross_entropy(q, y, kind="probs", normalize=True)),
    ):
        ratio = integrated_risk(q, y, kind="probs", weight=weight) / integrated_risk(
            naive, y, kind="probs", weight=weight
        )
        assert ratio == pytest.approx(metric, rel=2 * GRID_RTOL), weight  # two integrals, each within GRID_RTOL


def test_risk_at_one_half_is_twice_the_error_rate():
    q, y = _binary_data()
    assert np.all(q[:, 1] != 0.5)  # no ties: argmax is unambiguous
    error = np.mean(q.argmax(axis=1) != y)
    risk = bayes_risk_curve(q, y, [0.5], kind="probs")
    assert risk[0] == pytest.approx(2 * error, rel=EXACT)


@pytest.mark.parametrize("priors", [None, [0.3, 0.7]])
def test_risk_curve_equals_expected_cost_of_bayes_decisions(priors):
    # Two independent implementations: sorted log-odds here, argmin of q @ C and a confusion matrix there.
    q, y = _binary_data()
    grid = np.array([0.01, 0.05, 0.2, 0.37, 0.5, 0.64, 0.8, 0.95, 0.99])
    curve = bayes_risk_curve(q, y, grid, kind="probs", priors=priors)
    for a, value in zip(grid, curve, strict=True):
        costs = np.array([[0.0, 1.0 / (1.0 - a)], [1.0 / a, 0.0]])
        dec = bayes_decisions(q, costs, kind="probs")
        assert value == pytest.approx(expected_cost(y, dec, costs, priors=priors), rel=EXACT), a


def test_beta22_curve_is_the_uniform_curve_times_the_weight():
    q, y = _binary_data()
    grid = np.array([0.1, 0.3, 0.5, 0.9])
    uniform = bayes_risk_curve(q, y, grid, kind="probs", weight="uniform")
    beta = bayes_risk_curve(q, y, grid, kind="probs", weight="beta22")
    # W(a) = a (1 - a) / B(2, 2) with B(2, 2) = 1/6
    np.testing.assert_allclose(beta, 6 * grid * (1 - grid) * uniform, rtol=EXACT)


def test_figure_4_legend_values():
    # notes/000 §3.3: Fig. 4 legend (2 decimals), K=2, P1=0.6, N=100000, paper RNG, seed 0.
    # NCE / NBS as normalized integrals of the uniform / beta22 weighted curves. Tolerance: half a unit
    # of the printed digit.
    runs = {
        "cal": (0.15, 0.48, "cal", 0.34, 0.29),
        "mcs-u": (0.15, 0.48, "mcs", 0.42, 0.34),
        "mcs-o": (0.15, 2.0, "mcs", 0.42, 0.31),
        "cal-h": (0.19, 5.0, "cal", 0.42, 0.36),
    }
    for label, (variance, scale, system, nce, nbs) in runs.items():
        data = gaussian_posteriors(
            n_classes=2, n_samples=100_000, prior1=0.6, variance=variance, scale=scale, seed=0, rng="paper"
        )
        y = data.labels
        naive = _naive(y)
        for weight, published in (("uniform", nce), ("beta22", nbs)):
            raw = integrated_risk(data.systems[system], y, kind="logprobs", weight=weight, n_grid=20_001)
            ref = integrated_risk(naive, y, kind="probs", weight=weight, n_grid=20_001)
            assert raw / ref == pytest.approx(published, abs=0.005), (label, weight)


@pytest.mark.parametrize("grid", [[0.0, 0.5], [0.5, 1.0], [-0.1], [1.5], [], [[0.5]], [np.nan]])
def test_bad_grid_is_rejected(grid):
    q, y = _binary_data(20)
    with pytest.raises(CalibInputError, match="a must be"):
        bayes_risk_curve(q, y, grid, kind="probs")


def test_multiclass_scores_are_rejected():
    rng = np.random.default_rng(0)
    q = rng.dirichlet(np.ones(3), size=30)
    y = np.arange(30) % 3
    with pytest.raises(CalibInputError, match="scores need K = 2"):
        bayes_risk_curve(q, y, [0.5], kind="probs")
    with pytest.raises(CalibInputError, match="scores need K = 2"):
        integrated_risk(q, y, kind="probs", weight="uniform")


def test_bad_weight_and_single_class_are_rejected():
    q, y = _binary_data(20)
    with pytest.raises(CalibInputError, match="weight"):
        bayes_risk_curve(q, y, [0.5], kind="probs", weight="beta33")
    with pytest.raises(CalibInputError, match="labels has no samples of classes \\[1\\]"):
        bayes_risk_curve(q, np.zeros(20, dtype=int), [0.5], kind="probs")
