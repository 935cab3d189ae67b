"""Whole-pipeline timing: build every target from scratch and list the slowest jobs.

Run from the repository root: ``python benchmarks/pipeline_timing.py`` (default: ``snakemake --cores 2``
into a fresh temporary results folder, so the project's own ``results/`` is untouched; the real
posterior sets come from the configured mirror, as in a normal build). Prints the total wall time,
the time per rule (jobs, summed seconds) and the ten slowest jobs with their peak memory. Per-job
numbers are Snakemake's own ``benchmark:`` records (``logs/benchmarks/``), read back for the jobs
of this run only. Extra arguments go to Snakemake (e.g. ``all sweeps`` or ``--cores 1``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

BENCHMARKS = Path("logs/benchmarks")


def job_records(since: float) -> pd.DataFrame:
    """Snakemake's benchmark rows (seconds, max RSS) of the jobs that finished after ``since``."""
    rows = []
    for path in BENCHMARKS.rglob("*.tsv"):
        if path.stat().st_mtime < since:
            continue
        record = pd.read_csv(path, sep="\t").iloc[-1]
        rule = Path(path.relative_to(BENCHMARKS).parts[0]).stem  # logs/benchmarks/<rule>/... or <rule>.tsv
        rows.append(
            {
                "rule": rule,
                "job": path.relative_to(BENCHMARKS).with_suffix("").as_posix(),
                "seconds": float(record["s"]),
                "max_rss_mb": float(record["max_rss"]),
            }
        )
    return pd.DataFrame(rows, columns=["rule", "job", "seconds", "max_rss_mb"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", help="results folder to build into (default: a new temporary folder)")
    parser.add_argument("--cores", type=int, default=2)
    args, snakemake_args = parser.parse_known_args()
    results = Path(args.results) if args.results else Path(tempfile.mkdtemp(prefix="calib-timing-"))
    if results.exists() and any(results.iterdir()):
        sys.exit(f"--results {results} is not empty; the timing needs a clean folder")
    command = ["snakemake", "--cores", str(args.cores), *snakemake_args, "--config", f"results={results}"]
    print("running:", " ".join(command), file=sys.stderr)
    start = time.time()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.time() - start
    if done.returncode != 0:
        sys.exit(f"snakemake failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    jobs = job_records(since=start)
    per_rule = jobs.groupby("rule")["seconds"].agg(jobs="count", seconds="sum").sort_values("seconds", ascending=False)
    print(
        f"total wall time: {wall:.1f} s ({wall / 60:.2f} min) on {args.cores} cores, {len(jobs)} jobs,"
        f" {jobs['seconds'].sum():.0f} job-seconds; results in {results}\n"
    )
    print(per_rule.to_markdown(floatfmt=".1f"), "\n")
    print(jobs.nlargest(10, "seconds").to_markdown(index=False, floatfmt=".1f"))


if __name__ == "__main__":
    main()
