"""Isotonic (PAV) calibration of the positive-class posterior (binary).

Source: Ayer et al. (1955); Ferrer & Ramos (2024), Sec. 2.4.2: on its training data the pool-adjacent-violators
solution is the monotone map with the lowest value of every proper scoring rule at once (Brümmer
(2010)). The fit is scikit-learn's ``IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip")``
step for step (SciPy's compiled PAV on the pooled scores, the same pooling of near-equal scores,
the same trimmed thresholds and linear interpolation, so the same values to the last bit; tested),
without its lexicographic two-key sort and per-call checks: faster than scikit-learn's own.
``clip`` is the smallest probability either class gets (the code of Ferrer & Ramos (2024) uses
1e-30), so log-posteriors stay finite.

scipy.optimize is imported inside the functions that use it: a command or job that never calls them starts
without loading it.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np

from calib.calibrators.base import Calibrator, FittedField
from calib.validation import CalibInputError, Number

# The smallest probability either class gets: below 0.5, or every prediction would be 1/2.
Clip = Annotated[float, Number(0, 0.5, closed="low")]


class IsotonicCalibrator(Calibrator):
    """Isotonic (PAV) calibration of a binary posterior: a non-decreasing map of the class-1 log-odds.

    The map g minimizes sum_i (y_i - g(t_i))^2 (``fit(..., sample_weight=w)``: sum_i w_i (y_i - g(t_i))^2,
    the weighted PAV, whose minimizer is that of the weighted mean) over non-decreasing functions of the log-odds
    t_i = log q_1 - log q_0, found by the pool-adjacent-violators algorithm (SciPy's), exactly as
    scikit-learn's ``IsotonicRegression`` computes it. On its training data that solution is the monotone map with the
    lowest value of every proper scoring rule at once. New scores are mapped by its piecewise-linear
    interpolation, clipped at the ends; both class probabilities are then kept at least ``clip``, so
    log-posteriors stay finite. O(N log N) time to fit. Binary only (K = 2).

    Source: Ayer et al. (1955) (PAV); Ferrer & Ramos (2024), Sec. 2.4.2, after Brümmer (2010).

    Sample weights: ``fit(scores, labels, kind=..., sample_weight=w)`` takes one weight >= 0 per row (default
    None: equal weights). The fit then minimizes the weighted mean of squared error (weighted PAV), sum_i w_i
    loss_i / sum_i w_i, so integer weights fit what repeating each row w_i times fits; rows of weight 0 are
    dropped (:meth:`Calibrator.fit`).

    Parameters
    ----------
    clip : float, default 1e-30
        The smallest probability either class gets, in [0, 0.5) (the code of Ferrer & Ramos (2024)
        uses 1e-30).

    Attributes
    ----------
    X_thresholds_ : ndarray of shape (M,)
        Increasing log-odds at which the map is known (what scikit-learn's ``X_thresholds_`` holds).
    y_thresholds_ : ndarray of shape (M,)
        The non-decreasing positive-class probabilities there; in between, the map interpolates
        linearly, and beyond the ends it keeps the end values.
    n_classes_ : int
        2.

    Raises
    ------
    CalibInputError
        From ``fit``, for invalid scores or labels, scores with K != 2 columns, or a ``clip`` outside
        [0, 0.5).

    Examples
    --------
    >>> scores = [[0.9, 0.1], [0.2, 0.8], [0.95, 0.05], [0.1, 0.9], [0.7, 0.3], [0.4, 0.6], [0.85, 0.15], [0.3, 0.7]]
    >>> labels = [0, 1, 1, 1, 0, 0, 0, 1]
    >>> model = IsotonicCalibrator().fit(scores, labels, kind="probs")
    >>> model.y_thresholds_.tolist()
    [0.2, 0.2, 1.0, 1.0]
    >>> round(float(model.predict_proba([[0.6, 0.4]], kind="probs")[0, 1]), 4)
    0.2
    """

    binary_only = True

    def __init__(self, clip: Clip = 1e-30):
        self.clip = clip

    def _fit(self, logp: np.ndarray, labels: np.ndarray, sample_weight: np.ndarray | None = None) -> None:
        self.X_thresholds_, self.y_thresholds_ = isotonic_thresholds(
            _log_odds(logp), labels.astype(np.float64), sample_weight
        )

    def _n_parameters(self) -> int:
        """One per constant piece of the fit: the distinct values of ``y_thresholds_``."""
        return distinct_levels(self.y_thresholds_)

    def _transform(self, logp: np.ndarray) -> np.ndarray:
        p1 = interpolate(self.X_thresholds_, self.y_thresholds_, _log_odds(logp))
        # Clip both components (1 - 1e-30 == 1 in float64, so clipping p1 alone cannot keep q0 > 0).
        q = np.maximum(np.column_stack([1.0 - p1, p1]), self.clip)
        with np.errstate(divide="ignore"):
            logq = np.log(q)
        return logq - np.logaddexp(logq[:, :1], logq[:, 1:])

    def _fitted_fields(self) -> dict[str, FittedField]:
        """The thresholds (predictions interpolate between them), of any length."""
        return {"X_thresholds_": FittedField("array", (None,)), "y_thresholds_": FittedField("array", (None,))}

    def _restore_fitted_state(self, state: dict[str, object]) -> None:
        """Take saved thresholds only if they are those of an isotonic fit: refitted on themselves.

        On strictly increasing x and non-decreasing y in [0, 1], without a point equal in y to both
        neighbours (what a fit keeps), PAV pools nothing but pairs of equal values, whose mean is
        exact, and trims nothing, so the refit holds the very thresholds saved; it is checked.
        """
        x, y = state["X_thresholds_"], state["y_thresholds_"]
        if x.size != y.size or np.any(np.diff(x) <= 0) or np.any(np.diff(y) < 0) or y[0] < 0 or y[-1] > 1:
            raise CalibInputError(
                "X_thresholds_ and y_thresholds_ must have one length, X_thresholds_ increasing and "
                "y_thresholds_ non-decreasing in [0, 1]"
            )
        refit_x, refit_y = isotonic_thresholds(x, y)
        if not (np.array_equal(refit_x, x) and np.array_equal(refit_y, y)):
            raise CalibInputError("X_thresholds_ and y_thresholds_ are not the thresholds of an isotonic fit")
        self.X_thresholds_, self.y_thresholds_ = x, y


# scikit-learn's _make_unique pools a sorted score with its group while it is less than this above the
# group's first score (numpy's float64 resolution); the group keeps that first score.
_POOLING = float(np.finfo(np.float64).resolution)


def isotonic_thresholds(
    x: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The thresholds of scikit-learn's ``IsotonicRegression(y_min=0, y_max=1)`` fitted to (x, y, sample_weight).

    Sorts x (one key, any order among equal scores: the pooled sums of y do not depend on it, as sums
    of 0/1 labels are exact; weighted sums may differ in their last bit), pools scores as scikit-learn does,
    runs SciPy's PAV on the pooled (weighted) means weighted by their counts (total weights), clips to
    [0, 1] and drops every point equal in y to both neighbours. Weighted PAV minimizes
    sum_i w_i (y_i - g(x_i))^2 over non-decreasing g (Ayer et al. (1955), whose PAV is weighted),
    so integer weights fit what repeating each row w_i times fits.

    Parameters
    ----------
    x, y : ndarray of shape (N,)
        Finite scores and targets in [0, 1].
    sample_weight : ndarray of shape (N,), optional
        Positive weights (rows of weight 0 dropped before); None: unit weights.

    Returns
    -------
    (X_thresholds, y_thresholds) : tuple of ndarray
        Increasing x and non-decreasing y, as ``IsotonicRegression.X_thresholds_`` / ``y_thresholds_``.

    Examples
    --------
    >>> x, y = isotonic_thresholds(np.array([3.0, 1.0, 2.0, 4.0]), np.array([0.0, 1.0, 0.0, 1.0]))
    >>> x.tolist(), y.round(4).tolist()  # the first three pooled; the middle one of equal values dropped
    ([1.0, 3.0, 4.0], [0.3333, 0.3333, 1.0])
    """
    from scipy.optimize import isotonic_regression

    order = np.argsort(x)
    xs, ys = x[order], y[order]
    starts = _pool_starts(xs)
    if sample_weight is None:
        counts = np.diff(np.append(starts, xs.size)).astype(np.float64)
        means = np.add.reduceat(ys, starts) / counts
    else:
        ws = sample_weight[order]
        counts = np.add.reduceat(ws, starts)
        means = np.add.reduceat(ws * ys, starts) / counts
    fitted = np.clip(isotonic_regression(means, weights=counts, increasing=True).x, 0.0, 1.0)
    keep = np.ones(fitted.size, dtype=bool)
    keep[1:-1] = (fitted[1:-1] != fitted[:-2]) | (fitted[1:-1] != fitted[2:])
    return xs[starts][keep], fitted[keep]


def _pool_starts(xs: np.ndarray) -> np.ndarray:
    """Where each pool of sorted scores starts: a score opens one when it is at least _POOLING above the
    first score of the pool it would join (scikit-learn's rule). A gap of _POOLING or more always opens
    one; the rare scores closer than that to their predecessor but distinct are decided one by one."""
    gap = np.diff(xs)
    opens = np.concatenate([[True], gap >= _POOLING])
    undecided = np.flatnonzero((gap > 0) & (gap < _POOLING)) + 1
    if undecided.size:
        certain = np.maximum.accumulate(np.where(opens, np.arange(xs.size), 0))
        first = 0
        for j in undecided:
            first = max(first, int(certain[j]))
            if xs[j] - xs[first] >= _POOLING:
                opens[j] = True
                first = j
    return np.flatnonzero(opens)


def interpolate(x_thresholds: np.ndarray, y_thresholds: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The fitted map at ``x``: scikit-learn's prediction (x clipped to the thresholds' range, then linear
    interpolation by ``numpy.interp``, to which SciPy's ``interp1d`` hands it), constant for one threshold.

    Examples
    --------
    >>> interpolate(np.array([0.0, 2.0]), np.array([0.2, 0.6]), np.array([-1.0, 1.0, 5.0])).tolist()
    [0.2, 0.4, 0.6]
    """
    if x_thresholds.size == 1:
        return np.repeat(y_thresholds, x.size)
    return np.interp(np.clip(x, x_thresholds[0], x_thresholds[-1]), x_thresholds, y_thresholds)


def distinct_levels(y_thresholds: np.ndarray) -> int:
    """The number of distinct values of non-decreasing ``y_thresholds`` (the pieces of an isotonic fit)."""
    return int(np.count_nonzero(np.diff(y_thresholds))) + 1 if y_thresholds.size else 0


def _log_odds(logp: np.ndarray) -> np.ndarray:
    """log q_1 - log q_0, clipped to a finite range so the regression sees no infinities."""
    with np.errstate(invalid="ignore"):
        return np.clip(logp[:, 1] - logp[:, 0], -1e300, 1e300)
