"""Binary forecasts with integer sample weights, for the tests that weights equal repeated rows."""

from __future__ import annotations

import numpy as np


def weighted_rows(seed: int, n: int = 60, *, ties: bool = True, power: float = 1.0):
    """Scores x in [0, 1] (rounded to one decimal with ``ties``, to force ties), binary outcomes of probability
    x ** ``power`` (1: calibrated) and integer weights 0..4, the first three 0."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=n)
    if ties:
        x = np.round(x, 1)
    y = (rng.uniform(size=n) < x**power).astype(np.float64)
    w = rng.integers(0, 5, size=n)
    w[:3] = 0
    return x, y, w
