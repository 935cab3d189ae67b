"""EvaluationSettings refuses, field by field, the invalid values its own declarations generate
(calib._internal.declared.invalid_values), each with one CalibInputError naming the field; the command's
side of the same values is tests/cli/test_setting_options.py."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from support import stable_id

from calib._internal.declared import hints, invalid_values, option
from calib.calibration_errors.binned import BinnedCalibrationError
from calib.evaluation.settings import EvaluationSettings
from calib.validation import CalibInputError, NBins

INVALID = [
    (field.name, value)
    for field in dataclasses.fields(EvaluationSettings)
    for value in invalid_values(hints(EvaluationSettings)[field.name])
]


def test_every_setting_has_invalid_values_to_try():
    assert {name for name, _ in INVALID} == {f.name for f in dataclasses.fields(EvaluationSettings)}


@pytest.mark.parametrize(("name", "value"), INVALID, ids=[f"{n}={stable_id(v)}" for n, v in INVALID])
def test_an_invalid_setting_is_one_error_naming_the_field_and_its_option(name, value):
    with pytest.raises(CalibInputError) as raised:
        EvaluationSettings(**{name: value})
    message, cli_message = str(raised.value), raised.value.cli_message
    where, _, rest = message.partition(" must be ")
    assert where.split("[")[0] == name and "; got " in rest and "\n" not in message  # [i]: an item of a tuple
    assert cli_message == message.replace(name, option(name), 1) or cli_message.startswith(f"{option(name)} must be ")


def test_settings_take_numpy_integers_and_sequences_of_names():
    settings = EvaluationSettings(n_bins=np.int64(10), seed=np.uint32(3), calibrators=["dp"], metrics=("NCE",))
    assert settings.n_bins == 10 and settings.calibrators == ("dp",) and settings.metrics == ("NCE",)
    assert EvaluationSettings(n_boot=0, fit_samples=None, fit_cells=None, smooth_bandwidth=1).n_boot == 0


@pytest.mark.parametrize("value", list(invalid_values(NBins)), ids=repr)
def test_n_bins_is_one_declaration_for_the_evaluation_and_the_binned_estimator(value):
    with pytest.raises(CalibInputError) as evaluation:
        EvaluationSettings(n_bins=value)
    with pytest.raises(CalibInputError) as estimator:
        BinnedCalibrationError(n_bins=value)
    assert str(evaluation.value) == str(estimator.value)


ESTIMATOR_INVALID = [
    (field.name, value)
    for field in dataclasses.fields(BinnedCalibrationError)
    for value in invalid_values(hints(BinnedCalibrationError)[field.name])
]


@pytest.mark.parametrize(
    ("name", "value"), ESTIMATOR_INVALID, ids=[f"{n}={stable_id(v)}" for n, v in ESTIMATOR_INVALID]
)
def test_an_invalid_binned_estimator_setting_is_one_error_naming_it(name, value):
    with pytest.raises(CalibInputError) as raised:
        BinnedCalibrationError(**{name: value})
    message = str(raised.value)
    assert message.startswith(f"{name} must be ") and "; got " in message and "\n" not in message
