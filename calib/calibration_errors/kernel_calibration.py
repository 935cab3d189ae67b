"""Squared kernel calibration error (SKCE) of Widmann et al. (2019), in row blocks.

Source: Widmann et al. (2019), "Calibration tests in multi-class classification: a unifying
framework" (NeurIPS), the SKCE and its estimators. None of its results is reproduced here, so no equation
numbers are cited and the tests check identities and a dense reference instead.

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
from scipy.spatial.distance import pdist

from calib.validation import CalibInputError, Choice, as_sample_weights, check, check_inputs, check_positive_int

KERNELS = ("laplacian", "gaussian")
ESTIMATORS = ("unbiased", "biased", "block")
# Pairs are summed in tiles of rows x columns (about 4 MB), so that the passes over a tile stay in cache;
# the block estimator holds about _BLOCK_PAIRS pairs at a time.
_TILE_ROWS, _TILE_COLS = 256, 2048
_BLOCK_PAIRS = 1 << 20
# |p|^2 + |p'|^2 - 2 <p, p'> loses ~1e-15 absolutely to cancellation, i.e. ~3e-8 in the Laplacian's
# distance near 0; squared distances below this are recomputed from the differences (error < 1e-12).
_EXACT_BELOW = 1e-6
_MEDIAN_SAMPLES = 2000
# exp(1 / nu) overflows float64 below this bandwidth (r spans [0, 1]).
MIN_PAIR_SUM_BANDWIDTH = 1.0 / 700.0


def median_bandwidth(probs: np.ndarray, seed: int = 0) -> float:
    """The median heuristic: median pairwise Euclidean distance of (at most 2000 sampled) predictions.

    The distances come from the row differences (``pdist``), not from |a|^2 + |b|^2 - 2 <a, b>, whose
    cancellation loses all but a few digits for near-identical predictions (a 1-ulp change of the
    inputs, as between probabilities and the logits they came from, then moved the bandwidth by 1e-5).
    """
    p = np.asarray(probs, dtype=np.float64)
    if p.shape[0] > _MEDIAN_SAMPLES:
        p = p[np.random.default_rng(seed).choice(p.shape[0], _MEDIAN_SAMPLES, replace=False)]
    d = pdist(p)
    median = float(np.median(d)) if d.size else 0.0
    if not median > 0:
        raise CalibInputError(
            "scores: the median heuristic needs distinct predictions; pass a positive bandwidth instead"
        )
    return median


class _PairKernel:
    """h((p, y), (p', y')) = kappa(p, p') <u, u'> with u = e_y - p, evaluated block by block.

    ``block(rows, cols)`` is the (rows x cols) matrix of h built in place from two matrix products
    (<p, p'> for the distances and <u, u'> for the inner products): a few passes over the block, no
    gathers. The diagonal h(i, i) = |u_i|^2 (kappa(p, p) = 1).
    """

    def __init__(self, p: np.ndarray, y: np.ndarray, bandwidth: float, kernel: str):
        self.p = p
        self.u = -p
        self.u[np.arange(y.size), y] += 1.0
        self.sq = np.sum(p * p, axis=1)
        self.bandwidth, self.kernel = bandwidth, kernel

    @property
    def n(self) -> int:
        return self.sq.size

    def block(self, rows: slice, cols: slice) -> np.ndarray:
        out = self.p[rows] @ self.p[cols].T
        out *= -2.0
        out += self.sq[rows, None]
        out += self.sq[None, cols]
        np.maximum(out, 0.0, out=out)  # squared distances
        if self.kernel == "laplacian":
            self._recompute_near(out, rows, cols)
            np.sqrt(out, out=out)
            out *= -1.0 / self.bandwidth
        else:
            out *= -0.5 / self.bandwidth**2
        np.exp(out, out=out)
        out *= self.u[rows] @ self.u[cols].T
        return out

    def _recompute_near(self, sq_dist: np.ndarray, rows: slice, cols: slice) -> None:
        """Squared distances below ``_EXACT_BELOW`` from the row differences, a bounded chunk at a time."""
        r, c = np.nonzero(sq_dist < _EXACT_BELOW)
        step = max(1, _BLOCK_PAIRS // self.p.shape[1])
        for start in range(0, r.size, step):
            i, j = r[start : start + step], c[start : start + step]
            diff = self.p[rows][i] - self.p[cols][j]
            sq_dist[i, j] = np.einsum("ij,ij->i", diff, diff)

    def diagonal_sum(self) -> float:
        return float(np.sum(self.u * self.u))

    def tiles(self):
        """(rows, cols, h on rows x cols, on the diagonal?) covering every unordered pair once.

        Square tiles sit on the diagonal; the rest of each row band is cut into tiles of
        ``_TILE_COLS`` columns, small enough for the in-place passes to stay in cache.
        """
        n = self.n
        for start in range(0, n, _TILE_ROWS):
            rows = slice(start, min(n, start + _TILE_ROWS))
            yield rows, rows, self.block(rows, rows), True
            for col in range(rows.stop, n, _TILE_COLS):
                cols = slice(col, min(n, col + _TILE_COLS))
                yield rows, cols, self.block(rows, cols), False

    def off_diagonal_sum(self) -> float:
        """sum_{i != j} h_ij = the diagonal tiles without their trace + twice the rest (h is symmetric)."""
        total = 0.0
        for _, _, tile, on_diagonal in self.tiles():
            total += float(np.sum(tile)) - float(np.trace(tile)) if on_diagonal else 2.0 * float(np.sum(tile))
        return total

    def quadratic_forms(self, weights: np.ndarray) -> np.ndarray:
        """sum_{i != j} w_bi w_bj h_ij for every row w_b of ``weights`` (B x n), tile by tile."""
        total = np.zeros(weights.shape[0])
        for rows, cols, tile, on_diagonal in self.tiles():
            if on_diagonal:
                np.fill_diagonal(tile, 0.0)
            forms = np.einsum("bi,bi->b", weights[:, rows], (tile @ weights[:, cols].T).T)
            total += forms if on_diagonal else 2.0 * forms
        return total


def _check_bandwidth(bandwidth, probs: np.ndarray) -> float:
    if isinstance(bandwidth, str) and bandwidth == "median":
        return median_bandwidth(probs)
    if isinstance(bandwidth, bool) or not isinstance(bandwidth, (int, float)) or not np.isfinite(bandwidth):
        raise CalibInputError(f"bandwidth must be a positive number or 'median'; got {bandwidth!r}")
    if bandwidth <= 0:
        raise CalibInputError(f"bandwidth must be a positive number or 'median'; got {bandwidth!r}")
    return float(bandwidth)


def skce_kernel(scores, labels, *, kind: str, kernel: str = "laplacian", bandwidth="median") -> _PairKernel:
    """The validated pair kernel h of (``scores``, ``labels``), for the estimators and the tests."""
    check(kernel, Choice(KERNELS), "kernel")
    logp, y = check_inputs(scores, labels, kind)
    p = np.exp(logp)
    return _PairKernel(p, y, _check_bandwidth(bandwidth, p), kernel)


def block_values(h: _PairKernel, block_size: int) -> np.ndarray:
    """The unbiased estimate within each of the n // ``block_size`` consecutive blocks (a leftover tail is dropped)."""
    size = check_positive_int(block_size, "block_size", minimum=2)
    n_blocks = h.n // size
    if n_blocks == 0:
        raise CalibInputError(f"the block estimator needs at least block_size = {size} samples; got {h.n}")
    m = n_blocks * size
    p = h.p[:m].reshape(n_blocks, size, -1)
    u = h.u[:m].reshape(n_blocks, size, -1)
    sq = h.sq[:m].reshape(n_blocks, size)
    values = np.empty(n_blocks)
    step = max(1, _BLOCK_PAIRS // (size * size))
    for start in range(0, n_blocks, step):
        b = slice(start, start + step)
        d2 = np.maximum(sq[b, :, None] + sq[b, None, :] - 2.0 * p[b] @ p[b].transpose(0, 2, 1), 0.0)
        if h.kernel == "laplacian":
            _recompute_near_in_blocks(d2, p[b])
        kappa = np.exp(-np.sqrt(d2) / h.bandwidth) if h.kernel == "laplacian" else np.exp(-d2 / (2 * h.bandwidth**2))
        pairs = kappa * (u[b] @ u[b].transpose(0, 2, 1))
        diagonal = np.einsum("bii->b", pairs)
        values[b] = (pairs.sum(axis=(1, 2)) - diagonal) / (size * (size - 1))
    return values


def _recompute_near_in_blocks(sq_dist: np.ndarray, p: np.ndarray) -> None:
    """Off-diagonal squared distances (blocks, size, size) below ``_EXACT_BELOW`` from the row differences
    of ``p`` (blocks, size, K), a bounded chunk at a time (as :meth:`_PairKernel._recompute_near`)."""
    near = sq_dist < _EXACT_BELOW
    diagonal = np.arange(p.shape[1])
    near[:, diagonal, diagonal] = False  # h(i, i) is left out of the block estimate
    b, i, j = np.nonzero(near)
    step = max(1, _BLOCK_PAIRS // p.shape[2])
    for start in range(0, b.size, step):
        at = slice(start, start + step)
        diff = p[b[at], i[at]] - p[b[at], j[at]]
        sq_dist[b[at], i[at], j[at]] = np.einsum("ij,ij->i", diff, diff)


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
    """Squared kernel calibration error (SKCE) with the matrix-valued kernel kappa(p, p') I_K.

    SKCE = E[h] over independent pairs, with h((p, y), (p', y')) = kappa(p, p') <e_y - p, e_y' - p'>
    and kappa(p, p') = exp(-||p - p'||_2 / nu) (Laplacian) or exp(-||p - p'||^2 / (2 nu^2))
    (Gaussian). Over n samples the unbiased estimator is (1 / (n (n - 1))) sum_{i != j} h_ij (a
    U-statistic, expectation 0 for a calibrated model, so it can be negative), the biased one
    (1 / n^2) sum_{i, j} h_ij (a V-statistic, with i = j), and the block estimator the mean of the
    unbiased estimator within consecutive blocks of ``block_size`` samples (2: the linear
    estimator). A calibrated model has SKCE = 0.

    Cost: O(n^2 K) time for the unbiased and biased estimators, summed over blocks of rows so that
    no n x n matrix is formed (memory O(rows x n)); two classes with the Laplacian kernel take an
    exact O(n log n) closed form instead (sorted cumulative sums on p_1, since ||p - p'|| = sqrt(2)
    |p_1 - p'_1|). The block estimator costs O(n m K) for blocks of m samples.

    Source: Widmann et al. (2019) (the SKCE and its estimators; no result of the paper is
    reproduced, so no equation is cited).

    Parameters
    ----------
    scores, labels, kind
        Posteriors (n, K), K >= 2, of kind "probs", "logprobs" or "logits", and the true classes
        in [0, K), as :func:`calib.validation.check_inputs` takes them.
    estimator : {"unbiased", "biased", "block"}, default "unbiased"
        Which estimator of the SKCE to return.
    kernel : {"laplacian", "gaussian"}, default "laplacian"
        The scalar kernel kappa on the simplex.
    bandwidth : float or "median", default "median"
        nu > 0, or "median": the median pairwise Euclidean distance of the predictions (the median
        heuristic, on at most 2000 samples drawn with a fixed seed).
    block_size : int, default 2
        Samples per block of the block estimator (>= 2); a leftover tail of fewer samples is
        dropped. Ignored by the other estimators.

    Returns
    -------
    float
        The SKCE estimate (the unbiased and block estimates may be negative).

    Raises
    ------
    CalibInputError
        For invalid ``scores``, ``labels`` or ``kind``, an unknown ``estimator`` or ``kernel``, a
        ``bandwidth`` that is neither positive nor "median", the median heuristic on predictions that
        are all equal, fewer than 2 samples (unbiased), or fewer than ``block_size`` samples (block).

    Examples
    --------
    >>> scores = [[0.8, 0.2], [0.3, 0.7], [0.6, 0.4], [0.1, 0.9]]
    >>> round(skce(scores, [0, 1, 1, 1], kind="probs"), 4)
    0.009
    >>> round(skce(scores, [0, 1, 1, 1], kind="probs", estimator="biased", bandwidth=1.0), 4)
    0.0731
    """
    check(estimator, Choice(ESTIMATORS), "estimator")
    h = skce_kernel(scores, labels, kind=kind, kernel=kernel, bandwidth=bandwidth)
    n = h.n
    if estimator == "block":
        return float(np.mean(block_values(h, block_size)))
    if estimator == "unbiased" and n < 2:
        raise CalibInputError("the unbiased estimator needs at least 2 samples")
    diagonal = h.diagonal_sum()
    if h.p.shape[1] == 2 and kernel == "laplacian" and h.bandwidth / np.sqrt(2.0) > MIN_PAIR_SUM_BANDWIDTH:
        # <u, u'> = 2 a a' with a = y - p_1 (= u[:, 1])
        off_diagonal = 2.0 * _laplacian_pair_sum(h.p[:, 1], h.u[:, 1], h.bandwidth / np.sqrt(2.0)) - diagonal
    else:
        off_diagonal = h.off_diagonal_sum()
    if estimator == "unbiased":
        return off_diagonal / (n * (n - 1))
    return (off_diagonal + diagonal) / (n * n)


def _laplacian_pair_sum(r: np.ndarray, a: np.ndarray, bandwidth: float) -> float:
    """sum_{i, j} a_i a_j exp(-|r_i - r_j| / nu) in O(n log n) (:func:`_sorted_pair_sums` after sorting)."""
    order = np.argsort(r, kind="stable")
    return float(_sorted_pair_sums((r[order] - r.max()) / bandwidth, a[order, None])[0])


# Rows per step of _sorted_pair_sums: its (rows, b) temporaries stay at most 2^21 numbers.
_PAIR_SUM_CELLS = 1 << 21


def _sorted_pair_sums(shift: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """sum_{i, j} w_i w_j exp(-|s_i - s_j|) for each column w of ``weights`` (n, b), the ``shift`` s (n,)
    sorted increasingly and at most 0: the pairs j < i give exp(-s_i) * sum_{j < i} w_j exp(s_j), a
    cumulative sum (exp(s) <= 1 and exp(-s) <= exp(1 / nu) stay finite for nu > MIN_PAIR_SUM_BANDWIDTH),
    taken a block of rows at a time with the running sum carried over (the additions in the same order)."""
    total = np.einsum("ij,ij->j", weights, weights)
    carry = np.zeros((1, weights.shape[1]))
    step = max(1, _PAIR_SUM_CELLS // weights.shape[1])
    for start in range(0, shift.size, step):
        rows = slice(start, start + step)
        scaled = weights[rows] * np.exp(shift[rows])[:, None]
        running = np.cumsum(np.concatenate([carry, scaled]), axis=0)
        below = running[1:] - scaled  # sum over j < i
        total += 2.0 * np.einsum("ij,ij->j", weights[rows] * np.exp(-shift[rows])[:, None], below)
        carry = running[-1:]
    return total


class ResampledSquaredMmce:
    """The unbiased estimate of MMCE^2 (:func:`mmce`, ``estimator="unbiased"``) of the top label, on the
    samples and on resamples of them given by their counts.

    A resample that draws sample i c_i times has the pairs of its N = sum_i c_i draws: the U-statistic is
    (sum_{i, j} c_i c_j a_i a_j k_ij - sum_i c_i a_i^2) / (N (N - 1)), a = correct - confidence and
    k_ij = exp(-|r_i - r_j| / nu) (pairs of two copies of one sample count, with k = 1), in O(n b) time
    per b resamples once the samples are sorted.

    With sample weights w the counts are c_i w_i (N = sum_i c_i w_i): the weights are read as frequencies,
    so integer weights give what repeating sample i w_i times gives, and the estimate is undefined (NaN)
    when the total weight is at most 1; scaling every weight changes it (through N - 1 and the pairs of
    copies of one sample), unlike the other metrics.

    Source: Kumar et al. (2018) (the MMCE, its unbiased estimator and nu = 0.4).

    Parameters
    ----------
    confidence : array of shape (N,)
        The top label's confidence r_i.
    correct : array of shape (N,)
        1.0 where the top label is right, else 0.0.
    bandwidth : float
        nu, above 1/700.
    sample_weight : array of shape (N,), optional
        The samples' weights (:func:`calib.validation.as_sample_weights`); default None: 1 each.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> confidence = rng.uniform(0.5, 1.0, 400)
    >>> correct = (rng.random(400) < confidence).astype(float)
    >>> mmce2 = ResampledSquaredMmce(confidence, correct, 0.4)
    >>> scores = np.column_stack([confidence, 1 - confidence])
    >>> bool(np.isclose(mmce2.estimate(), mmce(scores, 1 - correct.astype(int), kind="probs", estimator="unbiased")))
    True
    """

    def __init__(self, confidence: np.ndarray, correct: np.ndarray, bandwidth: float, sample_weight=None):
        if not MIN_PAIR_SUM_BANDWIDTH < bandwidth < np.inf:
            raise CalibInputError(f"bandwidth must be a number above 1/700; got {bandwidth!r}")
        self.order = np.argsort(confidence, kind="stable")
        r = confidence[self.order]
        self.shift = (r - r.max()) / bandwidth
        self.a = correct[self.order] - r
        weights = as_sample_weights(sample_weight, confidence.size)
        self.weights = None if weights is None else weights[self.order]

    def estimate(self) -> float:
        """The estimate on the samples (every count 1)."""
        return float(self(np.ones((self.a.size, 1)))[0])

    def __call__(self, counts: np.ndarray) -> np.ndarray:
        """The estimate on each resample counted by a column of ``counts`` (N, b); NaN for fewer than 2 draws
        (a total weight of at most 1)."""
        c = counts[self.order].astype(np.float64)
        if self.weights is not None:
            c *= self.weights[:, None]
        pairs = _sorted_pair_sums(self.shift, c * self.a[:, None])
        n = c.sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 1, (pairs - c.T @ (self.a * self.a)) / (n * (n - 1)), np.nan)


def mmce(scores, labels, *, kind: str, bandwidth: float = 0.4, estimator: str = "biased") -> float:
    """Maximum mean calibration error (MMCE) of the top-label confidence, with a Laplacian kernel.

    MMCE^2 = (1 / n^2) sum_{i, j} (c_i - r_i)(c_j - r_j) exp(-|r_i - r_j| / nu), with r_i the
    confidence max_k q_k(x_i) and c_i = 1 if the top label is right (else 0); MMCE = sqrt(MMCE^2).
    The unbiased estimator drops the i = j terms and divides by n (n - 1) instead. Cost: the pair
    sum is exact in O(n log n) time (sorted cumulative sums), not O(n^2), with O(n) memory.

    Source: Kumar et al. (2018) (the MMCE and its bandwidth nu = 0.4).

    Parameters
    ----------
    scores, labels, kind
        Posteriors (n, K), K >= 2, of kind "probs", "logprobs" or "logits", and the true classes
        in [0, K), as :func:`calib.validation.check_inputs` takes them.
    bandwidth : float, default 0.4
        nu, the Laplacian kernel's bandwidth (the paper's value by default); a number above 1/700.
    estimator : {"biased", "unbiased"}, default "biased"
        "biased" returns MMCE (the root of the V-statistic); "unbiased" returns the U-statistic of
        MMCE^2 itself, without the root, which may be negative.

    Returns
    -------
    float
        MMCE (>= 0), or the unbiased estimate of MMCE^2.

    Raises
    ------
    CalibInputError
        For invalid ``scores``, ``labels`` or ``kind``, an unknown ``estimator``, a ``bandwidth``
        that is not a number above 1/700, or fewer than 2 samples with "unbiased".

    Examples
    --------
    >>> scores = [[0.7, 0.2, 0.1], [0.5, 0.3, 0.2], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6], [0.3, 0.3, 0.4]]
    >>> round(mmce(scores, [0, 1, 1, 2, 0], kind="probs"), 4)
    0.1319
    >>> round(mmce(scores, [0, 1, 1, 2, 0], kind="probs", estimator="unbiased"), 4)
    -0.0133
    """
    if estimator not in ("biased", "unbiased"):
        raise CalibInputError(f"estimator must be 'biased' or 'unbiased'; got {estimator!r}")
    if not isinstance(bandwidth, (int, float)) or not MIN_PAIR_SUM_BANDWIDTH < bandwidth < np.inf:
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
