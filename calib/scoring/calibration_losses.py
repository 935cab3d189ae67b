"""Calibration loss and relative calibration loss (RCL).

Source: Ferrer & Ramos (2024), eqs. 30-33: CalLoss = EPSR_raw - EPSR_cal, both empirical
averages over the same data, and RCL = (EPSR_raw - EPSR_cal) / EPSR_raw, the fraction of the EPSR a
post-hoc calibration stage removes (the paper prints 100 x RCL). The calibrated posteriors come from
any calibrator under any protocol (:mod:`calib.calibrators.protocols`).
"""

from __future__ import annotations

import numpy as np

from calib.calibrators.base import Calibrator
from calib.calibrators.protocols import calibrate
from calib.scoring.scores import brier, cross_entropy
from calib.validation import CalibInputError, Choice, as_sample_weights, check, check_inputs

EPSRS = ("ce", "brier")


def epsr(logp: np.ndarray, labels: np.ndarray, metric: str, sample_weight=None) -> float:
    """Unnormalized EPSR of validated log-posteriors: ``ce`` (eq. 8) or ``brier`` (eq. 9, 1/K scaling); a
    weighted mean with ``sample_weight`` (as :func:`calib.scoring.scores.cross_entropy` and ``brier`` take it).

    Examples
    --------
    >>> logp = np.log([[0.8, 0.2], [0.3, 0.7]])
    >>> round(epsr(logp, np.array([0, 0]), "brier", sample_weight=[1, 3]), 4)
    0.3775
    """
    if check(metric, Choice(EPSRS), "metric") == "ce":
        return cross_entropy(logp, labels, kind="logprobs", sample_weight=sample_weight)
    return brier(logp, labels, kind="logprobs", scaling="mean", sample_weight=sample_weight)


def calibration_loss_from_posteriors(
    raw, calibrated, labels, *, kind: str, metric: str, relative: bool = True, sample_weight=None
) -> float:
    """CalLoss (eq. 30), or RCL (eq. 33, as a fraction) when ``relative``, from two sets of posteriors.

    A zero probability on a true label makes a cross-entropy infinite: CalLoss is then ``inf`` (raw
    infinite) or ``-inf`` (calibrated infinite), RCL is ``-inf`` for an infinite calibrated EPSR, and
    both are undefined (an error) when the raw EPSR is infinite and the calibrated one too (CalLoss) or
    at all (RCL). With ``sample_weight`` (one weight >= 0 per sample) both EPSRs are weighted means,
    sum_i w_i s_i / sum_i w_i; the calibrated posteriors are taken as given (a calibrator fitted with the
    weights is the caller's part).

    Examples
    --------
    >>> raw, cal = [[0.9, 0.1], [0.8, 0.2], [0.3, 0.7]], [[0.7, 0.3], [0.6, 0.4], [0.4, 0.6]]
    >>> round(calibration_loss_from_posteriors(raw, cal, [0, 1, 1], kind="probs", metric="brier"), 4)
    0.1757
    >>> round(calibration_loss_from_posteriors(raw, cal, [0, 1, 1], kind="probs", metric="brier",
    ...                                        sample_weight=[0, 2, 1]), 4)
    0.3577
    """
    raw_logp, y = check_inputs(raw, labels, kind, "raw")
    cal_logp, _ = check_inputs(calibrated, labels, kind, "calibrated")
    w = as_sample_weights(sample_weight, y.size)
    r, c = epsr(raw_logp, y, metric, w), epsr(cal_logp, y, metric, w)
    if np.isinf(r) and r == c:
        raise CalibInputError(
            f"raw and calibrated scores both have an infinite {metric} (a zero probability on a true label): "
            "the calibration loss is undefined; use metric='brier' or scores without exact zeros"
        )
    if not relative:
        return r - c
    if not np.isfinite(r) or r <= 0:
        raise CalibInputError(
            f"the raw scores' {metric} is {r}: relative calibration loss needs a finite, positive EPSR"
        )
    return (r - c) / r


