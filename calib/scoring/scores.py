"""Expected proper scoring rules: cross-entropy and Brier score, raw and normalized.

Sources: Ferrer & Ramos (2024), "Evaluating posterior probabilities": eq. 8 (CE),
eq. 9 (Brier score, 1/K scaling), eqs. 36-37 (prior-weighted forms), Sec. 2.3.2-2.3.3
(normalization by the best naive system, which outputs the priors), Sec. 3.4 / eq. 35
(semi-empirical cross-entropy).

All logarithms are natural. Priors default to the empirical class frequencies of ``labels``;
passing ``priors`` re-weights each sample of class h by P_h / N_h (eqs. 36-37).

Sample weights (``sample_weight=``, one weight >= 0 per sample) make every mean a weighted mean,
sum_t w_t v_t / sum_t w_t, and every class count N_h the summed weight of the class's samples, so the
empirical priors are the weighted class frequencies and with ``priors`` a sample weighs w_t P_h / N_h:
each class's mean loss is its weighted mean. Integer weights give the scores of the samples repeated w_t
times (weight 0 drops a sample).
"""

from __future__ import annotations

import numpy as np

from calib.validation import (
    CalibInputError,
    Choice,
    as_logprobs,
    as_priors,
    as_sample_weights,
    check,
    check_inputs,
    class_counts,
)

BRIER_SCALINGS = ("mean", "sum")


def _sample_weights(labels: np.ndarray, n_classes: int, priors) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample weights w_t = N P_{h_t} / N_{h_t} and the priors they realise (eq. 36)."""
    counts = class_counts(labels, n_classes)
    n = labels.shape[0]
    if priors is None:
        return np.ones(n), counts / n
    priors = as_priors(priors, n_classes)
    class_counts(labels, n_classes, need_all=True)
    return (n * priors / counts)[labels], priors


def _weighted_factors(labels: np.ndarray, n_classes: int, priors, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample factors f_t = w_t W P_{h_t} / W_{h_t} (w_t without ``priors``), whose mean over the total
    weight W, sum_t f_t v_t / W, is the weighted score, and the priors they realise (W_h the weight of class
    h: the weighted eq. 36)."""
    class_weight = np.bincount(labels, weights=w, minlength=n_classes)
    total = class_weight.sum()
    if priors is None:
        return w, class_weight / total
    priors = as_priors(priors, n_classes)
    missing = np.flatnonzero(class_weight == 0).tolist()
    if missing:
        raise CalibInputError(
            f"labels has no samples of positive weight of classes {missing}; priors need every class present, "
            "or pass priors=None"
        )
    return w * (total * priors / class_weight)[labels], priors


def _weighted_mean(factors: np.ndarray, values: np.ndarray, total: float) -> float:
    """sum_t f_t v_t / W over the samples of positive factor (weight 0 drops a sample, also an infinite loss)."""
    kept = factors > 0
    return float(np.sum(factors[kept] * values[kept]) / total)


def _entropy(p: np.ndarray) -> float:
    nz = p[p > 0]
    return float(-(nz * np.log(nz)).sum())


