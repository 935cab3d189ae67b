"""Cox's test of calibration as sums: the score test of (a, b) = (0, 1) in the recalibration model
logit P(y = 1 | p) = a + b logit(p), with power against any departure in the large (a) or in spread (b),
from five sums that add over chunks, partitions and resamples.

With x_i = logit(p_i), r_i = y_i - p_i and v_i = p_i (1 - p_i), the score of (a, b) at (0, 1) is
U = (sum r_i, sum r_i x_i) and its information I = [[sum v_i, sum v_i x_i], [sum v_i x_i, sum v_i x_i^2]];
S = U' I^-1 U is chi-squared with 2 degrees of freedom for calibrated forecasts (with one, S = U_0^2 / I_00,
where every forecast is the same and the slope is not identified). Unlike Spiegelhalter's z, whose terms
carry the factor 1 - 2 p_i and vanish near p = 0.5, S sees a segment whose forecasts are all near 0.5 and
off by a constant.

With sample weights the score sums w_i r_i and w_i r_i x_i and the information w_i^2 v_i (...): the variance
of the weighted score over independent rows (:attr:`calib.evaluation.metrics.Terms.weight_power`).

A forecast of exactly 0 or 1 has v_i = 0 and an infinite x_i: it adds nothing to the information, and to the
score nothing when it is right and an infinite amount when it is wrong (p-value 0: a certain forecast was
wrong).

Source: Cox (1958) (the model); the score test of its two parameters is the likelihood's at (0, 1).
"""

from __future__ import annotations

import numpy as np

from calib.evaluation.metrics import Terms

# The terms' keys, in the order of U_0, U_1, I_00, I_01, I_11.
KEYS = ("cox score", "cox slope score", "cox information", "cox cross information", "cox slope information")
# Below this ratio of det(I) to I_00 I_11 the slope is not identified (the forecasts are nearly all alike).
SINGULAR = 1e-10


def cox_terms(forecasts: np.ndarray, outcomes: np.ndarray, log_odds: np.ndarray) -> dict[str, Terms]:
    """The per-row terms of the test (the score's with weight power 1, the information's with power 2).

    Parameters
    ----------
    forecasts, outcomes, log_odds : arrays of shape (n,)
        Each row's forecast p_i, outcome y_i (0.0 or 1.0) and the forecast's log-odds x_i.

    Returns
    -------
    dict of key -> Terms

    Examples
    --------
    >>> terms = cox_terms(np.array([0.5, 0.8]), np.array([1.0, 0.0]), np.log(np.array([1.0, 4.0])))
    >>> [round(float(terms[key].values.sum()), 4) for key in KEYS[:3]]
    [-0.3, -1.109, 0.41]
    """
    r = outcomes - forecasts
    v = forecasts * (1.0 - forecasts)
    with np.errstate(invalid="ignore"):
        rx = np.where(r == 0, 0.0, r * log_odds)
        vx = np.where(v == 0, 0.0, v * log_odds)
        vxx = np.where(v == 0, 0.0, vx * log_odds)
    values = (r, rx, v, vx, vxx)
    return {
        key: Terms(value, weight_power=1 if i < 2 else 2)
        for i, (key, value) in enumerate(zip(KEYS, values, strict=True))
    }


def cox_statistic(u0: float, u1: float, i00: float, i01: float, i11: float) -> tuple[float, int, float]:
    """(S, degrees of freedom, p-value) of the summed terms: S = U' I^-1 U on 2 degrees of freedom, or
    U_0^2 / I_00 on 1 where the information is singular; NaN for a segment without information.

    Examples
    --------
    >>> s, df, p = cox_statistic(10.0, 0.0, 100.0, 0.0, 50.0)  # off in the large only: S = 10^2 / 100
    >>> round(s, 6), df, round(p, 6)
    (1.0, 2, 0.606531)
    """
    if not np.isfinite(u0) or not np.isfinite(u1):
        return float("inf"), 2, 0.0
    if not i00 > 0:
        return float("nan"), 2, float("nan")
    det = i00 * i11 - i01 * i01
    if det <= SINGULAR * i00 * i11 or not np.isfinite(det):
        s = u0 * u0 / i00
        return float(s), 1, float(_chi2_survival(s, 1))
    s = (u0 * u0 * i11 - 2.0 * u0 * u1 * i01 + u1 * u1 * i00) / det
    return float(s), 2, float(_chi2_survival(s, 2))


def _chi2_survival(s: float, df: int) -> float:
    """P(chi^2_df > s): exp(-s / 2) for 2 degrees of freedom, erfc(sqrt(s / 2)) for 1."""
    from scipy.special import erfc

    return float(np.exp(-0.5 * s)) if df == 2 else float(erfc(np.sqrt(0.5 * s)))
