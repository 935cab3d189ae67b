"""Cluster jobs that SLURM killed for memory, said plainly at the end of a failed run.

Without cgroups, SLURM's accounting poll kills a job step that goes over the job's memory request
(``JobAcctGatherParams=OverMemoryKill``) and records the job as FAILED with no reason; what
happened is only in the job's SLURM log (``slurmstepd: error: StepId=... exceeded memory limit
(used > limit), being killed``). The Snakefile's ``onerror`` hands Snakemake's log here, which names
each failed rule with its logs; each SLURM log with such a line gets one message saying how much
the job used, what it asked for, and the option that gives it more: twice its request (the job was
killed on the way up, so what it reached is a lower bound of its need), rounded up to 100 MB.
"""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

_FAILED_RULE = re.compile(r"^Error in rule (\w+):$(.*?)(?=^\S|\Z)", flags=re.MULTILINE | re.DOTALL)
_LOGS = re.compile(r"^\s+log: (.+?)(?: \(check log file\(s\) for error details\))?$", flags=re.MULTILINE)
_MEMORY_KILL = re.compile(r"exceeded memory limit \((\d+) > (\d+)\)")
_MB = 1024 * 1024


def memory_kills(snakemake_log: str) -> list[str]:
    """One message per failed rule whose SLURM log shows it was killed for memory.

    Parameters
    ----------
    snakemake_log : str
        The text of Snakemake's log of the run (what ``onerror`` is given the path of).

    Examples
    --------
    >>> memory_kills("Error in rule report:\\n    message: None\\n")
    []
    """
    messages = []
    for rule, block in _FAILED_RULE.findall(snakemake_log):
        found = _LOGS.search(block)
        logs = [Path(p.strip()) for p in found.group(1).split(",")] if found else []
        for log in (p for p in logs if p.is_file()):
            kill = _MEMORY_KILL.search(log.read_text(errors="replace"))
            if kill:
                used, limit = (int(v) / _MB for v in kill.groups())
                more = int(math.ceil(max(2 * limit, used) / 100) * 100)
                messages.append(
                    f"calib-repro: SLURM killed rule {rule} for memory: it used {used:.0f} MB, over its request of "
                    f"{limit:.0f} MB (mem_mb; SLURM log: {log}). Rerun the same command with "
                    f"--set-resources {rule}:mem_mb={more}, and record the rule's new peak in "
                    "pipeline/rules/job_costs.tsv (see pipeline/job_costs.py)."
                )
                break
    return messages


def explain_memory_kills(log: str | list[str]) -> None:
    """Print ``memory_kills`` of Snakemake's log file(s) to stderr (the Snakefile's ``onerror``).

    Parameters
    ----------
    log : str or list of str
        What Snakemake hands ``onerror``: its log file, or a list of them (Snakemake 9).
    """
    paths = [log] if isinstance(log, str) else log
    for message in memory_kills("".join(Path(p).read_text(errors="replace") for p in paths)):
        print(message, file=sys.stderr)
