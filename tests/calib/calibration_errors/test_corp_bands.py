"""CORP bands: coverage of the resampled and asymptotic consistency bands by simulation, and the
quantiles of Chernoff's distribution the asymptotic bands use against a simulation of its definition."""

import numpy as np
import pytest
from peer_fixtures import corp_recipes

from calib.calibration_errors.corp import corp_curve
from calib.calibration_errors.corp_bands import CHERNOFF_QUANTILES, RESAMPLING_MAX_N, corp_bands, score_density
from calib.validation import CalibInputError


def _draw(seed, n, digits=None, exponent=1.0):
    return corp_recipes.corp_inputs(n, seed, digits, exponent)


def test_consistency_band_covers_the_curve_of_calibrated_scores_at_its_level():
    """200 calibrated data sets, one random point each: the fraction of curves inside the 90 % band is
    within 3 binomial standard errors (0.064) of 0.9."""
    rng = np.random.default_rng(11)
    inside = []
    for s in range(200):
        curve = corp_curve(*_draw(1000 + s, 200))
        bands = corp_bands(curve, level=0.9, n_resamples=100, seed=s)
        j = rng.integers(bands.points.size)
        low, high = bands.consistency[0][j], bands.consistency[1][j]
        inside.append(low <= curve.at(bands.points[j]) <= high)
    assert abs(np.mean(inside) - 0.9) <= 3 * np.sqrt(0.9 * 0.1 / 200)


def test_bands_are_ordered_and_read_at_most_band_points():
    x, y = _draw(12, 5000)
    bands = corp_bands(corp_curve(x, y), n_resamples=50)
    assert bands.points.size == 1000 and bands.points[0] == x.min() and bands.points[-1] == x.max()
    for low, high in (bands.consistency, bands.confidence):
        assert np.all(low <= high) and np.all((low >= 0) & (high <= 1))


def test_asymptotic_consistency_band_covers_at_its_level():
    """300 calibrated data sets of n = 20000 (uniform scores), one random interior point each: the
    fraction inside the asymptotic 90 % band is within 3 binomial standard errors (0.052) of 0.9."""
    rng = np.random.default_rng(21)
    inside = []
    for _ in range(300):
        x = rng.uniform(size=20_000)
        curve = corp_curve(x, rng.uniform(size=x.size) < x)
        bands = corp_bands(curve, method="asymptotic")
        j = rng.integers(100, bands.points.size - 100)
        inside.append(bands.consistency[0][j] <= curve.at(bands.points[j]) <= bands.consistency[1][j])
    assert abs(np.mean(inside) - 0.9) <= 3 * np.sqrt(0.9 * 0.1 / 300)


def test_chernoff_quantiles_match_a_simulation_of_the_argmax():
    """Z = argmax_t (W(t) - t^2) for a two-sided Brownian motion W, simulated on a grid of step 0.004 over
    [-2, 2] (20000 draws): the quantiles of |Z| are within 0.03 of the table (Monte-Carlo error about
    0.005, the grid's bias about 0.01)."""
    rng = np.random.default_rng(5)
    step, t = 0.004, np.arange(1, 501) * 0.004
    draws = []
    for _ in range(10):
        right = np.cumsum(rng.standard_normal((2000, t.size)) * np.sqrt(step), axis=1) - t**2
        left = np.cumsum(rng.standard_normal((2000, t.size)) * np.sqrt(step), axis=1) - t**2
        at_zero = np.maximum(right.max(axis=1), left.max(axis=1)) <= 0
        z = np.where(right.max(axis=1) > left.max(axis=1), t[right.argmax(axis=1)], t[left.argmax(axis=1)])
        draws.append(np.where(at_zero, 0.0, z))
    levels = sorted(CHERNOFF_QUANTILES)
    np.testing.assert_allclose(
        np.quantile(np.concatenate(draws), levels), [CHERNOFF_QUANTILES[v] for v in levels], atol=0.03
    )


def test_auto_resamples_small_samples_and_uses_asymptotics_beyond():
    x, y = _draw(22, 500)
    assert corp_bands(corp_curve(x, y), n_resamples=20).method == "resampling"
    rng = np.random.default_rng(2)
    x = rng.uniform(size=RESAMPLING_MAX_N + 1)
    assert corp_bands(corp_curve(x, rng.uniform(size=x.size) < x)).method == "asymptotic"


def test_point_masses_get_the_normal_band():
    """Scores on 5 values with 4000 samples each: the band at x is x -+ 1.645 sqrt(x (1 - x) / 4000)."""
    x = np.repeat([0.1, 0.3, 0.5, 0.7, 0.9], 4000)
    bands = corp_bands(corp_curve(x, np.zeros(x.size)), method="asymptotic")
    half = 1.6448536269514722 * np.sqrt(bands.points * (1 - bands.points) / 4000)
    np.testing.assert_allclose(bands.consistency[1] - bands.points, half, rtol=1e-12)


def test_score_density_of_uniform_scores_is_one():
    x = np.linspace(0, 1, 100_001)
    curve = corp_curve(x, np.zeros(x.size))
    # the window holds about 5000 grid points, counted to within one (measured error 3.4e-4)
    np.testing.assert_allclose(score_density(curve, np.array([0.0, 0.3, 0.5, 1.0])), 1.0, atol=0.01)


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [({"level": 1.0}, "level"), ({"method": "exact"}, "method"), ({"method": "asymptotic", "level": 0.85}, "level")],
)
def test_bad_band_arguments_are_named(kwargs, named):
    with pytest.raises(CalibInputError, match=named):
        corp_bands(corp_curve([0.2, 0.5], [0, 1]), **kwargs)
