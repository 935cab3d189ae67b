"""The calibrator interface: scikit-learn style ``fit`` / ``predict_proba`` / ``predict_log_proba``.

Inputs are posteriors of a named ``kind`` ("probs", "logprobs" or "logits"); outputs are
normalized posteriors. Subclasses implement ``_fit(logp, labels, sample_weight)`` and ``_transform(logp)`` on
validated float64 log-posteriors: a fresh array each time, which they own and may overwrite. A
calibrator whose map acts on logits as given (Guo et al. (2017)'s vector and matrix scaling: logits
z and z + c 1 have the same posteriors but not the same image) says so by ``fits_logits``; given
``kind="logits"`` it receives the finite logits themselves in ``_fit_logits``, and once fitted that
way (``_fitted_on_logits``) its ``_transform`` receives logits too and other kinds are refused.

A calibrator that can be saved (:mod:`calib.calibrators.persistence`) declares what fitting
produced in ``_fitted_fields``: the attributes, with the type, shape and range of each, that its
predictions read besides ``n_classes_``. Saving writes them as plain numbers; loading checks a
file against that declaration before it sets a single attribute.

Every fit records how many parameters it fitted (``n_parameters_``, from the subclass's
``_n_parameters``) on how many rows (``n_fit_rows_``), and says so with a CalibInputWarning when
that is more than one parameter per :data:`ROWS_PER_PARAMETER` rows; a saved model keeps both.

A calibrator declares its public parameters once, with their rules, as the ``Annotated`` type hints of its
constructor (``n_bins: NBins = 15``, with the rules of :mod:`calib.validation`; scikit-learn's
``_parameter_constraints`` is the idea): ``fit``, and saving or reading a model file, check every declared
parameter (:meth:`Calibrator._check_params`), and one CalibInputError names the first wrong one and what it
may be. A parameter without a hint is checked where its rule needs the data (e.g. ``priors``, one per class).

A calibrator that maps log-posteriors (``log_scale``) treats exact zero probabilities as
:mod:`calib.calibrators.zeros` describes: the base class smooths the scores before ``_fit`` and
``_transform`` see them (and gives a zero met only at prediction a finite log-posterior), so both
receive finite log-posteriors and use them unclipped; it keeps ``zero_smoothing_`` and
``zero_loss_share_`` beside the subclass's fitted attributes.

Sample weights (``fit(..., sample_weight=w)``, scikit-learn's convention; issue 56): every fit minimizes the
weighted mean of its per-sample loss, sum_i w_i loss_i / sum_i w_i, where the unweighted fit minimizes the mean,
so integer weights fit what repeating each row w_i times fits. The base class checks the weights
(:func:`calib.validation.as_sample_weights`) and drops the rows of weight 0 before anything reads the scores, so
such a row changes nothing, not even the zero treatment's eps; ``_fit`` then receives the positive weights of
the rows kept as ``sample_weight``, or is called without them when they are all equal (the weighted mean is
then the mean, and the fit is the unweighted one bit for bit). A subclass whose ``_fit`` takes no
``sample_weight`` (e.g. a replica of an author's unweighted code) still fits unweighted, and refuses unequal
weights with a CalibInputError. Weights are not fitted attributes: a saved model does not hold them.
"""

from __future__ import annotations

import contextvars
import copy
import functools
import inspect
import typing
import warnings
from dataclasses import dataclass

import numpy as np

from calib._internal.declared import check_parameters, rules
from calib.calibrators.zeros import (
    smooth_zeros,
    unseen_zero_logs,
    warn_if_dominant,
    warn_of_unseen_zeros,
    zero_loss_share,
    zero_smoothing,
)
from calib.validation import (
    CalibInputError,
    CalibInputWarning,
    Choice,
    as_finite_logits,
    as_labels,
    as_logprobs,
    as_sample_weights,
    check_inputs,
)

# A fit with more than one parameter per ROWS_PER_PARAMETER calibration rows warns that the calibrator may
# fit noise in its rows. Ten rows per parameter is a rule of thumb, the usual guide for logistic-type
# regressions (which most calibrators are), not a published threshold for calibration maps: Silva Filho et
# al. (2023), Sects. 5.4.1-5.4.4, say only that a single parameter (temperature scaling) guards against
# overfitting small data sets with many classes, and that matrix scaling and Dirichlet calibration, with
# about K^2 parameters, can overfit them. The count is of the parameters the fit sets (``_n_parameters``),
# not an effective number: a penalty (ODIR, ``reg``) does not lower it.
ROWS_PER_PARAMETER = 10

# Each calibrator class's name on the command line (--method), filled in by calib.calibrators.registry, the
# one declaration of those names (which imports this module; this one does not import it back).
METHOD_NAMES: dict[type, list[tuple[str, dict]]] = {}


