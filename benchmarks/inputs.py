"""Synthetic, miscalibrated inputs for the benchmark (seed fixed, so every run sees the same data)."""

from __future__ import annotations

import numpy as np
from scipy.special import log_softmax

TRUE_TEMPERATURE = 1.7


def binary_problem(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(probs (n, 2), labels): p_1 ~ Beta(0.7, 0.7), label 1 with probability p_1 ** 1.5."""
    rng = np.random.default_rng(seed)
    p = rng.beta(0.7, 0.7, n)
    return np.column_stack([1.0 - p, p]), (rng.random(n) < p**1.5).astype(np.int64)


def draw_labels(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One label per row drawn from that row's probabilities (inverse CDF)."""
    below = rng.random(probs.shape[0])[:, None] > np.cumsum(probs, axis=1)
    return np.minimum(below.sum(axis=1), probs.shape[1] - 1)


def multiclass_problem(n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(log-probs (n, k), labels): logits ~ N(0, 2.5^2), labels drawn at temperature 1.7 (overconfident)."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 2.5
    labels = draw_labels(np.exp(log_softmax(logits / TRUE_TEMPERATURE, axis=1)), rng)
    return log_softmax(logits, axis=1), labels


def confidence_problem(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(confidences, outcomes): f ~ Beta(5, 1), outcome 1 with probability f - 0.03 (overconfident)."""
    rng = np.random.default_rng(seed)
    f = rng.beta(5.0, 1.0, n)
    return f, (rng.random(n) < f - 0.03).astype(np.float64)
