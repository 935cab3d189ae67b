"""Score divergences and their expectation against a fixed posterior (Ferrer & Ramos (2024), Sec. 2.5.1, App. B).

A score divergence d(s, q) = E_{h~s}[C*(h, q) - C*(h, s)] (eq. 26): the log loss induces the
Kullback-Leibler divergence sum_i s_i log(s_i/q_i), the Brier loss (classic, unscaled) the squared
Euclidean distance sum_i (s_i - q_i)^2. The L1 distances (full vector, and the positive-class
component alone, which is what the binary ECE measures) are not score divergences: their expected
value against a constant q0 is not minimised at q0 = E[s] (eq. 29), which App. B / Fig. 7 shows.
"""

from __future__ import annotations

import numpy as np

from calib.validation import CalibInputError, as_logprobs

DIVERGENCES = ("kl", "sq_euclidean", "l1", "l1_positive")


def score_divergence(reference, scores, *, kind: str, divergence: str) -> np.ndarray:
    """Per-sample divergence d(s_t, q_t) between ``reference`` s and ``scores`` q (both of ``kind``)."""
    logs = as_logprobs(reference, kind, "reference")
    logq = as_logprobs(scores, kind, "scores")
    if logs.shape != logq.shape:
        raise CalibInputError(f"reference has shape {logs.shape} but scores have {logq.shape}; they must match")
    s, q = np.exp(logs), np.exp(logq)
    if divergence == "kl":
        with np.errstate(invalid="ignore"):
            return np.where(s > 0, s * (logs - logq), 0.0).sum(axis=1)
    if divergence == "sq_euclidean":
        return ((s - q) ** 2).sum(axis=1)
    if divergence == "l1":
        return np.abs(s - q).sum(axis=1)
    if divergence == "l1_positive":
        return np.abs(s[:, -1] - q[:, -1])
    raise CalibInputError(f"divergence must be one of {DIVERGENCES}; got {divergence!r}")


def expected_divergence_to_constant(reference, q0_first, *, kind: str, divergence: str) -> np.ndarray:
    """E_t[d(s_t, q0)] for binary s and each constant q0 = [q0_first, 1 - q0_first] (App. B, Fig. 7).

    Closed forms in the moments of s (KL, squared Euclidean) and sorted prefix sums (L1), so
    the cost is O((N + G) log N) for N samples and G grid points, with no N x G matrix.
    """
    logs = as_logprobs(reference, kind, "reference")
    if logs.shape[1] != 2:
        raise CalibInputError(
            f"expected_divergence_to_constant is binary: reference needs 2 columns, got {logs.shape[1]}"
        )
    grid = np.asarray(q0_first, dtype=np.float64)
    if grid.ndim != 1 or grid.size == 0 or not np.all((grid > 0) & (grid < 1)):
        raise CalibInputError("q0_first must be a 1-D grid strictly inside (0, 1)")
    s = np.exp(logs)
    q0 = np.column_stack([grid, 1.0 - grid])
    if divergence == "kl":
        with np.errstate(invalid="ignore"):
            neg_entropy = np.where(s > 0, s * logs, 0.0).sum(axis=1).mean()
        return neg_entropy - np.log(q0) @ s.mean(axis=0)
    if divergence == "sq_euclidean":
        return ((s**2).mean(axis=0)[None, :] - 2 * q0 * s.mean(axis=0)[None, :] + q0**2).sum(axis=1)
    if divergence in ("l1", "l1_positive"):
        mean_abs = _mean_abs_deviation(s[:, 0], grid)
        return 2.0 * mean_abs if divergence == "l1" else mean_abs
    raise CalibInputError(f"divergence must be one of {DIVERGENCES}; got {divergence!r}")


def _mean_abs_deviation(values: np.ndarray, points: np.ndarray) -> np.ndarray:
    """mean_t |values_t - c| for every c in ``points``, via sorting and prefix sums."""
    v = np.sort(values)
    prefix = np.concatenate([[0.0], np.cumsum(v)])
    below = np.searchsorted(v, points, side="right")
    n = v.size
    return (points * below - prefix[below] + (prefix[n] - prefix[below]) - points * (n - below)) / n
