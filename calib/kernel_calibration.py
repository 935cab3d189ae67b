"""Squared kernel calibration error (SKCE; Widmann, Lindsten & Zachariah 2019), in row blocks.

Source: Widmann et al. (2019), "Calibration tests in multi-class classification: a unifying
framework" (NeurIPS), the SKCE and its estimators; the paper is not among ../shared/papers, so no
equation numbers are cited here and the tests check identities and a dense reference instead.

With a matrix-valued kernel k(p, p') = kappa(p, p') I_K on the simplex (a scalar kernel times the
identity, the "white" kernel on targets), the SKCE is E[h] over independent pairs, with

    h((p, y), (p', y')) = kappa(p, p') <e_y - p, e_y' - p'>
                        = kappa(p, p') (1[y = y'] - p'_y - p_y' + <p, p'>)

and kappa(p, p') = exp(-||p - p'||_2 / nu) (Laplacian; Gaussian: exp(-||p - p'||^2 / (2 nu^2))).
Estimators over n samples: unbiased (U-statistic, mean of h over i != j), biased (V-statistic,
mean over all i, j including i = j) and the linear / block estimator (mean of the unbiased estimator
within consecutive blocks of ``block_size`` samples; block_size = 2 is the linear estimator).
For two classes, <e_y - p, e_y' - p'> = 2 (y - p_1)(y' - p'_1). A calibrated model has SKCE = 0,
and the unbiased estimator has expectation 0 then.

Memory: the sums run over blocks of rows, so no n x n matrix is ever formed (O(rows x n)).
``bandwidth="median"`` takes the median of the pairwise distances (on at most 2000 seeded samples).
"""

from __future__ import annotations

import numpy as np

from calib.validation import CalibInputError, check_inputs, check_positive_int

KERNELS = ("laplacian", "gaussian")
ESTIMATORS = ("unbiased", "biased", "block")
# Row blocks hold about this many (row, column) pairs.
_BLOCK_PAIRS = 1 << 22
_MEDIAN_SAMPLES = 2000


def _distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    sq = np.sum(a**2, axis=1)[:, None] + np.sum(b**2, axis=1)[None, :] - 2.0 * a @ b.T
    return np.sqrt(np.maximum(sq, 0.0))


def _kappa(distances: np.ndarray, bandwidth: float, kernel: str) -> np.ndarray:
    if kernel == "laplacian":
        return np.exp(-distances / bandwidth)
    return np.exp(-(distances**2) / (2.0 * bandwidth**2))


def median_bandwidth(probs: np.ndarray, seed: int = 0) -> float:
    """The median heuristic: median pairwise Euclidean distance of (at most 2000 sampled) predictions."""
    p = np.asarray(probs, dtype=np.float64)
    if p.shape[0] > _MEDIAN_SAMPLES:
        p = p[np.random.default_rng(seed).choice(p.shape[0], _MEDIAN_SAMPLES, replace=False)]
    d = _distances(p, p)[np.triu_indices(p.shape[0], k=1)]
    median = float(np.median(d)) if d.size else 0.0
    if not median > 0:
        raise CalibInputError("the median heuristic needs distinct predictions; pass a positive bandwidth instead")
    return median


def _pair_terms(p_rows, y_rows, p_cols, y_cols, bandwidth, kernel) -> np.ndarray:
    """h for every (row, column) pair: kappa * (1[y = y'] - p'_y - p_y' + <p, p'>)."""
    inner = (y_rows[:, None] == y_cols[None, :]).astype(np.float64)
    inner -= p_cols[:, y_rows].T  # p'_y
    inner -= p_rows[:, y_cols]  # p_y'
    inner += p_rows @ p_cols.T
    return _kappa(_distances(p_rows, p_cols), bandwidth, kernel) * inner


