"""Bin assignment on [0, 1] as integer ids.

Equal-width bins with an explicit edge rule. ``closed="right"`` gives bins (low, high], the
convention of Guo et al. (2017) and of the paper-000 authors' code, with 0 put in the first bin;
``closed="left"`` gives [low, high) with 1 put in the last bin. Ids come from ``searchsorted``
on the M + 1 edges of ``linspace(0, 1, M + 1)``, so a value on an edge lands exactly where the
comparison ``low < p <= high`` (or ``low <= p < high``) puts it.
"""

from __future__ import annotations

import numpy as np

from calib.validation import CalibInputError, check_positive_int

EDGE_RULES = ("right", "left")


def equal_width_edges(n_bins: int) -> np.ndarray:
    """The M + 1 edges of M equal-width bins on [0, 1]."""
    return np.linspace(0.0, 1.0, check_positive_int(n_bins, "n_bins") + 1)


def equal_width_bin_ids(values, n_bins: int, *, closed: str) -> np.ndarray:
    """Integer bin id in [0, n_bins) of each value in [0, 1]."""
    if closed not in EDGE_RULES:
        raise CalibInputError(f"closed must be one of {EDGE_RULES}; got {closed!r}")
    v = np.asarray(values, dtype=np.float64)
    if np.isnan(v).any() or np.any(v < 0) or np.any(v > 1):
        raise CalibInputError("values to bin must be probabilities in [0, 1] without NaN")
    edges = equal_width_edges(n_bins)
    side = "left" if closed == "right" else "right"
    return np.clip(np.searchsorted(edges, v, side=side) - 1, 0, n_bins - 1)
