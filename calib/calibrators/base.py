"""The calibrator interface: scikit-learn style ``fit`` / ``predict_proba`` / ``predict_log_proba``.

Inputs are posteriors of a named ``kind`` ("probs", "logprobs" or "logits"); outputs are
normalized posteriors. Subclasses implement ``_fit(logp, labels)`` and ``_transform(logp)`` on
validated float64 log-posteriors: a fresh array each time, which they own and may overwrite.

A calibrator that can be saved (:mod:`calib.calibrators.persistence`) declares what fitting
produced in ``_fitted_fields``: the attributes, with the type, shape and range of each, that its
predictions read besides ``n_classes_``. Saving writes them as plain numbers; loading checks a
file against that declaration before it sets a single attribute.

A calibrator that maps log-posteriors (``log_scale``) treats exact zero probabilities as
:mod:`calib.calibrators.zeros` describes: the base class smooths the scores before ``_fit`` and
``_transform`` see them (and gives a zero met only at prediction a finite log-posterior), so both
receive finite log-posteriors and use them unclipped; it keeps ``zero_smoothing_`` and
``zero_loss_share_`` beside the subclass's fitted attributes.
"""

from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass

import numpy as np

from calib.calibrators.zeros import (
    smooth_zeros,
    unseen_zero_logs,
    warn_if_dominant,
    warn_of_unseen_zeros,
    zero_loss_share,
    zero_smoothing,
)
from calib.validation import CalibInputError, as_logprobs, check_inputs


@dataclass(frozen=True)
class FittedField:
    """The form of one fitted attribute, as saved and checked by :mod:`calib.calibrators.persistence`.

    ``kind`` is "float", "bool", "str" or "array". Arrays have a ``shape`` (None: any length from 1,
    for sizes set by the training data) and a ``dtype`` ("float64" or "int64"). ``finite``: floats
    (scalar or array) must be finite; False where fitting itself can give NaN or an infinity.
    ``low`` and ``high``: the closed range every float (scalar or array entry) must lie in, where
    the model's meaning bounds it (a scale is positive, a probability in [0, 1]); ``increasing``: a
    1-D array must be non-decreasing (bin edges, thresholds). ``choices``: the values a string may take.
    """

    kind: str
    shape: tuple[int | None, ...] = ()
    dtype: str = "float64"
    finite: bool = True
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    increasing: bool = False


# The attributes the base class fits for every calibrator on log-posteriors (calib.calibrators.zeros).
ZERO_FIELDS = {
    "zero_smoothing_": FittedField("float", low=0.0, high=1.0),
    "zero_loss_share_": FittedField("float", low=0.0, high=1.0),
}


