"""Whole-pipeline timing: build every target from scratch and list the slowest jobs.

Run from the repository root: ``python benchmarks/pipeline_timing.py`` (default: ``snakemake --cores 2``
into a fresh temporary results folder, so the project's own ``results/`` is untouched; the real
posterior sets come from the configured mirror, as in a normal build); ``--cores 1 2`` builds once
per core count, one after the other. For each build it prints the wall time, the sum of the job
times, the start-up share of the artifact jobs (their time outside the experiments they build:
Python, imports, composition), the time per rule (jobs, summed seconds) and the ten slowest jobs
with their peak memory. Per-job numbers are Snakemake's own ``benchmark:`` records
(``logs/benchmarks/``), read back for the jobs of this run only; per-experiment times are the
``batch: built <experiment> in <s> s`` lines of the artifact jobs' logs (``logs/artifacts/``).
Extra arguments go to Snakemake (e.g. ``all sweeps``).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

BENCHMARKS = Path("logs/benchmarks")
ARTIFACT_LOGS = Path("logs/artifacts")
BUILT = re.compile(r"^batch: built \S+ in ([0-9.]+) s$", re.MULTILINE)


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


def experiment_seconds(since: float) -> float:
    """Summed build time of the experiments the artifact jobs that finished after ``since`` report."""
    logs = [path for path in ARTIFACT_LOGS.rglob("*.log") if path.stat().st_mtime >= since]
    return sum(float(seconds) for path in logs for seconds in BUILT.findall(path.read_text()))


def timed_build(cores: int, results: Path, snakemake_args: list[str]) -> None:
    """Build into ``results`` with ``cores`` and print the figures of that build."""
    command = ["snakemake", "--cores", str(cores), *snakemake_args, "--config", f"results={results}"]
    print("running:", " ".join(command), file=sys.stderr)
    start = time.time()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.time() - start
    if done.returncode != 0:
        sys.exit(f"snakemake failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    jobs = job_records(since=start)
    per_rule = jobs.groupby("rule")["seconds"].agg(jobs="count", seconds="sum").sort_values("seconds", ascending=False)
    artifact_seconds = jobs.loc[jobs["rule"] == "artifacts", "seconds"].sum()
    start_up = artifact_seconds - experiment_seconds(since=start)
    print(
        f"## --cores {cores}\n\ntotal wall time: {wall:.1f} s ({wall / 60:.2f} min), {len(jobs)} jobs,"
        f" {jobs['seconds'].sum():.0f} job-seconds; artifact jobs {artifact_seconds:.0f} s, of which start-up"
        f" {start_up:.0f} s ({start_up / max(artifact_seconds, 1e-9):.0%}); results in {results}\n"
    )
    print(per_rule.to_markdown(floatfmt=".1f"), "\n")
    print(jobs.nlargest(10, "seconds").to_markdown(index=False, floatfmt=".1f"), "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", help="results folder to build into (default: a new temporary folder)")
    parser.add_argument("--cores", type=int, nargs="+", default=[2], help="one build per core count, in turn")
    args, snakemake_args = parser.parse_known_args()
    if args.results and len(args.cores) > 1:
        sys.exit("--results takes one build: give one --cores, or no --results")
    for cores in args.cores:
        results = Path(args.results) if args.results else Path(tempfile.mkdtemp(prefix="calib-timing-"))
        if results.exists() and any(results.iterdir()):
            sys.exit(f"--results {results} is not empty; the timing needs a clean folder")
        timed_build(cores, results, snakemake_args)


if __name__ == "__main__":
    main()
