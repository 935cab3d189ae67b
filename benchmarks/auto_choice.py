"""How often `calib calibrate --method auto` leaves temperature scaling: its size when temperature scaling is the
true model, and its power against a bias per class, which temperature scaling cannot undo.

Run: ``python benchmarks/auto_choice.py``; the last results are in ``benchmarks/auto_choice.md`` (the README's
calibrator paragraph quotes them). Each data set: N = 400 rows of K = 5 classes, calibrated logits c (a unit
normal per class plus 1.5 on a drawn class), labels drawn from softmax(c), and given scores 2.5 (c + s) plus a
normal offset per row, with s a bias per class drawn with the standard deviation of the row (s = 0: temperature
scaling recovers the truth exactly). :func:`calib.calibrators.selection.choose_calibrator` chooses among
temperature, dp, vector and vector_clr on 5 seeded folds; 200 data sets at s = 0, 100 at each other level,
each from its own seed. Not part of the test suite.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from scipy.special import log_softmax  # noqa: E402

from calib.calibrators.selection import choose_calibrator  # noqa: E402

K, N = 5, 400
CANDIDATES = ["temperature", "dp", "vector", "vector_clr"]
LEVELS = {0.0: 200, 0.25: 100, 0.5: 100, 1.0: 100}


def data_set(bias_sd: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    shift = bias_sd * rng.normal(size=K)
    calibrated = rng.normal(size=(N, K)) + 1.5 * np.eye(K)[rng.integers(0, K, N)]
    cdf = np.cumsum(np.exp(log_softmax(calibrated, axis=1)), axis=1)
    labels = np.minimum((rng.random(N)[:, None] >= cdf).sum(axis=1), K - 1)
    return 2.5 * (calibrated + shift) + rng.normal(size=(N, 1)), labels


def main() -> None:
    lines = [
        "# `--method auto`: how often it leaves temperature scaling",
        "",
        "Written by `python benchmarks/auto_choice.py` (K = 5, N = 400, candidates temperature, dp, vector, "
        "vector_clr; s: the standard deviation of a bias per class in the scores).",
        "",
        "| s | data sets | temperature kept | another chosen | rate |",
        "|---|---|---|---|---|",
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for level, count in LEVELS.items():
            chosen = [
                choose_calibrator(*data_set(level, 10_000 * (i + 1) + int(100 * level)), kind="logits",
                                  candidates=CANDIDATES)[0]
                for i in range(count)
            ]  # fmt: skip
            left = sum(name != "temperature" for name in chosen)
            lines.append(f"| {level:g} | {count} | {count - left} | {left} | {left / count:.2f} |")
            print(lines[-1], flush=True)
    (Path(__file__).resolve().parent / "auto_choice.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
