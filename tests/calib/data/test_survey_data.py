"""The survey's worked-example data and synthetic generators (calib.data.toys, calib.data.survey_synthetic)."""

import numpy as np
import pytest
from scipy.optimize import brentq

from calib.calibration_errors.binned import reliability_bins
from calib.data import survey_synthetic as gen
from calib.data.toys import decomposition_toy, ece_toy, footnote2_toy, hallenbeck_1920, marker_pitfall


def test_hallenbeck_totals_and_rebinning():
    probs, rain = hallenbeck_1920()
    assert probs.size == 123 and rain.sum() == 52  # notes/001 Sec. 8.1
    five = reliability_bins(probs, rain, n_bins=5, closed="left")
    assert five.counts.tolist() == [22, 49, 28, 22, 2]
    np.testing.assert_allclose(five.mean_confidence, [0.150, 0.287, 0.496, 0.682, 0.900], atol=5e-4)
    np.testing.assert_allclose(five.frequency, [0.182, 0.265, 0.571, 0.773, 1.000], atol=5e-4)
    two = reliability_bins(probs, rain, n_bins=2, closed="left")
    assert two.counts.tolist() == [86, 37]
    np.testing.assert_allclose(two.mean_confidence, [0.280, 0.647], atol=5e-4)
    np.testing.assert_allclose(two.frequency, [0.291, 0.730], atol=5e-4)


def test_decomposition_toy_matches_its_formulas():
    toy = decomposition_toy()
    np.testing.assert_allclose(toy["q"][:, 0], 0.25 * toy["x"][:, 0])
    np.testing.assert_allclose(toy["s"][:, 0], 0.3 * toy["x"][:, 2])
    np.testing.assert_allclose(toy["s"].sum(axis=1), 1.0)
    assert np.bincount(toy["labels"]).tolist() == [4, 4, 2]


def test_ece_toy_shape_and_the_authors_033_variant():
    s, y = ece_toy()
    assert s.shape == (30, 3) and np.bincount(y).tolist() == [10, 10, 10]
    assert s[6].tolist() == [1 / 3] * 3
    s33, _ = ece_toy(one_third=0.33)
    assert s33[7].sum() == pytest.approx(0.99)


def test_marker_pitfall_and_footnote2_counts():
    a_scores, a_labels = marker_pitfall()["a"]
    assert a_labels[a_scores == 0].mean() == 0.25 and a_labels[a_scores == 1].mean() == 0.75
    s, y = footnote2_toy()
    assert s.shape == (40, 3) and np.bincount(y).tolist() == [14, 18, 8]


def test_bayes_posterior_golden_values():
    # notes/001 Sec. 9.2 and App. A
    post = np.exp(gen.bayes_log_posteriors(np.array([64.0, -64.0]), 2))[:, 1]
    np.testing.assert_allclose(post, [0.8583, 0.1304], atol=5e-5)
    boundary = brentq(lambda t: np.exp(gen.bayes_log_posteriors(np.array([t]), 2))[0, 1] - 0.5, -40, 0)
    assert boundary == pytest.approx(-14.34, abs=0.01)
    assert np.exp(gen.bayes_log_posteriors(np.array([0.0]), 3))[0, 2] == pytest.approx(0.908, abs=1e-3)


def test_samples_follow_the_mixtures():
    x, y = gen.sample(200_000, 2, seed=0)
    assert abs(y.mean() - 0.5) < 0.005
    # positive class: equal mixture of N(-4, 960) and N(64, 1280): mean 30, variance 1120 + 34^2
    pos = x[y == 1]
    assert pos.mean() == pytest.approx(30.0, abs=0.5)
    assert pos.var() == pytest.approx(1120 + 34**2, rel=0.02)
    x3, y3 = gen.sample(100_000, 3, seed=1)
    assert x3[y3 == 2].var() == pytest.approx(8.0, rel=0.03)


def test_pseudo_models_and_their_true_maps():
    x, _ = gen.sample(10_000, 2, seed=0)
    s = gen.pseudo_model(x, gen.UNDER_SLOPE)[:, 1]
    assert 0.1 < s.min() < 0.15 and 0.85 < s.max() < 0.9  # "barely reach outside [0.1, 0.9]"
    # the true map at s is the Bayes posterior at x = logit(s) / slope
    grid = np.array([0.2, 0.5, 0.8])
    x_at = np.log(grid / (1 - grid)) / gen.OVER_SLOPE
    np.testing.assert_allclose(
        gen.true_calibration_map(grid, gen.OVER_SLOPE), np.exp(gen.bayes_log_posteriors(x_at, 2))[:, 1]
    )
