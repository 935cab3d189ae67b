"""Every calibrator refuses, parameter by parameter, the invalid values its own declarations generate (the
``Annotated`` hints of its constructor, :mod:`calib.calibrators.base`; the values from
calib._internal.declared.invalid_values), each at ``fit`` with one CalibInputError naming the parameter, as
scikit-learn's ``generate_invalid_param_val`` tests its ``_parameter_constraints``."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
from support import stable_id

import calib.calibrators as calibrators
from calib._internal.declared import invalid_values
from calib.calibrators import AffineCalibrator, Calibrator, HistogramBinning, IsotonicCalibrator, TemperatureScaling
from calib.calibrators.registry import METHODS
from calib.validation import CalibInputError

PUBLIC = [getattr(calibrators, name) for name in calibrators.__all__]
CLASSES = list(
    dict.fromkeys(
        [cls for cls, _ in METHODS.values()] + [c for c in PUBLIC if inspect.isclass(c) and issubclass(c, Calibrator)]
    )
)
CLASSES.remove(Calibrator)
# Parameters a class needs to be constructed at all.
REQUIRED = {calibrators.OneVsRest: {"calibrator": IsotonicCalibrator()}}
# Parameters without a declaration: their rule needs the data (one prior per class, summing to 1), so fit checks them.
UNDECLARED = {(AffineCalibrator, "priors"), (TemperatureScaling, "priors")}

INVALID = [
    (cls, name, value)
    for cls in CLASSES
    for name, hint in cls._declared_params().items()
    for value in invalid_values(hint)
]


def _data(cls: type, n: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """``n`` valid rows: two classes for a binary calibrator, else three."""
    k = 2 if cls.binary_only else 3
    labels = np.arange(n) % k
    probs = np.full((n, k), 0.2 / (k - 1))
    probs[np.arange(n), labels] = 0.8
    return probs, labels


def test_every_parameter_of_every_calibrator_is_declared():
    for cls in CLASSES:
        declared = set(cls._declared_params())
        assert declared == set(cls._param_names()) - {name for c, name in UNDECLARED if c is cls}, cls.__name__
        assert all(list(invalid_values(cls._declared_params()[name])) for name in declared), cls.__name__


@pytest.mark.parametrize(
    ("cls", "name", "value"),
    INVALID,
    ids=[f"{cls.__name__}({name}={stable_id(value)})" for cls, name, value in INVALID],
)
def test_an_invalid_parameter_is_one_error_at_fit_naming_it(cls, name, value):
    model = cls(**REQUIRED.get(cls, {}) | {name: value})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused before anything is fitted or warned about
        with pytest.raises(CalibInputError) as raised:
            model.fit(*_data(cls), kind="probs")
    message = str(raised.value)
    assert message.startswith(f"{name} must be ") and "; got " in message and "\n" not in message
    assert raised.value.__cause__ is None and raised.value.cli_message == message


def test_histogram_binning_reads_the_former_strategy_names_with_a_future_warning():
    scores, labels = _data(HistogramBinning, 40)
    expected = HistogramBinning(strategy="equal-mass", n_bins=3).fit(scores, labels, kind="probs")
    with pytest.warns(FutureWarning, match="strategy='mass' is the former name of strategy='equal-mass'"):
        model = HistogramBinning(strategy="mass", n_bins=3).fit(scores, labels, kind="probs")
    assert model.strategy == "mass" and np.array_equal(model.edges_, expected.edges_)


def test_numpy_values_are_parameters_as_python_ones():
    scores, labels = _data(HistogramBinning, 40)
    model = HistogramBinning(n_bins=np.int64(3)).fit(scores, labels, kind="probs")
    assert model.counts_.size == 3
    assert calibrators.PlattCalibrator(smooth_targets=np.True_).fit(scores, labels, kind="probs").converged_
