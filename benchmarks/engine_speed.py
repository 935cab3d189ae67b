"""The point pass of ``calib evaluate`` against plain pyarrow + numpy on a large binary Parquet table.

Run from the repository root: ``python benchmarks/engine_speed.py`` (``--rows 2e6`` for a quick run,
default 2e7; ``--keep DIR`` writes the file to DIR, or reuses the one already there, instead of a
temporary folder removed at the end). The input is seeded (benchmarks/inputs.py ``binary_problem``:
p_1 ~ Beta(0.7, 0.7), label 1 with probability p_1 ** 1.5), written as one Parquet table with columns
``class_0``, ``class_1`` (probabilities), ``label`` and ``weight`` (a seeded integer sample weight from 1 to
10, read by runs (f) to (h) only).

Four runs, each in a fresh process (wall time includes Python's start-up and imports):

(a) baseline: this file's :func:`baseline` in pyarrow + numpy only. It reads the three columns
    (``pyarrow.parquet.read_table``) into float64 / int64 arrays and computes the point metrics calib
    reports by default for K = 2 that are sums over all rows: accuracy, NCE, NBS, the normalized 0-1
    Bayes risk (priors the class frequencies), ECD, and the binned ECEs of the top label and of the
    positive class with their debiased squared forms, in 15 right-closed equal-width bins. Like calib it
    works from log-probabilities (one log of the (N, 2) scores, one exp back). It leaves out what calib
    computes on a seeded subsample of 10^6 rows (smooth ECE, squared MMCE, CORP and its MCB test) and the
    subsample itself, checking the probabilities, the reliability figure and the JSON / CSV output;
    those cost about the same whatever N is.
(b) ``calib evaluate FILE --n-boot 0 --calibrators none`` (the point pass alone);
(c) ``calib evaluate FILE --calibrators none`` (the default 200 Poisson resamples);
(d) ``calib evaluate FILE --calibrators none --n-boot 1000``;
(e) (c) with ``--metrics`` the metrics that are sums over the rows (:func:`summed_metrics`): the bootstrap of the
    pass alone, without the smooth ECE and MMCE resampled on their subsample (whose cost does not grow with N;
    the CORP decomposition and its MCB test are still computed on it).
(f), (g), (h): (b), (e) and (c) with ``--weights weight``: what sample weights cost, each against its
    unweighted run.

It prints a markdown table of wall and CPU times (user + system, of the child) with the ratios b / a,
c / b, d / b, e / b, f / b, g / e and h / c, and writes it to benchmarks/engine_speed.md. One run each, on
whatever else the machine does: the load average is printed with the table, and on a busy machine the CPU
times are the steadier measure. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
N_BINS = 15


def summed_metrics() -> list[str]:
    """The default metrics for K = 2 that are sums over the rows, as the registry declares them (run (e))."""
    sys.path.insert(0, str(ROOT))
    from calib.evaluation.metrics import REGISTRY, Context
    from calib.evaluation.settings import EvaluationSettings
    from calib.scoring.decisions import zero_one_costs

    ctx = Context(2, EvaluationSettings(), {"0-1": zero_one_costs(2)})
    return [name for d in REGISTRY.values() if d.terms is not None and d.applies(ctx) for name in d.names(ctx)]


def write_table(path: Path, rows: int) -> None:
    """The seeded binary table of ``rows`` rows at ``path`` (Parquet, default row groups)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from inputs import binary_problem

    probs, labels = binary_problem(rows, seed=0)
    weights = np.random.default_rng(1).integers(1, 11, rows)
    table = pa.table({"class_0": probs[:, 0], "class_1": probs[:, 1], "label": labels, "weight": weights})
    pq.write_table(table, path)


def _binned(scores: np.ndarray, outcomes: np.ndarray, n: int) -> tuple[float, float]:
    """(L1 ECE, debiased squared ECE) of ``scores`` against ``outcomes`` in N_BINS right-closed equal-width bins."""
    ids = np.clip(np.ceil(scores * N_BINS).astype(np.int64) - 1, 0, N_BINS - 1)
    counts = np.bincount(ids, minlength=N_BINS)
    gaps = np.bincount(ids, weights=outcomes - scores, minlength=N_BINS)
    hits = np.bincount(ids, weights=outcomes, minlength=N_BINS)
    ece = np.abs(gaps).sum() / n
    used = counts > 1
    frequency = hits[used] / counts[used]
    squared = (gaps[used] / counts[used]) ** 2 - frequency * (1 - frequency) / (counts[used] - 1)
    return float(ece), float((counts[used] * squared).sum() / n)


