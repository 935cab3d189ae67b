"""How a calibrator is trained and applied: train-on-test, cross-validation, held-out.

Source: Ferrer & Ramos (2024), Sec. 2.5.3 and Sec. 3.2 (tt = trained on the test data itself; xv = K-fold
cross-validation on the test data, each fold calibrated by a model trained on the other folds)
and App. E (with bootstrap resamples, folds are grouped by original sample id so duplicated
samples never sit on both sides of a split). Folds are stratified by label, shuffled and seeded.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from calib.calibrators.base import Calibrator
from calib.calibrators.folds import fold_ids
from calib.validation import CalibInputError, check_inputs

PROTOCOLS = ("tt", "xv")


def train_on_test(calibrator: Calibrator, scores, labels, *, kind: str) -> np.ndarray:
    """tt: fit on (scores, labels) and return the calibrated log-posteriors of the same scores."""
    logp, y = check_inputs(scores, labels, kind)
    return calibrator.clone().fit(logp, y, kind="logprobs").predict_log_proba(logp, kind="logprobs")


def held_out(calibrator: Calibrator, train_scores, train_labels, test_scores, *, kind: str) -> np.ndarray:
    """Fit on a separate training set; return calibrated log-posteriors of ``test_scores``."""
    model = calibrator.clone().fit(train_scores, train_labels, kind=kind)
    return model.predict_log_proba(test_scores, kind=kind)


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
        model = calibrator.clone().fit(logp[train], y[train], kind="logprobs", overwrite=True)
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
