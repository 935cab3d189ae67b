"""Partitions of the probability simplex as integer cell ids (Vaicenavicius et al. (2019), Sect. 3.3, App. B).

Three schemes, each a small object whose ``cells(probs)`` returns ``(ids, n_cells)`` with ids in
[0, n_cells):

- :class:`UniformGrid`: equal-size bins on each of the first m - 1 coordinates (the last is fixed by
  the others), half-open [k/M, (k+1)/M) with 1 in the last bin, the edges k/M exact as in
  :mod:`calib.calibration_errors.binning`. Only occupied cells exist: each point's per-coordinate bins are folded into a
  mixed-radix key that is renumbered by rank (``_compact``) whenever it could overflow, so 10 classes at
  10 bins (10^9 potential cells) cost O(N) memory. Cells are numbered in lexicographic order of their
  bin tuples. For two classes this is ordinary binning of the first coordinate.
- :class:`Triangles`: the k^2 congruent triangles obtained by cutting every edge of the 2-simplex into
  k pieces (the "25 and 100 bins of equal size" of Figs. 1, 16 and 18 are k = 5 and 10). Ids are fixed
  (empty triangles keep theirs) so :meth:`Triangles.vertices` can draw them.
- :class:`DataDependent`: the paper's recursive scheme (App. B): a node of n >= ``min_size`` points
  splits on the coordinate of largest population variance (first on ties) at its mean, points
  below it by more than 1e-12 going low (rounding never separates equal points); a split that would
  leave a side empty is not made. The paper used min_size = 1000. Leaves are numbered in pre-order
  (low before high). :class:`SplitTree` keeps the splits so new points can be assigned.

``data_independent`` tells resampling code whether a resample's cells are the original cells of its
points (a fixed grid) or must be refitted (the recursive scheme).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calib.calibration_errors.binning import bin_ids_from_edges, equal_width_edges
from calib.validation import CalibInputError, Choice, check, check_positive_int

# Keys stay below this bound before they are compacted (int64 holds 2^63 - 1).
_KEY_LIMIT = 1 << 62
THRESHOLDS = ("mean", "median")
# A point this close to the edge shared by an upward and a downward triangle goes to the upward one.
_SHARED_EDGE_TOLERANCE = 1e-9


def _check_probs(probs) -> np.ndarray:
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 2 or p.shape[1] < 2:
        raise CalibInputError(f"probs must be an (N, m) array of predictions with m >= 2; got shape {p.shape}")
    return p


def _compact(keys: np.ndarray, bound: int) -> tuple[np.ndarray, int]:
    """Keys in [0, ``bound``) renumbered 0, 1, ... in increasing order of key (the occupied ones only).

    When the keys can take no more values than there are keys, a table of the occupied keys gives each
    key its rank in one O(N + bound) pass; otherwise ``np.unique`` sorts them, O(N log N).
    """
    if bound <= max(keys.size, 1024):
        occupied = np.bincount(keys, minlength=bound) > 0
        rank = np.cumsum(occupied) - 1
        return rank[keys], int(rank[-1]) + 1
    unique, ids = np.unique(keys, return_inverse=True)
    return ids.ravel().astype(np.int64), int(unique.size)


@dataclass(frozen=True)
class UniformGrid:
    """``n_bins`` equal bins per coordinate on the first m - 1 coordinates; occupied cells only."""

    n_bins: int = 10
    data_independent = True

    def coordinate_bins(self, values: np.ndarray) -> np.ndarray:
        """Bin of each value in [0, 1]: [k/M, (k+1)/M), 1 in the last bin."""
        return bin_ids_from_edges(values, equal_width_edges(self.n_bins), closed="left")

    def cells(self, probs) -> tuple[np.ndarray, int]:
        p = _check_probs(probs)
        m = check_positive_int(self.n_bins, "n_bins")
        keys, bound = np.zeros(p.shape[0], dtype=np.int64), 1
        for j in range(p.shape[1] - 1):
            if bound * m >= _KEY_LIMIT:
                keys, bound = _compact(keys, bound)
            keys = keys * m + self.coordinate_bins(p[:, j])
            bound *= m
        return _compact(keys, bound)


@dataclass(frozen=True)
class Triangles:
    """The k^2 equal triangles of the 2-simplex; ids are fixed: k(k+1)/2 upward, then k(k-1)/2 downward."""

    k: int = 5
    data_independent = True

    def cells(self, probs) -> tuple[np.ndarray, int]:
        p = _check_probs(probs)
        if p.shape[1] != 3:
            raise CalibInputError(f"triangle bins need 3-class predictions (use a lens); got {p.shape[1]} columns")
        k = check_positive_int(self.k, "k")
        edges = equal_width_edges(k)
        a1 = bin_ids_from_edges(p[:, 0], edges, closed="left")
        a2 = bin_ids_from_edges(p[:, 1], edges, closed="left")
        # A lattice vertex with p3 = 0 can give a1 + a2 = k: it belongs to an upward triangle below it.
        vertex = a1 + a2 >= k
        a1 = np.where(vertex & (a1 > 0), a1 - 1, a1)
        a2 = np.where(vertex & (a1 + a2 >= k), a2 - 1, a2)
        frac = (k * p[:, 0] - a1) + (k * p[:, 1] - a2)
        upward = frac <= 1.0 + _SHARED_EDGE_TOLERANCE
        up_id = a1 * k - a1 * (a1 - 1) // 2 + a2
        down_id = k * (k + 1) // 2 + a1 * (k - 1) - a1 * (a1 - 1) // 2 + a2
        return np.where(upward, up_id, down_id).astype(np.int64), k * k

    def vertices(self) -> np.ndarray:
        """Barycentric corners of every cell, shape (k^2, 3, 3), in id order."""
        k = check_positive_int(self.k, "k")
        cells = []
        for a1 in range(k):
            for a2 in range(k - a1):
                base = np.array([a1, a2, k - 1 - a1 - a2])
                cells.append([base + e for e in np.eye(3, dtype=int)])
        for a1 in range(k - 1):
            for a2 in range(k - 1 - a1):
                base = np.array([a1, a2, k - 2 - a1 - a2])
                cells.append([base + 1 - e for e in np.eye(3, dtype=int)])
        return np.array(cells, dtype=np.float64) / k


@dataclass(frozen=True)
class SplitTree:
    """A fitted recursive partition: node arrays (-1 marks a leaf's axis and a split's leaf id)."""

    axis: np.ndarray
    threshold: np.ndarray
    low: np.ndarray
    high: np.ndarray
    leaf: np.ndarray

    @property
    def n_leaves(self) -> int:
        return int(np.count_nonzero(self.leaf >= 0))

    def assign(self, probs) -> np.ndarray:
        """Leaf id of each row of ``probs``, descending from the root one level at a time."""
        p = _check_probs(probs)
        node = np.zeros(p.shape[0], dtype=np.int64)
        inner = self.leaf[node] < 0
        while inner.any():
            at = node[inner]
            below = _below(p[np.flatnonzero(inner), self.axis[at]], self.threshold[at])
            node[inner] = np.where(below, self.low[at], self.high[at])
            inner = self.leaf[node] < 0
        return self.leaf[node]


# Coordinates whose variances agree to this relative precision tie (rounding cannot order them).
_VARIANCE_TIE = 1e-9
# Values within this of a split threshold go above it: values equal up to rounding (e.g. the same
# posterior from shifted logits) are never separated, and a value at the mean stays on one side.
_THRESHOLD_TIE = 1e-12


def _below(values: np.ndarray, threshold) -> np.ndarray:
    """Which ``values`` fall below a split ``threshold`` (those within _THRESHOLD_TIE of it do not)."""
    return values < threshold - _THRESHOLD_TIE


def _split(columns: np.ndarray, centre) -> tuple[int, float]:
    """Coordinate of highest variance (variances equal to ``_VARIANCE_TIE``: the lowest index) and its
    centre, for a node's points given as ``columns`` (m, n), one coordinate per row. Rounding of the
    centre with the summation order is absorbed by the ``_THRESHOLD_TIE`` band."""
    mean = columns.sum(axis=1) / columns.shape[1]
    centred = columns - mean[:, None]
    variances = np.einsum("ij,ij->i", centred, centred)  # n times the variances: same order, same ties
    j = int(np.argmax(variances >= variances.max() * (1.0 - _VARIANCE_TIE)))
    return j, float(mean[j] if centre is np.mean else centre(columns[j]))


@dataclass(frozen=True)
class DataDependent:
    """Recursive splits at the mean (or median) of the highest-variance coordinate until n < min_size."""

    min_size: int = 1000
    threshold: str = "mean"
    data_independent = False

    def fit(self, probs) -> tuple[SplitTree, np.ndarray]:
        """The tree and the leaf id of each fitted point."""
        p = _check_probs(probs)
        min_size = check_positive_int(self.min_size, "min_size", minimum=2)
        check(self.threshold, Choice(THRESHOLDS), "threshold")
        centre = np.mean if self.threshold == "mean" else np.median
        # One coordinate per row: a node's sums and variances then run over contiguous memory. No copy
        # when ``probs`` is already column-major (resampling code passes its draws that way).
        columns = np.ascontiguousarray(p.T)
        axis, threshold, low, high, leaf = [], [], [], [], []
        ids = np.empty(p.shape[0], dtype=np.int64)
        stack = [(np.arange(p.shape[0]), 0)]
        for arrays in (axis, threshold, low, high, leaf):
            arrays.append(-1)
        n_leaves = 0
        while stack:
            members, node = stack.pop()
            if members.size >= min_size:
                sub = columns if node == 0 else columns.take(members, axis=1)  # the root holds every point
                j, t = _split(sub, centre)
                below = _below(sub[j], t)
                n_below = int(np.count_nonzero(below))
                if 0 < n_below < members.size:
                    lo, hi = len(axis), len(axis) + 1
                    for arrays in (axis, threshold, low, high, leaf):
                        arrays += [-1, -1]
                    axis[node], threshold[node], low[node], high[node] = j, t, lo, hi
                    stack += [(members[~below], hi), (members[below], lo)]
                    continue
            leaf[node] = n_leaves
            ids[members] = n_leaves
            n_leaves += 1
        tree = SplitTree(*(np.array(a) for a in (axis, threshold, low, high)), leaf=np.array(leaf))
        return tree, ids

    def cells(self, probs) -> tuple[np.ndarray, int]:
        tree, ids = self.fit(probs)
        return ids, tree.n_leaves
