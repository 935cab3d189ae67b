"""One-vs-rest extension of a binary calibrator to K classes, with renormalisation.

Source: the survey of Silva Filho et al. (2023), Sect. 5.4 (one-vs-rest: K binary calibration
problems, then normalisation of the K outputs, with a uniform 1/K where all K are 0, as PyCalib's
``OneVsRestCalibrator`` does), following Zadrozny & Elkan (2002).
The renormalised vectors need not be calibrated in the multiclass sense (survey Sect. 5.4).
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from calib.calibrators.base import Calibrator
from calib.validation import CalibInputError, as_logprobs


class OneVsRest(Calibrator):
    """Multiclass calibration by one binary ``calibrator`` per class, then renormalisation.

    For class j, a clone of ``calibrator`` is fitted on the binary log-posteriors
    [log(1 - s_j), log s_j] (log(1 - s_j) computed as the log-sum-exp of the other columns, which
    is accurate when s_j is near 1) against the labels 1(y == j). Prediction takes each model's
    positive-class probability p_j and returns g_j(s) = p_j / sum_k p_k; a row where every p_j is 0
    becomes uniform, 1/K. The renormalised vectors need not be calibrated in the multiclass sense.
    ``OneVsRest(IsotonicCalibrator())`` is multiclass isotonic calibration. Cost: K fits of the
    binary calibrator, each on all N samples.

    Special cases:

    - K = 2: only the class-1 model is fitted and its output is returned as is (p_0 = 1 - p_1).
    - A class absent from the training labels gets a constant-zero predictor (p_j = 0), and a
      class that is every training label gets a constant-one predictor; no model is fitted.

    Source: Silva Filho et al. (2023), Sect. 5.4 (one-vs-rest, normalisation, uniform 1/K where all
    K outputs are 0, as PyCalib's ``OneVsRestCalibrator``), following Zadrozny & Elkan (2002).

    Sample weights: ``fit(scores, labels, kind=..., sample_weight=w)`` takes one weight >= 0 per row (default
    None: equal weights). The fit then minimizes the weighted mean of loss of each per-class model (each binary
    fit gets the weights), sum_i w_i loss_i / sum_i w_i, so integer weights fit what repeating each row w_i
    times fits; rows of weight 0 are dropped (:meth:`Calibrator.fit`).

    Parameters
    ----------
    calibrator : Calibrator
        An unfitted binary calibrator (e.g. ``IsotonicCalibrator()``, ``PlattCalibrator()``); it is
        cloned per class and never fitted itself.

    Attributes
    ----------
    estimators_ : list of length K
        The fitted clone for class j, or None where a constant is used (and for class 0 when K = 2).
    constants_ : ndarray of shape (K,)
        The constant p_j, NaN where a model is used.
    n_classes_ : int
        K, the number of classes seen by ``fit``.

    Raises
    ------
    CalibInputError
        From ``fit``, for invalid scores or labels, or a ``calibrator`` that is not a calib
        Calibrator instance.

    Examples
    --------
    >>> from calib.data.miscalibrated_logits import miscalibrated_logits
    >>> draw = miscalibrated_logits(60, 3)  # model logits twice the true ones: over-confident
    >>> scores, labels = draw.model_logits, draw.labels
    >>> from calib.calibrators import PlattCalibrator
    >>> model = OneVsRest(PlattCalibrator()).fit(scores, labels, kind="logits")
    >>> model.predict_proba(scores[:1], kind="logits").round(4).tolist()
    [[0.0069, 0.0069, 0.9862]]
    """

    def __init__(self, calibrator: Calibrator):
        self.calibrator = calibrator

    def _fit(self, logp: np.ndarray, labels: np.ndarray, sample_weight: np.ndarray | None = None) -> None:
        k = logp.shape[1]
        self.estimators_ = [None] * k
        self.constants_ = np.full(k, np.nan)
        for j in [1] if k == 2 else range(k):
            positive = labels == j
            if not positive.any():
                self.constants_[j] = 0.0
            elif positive.all():
                self.constants_[j] = 1.0
            else:
                model = self.calibrator.clone()
                self.estimators_[j] = model.fit(
                    _one_vs_rest(logp, j), positive.astype(np.int64), kind="logprobs", sample_weight=sample_weight
                )

    def _n_parameters(self) -> int | None:
        """The sum over the per-class models (a constant counts none); None if one does not count its own."""
        counts = [model.n_parameters_ for model in self.estimators_ if model is not None]
        return None if None in counts else int(sum(counts))

    def _class_log_proba(self, logp: np.ndarray, j: int) -> np.ndarray:
        """log p_j: the class-j model's positive-class log-probability (or the constant's log)."""
        model = self.estimators_[j]
        if model is None:
            with np.errstate(divide="ignore"):
                return np.full(logp.shape[0], np.log(self.constants_[j]))
        return model.predict_log_proba(_one_vs_rest(logp, j), kind="logprobs")[:, 1]

    def _unnormalized_log_proba(self, logp: np.ndarray) -> np.ndarray:
        k = logp.shape[1]
        if k == 2:
            log_p1 = self._class_log_proba(logp, 1)
            with np.errstate(divide="ignore"):
                return np.column_stack([np.log1p(-np.exp(log_p1)), log_p1])
        return np.column_stack([self._class_log_proba(logp, j) for j in range(k)])

    def predict_unnormalized_proba(self, scores, *, kind: str) -> np.ndarray:
        """The per-class positive probabilities p_j before renormalisation, shape (N, K).

        For K = 2, column 1 is the class-1 model's output and column 0 is 1 - p_1.
        """
        if not hasattr(self, "n_classes_"):
            raise CalibInputError("OneVsRest is not fitted yet: call fit(scores, labels, kind=...) first")
        logp = as_logprobs(scores, kind)
        if logp.shape[1] != self.n_classes_:
            raise CalibInputError(
                f"scores have {logp.shape[1]} classes but the calibrator was fitted on {self.n_classes_}"
            )
        return np.exp(self._unnormalized_log_proba(logp))

    def _transform(self, logp: np.ndarray) -> np.ndarray:
        k = logp.shape[1]
        if k == 2:
            model = self.estimators_[1]
            if model is not None:
                return model.predict_log_proba(logp, kind="logprobs")
            return self._unnormalized_log_proba(logp)
        log_p = self._unnormalized_log_proba(logp)
        with np.errstate(divide="ignore"):
            total = logsumexp(log_p, axis=1, keepdims=True)
        zero = ~np.isfinite(total[:, 0])
        out = log_p - np.where(zero[:, None], 0.0, total)
        out[zero] = -np.log(k)
        return out


def _one_vs_rest(logp: np.ndarray, j: int) -> np.ndarray:
    """Binary log-posteriors [log(1 - s_j), log s_j]; log(1 - s_j) = logsumexp of the other columns."""
    k = logp.shape[1]
    if k == 2:
        return logp if j == 1 else logp[:, ::-1]
    others = np.delete(logp, j, axis=1)
    with np.errstate(divide="ignore"):
        rest = logsumexp(others, axis=1)
    return np.column_stack([rest, logp[:, j]])
