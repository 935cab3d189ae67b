"""What subgroups and the search for the worst segment cost: ``calib.evaluate`` of the same 10^6 rows of a
binary model without groups, with one group column of 10 values, and with two columns (10 and 5 values)
crossed (10 + 5 + 50 segments), each with the search's default 200 outcome draws and with its fewest (19);
wall and CPU seconds of one run each, and the ratio to the run without groups.

Run: ``python benchmarks/segment_cost.py`` (about a minute; writes ``benchmarks/segment_cost.md``), on an
otherwise idle machine.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import numpy as np  # noqa: E402

import calib  # noqa: E402

ROWS = 10**6


def data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Calibrated forecasts (n, 2), outcomes and two group columns (10 and 5 values)."""
    rng = np.random.default_rng(0)
    p = rng.uniform(0.02, 0.98, ROWS)
    y = (rng.random(ROWS) < p).astype(int)
    return np.column_stack([1 - p, p]), y, np.column_stack([rng.integers(0, 10, ROWS), rng.integers(0, 5, ROWS)])


def timed(**options) -> tuple[float, float]:
    """(wall, CPU) seconds of one evaluation with ``options``."""
    probs, y, groups = data()
    if "columns" in options:
        columns = options.pop("columns")
        options |= {"groups": groups[:, :columns] if columns > 1 else groups[:, 0],
                    "group_column": ("a", "b")[:columns] if columns > 1 else "a"}  # fmt: skip
    wall, cpu = time.perf_counter(), time.process_time()
    calib.evaluate(probs, y, kind="probs", n_boot=0, calibrators=(), **options)
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    runs = {
        "(a) no groups": {},
        "(b) one column, 10 segments, 200 draws": {"columns": 1},
        "(c) one column, 10 segments, 19 draws": {"columns": 1, "search_draws": 19},
        "(d) two columns crossed, 65 segments, 200 draws": {"columns": 2},
        "(e) two columns crossed, 65 segments, 19 draws": {"columns": 2, "search_draws": 19},
    }
    timed(columns=2, search_draws=19)  # a first run warms the imports and caches up, untimed
    times = {name: timed(**options) for name, options in runs.items()}
    base = times["(a) no groups"]
    lines = [
        f"{ROWS:.0e} rows x 2 classes in memory, `n_boot=0, calibrators=()`; load average "
        f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}, {os.cpu_count()} CPUs",
        "",
        "| run | wall (s) | CPU (s) | ratio to (a) |",
        "|---|---:|---:|---:|",
    ]
    for name, (wall, cpu) in times.items():
        ratio = "" if name.startswith("(a)") else f"{wall / base[0]:.2f} (CPU {cpu / base[1]:.2f})"
        lines.append(f"| {name} | {wall:.2f} | {cpu:.2f} | {ratio} |")
    text = "\n".join(lines) + "\n"
    (HERE / "segment_cost.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
