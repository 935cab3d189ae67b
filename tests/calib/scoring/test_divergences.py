"""Tests of calib.scoring.divergences: score divergences and the mean-as-minimizer property (eq. 29, App. B)."""

import numpy as np
import pytest

from calib.data.synthetic import gaussian_posteriors
from calib.scoring.divergences import DIVERGENCES, expected_divergence_to_constant, score_divergence
from calib.validation import CalibInputError

GRID = np.linspace(1e-4, 1 - 1e-4, 9999)  # spacing 1e-4
SPACING = GRID[1] - GRID[0]


def _appendix_b_posteriors():
    # App. B: posteriors s of App. C for a 2-class problem with P1 = 0.6 (odd N so the median is one sample)
    data = gaussian_posteriors(n_classes=2, n_samples=401, prior1=0.6, variance=0.15, seed=0)
    return np.exp(data.systems["cal"])


@pytest.mark.parametrize("divergence", ["kl", "sq_euclidean"])
def test_score_divergences_are_minimized_at_the_mean(divergence):
    s = _appendix_b_posteriors()
    values = expected_divergence_to_constant(s, GRID, kind="probs", divergence=divergence)
    # Bregman mean-as-minimizer (eq. 29): the argmin over the grid is the grid point nearest E[s_1]
    assert abs(GRID[np.argmin(values)] - s[:, 0].mean()) <= SPACING


@pytest.mark.parametrize("divergence", ["l1", "l1_positive"])
def test_absolute_distance_is_minimized_at_the_median_not_the_mean(divergence):
    s = _appendix_b_posteriors()
    values = expected_divergence_to_constant(s, GRID, kind="probs", divergence=divergence)
    best = GRID[np.argmin(values)]
    # closed form: mean |s - c| is minimized at the median (unique for odd N)
    assert abs(best - np.median(s[:, 0])) <= SPACING
    # on this skewed sample the median (~0.78) is far from the mean (~0.59): App. B's counterexample
    assert abs(best - s[:, 0].mean()) > 0.1


def test_closed_forms_at_a_point():
    s = np.array([[0.2, 0.8], [0.6, 0.4], [0.9, 0.1]])
    q0 = np.array([0.5])
    # KL: mean_t sum_k s_k log(s_k / q0_k) with q0 = [1/2, 1/2]
    kl = np.mean([sum(v * np.log(v / 0.5) for v in row) for row in s])
    # squared Euclidean: mean_t 2 (s_1 - 1/2)^2 = 2 (0.09 + 0.01 + 0.16) / 3
    sq = 2 * (0.09 + 0.01 + 0.16) / 3
    # absolute: mean_t |s_1 - 1/2| = (0.3 + 0.1 + 0.4) / 3, doubled for the full vector
    l1_pos = 0.8 / 3
    for divergence, expected in (("kl", kl), ("sq_euclidean", sq), ("l1", 2 * l1_pos), ("l1_positive", l1_pos)):
        got = expected_divergence_to_constant(s, q0, kind="probs", divergence=divergence)
        assert got[0] == pytest.approx(expected, rel=1e-13), divergence  # float rounding only


@pytest.mark.parametrize("divergence", DIVERGENCES)
def test_closed_form_agrees_with_per_sample_divergence(divergence):
    # two code paths: moments / prefix sums vs the per-sample divergence against a broadcast constant
    rng = np.random.default_rng(0)
    s = rng.dirichlet([0.7, 1.3], size=301)
    grid = np.array([0.03, 0.2, 0.5, 0.61, 0.97])
    closed = expected_divergence_to_constant(s, grid, kind="probs", divergence=divergence)
    for g, value in zip(grid, closed, strict=True):
        q0 = np.tile([g, 1 - g], (s.shape[0], 1))
        per_sample = score_divergence(s, q0, kind="probs", divergence=divergence)
        # float rounding of N ~ 300 terms of order 1 (cancellation in the moment form of KL / sq)
        assert value == pytest.approx(per_sample.mean(), rel=1e-10, abs=1e-13), (divergence, g)


def test_divergence_of_a_posterior_with_itself_is_zero():
    rng = np.random.default_rng(0)
    s = rng.dirichlet(np.ones(4), size=50)
    s[0] = [0.5, 0.5, 0.0, 0.0]  # zeros in s contribute 0 (0 log 0 = 0)
    for divergence in DIVERGENCES:
        np.testing.assert_array_equal(score_divergence(s, s, kind="probs", divergence=divergence), 0.0)


def test_kl_and_sq_euclidean_hand_computed():
    s = np.array([[0.25, 0.75]])
    q = np.array([[0.5, 0.5]])
    kl = 0.25 * np.log(0.5) + 0.75 * np.log(1.5)
    assert score_divergence(s, q, kind="probs", divergence="kl")[0] == pytest.approx(kl, rel=1e-14)
    assert score_divergence(s, q, kind="probs", divergence="sq_euclidean")[0] == pytest.approx(0.125, rel=1e-14)
    assert score_divergence(s, q, kind="probs", divergence="l1")[0] == pytest.approx(0.5, rel=1e-14)
    assert score_divergence(s, q, kind="probs", divergence="l1_positive")[0] == pytest.approx(0.25, rel=1e-14)


def test_kl_is_infinite_where_q_is_zero_and_s_is_not():
    s = np.array([[0.5, 0.5]])
    q = np.array([[1.0, 0.0]])
    assert score_divergence(s, q, kind="probs", divergence="kl")[0] == np.inf


def test_bad_arguments_are_rejected():
    s = np.array([[0.2, 0.8], [0.6, 0.4]])
    with pytest.raises(CalibInputError, match="divergence"):
        score_divergence(s, s, kind="probs", divergence="hellinger")
    with pytest.raises(CalibInputError, match="divergence"):
        expected_divergence_to_constant(s, [0.5], kind="probs", divergence="hellinger")
    with pytest.raises(CalibInputError, match="reference has shape"):
        score_divergence(s, s[:1], kind="probs", divergence="kl")
    with pytest.raises(CalibInputError, match="reference needs 2 columns"):
        expected_divergence_to_constant(np.full((2, 3), 1 / 3), [0.5], kind="probs", divergence="kl")


@pytest.mark.parametrize("grid", [[0.0], [1.0], [0.5, 1.2], [[0.5]], [np.nan]])
def test_bad_q0_grid_is_rejected(grid):
    s = np.array([[0.2, 0.8], [0.6, 0.4]])
    with pytest.raises(CalibInputError, match="q0_first"):
        expected_divergence_to_constant(s, grid, kind="probs", divergence="kl")
