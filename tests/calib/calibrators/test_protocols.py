"""Tests of calib.calibrators.protocols: seeded stratified / grouped folds, xv, tt and held-out calibration."""

import numpy as np
import pytest

from calib.calibrators import (
    AffineCalibrator,
    HistogramBinning,
    calibrate,
    cross_validate,
    cross_validated_folds,
    fold_ids,
    held_out,
    train_on_test,
)
from calib.validation import CalibInputError


def _labels():
    rng = np.random.default_rng(0)
    return rng.choice(3, size=203, p=[0.6, 0.3, 0.1])


def test_folds_are_stratified():
    y = _labels()
    folds = fold_ids(y, n_folds=5, seed=0)
    assert set(np.unique(folds)) == set(range(5))
    # per class, the fold sizes differ by at most one
    for k in range(3):
        sizes = np.bincount(folds[y == k], minlength=5)
        assert sizes.max() - sizes.min() <= 1, (k, sizes)


def test_unstratified_folds_have_balanced_sizes():
    folds = fold_ids(_labels(), n_folds=4, seed=0, stratified=False)
    sizes = np.bincount(folds, minlength=4)
    assert sizes.max() - sizes.min() <= 1


def test_folds_are_deterministic_for_a_seed():
    y = _labels()
    np.testing.assert_array_equal(fold_ids(y, n_folds=5, seed=3), fold_ids(y, n_folds=5, seed=3))
    assert not np.array_equal(fold_ids(y, n_folds=5, seed=3), fold_ids(y, n_folds=5, seed=4))


def test_a_legacy_random_state_is_consumed_in_sequence():
    # notes/000 §1.3: successive splits continue one global stream, so two draws differ, and a replay
    # from the same state repeats them.
    y = _labels()
    first = np.random.RandomState(0)
    a, b = fold_ids(y, n_folds=5, seed=first), fold_ids(y, n_folds=5, seed=first)
    assert not np.array_equal(a, b)
    replay = np.random.RandomState(0)
    np.testing.assert_array_equal(fold_ids(y, n_folds=5, seed=replay), a)
    np.testing.assert_array_equal(fold_ids(y, n_folds=5, seed=replay), b)


@pytest.mark.parametrize("stratified", [True, False], ids=["stratified", "unstratified"])
def test_no_group_is_split_across_folds(stratified):
    # App. E: duplicates of one bootstrap sample (one group id) must stay in one fold.
    rng = np.random.default_rng(0)
    groups = rng.integers(0, 60, size=240)
    y = (groups % 3 == 0).astype(int)  # labels are constant within a group, as for bootstrap duplicates
    folds = fold_ids(y, n_folds=5, seed=0, groups=groups, stratified=stratified)
    for g in np.unique(groups):
        assert np.unique(folds[groups == g]).size == 1, g


# A binary data set for histogram binning with 10 bins: 40 samples in bins 2, 4, 6 and 8 and one
# sample alone in bin 10 (q1 = 0.95).
def _histogram_data():
    q1 = np.r_[np.repeat([0.15, 0.35, 0.55, 0.75], 10), 0.95]
    y = np.r_[np.tile([0, 0, 0, 1, 0], 2), np.tile([0, 1], 5), np.tile([1, 1, 0, 1, 0], 2), np.ones(10), 1]
    return np.column_stack([1 - q1, q1]), y.astype(int)


def test_cross_validation_never_uses_a_samples_own_fold():
    q, y = _histogram_data()
    lone = q.shape[0] - 1
    zero = HistogramBinning(n_bins=10, empty_bin="zero")
    xv = cross_validate(zero, q, y, kind="probs", n_folds=5, seed=0)
    # trained without the lone sample, its bin is empty: the "zero" policy gives q1 = 0 (log -inf)
    assert np.isneginf(xv[lone, 1])
    assert xv[lone, 0] == 0.0
    # trained on itself (tt), its bin holds its own label 1
    tt = train_on_test(zero, q, y, kind="probs")
    assert tt[lone, 1] == 0.0
    # with the "prior" policy: the positive rate of the other folds' training samples
    folds = fold_ids(y, n_folds=5, seed=0)
    train = folds != folds[lone]
    prior = cross_validate(HistogramBinning(n_bins=10, empty_bin="prior"), q, y, kind="probs", n_folds=5, seed=0)
    assert np.exp(prior[lone, 1]) == pytest.approx(y[train].mean(), rel=1e-15)


def test_cross_validation_equals_held_out_fold_by_fold():
    q, y = _histogram_data()
    model = HistogramBinning(n_bins=10)
    folds = fold_ids(y, n_folds=5, seed=1)
    xv = cross_validate(model, q, y, kind="probs", n_folds=5, seed=1)
    for f in range(5):
        test = folds == f
        expected = held_out(model, q[~test], y[~test], q[test], kind="probs")
        # xv converts probs to log-posteriors once more before fitting: a few ulps
        np.testing.assert_allclose(xv[test], expected, rtol=1e-14, atol=0)