def method_name(model: Calibrator) -> str | None:
    """The command-line name of ``model``'s method: of the registry's methods of its class, the one whose
    ``features`` (the one parameter that makes a class several methods) is the model's; None if unregistered."""
    features = getattr(model, "features", None)
    for name, params in METHOD_NAMES.get(type(model), []):
        if features is None or params.get("features", type(model)().features) == features:
            return name
    return None


@dataclass(frozen=True)
class FittedField:
    """The form of one fitted attribute, as saved and checked by :mod:`calib.calibrators.persistence`.

    ``kind`` is "float", "int", "bool", "str" or "array". Arrays have a ``shape`` (None: any length from 1,
    for sizes set by the training data) and a ``dtype`` ("float64" or "int64"). ``finite``: floats
    (scalar or array) must be finite; False where fitting itself can give NaN or an infinity.
    ``low`` and ``high``: the closed range every number (scalar or array entry) must lie in, where
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
# The size of every fit, saved by every calibrator that can be saved: the parameters it fitted and the rows
# it fitted them on (0 in a model file written before it was recorded, format version 3 or earlier).
SIZE_FIELDS = {
    "n_parameters_": FittedField("int", low=0),
    "n_fit_rows_": FittedField("int", low=0),
}

# True while a calibrator's fit runs: a calibrator fitted inside another's fit (OneVsRest's per-class
# models, a cross-validated penalty's fold fits) records its size but leaves the warning to the outer fit.
_FITTING = contextvars.ContextVar("calib_calibrator_fitting", default=False)


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

    @classmethod
    def _declared_params(cls) -> dict[str, object]:
        """The constructor's parameters that declare their rules, name -> type hint (see the module docstring)."""
        return _declared_params(cls)

    def _check_params(self) -> None:
        """Check every declared parameter (:meth:`_declared_params`): a CalibInputError names the first wrong one
        and what it may be. A former name of a :class:`calib.validation.Choice` gives a FutureWarning."""
        declared = self._declared_params()
        values = {name: getattr(self, name) for name in declared}
        check_parameters(declared, values)
        for name, hint in declared.items():
            for rule in rules(hint):
                if isinstance(rule, Choice) and rule.former:
                    rule.current(values[name], name, stacklevel=3)

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

    def fit(self, scores, labels, *, kind: str, sample_weight=None, overwrite: bool = False):
        """Learn the transform from posteriors ``scores`` and integer ``labels``. ``sample_weight``: one
        weight >= 0 per row (:func:`calib.validation.as_sample_weights`), or None for equal weights; the fit
        then minimizes the weighted mean of its loss, sum_i w_i loss_i / sum_i w_i (see the module
        docstring), and rows of weight 0 are dropped first. ``overwrite``: ``scores`` is a float64 array the
        caller no longer needs, validated and worked on in its own memory.

        Sets ``n_parameters_`` (the parameters fitted; None for a calibrator that does not count them)
        and ``n_fit_rows_`` (N, the rows of positive weight), and gives a
        :class:`calib.validation.CalibInputWarning` when ``n_parameters_`` exceeds N / :data:`ROWS_PER_PARAMETER`.
        An invalid parameter is a CalibInputError naming it, before the scores are read."""
        self._check_params()
        on_logits = kind == "logits" and self.fits_logits()
        if on_logits:
            x = as_finite_logits(scores, overwrite=overwrite)
            y = as_labels(labels, x.shape[0], x.shape[1])
        else:
            x, y = check_inputs(scores, labels, kind, overwrite=overwrite)
        x, y, w = positive_rows(x, y, as_sample_weights(sample_weight, y.size))
        if w is not None and not _takes_weights(type(self), "_fit_logits" if on_logits else "_fit"):
            raise CalibInputError(
                f"sample_weight: {type(self).__name__} fits without sample weights; give sample_weight=None (or "
                "equal weights), or repeat each row as many times as its weight"
            )
        self._check_classes(x)
        self.n_classes_ = x.shape[1]
        outermost = not _FITTING.get()
        token = _FITTING.set(True)
        try:
            if on_logits:
                self._fit_logits_checked(x, y, w)
            else:
                self._fit_checked(x, y, w)
        finally:
            _FITTING.reset(token)
        self.n_fit_rows_ = int(y.size)
        self.n_parameters_ = self._n_parameters()
        if outermost:
            warn_if_many_parameters(self)
        return self

    def _fit_checked(self, logp: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        """``_fit`` on validated log-posteriors, after the zero treatment of a calibrator on log-posteriors."""
        if not self.log_scale:
            self._fit_weighted(self._fit, logp, y, w)
            return
        self.zero_smoothing_ = zero_smoothing(logp)
        self.zero_loss_share_ = 0.0
        if not self.zero_smoothing_:
            self._fit_weighted(self._fit, logp, y, w)
            return
        zero_on_true = np.isneginf(logp[np.arange(y.size), y])
        smoothed = smooth_zeros(logp, self.zero_smoothing_)
        kept = smoothed.copy() if zero_on_true.any() else None  # _fit may overwrite its input
        self._fit_weighted(self._fit, smoothed, y, w)
        if kept is not None:
            self.zero_loss_share_ = zero_loss_share(self._transform(kept), y, zero_on_true, w)
            warn_if_dominant(
                self.zero_loss_share_, int(zero_on_true.sum()), y.size, self.zero_smoothing_, type(self).__name__
            )

    def _fit_logits_checked(self, logits: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        """``_fit_logits`` on validated finite logits (no zeros to treat: a logit is never -inf here)."""
        if self.log_scale:
            self.zero_smoothing_ = 0.0
            self.zero_loss_share_ = 0.0
        self._fit_weighted(self._fit_logits, logits, y, w)

    @staticmethod
    def _fit_weighted(fit, x: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> None:
        """``fit(x, y)``, with ``sample_weight=w`` when there are weights: so a subclass whose ``_fit`` takes no
        weights still fits unweighted (:meth:`fit` has refused unequal weights for it)."""
        if w is None:
            fit(x, y)
        else:
            fit(x, y, sample_weight=w)

    def fits_logits(self) -> bool:
        """Whether ``fit`` given ``kind="logits"`` learns a map of the logits themselves (e.g. Guo et al.
        (2017)'s vector and matrix scaling, whose maps are not functions of the posteriors alone) and
        passes them to ``_fit_logits`` unnormalized; by default every calibrator maps the posteriors."""
        return False

    def _fit_logits(self, logits: np.ndarray, labels: np.ndarray, sample_weight: np.ndarray | None = None) -> None:
        raise NotImplementedError

    def _fitted_on_logits(self) -> bool:
        """Whether the fitted map acts on logits as given (so predictions need ``kind="logits"``)."""
        return False

    def predict_log_proba(self, scores, *, kind: str, overwrite: bool = False) -> np.ndarray:
        """Calibrated log-posteriors, shape (N, K). ``overwrite``: as for :meth:`fit`."""
        return self._transform(self._fitted_input(scores, kind, overwrite=overwrite))

    def _fitted_input(self, scores, kind: str, *, overwrite: bool = False) -> np.ndarray:
        """``scores`` as log-posteriors, after checking that the calibrator is fitted for their K."""
        if not hasattr(self, "n_classes_"):
            raise CalibInputError(f"{type(self).__name__} is not fitted yet: call fit(scores, labels, kind=...) first")
        if self._fitted_on_logits():
            if kind != "logits":
                raise CalibInputError(
                    f"{type(self).__name__} was fitted on logits as given, and its map acts on the logits themselves "
                    f"(the same posteriors as other logits can calibrate differently); give it logits of the same "
                    f"model with kind='logits', not kind={kind!r}",
                    cli_message=f"this {type(self).__name__} was fitted on logits as given, and its map acts on the "
                    f"logits themselves; give it logits of the same model (--kind logits), not {kind}",
                )
            logits = as_finite_logits(scores, overwrite=overwrite)
            if logits.shape[1] != self.n_classes_:
                raise CalibInputError(
                    f"scores have {logits.shape[1]} classes but the calibrator was fitted on {self.n_classes_}"
                )
            return logits
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

    def _fit(self, logp: np.ndarray, labels: np.ndarray, sample_weight: np.ndarray | None = None) -> None:
        """Fit on validated log-posteriors; ``sample_weight``: the rows' positive weights, or None when they
        are equal (see :meth:`fit`)."""
        raise NotImplementedError

    def _n_parameters(self) -> int | None:
        """The number of parameters the fit set, from the fitted attributes (``n_classes_`` is set):
        those the optimizer or the counts determine, not those fixed by the map's form (a reference
        class's zero bias). None: the calibrator does not count them, and its fits never warn."""
        return None

    # What lowers the parameter count of this calibrator without changing the method, for the warning
    # of a fit with many parameters for its rows (e.g. a penalty); "" when it has no such setting.
    fewer_parameters = ""

    def _transform(self, logp: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _fitted_fields(self) -> dict[str, FittedField]:
        """Name and form of every attribute ``_fit`` sets (``n_classes_`` aside), for this instance's
        parameters and ``n_classes_``, which must be set; a CalibInputError if a parameter the form
        or the predictions depend on is invalid. The one place a calibrator declares its state."""
        raise NotImplementedError(f"{type(self).__name__} cannot be saved")

    def _saved_fields(self) -> dict[str, FittedField]:
        """Every fitted attribute a saved model holds: the subclass's ``_fitted_fields``, for a
        calibrator on log-posteriors the zero treatment's (``ZERO_FIELDS``), and the size of the fit
        (``SIZE_FIELDS``); a CalibInputError for an invalid parameter (:meth:`_check_params`)."""
        self._check_params()
        return self._fitted_fields() | (ZERO_FIELDS if self.log_scale else {}) | SIZE_FIELDS

    def _fitted_state(self) -> dict[str, object]:
        """The values of the ``_fitted_fields``, in their declared form. Override when an attribute is
        an object to be saved as the numbers it holds."""
        return {name: getattr(self, name) for name in self._saved_fields()}

    def _restore_fitted_state(self, state: dict[str, object]) -> None:
        """Set the attributes from ``state``, the inverse of ``_fitted_state``; the values were
        checked against ``_fitted_fields`` already."""
        for name, value in state.items():
            setattr(self, name, value)


def positive_rows(
    x: np.ndarray, y: np.ndarray, w: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(x, y, w) without the rows of weight 0, and w None when the weights left are all equal: a row of weight 0
    counts for nothing, and equal weights give the unweighted mean, so the unweighted fit serves (bit for bit)."""
    if w is None:
        return x, y, None
    keep = w > 0
    if not keep.all():
        x, y, w = x[keep], y[keep], w[keep]
    return (x, y, None) if np.all(w == w[0]) else (x, y, w)


def weighted_mean_weights(sample_weight: np.ndarray | None, n: int) -> np.ndarray:
    """Each row's share of a (weighted) mean: w_i / sum_j w_j, or 1 / n for equal weights (None)."""
    if sample_weight is None:
        return np.full(n, 1.0 / n)
    return sample_weight / sample_weight.sum()


def warn_if_many_parameters(model: Calibrator) -> None:
    """A CalibInputWarning when ``model``'s fit set more than one parameter per :data:`ROWS_PER_PARAMETER`
    of its ``n_fit_rows_`` rows, naming the calibrator and both numbers, and what has fewer parameters:
    temperature (1) and DP (K) scaling where they have fewer, the calibrator's own penalty or setting
    (``fewer_parameters``), or more rows. The command line's wording names ``--method``."""
    p, n, k = model.n_parameters_, model.n_fit_rows_, model.n_classes_
    if p is None or p * ROWS_PER_PARAMETER <= n:
        return
    methods = {cls.__name__: names[0][0] for cls, names in METHOD_NAMES.items()}
    smallest = (("TemperatureScaling", 1), ("AffineCalibrator", k))
    fewer = [(cls, methods.get(cls, cls), count) for cls, count in smallest if count < p]
    python, command = [], []
    if fewer:
        what = "a calibrator with fewer parameters, "
        python.append(what + " or ".join(f"{cls} ({_parameters(count)})" for cls, _, count in fewer))
        command.append(what + " or ".join(f"--method {method} ({_parameters(count)})" for _, method, count in fewer))
    if model.fewer_parameters:
        python.append(model.fewer_parameters)
        command.append(f"(from Python) {model.fewer_parameters}")
    more = "more calibration rows"
    size = (
        f" fitted {_parameters(p)} on {n} calibration rows, more than one per {ROWS_PER_PARAMETER} rows (a rule of "
        "thumb), so it may fit noise in them; check it on held-out data, or use "
    )
    named = f"--method {method_name(model)}" if method_name(model) else type(model).__name__
    warnings.warn(
        CalibInputWarning(
            type(model).__name__ + size + "; or ".join([*python, more]),
            cli_message=named + size + "; or ".join([*command, more]),
        ),
        stacklevel=3,
    )


def _parameters(count: int) -> str:
    return f"{count} parameter" + ("" if count == 1 else "s")


@functools.cache
def _takes_weights(cls: type, method: str) -> bool:
    """Whether ``cls``'s ``method`` (``_fit`` or ``_fit_logits``) takes ``sample_weight``."""
    return "sample_weight" in inspect.signature(getattr(cls, method)).parameters


@functools.cache
def _declared_params(cls: type) -> dict[str, object]:
    """The parameters of ``cls``'s constructor with a type hint that holds rules (``Annotated``, alone or in a
    union) or is a class of its own (e.g. ``Calibrator``), name -> hint."""
    hints = typing.get_type_hints(cls.__init__, include_extras=True)
    return {name: hints[name] for name in cls._param_names() if name in hints and _declares(hints[name])}


def _declares(hint) -> bool:
    """Whether ``hint`` declares a parameter: rules, or a class that is not a builtin (a plain ``int`` or ``str``
    hint of a subclass elsewhere is a hint only)."""
    if rules(hint) or (isinstance(hint, type) and hint.__module__ != "builtins"):
        return True
    return any(_declares(option) for option in typing.get_args(hint) if option is not type(None))


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
