"""The workflow's DAG builds under the cluster profile, with each rule's declared resources."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _dry_run(profile: str, results: Path) -> str:
    cmd = ["snakemake", "--profile", f"profiles/{profile}", "-n", "--config", f"results={results}"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout + done.stderr


def _jobs(log: str, rule: str) -> list[str]:
    """The dry run's job blocks of every rule whose name starts with ``rule``."""
    return [block for block in re.split(r"\n(?=rule |localrule )", log) if block.startswith(f"rule {rule}")]


def test_slurm_profile_dry_run_submits_every_job_with_its_rule_resources(tmp_path):
    log = _dry_run("slurm", tmp_path / "results")
    assert "Using profile profiles/slurm" in log
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", log, flags=re.MULTILINE))
    assert sum(int(n) for rule, n in counts.items() if rule.startswith("artifact")) > 15 and counts["report"] == "1"
    artifacts, report = _jobs(log, "artifact"), _jobs(log, "report")
    assert artifacts and all("mem_mb=4000" in job and "runtime=30" in job for job in artifacts)
    assert report and all("mem_mb=1000" in job and "runtime=10" in job for job in report)


def test_profiles_are_valid_and_name_their_executor():
    slurm = yaml.safe_load((ROOT / "profiles" / "slurm" / "config.yaml").read_text())
    local = yaml.safe_load((ROOT / "profiles" / "local" / "config.yaml").read_text())
    assert slurm["executor"] == "slurm" and slurm["default-resources"]["runtime"] > 0
    assert local["cores"] == "all"
