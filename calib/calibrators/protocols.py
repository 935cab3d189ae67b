"""How a calibrator is trained and applied: train-on-test, cross-validation, held-out.

Source: Ferrer & Ramos (2024), Sec. 2.5.3 and Sec. 3.2 (tt = trained on the test data itself; xv = K-fold
cross-validation on the test data, each fold calibrated by a model trained on the other folds)
and App. E (with bootstrap resamples, folds are grouped by original sample id so duplicated
samples never sit on both sides of a split). Folds are stratified by label, shuffled and seeded.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import GroupKFold, KFold, StratifiedGroupKFold, StratifiedKFold

from calib.calibrators.base import Calibrator
from calib.validation import CalibInputError, as_class_indices, check_inputs, check_positive_int

PROTOCOLS = ("tt", "xv")


def train_on_test(calibrator: Calibrator, scores, labels, *, kind: str) -> np.ndarray:
    """tt: fit on (scores, labels) and return the calibrated log-posteriors of the same scores."""
    logp, y = check_inputs(scores, labels, kind)
    return clone(calibrator).fit(logp, y, kind="logprobs").predict_log_proba(logp, kind="logprobs")


def held_out(calibrator: Calibrator, train_scores, train_labels, test_scores, *, kind: str) -> np.ndarray:
    """Fit on a separate training set; return calibrated log-posteriors of ``test_scores``."""
    model = clone(calibrator).fit(train_scores, train_labels, kind=kind)
    return model.predict_log_proba(test_scores, kind=kind)


def fold_ids(labels, *, n_folds: int, seed: int, groups=None, stratified: bool = True) -> np.ndarray:
    """Fold index of every sample: shuffled, stratified by label, grouped if ``groups``.

    ``seed`` is an int or a ``numpy.random.RandomState`` whose stream the shuffle continues.
    """
    y = as_class_indices(labels)
    n_folds = check_positive_int(n_folds, "n_folds", minimum=2)
    if groups is not None:
        groups = np.asarray(groups)
        if groups.shape != y.shape:
            raise CalibInputError(f"groups needs one id per sample, shape {y.shape}; got {groups.shape}")
        if np.unique(groups).size < n_folds:
            raise CalibInputError(f"groups has fewer distinct ids than n_folds={n_folds}")
    elif y.size < n_folds:
        raise CalibInputError(f"labels has {y.size} samples; cross-validation needs at least n_folds={n_folds}")
    if groups is not None and stratified and _single_label_groups(y, groups):
        # Each group holds one label (e.g. bootstrap duplicates of one sample): stratify the distinct
        # groups and let every copy follow its group. Same guarantee as StratifiedGroupKFold, much faster.
        _, first, inverse = np.unique(groups, return_index=True, return_inverse=True)
        return fold_ids(y[first], n_folds=n_folds, seed=seed)[inverse.ravel()]
    if stratified and groups is None and np.unique(y, return_counts=True)[1].max() < n_folds:
        raise CalibInputError(
            f"stratified cross-validation with n_folds={n_folds} needs a class with at least {n_folds} samples; "
            f"the largest class of these {y.size} labels has fewer. Use fewer folds or stratified=False."
        )
    if stratified:
        splitter = (StratifiedGroupKFold if groups is not None else StratifiedKFold)(
            n_splits=n_folds, shuffle=True, random_state=seed
        )
    else:
        splitter = (GroupKFold if groups is not None else KFold)(n_splits=n_folds, shuffle=True, random_state=seed)
    ids = np.empty(y.size, dtype=np.int64)
    with warnings.catch_warnings():  # a class smaller than n_folds is simply absent from some folds
        warnings.filterwarnings("ignore", message="The least populated class", category=UserWarning)
        for fold, (_, test) in enumerate(splitter.split(np.zeros(y.size), y, groups)):
            ids[test] = fold
    return ids


def _single_label_groups(labels: np.ndarray, groups: np.ndarray) -> bool:
    order = np.lexsort((labels, groups))
    g, lab = groups[order], labels[order]
    same_group = g[1:] == g[:-1]
    return bool(np.all(lab[1:][same_group] == lab[:-1][same_group]))


def cross_validate(
    calibrator: Calibrator,
    scores,
    labels,
    *,
    kind: str,
    n_folds: int = 5,
    seed: int = 0,
    groups=None,
    stratified: bool = True,
    folds=None,
) -> np.ndarray:
    """xv: calibrate each fold with a model trained on the other folds; return all calibrated log-posteriors.

    ``folds`` (one fold id per sample) overrides the seeded split, e.g. to replay a paper's folds.
    """
    out = None
    for test, calibrated in cross_validated_folds(
        calibrator,
        scores,
        labels,
        kind=kind,
        n_folds=n_folds,
        seed=seed,
        groups=groups,
        stratified=stratified,
        folds=folds,
    ):
        if out is None:
            out = np.empty((test.size, calibrated.shape[1]))
        out[test] = calibrated
    return out


def cross_validated_folds(
    calibrator: Calibrator,
    scores,
    labels,
    *,
    kind: str,
    n_folds: int = 5,
    seed: int = 0,
    groups=None,
    stratified: bool = True,
    folds=None,
    overwrite: bool = False,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """:func:`cross_validate` fold by fold: yields (the fold's boolean mask over the samples, their calibrated
    log-posteriors), so that a caller who needs only per-sample values of the predictions never holds
    all of them. Options as for :func:`cross_validate`; ``overwrite``: ``scores`` is a float64 array the
    caller no longer needs, validated in its own memory. Each fold's training and test rows are fresh
    copies that the model validates and works on in place.
    """
    logp, y = check_inputs(scores, labels, kind, overwrite=overwrite)
    if folds is None:
        folds = fold_ids(y, n_folds=n_folds, seed=seed, groups=groups, stratified=stratified)
    else:
        folds = np.asarray(folds)
        if folds.shape != y.shape:
            raise CalibInputError(f"folds needs one fold id per sample, shape {y.shape}; got {folds.shape}")
    for fold in np.unique(folds):
        test = folds == fold
        train = ~test
        model = clone(calibrator).fit(logp[train], y[train], kind="logprobs", overwrite=True)
        del train
        yield test, model.predict_log_proba(logp[test], kind="logprobs", overwrite=True)


def calibrate(
    calibrator: Calibrator,
    scores,
    labels,
    *,
    kind: str,
    protocol: str,
    n_folds: int = 5,
    seed: int = 0,
    groups=None,
    folds=None,
) -> np.ndarray:
    """Calibrated log-posteriors of ``scores`` under ``protocol`` ("tt" or "xv"; xv options as in cross_validate)."""
    if protocol == "tt":
        return train_on_test(calibrator, scores, labels, kind=kind)
    if protocol == "xv":
        return cross_validate(
            calibrator,
            scores,
            labels,
            kind=kind,
            n_folds=n_folds,
            seed=seed,
            groups=groups,
            folds=folds,
        )
    raise CalibInputError(f"protocol must be one of {PROTOCOLS} (held-out: use held_out()); got {protocol!r}")
