"""Expected miscalibration and its plug-in estimator: Vaicenavicius et al. (2019), eqs. 5 and 6.

eta_d = E[d(r(g(X)), g(X))] (eq. 5) is estimated over a partition {Phi_i} of the simplex by

    eta_hat_d = sum_i p_i d(r_i, g_i)                                              (eq. 6)

with p_i the share of predictions in cell i, g_i their mean and r_i the frequency of each class
among their labels (the histogram regression estimate of r, Sect. 3.3). Empty cells have p_i = 0
and contribute nothing (the paper's convention; they are never formed here, so never NaN).
Distances: ``tv`` = 1/2 ||.||_1 (with the maximum lens and equal bins this is Guo et al.'s ECE),
``l2`` = ||.||_2 and ``sq_l2`` = ||.||_2^2. The tables the paper labels "squared Euclidean" match
``l2``: under the maximum lens their ratio to TV is about sqrt 2, as ||(a, -a)||_2 = sqrt 2 TV (e.g.
0.054 / 0.038 for DenseNet with equal bins, Table 3), where a squared distance would be far below TV.
So both exist.

Everything works on integer cell ids (:mod:`calib.calibration_errors.simplex_binning`) and ``bincount``; the batch form
evaluates many resamples of a fixed partition at once from their (B, N) index matrix.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calib.calibration_errors.lenses import Canonical, Lens
from calib.validation import CalibInputError, Choice, check

DISTANCES = ("tv", "l2", "sq_l2")


def distance(a, b, name: str) -> np.ndarray:
    """Row-wise d(a, b) for (..., m) arrays: ``tv``, ``l2`` or ``sq_l2``."""
    check(name, Choice(DISTANCES), "distance")
    diff = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if name == "tv":
        return 0.5 * np.abs(diff).sum(axis=-1)
    if name == "l2":
        return np.sqrt(np.square(diff).sum(axis=-1))
    return np.square(diff).sum(axis=-1)


def check_distances(distances) -> tuple[str, ...]:
    """``distances`` as a non-empty tuple of known names (a single name is accepted)."""
    names = (distances,) if isinstance(distances, str) else tuple(distances)
    unknown = [d for d in names if d not in DISTANCES]
    if not names or unknown:
        raise CalibInputError(f"distance must be one or more of {DISTANCES}; got {list(names)}")
    return names


@dataclass(frozen=True)
class CellStatistics:
    """Per cell: count, mean prediction (L, m) and outcome frequency (L, m); zeros in empty cells."""

    counts: np.ndarray
    mean_prediction: np.ndarray
    frequency: np.ndarray

    @property
    def share(self) -> np.ndarray:
        """p_i: each cell's share of the predictions."""
        return self.counts / self.counts.sum()

    def estimate(self, name: str = "tv") -> float:
        """eta_hat_d (eq. 6) over these cells."""
        return float(np.sum(self.share * distance(self.frequency, self.mean_prediction, name)))


def cell_statistics(probs: np.ndarray, labels: np.ndarray, ids: np.ndarray, n_cells: int) -> CellStatistics:
    """Counts, mean predictions and label frequencies per cell id in [0, n_cells), by ``bincount``."""
    counts, sums, hits = _cell_sums(probs, ids, n_cells, np.arange(len(labels))[None, :], labels[None, :])
    safe = np.maximum(counts[0], 1)[:, None]
    return CellStatistics(counts[0], sums[0] / safe, hits[0] / safe)


def _flat_cell_sums(probs, cells, size: int, rows, labels):
    """Counts (size,), summed predictions (size, m) and label counts (size, m) of ``size`` cells numbered
    across B resamples: ``cells`` (B, N) is the cell of each drawn point ``rows`` (B, N) with ``labels``
    (B, N). ``bincount`` adds each cell's points in draw order, so a cell's sums have the same bits
    whether its resample is counted alone or with others."""
    m = probs.shape[1]
    flat = cells.ravel()
    counts = np.bincount(flat, minlength=size)
    if probs.flags.f_contiguous:  # resampling code passes column-major predictions: gather from whole columns
        weights = (probs[:, j].take(rows).ravel() for j in range(m))
    else:  # row-major: index column by column rather than copy a possibly large array on every call
        weights = (probs[rows, j].ravel() for j in range(m))
    sums = np.stack([np.bincount(flat, weights=w, minlength=size) for w in weights], axis=1)
    hits = np.bincount(flat * m + labels.ravel(), minlength=size * m).reshape(size, m)
    return counts, sums, hits


def _cell_sums(probs, ids, n_cells, rows, labels):
    """For B resamples (``rows`` (B, N) indexes ``probs``/``ids``; ``labels`` (B, N)): counts (B, L),
    summed predictions (B, L, m) and label counts (B, L, m) per cell."""
    b, m = rows.shape[0], probs.shape[1]
    counts, sums, hits = _flat_cell_sums(probs, ids[rows] + n_cells * np.arange(b)[:, None], b * n_cells, rows, labels)
    return counts.reshape(b, n_cells), sums.reshape(b, n_cells, m), hits.reshape(b, n_cells, m)


