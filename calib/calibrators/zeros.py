"""Exact zero probabilities in the calibrators that work on log-posteriors.

Random forests, k-NN, naive counts and probabilities rounded to a few decimals give posteriors of
exactly 0, whose logarithm is -inf. A calibrator that maps log q (temperature, DP / affine, vector,
matrix and Dirichlet scaling, Platt on log-odds, beta) cannot use -inf, and replacing it by a tiny
floor such as log 1e-304 makes every sample with a zero on its true class cost hundreds of nats: one
such sample outweighs thousands of others and the fit flattens every posterior to lower it.

Treatment: when the training scores hold an exact zero, every score is smoothed at the scores' own
resolution before the logarithm is taken,

    q'_k = (q_k + eps) / (1 + K eps),   eps = the smallest positive probability in the training scores,

the Laplace correction ("rule of succession") of a vote fraction: a probability that is v of T votes
(trees, neighbours, or 10^d for d rounded decimals), whose resolution is eps = 1 / T, becomes
(v + 1) / (T + K). eps is a fitted attribute (``zero_smoothing_``), applied unchanged to every score
the calibrator later transforms, and saved with it. Training scores without zeros give eps = 0: no
smoothing, and a zero met only at prediction is given the finite log-posteriors of :func:`unseen_zero_logs`,
with a warning (:func:`warn_of_unseen_zeros`): a per-class weight can turn that value into certainty for
another class.

This is the one treatment of -inf: every calibrator that maps log-posteriors declares it (the class
attribute ``log_scale``, :mod:`calib.calibrators.base`), and the base class applies it before the
calibrator sees the scores, so the fits and maps themselves take every finite log-posterior as it is,
at any scale (no fixed floor clips -6000 to -700).

When the smoothed zeros still drive the fit, the user is told: ``zero_loss_share_`` is the share of
the calibrated training cross-entropy that comes from samples whose true class had probability 0,
and a fit where it reaches one half warns (:class:`calib.validation.CalibInputWarning`).

Source: Zadrozny & Elkan (2001), Sect. 2 (the Laplace correction and m-estimation of the class
frequencies in a decision tree's leaves, so that no estimate is 0 or 1).
"""

from __future__ import annotations

import warnings

import numpy as np

from calib.validation import CalibInputWarning

# The zeros' share of the calibrated training loss at which a fit warns that they dominate it.
DOMINANT_SHARE = 0.5


def zero_smoothing(logp: np.ndarray) -> float:
    """eps of the module docstring: the smallest positive probability of ``logp`` (validated
    log-posteriors) when it holds an exact zero (-inf), else 0.

    Examples
    --------
    >>> with np.errstate(divide="ignore"):  # log 0 = -inf
    ...     logp = np.log(np.array([[0.0, 1.0], [0.3, 0.7]]))
    >>> zero_smoothing(logp), zero_smoothing(np.log(np.array([[0.2, 0.8]])))
    (0.3, 0.0)
    """
    zero = np.isneginf(logp)
    if not zero.any():
        return 0.0
    return float(np.exp(np.min(logp, where=~zero, initial=0.0)))


def smooth_zeros(logp: np.ndarray, eps: float) -> np.ndarray:
    """log q' of the module docstring, computed in ``logp``'s own memory (an array the caller owns);
    ``eps`` 0 returns ``logp`` unchanged.

    Examples
    --------
    >>> with np.errstate(divide="ignore"):  # log 0 = -inf
    ...     logp = np.log(np.array([[0.0, 1.0]]))
    >>> np.exp(smooth_zeros(logp, 0.1)).round(6).tolist()  # (0 + 0.1) / 1.2, (1 + 0.1) / 1.2
    [[0.083333, 0.916667]]
    """
    if eps > 0:
        np.logaddexp(logp, np.log(eps), out=logp)
        logp -= np.log1p(logp.shape[1] * eps)
    return logp


# An exact zero met only at prediction counts as at most exp(ZERO_LOG_CAP) (~1e-304, still a normal float64).
ZERO_LOG_CAP = -700.0


