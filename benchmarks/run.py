"""calib side by side with its peer libraries: same inputs, one run, one markdown table.

Run: ``python benchmarks/run.py`` (``--quick`` for small sizes and one repeat, about a minute;
``--repeats R``, default 5; ``--csv PATH`` also writes the table; ``--only SUBSTRING`` keeps the
operations whose name contains it). Peers: netcal, relplot, scikit-learn, uncertainty-calibration,
torchmetrics (CPU), betacal, psrcal and expected_cost; a missing one gets a row saying so.
dirichletcal does not install (broken setup.py). The calib benchmarked is this checkout's.

One row per (operation, n, peer): median wall time of calib and of the peer, speedup = peer / calib
(> 1: calib is faster), peak memory traced by tracemalloc in a separate untimed call (n/a for
torch-based peers, whose allocations tracemalloc does not see), the measured difference, the
tolerance it must meet, agree, the numbers of timed calib / peer calls (fewer than ``--repeats`` once
``--budget`` seconds are spent, e.g. relplot at 1e7), and a note. Every library runs on one thread:
OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and MKL_NUM_THREADS are set to 1 before numpy loads and
torch.set_num_threads(1). Progress goes to stderr, the table to stdout. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

for _threads in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_threads] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd  # noqa: E402
from calibrator_cases import binary_cases, multiclass_cases  # noqa: E402
from harness import optional_module, progress, run_case  # noqa: E402
from metric_cases import (  # noqa: E402
    binned_ece_cases,
    bootstrap_cases,
    consistency_cases,
    corp_cases,
    mmce_cases,
    skce_cases,
    smooth_ece_cases,
)


@dataclass(frozen=True)
class Sizes:
    """Sample sizes (and resample counts) of every operation."""

    ece: tuple[int, ...]
    kernel: tuple[int, ...]
    dense_max: int
    bootstrap_n: int
    n_boot: int
    consistency_n: int
    n_resamples: int
    calibrator_n: int
    classes: tuple[int, ...]
    isotonic_n: int


FULL = Sizes(
    ece=(10**4, 10**5, 10**6, 10**7),
    kernel=(10**3, 10**4, 10**5),
    dense_max=10**4,
    bootstrap_n=10**5,
    n_boot=1000,
    consistency_n=10**4,
    n_resamples=1000,
    calibrator_n=50_000,
    classes=(10, 100),
    isotonic_n=10**6,
)
QUICK = Sizes(
    ece=(10**4, 10**5),
    kernel=(10**3,),
    dense_max=10**3,
    bootstrap_n=10**4,
    n_boot=200,
    consistency_n=10**4,
    n_resamples=200,
    calibrator_n=5_000,
    classes=(10,),
    isotonic_n=10**5,
)


def all_cases(sizes: Sizes) -> list:
    return [
        *binned_ece_cases(sizes.ece),
        *smooth_ece_cases(sizes.ece),
        *corp_cases(sizes.ece[:3]),
        *skce_cases(sizes.kernel, sizes.dense_max),
        *mmce_cases(sizes.kernel, sizes.dense_max),
        *bootstrap_cases(sizes.bootstrap_n, sizes.n_boot),
        *consistency_cases(sizes.consistency_n, sizes.n_resamples),
        *multiclass_cases(sizes.calibrator_n, sizes.classes),
        *binary_cases(sizes.isotonic_n, sizes.calibrator_n),
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and 1 repeat (about a minute)")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per measurement (median)")
    parser.add_argument("--budget", type=float, default=60.0, help="stop repeating once this many seconds are spent")
    parser.add_argument("--csv", type=Path, help="also write the table to this CSV file")
    parser.add_argument("--only", help="run only the operations whose name contains this (case-insensitive)")
    args = parser.parse_args(argv)
    torch = optional_module("torch")
    if torch:
        torch.set_num_threads(1)
    warnings.simplefilter("ignore")  # peers' deprecation and convergence chatter; agreement is checked instead
    repeats = 1 if args.quick else args.repeats
    cases = all_cases(QUICK if args.quick else FULL)
    if args.only:
        cases = [case for case in cases if args.only.lower() in case.operation.lower()]
    rows = []
    for number, case in enumerate(cases, 1):
        progress(f"[{number}/{len(cases)}] {case.operation}, n={case.n}")
        rows += run_case(case, repeats=repeats, budget=args.budget)
    table = pd.DataFrame(rows)
    if args.csv:
        table.to_csv(args.csv, index=False)
    print(table.to_markdown(index=False, floatfmt=".3g"))


if __name__ == "__main__":
    main()