def _estimates(counts, sums, hits, owner, n_resamples: int, n_points: int, distances) -> np.ndarray:
    """eta_hat of each resample (n_resamples, len(distances)) from per-cell sums; ``owner`` is each
    cell's resample, and a resample's cells are consecutive and in order."""
    occupied = counts > 0
    n, owner = counts[occupied], owner[occupied]
    mean, freq = sums[occupied] / n[:, None], hits[occupied] / n[:, None]
    return (
        np.stack(
            [np.bincount(owner, weights=n * distance(freq, mean, d), minlength=n_resamples) for d in distances],
            axis=1,
        )
        / n_points
    )


def batch_estimates(probs, ids, n_cells: int, rows, labels, distances: tuple[str, ...]) -> np.ndarray:
    """eta_hat of B resamples of a fixed partition at once, shape (B, len(distances)).

    Resample b holds the points ``rows[b]`` (their cells ``ids[rows[b]]``) with labels ``labels[b]``.
    """
    b, m = rows.shape[0], probs.shape[1]
    counts, sums, hits = _cell_sums(probs, ids, n_cells, rows, labels)
    flat = (counts.ravel(), sums.reshape(b * n_cells, m), hits.reshape(b * n_cells, m))
    return _estimates(*flat, np.repeat(np.arange(b), n_cells), b, rows.shape[1], distances)


def relabelled_estimates(probs, ids, n_cells: int, labels, distances: tuple[str, ...]) -> np.ndarray:
    """eta_hat of B resamples that keep every prediction and redraw its label, shape (B, len(distances)).

    Resample b holds all N points of ``probs`` (cells ``ids``) with labels ``labels[b]`` (B, N). A
    cell's count and summed predictions do not depend on the labels, so they are counted once and
    only the label counts per resample; the values are those of :func:`batch_estimates` with
    ``rows[b] = arange(N)``, bit for bit (the same points are added in the same order).
    """
    b, n = labels.shape
    m = probs.shape[1]
    counts, sums, _ = _flat_cell_sums(probs, ids[None, :], n_cells, np.arange(n)[None, :], labels[:1])
    cells = ids[None, :] + n_cells * np.arange(b)[:, None]
    hits = np.bincount((cells * m + labels).ravel(), minlength=b * n_cells * m).reshape(b * n_cells, m)
    owner = np.repeat(np.arange(b), n_cells)
    return _estimates(np.tile(counts, b), np.tile(sums, (b, 1)), hits, owner, b, n, distances)


def refitted_estimates(probs, cells, n_cells, rows, labels, distances: tuple[str, ...]) -> np.ndarray:
    """eta_hat of B resamples, each over a partition of its own, shape (B, len(distances)).

    Resample b holds the points ``rows[b]`` with labels ``labels[b]``; ``cells[b]`` (N,) is the cell of
    each of them in its partition of ``n_cells[b]`` cells (ids in [0, n_cells[b])). The same values,
    bit for bit, as :func:`batch_estimates` of each resample alone over its drawn points.
    """
    n_cells = np.asarray(n_cells, dtype=np.int64)
    offsets = np.cumsum(n_cells) - n_cells
    counts, sums, hits = _flat_cell_sums(probs, cells + offsets[:, None], int(n_cells.sum()), rows, labels)
    owner = np.repeat(np.arange(n_cells.size), n_cells)
    return _estimates(counts, sums, hits, owner, n_cells.size, rows.shape[1], distances)


def batch_deviations(probs, ids, n_cells: int, rows, labels, column: int) -> np.ndarray:
    """Per-cell deviation r_i - g_i of one class ``column`` for B resamples, (B, L); NaN where empty."""
    counts, sums, hits = _cell_sums(probs, ids, n_cells, rows, labels)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (hits[..., column] - sums[..., column]) / np.where(counts > 0, counts, np.nan)


def expected_miscalibration(
    scores, labels, *, kind: str, binning, distance: str = "tv", lens: Lens | None = None
) -> float:
    """eta_hat_d (eq. 6) of the problem induced by ``lens`` (default canonical) over ``binning``.

    ``binning`` is a :mod:`calib.calibration_errors.simplex_binning` scheme, e.g. ``UniformGrid(10)`` or
    ``DataDependent(1000)``. With ``lens=TopK(1)``, ``UniformGrid(M)`` and ``distance="tv"`` this is
    the top-label ECE with M left-closed equal-width bins.
    """
    check_distances(distance)
    problem = (lens or Canonical())(scores, labels, kind=kind)
    ids, n_cells = binning.cells(problem.probs)
    return cell_statistics(problem.probs, problem.labels, ids, n_cells).estimate(distance)
