"""Isotonic (PAV) calibration of the positive-class posterior (binary).

Source: Ayer et al. (1955); Ferrer & Ramos (2024), Sec. 2.4.2: on its training data the pool-adjacent-violators
solution is the monotone map with the lowest value of every proper scoring rule at once (Brümmer
(2010)). The fit uses scikit-learn's isotonic regression (a maintained PAV); new scores are mapped by
its piecewise-linear interpolation, clipped at the ends. ``clip`` is the smallest probability
either class gets (the code of Ferrer & Ramos (2024) uses 1e-30), so log-posteriors stay finite.
"""

from __future__ import annotations

from numbers import Real
from typing import TYPE_CHECKING

import numpy as np

from calib.calibrators.base import Calibrator, FittedField
from calib.validation import CalibInputError

if TYPE_CHECKING:
    from sklearn.isotonic import IsotonicRegression


class IsotonicCalibrator(Calibrator):
    """Isotonic (PAV) calibration of a binary posterior: a non-decreasing map of the class-1 log-odds.

    The map g minimizes sum_i (y_i - g(t_i))^2 over non-decreasing functions of the log-odds
    t_i = log q_1 - log q_0, found by the pool-adjacent-violators algorithm (scikit-learn's isotonic
    regression, a maintained PAV). On its training data that solution is the monotone map with the
    lowest value of every proper scoring rule at once. New scores are mapped by its piecewise-linear
    interpolation, clipped at the ends; both class probabilities are then kept at least ``clip``, so
    log-posteriors stay finite. O(N log N) time to fit. Binary only (K = 2).

    Source: Ayer et al. (1955) (PAV); Ferrer & Ramos (2024), Sec. 2.4.2, after Brümmer (2010).

    Parameters
    ----------
    clip : float, default 1e-30
        The smallest probability either class gets, in [0, 0.5) (the code of Ferrer & Ramos (2024)
        uses 1e-30).

    Attributes
    ----------
    regression_ : sklearn.isotonic.IsotonicRegression
        The fitted regression; its ``X_thresholds_`` and ``y_thresholds_`` define the map.
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
    >>> model.regression_.y_thresholds_.tolist()
    [0.2, 0.2, 1.0, 1.0]
    >>> round(float(model.predict_proba([[0.6, 0.4]], kind="probs")[0, 1]), 4)
    0.2
    """

    binary_only = True

    def __init__(self, clip: float = 1e-30):
        self.clip = clip

    def _check_clip(self) -> None:
        if isinstance(self.clip, bool) or not isinstance(self.clip, Real) or not 0 <= self.clip < 0.5:
            raise CalibInputError(f"clip must be in [0, 0.5); got {self.clip!r}")

    def _fit(self, logp: np.ndarray, labels: np.ndarray) -> None:
        self._check_clip()
        self.regression_ = _regression()
        self.regression_.fit(_log_odds(logp), labels.astype(np.float64))

    def _transform(self, logp: np.ndarray) -> np.ndarray:
        p1 = self.regression_.predict(_log_odds(logp))
        # Clip both components (1 - 1e-30 == 1 in float64, so clipping p1 alone cannot keep q0 > 0).
        q = np.maximum(np.column_stack([1.0 - p1, p1]), self.clip)
        with np.errstate(divide="ignore"):
            logq = np.log(q)
        return logq - np.logaddexp(logq[:, :1], logq[:, 1:])

    def _fitted_fields(self) -> dict[str, FittedField]:
        """The thresholds of ``regression_`` (its predictions interpolate between them), of any length."""
        self._check_clip()
        return {"X_thresholds_": FittedField("array", (None,)), "y_thresholds_": FittedField("array", (None,))}

    def _fitted_state(self) -> dict[str, object]:
        return {"X_thresholds_": self.regression_.X_thresholds_, "y_thresholds_": self.regression_.y_thresholds_}

    def _restore_fitted_state(self, state: dict[str, object]) -> None:
        """Rebuild ``regression_`` through scikit-learn's public ``fit``, on the thresholds themselves.

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
        regression = _regression().fit(x, y)
        if not (np.array_equal(regression.X_thresholds_, x) and np.array_equal(regression.y_thresholds_, y)):
            raise CalibInputError("X_thresholds_ and y_thresholds_ are not the thresholds of an isotonic fit")
        self.regression_ = regression


def _regression() -> IsotonicRegression:
    """An unfitted regression with y in [0, 1], clipped to its end values beyond the training scores."""
    from sklearn.isotonic import IsotonicRegression  # scikit-learn costs a command's start-up 0.8 s: only here

    return IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")


def _log_odds(logp: np.ndarray) -> np.ndarray:
    """log q_1 - log q_0, clipped to a finite range so the regression sees no infinities."""
    with np.errstate(invalid="ignore"):
        return np.clip(logp[:, 1] - logp[:, 0], -1e300, 1e300)
