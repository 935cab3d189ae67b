"""What each rule asks of the scheduler, from what its jobs cost in a complete build: memory and start order.

**Memory** (``mem_mb``). A cluster kills a job that goes over its request, and a request far above
the need keeps jobs waiting for memory they never use. So every rule asks for what was measured: the
largest peak resident memory (``max_rss`` of Snakemake's benchmark records, ``logs/benchmarks/``) of
its jobs in a complete build, plus the Snakemake process that runs each job inside a SLURM allocation
(``--executor slurm-jobstep``; over the 64 jobs of a complete build on the local cluster, sacct's
MaxRSS of the job step exceeded the job's own peak by 220 to 402 MB, median 276, so 400 here), with a
quarter on top for other machines and data, rounded up to 100 MB. A rule missing from the table asks
for DEFAULT_MB.

**Start order** (``priority``). On a few cores a build ends when its last job does; if a long job
starts late, the other cores run out of work while it finishes alone. So the longest jobs start
first and the short ones fill the end (longest-processing-time-first list scheduling): a rule's
priority is the wall time in seconds its largest job took (the ``s`` of its benchmark records), and a
job that others wait for (a data set, the code stamp) takes the highest priority among them, so it
is ready before they come up. Snakemake's greedy scheduler (profiles/default) starts the ready job
of highest priority. Only the order matters: a slower or faster machine keeps it.

Refresh the table after a complete build (``snakemake --cores 2``, and ``snakemake sweeps``)::

    python -m pipeline.job_costs logs/benchmarks > pipeline/rules/job_costs.tsv
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pipeline.targets import rule_name

TABLE = Path(__file__).parent / "rules" / "job_costs.tsv"
JOBSTEP_MB = 400
MARGIN = 1.25
DEFAULT_MB = 4000


@dataclass(frozen=True)
class JobCost:
    """The largest peak resident memory (MB) and the longest wall time (s) of a rule's jobs."""

    peak_mb: float
    seconds: float


def request_mb(peak_mb: float) -> int:
    """The ``mem_mb`` a job with this measured peak asks for.

    Parameters
    ----------
    peak_mb : float
        Peak resident memory of the job's own process, in MB.

    Examples
    --------
    >>> request_mb(206.35)
    800
    """
    return int(math.ceil((peak_mb + JOBSTEP_MB) * MARGIN / 100) * 100)


@cache
def measured_costs(table: Path = TABLE) -> dict[str, JobCost]:
    """Rule name -> its jobs' measured cost, as the table records it."""
    with open(table, newline="") as handle:
        rows = csv.DictReader((line for line in handle if not line.startswith("#")), delimiter="\t")
        return {row["rule"]: JobCost(float(row["peak_mb"]), float(row["seconds"])) for row in rows}


def rule_memory_mb(rule: str) -> int:
    """The ``mem_mb`` of a rule: its measured peak's request, or DEFAULT_MB if it was never measured.

    Parameters
    ----------
    rule : str
        The Snakemake rule name, e.g. ``"report"`` or ``"artifact_ferrer2024_table2"``.
    """
    cost = measured_costs().get(rule)
    return DEFAULT_MB if cost is None else request_mb(cost.peak_mb)


def rule_priority(rule: str) -> int:
    """The ``priority`` of a rule: its longest job's measured seconds, rounded; 0 if it was never measured.

    Parameters
    ----------
    rule : str
        The Snakemake rule name, e.g. ``"artifacts_reassessing"``.
    """
    cost = measured_costs().get(rule)
    return 0 if cost is None else round(cost.seconds)


def input_priorities(inputs: Mapping[str, Iterable[str]]) -> dict[str, int]:
    """The priority of each file some rule reads: the highest :func:`rule_priority` among those rules.

    Parameters
    ----------
    inputs : mapping
        Rule name -> the files its job reads.

    Examples
    --------
    >>> input_priorities({"report": ["a.csv"], "never_measured": ["a.csv", "b.csv"]})["b.csv"]
    0
    """
    out: dict[str, int] = {}
    for rule, files in inputs.items():
        for file in files:
            out[file] = max(out.get(file, 0), rule_priority(rule))
    return out


def rule_of(record: Path, folder: Path) -> str:
    """The rule whose benchmark record this is: ``<folder>/artifacts/<job>.tsv`` or ``<folder>/<rule>[/...].tsv``."""
    parts = record.relative_to(folder).with_suffix("").parts
    return rule_name("/".join(parts[1:])) if parts[0] == "artifacts" and len(parts) > 1 else parts[0]


def cost_of(record: Path) -> JobCost:
    """The largest ``max_rss`` (MB) and wall time ``s`` in one Snakemake benchmark record."""
    with open(record, newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    return JobCost(max(float(r["max_rss"]) for r in rows), max(float(r["s"]) for r in rows))


def costs_from_benchmarks(folder: Path) -> dict[str, JobCost]:
    """Rule name -> the largest peak and the longest wall time over the benchmark records under ``folder``."""
    costs: dict[str, JobCost] = {}
    for record in sorted(folder.rglob("*.tsv")):
        rule, cost = rule_of(record, folder), cost_of(record)
        known = costs.get(rule, cost)
        costs[rule] = JobCost(max(known.peak_mb, cost.peak_mb), max(known.seconds, cost.seconds))
    return costs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("benchmarks", type=Path, help="the benchmark records of a complete build (logs/benchmarks)")
    args = parser.parse_args(argv)
    if not args.benchmarks.is_dir():
        parser.error(f"benchmarks: {args.benchmarks} is not a folder; give the logs/benchmarks of a complete build")
    costs = costs_from_benchmarks(args.benchmarks)
    print("# Peak resident memory (MB, Snakemake's max_rss) and wall time (s) of each rule's largest and longest")
    print("# job in a complete build; pipeline/job_costs.py turns them into mem_mb and priority. Refresh: see there.")
    print("rule\tpeak_mb\tseconds")
    for rule, cost in sorted(costs.items()):
        print(f"{rule}\t{cost.peak_mb:.0f}\t{cost.seconds:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
