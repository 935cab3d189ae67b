"""Murphy diagrams: checked against a sample-by-sample elementary score, the exact integral (half the
Brier score), Ferrer & Ramos's binary Bayes risk, and the optimality of the PAV recalibration."""

import numpy as np
import pytest
from peer_fixtures import corp_recipes

from calib.calibration_errors.corp import corp_curve
from calib.scoring.murphy import murphy_diagram
from calib.scoring.risk_curves import bayes_risk_curve
from calib.validation import CalibInputError


def _draw(seed, n, digits=None, exponent=1.0):
    return corp_recipes.corp_inputs(n, seed, digits, exponent)


def elementary(x, y, theta):
    """theta 1{x > theta, y = 0} + (1 - theta) 1{x <= theta, y = 1}, sample by sample."""
    return np.mean(np.where(y == 0, theta * (x > theta), (1 - theta) * (x <= theta)))


@pytest.mark.parametrize(("seed", "digits"), [(0, None), (1, 2)])
def test_raw_and_recalibrated_curves_are_the_mean_elementary_scores(seed, digits):
    x, y = _draw(seed, 500, digits, exponent=1.6)
    thresholds = np.concatenate([np.linspace(0, 1, 41), np.unique(x)[::25]])
    d = murphy_diagram({"s": x}, y, thresholds=thresholds)
    curve = corp_curve(x, y)
    xhat = curve.recalibrated[curve.index]
    # means of 500 terms of at most 1, summed in another order: a few 2^-53 apart (measured 2.8e-17)
    np.testing.assert_allclose(d.raw["s"], [elementary(x, y, t) for t in thresholds], rtol=0, atol=1e-15)
    np.testing.assert_allclose(d.recalibrated["s"], [elementary(xhat, y, t) for t in thresholds], rtol=0, atol=1e-15)


def test_integral_over_thresholds_is_half_the_brier_score():
    """The mean elementary score is linear in theta between consecutive forecast values (it jumps at
    them), so the midpoint rule on the intervals they cut [0, 1] into is exact."""
    x, y = _draw(2, 800, exponent=0.7)
    edges = np.unique(np.concatenate([[0.0, 1.0], x]))
    d = murphy_diagram({"s": x}, y, thresholds=(edges[:-1] + edges[1:]) / 2)
    assert np.dot(np.diff(edges), d.raw["s"]) == pytest.approx(np.mean((x - y) ** 2) / 2, rel=1e-12)


def test_it_is_the_binary_bayes_risk_times_theta_one_minus_theta():
    x, y = _draw(3, 600)
    x = np.clip(x, 1e-9, 1 - 1e-9)
    grid = np.linspace(0.01, 0.99, 99)
    d = murphy_diagram({"s": x}, y, thresholds=grid)
    risk = bayes_risk_curve(np.column_stack([1 - x, x]), y.astype(int), grid, kind="probs")
    # the same counts, divided by a and 1 - a and multiplied back: a few ulps (measured 4.4e-16); one
    # sample read on the other side of a threshold would move a value by at least 1e-2 / 600 relative
    np.testing.assert_allclose(d.raw["s"], grid * (1 - grid) * risk, rtol=1e-9)


def test_recalibration_lowers_every_elementary_score():
    systems = {f"x^{e}": _draw(4, 1000, exponent=e)[0] for e in (0.5, 1.0, 2.0)}
    y = _draw(4, 1000)[1]
    d = murphy_diagram(systems, y)
    for name in systems:
        # a theorem, checked up to the rounding of a mean of 1000 terms (measured: never above, exactly)
        assert np.all(d.recalibrated[name] <= d.raw[name] + 1e-15)


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda: murphy_diagram({}, [0, 1]), "forecasts"),
        (lambda: murphy_diagram({"a": [0.2, 0.4]}, [0, 1], thresholds=[1.5]), "thresholds"),
        (lambda: murphy_diagram({"a": [0.2, 0.4]}, [0, 2]), "outcome"),
    ],
)
def test_bad_input_is_named(call, named):
    with pytest.raises(CalibInputError, match=named):
        call()
