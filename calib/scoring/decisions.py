"""Cost matrices, Bayes decisions and expected cost (Bayes risk).

Source: Ferrer & Ramos (2024): eq. 1 (Bayes decision), eq. 7 (expected cost), Sec. 2.3.1
(normalization by the cost of the best constant decision), Sec. 3.2-3.3 (the 0-1, 0-1 with
abstention and imbalanced matrices). A cost matrix has one row per true class (K) and one column
per decision (D >= 2, e.g. D = K + 1 with an abstain column); ``costs[i, j]`` is c_ij.
"""

from __future__ import annotations

import numpy as np

from calib._internal.rows import row_min
from calib.validation import (
    CalibInputError,
    as_labels,
    as_logprobs,
    as_priors,
    check_inputs,
    check_positive_int,
    class_counts,
)


def zero_one_costs(n_classes: int, abstention: float | None = None) -> np.ndarray:
    """The 0-1 cost matrix, optionally with an abstain decision of a fixed cost.

    c_ij = 1 for i != j and c_ii = 0: one row per true class i, one column per decision j (decide
    class j). With ``abstention`` a (K + 1)-th column is added whose cost is ``abstention`` whatever
    the class, c_{i,K+1} = abstention. O(K^2) time.

    Source: Ferrer & Ramos (2024), Sec. 3.2-3.3 (the 0-1 costs and the 0-1 costs with abstention).

    Parameters
    ----------
    n_classes : int
        K, the number of classes, at least 2.
    abstention : float, optional
        Cost of abstaining, finite and >= 0. Default None: no abstain column.

    Returns
    -------
    ndarray of shape (K, K) or (K, K + 1)
        The float cost matrix, ``costs[i, j]`` = c_ij.

    Raises
    ------
    CalibInputError
        For ``n_classes`` not an integer >= 2, or a negative or non-finite ``abstention``.

    Examples
    --------
    >>> zero_one_costs(2).tolist()
    [[0.0, 1.0], [1.0, 0.0]]
    >>> zero_one_costs(2, abstention=0.3).tolist()
    [[0.0, 1.0, 0.3], [1.0, 0.0, 0.3]]
    """
    k = check_positive_int(n_classes, "n_classes", minimum=2)
    costs = 1.0 - np.eye(k)
    if abstention is None:
        return costs
    if not np.isfinite(abstention) or abstention < 0:
        raise CalibInputError(f"abstention must be a finite cost >= 0; got {abstention!r}")
    return np.hstack([costs, np.full((k, 1), float(abstention))])


def imbalanced_costs(n_classes: int, costly_class: int = -1, cost: float = 10.0) -> np.ndarray:
    """0-1 costs except that errors on ``costly_class`` (a row) cost ``cost`` (Ferrer & Ramos (2024),
    Sec. 3.2: c_21 = 10)."""
    costs = zero_one_costs(n_classes)
    if not -n_classes <= costly_class < n_classes:
        raise CalibInputError(f"costly_class must index one of the {n_classes} classes; got {costly_class}")
    row = costly_class % n_classes
    costs[row] *= cost
    return costs


def check_costs(costs, n_classes: int) -> np.ndarray:
    """Return ``costs`` as a float (K, D) matrix, D >= 2, finite and non-negative."""
    c = np.asarray(costs, dtype=np.float64)
    if c.ndim != 2 or c.shape[0] != n_classes or c.shape[1] < 2:
        raise CalibInputError(f"costs must have shape (K={n_classes}, D>=2), one row per true class; got {c.shape}")
    if not np.all(np.isfinite(c)) or np.any(c < 0):
        raise CalibInputError("costs must be finite and non-negative")
    return c


# Expected costs are sums of K products: rounding moves them by ~K eps max(c). Decisions whose
# expected costs differ by less than this fraction of max(c) are ties (rounding cannot order them).
_TIE_TOLERANCE = 1e-12


def bayes_decisions(scores, costs, *, kind: str) -> np.ndarray:
    """Bayes decisions: for each sample, the decision of least expected cost under its posteriors.

    d_B(x) = argmin_j sum_i c_ij q_i(x), with c_ij the cost of decision j when the true class is i.
    Decisions whose expected costs differ by less than 1e-12 max(c) (rounding) are ties, which go to
    the lowest j. O(N K D) time.

    Source: Ferrer & Ramos (2024), eq. 1.

    Parameters
    ----------
    scores : array_like of shape (N, K)
        Posteriors of N samples over K >= 2 classes, of kind ``kind``.
    costs : array_like of shape (K, D)
        Cost matrix, one row per true class and one column per decision (D >= 2, e.g. D = K + 1
        with an abstain column, see :func:`zero_one_costs`); finite and non-negative.
    kind : {"probs", "logprobs", "logits"}
        What ``scores`` hold; nothing is guessed from the values.

    Returns
    -------
    ndarray of shape (N,)
        The integer decision index in [0, D) of each sample.

    Raises
    ------
    CalibInputError
        For invalid ``scores`` or ``kind``, or ``costs`` that is not a finite, non-negative (K, D)
        matrix with D >= 2.

    Examples
    --------
    >>> scores = [[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.1, 0.9]]
    >>> bayes_decisions(scores, zero_one_costs(2, abstention=0.3), kind="probs").tolist()
    [0, 1, 2, 1]
    """
    logp = as_logprobs(scores, kind)
    return bayes_choices(np.exp(logp), check_costs(costs, logp.shape[1]))


