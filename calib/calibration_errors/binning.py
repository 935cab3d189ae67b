"""Bin assignment of scores in [0, 1] as integer ids, and per-bin statistics.

Equal-width bins have an explicit edge rule. ``closed="right"`` gives [0, e1], (e1, e2], ...,
(e_{M-1}, 1]: the survey's convention (Silva Filho et al. (2023), Sect. 4.1), Guo et al. (2017) and
the code of Ferrer & Ramos (2024). ``closed="left"`` gives [0, e1), ..., [e_{M-1}, 1], with 1 in the last
bin. Edge k is ``k / M`` computed from the integers k and M (the float nearest the rational
edge), so a score written 0.3 lies exactly on the edge 3/10 for M = 10; ``linspace`` would put
that edge at 0.30000000000000004 and move such scores by luck. Scores within 1e-12 of an edge
count as on it, so a score rounded to 0.20000000000000004 on its way (0.1 + 0.2 - 0.1) bins like
0.2. Other libraries' edge conventions are in :mod:`calib.calibration_errors.presets`.

Equal-mass bins have one definition, :func:`equal_mass_edges`, which every equal-mass binning of the
library asks (the ``calib evaluate --binning equal-mass`` metrics, :class:`BinnedCalibrationError`,
the ECE bootstrap, the reliability figures and the histogram calibrator): bin m holds the scores of
ranks ceil(m N / M) .. ceil((m + 1) N / M) - 1 of the sorted scores, so each holds N / M scores
rounded, and tied scores always share a bin: a tie that straddles a boundary goes to the side of the
boundary nearer to it (the lower on equal distances, the upper never past the first score), so the bins
are equal in mass where ties allow. The bins are stated by their edges (the largest score of each bin,
right-closed bins), so edges found on the data bin other scores too (new data, resamples, chunks read
later).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import numpy as np

from calib.validation import CalibInputError, Choice, as_sample_weights, check, check_positive_int

EDGE_RULES = ("right", "left")
# The binnings, by one name each; "width" and "mass" are their former short names, still accepted (with a
# FutureWarning) for one release.
STRATEGIES = ("equal-width", "equal-mass")
FORMER_STRATEGY_NAMES = {"width": "equal-width", "mass": "equal-mass"}
# The rules of a binning's parameters, declared once (the binned estimators, HistogramBinning).
EDGE_RULE = Choice(EDGE_RULES)
STRATEGY = Choice(STRATEGIES, former=tuple(FORMER_STRATEGY_NAMES.items()))
EdgeRule = Annotated[str, EDGE_RULE]
Strategy = Annotated[str, STRATEGY]
EDGE_TOLERANCE = 1e-12


def _as_unit_values(values) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1:
        raise CalibInputError(f"values to bin must be a 1-D array; got shape {v.shape}")
    if np.isnan(v).any() or np.any(v < 0) or np.any(v > 1):
        raise CalibInputError("values to bin must be probabilities in [0, 1] without NaN")
    return v


def equal_width_edges(n_bins: int) -> np.ndarray:
    """The M + 1 edges k / M of M equal-width bins on [0, 1]."""
    m = check_positive_int(n_bins, "n_bins")
    return np.arange(m + 1) / m


EDGE_GRIDS = ("exact", "linspace", "float32")


def grid_edges(n_bins: int, grid: str = "exact") -> np.ndarray:
    """The M + 1 edges of M equal-width bins on [0, 1] as a library computes them.

    ``exact``: k / M from the integers (this library's convention); ``linspace``: numpy's float64
    ``linspace(0, 1, M + 1)`` (scikit-learn, netcal); ``float32``: torch's float32 ``linspace``
    (torchmetrics), see :func:`torch_linspace_float32`.

    Parameters
    ----------
    n_bins : int
        M (>= 1).
    grid : {"exact", "linspace", "float32"}, default "exact"
        How the edges are computed.

    Returns
    -------
    numpy.ndarray of shape (M + 1,)
        Increasing edges from 0 to 1, as float64.

    Examples
    --------
    >>> grid_edges(10)[3], grid_edges(10, "linspace")[3]
    (np.float64(0.3), np.float64(0.30000000000000004))
    """
    m = check_positive_int(n_bins, "n_bins")
    if grid == "exact":
        return equal_width_edges(m)
    if grid == "linspace":
        return np.linspace(0.0, 1.0, m + 1)
    if grid == "float32":
        return torch_linspace_float32(m)
    raise CalibInputError(f"edges must be one of {EDGE_GRIDS}; got {grid!r}")


def torch_linspace_float32(m: int) -> np.ndarray:
    """``torch.linspace(0, 1, m + 1, dtype=torch.float32)`` (torchmetrics' bin edges), as float64.

    torch takes step = 1 / m in float32, computes the first half as step * k and the second as
    1 - step * (m - k), and its vectorized CPU kernels (AVX2, AVX512) round each once to float32 (a
    fused multiply-add): identical to torch 2.13 with either kernel for every m <= 3000 and at 10^4,
    10^5 and 10^6. torch's scalar fallback (``ATEN_CPU_CAPABILITY=default``) rounds step * (m - k)
    first, which moves a few upper edges by one float32 ulp (m = 15: 0.8 -> 0.79999995).
    """
    step = np.float64(np.float32(1.0) / np.float32(m))
    k = np.arange(m + 1)
    # step has 24 significant bits, so both products and 1 - step * (m - k) are exact in float64 for
    # m < 2^24: the cast below is the one rounding that torch's fused multiply-add makes.
    edges = np.where(k < (m + 1) // 2, step * k, 1.0 - step * (m - k))
    return edges.astype(np.float32).astype(np.float64)


# Edges within this fraction of a bin width of k / M are located arithmetically (see locate).
_NEAR_UNIFORM = 0.25
_MAX_UNIFORM_BINS = 10**6
# Values located per block by locate().
_LOCATE_BLOCK = 1 << 16


def near_uniform(edges: np.ndarray) -> bool:
    """True when each of the M + 1 edges is within a quarter bin of k / M (and M <= 10^6)."""
    m = edges.size - 1
    return 1 <= m <= _MAX_UNIFORM_BINS and bool(np.max(np.abs(edges - np.arange(m + 1) / m)) <= _NEAR_UNIFORM / m)


def locate(edges: np.ndarray, values: np.ndarray, side: str = "left") -> np.ndarray:
    """``np.searchsorted(edges, values, side)``, in O(1) per value when the edges are near k / M.

    For such edges (equal-width, linspace or float32-rounded: each within a quarter bin of k / M)
    every e_j with j < k lies below v and every e_j with j > k + 1 above it, for k = floor(M v), so the
    count of edges below v is k + [e_k < v] + [e_{k+1} < v] (<= for ``side="right"``),
    exactly (values outside [0, 1] count 0 or M + 1 edges); other edges fall back to the binary search.
    ``python benchmarks/hand_tuned.py --only binning`` measures it against ``np.searchsorted``.
    """
    m = edges.size - 1
    if not near_uniform(edges):
        return np.searchsorted(edges, values, side=side)
    below = np.less if side == "left" else np.less_equal
    flat = values.ravel()
    count = np.empty(flat.size, dtype=np.intp)
    # Blocks keep the temporaries small and reused: a fresh full-length temporary costs its page
    # faults, more than the comparisons themselves.
    for start in range(0, flat.size, _LOCATE_BLOCK):
        block = slice(start, start + _LOCATE_BLOCK)
        v, out = flat[block], count[block]
        k = (v * m).astype(np.intp)  # truncation; values outside [0, 1] are clipped next
        np.clip(k, 0, m - 1, out=k)
        np.add(below(edges[:-1][k], v), below(edges[1:][k], v), out=out, dtype=np.intp)  # not bool "or"
        out += k
    return count.reshape(values.shape)


def bin_ids_from_edges(
    values, edges, *, closed: str, tolerance: float = EDGE_TOLERANCE, one_in_extra_bin: bool = False
) -> np.ndarray:
    """Bin id in [0, M) of each value for M + 1 increasing ``edges``; values outside go to the end bins.

    Values within ``tolerance`` of an edge count as on it (0 bins them exactly as given). With
    ``one_in_extra_bin``, values past the last edge (for left-closed bins: on it, such as p = 1) get
    the id M of a bin of their own.
    """
    side = "right" if _inclusive(closed) else "left"
    edges = np.asarray(edges, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    last = edges.size - 1 if one_in_extra_bin else edges.size - 2
    m = edges.size - 1
    # Edges near k / M are more than half a bin apart, so the one edge a value can be within a tolerance
    # below a quarter bin of is the edge nearest M v: no search is needed to find it.
    nearest_by_index = tolerance > 0 and tolerance * m < _NEAR_UNIFORM and near_uniform(edges)
    flat = values.ravel()
    ids = np.empty(flat.size, dtype=np.intp)
    # Block by block, as in locate(): the snapping's temporaries stay small and reused.
    for start in range(0, flat.size, _LOCATE_BLOCK):
        block = slice(start, start + _LOCATE_BLOCK)
        v = flat[block]
        if nearest_by_index:
            nearest = np.rint(v * m).astype(np.intp)
            np.clip(nearest, 0, m, out=nearest)
            edge = edges[nearest]
            v = np.where(np.abs(v - edge) <= tolerance, edge, v)
        elif tolerance > 0:
            above = np.clip(locate(edges, v), 1, edges.size - 1)
            lower, upper = edges[above - 1], edges[above]
            v = np.where(np.abs(v - lower) <= tolerance, lower, np.where(np.abs(v - upper) <= tolerance, upper, v))
        ids[block] = np.clip(locate(edges, v, side=side) - 1, 0, last)
    return ids.reshape(values.shape)


def _inclusive(closed: str) -> bool:
    """Whether a value on an edge counts as past it (left-closed bins [a, b))."""
    check(closed, EDGE_RULE, "closed")
    return closed == "left"


def equal_width_bin_ids(values, n_bins: int, *, closed: str) -> np.ndarray:
    """Integer bin id in [0, n_bins) of each value in [0, 1], M equal-width bins."""
    return bin_ids_from_edges(_as_unit_values(values), equal_width_edges(n_bins), closed=closed)


def equal_mass_edges(values, n_bins: int, sample_weight=None) -> np.ndarray:
    """The M + 1 edges of M equal-mass bins of ``values``: 0, the largest value of each bin, and 1.

    With the N values sorted, v_(0) <= ... <= v_(N-1), bin m - 1 ends before rank R_m = ceil(m N / M)
    (0 < m < M): so bin m holds ranks ceil(m N / M) to ceil((m + 1) N / M) - 1, N / M values each, rounded
    up or down. Tied values are never split: where a block of tied values holds ranks L to U - 1
    with L < R_m < U (it straddles the boundary), the boundary moves to the nearer end of the block, to L
    (the block goes to the upper bin) when R_m - L < U - R_m and L > 0, else to U (the lower bin; also on
    equal distances). So the bins are equal in mass where ties allow: a boundary moves by at most half
    the block it meets (unless the block holds the smallest value), and a bin is left empty only by a
    block of more than N / M values, or when N < M. Edge m is v_(B_m - 1), the largest value of bin
    m - 1, for the boundary B_m (so v_(L - 1) when the block goes up); bins are right-closed,
    (e_m, e_{m+1}], the first holding 0, so the bins of other values (new data, resamples, chunks) follow
    from the edges alone. Without ties the edges are v_(ceil(m N / M) - 1). Cost: O(N log M) per column,
    by partial sorts at the 2 (M - 1) ranks around the boundaries and a count of each straddling tie in
    the two partitions beside it (a full sort, O(N log N), for M above 512).

    Source: Zadrozny & Elkan (2001), Sec. 3 (histogram binning in bins of equal counts); Nixon et al.
    (2019), Sec. 3 (the adaptive calibration error's bins of N / M predictions each); the tie rule is this
    library's (bins are sets of score values, so a tie is never split, and goes to the nearer side).

    With ``sample_weight`` the bins are equal in weight: ranks become masses, a value's block of ties
    holding the masses L to U (the summed weights of the smaller values, and of those and its own), W the
    total weight, and the boundary R_m = ceil(m W / M) when every weight is a whole number, m W / M
    otherwise; the edge is the value whose block has L < R_m <= U, or the value below it when
    R_m - L < U - R_m and L > 0, as above. So integer weights give the edges of the data with each value
    repeated w_i times (weight 0 drops it), unit weights the unweighted edges, and each bin holds W / M
    of the weight up to the block of ties at its boundaries. The weighted form is a sort, O(N log N).

    Parameters
    ----------
    values : array_like of shape (N,) or (N, K)
        Scores in [0, 1], N >= 1; for (N, K), one set of edges per column.
    n_bins : int
        M (>= 1).
    sample_weight : array_like of shape (N,), optional
        A weight >= 0 per value (per row, for (N, K)), by :func:`calib.validation.as_sample_weights`;
        None weighs every value 1.

    Returns
    -------
    numpy.ndarray of shape (M + 1,) or (M + 1, K)
        Non-decreasing edges from 0 to 1 (equal edges are bins left empty by ties or by N < M).

    Examples
    --------
    The boundary at rank 2 meets the tie of 0.2 at ranks 1 to 3, nearer its start: the tie goes up, and
    the bins hold 1, 3 and 2 values (sending every tie to the lower bin would give 4, 0 and 2).

    >>> equal_mass_edges([0.1, 0.2, 0.2, 0.2, 0.7, 0.9], 3).tolist()
    [0.0, 0.1, 0.2, 1.0]
    >>> equal_mass_edges([0.1, 0.3, 0.6, 0.8, 0.9], 3).tolist()
    [0.0, 0.3, 0.8, 1.0]
    >>> equal_mass_edges([0.1, 0.3, 0.6, 0.8, 0.9], 3, sample_weight=[1, 1, 1, 2, 0]).tolist()  # 0.1 0.3 0.6 0.8 0.8
    [0.0, 0.3, 0.8, 1.0]
    """
    v = np.asarray(values, dtype=np.float64)
    columns = [_as_unit_values(column) for column in v.T] if v.ndim == 2 else [_as_unit_values(v)]
    m = check_positive_int(n_bins, "n_bins")
    n = columns[0].size
    if n == 0:
        raise CalibInputError("equal-mass bins need at least one value")
    w = as_sample_weights(sample_weight, n)
    edges = np.empty((m + 1, len(columns)))
    edges[0], edges[m] = 0.0, 1.0
    for j, column in enumerate(columns):
        edges[1:m, j] = _inner_equal_mass_edges(column, m) if w is None else _weighted_inner_edges(column, w, m)
    return edges if v.ndim == 2 else edges[:, 0]


def _weighted_inner_edges(column: np.ndarray, w: np.ndarray, m: int) -> np.ndarray:
    """The M - 1 inner edges of :func:`equal_mass_edges` of one column of N values weighted ``w``."""
    kept = w > 0  # a value of weight 0 is not in the data its weights repeat
    order = np.argsort(column[kept], kind="stable")
    values, weights = column[kept][order], w[kept][order]
    distinct, first = np.unique(values, return_index=True)
    upper = np.cumsum(np.add.reduceat(weights, first))  # U of each block of ties
    lower = np.concatenate([[0.0], upper[:-1]])  # L, the very sums U, so that L_j == U_(j-1) exactly
    if np.all(weights == np.floor(weights)) and upper[-1] < 2**53 // m:
        # Whole weights are counts: ceil(m W / M) in integers, as the ranks of the repeated values.
        total = int(upper[-1])
        boundary = ((np.arange(1, m) * total + m - 1) // m).astype(np.float64)
    else:
        boundary = np.arange(1, m) * upper[-1] / m
    j = np.minimum(np.searchsorted(upper, boundary, side="left"), distinct.size - 1)
    up = (boundary - lower[j] < upper[j] - boundary) & (lower[j] > 0)
    return np.where(up, distinct[np.maximum(j - 1, 0)], distinct[j])


# Above this many ranks to select, one sort is faster than np.partition (10^6 values: 0.07 s against 0.05 s
# at 2 x 10^4 ranks, 0.03 s against 0.07 s at 28).
_PARTITION_RANKS = 1024


def _inner_equal_mass_edges(column: np.ndarray, m: int) -> np.ndarray:
    """The M - 1 inner edges of :func:`equal_mass_edges` of one column of N values."""
    n = column.size
    targets = (np.arange(1, m) * n + m - 1) // m  # R_m = ceil(m N / M), in integers (exact for any N); in [1, N]
    # The ranks either side of each boundary, selected: the array is then partitioned at each of them
    # (values before a selected rank are <= its value, values after >=); a sorted array is so too.
    kth = np.unique(np.concatenate([targets - 1, targets[targets < n]]))
    whole = kth.size > _PARTITION_RANKS
    p = np.sort(column) if whole else np.partition(column, kth)
    edges = p[targets - 1]
    inside = targets < n
    straddles = np.zeros(targets.size, dtype=bool)
    straddles[inside] = p[targets[inside]] == edges[inside]
    if not straddles.any():
        return edges
    where = np.flatnonzero(straddles)
    ties = edges[where]
    low, high, below = _tie_blocks(p, kth, ties) if not whole else _sorted_tie_blocks(p, ties)
    up = (targets[where] - low < high - targets[where]) & (low > 0)
    edges[where[up]] = below[up]
    return edges


def _sorted_tie_blocks(p: np.ndarray, ties: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each of ``ties`` (values of the sorted ``p``): its first rank, one past its last, and the
    largest value below it (0 where none)."""
    low, high = np.searchsorted(p, ties, "left"), np.searchsorted(p, ties, "right")
    return low, high, np.where(low > 0, p[np.maximum(low - 1, 0)], 0.0)


def _tie_blocks(p: np.ndarray, kth: np.ndarray, ties: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """As :func:`_sorted_tie_blocks` for ``p`` partitioned at the ranks ``kth``, where ``ties`` are selected:
    a tie's ranks are its first and last selected ranks, less (plus) its copies in the unsorted stretch
    before (after) them, which lies between the neighbouring selected values; O(N) for all ties together,
    each stretch being counted for at most two ties."""
    selected = p[kth]  # non-decreasing
    low, high, below = (np.zeros(ties.size, dtype=np.intp), np.zeros(ties.size, dtype=np.intp), np.zeros(ties.size))
    for tie in np.unique(ties):
        i, k = np.searchsorted(selected, tie, "left"), np.searchsorted(selected, tie, "right") - 1
        before = p[(kth[i - 1] + 1 if i > 0 else 0) : kth[i]]
        after = p[kth[k] + 1 : kth[k + 1] if k + 1 < kth.size else p.size]
        lower = before[before < tie]  # the largest value below the tie is here, else the selected value before
        mine = ties == tie
        low[mine] = kth[i] - np.count_nonzero(before == tie)
        high[mine] = kth[k] + 1 + np.count_nonzero(after == tie)
        below[mine] = lower.max() if lower.size else (selected[i - 1] if i > 0 else 0.0)
    return low, high, below


def equal_mass_bin_ids(values, n_bins: int, sample_weight=None) -> np.ndarray:
    """Bin ids in [0, M) of M equal-mass bins of ``values`` (N,), on their :func:`equal_mass_edges`
    (equal in weight with ``sample_weight``, one weight >= 0 per value; every value gets an id, also one
    of weight 0).

    Examples
    --------
    >>> equal_mass_bin_ids([0.9, 0.2, 0.1, 0.2, 0.7, 0.2], 3).tolist()
    [2, 1, 0, 1, 2, 1]
    """
    v = _as_unit_values(values)
    return bin_ids_from_edges(v, equal_mass_edges(v, n_bins, sample_weight), closed="right", tolerance=0.0)


def strategy_name(strategy, argument: str = "strategy") -> str:
    """``strategy`` as one of :data:`STRATEGIES` ("equal-width" or "equal-mass"); the former short names
    "width" and "mass" are read as these with a FutureWarning.

    Examples
    --------
    >>> strategy_name("equal-mass")
    'equal-mass'
    """
    return STRATEGY.current(check(strategy, STRATEGY, argument), argument, stacklevel=3)


def bin_ids(values, n_bins: int, *, strategy: str = "equal-width", closed: str = "right") -> np.ndarray:
    """Bin ids by ``strategy``: "equal-width" (edge rule ``closed``) or "equal-mass" (:func:`equal_mass_edges`)."""
    if strategy_name(strategy) == "equal-width":
        return equal_width_bin_ids(values, n_bins, closed=closed)
    return equal_mass_bin_ids(values, n_bins)


def strategy_edges(strategy: str, n_bins: int, scores=None, *, grid: str = "exact", sample_weight=None) -> np.ndarray:
    """The bin edges of a binning: equal-width edges on ``grid`` (:func:`grid_edges`), or the
    :func:`equal_mass_edges` of ``scores`` ((N,) or (N, K), one set of edges per column), equal in the
    weight ``sample_weight`` (one weight >= 0 per row; None: unweighted) when given. Equal-width edges
    do not depend on the weights.

    Examples
    --------
    >>> strategy_edges("equal-width", 4).tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    >>> strategy_edges("equal-mass", 2, [0.1, 0.3, 0.6, 0.8]).tolist()
    [0.0, 0.3, 1.0]
    >>> strategy_edges("equal-mass", 2, [0.1, 0.3, 0.6, 0.8], sample_weight=[3, 1, 1, 1]).tolist()
    [0.0, 0.1, 1.0]
    """
    if strategy_name(strategy) == "equal-width":
        return grid_edges(n_bins, grid)
    return equal_mass_edges(scores, n_bins, sample_weight)


def strategy_bin_ids(
    scores,
    edges,
    *,
    strategy: str,
    closed: str = "right",
    tolerance: float = EDGE_TOLERANCE,
    one_in_extra_bin: bool = False,
) -> np.ndarray:
    """Bin ids of ``scores`` (N,) or (N, K) in the bins of a binning's ``edges`` (M + 1,) or (M + 1, K).

    Equal-width bins follow the edge rule ``closed``, ``tolerance`` and ``one_in_extra_bin`` (see
    :func:`bin_ids_from_edges`); equal-mass bins are right-closed and exact (their edges are scores),
    as :func:`equal_mass_edges` defines them. With (M + 1, K) edges, column j is binned on edges[:, j].

    Examples
    --------
    >>> strategy_bin_ids([0.1, 0.3, 0.6], strategy_edges("equal-mass", 2, [0.1, 0.3, 0.6, 0.8]),
    ...                  strategy="equal-mass").tolist()
    [0, 0, 1]
    """
    if strategy_name(strategy) == "equal-mass":
        closed, tolerance, one_in_extra_bin = "right", 0.0, False
    scores, edges = np.asarray(scores, dtype=np.float64), np.asarray(edges, dtype=np.float64)
    rule = {"closed": closed, "tolerance": tolerance, "one_in_extra_bin": one_in_extra_bin}
    if edges.ndim == 1:
        return bin_ids_from_edges(scores, edges, **rule)
    return np.column_stack([bin_ids_from_edges(scores[:, j], edges[:, j], **rule) for j in range(scores.shape[1])])


@dataclass(frozen=True)
class BinStatistics:
    """Per-bin count, mean score and mean outcome (label frequency); means of empty bins are NaN.
    ``weight_squares``: with sample weights, each bin's sum of squared weights (None: unweighted counts),
    from which :meth:`calib.calibration_errors.binned.ReliabilityBins.frequency_intervals` takes the bin's
    effective size."""

    counts: np.ndarray
    mean_score: np.ndarray
    frequency: np.ndarray
    weight_squares: np.ndarray | None = None

    @classmethod
    def from_sums(
        cls,
        counts: np.ndarray,
        score_sums: np.ndarray,
        outcome_sums: np.ndarray,
        weight_squares: np.ndarray | None = None,
    ) -> BinStatistics:
        """Statistics from per-bin counts and sums (means of empty bins are NaN)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return cls(counts, score_sums / counts, outcome_sums / counts, weight_squares)

    @property
    def occupied(self) -> np.ndarray:
        """Mask of the non-empty bins (the only ones any metric uses)."""
        return self.counts > 0


def bin_statistics(ids, scores, outcomes, n_bins: int, sample_weight=None) -> BinStatistics:
    """Count, mean of ``scores`` and mean of ``outcomes`` per bin id in [0, n_bins), by ``bincount``.

    With ``sample_weight`` (one weight >= 0 per row) the counts are the bins' summed weights W_b and the
    means weighted, sum_i w_i v_i / W_b: integer weights give the statistics of the repeated rows. The
    bins' sums of squared weights, sum_i w_i^2, are ``weight_squares`` (None without weights).

    Examples
    --------
    >>> stats = bin_statistics([0, 0, 1], [0.2, 0.4, 0.9], [0, 1, 1], 2, sample_weight=[3, 1, 2])
    >>> stats.counts.tolist(), stats.mean_score.tolist(), stats.frequency.tolist(), stats.weight_squares.tolist()
    ([4.0, 2.0], [0.25, 0.9], [0.25, 1.0], [10.0, 4.0])
    """
    ids = np.asarray(ids)
    scores = np.asarray(scores, dtype=np.float64)
    outcomes = np.asarray(outcomes, dtype=np.float64)
    if not ids.shape == scores.shape == outcomes.shape or ids.ndim != 1:
        raise CalibInputError(
            "bin ids, scores and outcomes must be 1-D of equal length; "
            f"got {ids.shape}, {scores.shape}, {outcomes.shape}"
        )
    w = as_sample_weights(sample_weight, ids.size)
    if w is None:
        return BinStatistics.from_sums(
            np.bincount(ids, minlength=n_bins),
            np.bincount(ids, weights=scores, minlength=n_bins),
            np.bincount(ids, weights=outcomes, minlength=n_bins),
        )
    return BinStatistics.from_sums(
        np.bincount(ids, weights=w, minlength=n_bins),
        np.bincount(ids, weights=w * scores, minlength=n_bins),
        np.bincount(ids, weights=w * outcomes, minlength=n_bins),
        np.bincount(ids, weights=w * w, minlength=n_bins),
    )