def unseen_zero_logs(logp: np.ndarray) -> np.ndarray:
    """Replace each -inf of the log-posteriors ``logp`` (in its own memory) by a finite value below
    every finite log-posterior of its row: min(ZERO_LOG_CAP, 2 m), m the row's smallest finite
    log-posterior. The zero then counts as min(exp(-700), q_min^2), q_min the row's smallest positive
    posterior: never above a positive posterior of its row (order kept), exp(-700) in rows whose
    posteriors are all above exp(-350), and on logits c z (any scale c) of order c as those are.
    Rows without -inf are unchanged (bit for bit).

    Examples
    --------
    >>> with np.errstate(divide="ignore"):  # log 0 = -inf
    ...     logp = np.log(np.array([[0.0, 1.0], [0.0, 0.5], [0.2, 0.8]]))
    >>> logp[:, 0] = [-np.inf, -np.inf, -5000.0]
    >>> unseen_zero_logs(logp)[:, 0].tolist()
    [-700.0, -700.0, -5000.0]
    >>> unseen_zero_logs(np.array([[-np.inf, -1000.0, -1e-300]]))[0].tolist()
    [-2000.0, -1000.0, -1e-300]
    """
    zero = np.isneginf(logp)
    if not zero.any():
        return logp
    rows = np.flatnonzero(zero.any(axis=1))
    block = logp[rows]
    lowest = np.min(block, axis=1, where=~zero[rows], initial=0.0)
    with np.errstate(over="ignore"):  # 2 m below -1.8e308: the most negative float
        value = np.maximum(np.minimum(ZERO_LOG_CAP, 2.0 * lowest), -np.finfo(np.float64).max)
    logp[rows] = np.where(zero[rows], value[:, None], block)
    return logp


def warn_of_unseen_zeros(logp: np.ndarray, eps: float, calibrator: str) -> None:
    """Warn (:class:`calib.validation.CalibInputWarning`) when the log-posteriors ``logp`` to calibrate hold
    exact zeros (-inf) and the calibrator's training scores held none (``eps`` 0: nothing smooths them).

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught, np.errstate(divide="ignore"):
    ...     warnings.simplefilter("always")
    ...     warn_of_unseen_zeros(np.log(np.array([[0.0, 1.0], [0.5, 0.5]])), 0.0, "VectorScaling")
    >>> str(caught[0].message).split(":")[0]
    'the scores to calibrate hold 1 probability of exactly 0 and VectorScaling was fitted on scores without any'
    """
    if eps > 0:
        return
    zeros = int(np.count_nonzero(np.isneginf(logp)))
    if zeros:
        warnings.warn(
            f"the scores to calibrate hold {zeros} probabilit{'y' if zeros == 1 else 'ies'} of exactly 0 and "
            f"{calibrator} was fitted on scores without any: nothing smooths them, each counts as at most exp(-700) "
            "(below every positive posterior of its row), and a "
            "per-class weight can turn that into certainty for another class, so the rows that hold them are "
            "unreliable. Fit the calibrator on scores of the same classifier that hold its zeros (they are then "
            "smoothed, the same way, wherever the calibrator is applied), or use one that works on the "
            "probabilities themselves (isotonic, histogram)",
            CalibInputWarning,
            stacklevel=4,
        )


def zero_loss_share(
    calibrated: np.ndarray, labels: np.ndarray, zero_on_true: np.ndarray, sample_weight: np.ndarray | None = None
) -> float:
    """The share of the cross-entropy of the calibrated training log-posteriors ``calibrated`` that
    comes from the samples ``zero_on_true`` (those whose true class had probability 0); with
    ``sample_weight``, of the weighted cross-entropy (each sample's loss times its weight).

    Examples
    --------
    >>> calibrated = np.log(np.array([[0.5, 0.5], [0.9, 0.1]]))
    >>> round(zero_loss_share(calibrated, np.array([0, 1]), np.array([False, True])), 4)
    0.7686
    """
    losses = -calibrated[np.arange(labels.size), labels]
    if sample_weight is not None:
        losses = losses * sample_weight
    total = float(losses.sum())
    return float(losses[zero_on_true].sum() / total) if total > 0 else 0.0


def warn_if_dominant(share: float, n_zero: int, n_samples: int, eps: float, calibrator: str) -> None:
    """A :class:`calib.validation.CalibInputWarning` when the zeros make up at least DOMINANT_SHARE of
    the calibrated training loss."""
    if share >= DOMINANT_SHARE:
        warnings.warn(
            f"{calibrator}: {n_zero} of {n_samples} training samples give their true class probability 0, and "
            f"even smoothed (Laplace, eps = {eps:.3g}) they make {share:.0%} of the calibrated training loss: "
            "the fit is driven by them. Scores with exact zeros lose information a calibrator cannot restore; "
            "a calibrator on the probabilities themselves (isotonic, histogram) may suit them better",
            CalibInputWarning,
            stacklevel=4,
        )