def calibration_loss(
    scores,
    labels,
    *,
    kind: str,
    metric: str,
    calibrator: Calibrator,
    protocol: str,
    relative: bool = True,
    n_folds: int = 5,
    seed: int = 0,
    groups=None,
    folds=None,
    sample_weight=None,
) -> float:
    """Relative calibration loss (RCL), or calibration loss: how much of a scoring rule a calibrator removes.

    The scores are calibrated with ``calibrator`` under ``protocol`` (:func:`calibrate`), and the
    expected proper scoring rule EPSR (``metric``: cross-entropy, eq. 8, or Brier score with the 1/K
    scaling, eq. 9) of the raw and of the calibrated posteriors is averaged over the same data.
    CalLoss = EPSR_raw - EPSR_cal and RCL = (EPSR_raw - EPSR_cal) / EPSR_raw, the fraction of the
    EPSR that post-hoc calibration removes (the paper prints 100 x RCL). A negative value means the
    calibrator made things worse, as it may out of sample (``"xv"``). Cost: one fit of the calibrator
    (tt) or ``n_folds`` fits (xv), plus O(N K).

    With a zero probability on a true label the cross-entropy is infinite: CalLoss is then ``inf``
    (raw infinite) or ``-inf`` (calibrated infinite) and RCL is ``-inf`` when the calibrated EPSR is
    infinite; when the raw EPSR is infinite, RCL is undefined, and so is CalLoss if the calibrated one
    is infinite too (both raise).

    Source: Ferrer & Ramos (2024), eqs. 30-33 (CalLoss, eq. 30; RCL, eq. 33), with the protocols of
    Sec. 2.5.3 and Sec. 3.2.

    Parameters
    ----------
    scores, labels, kind
        Raw posteriors (N, K), K >= 2, of kind "probs", "logprobs" or "logits", and the true classes
        in [0, K), as :func:`calib.validation.check_inputs` takes them.
    metric : {"ce", "brier"}
        The EPSR: cross-entropy or Brier score (1/K scaling).
    calibrator : Calibrator
        An unfitted calibrator, e.g. ``TemperatureScaling()``; it is cloned, never fitted itself.
    protocol : {"tt", "xv"}
        "tt" fits on the scores themselves and calibrates them (train on test); "xv" calibrates each
        of ``n_folds`` folds with a model fitted on the other folds.
    relative : bool, default True
        Return RCL (a fraction); False returns CalLoss (in the EPSR's units).
    n_folds, seed, groups, folds
        The folds of "xv", ignored by "tt": how many (default 5, at least 2), the seed of their shuffled,
        label-stratified split (default 0), and optionally a group id per sample (a group never straddles
        two folds) or a fold id per sample that overrides the split, as for
        :func:`calib.calibrators.protocols.calibrate`.
    sample_weight : array_like of shape (N,), optional
        A weight >= 0 per sample: the calibrator is fitted with the weights and both EPSRs are weighted means
        (:func:`calibration_loss_from_posteriors`); integer weights give the loss of the repeated samples under
        "tt" (under "xv" the folds are drawn on the samples, not on their copies).

    Returns
    -------
    float
        RCL, or CalLoss with ``relative=False``.

    Raises
    ------
    CalibInputError
        For invalid inputs, an unknown ``metric`` or ``protocol``, a raw EPSR that is not finite and
        positive (RCL), or raw and calibrated cross-entropies that are both infinite (CalLoss).

    Examples
    --------
    >>> from calib.calibrators import TemperatureScaling
    >>> scores = [[0.9, 0.1], [0.2, 0.8], [0.95, 0.05], [0.1, 0.9], [0.7, 0.3], [0.4, 0.6], [0.85, 0.15], [0.3, 0.7]]
    >>> labels = [0, 1, 1, 1, 0, 0, 0, 1]
    >>> model = TemperatureScaling()
    >>> round(calibration_loss(scores, labels, kind="probs", metric="ce", calibrator=model, protocol="tt"), 4)
    0.0778
    """
    logp, y = check_inputs(scores, labels, kind)
    cal = calibrate(calibrator, logp, y, kind="logprobs", protocol=protocol, n_folds=n_folds, seed=seed, groups=groups,
                    folds=folds, sample_weight=sample_weight)  # fmt: skip
    return calibration_loss_from_posteriors(logp, cal, y, kind="logprobs", metric=metric, relative=relative,
                                            sample_weight=sample_weight)  # fmt: skip
