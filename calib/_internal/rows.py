"""Row-wise sums, maxima, minima and log-softmax of (N, K) float64 matrices, and row chunks of count matrices.

numpy reduces each row of a C-ordered matrix separately, a loop per sample that for K below a few
dozen costs more than the arithmetic; here a maximum is one vectorized pass per column and a sum one
``einsum``, so the work is vectorized over the N samples instead. Maxima are exact; sums equal
numpy's up to the order of the additions. ``python benchmarks/hand_tuned.py --only rows`` measures
each against numpy (2-37x at 10^5 to 10^7 rows).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

# Up to this many classes row sums add columns; beyond, einsum.
_COLUMN_SUM_MAX_K = 3
# Up to this many classes row maxima take np.maximum over the columns; beyond, max(axis=1).
_COLUMN_MAX_MAX_K = 16
# log_softmax_rows works through blocks of about this many entries, so that its temporaries stay in
# cache and are reused instead of being freshly allocated (page-faulted) at the size of the matrix.
_BLOCK_ENTRIES = 1 << 15
# float_chunks hands out a count matrix as float64 about this many cells at a time.
_CHUNK_CELLS = 1 << 21


def row_sums(arr: np.ndarray) -> np.ndarray:
    """Sum of each row of an (N, K) matrix (``arr.sum(axis=1)`` up to the order of the additions)."""
    if arr.shape[1] > _COLUMN_SUM_MAX_K:
        return np.einsum("ij->i", arr)
    total = arr[:, 0] + arr[:, 1]
    for k in range(2, arr.shape[1]):
        total += arr[:, k]
    return total


def row_max(arr: np.ndarray) -> np.ndarray:
    """Maximum of each row of an (N, K) matrix (exactly ``arr.max(axis=1)``; NaN propagates)."""
    return _row_extreme(arr, np.maximum, np.max)


def row_min(arr: np.ndarray) -> np.ndarray:
    """Minimum of each row of an (N, K) matrix (exactly ``arr.min(axis=1)``; NaN propagates)."""
    return _row_extreme(arr, np.minimum, np.min)


def _row_extreme(arr: np.ndarray, pairwise, reduce) -> np.ndarray:
    if arr.shape[1] > _COLUMN_MAX_MAX_K:
        return reduce(arr, axis=1)
    out = np.empty(arr.shape[0], dtype=arr.dtype)
    for rows in row_blocks(arr):
        block, target = arr[rows], out[rows]
        np.copyto(target, block[:, 0])
        for k in range(1, block.shape[1]):
            pairwise(target, block[:, k], out=target)
    return out


def row_blocks(arr: np.ndarray) -> list[slice]:
    """Consecutive row ranges of an (N, K) matrix holding about _BLOCK_ENTRIES entries each: a block's
    columns stay in cache across the K column passes (one pass per column over the whole matrix
    would read it K times from memory)."""
    step = max(1, _BLOCK_ENTRIES // arr.shape[1])
    return [slice(start, start + step) for start in range(0, arr.shape[0], step)]


def exp_row_sums(arr: np.ndarray) -> np.ndarray:
    """``row_sums(np.exp(arr))``, block by block through one reused buffer: the exponentials never
    fill a fresh matrix of ``arr``'s size (whose page faults can cost more than the exponentials)."""
    sums = np.empty(arr.shape[0])
    blocks = row_blocks(arr)
    buffer = np.empty((min(blocks[0].stop, arr.shape[0]), arr.shape[1]))
    for rows in blocks:
        block = buffer[: arr[rows].shape[0]]
        np.exp(arr[rows], out=block)
        sums[rows] = row_sums(block)
    return sums


def log_softmax_rows(z: np.ndarray, *, overwrite: bool = False) -> np.ndarray:
    """z_ik - log sum_j exp(z_ij) for each row of finite-maximum rows (scipy's ``log_softmax(z, axis=1)``).

    ``overwrite``: compute in ``z``'s own memory (for a temporary the caller no longer needs).
    """
    out = z if overwrite else z.copy()
    with np.errstate(over="ignore"):  # entries more than ~1.8e308 below their row's maximum: -inf, probability 0
        for rows in row_blocks(out):
            block = out[rows]
            block -= row_max(block)[:, None]
            block -= np.log(row_sums(np.exp(block)))[:, None]
    return out


def float_chunks(counts: np.ndarray) -> Iterator[tuple[slice, np.ndarray]]:
    """Consecutive row ranges of a count matrix (N, S) and those rows as C-ordered float64, about 2^21
    cells at a time, so that products with per-sample values never need the whole matrix in float64
    (and see the same layout whichever order the counts are stored in)."""
    step = max(1, _CHUNK_CELLS // counts.shape[1])
    for start in range(0, counts.shape[0], step):
        rows = slice(start, min(start + step, counts.shape[0]))
        yield rows, np.ascontiguousarray(counts[rows], dtype=np.float64)


def weighted_mean(values: np.ndarray, weights: np.ndarray | None) -> float:
    """The mean of per-row ``values``, or their mean weighted by ``weights`` (None: 1 each), where a row of weight
    0 counts for nothing, even an infinite value (not 0 * inf = NaN).

    Examples
    --------
    >>> weighted_mean(np.array([1.0, 3.0, np.inf]), np.array([1.0, 3.0, 0.0]))
    2.5
    """
    if weights is None:
        return float(np.mean(values))
    return float(np.sum(weights * values, where=weights > 0) / weights.sum())