def bayes_choices(probs: np.ndarray, c: np.ndarray) -> np.ndarray:
    """argmin_j of the expected costs ``probs @ c`` per row; ties (within ``_TIE_TOLERANCE`` max(c)) go to
    the lowest j."""
    risks = probs @ c
    slack = _TIE_TOLERANCE * float(np.max(c, initial=0.0))
    return np.argmax(risks <= (row_min(risks) + slack)[:, None], axis=1)


def expected_cost(labels, decisions, costs, *, priors=None) -> float:
    """Expected cost EC = sum_i sum_j c_ij P_i R_ij (Ferrer & Ramos (2024), eq. 7).

    R_ij is the fraction of class-i samples given decision j; P defaults to the empirical priors.
    """
    c = np.asarray(costs, dtype=np.float64)
    if c.ndim != 2:
        raise CalibInputError(f"costs must be a (K, D) matrix; got shape {c.shape}")
    k, d = c.shape
    c = check_costs(c, k)
    dec = np.asarray(decisions)
    if dec.ndim != 1:
        raise CalibInputError(f"decisions must be a 1-D vector of decision indices; got shape {dec.shape}")
    dec = as_labels(dec, dec.shape[0], d, "decisions")
    y = as_labels(labels, dec.shape[0], k)
    if y.size == 0:
        raise CalibInputError("labels is empty: at least one sample is needed")
    counts = class_counts(y, k, need_all=priors is not None)
    p = counts / y.size if priors is None else as_priors(priors, k)
    confusion = np.zeros((k, d))
    np.add.at(confusion, (y, dec), 1.0)
    rates = confusion / np.maximum(counts, 1)[:, None]
    return float(np.sum(p[:, None] * c * rates))


def naive_cost(costs, priors) -> float:
    """Cost of the best constant decision, min_j sum_i P_i c_ij (Ferrer & Ramos (2024), Sec. 2.3.1)."""
    c = np.asarray(costs, dtype=np.float64)
    return float(np.min(np.asarray(priors, dtype=np.float64) @ c))


def normalized_risk(scores, labels, costs, *, kind: str, priors=None) -> float:
    """Normalized Bayes risk (NRisk): the expected cost of Bayes decisions over that of the best constant one.

    NRisk = EC / min_j sum_i P_i c_ij, where EC = sum_i sum_j c_ij P_i R_ij is the expected cost of
    the Bayes decisions d_B = argmin_j sum_i c_ij q_i made from the scores, R_ij is the fraction of
    class-i samples given decision j, and the denominator is the cost of the best decision taken
    without looking at the data: below 1 the scores' decisions do better than it, above 1 worse.
    O(N K D) time.

    Source: Ferrer & Ramos (2024), eq. 1 (Bayes decisions), eq. 7 (expected cost), Sec. 2.3.1
    (normalization by the best constant decision).

    Parameters
    ----------
    scores, labels, kind
        Posteriors (N, K), K >= 2, of kind "probs", "logprobs" or "logits", and the true classes
        in [0, K), as :func:`calib.validation.check_inputs` takes them.
    costs : array_like of shape (K, D)
        Cost matrix, one row per true class and one column per decision (D >= 2); finite and
        non-negative, e.g. :func:`zero_one_costs`.
    priors : array_like of shape (K,), optional
        Class priors P (finite, strictly positive, summing to 1) for EC and the constant decision's
        cost; every class must then occur in ``labels``. The decisions themselves are those of the
        scores as given. Default None: the empirical class frequencies.

    Returns
    -------
    float
        NRisk, >= 0.

    Raises
    ------
    CalibInputError
        For invalid inputs, and when the best constant decision costs 0 (labels of a single class,
        for instance), which leaves NRisk undefined.

    Examples
    --------
    >>> scores = [[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.1, 0.9]]
    >>> round(normalized_risk(scores, [0, 1, 1, 1], zero_one_costs(2), kind="probs"), 4)
    1.0
    >>> round(normalized_risk(scores, [0, 1, 1, 1], zero_one_costs(2, abstention=0.3), kind="probs"), 4)
    0.3
    """
    logp, y = check_inputs(scores, labels, kind)
    c = check_costs(costs, logp.shape[1])
    decisions = bayes_choices(np.exp(logp), c)
    p = class_counts(y, c.shape[0]) / y.size if priors is None else as_priors(priors, c.shape[0])
    reference = naive_cost(c, p)
    if reference == 0:
        raise CalibInputError(
            "labels hold a single class (or priors put all mass on one class): the best constant decision "
            "has zero cost, so NRisk is undefined"
        )
    return expected_cost(y, decisions, c, priors=priors) / reference
