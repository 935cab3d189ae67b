"""Cox's score test of calibration from sums (calib.evaluation.cox_test): equal to the score test computed from
the recalibration model's likelihood by numerical differentiation; blind spots of Spiegelhalter's z seen; the
p-value uniform on calibrated forecasts; the degenerate cases."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit
from scipy.stats import kstest

from calib.evaluation.cox_test import KEYS, cox_statistic, cox_terms
from calib.evaluation.metrics import Batch
from calib.evaluation.subgroups import z_test_terms


def _statistic(p, y, weights=None):
    terms = cox_terms(p, y, np.log(p) - np.log1p(-p))
    w = np.ones(p.size) if weights is None else weights
    return cox_statistic(*(float(np.sum(terms[k].values * w ** terms[k].weight_power)) for k in KEYS))


def _numerical_score_test(p, y):
    """g' (-H)^-1 g of the log-likelihood of logit P(y = 1) = a + b logit(p) at (0, 1), by central differences."""
    x = np.log(p) - np.log1p(-p)

    def loglik(a, b):
        eta = a + b * x
        return float(np.sum(y * eta - np.logaddexp(0.0, eta)))

    h = 1e-4
    at = np.array([0.0, 1.0])
    steps = np.eye(2) * h
    f = lambda v: loglik(*v)  # noqa: E731
    g = np.array([(f(at + s) - f(at - s)) / (2 * h) for s in steps])
    hess = np.array([[(f(at + s + t) - f(at + s - t) - f(at - s + t) + f(at - s - t)) / (4 * h * h) for t in steps]
                     for s in steps])  # fmt: skip
    return float(g @ np.linalg.solve(-hess, g))


@pytest.mark.parametrize("seed", range(4))
def test_the_statistic_from_sums_is_the_likelihoods_score_test(seed):
    rng = np.random.default_rng(seed)
    p = expit(rng.normal(0.3, 1.2, 400))
    y = (rng.random(400) < expit(0.2 + 0.8 * np.log(p / (1 - p)))).astype(float)  # off in the large and slope
    s, df, _ = _statistic(p, y)
    assert df == 2
    assert s == pytest.approx(_numerical_score_test(p, y), rel=1e-5)


def test_two_sites_near_one_half_are_flagged_where_spiegelhalters_z_is_blind():
    # As the example: 400 rows forecast about one half (0.47 to 0.53) against an observed rate of 0.71.
    rng = np.random.default_rng(1)
    p = rng.uniform(0.47, 0.53, 400)
    y = (rng.random(400) < 0.71).astype(float)
    _, _, p_value = _statistic(p, y)
    assert p_value * 1000 < 0.05  # flagged even after Holm's adjustment over the most groups allowed (1000)
    batch = Batch(np.log(np.column_stack([1 - p, p])), y.astype(int))
    z_terms = z_test_terms(batch)
    z = z_terms["z numerator"].values.sum() / np.sqrt(z_terms["z variance"].values.sum())
    assert abs(z) < 3  # Spiegelhalter's z: (1 - 2p) is near 0 for every row


def test_the_p_value_is_uniform_on_calibrated_forecasts():
    rng = np.random.default_rng(7)
    p_values = []
    for _ in range(300):
        p = expit(rng.normal(0.0, 1.5, 300))
        y = (rng.random(300) < p).astype(float)
        p_values.append(_statistic(p, y)[2])
    assert kstest(p_values, "uniform").pvalue > 0.01


def test_integer_weights_give_the_repeated_rows_score_and_the_information_sums_squared_weights():
    rng = np.random.default_rng(3)
    p = expit(rng.normal(0.0, 1.0, 200))
    y = (rng.random(200) < p).astype(float)
    w = rng.integers(1, 4, 200).astype(float)
    terms = cox_terms(p, y, np.log(p / (1 - p)))
    rows = np.repeat(np.arange(200), w.astype(int))
    repeated = cox_terms(p[rows], y[rows], np.log(p[rows] / (1 - p[rows])))
    assert np.sum(terms[KEYS[0]].values * w) == pytest.approx(repeated[KEYS[0]].values.sum(), rel=1e-12)
    assert terms[KEYS[2]].weight_power == 2 and terms[KEYS[0]].weight_power == 1


def test_a_constant_forecast_is_tested_in_the_large_on_one_degree_of_freedom():
    y = np.r_[np.ones(70), np.zeros(30)]
    s, df, p_value = _statistic(np.full(100, 0.5), y)
    assert df == 1 and s == pytest.approx(20.0**2 / 25.0) and p_value == pytest.approx(6.334e-5, rel=1e-3)


def test_a_certain_forecast_that_is_wrong_has_p_value_zero_and_one_that_is_right_adds_nothing():
    p = np.array([0.3, 0.6, 0.4, 1.0])
    log_odds = np.array([np.log(0.3 / 0.7), np.log(1.5), np.log(0.4 / 0.6), np.inf])
    right = cox_terms(p, np.array([0.0, 1.0, 1.0, 1.0]), log_odds)
    assert all(np.isfinite(t.values).all() for t in right.values())
    wrong = cox_terms(p, np.array([0.0, 1.0, 1.0, 0.0]), log_odds)
    assert cox_statistic(*(float(wrong[k].values.sum()) for k in KEYS))[2] == 0.0
