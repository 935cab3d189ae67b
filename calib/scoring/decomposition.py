"""Additive decompositions of a proper scoring rule: calibration-refinement and epistemic-irreducible.

Sources: survey Silva Filho et al. (2023), Sect. 3.1 (the two decompositions and the Table 2 worked
example); Kull & Flach (2015), "Novel decompositions of proper scoring rules for classification"
(the divergence of each loss, and the exactness of the decompositions on a sample treated as a
uniform distribution over its instances); Bröcker & Smith (2007) for calibration-refinement.

Notation: S the scores, Y the one-hot label, C = E[Y | S] the calibrated probabilities and
Q = E[Y | X] the true posteriors. For a loss with divergence d (Kull & Flach (2015)):

    E[d(S, Y)] = E[d(S, C)] + E[d(C, Y)]   (calibration loss + refinement loss)
    E[d(S, Y)] = E[d(S, Q)] + E[d(Q, Y)]   (epistemic loss + irreducible loss)

Losses (survey eqs. 1-2): ``"brier"`` is sum_j (s_j - y_j)^2, the survey's range-[0, 2] form with
divergence d(s, c) = sum_j (s_j - c_j)^2; ``"log"`` is -ln s_y (natural log) with divergence
d(s, c) = KL(c || s) = sum_j c_j ln(c_j / s_j), taking 0 ln 0 = 0. The second argument of d plays the
part of the truth. Nothing is clipped: a zero score on a class that the reference gives mass makes
the log-loss terms infinite, since clipping would break the exact identity.

Sample weights (``sample_weight=``, one weight >= 0 per sample) make each E[.] the weighted mean
sum_i w_i d_i / sum_i w_i, the sample a weighted distribution over its instances (so the identities
stay exact on it), and the estimated C the weighted class frequencies of each group; samples of weight
0 are dropped, and integer weights give the decompositions of the samples repeated w_i times.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calib.validation import CalibInputError, as_logprobs, as_sample_weights, check_inputs

LOSSES = ("brier", "log")


@dataclass(frozen=True)
class CalibrationRefinement:
    """Mean loss and its calibration and refinement parts (survey Sect. 3.1).

    ``residual`` is total - (calibration + refinement) (0 when the log-loss total and the parts are
    both infinite: the identity holds in the extended reals). It is 0 up to rounding when C is the
    within-group class frequency (the default); a user-supplied C that is not E[Y | S] on the
    sample (the label frequency among instances sharing both S and C) leaves the cross term here.
    """

    total: float
    calibration: float
    refinement: float
    residual: float


@dataclass(frozen=True)
class EpistemicIrreducible:
    """Mean loss and its epistemic and irreducible (aleatoric) parts (survey Sect. 3.1).

    ``residual`` is total - (epistemic + irreducible) (0 when both are infinite): the sample cross term,
    0 in expectation and 0 on the sample when Q equals the label frequencies among instances sharing
    both S and Q (as in Table 2).
    """

    total: float
    epistemic: float
    irreducible: float
    residual: float


def _check_loss(loss: str) -> str:
    if loss not in LOSSES:
        raise CalibInputError(f"loss must be one of {LOSSES} ('brier' = sum of squares, 'log' = ln); got {loss!r}")
    return loss


def _reference_logprobs(reference, reference_kind: str, shape: tuple[int, int], name: str) -> np.ndarray:
    logr = as_logprobs(reference, reference_kind, name)
    if logr.shape != shape:
        raise CalibInputError(f"{name} has shape {logr.shape} but scores have {shape}; pass one row per sample")
    return logr


def _loss_terms(logp: np.ndarray, logc: np.ndarray, labels: np.ndarray, loss: str):
    """Per-sample d(S, Y), d(S, C) and d(C, Y) for log-posteriors S and C, int labels (Kull & Flach (2015)).

    C comes in logarithms so that probabilities below the float range (e.g. from logits of +-1e4)
    keep their exact log-losses.
    """
    rows = np.arange(labels.size)
    c = np.exp(logc)
    if loss == "brier":
        s = np.exp(logp)
        s_minus_y = s.copy()
        s_minus_y[rows, labels] -= 1.0
        c_minus_y = c.copy()
        c_minus_y[rows, labels] -= 1.0
        return (
            np.einsum("ij,ij->i", s_minus_y, s_minus_y),
            np.einsum("ij,ij->i", s - c, s - c),
            np.einsum("ij,ij->i", c_minus_y, c_minus_y),
        )
    with np.errstate(invalid="ignore"):
        # KL(c || s): cells with c = 0 contribute 0; c > 0 with s = 0 gives +inf.
        terms = np.where(np.isneginf(logp), np.inf, c * (logc - logp))
        kl = np.where(np.isneginf(logc), 0.0, terms).sum(axis=1)
    return -logp[rows, labels], kl, -logc[rows, labels]


def _summarise(
    total: np.ndarray, first: np.ndarray, second: np.ndarray, w: np.ndarray | None = None
) -> tuple[float, float, float, float]:
    """Means (weighted by ``w`` when given) and residual; the residual is 0 when the total and the parts
    are the same infinity."""
    if w is None:
        t, a, b = float(total.mean()), float(first.mean()), float(second.mean())
    else:
        # A sum of products, not a dot product: unit weights then add as the unweighted mean does, bit for bit.
        t, a, b = (float(np.sum(w * terms) / w.sum()) for terms in (total, first, second))
    return t, a, b, 0.0 if t == a + b else t - (a + b)


def _weighed(logp: np.ndarray, reference: np.ndarray | None, labels: np.ndarray, w: np.ndarray | None):
    """The samples of positive weight (all of them without weights): a sample of weight 0 is no instance of
    the weighted sample, and its terms, infinite or not, are not in the means."""
    if w is None:
        return logp, reference, labels, None
    kept = w > 0
    return logp[kept], None if reference is None else reference[kept], labels[kept], w[kept]


def group_frequencies(logp: np.ndarray, labels: np.ndarray, sample_weight: np.ndarray | None = None) -> np.ndarray:
    """Empirical E[Y | S]: class frequencies among samples with identical score rows, one row per sample.

    Rows are grouped by exact equality of the validated log-posteriors (survey Sect. 3.1, Table 2:
    instances 5-10 share S = (0.6, 0.2, 0.2) and get C = (1/6, 1/2, 1/3)). With validated positive
    ``sample_weight``, the frequencies are the weighted ones, each sample counting its weight.
    """
    n_classes = logp.shape[1]
    _, inverse = np.unique(logp, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    n_groups = int(inverse.max()) + 1
    cells = inverse * n_classes + labels
    counts = np.bincount(cells, weights=sample_weight, minlength=n_groups * n_classes).reshape(n_groups, n_classes)
    freq = counts / counts.sum(axis=1, keepdims=True)
    return freq[inverse]


def calibration_refinement(
    scores,
    labels,
    *,
    kind: str,
    loss: str = "brier",
    calibrated=None,
    reference_kind: str = "probs",
    sample_weight=None,
) -> CalibrationRefinement:
    """Calibration-refinement decomposition of the mean Brier score or log-loss.

    Source: survey Silva Filho et al. (2023), Sect. 3.1 (E[d(S,Y)] = E[d(S,C)] + E[d(C,Y)],
    Table 2); Kull & Flach (2015) for the divergences and exactness on samples; Bröcker & Smith (2007).

    ``calibrated`` is C = E[Y | S], shape (N, K), given in ``reference_kind`` (probabilities by
    default). When omitted, C is estimated as the class frequencies among samples sharing exactly the
    same score vector; the identity total = calibration + refinement then holds exactly on the
    sample, and the calibration term is 0 when the scores already equal those frequencies.
    ``loss`` is ``"brier"`` (sum_j (s_j - y_j)^2, range [0, 2]) or ``"log"`` (natural log).
    ``sample_weight`` (N,), one weight >= 0 per sample, weighs the means and the estimated C (see the
    module's text); None weighs every sample 1.

    Examples
    --------
    >>> s = [[0.6, 0.4], [0.6, 0.4], [0.2, 0.8]]
    >>> d = calibration_refinement(s, [0, 1, 1], kind="probs", sample_weight=[3, 1, 1])
    >>> round(d.total, 4), round(d.calibration, 4), round(d.refinement, 4)  # C = (3/4, 1/4) for the first two
    (0.352, 0.052, 0.3)
    """
    loss = _check_loss(loss)
    logp, y = check_inputs(scores, labels, kind)
    w = as_sample_weights(sample_weight, y.size)
    logc = None if calibrated is None else _reference_logprobs(calibrated, reference_kind, logp.shape, "calibrated")
    logp, logc, y, w = _weighed(logp, logc, y, w)
    if logc is None:
        with np.errstate(divide="ignore"):
            logc = np.log(group_frequencies(logp, y, w))
    total, cal, ref = _loss_terms(logp, logc, y, loss)
    return CalibrationRefinement(*_summarise(total, cal, ref, w))


def epistemic_irreducible(
    scores,
    labels,
    true_posteriors,
    *,
    kind: str,
    loss: str = "brier",
    reference_kind: str = "probs",
    sample_weight=None,
) -> EpistemicIrreducible:
    """Epistemic-irreducible decomposition of the mean Brier score or log-loss, with Q known.

    Source: survey Silva Filho et al. (2023), Sect. 3.1 (E[d(S,Y)] = E[d(S,Q)] + E[d(Q,Y)], after
    Senge et al. (2014); Table 2); Kull & Flach (2015) for the divergences.

    ``true_posteriors`` is Q = E[Y | X], shape (N, K), in ``reference_kind`` (probabilities by
    default). The identity is exact in expectation; on a sample it is exact when Q equals the label
    frequencies among instances sharing both S and Q, and ``residual`` reports the sample cross term.
    ``sample_weight`` (N,), one weight >= 0 per sample, makes the means weighted (see the module's text);
    None weighs every sample 1.

    Examples
    --------
    >>> s, q = [[0.6, 0.4], [0.6, 0.4], [0.2, 0.8]], [[0.7, 0.3], [0.7, 0.3], [0.1, 0.9]]
    >>> d = epistemic_irreducible(s, [0, 1, 1], q, kind="probs", sample_weight=[3, 1, 1])
    >>> round(d.total, 4), round(d.epistemic, 4), round(d.irreducible, 4), round(d.residual, 4)
    (0.352, 0.02, 0.308, 0.024)
    """
    loss = _check_loss(loss)
    logp, y = check_inputs(scores, labels, kind)
    w = as_sample_weights(sample_weight, y.size)
    logq = _reference_logprobs(true_posteriors, reference_kind, logp.shape, "true_posteriors")
    logp, logq, y, w = _weighed(logp, logq, y, w)
    total, epi, irr = _loss_terms(logp, logq, y, loss)
    return EpistemicIrreducible(*_summarise(total, epi, irr, w))
