"""Replay of the cross-validation folds of Ferrer & Ramos (2024) for their synthetic experiments.

Source: the code that accompanies Ferrer & Ramos (2024) (github.com/luferrer/expected_cost, named in the
paper as the source of all its plots and tables; commit 96253fe), ``create_scores_for_expts`` as coded.
Their xv folds are ``StratifiedKFold(5, shuffle=True)`` drawn from numpy's global stream, continuing
right after the data draw, one split per xv calibration, in the order: systems [cal, mcp, mc1,
mc1-mismatched, mcs, mcps] (mc1 is a variant the paper never shows), and per system the calibrators D, T
and, for K = 2 only, H. A split's consumption of the stream depends only on the labels, so the whole
sequence can be replayed from the labels and the generator's legacy RNG. With these folds the published
xv numbers (Table 1, Fig. 6) come out to the printed digit.
"""

from __future__ import annotations

import numpy as np

from calib.calibrators.folds import fold_ids

SYSTEM_ORDER = ("cal", "mcp", "mc1", "mc1-mismatched", "mcs", "mcps")


def authors_xv_folds(
    labels, legacy_rng: np.random.RandomState, *, n_folds: int = 5
) -> dict[tuple[str, str], np.ndarray]:
    """Fold ids for each (system, calibrator) the authors cross-validated, calibrator in {"D", "T", "H"}."""
    y = np.asarray(labels)
    calibrators = ("D", "T", "H") if np.unique(y).size == 2 else ("D", "T")
    return {
        (system, name): fold_ids(y, n_folds=n_folds, seed=legacy_rng) for system in SYSTEM_ORDER for name in calibrators
    }
