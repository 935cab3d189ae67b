"""The calibrator interface: scikit-learn style ``fit`` / ``predict_proba`` / ``predict_log_proba``.

Inputs are posteriors of a named ``kind`` ("probs", "logprobs" or "logits"); outputs are
normalized posteriors. Subclasses implement ``_fit(logp, labels)`` and ``_transform(logp)`` on
validated float64 log-posteriors: a fresh array each time, which they own and may overwrite.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator

from calib.validation import CalibInputError, as_logprobs, check_inputs


class Calibrator(BaseEstimator):
    """Base class of every post-hoc calibration transform."""

    binary_only = False

    def fit(self, scores, labels, *, kind: str):
        """Learn the transform from posteriors ``scores`` and integer ``labels``."""
        logp, y = check_inputs(scores, labels, kind)
        self._check_classes(logp)
        self.n_classes_ = logp.shape[1]
        self._fit(logp, y)
        return self

    def predict_log_proba(self, scores, *, kind: str) -> np.ndarray:
        """Calibrated log-posteriors, shape (N, K)."""
        return self._transform(self._fitted_input(scores, kind))

    def _fitted_input(self, scores, kind: str) -> np.ndarray:
        """``scores`` as log-posteriors, after checking that the calibrator is fitted for their K."""
        if not hasattr(self, "n_classes_"):
            raise CalibInputError(f"{type(self).__name__} is not fitted yet: call fit(scores, labels, kind=...) first")
        logp = as_logprobs(scores, kind)
        if logp.shape[1] != self.n_classes_:
            raise CalibInputError(
                f"scores have {logp.shape[1]} classes but the calibrator was fitted on {self.n_classes_}"
            )
        return logp

    def predict_proba(self, scores, *, kind: str) -> np.ndarray:
        """Calibrated posteriors, shape (N, K)."""
        logp = self.predict_log_proba(scores, kind=kind)
        return np.exp(logp, out=logp)  # a fresh array from every calibrator

    def _check_classes(self, logp: np.ndarray) -> None:
        if self.binary_only and logp.shape[1] != 2:
            raise CalibInputError(
                f"{type(self).__name__} is binary only: scores need K = 2 columns, got {logp.shape[1]}"
            )

    def _fit(self, logp: np.ndarray, labels: np.ndarray) -> None:
        raise NotImplementedError

    def _transform(self, logp: np.ndarray) -> np.ndarray:
        raise NotImplementedError


def binary_logprobs(p1: np.ndarray) -> np.ndarray:
    """Log-posteriors [log(1 - p1), log p1] of a positive-class probability (log 0 = -inf)."""
    with np.errstate(divide="ignore"):
        return np.column_stack([np.log1p(-p1), np.log(p1)])
