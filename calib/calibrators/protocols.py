"""How a calibrator is trained and applied: train-on-test, cross-validation, held-out.

Source: Ferrer & Ramos (2024), Sec. 2.5.3 and Sec. 3.2 (tt = trained on the test data itself; xv = K-fold
cross-validation on the test data, each fold calibrated by a model trained on the other folds)
and App. E (with bootstrap resamples, folds are grouped by original sample id so duplicated
samples never sit on both sides of a split). Folds are stratified by label, shuffled and seeded.

Sample weights (``sample_weight``, issue 56) reach every fit: the model fitted on all rows, each fold's model
on its training rows' weights, and the held-out model on the training set's. The folds are drawn on the rows,
whatever their weights; what a row's weight does to a held-out loss is the caller's to apply
(:func:`calib.calibrators.selection.compare_calibrators` weighs it).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from calib.calibrators.base import Calibrator
from calib.calibrators.folds import fold_ids
from calib.validation import CalibInputError, as_finite_logits, as_labels, as_sample_weights, check_inputs

PROTOCOLS = ("tt", "xv")


def model_input(calibrator: Calibrator, scores, labels, kind: str, *, overwrite: bool = False):
    """(x, labels, x_kind): the scores as ``calibrator`` fits them, once validated for every fold: logits as given
    (``x_kind`` "logits") for a calibrator that maps the logits themselves (:meth:`Calibrator.fits_logits`),
    else log-posteriors ("logprobs")."""
    if kind == "logits" and calibrator.fits_logits():
        x = as_finite_logits(scores, overwrite=overwrite)
        return x, as_labels(labels, x.shape[0], x.shape[1]), "logits"
    logp, y = check_inputs(scores, labels, kind, overwrite=overwrite)
    return logp, y, "logprobs"


def train_on_test(calibrator: Calibrator, scores, labels, *, kind: str, sample_weight=None) -> np.ndarray:
    """tt: fit on (scores, labels), weighted by ``sample_weight`` if given, and return the calibrated
    log-posteriors of the same scores."""
    x, y, x_kind = model_input(calibrator, scores, labels, kind)
    model = calibrator.clone().fit(x, y, kind=x_kind, sample_weight=sample_weight)
    return model.predict_log_proba(x, kind=x_kind)


def held_out(
    calibrator: Calibrator, train_scores, train_labels, test_scores, *, kind: str, sample_weight=None
) -> np.ndarray:
    """Fit on a separate training set (its rows weighted by ``sample_weight`` if given); return calibrated
    log-posteriors of ``test_scores``."""
    model = calibrator.clone().fit(train_scores, train_labels, kind=kind, sample_weight=sample_weight)
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
    sample_weight=None,
) -> np.ndarray:
    """xv: calibrate each fold with a model trained on the other folds; return all calibrated log-posteriors.

    ``folds`` (one fold id per sample) overrides the seeded split, e.g. to replay a paper's folds;
    ``sample_weight`` weighs each fold's fit (the weights of its training rows).
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
        sample_weight=sample_weight,
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
    sample_weight=None,
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """:func:`cross_validate` fold by fold: yields (the fold's boolean mask over the samples, their calibrated
    log-posteriors), so that a caller who needs only per-sample values of the predictions never holds
    all of them. Options as for :func:`cross_validate`; ``overwrite``: ``scores`` is a float64 array the
    caller no longer needs, validated in its own memory. Each fold's training and test rows are fresh
    copies that the model validates and works on in place. ``sample_weight`` (one weight >= 0 per sample,
    checked once): each fold's model is fitted on its training rows' weights.
    """
    x, y, x_kind = model_input(calibrator, scores, labels, kind, overwrite=overwrite)
    w = as_sample_weights(sample_weight, y.size)
    if folds is None:
        folds = fold_ids(y, n_folds=n_folds, seed=seed, groups=groups, stratified=stratified)
    else:
        folds = np.asarray(folds)
        if folds.shape != y.shape:
            raise CalibInputError(f"folds needs one fold id per sample, shape {y.shape}; got {folds.shape}")
    for fold in np.unique(folds):
        test = folds == fold
        train = ~test
        train_weight = None if w is None else w[train]
        model = calibrator.clone().fit(x[train], y[train], kind=x_kind, sample_weight=train_weight, overwrite=True)
        del train
        yield test, model.predict_log_proba(x[test], kind=x_kind, overwrite=True)


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
    sample_weight=None,
) -> np.ndarray:
    """Calibrated log-posteriors of ``scores`` under a protocol: train on test (tt) or cross-validation (xv).

    tt: a calibrator g is fitted on all (s_t, y_t) and s~_t = g(s_t) for the same samples. xv: the
    samples are split into ``n_folds`` folds (stratified by label, shuffled and seeded), and each
    sample t gets s~_t = g_{-f(t)}(s_t), where f(t) is the sample's fold and g_{-f} is fitted on the
    other folds. With bootstrap resamples, ``groups`` keeps the copies of a sample in one fold, so
    duplicated samples never sit on both sides of a split. Cost: one fit of the calibrator (tt) or
    ``n_folds`` fits on (n_folds - 1) / n_folds of the data each (xv), plus the predictions.

    Source: Ferrer & Ramos (2024), Sec. 2.5.3 and Sec. 3.2 (tt and xv), App. E (folds grouped by
    original sample id).

    Parameters
    ----------
    calibrator : Calibrator
        An unfitted calibrator, e.g. ``TemperatureScaling()``; it is cloned, never fitted itself.
    scores, labels, kind
        Posteriors (N, K), K >= 2, of kind "probs", "logprobs" or "logits", and the true classes
        in [0, K), as :func:`calib.validation.check_inputs` takes them.
    protocol : {"tt", "xv"}
        Train on the test data itself, or K-fold cross-validation on it. For a separate training
        set use :func:`calib.calibrators.protocols.held_out`.
    n_folds : int, default 5
        Folds of "xv" (at least 2); ignored by "tt".
    seed : int, default 0
        Seed of the "xv" shuffle.
    groups : array_like of shape (N,), optional
        For "xv": a group id per sample (e.g. the original sample ids of a bootstrap resample); a
        group never straddles two folds.
    folds : array_like of shape (N,), optional
        For "xv": a fold id per sample, overriding the seeded split (e.g. to replay a paper's folds).
    sample_weight : array_like of shape (N,), optional
        One weight >= 0 per sample (:func:`calib.validation.as_sample_weights`): every fit minimizes the
        weighted mean of its loss over its training rows (tt: all rows; xv: each fold's training rows).

    Returns
    -------
    ndarray of shape (N, K)
        The calibrated log-posteriors, in the order of ``scores``.

    Raises
    ------
    CalibInputError
        For invalid inputs, an unknown ``protocol``, or invalid fold options (too few samples or
        groups for ``n_folds``, ``folds`` of the wrong shape).

    Examples
    --------
    >>> import numpy as np
    >>> from calib.calibrators import TemperatureScaling
    >>> scores = [[0.9, 0.1], [0.2, 0.8], [0.95, 0.05], [0.1, 0.9], [0.7, 0.3], [0.4, 0.6], [0.85, 0.15], [0.3, 0.7]]
    >>> labels = [0, 1, 1, 1, 0, 0, 0, 1]
    >>> tt = calibrate(TemperatureScaling(), scores, labels, kind="probs", protocol="tt")
    >>> tt.shape, round(float(np.exp(tt[0, 0])), 4)
    ((8, 2), 0.7614)
    >>> xv = calibrate(TemperatureScaling(), scores, labels, kind="probs", protocol="xv", n_folds=2)
    >>> round(float(np.exp(xv[0, 0])), 4)
    0.9753
    """
    if protocol == "tt":
        return train_on_test(calibrator, scores, labels, kind=kind, sample_weight=sample_weight)
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
            sample_weight=sample_weight,
        )
    raise CalibInputError(f"protocol must be one of {PROTOCOLS} (held-out: use held_out()); got {protocol!r}")
