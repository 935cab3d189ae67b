"""``calib evaluate`` of a partitioned prediction log on a Dask LocalCluster of 1, 2 and 4 workers, beside the
single-process out-of-core evaluation of the same log: rows per second and peak memory per worker.

Run from the repository root (needs ``pip install -e '.[dask]'``)::

    python benchmarks/dask_scaling.py write FOLDER --rows 1000000000     # the log: 60 files, 17 GB
    python benchmarks/dask_scaling.py run FOLDER --workers 0 1 2 4 -- --n-boot 0 --calibrators none

``write`` draws the log (seeded, two processes): files of 2^24 rows (row groups of 2^20) with columns
class_0, class_1 (float64 probabilities, p_1 ~ Beta(0.7, 0.7)) and label (int8, 1 with probability
p_1 ** 1.5; benchmarks/inputs.py's binary problem), file i from the seed's i-th child stream. ``run``
evaluates it once per setting, in this order: ``calib evaluate FOLDER`` in one process (reading the
folder in chunks; worker count 0), then for each worker count a LocalCluster of that many
single-threaded worker processes (started afresh, so each worker's peak is its own) and ``calib
evaluate FOLDER --scheduler ADDRESS``; arguments after ``--`` go to every ``calib evaluate``. It prints
a Markdown table: wall time of the command (start-up, reading, the client's finish: intervals,
calibrators, CORP), rows per second of the whole command, the command's peak RSS, the largest peak RSS
of the workers, and the largest relative difference of a metric or bound from the first run's. One
run each, on whatever else the machine is doing (printed: load average, CPUs). Not part of the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from inputs import binary_problem  # noqa: E402

FILE_ROWS = 1 << 24
GROUP_ROWS = 1 << 20


def write_file(folder: Path, index: int, rows: int, seed: int) -> None:
    """File ``index`` of the log: ``rows`` rows from the seed's ``index``-th child stream."""
    child = int(np.random.SeedSequence(seed, spawn_key=(index,)).generate_state(1)[0])
    probs, labels = binary_problem(rows, seed=child)
    frame = pd.DataFrame({"class_0": probs[:, 0], "class_1": probs[:, 1], "label": labels.astype(np.int8)})
    target = folder / f"part-{index:05d}.parquet"
    frame.to_parquet(target.with_suffix(".tmp"), index=False, row_group_size=GROUP_ROWS)
    target.with_suffix(".tmp").rename(target)


def write(folder: Path, rows: int, seed: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    sizes = [min(FILE_ROWS, rows - start) for start in range(0, rows, FILE_ROWS)]
    with ProcessPoolExecutor(max_workers=2) as pool:
        for index, size in enumerate(sizes):
            if not (folder / f"part-{index:05d}.parquet").exists():  # a stopped write resumes
                pool.submit(write_file, folder, index, size, seed)
    print(f"{folder}: {rows} rows in {len(sizes)} files", file=sys.stderr)


def command(folder: Path, extra: list[str], scheduler: str | None) -> tuple[float, float, dict]:
    """Run ``calib evaluate``: (wall seconds, peak RSS in MB, its JSON)."""
    args = [sys.executable, "-m", "calib.cli", "evaluate", str(folder), "--kind", "probs", "--json", *extra]
    if scheduler:
        args += ["--scheduler", scheduler]
    start = time.perf_counter()
    child = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"calib evaluate failed: {' '.join(args)}")
    return wall, usage.ru_maxrss / 1024, json.loads(out)


def run(folder: Path, workers: list[int], extra: list[str]) -> None:
    import pyarrow.parquet as pq
    from distributed import Client, LocalCluster

    rows_total = sum(pq.ParquetFile(file).metadata.num_rows for file in sorted(folder.glob("*.parquet")))
    results = []
    first = None  # the first run's JSON: every later run's output is compared with it
    if 0 in workers:
        wall, peak, first = command(folder, extra, None)
        row = {"evaluation": "one process, out of core", "workers": 0, "wall (s)": wall, "peak RSS (MB)": peak}
        results.append(row)
        print(row, file=sys.stderr, flush=True)
    for count in (count for count in workers if count > 0):
        with (
            LocalCluster(n_workers=count, threads_per_worker=1, dashboard_address=None, memory_limit=0) as cluster,
            Client(cluster) as client,
        ):
            wall, peak, there = command(folder, extra, cluster.scheduler_address)
            usage = client.run(resource.getrusage, resource.RUSAGE_SELF)
            worker_peak = max(u.ru_maxrss for u in usage.values()) / 1024
        row = {"evaluation": "Dask LocalCluster", "workers": count, "wall (s)": wall, "peak RSS (MB)": peak}
        first = there if first is None else first
        results.append(row | {"worker peak RSS (MB)": worker_peak, "largest difference": _difference(first, there)})
        print(results[-1], file=sys.stderr, flush=True)
    table = pd.DataFrame(results)
    table.insert(3, "rows/s", rows_total / table["wall (s)"])
    print(f"{rows_total} rows; calib evaluate {' '.join(extra)}")
    print(f"load average: {' '.join(f'{v:.2f}' for v in os.getloadavg())}, {os.cpu_count()} CPUs")
    print(table.to_markdown(index=False, floatfmt=".4g"))


def _difference(here: dict, there: dict) -> float:
    """The largest relative difference between two JSON documents' metric values and bounds."""
    worst = 0.0
    for metric, other in zip(here["metrics"], there["metrics"], strict=True):
        for field in ("value", "low", "high"):
            a, b = metric.get(field), other.get(field)
            if isinstance(a, float) and isinstance(b, float) and a != b:
                worst = max(worst, abs(a - b) / max(abs(a), abs(b)))
            elif a != b:
                return float("inf")
    return worst


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    w = commands.add_parser("write", help="write the log")
    w.add_argument("folder", type=Path)
    w.add_argument("--rows", type=float, default=1e9)
    w.add_argument("--seed", type=int, default=0)
    r = commands.add_parser("run", help="time the evaluations")
    r.add_argument("folder", type=Path)
    r.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2, 4], help="0: one process, out of core")
    argv = sys.argv[1:] if argv is None else argv
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []  # for calib evaluate
    args = parser.parse_args(argv[: len(argv) - len(extra) - (1 if extra else 0)])
    if args.command == "write":
        write(args.folder, int(args.rows), args.seed)
    else:
        run(args.folder, args.workers, extra)


if __name__ == "__main__":
    main()