def cross_entropy(scores, labels, *, kind: str, priors=None, normalize: bool = False, sample_weight=None) -> float:
    """Empirical cross-entropy (log loss) of posteriors against the true labels.

    CE = -(1/N) sum_t log q_{h_t}(x_t), with natural logarithms, where q_{h_t}(x_t) is the posterior
    that sample t gives its true class h_t. With ``priors`` a sample of class h weighs P_h / N_h
    instead of 1/N: CE = -sum_t (P_{h_t} / N_{h_t}) log q_{h_t}(x_t). With ``normalize`` the value is
    NCE, CE divided by the entropy of the priors, which is the CE of the best naive system (the one
    that always outputs the priors). O(N K) time. With ``sample_weight``, CE = -sum_t w_t log q_{h_t}(x_t)
    / sum_t w_t (scikit-learn's ``log_loss(..., sample_weight=w)``), N_h the summed weight of class h.

    Source: Ferrer & Ramos (2024), eq. 8 (CE), eq. 36 (prior-weighted CE), Sec. 2.3.2 (NCE).

    Parameters
    ----------
    scores, labels, kind
        Posteriors (N, K), K >= 2, of kind "probs", "logprobs" or "logits", and the true classes
        in [0, K), as :func:`calib.validation.check_inputs` takes them.
    priors : array_like of shape (K,), optional
        Class priors P (finite, strictly positive, summing to 1) to weight the samples by; every
        class must then occur in ``labels``. Default None: the empirical class frequencies, so every
        sample weighs 1/N.
    normalize : bool, default False
        Return NCE instead of CE.
    sample_weight : array_like of shape (N,), optional
        A weight >= 0 per sample (:func:`calib.validation.as_sample_weights`); the weighted CE of the
        module's text. None weighs every sample 1.

    Returns
    -------
    float
        CE (or NCE) in nats; ``inf`` when a sample (of positive weight) gives its true class probability 0.

    Raises
    ------
    CalibInputError
        For invalid ``scores``, ``labels``, ``kind`` or ``priors``, and for NCE when the labels hold a
        single class (the naive CE is 0, so NCE is undefined).

    Examples
    --------
    >>> scores = [[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.1, 0.9]]
    >>> round(cross_entropy(scores, [0, 1, 1, 1], kind="probs"), 4)
    0.4004
    >>> round(cross_entropy(scores, [0, 1, 1, 1], kind="probs", normalize=True), 4)
    0.712
    >>> round(cross_entropy(scores, [0, 1, 1, 1], kind="probs", sample_weight=[2, 1, 1, 0]), 4)
    0.4298
    """
    logp, y = check_inputs(scores, labels, kind)
    sw = as_sample_weights(sample_weight, y.size)
    losses = -logp[np.arange(y.size), y]
    if sw is None:
        w, p = _sample_weights(y, logp.shape[1], priors)
        ce = float(np.mean(w * losses)) if np.all(np.isfinite(losses)) else float("inf")
    else:
        w, p = _weighted_factors(y, logp.shape[1], priors, sw)
        ce = _weighted_mean(w, losses, sw.sum())
    if not normalize:
        return ce
    naive = _entropy(p)
    if naive == 0:
        raise CalibInputError("labels hold a single class: the naive cross-entropy is 0, so NCE is undefined")
    return ce / naive


def brier_losses(logp: np.ndarray, labels: np.ndarray, scaling: str) -> np.ndarray:
    """Per-sample Brier loss of validated log-posteriors (eq. 9 summand; ``scaling`` as in :func:`brier`)."""
    check(scaling, Choice(BRIER_SCALINGS), "scaling")
    q = np.exp(logp)
    q[np.arange(labels.size), labels] -= 1.0
    total = np.einsum("ij,ij->i", q, q)
    return total / logp.shape[1] if scaling == "mean" else total


def naive_brier(priors: np.ndarray, scaling: str) -> float:
    """Brier score of the system that always outputs ``priors``: sum_i P_i(1 - P_i) [/K] (Sec. 2.3.3)."""
    value = float(np.sum(priors * (1.0 - priors)))
    return value / priors.size if scaling == "mean" else value