def skce(
    scores,
    labels,
    *,
    kind: str,
    estimator: str = "unbiased",
    kernel: str = "laplacian",
    bandwidth="median",
    block_size: int = 2,
) -> float:
    """The SKCE of (``scores``, ``labels``) with kernel ``kappa * I`` (see the module docstring)."""
    if estimator not in ESTIMATORS:
        raise CalibInputError(f"estimator must be one of {ESTIMATORS}; got {estimator!r}")
    if kernel not in KERNELS:
        raise CalibInputError(f"kernel must be one of {KERNELS}; got {kernel!r}")
    logp, y = check_inputs(scores, labels, kind)
    p = np.exp(logp)
    n = y.size
    if bandwidth == "median":
        bandwidth = median_bandwidth(p)
    if not isinstance(bandwidth, (int, float)) or not np.isfinite(bandwidth) or bandwidth <= 0:
        raise CalibInputError(f"bandwidth must be a positive number or 'median'; got {bandwidth!r}")
    if estimator == "block":
        size = check_positive_int(block_size, "block_size", minimum=2)
        n_blocks = n // size
        if n_blocks == 0:
            raise CalibInputError(f"the block estimator needs at least block_size = {size} samples; got {n}")
        values = [
            _u_statistic(p[b * size : (b + 1) * size], y[b * size : (b + 1) * size], bandwidth, kernel)
            for b in range(n_blocks)
        ]
        return float(np.mean(values))
    if estimator == "unbiased":
        if n < 2:
            raise CalibInputError("the unbiased estimator needs at least 2 samples")
        return _u_statistic(p, y, bandwidth, kernel)
    total = 0.0
    rows = max(1, _BLOCK_PAIRS // n)
    for start in range(0, n, rows):
        stop = min(n, start + rows)
        total += float(np.sum(_pair_terms(p[start:stop], y[start:stop], p, y, bandwidth, kernel)))
    return total / (n * n)


def _u_statistic(p: np.ndarray, y: np.ndarray, bandwidth: float, kernel: str) -> float:
    """Mean of h over ordered pairs i != j, summed in row blocks (the diagonal is removed)."""
    n = y.size
    total = 0.0
    rows = max(1, _BLOCK_PAIRS // n)
    for start in range(0, n, rows):
        stop = min(n, start + rows)
        block = _pair_terms(p[start:stop], y[start:stop], p, y, bandwidth, kernel)
        block[np.arange(stop - start), np.arange(start, stop)] = 0.0
        total += float(np.sum(block))
    return total / (n * (n - 1))


def _laplacian_pair_sum(r: np.ndarray, a: np.ndarray, bandwidth: float) -> float:
    """sum_{i, j} a_i a_j exp(-|r_i - r_j| / nu) in O(n log n): after sorting, the pairs j < i give
    exp(-r_i / nu) * cumsum(a_j exp(r_j / nu)) (r in [0, 1], so the exponentials stay finite for nu > 1/700)."""
    order = np.argsort(r, kind="stable")
    r, a = r[order] / bandwidth, a[order]
    shift = r - r.max()  # exp(shift) <= 1; the product below rescales exactly
    below = np.cumsum(a * np.exp(shift)) - a * np.exp(shift)  # sum over j < i
    return float(np.sum(a * a) + 2.0 * np.sum(a * np.exp(-shift) * below))


def mmce(scores, labels, *, kind: str, bandwidth: float = 0.4, estimator: str = "biased") -> float:
    """Maximum mean calibration error (Kumar, Sarawagi & Jain 2018, ICML), top-label, Laplacian kernel.

    MMCE^2 = (1 / n^2) sum_{i, j} (c_i - r_i)(c_j - r_j) exp(-|r_i - r_j| / nu), with r the confidence
    and c = 1 if the top label is right; MMCE = sqrt(MMCE^2). ``estimator="unbiased"`` drops the i = j
    terms and divides by n (n - 1), and returns the (possibly negative) squared value. The paper's
    bandwidth is nu = 0.4. The pair sum is exact in O(n log n) (sorted cumulative sums), not O(n^2).
    """
    if estimator not in ("biased", "unbiased"):
        raise CalibInputError(f"estimator must be 'biased' or 'unbiased'; got {estimator!r}")
    if not isinstance(bandwidth, (int, float)) or not 1.0 / 700.0 < bandwidth < np.inf:
        raise CalibInputError(f"bandwidth must be a number above 1/700; got {bandwidth!r}")
    logp, y = check_inputs(scores, labels, kind)
    r = np.exp(logp.max(axis=1))
    a = (logp.argmax(axis=1) == y) - r
    n = y.size
    total = _laplacian_pair_sum(r, a, float(bandwidth))
    if estimator == "biased":
        return float(np.sqrt(max(total, 0.0) / n**2))
    if n < 2:
        raise CalibInputError("the unbiased estimator needs at least 2 samples")
    return (total - float(np.sum(a * a))) / (n * (n - 1))
