"""Whole-command timing of ``calib evaluate``: wall time, peak memory and time to the first progress line.

Run from the repository root: ``python benchmarks/evaluate_timing.py`` (``--only SUBSTRING`` keeps
the files whose label contains it, e.g. ``--only 1e7``; ``--keep DIR`` writes the files to DIR and
keeps them, otherwise a temporary folder is removed at the end; extra arguments after ``--`` go to
``calib evaluate``, e.g. ``-- --n-boot 50``). The inputs are seeded (benchmarks/inputs.py):

- 10^5 x 10 and 10^6 x 4 probabilities (overconfident softmax outputs) in ``.npz`` archives;
- 10^7 x 2 probabilities (p_1 ~ Beta(0.7, 0.7)) three ways: ``.npy`` scores with ``--labels-file``,
  an ``.npz`` archive and a ``.parquet`` table;
- 10^3 x 2 and 10^5 x 2 of the same kind (labelled "small"), for options whose cost does not grow with
  the file, e.g. ``--only small -- --n-boot 100000``;
- 5 x 10^4 x 1000 float32 logits (ImageNet validation's size) as ``.npy`` with ``--labels-file``;
- 5 x 10^7 x 2 probabilities as one ``.parquet`` table (a prediction log larger than a few GiB in memory).

Each file is evaluated by ``python -m calib.cli evaluate FILE`` in a fresh process, with the default
bootstrap (200 resamples) unless told otherwise, running this checkout's ``calib`` (PYTHONPATH).
Wall time includes Python's start-up and reading the file; peak memory is the child's maximum
resident set size (``os.wait4``); first output is the time from start to the first line on stderr.
Timings are of one run each on whatever else the machine is doing: check ``uptime`` and repeat a
row (``--only``) when it was busy. Not part of the test suite.

Reading the memory column: ``peak RSS (MB)`` is the child's ``ru_maxrss`` in MiB, the largest
resident set at any moment of the run, so it is the worst phase that counts. It does not depend on
the machine's load (one run is enough), and it includes about 50 MB before any data (the
interpreter with numpy and the parts of scipy the command loads). At 10^7 x 2 one float64 (N, K)
matrix is 153 MiB and one float64 or int64 per sample 76 MiB: a phase's peak minus 50 MB, divided by
those, says how many such arrays that phase holds at once.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from inputs import binary_problem, multiclass_problem  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Run:
    """One ``calib evaluate`` process: seconds to exit, peak RSS, seconds to the first stderr line."""

    wall: float
    peak_mb: float
    first_output: float
    returncode: int
    stderr_tail: str


def write_inputs(folder: Path, only: str | None) -> dict[str, list[str]]:
    """The benchmark files in ``folder``: label -> the ``calib evaluate`` arguments that read it."""
    files: dict[str, list[str]] = {}

    def wanted(label: str) -> bool:
        return only is None or only.lower() in label.lower()

    for n, k in ((10**5, 10), (10**6, 4)):
        label = f"1e{round(np.log10(n))} x {k} .npz"
        if wanted(label):
            logp, labels = multiclass_problem(n, k, seed=0)
            path = folder / f"multiclass_{n}x{k}.npz"
            np.savez(path, scores=np.exp(logp), labels=labels)
            files[label] = [str(path)]
    for n in (10**3, 10**5):
        label = f"1e{round(np.log10(n))} x 2 small .npz"
        if wanted(label):
            probs, labels = binary_problem(n, seed=0)
            np.savez(folder / f"binary_{n}.npz", scores=probs, labels=labels)
            files[label] = [str(folder / f"binary_{n}.npz")]
    label = "5e4 x 1000 logits .npy"
    if wanted(label):
        logp, labels = multiclass_problem(50_000, 1000, seed=0)
        np.save(folder / "imagenet_logits.npy", (2.0 * logp).astype(np.float32))  # logits up to a row shift
        np.save(folder / "imagenet_labels.npy", labels)
        files[label] = [str(folder / "imagenet_logits.npy"), "--labels-file", str(folder / "imagenet_labels.npy")]
        files[label] += ["--kind", "logits"]
    label = "5e7 x 2 .parquet"
    if wanted(label):
        probs, labels = binary_problem(5 * 10**7, seed=0)
        frame = pd.DataFrame({"class_0": probs[:, 0], "class_1": probs[:, 1], "label": labels})
        del probs, labels
        frame.to_parquet(folder / "log_5e7.parquet", index=False, row_group_size=1 << 20)
        files[label] = [str(folder / "log_5e7.parquet")]
    binary = [label for label in ("1e7 x 2 .npy", "1e7 x 2 .npz", "1e7 x 2 .parquet") if wanted(label)]
    if binary:
        probs, labels = binary_problem(10**7, seed=0)
        for label in binary:
            if label.endswith(".npy"):
                np.save(folder / "binary_scores.npy", probs)
                np.save(folder / "binary_labels.npy", labels)
                files[label] = [str(folder / "binary_scores.npy"), "--labels-file", str(folder / "binary_labels.npy")]
            elif label.endswith(".npz"):
                np.savez(folder / "binary.npz", scores=probs, labels=labels)
                files[label] = [str(folder / "binary.npz")]
            else:
                frame = pd.DataFrame({"class_0": probs[:, 0], "class_1": probs[:, 1], "label": labels})
                frame.to_parquet(folder / "binary.parquet", index=False)
                files[label] = [str(folder / "binary.parquet")]
    return files


def run_evaluate(arguments: list[str]) -> Run:
    """Run ``python -m calib.cli evaluate *arguments`` with this checkout's calib and measure it."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    command = [sys.executable, "-m", "calib.cli", "evaluate", *arguments]
    start = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    first: list[float] = []
    lines: list[str] = []

    def read_stderr():
        for line in child.stderr:
            if not first:
                first.append(time.perf_counter() - start)
            lines.append(line)

    reader = threading.Thread(target=read_stderr)
    reader.start()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    reader.join()
    child.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4: tell Popen
    return Run(wall, usage.ru_maxrss / 1024, first[0] if first else float("nan"), child.returncode, "".join(lines[-5:]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="evaluate only the files whose label contains this (case-insensitive)")
    parser.add_argument("--keep", type=Path, help="write the files to this folder and keep them")
    parser.add_argument("extra", nargs="*", help="arguments for calib evaluate (after --)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="calib-evaluate-timing-") as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        print(f"writing the inputs to {folder}", file=sys.stderr, flush=True)
        # In a process of its own: a child's peak RSS counts the pages it shares with its parent at fork,
        # and writing the inputs (Arrow's allocator keeps what it freed) would leave the parent large.
        with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as writer:
            files = writer.submit(write_inputs, folder, args.only).result()
        rows = []
        for label, arguments in files.items():
            print(f"calib evaluate on {label} ...", file=sys.stderr, flush=True)
            run = run_evaluate([*arguments, *args.extra])
            if run.returncode != 0:
                print(f"  exit {run.returncode}:\n{run.stderr_tail}", file=sys.stderr, flush=True)
            rows.append(
                {
                    "file": label,
                    "wall (s)": run.wall,
                    "peak RSS (MB)": run.peak_mb,
                    "first output (s)": run.first_output,
                    "exit": run.returncode,
                }
            )
    print(f"load average: {' '.join(f'{v:.2f}' for v in os.getloadavg())}, {os.cpu_count()} CPUs")
    print(pd.DataFrame(rows).to_markdown(index=False, floatfmt=".3g"))


if __name__ == "__main__":
    main()