def brier(
    scores, labels, *, kind: str, scaling: str, priors=None, normalize: bool = False, sample_weight=None
) -> float:
    """Empirical Brier score: the mean squared distance between posteriors and one-hot labels.

    BS = (1/N) sum_t (1/K) sum_i (q_i(x_t) - I(h_t = H_i))^2 with ``scaling="mean"`` (the paper's
    form, with the 1/K), or without the 1/K with ``scaling="sum"`` (the classic sum of Brier (1950)).
    With ``priors`` a sample of class h weighs P_h / N_h instead of 1/N. With ``normalize`` the value
    is NBS, BS divided by the Brier score of the best naive system (the one that always outputs the
    priors), sum_i P_i (1 - P_i), divided by K too for ``scaling="mean"``; NBS does not depend on the
    scaling. O(N K) time. With ``sample_weight`` the mean over samples is sum_t w_t (...) / sum_t w_t
    (for K = 2, scikit-learn's ``brier_score_loss(y, p, sample_weight=w)`` is the one with
    ``scaling="mean"``), N_h the summed weight of class h.

    Source: Ferrer & Ramos (2024), eq. 9 (Brier score, 1/K scaling), eq. 37 (prior-weighted form),
    Sec. 2.3.3 (NBS); Brier (1950) for the sum without 1/K.

    Parameters
    ----------
    scores, labels, kind
        Posteriors (N, K), K >= 2, of kind "probs", "logprobs" or "logits", and the true classes
        in [0, K), as :func:`calib.validation.check_inputs` takes them.
    scaling : {"mean", "sum"}
        "mean" divides the squared distance by K (Ferrer & Ramos); "sum" does not (Brier). Required:
        the two conventions differ by a factor K.
    priors : array_like of shape (K,), optional
        Class priors P (finite, strictly positive, summing to 1) to weight the samples by; every
        class must then occur in ``labels``. Default None: the empirical class frequencies.
    normalize : bool, default False
        Return NBS instead of BS.
    sample_weight : array_like of shape (N,), optional
        A weight >= 0 per sample (:func:`calib.validation.as_sample_weights`); None weighs every sample 1.

    Returns
    -------
    float
        BS (or NBS); BS lies in [0, 2] for "sum" and [0, 2/K] for "mean".

    Raises
    ------
    CalibInputError
        For invalid ``scores``, ``labels``, ``kind``, ``priors`` or ``scaling``, and for NBS when the
        labels hold a single class (the naive Brier score is 0, so NBS is undefined).

    Examples
    --------
    >>> scores = [[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.1, 0.9]]
    >>> round(brier(scores, [0, 1, 1, 1], kind="probs", scaling="mean"), 4)
    0.125
    >>> round(brier(scores, [0, 1, 1, 1], kind="probs", scaling="sum"), 4)
    0.25
    >>> round(brier(scores, [0, 1, 1, 1], kind="probs", scaling="sum", sample_weight=[2, 1, 1, 0]), 4)
    0.265
    """
    logp, y = check_inputs(scores, labels, kind)
    sw = as_sample_weights(sample_weight, y.size)
    if sw is None:
        w, p = _sample_weights(y, logp.shape[1], priors)
        bs = float(np.mean(w * brier_losses(logp, y, scaling)))
    else:
        w, p = _weighted_factors(y, logp.shape[1], priors, sw)
        bs = _weighted_mean(w, brier_losses(logp, y, scaling), sw.sum())
    if not normalize:
        return bs
    naive = naive_brier(p, scaling)
    if naive == 0:
        raise CalibInputError("labels hold a single class: the naive Brier score is 0, so NBS is undefined")
    return bs / naive


def semi_empirical_cross_entropy(
    scores, reference, *, kind: str, reference_kind: str, normalize: bool = False, sample_weight=None
) -> float:
    """Semi-empirical CE: -(1/N) sum_t sum_k s_k(x_t) log q_k(x_t) (Ferrer & Ramos (2024), Sec. 3.4, eq. 35).

    The expectation over classes is taken with the ``reference`` posteriors s (a calibration model
    or the true posteriors) instead of the labels. With ``normalize`` it is divided by the entropy
    of the mean reference posterior, the semi-empirical CE of the naive system. With ``sample_weight``
    (one weight >= 0 per sample) the mean over samples and the mean reference posterior are weighted
    means, sum_t w_t (...) / sum_t w_t.

    Examples
    --------
    >>> q, s = [[0.8, 0.2], [0.4, 0.6]], [[0.9, 0.1], [0.5, 0.5]]
    >>> round(semi_empirical_cross_entropy(q, s, kind="probs", reference_kind="probs"), 4)
    0.5377
    >>> round(semi_empirical_cross_entropy(q, s, kind="probs", reference_kind="probs", sample_weight=[1, 0]), 4)
    0.3618
    """
    logq = as_logprobs(scores, kind, "scores")
    logs = as_logprobs(reference, reference_kind, "reference")
    if logs.shape != logq.shape:
        raise CalibInputError(f"reference has shape {logs.shape} but scores have {logq.shape}; they must match")
    s = np.exp(logs)
    with np.errstate(invalid="ignore"):
        terms = np.where(s > 0, -s * logq, 0.0)
    sw = as_sample_weights(sample_weight, s.shape[0])
    if sw is None:
        value = float(terms.sum(axis=1).mean())
        mean_reference = s.mean(axis=0)
    else:
        value = _weighted_mean(sw, terms.sum(axis=1), sw.sum())
        mean_reference = (sw[:, None] * s).sum(axis=0) / sw.sum()  # unit weights: the mean's bits
    if not normalize:
        return value
    naive = _entropy(mean_reference)
    if naive == 0:
        raise CalibInputError(
            "reference puts all mass on one class: its entropy is 0, so the normalized value is undefined"
        )
    return value / naive