def baseline(path: Path) -> dict[str, float]:
    """The summed point metrics of the binary table at ``path`` in pyarrow + numpy (see the module docstring).

    Parameters
    ----------
    path : Path
        A table written by :func:`write_table`.

    Returns
    -------
    dict
        Metric name -> value.
    """
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=["class_0", "class_1", "label"])
    probs = np.column_stack([table.column(c).to_numpy() for c in ("class_0", "class_1")])
    y = table.column("label").to_numpy()
    del table
    n = y.size
    logp = np.log(probs)
    probs = np.exp(logp)
    prediction = (logp[:, 1] > logp[:, 0]).astype(np.int64)
    correct = (prediction == y).astype(np.float64)
    confidence = np.where(prediction == 1, probs[:, 1], probs[:, 0])
    true_logp = np.where(y == 1, logp[:, 1], logp[:, 0])
    priors = np.bincount(y, minlength=2) / n
    cross_entropy = -true_logp.mean()
    brier = ((probs[:, 1] - (y == 1)) ** 2).mean()  # the mean over the two classes' squared gaps, equal for K = 2
    entropy = -(probs * logp).sum(axis=1).mean()
    top = _binned(confidence, correct, n)
    positive = _binned(probs[:, 1], (y == 1).astype(np.float64), n)
    return {
        "accuracy": correct.mean(),
        "NCE": cross_entropy / -(priors * np.log(priors)).sum(),
        "NBS": brier / ((priors * (1 - priors)).sum() / 2),
        "NRisk 0-1": (1 - correct.mean()) / (1 - priors.max()),
        "ECD": cross_entropy - entropy,
        "ECE top-label": top[0],
        "squared ECE top-label (debiased)": top[1],
        "ECE positive class": positive[0],
        "squared ECE positive class (debiased)": positive[1],
    }


def timed(command: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of ``command`` in a fresh process running this checkout's
    calib; a failure stops the run."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    start = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4: tell Popen
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {child.returncode}:\n{child.stderr.read()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=2e7, help="rows of the table (default 2e7)")
    parser.add_argument("--keep", type=Path, help="write the table to this folder, or reuse it from there")
    parser.add_argument("--baseline", type=Path, help=argparse.SUPPRESS)  # run (a) on this file, in this process
    args = parser.parse_args(argv)
    if args.baseline is not None:
        print(baseline(args.baseline))
        return
    rows = int(args.rows)
    with tempfile.TemporaryDirectory(prefix="calib-engine-speed-") as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"binary_weighted_{rows}.parquet"
        if not path.exists():
            print(f"writing {path}", file=sys.stderr, flush=True)
            write_table(path, rows)
        evaluate = [sys.executable, "-m", "calib.cli", "evaluate", str(path), "--quiet", "--calibrators", "none",
                    "--class-columns", "class_0", "class_1"]  # fmt: skip
        weighted = [*evaluate, "--weights", "weight"]
        summed = summed_metrics()
        runs = {
            "(a) pyarrow + numpy": [sys.executable, __file__, "--baseline", str(path)],
            "(b) calib evaluate --n-boot 0": [*evaluate, "--n-boot", "0"],
            "(c) calib evaluate (200 resamples)": evaluate,
            "(d) calib evaluate --n-boot 1000": [*evaluate, "--n-boot", "1000"],
            "(e) calib evaluate, 200 resamples, summed metrics only": [*evaluate, "--metrics", *summed],
            "(f) (b) with --weights": [*weighted, "--n-boot", "0"],
            "(g) (e) with --weights": [*weighted, "--metrics", *summed],
            "(h) (c) with --weights": weighted,
        }
        times: dict[str, tuple[float, float]] = {}
        for label, command in runs.items():
            print(f"{label} ...", file=sys.stderr, flush=True)
            times[label] = timed(command)
            print(f"  {times[label][0]:.2f} s", file=sys.stderr, flush=True)
            # Written after each run, so a run stopped before (d) (tens of minutes at 2e7) keeps its rows.
            (ROOT / "benchmarks" / "engine_speed.md").write_text(table(rows, times))
    print(table(rows, times))


def table(rows: int, times: dict[str, tuple[float, float]]) -> str:
    """The markdown table of the runs done so far: label -> (wall, CPU) seconds, each with its ratio to the
    run it is measured against (RATIO_BASE)."""
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    lines = [
        f"{rows:.3g} x 2 Parquet, `--calibrators none`; load average {load}, {os.cpu_count()} CPUs",
        "",
        "| run | wall (s) | CPU (s) | ratio |",
        "|---|---:|---:|---|",
    ]
    by_letter = {label[1]: t for label, t in times.items()}  # labels start "(a) ", "(b) ", ...
    for label, (wall, cpu) in times.items():
        base = RATIO_BASE.get(label[1])
        ratio = ""
        if base in by_letter:
            over, over_cpu = by_letter[base]
            ratio = f"{label[1]} / {base} = {wall / over:.2f} (CPU {cpu / over_cpu:.2f})"
        lines.append(f"| {label} | {wall:.2f} | {cpu:.2f} | {ratio} |")
    return "\n".join(lines) + "\n"


# The run each run's ratio is measured against.
RATIO_BASE = {"b": "a", "c": "b", "d": "b", "e": "b", "f": "b", "g": "e", "h": "c"}


if __name__ == "__main__":
    main()
