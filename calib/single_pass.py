"""Compiled single-pass loops (numba) for validating and binning large score arrays.

numpy checks and bins N scores in many passes: a minimum, a maximum, row sums, an argmax that
reduces each short row separately, bin location, three ``bincount``s. At 10^6 x 10 these passes,
not the arithmetic, are the time. Here one loop checks the probabilities and one bins them, each
reading every score once, with the same answers bit for bit: values are located with the
arithmetic of :func:`calib.binning.locate`, and each bin adds its scores in row order, as
``np.bincount`` does.

Callers use them from :data:`calib.validation.COMPILED_MIN_VALUES` entries on (numba's import and
the load of its cached machine code, about 0.3 s once per process, would dominate smaller inputs)
and import this module only then, so a small job never loads numba. numba is a dependency
because no numpy expression fuses these passes, and a maintained JIT beats a hand-built C extension.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def probability_rows_summary(probs):
    """(min entry, max entry, min row sum, max row sum) of an (N, K) matrix; NaN anywhere gives NaN
    for the entries (comparisons with NaN fail, so NaN is carried explicitly). Row sums add the
    columns left to right, which may differ from numpy's order by a few ulps (see
    :func:`calib.validation._on_simplex_compiled`)."""
    lo, hi = np.inf, -np.inf
    low_sum, high_sum = np.inf, -np.inf
    nan = False
    for i in range(probs.shape[0]):
        total = 0.0
        for j in range(probs.shape[1]):
            v = probs[i, j]
            total += v
            lo = min(lo, v)
            hi = max(hi, v)
            nan |= v != v
        low_sum = min(low_sum, total)
        high_sum = max(high_sum, total)
    if nan:
        return np.nan, np.nan, np.nan, np.nan
    return lo, hi, low_sum, high_sum


@njit(inline="always")
def _count_below(edges, m, v, inclusive):
    """``np.searchsorted(edges, v, "right" if inclusive else "left")`` for M + 1 edges near k / M,
    as :func:`calib.binning.locate` counts them (branch-free)."""
    k = min(max(int(v * m), 0), m - 1)
    lower, upper = edges[k], edges[k + 1]
    return k + (lower < v) + (upper < v) + inclusive * ((lower == v) + (upper == v))


@njit(inline="always")
def _snapped(edges, m, v, tolerance):
    """v, or the edge within ``tolerance`` of it, as :func:`calib.binning.bin_ids_from_edges` snaps
    it: for edges near k / M the only edge that close to v is edge round(M v)."""
    nearest = min(max(int(v * m + 0.5), 0), m)
    return edges[nearest] if abs(v - edges[nearest]) <= tolerance else v


@njit(inline="always")
def _top_label(probs, i):
    """(max_k q_ik, argmax_k q_ik with ties to the lowest k)."""
    best, top = probs[i, 0], 0
    for j in range(1, probs.shape[1]):
        if probs[i, j] > best:
            best, top = probs[i, j], j
    return best, top


# Two loops per input form: binning by exact edges with snapping (calibration_error) and by a
# library preset's edges (ece_presets). One loop with both rules behind runtime flags ran 3x slower.


@njit(cache=True, nogil=True, boundscheck=False)
def snapped_bin_sums(values, outcomes, edges, inclusive, tolerance):
    """Per-bin (count, sum of values, sum of outcomes) of 1-D ``values`` in M = len(edges) - 1 bins;
    a value within ``tolerance`` of an edge is binned as on it (its own value is summed)."""
    m = edges.size - 1
    counts, value_sums, outcome_sums = np.zeros(m, np.int64), np.zeros(m), np.zeros(m)
    for i in range(values.size):
        v = values[i]
        b = min(max(_count_below(edges, m, _snapped(edges, m, v, tolerance), inclusive) - 1, 0), m - 1)
        counts[b] += 1
        value_sums[b] += v
        outcome_sums[b] += outcomes[i]
    return counts, value_sums, outcome_sums


@njit(cache=True, nogil=True, boundscheck=False)
def top_label_snapped_bin_sums(probs, labels, edges, inclusive, tolerance):
    """:func:`snapped_bin_sums` of the top-label confidence against argmax == label."""
    m = edges.size - 1
    counts, value_sums, outcome_sums = np.zeros(m, np.int64), np.zeros(m), np.zeros(m)
    for i in range(probs.shape[0]):
        v, top = _top_label(probs, i)
        b = min(max(_count_below(edges, m, _snapped(edges, m, v, tolerance), inclusive) - 1, 0), m - 1)
        counts[b] += 1
        value_sums[b] += v
        outcome_sums[b] += top == labels[i]
    return counts, value_sums, outcome_sums


@njit(cache=True, nogil=True, boundscheck=False)
def preset_bin_sums(values, outcomes, edges, n_slots, inclusive, round32):
    """Per-slot (count, sum of values, sum of outcomes), slot = (edges at or below v) - 1 clipped to
    [0, n_slots) as :mod:`calib.ece_presets` bins; ``round32`` rounds each value to float32 first
    (and sums the rounded values)."""
    m = edges.size - 1
    counts, value_sums, outcome_sums = np.zeros(n_slots, np.int64), np.zeros(n_slots), np.zeros(n_slots)
    for i in range(values.size):
        v = np.float64(np.float32(values[i])) if round32 else values[i]
        b = min(max(_count_below(edges, m, v, inclusive) - 1, 0), n_slots - 1)
        counts[b] += 1
        value_sums[b] += v
        outcome_sums[b] += outcomes[i]
    return counts, value_sums, outcome_sums


@njit(cache=True, nogil=True, boundscheck=False)
def top_label_preset_bin_sums(probs, labels, edges, n_slots, inclusive, round32):
    """:func:`preset_bin_sums` of the top-label confidence against argmax == label."""
    m = edges.size - 1
    counts, value_sums, outcome_sums = np.zeros(n_slots, np.int64), np.zeros(n_slots), np.zeros(n_slots)
    for i in range(probs.shape[0]):
        best, top = _top_label(probs, i)
        v = np.float64(np.float32(best)) if round32 else best
        b = min(max(_count_below(edges, m, v, inclusive) - 1, 0), n_slots - 1)
        counts[b] += 1
        value_sums[b] += v
        outcome_sums[b] += top == labels[i]
    return counts, value_sums, outcome_sums
