"""The figures' histograms of weighted samples show weight (issue 56)."""

import numpy as np
import pytest
from matplotlib.figure import Figure

from calib.calibration_errors.corp import corp_curve
from calib.plots import corp as corp_plots
from calib.plots.reliability import score_histogram
from calib.validation import CalibInputError


@pytest.mark.parametrize("seed", range(3))
def test_reliability_histogram_of_integer_weights_is_that_of_repeated_scores(seed):
    rng = np.random.default_rng(seed)
    x, w = rng.uniform(size=50), rng.integers(0, 5, size=50)
    edges = np.linspace(0, 1, 11)
    weighted, repeated = Figure().add_subplot(), Figure().add_subplot()
    score_histogram(weighted, x, edges, sample_weight=w)
    score_histogram(repeated, np.repeat(x, w), edges)
    heights = [[p.get_height() for p in ax.patches] for ax in (weighted, repeated)]
    np.testing.assert_allclose(heights[0], heights[1], rtol=0, atol=1e-12)
    assert weighted.get_ylabel() == "weight" and repeated.get_ylabel() == "count"
    with pytest.raises(CalibInputError, match="sample_weight"):
        score_histogram(Figure().add_subplot(), x, edges, sample_weight=-w - 1)


def test_corp_histogram_of_a_weighted_curve_shows_weight():
    rng = np.random.default_rng(0)
    x, w = rng.uniform(size=50), rng.uniform(0, 2, size=50)
    curve = corp_curve(x, rng.uniform(size=50) < x, sample_weight=w)
    ax = Figure().add_subplot()
    corp_plots.score_histogram(ax, curve.points, curve.counts)
    assert sum(p.get_height() for p in ax.patches) == pytest.approx(w.sum(), abs=1e-12)