class Calibrator:
    """Base class of every post-hoc calibration transform.

    Parameters are the constructor's keyword arguments, kept as attributes of the same names
    (scikit-learn's convention), so :meth:`get_params`, :meth:`set_params` and :meth:`clone` behave
    as scikit-learn's and ``sklearn.base.clone`` accepts a calibrator. The class does not derive from
    scikit-learn's ``BaseEstimator``, so that a command need not import scikit-learn.
    """

    binary_only = False
    # Whether the calibrator maps log-posteriors, so that exact zeros need calib.calibrators.zeros' treatment.
    log_scale = False

    @classmethod
    def _param_names(cls) -> list[str]:
        """The constructor's parameter names, in order."""
        signature = inspect.signature(cls.__init__)
        return [
            name
            for name, parameter in signature.parameters.items()
            if name != "self" and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
        ]

    def get_params(self, deep: bool = True) -> dict[str, object]:
        """The constructor parameters and their values; with ``deep``, also ``name__param`` entries of
        every parameter that is itself a calibrator (as scikit-learn's ``get_params``)."""
        params = {name: getattr(self, name) for name in self._param_names()}
        if deep:
            for name, value in list(params.items()):
                if isinstance(value, Calibrator):
                    params.update({f"{name}__{key}": inner for key, inner in value.get_params().items()})
        return params

    def set_params(self, **params):
        """Set constructor parameters (``name__param`` reaches into a nested calibrator); returns self."""
        names = self._param_names()
        for key, value in params.items():
            name, _, inner = key.partition("__")
            if name not in names:
                raise CalibInputError(f"{type(self).__name__} has no parameter {name!r}; its parameters: {names}")
            if inner:
                getattr(self, name).set_params(**{inner: value})
            else:
                setattr(self, name, value)
        return self

    def clone(self):
        """A new, unfitted calibrator with copies of this one's parameters (nested calibrators cloned)."""
        params = {
            name: value.clone() if isinstance(value, Calibrator) else copy.deepcopy(value)
            for name, value in self.get_params(deep=False).items()
        }
        return type(self)(**params)

    def __repr__(self) -> str:
        """``Name(param=value, ...)`` with the parameters that differ from their defaults."""
        defaults = inspect.signature(type(self).__init__).parameters
        changed = [
            f"{name}={value!r}"
            for name, value in self.get_params(deep=False).items()
            if not _same_value(value, defaults[name].default)
        ]
        return f"{type(self).__name__}({', '.join(changed)})"

    def fit(self, scores, labels, *, kind: str, overwrite: bool = False):
        """Learn the transform from posteriors ``scores`` and integer ``labels``. ``overwrite``: ``scores``
        is a float64 array the caller no longer needs, validated and worked on in its own memory."""
        logp, y = check_inputs(scores, labels, kind, overwrite=overwrite)
        self._check_classes(logp)
        self.n_classes_ = logp.shape[1]
        if not self.log_scale:
            self._fit(logp, y)
            return self
        self.zero_smoothing_ = zero_smoothing(logp)
        self.zero_loss_share_ = 0.0
        if not self.zero_smoothing_:
            self._fit(logp, y)
            return self
        zero_on_true = np.isneginf(logp[np.arange(y.size), y])
        smoothed = smooth_zeros(logp, self.zero_smoothing_)
        kept = smoothed.copy() if zero_on_true.any() else None  # _fit may overwrite its input
        self._fit(smoothed, y)
        if kept is not None:
            self.zero_loss_share_ = zero_loss_share(self._transform(kept), y, zero_on_true)
            warn_if_dominant(
                self.zero_loss_share_, int(zero_on_true.sum()), y.size, self.zero_smoothing_, type(self).__name__
            )
        return self

    def predict_log_proba(self, scores, *, kind: str, overwrite: bool = False) -> np.ndarray:
        """Calibrated log-posteriors, shape (N, K). ``overwrite``: as for :meth:`fit`."""
        return self._transform(self._fitted_input(scores, kind, overwrite=overwrite))

    def _fitted_input(self, scores, kind: str, *, overwrite: bool = False) -> np.ndarray:
        """``scores`` as log-posteriors, after checking that the calibrator is fitted for their K."""
        if not hasattr(self, "n_classes_"):
            raise CalibInputError(f"{type(self).__name__} is not fitted yet: call fit(scores, labels, kind=...) first")
        logp = as_logprobs(scores, kind, overwrite=overwrite)
        if logp.shape[1] != self.n_classes_:
            raise CalibInputError(
                f"scores have {logp.shape[1]} classes but the calibrator was fitted on {self.n_classes_}"
            )
        if self.log_scale:  # logp is a fresh array, or the caller's to overwrite
            warn_of_unseen_zeros(logp, self.zero_smoothing_, type(self).__name__)
            unseen_zero_logs(smooth_zeros(logp, self.zero_smoothing_))
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

    def _fitted_fields(self) -> dict[str, FittedField]:
        """Name and form of every attribute ``_fit`` sets (``n_classes_`` aside), for this instance's
        parameters and ``n_classes_``, which must be set; a CalibInputError if a parameter the form
        or the predictions depend on is invalid. The one place a calibrator declares its state."""
        raise NotImplementedError(f"{type(self).__name__} cannot be saved")

    def _saved_fields(self) -> dict[str, FittedField]:
        """Every fitted attribute a saved model holds: the subclass's ``_fitted_fields``, and for a
        calibrator on log-posteriors the zero treatment's (``ZERO_FIELDS``)."""
        return self._fitted_fields() | (ZERO_FIELDS if self.log_scale else {})

    def _fitted_state(self) -> dict[str, object]:
        """The values of the ``_fitted_fields``, in their declared form. Override when an attribute is
        an object to be saved as the numbers it holds."""
        return {name: getattr(self, name) for name in self._saved_fields()}

    def _restore_fitted_state(self, state: dict[str, object]) -> None:
        """Set the attributes from ``state``, the inverse of ``_fitted_state``; the values were
        checked against ``_fitted_fields`` already."""
        for name, value in state.items():
            setattr(self, name, value)


def _same_value(value, default) -> bool:
    """Whether a parameter equals its default (arrays compared by value)."""
    if isinstance(value, np.ndarray) or isinstance(default, np.ndarray):
        return isinstance(value, np.ndarray) and isinstance(default, np.ndarray) and np.array_equal(value, default)
    try:
        return bool(value == default)
    except (TypeError, ValueError):
        return value is default


def binary_logprobs(p1: np.ndarray) -> np.ndarray:
    """Log-posteriors [log(1 - p1), log p1] of a positive-class probability (log 0 = -inf)."""
    with np.errstate(divide="ignore"):
        return np.column_stack([np.log1p(-p1), np.log(p1)])
