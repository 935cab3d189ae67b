"""The finite 3-class models of Vaicenavicius et al. (2019), Tables 1 and 2 (Examples 1 and 3).

Each example is a model with finitely many predictions g(X) (atoms, equally likely) and the true
conditional distribution P[Y in . | g(X)] at each. Example 1 (Table 1, Fig. 2) is calibrated under
the maximum lens and marginally for every class, but not canonically; Example 3 (Table 2, Fig. 5,
App. A.1) is calibrated under the maximum lens only. Numbers transcribed from the paper.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calib.validation import Choice, check


@dataclass(frozen=True)
class FiniteModel:
    """Atoms ``predictions`` (A, K) with probabilities ``weights`` and conditionals P[Y | g(X)] (A, K)."""

    predictions: np.ndarray
    conditionals: np.ndarray
    weights: np.ndarray


_EXAMPLES = {
    "table1": (
        [[0.1, 0.3, 0.6], [0.1, 0.6, 0.3], [0.3, 0.1, 0.6], [0.3, 0.6, 0.1], [0.6, 0.1, 0.3], [0.6, 0.3, 0.1]],
        [[0.2, 0.2, 0.6], [0.0, 0.7, 0.3], [0.2, 0.2, 0.6], [0.4, 0.5, 0.1], [0.7, 0.0, 0.3], [0.5, 0.4, 0.1]],
    ),
    "table2": ([[0.6, 0.1, 0.3], [0.4, 0.6, 0.0]], [[0.7, 0.2, 0.1], [0.3, 0.5, 0.2]]),
}


def finite_model(name: str) -> FiniteModel:
    """The example of the paper's ``table1`` or ``table2``."""
    check(name, Choice(tuple(sorted(_EXAMPLES))), "example")
    g, r = (np.array(a, dtype=np.float64) for a in _EXAMPLES[name])
    return FiniteModel(g, r, np.full(g.shape[0], 1.0 / g.shape[0]))
