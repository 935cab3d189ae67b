"""Binary Bayes-risk curves and the proper scoring rules they integrate to.

Source: Ferrer & Ramos (2024), eqs. 10-12 (an EPSR is a weighted integral of Bayes
risks), eq. 34 (the binary cost family), Sec. 3.1 / Fig. 4. Following the authors' figure, ``a``
is the cost parameter of the positive class (index 1): the cost matrix is
``[[0, 1/(1 - a)], [1/a, 0]]`` (eq. 34 with the classes in the order the figure uses), whose Bayes
decision picks class 1 exactly when q_1 > a, so ``a`` is also the decision threshold on q_1.

Integrals over a in (0, 1):
- weight W(a) = 1 gives the cross-entropy exactly (natural log);
- weight W(a) = a(1 - a)/B(2, 2) gives 3 x the paper's Brier score (eq. 9, 1/K scaling, K = 2),
  i.e. 1.5 x the classic Brier score. Normalized by the same integral for the naive system, it is
  exactly NBS. (Brümmer (2010), Sec. 7.4; the constant is absorbed by normalization.)
"""

from __future__ import annotations

import numpy as np
from scipy.special import beta as beta_fn

from calib.validation import CalibInputError, Choice, as_priors, check, check_inputs, class_counts

WEIGHTS = ("uniform", "beta22")
BRIER_INTEGRAL_FACTOR = 3.0  # integral of the beta22-weighted risk / paper-scaled Brier score (K = 2)


def risk_weight(a: np.ndarray, weight: str) -> np.ndarray:
    """W(a): ``uniform`` (1, integrates to CE) or ``beta22`` (a(1-a)/B(2,2), integrates to 3 BS)."""
    if check(weight, Choice(WEIGHTS), "weight") == "uniform":
        return np.ones_like(a)
    return a * (1.0 - a) / beta_fn(2.0, 2.0)


def _check_grid(a) -> np.ndarray:
    grid = np.asarray(a, dtype=np.float64)
    if grid.ndim != 1 or grid.size == 0 or np.any(grid <= 0) or np.any(grid >= 1) or not np.all(np.isfinite(grid)):
        raise CalibInputError("a must be a non-empty 1-D grid of values strictly between 0 and 1")
    return grid


def bayes_risk_curve(scores, labels, a, *, kind: str, priors=None, weight: str = "uniform") -> np.ndarray:
    """W(a) * Risk(a) for each ``a`` in the grid: expected cost of Bayes decisions for eq. 34.

    Risk(a) = P_0 (1/(1-a)) R_0(a) + P_1 (1/a) R_1(a), with R_0(a) the fraction of class-0 samples with
    q_1 > a and R_1(a) the fraction of class-1 samples with q_1 <= a. Computed from sorted log-odds,
    O((N + G) log N) time and O(N + G) memory.
    """
    logp, y = check_inputs(scores, labels, kind)
    if logp.shape[1] != 2:
        raise CalibInputError(f"Bayes-risk curves of eq. 34 are binary: scores need K = 2 columns, got {logp.shape[1]}")
    grid = _check_grid(a)
    counts = class_counts(y, 2, need_all=True)
    p = counts / y.size if priors is None else as_priors(priors, 2)
    with np.errstate(invalid="ignore"):
        log_odds = logp[:, 1] - logp[:, 0]
    threshold = np.log(grid) - np.log1p(-grid)
    neg = np.sort(log_odds[y == 0])
    pos = np.sort(log_odds[y == 1])
    false_pos = (neg.size - np.searchsorted(neg, threshold, side="right")) / neg.size
    false_neg = np.searchsorted(pos, threshold, side="right") / pos.size
    risk = p[0] * false_pos / (1.0 - grid) + p[1] * false_neg / grid
    return risk_weight(grid, weight) * risk


def integrated_risk(scores, labels, *, kind: str, weight: str, n_grid: int = 200_001, priors=None) -> float:
    """Trapezoid integral over a in (0, 1) of :func:`bayes_risk_curve` (eq. 12), on a uniform grid."""
    edge = 0.5 / n_grid
    grid = np.linspace(edge, 1.0 - edge, n_grid)
    return float(np.trapezoid(bayes_risk_curve(scores, labels, grid, kind=kind, priors=priors, weight=weight), grid))
