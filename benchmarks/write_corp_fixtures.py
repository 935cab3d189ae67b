"""Store model-diagnostics' CORP score decompositions, so the suite can check calib against them.

model-diagnostics (PyPI) decomposes a scoring function's mean into miscalibration, discrimination
and uncertainty from an isotonic recalibration, as Dimitriadis et al. (2021) do. It depends on
polars, which the test extra does not need otherwise, so its numbers are stored once here: for each
input recipe below (seeded binary forecasts, some with ties, some miscalibrated) the four numbers of
``decompose`` with ``SquaredError`` and ``LogLoss``, with the peer's version. The tests draw the
same inputs from the recipes (they import this file, which needs only numpy until ``main`` runs)
and compare ``calib.calibration_errors.corp.corp_decomposition`` with the stored values.

Rerun after a model-diagnostics release or a recipe change, from the repository root, in a scratch
virtualenv::

    pip install -e . model-diagnostics && python benchmarks/write_corp_fixtures.py
"""

from __future__ import annotations

import json
import platform
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np

OUTPUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "peers" / "corp_decomposition.json"

# name -> (n, seed, digits the scores are rounded to (None: continuous), exponent of the true curve)
CORP_INPUTS = {
    "calibrated": (2000, 0, None, 1.0),
    "overconfident": (2000, 1, None, 0.5),
    "underconfident ties": (3000, 2, 2, 2.0),
    "coarse ties": (1000, 3, 1, 1.5),
    "small": (50, 4, None, 1.0),
}


def corp_inputs(n: int, seed: int, digits: int | None, exponent: float) -> tuple[np.ndarray, np.ndarray]:
    """Scores uniform on [0, 1] (rounded to ``digits``), outcomes drawn with probability score**exponent."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(size=n)
    if digits is not None:
        x = np.round(x, digits)
    return x, (rng.uniform(size=n) < x**exponent).astype(np.float64)


def main() -> None:
    from model_diagnostics.scoring import LogLoss, SquaredError, decompose

    cases = []
    for name, recipe in CORP_INPUTS.items():
        x, y = corp_inputs(*recipe)
        for score, function in (("brier", SquaredError()), ("log", LogLoss())):
            row = decompose(y_obs=y, y_pred=x, scoring_function=function).row(0, named=True)
            cases.append({"input": name, "scoring": score, **{key: float(value) for key, value in row.items()}})
    data = {
        "peer": "model-diagnostics",
        "version": version("model-diagnostics"),
        "environment": {"python": platform.python_version(), "numpy": np.__version__, "polars": version("polars")},
        "inputs": {name: list(recipe) for name, recipe in CORP_INPUTS.items()},
        "cases": cases,
    }
    OUTPUT.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {OUTPUT} ({OUTPUT.stat().st_size} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
