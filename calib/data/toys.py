"""The survey's worked examples as arrays (Silva Filho et al. (2023); facts transcribed from the paper).

- :func:`hallenbeck_1920`: Table 1, 123 precipitation forecasts in 10 bins, each forecast placed
  at its bin's centre (5 %, 15 %, ..., 95 % for "above 90"), as the survey does for Fig. 2.
- :func:`decomposition_toy`: Table 2, 10 instances of a 3-class problem with features X, one-hot
  labels, the optimal posteriors Q = (X1/4, X2/4, rest) and the model S = (0.3 X3, 0.1 X2, rest).
- :func:`ece_toy`: Table 3, 30 instances, 3 classes (ids 7 and 8 predict 1/3 each; the authors
  stored 0.33, available with ``one_third=0.33``).
- :func:`marker_pitfall`: Fig. 6, two 2-bin examples ((a) not calibrated, (b) calibrated).
- :func:`footnote2_toy`: footnote 2, classwise-calibrated but not confidence-calibrated.
Labels are 0-based class indices (the paper's class 1 is index 0).
"""

from __future__ import annotations

import numpy as np

# Table 1: bin lower bound (%), number of forecasts, number of rain events.
HALLENBECK_1920 = ((90, 1, 1), (80, 1, 1), (70, 7, 6), (60, 15, 11), (50, 13, 8), (40, 15, 8), (30, 18, 6),
                   (20, 31, 7), (10, 22, 4), (0, 0, 0))  # fmt: skip

_ECE_TOY = """
1.0 0.0 0.0 1|0.9 0.1 0.0 1|0.8 0.1 0.1 1|0.7 0.1 0.2 1|0.6 0.3 0.1 1|0.4 0.1 0.5 1|t t t 1|t t t 1|0.2 0.4 0.4 1
0.1 0.5 0.4 1|0.8 0.2 0.0 2|0.7 0.0 0.3 2|0.5 0.2 0.3 2|0.4 0.4 0.2 2|0.4 0.2 0.4 2|0.3 0.4 0.3 2|0.2 0.3 0.5 2
0.1 0.6 0.3 2|0.1 0.3 0.6 2|0.0 0.2 0.8 2|0.8 0.2 0.0 3|0.8 0.1 0.1 3|0.8 0.0 0.2 3|0.6 0.0 0.4 3|0.3 0.0 0.7 3
0.2 0.6 0.2 3|0.2 0.4 0.4 3|0.0 0.4 0.6 3|0.0 0.3 0.7 3|0.0 0.3 0.7 3
"""


def hallenbeck_1920() -> tuple[np.ndarray, np.ndarray]:
    """Forecast probabilities (bin centres) and rain outcomes (0/1) of Table 1, 123 forecasts."""
    probs, rain = [], []
    for low, n, rains in HALLENBECK_1920:
        centre = 0.95 if low == 90 else (low + 5) / 100
        probs += [centre] * n
        rain += [1] * rains + [0] * (n - rains)
    return np.array(probs), np.array(rain)


def decomposition_toy() -> dict[str, np.ndarray]:
    """Table 2: features ``x`` (10, 3), ``labels`` (10,), true posteriors ``q`` and model scores ``s``."""
    x = np.array([[3, 1, 3]] * 4 + [[2, 2, 2]] * 2 + [[0, 2, 2]] * 4, dtype=np.float64)
    labels = np.array([0, 0, 0, 1, 0, 1, 1, 1, 2, 2])
    q12 = 0.25 * x[:, :2]
    s12 = np.column_stack([0.3 * x[:, 2], 0.1 * x[:, 1]])
    q = np.column_stack([q12, 1.0 - q12.sum(axis=1)])
    s = np.column_stack([s12, 1.0 - s12.sum(axis=1)])
    return {"x": x, "labels": labels, "q": q, "s": s}


def ece_toy(one_third: float = 1.0 / 3.0) -> tuple[np.ndarray, np.ndarray]:
    """Table 3: scores (30, 3) and labels; ``one_third`` is what ids 7 and 8 predict for each class."""
    rows = [r.split() for r in _ECE_TOY.replace("\n", "|").strip("|").split("|")]
    scores = np.array([[one_third if v == "t" else float(v) for v in r[:3]] for r in rows])
    labels = np.array([int(r[3]) - 1 for r in rows])
    return scores, labels


def marker_pitfall() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Fig. 6: (scores, labels) of (a) 4 scores 0 (25 % positive) + 4 scores 1 (75 %), (b) one 0 and one 1."""
    a = (np.array([0.0] * 4 + [1.0] * 4), np.array([1, 0, 0, 0, 1, 1, 1, 0]))
    b = (np.array([0.0, 1.0]), np.array([0, 1]))
    return {"a": a, "b": b}


def footnote2_toy() -> tuple[np.ndarray, np.ndarray]:
    """Footnote 2: 40 instances in four groups of 10 with given class counts."""
    groups = [((0.3, 0.3, 0.4), (4, 2, 4)), ((0.4, 0.3, 0.3), (3, 4, 3)), ((0.4, 0.6, 0.0), (5, 5, 0)),
              ((0.3, 0.6, 0.1), (2, 7, 1))]  # fmt: skip
    scores = np.concatenate([np.tile(p, (10, 1)) for p, _ in groups])
    labels = np.concatenate([np.repeat(np.arange(3), counts) for _, counts in groups])
    return scores, labels