def test_explicit_folds_are_honored():
    # two samples alone in bin 10 (labels 1 and 0). In different folds each gets the other's label;
    # in the same fold their bin is empty in training and the "prior" policy applies.
    q1 = np.r_[np.repeat([0.15, 0.55], 6), 0.95, 0.95]
    y = np.r_[np.tile([0, 0, 1], 2), np.tile([1, 0, 1], 2), 1, 0]
    q = np.column_stack([1 - q1, q1])
    model = HistogramBinning(n_bins=10, empty_bin="prior")
    apart = np.r_[np.tile([0, 1], 6), 0, 1]
    out = np.exp(calibrate(model, q, y, kind="probs", protocol="xv", folds=apart))
    assert out[12, 1] == 0.0  # its partner's label 0
    assert out[13, 1] == 1.0  # its partner's label 1
    together = np.r_[np.tile([0, 1], 6), 0, 0]
    out = np.exp(calibrate(model, q, y, kind="probs", protocol="xv", folds=together))
    # fold 0 (samples 12 and 13) is calibrated by a model trained on fold 1: samples 1, 3, ..., 11 with
    # labels 0, 0, 1, 0, 1, 1, a positive rate of 1/2
    np.testing.assert_allclose(out[12:, 1], 0.5, rtol=1e-15)


def test_seeded_xv_equals_xv_with_the_same_explicit_folds():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(120, 3))
    y = rng.integers(0, 3, size=120)
    folds = fold_ids(y, n_folds=4, seed=7)
    a = calibrate(AffineCalibrator(), logits, y, kind="logits", protocol="xv", n_folds=4, seed=7)
    b = calibrate(AffineCalibrator(), logits, y, kind="logits", protocol="xv", folds=folds)
    np.testing.assert_array_equal(a, b)


def test_tt_protocol_is_train_on_test():
    q, y = _histogram_data()
    model = HistogramBinning(n_bins=10)
    np.testing.assert_array_equal(
        calibrate(model, q, y, kind="probs", protocol="tt"),
        model.fit(q, y, kind="probs").predict_log_proba(q, kind="probs"),
    )


def test_protocol_name_is_checked():
    q, y = _histogram_data()
    with pytest.raises(CalibInputError, match="protocol"):
        calibrate(HistogramBinning(), q, y, kind="probs", protocol="heldout")


def test_too_many_folds_are_rejected():
    with pytest.raises(CalibInputError, match="n_folds"):
        fold_ids([0, 1, 0], n_folds=5, seed=0)
    with pytest.raises(CalibInputError, match="n_folds"):
        cross_validate(AffineCalibrator(), [[0.2, 0.8], [0.6, 0.4], [0.3, 0.7]], [1, 0, 1], kind="probs", n_folds=4)
    with pytest.raises(CalibInputError, match="n_folds"):
        fold_ids([0, 1, 0, 1], n_folds=1, seed=0)
    with pytest.raises(CalibInputError, match="groups has fewer distinct ids than n_folds"):
        fold_ids([0, 1, 0, 1, 0, 1], n_folds=3, seed=0, groups=[0, 0, 0, 1, 1, 1])
    with pytest.raises(CalibInputError, match="needs a class with at least 5 samples.*Use fewer folds"):
        fold_ids([0, 1, 2, 0, 1, 2, 0, 1], n_folds=5, seed=0)


def test_a_class_smaller_than_n_folds_is_absent_from_some_folds_without_a_warning(recwarn):
    ids = fold_ids([0] * 10 + [1] * 2, n_folds=5, seed=0)
    assert sorted(np.bincount(ids)) == [2, 2, 2, 3, 3] and len(recwarn) == 0


def test_bad_groups_and_folds_shapes_are_rejected():
    with pytest.raises(CalibInputError, match="groups"):
        fold_ids([0, 1, 0, 1], n_folds=2, seed=0, groups=[0, 1, 2])
    q, y = _histogram_data()
    with pytest.raises(CalibInputError, match="folds"):
        cross_validate(HistogramBinning(), q, y, kind="probs", folds=np.zeros(3, dtype=int))


def test_cross_validated_folds_give_cross_validate_fold_by_fold():
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(300, 3)) * 2
    labels = rng.integers(0, 3, 300)
    whole = cross_validate(AffineCalibrator(), logits, labels, kind="logits", n_folds=4, seed=1)
    pieces = np.full_like(whole, np.nan)
    for test, calibrated in cross_validated_folds(AffineCalibrator(), logits, labels, kind="logits", n_folds=4, seed=1):
        assert np.isnan(pieces[test]).all()  # every sample in exactly one fold
        pieces[test] = calibrated
    assert np.array_equal(pieces, whole)


def test_overwrite_validates_in_place_with_the_same_numbers():
    from calib.validation import as_logprobs

    rng = np.random.default_rng(4)
    probs = rng.dirichlet(np.ones(4), size=200)
    for kind, scores in (("probs", probs), ("logprobs", np.log(probs)), ("logits", np.log(probs) + 3.0)):
        expected = as_logprobs(scores, kind)
        own = scores.copy()
        assert np.array_equal(as_logprobs(own, kind, overwrite=True), expected)
        assert np.array_equal(own, expected)  # computed in the caller's memory
