"""calib.calibrators.registry: the one map from calibrator names to classes."""

import pytest

from calib.calibrators import Calibrator
from calib.calibrators.persistence import METHODS
from calib.calibrators.registry import CALIBRATORS, SAVABLE, make_calibrator
from calib.validation import CalibInputError


@pytest.mark.parametrize("name", list(CALIBRATORS))
def test_every_name_makes_a_fresh_calibrator_of_its_class(name):
    first, second = make_calibrator(name), make_calibrator(name)
    assert type(first) is CALIBRATORS[name] and isinstance(first, Calibrator) and first is not second


def test_parameters_reach_the_constructor_and_unknown_names_list_the_known():
    assert make_calibrator("histogram", n_bins=7, empty_bin="prior").get_params()["n_bins"] == 7
    with pytest.raises(CalibInputError, match="unknown calibrator 'platypus'; the calibrators are dp, temperature"):
        make_calibrator("platypus")


def test_model_files_hold_the_savable_calibrators_under_their_registry_names():
    assert list(METHODS) == list(SAVABLE) and all(METHODS[n] is CALIBRATORS[n] for n in SAVABLE)
