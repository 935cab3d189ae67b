"""calib.calibrators.folds computes scikit-learn's shuffled folds itself: the same folds, fold for fold."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.model_selection import KFold, StratifiedKFold

from calib.calibrators import AffineCalibrator, OneVsRest, PlattCalibrator, TemperatureScaling
from calib.calibrators.folds import fold_ids
from calib.validation import CalibInputError


def _sklearn_ids(splitter, labels) -> np.ndarray:
    ids = np.full(labels.size, -1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for fold, (_, test) in enumerate(splitter.split(np.zeros(labels.size), labels)):
            ids[test] = fold
    return ids


@settings(max_examples=200, deadline=None)
@given(
    labels=st.lists(st.integers(0, 6), min_size=2, max_size=400),
    n_folds=st.integers(2, 7),
    seed=st.integers(0, 2**31 - 1),
)
def test_stratified_and_plain_folds_are_scikit_learns(labels, n_folds, seed):
    y = np.asarray(labels)
    if y.size >= n_folds:
        plain = _sklearn_ids(KFold(n_folds, shuffle=True, random_state=seed), y)
        np.testing.assert_array_equal(fold_ids(y, n_folds=n_folds, seed=seed, stratified=False), plain)
    if np.bincount(y).max() >= n_folds:
        stratified = _sklearn_ids(StratifiedKFold(n_folds, shuffle=True, random_state=seed), y)
        np.testing.assert_array_equal(fold_ids(y, n_folds=n_folds, seed=seed), stratified)


def test_a_random_state_continues_its_stream_as_in_scikit_learn():
    y = np.random.default_rng(2).integers(0, 4, size=500)
    ours, theirs = np.random.RandomState(7), np.random.RandomState(7)
    for _ in range(3):
        expected = _sklearn_ids(StratifiedKFold(5, shuffle=True, random_state=theirs), y)
        np.testing.assert_array_equal(fold_ids(y, n_folds=5, seed=ours), expected)


def test_class_order_is_order_of_first_appearance():
    # Classes seen first get their shuffle first: relabelling changes nothing but the names.
    y = np.array([2, 2, 0, 1, 0, 2, 1, 1, 0, 0, 2, 1])
    np.testing.assert_array_equal(fold_ids(y, n_folds=3, seed=5), fold_ids((y + 1) % 3, n_folds=3, seed=5))


def test_too_few_samples_per_class_is_refused():
    with pytest.raises(CalibInputError, match="n_folds=5"):
        fold_ids([0, 1, 2, 0, 1, 2], n_folds=5, seed=0)


@pytest.mark.parametrize(
    "model",
    [TemperatureScaling(), AffineCalibrator(bias=False, max_iter=7), OneVsRest(PlattCalibrator())],
    ids=["defaults", "changed", "nested"],
)
def test_calibrator_parameters_behave_as_scikit_learns(model):
    from sklearn.base import clone

    ours, theirs = model.clone(), clone(model)
    assert type(ours) is type(model) and ours is not model
    assert repr(ours) == repr(theirs) == repr(model)
    assert ours.get_params(deep=False).keys() == theirs.get_params(deep=False).keys()
    assert ours.get_params().keys() == theirs.get_params().keys()


def test_set_params_reaches_nested_calibrators_and_refuses_unknown_names():
    model = OneVsRest(PlattCalibrator()).set_params(calibrator__feature="score")
    assert model.calibrator.feature == "score" and model.get_params()["calibrator__feature"] == "score"
    assert repr(AffineCalibrator(bias=False)) == "AffineCalibrator(bias=False)"
    with pytest.raises(CalibInputError, match="no parameter 'temperature'"):
        TemperatureScaling().set_params(temperature=2.0)
