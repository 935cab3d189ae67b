"""CORP for K classes, through the binary problems the project's lenses induce.

CORP is defined for a binary event. For K classes two lenses give binary problems: the top label
(the confidence max_k q_k against the argmax being right; Guo et al. (2017)'s maximum lens) and one
class against the rest (q_k against y = k, for each k: marginal calibration, Vaicenavicius et al.
(2019), eq. 3). The multiclass Brier score sum_k (q_k - 1{y = k})^2 is the sum of the K one-vs-rest
binary Brier scores, so the sum of their CORP decompositions is an exact decomposition of it (its
recalibrated vector need not sum to 1). The multiclass log score -log q_y has no such split: its
one-vs-rest parts are binary log scores of other events, and are reported as such, never as it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calib.calibration_errors.binned import probs_and_labels, target_columns
from calib.calibration_errors.corp import CorpDecomposition, corp_decomposition
from calib.validation import Choice, as_logprobs, as_sample_weights, check, top_label

LENSES = ("top_label", "one_vs_rest")


@dataclass(frozen=True)
class LensDecomposition:
    """The CORP decomposition of each binary problem of a lens (``parts``, by name) and their sum
    (``total``; for the top label, its one part)."""

    lens: str
    parts: dict[str, CorpDecomposition]
    total: CorpDecomposition


def lens_forecasts(probs: np.ndarray, labels: np.ndarray, lens: str) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The binary problems of ``lens`` on validated (N, K) probabilities: name -> (confidence, outcome)."""
    if check(lens, Choice(LENSES), "lens") == "top_label":
        confidence, correct = target_columns(probs, labels, "top_label")
        return {"top label": (confidence[:, 0], correct[:, 0])}
    scores, outcomes = target_columns(probs, labels, "classwise")
    return {f"class {k}": (scores[:, k], outcomes[:, k]) for k in range(probs.shape[1])}


def top_log_odds(logp: np.ndarray, prediction: np.ndarray) -> np.ndarray:
    """log(q_c / (1 - q_c)) of the class c = ``prediction[i]`` of each row i of log-posteriors ``logp``: its
    log-probability less the log of the other classes' total, summed as logs (exact where q_c rounds to 1;
    +inf where every other class has probability 0)."""
    from scipy.special import logsumexp

    rows = np.arange(prediction.size)
    others = logp.copy()
    others[rows, prediction] = -np.inf
    with np.errstate(divide="ignore"):
        return logp[rows, prediction] - logsumexp(others, axis=1)


def lens_log_odds(logp: np.ndarray, lens: str) -> dict[str, np.ndarray]:
    """The log-odds of the forecasts of each binary problem of ``lens`` (:func:`lens_forecasts`), from
    log-posteriors: log q - log(1 - q), with log(1 - q) = log1p(-q) where q <= 1/2 and, for each row's top
    class (the only one that may exceed 1/2), the log of the other classes' total."""
    _, prediction = top_label(np.exp(logp))
    top = top_log_odds(logp, prediction)
    if lens == "top_label":
        return {"top label": top}
    with np.errstate(divide="ignore"):
        odds = logp - np.log1p(-np.exp(logp))
    odds[np.arange(prediction.size), prediction] = top
    return {f"class {k}": odds[:, k] for k in range(logp.shape[1])}


def lens_decomposition(
    scores, labels, *, kind: str, lens: str = "one_vs_rest", score="brier", sample_weight=None
) -> LensDecomposition:
    """CORP decompositions S = MCB - DSC + UNC of the binary problems of a lens on K-class posteriors.

    With ``lens="one_vs_rest"`` and the Brier score, ``total`` decomposes the multiclass Brier score
    sum_k (q_k - 1{y = k})^2 exactly (a sum of K binary decompositions); with the log score its parts
    are the binary log scores of "class k or not", whose sum is not the multiclass log score. The log
    scores are computed from the log-posteriors (:func:`calib.calibration_errors.corp.corp_decomposition`'s
    ``log_odds``): finite wherever the log-posteriors are, even for logits so large that a probability
    rounds to 0.

    Source: Dimitriadis et al. (2021) (the binary decomposition); Vaicenavicius et al. (2019),
    eq. 3 (one class against the rest); Guo et al. (2017) (the top label).

    Parameters
    ----------
    scores : array_like of shape (N, K)
        Posteriors of ``kind``.
    labels : array_like of shape (N,)
        Integer labels in [0, K).
    kind : {"probs", "logprobs", "logits"}
        What ``scores`` holds.
    lens : {"one_vs_rest", "top_label"}, default "one_vs_rest"
        The binary problems.
    score : {"brier", "log"} or callable, default "brier"
        The proper score of each binary problem.
    sample_weight : array_like of shape (N,), optional
        A weight >= 0 per sample, for every binary problem: weighted decompositions
        (:func:`calib.calibration_errors.corp.corp_decomposition`). None weighs every sample 1.

    Returns
    -------
    LensDecomposition
        ``parts`` by problem ("class k" or "top label") and their ``total``.

    Raises
    ------
    CalibInputError
        For invalid posteriors, labels or score, or an unknown ``lens``.

    Examples
    --------
    >>> probs = np.array([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8], [0.3, 0.4, 0.3]])
    >>> d = lens_decomposition(probs, [0, 1, 2, 0], kind="probs")
    >>> round(d.total.score, 4), round(d.total.mcb - d.total.dsc + d.total.unc, 4)
    (0.33, 0.33)
    """
    probs, y = probs_and_labels(scores, labels, kind)
    w = as_sample_weights(sample_weight, y.size)
    forecasts = lens_forecasts(probs, y, lens)
    odds = lens_log_odds(as_logprobs(scores, kind), lens) if isinstance(score, str) and score == "log" else {}
    parts = {
        name: corp_decomposition(x, o, score=score, log_odds=odds.get(name), sample_weight=w)
        for name, (x, o) in forecasts.items()
    }
    terms = np.array([[d.score, d.mcb, d.dsc, d.unc] for d in parts.values()]).sum(axis=0)
    return LensDecomposition(lens, parts, CorpDecomposition(*map(float, terms)))
