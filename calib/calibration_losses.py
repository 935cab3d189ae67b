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
from calib.scores import brier, cross_entropy
from calib.validation import CalibInputError, check_inputs

EPSRS = ("ce", "brier")


def epsr(logp: np.ndarray, labels: np.ndarray, metric: str) -> float:
    """Unnormalized EPSR of validated log-posteriors: ``ce`` (eq. 8) or ``brier`` (eq. 9, 1/K scaling)."""
    if metric == "ce":
        return cross_entropy(logp, labels, kind="logprobs")
    if metric == "brier":
        return brier(logp, labels, kind="logprobs", scaling="mean")
    raise CalibInputError(f"metric must be one of {EPSRS}; got {metric!r}")


def calibration_loss_from_posteriors(
    raw, calibrated, labels, *, kind: str, metric: str, relative: bool = True
) -> float:
    """CalLoss (eq. 30), or RCL (eq. 33, as a fraction) when ``relative``, from two sets of posteriors.

    A zero probability on a true label makes a cross-entropy infinite: CalLoss is then ``inf`` (raw
    infinite) or ``-inf`` (calibrated infinite), RCL is ``-inf`` for an infinite calibrated EPSR, and
    both are undefined (an error) when the raw EPSR is infinite and the calibrated one too (CalLoss) or
    at all (RCL).
    """
    raw_logp, y = check_inputs(raw, labels, kind, "raw")
    cal_logp, _ = check_inputs(calibrated, labels, kind, "calibrated")
    r, c = epsr(raw_logp, y, metric), epsr(cal_logp, y, metric)
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
) -> float:
    """Calibrate ``scores`` with ``calibrator`` under ``protocol``, then return RCL (or CalLoss)."""
    logp, y = check_inputs(scores, labels, kind)
    cal = calibrate(
        calibrator, logp, y, kind="logprobs", protocol=protocol, n_folds=n_folds, seed=seed, groups=groups, folds=folds
    )
    return calibration_loss_from_posteriors(logp, cal, y, kind="logprobs", metric=metric, relative=relative)
