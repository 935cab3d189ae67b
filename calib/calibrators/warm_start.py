"""Warm start for the Newton fits on many rows: the same fit on an evenly strided subset first.

Far from the optimum, a Newton iteration on all N rows finds little more than one on a few
thousand of them. So the softmax-regression fits (vector, matrix, Dirichlet) first solve their
problem on every s-th row, to a loose tolerance, and then iterate on all rows from there, starting
from that subset's Hessian (see :func:`calib.calibrators.matrix_scaling.minimize_objective`). The
optimum reached is that of the full problem: the subset only chooses where the full iterations
begin and the curvature they start with. ``python benchmarks/hand_tuned.py --only fits`` compares
the fits with exact Newton from the identity map (same training loss to 1e-12).
"""

from __future__ import annotations

import numpy as np

# The subset has at least this many rows, and ROWS_PER_PARAMETER rows per fitted parameter.
WARM_START_ROWS = 4096
ROWS_PER_PARAMETER = 40
# Below this stride the subset costs too large a share of a full iteration to pay for itself.
MIN_STRIDE = 4
# The subset's fit stops at this Newton decrement: its optimum is farther than that from the
# full one anyway (decrement ~ parameters / (2 x subset rows) there), so more digits would be wasted.
WARM_START_TOL = 1e-6


def warm_start_rows(labels: np.ndarray, n_classes: int, n_params: int) -> slice | None:
    """Every s-th row, s = N // max(WARM_START_ROWS, ROWS_PER_PARAMETER x n_params), or None when s
    is below MIN_STRIDE or the subset misses a class present in the data (its parameters would run off)."""
    stride = labels.size // max(WARM_START_ROWS, ROWS_PER_PARAMETER * n_params)
    if stride < MIN_STRIDE:
        return None
    rows = slice(0, None, stride)
    present = np.bincount(labels, minlength=n_classes) > 0
    if not np.array_equal(np.bincount(labels[rows], minlength=n_classes) > 0, present):
        return None
    return rows
