"""Isotonic (PAV) calibration of the positive-class posterior (binary).

Source: Ayer et al. (1955); paper 000, Sec. 2.4.2: on its training data the pool-adjacent-violators
solution is the monotone map with the lowest value of every proper scoring rule at once (Brümmer
2010). The fit uses scikit-learn's isotonic regression (a maintained PAV); new scores are mapped by
its piecewise-linear interpolation, clipped at the ends. ``clip`` is the smallest probability
either class gets (the paper-000 authors use 1e-30), so log-posteriors stay finite.
"""

from __future__ import annotations

import numpy as np
from sklearn.isotonic import IsotonicRegression

from calib.calibrators.base import Calibrator
from calib.validation import CalibInputError


class IsotonicCalibrator(Calibrator):
    """PAV / isotonic regression of the label on the log-odds of class 1."""

    binary_only = True

    def __init__(self, clip: float = 1e-30):
        self.clip = clip

    def _fit(self, logp: np.ndarray, labels: np.ndarray) -> None:
        if not 0 <= self.clip < 0.5:
            raise CalibInputError(f"clip must be in [0, 0.5); got {self.clip!r}")
        self.regression_ = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
        self.regression_.fit(_log_odds(logp), labels.astype(np.float64))

    def _transform(self, logp: np.ndarray) -> np.ndarray:
        p1 = self.regression_.predict(_log_odds(logp))
        # Clip both components (1 - 1e-30 == 1 in float64, so clipping p1 alone cannot keep q0 > 0).
        q = np.maximum(np.column_stack([1.0 - p1, p1]), self.clip)
        with np.errstate(divide="ignore"):
            logq = np.log(q)
        return logq - np.logaddexp(logq[:, :1], logq[:, 1:])


def _log_odds(logp: np.ndarray) -> np.ndarray:
    """log q_1 - log q_0, clipped to a finite range so the regression sees no infinities."""
    with np.errstate(invalid="ignore"):
        return np.clip(logp[:, 1] - logp[:, 0], -1e300, 1e300)
