"""Murphy diagrams: the mean elementary scores of binary probability forecasts over all thresholds.

Every proper score of a binary event is a mixture of elementary scores (Ehm et al. (2016)), one per
threshold theta in [0, 1]: the cost of acting on "x > theta" with a false alarm costing theta and a
miss 1 - theta,

    S_theta(x, y) = theta 1{x > theta, y = 0} + (1 - theta) 1{x <= theta, y = 1}.

A Murphy diagram plots the mean S_theta of each system against theta: a system that is lower at
every theta is better under every proper score. Integrated over theta in [0, 1] it is half the
Brier score; it is theta (1 - theta) times the binary Bayes risk of Ferrer & Ramos (2024), eq. 34,
with the classes' empirical priors (:func:`calib.scoring.risk_curves.bayes_risk_curve`). The curve of
the CORP (PAV) recalibrated forecasts lies below the raw one at every theta: PAV minimizes every
elementary score at once among non-decreasing functions of the forecast (Dimitriadis et al. (2021)).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from calib.calibration_errors.corp import CorpCurve, corp_curve
from calib.validation import CalibInputError

# The default thresholds: 0 to 1 in steps of 1/200.
DEFAULT_THRESHOLDS = np.linspace(0.0, 1.0, 201)


@dataclass(frozen=True)
class MurphyDiagram:
    """Mean elementary scores at ``thresholds`` per system: of the forecasts as given (``raw``) and of
    their CORP recalibration (``recalibrated``)."""

    thresholds: np.ndarray
    raw: dict[str, np.ndarray]
    recalibrated: dict[str, np.ndarray]


def mean_elementary_scores(values: np.ndarray, counts: np.ndarray, positives: np.ndarray, thresholds) -> np.ndarray:
    """Mean S_theta at each threshold of forecasts grouped by value: ``values`` non-decreasing, each held
    by ``counts`` samples of which ``positives`` are positive. O((M + G) log M). The samples are already
    grouped, so weights enter as the groups' summed weights: ``counts`` the summed weight of a value's
    samples, ``positives`` that of its positive ones (a weighted :class:`calib.calibration_errors.corp.CorpCurve`
    holds them), and the result is the weighted mean sum_i w_i S_theta(x_i, y_i) / sum_i w_i.

    Source: Ehm et al. (2016) (the elementary scores of a probability forecast; see the module's text).

    Parameters
    ----------
    values : array of shape (M,)
        Non-decreasing forecasts in [0, 1].
    counts, positives : arrays of shape (M,)
        Samples and positives per forecast (or their summed sample weights).
    thresholds : array of shape (G,)
        The thetas, in [0, 1].

    Returns
    -------
    array of shape (G,)

    Examples
    --------
    >>> mean_elementary_scores(np.array([0.2, 0.8]), np.array([1, 1]), np.array([0, 1]), [0.5]).tolist()
    [0.0]
    >>> mean_elementary_scores(np.array([0.2, 0.8]), np.array([3.0, 1.0]), np.array([1.0, 0.0]), [0.5]).tolist()
    [0.25]
    """
    theta = np.asarray(thresholds, dtype=np.float64)
    n = counts.sum()
    # Forecasts at or below theta: the first `upto` groups.
    upto = np.searchsorted(values, theta, side="right")
    positives_upto = np.concatenate([[0.0], np.cumsum(positives)])[upto]
    negatives_above = (n - positives.sum()) - np.concatenate([[0.0], np.cumsum(counts - positives)])[upto]
    return (theta * negatives_above + (1.0 - theta) * positives_upto) / n


def _check_thresholds(thresholds) -> np.ndarray:
    theta = np.asarray(DEFAULT_THRESHOLDS if thresholds is None else thresholds, dtype=np.float64)
    if theta.ndim != 1 or theta.size == 0 or not np.all(np.isfinite(theta)) or theta.min() < 0 or theta.max() > 1:
        raise CalibInputError("thresholds must be a non-empty 1-D array of values in [0, 1]")
    return theta


def murphy_diagram(forecasts: Mapping[str, object], outcome, *, thresholds=None, sample_weight=None) -> MurphyDiagram:
    """Mean elementary scores over thresholds of one or more systems, raw and CORP-recalibrated.

    Source: Ehm et al. (2016) (elementary scores, Murphy diagrams); Dimitriadis et al. (2021) (the
    PAV-recalibrated forecasts beside the raw ones).

    Parameters
    ----------
    forecasts : mapping of name -> array_like of shape (N,)
        Each system's forecast probabilities of the event, all for the same outcomes.
    outcome : array_like of shape (N,)
        The binary outcomes, 0 or 1.
    thresholds : array_like of shape (G,), optional
        The thetas in [0, 1]; default 201 evenly spaced from 0 to 1.
    sample_weight : array_like of shape (N,), optional
        A weight >= 0 per sample (:func:`calib.validation.as_sample_weights`), the same for every system:
        the means become weighted means sum_i w_i S_theta(x_i, y_i) / sum_i w_i and the recalibration the
        weighted PAV fit (:func:`calib.calibration_errors.corp.corp_curve`). None weighs every sample 1.

    Returns
    -------
    MurphyDiagram
        ``thresholds`` and, per system, ``raw`` and ``recalibrated`` arrays of shape (G,).

    Raises
    ------
    CalibInputError
        For no system, invalid forecasts or outcomes, or invalid thresholds.

    Examples
    --------
    >>> d = murphy_diagram({"a": [0.1, 0.4, 0.7, 0.9]}, [0, 1, 0, 1], thresholds=[0.5])
    >>> d.raw["a"].tolist(), d.recalibrated["a"].tolist()
    ([0.25], [0.125])
    """
    if not forecasts:
        raise CalibInputError("forecasts must name at least one system: {name: probabilities of the event}")
    theta = _check_thresholds(thresholds)
    curves: dict[str, CorpCurve] = {name: corp_curve(x, outcome, sample_weight) for name, x in forecasts.items()}
    raw, recalibrated = {}, {}
    for name, curve in curves.items():
        raw[name] = mean_elementary_scores(curve.points, curve.counts, curve.positives, theta)
        recalibrated[name] = mean_elementary_scores(curve.recalibrated, curve.counts, curve.positives, theta)
    return MurphyDiagram(theta, raw, recalibrated)
