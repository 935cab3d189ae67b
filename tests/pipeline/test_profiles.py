"""The DAG builds under the cluster profiles, each job with its rule's resources; CI runs the cluster tests."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml
from support import artifact_rules

from pipeline.job_costs import rule_memory_mb

ROOT = Path(__file__).resolve().parents[2]


def _dry_run(profiles: list[str], results: Path) -> str:
    cmd = ["snakemake", *profiles, "-n", "--config", f"results={results}"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout + done.stderr


def test_slurm_profile_dry_run_submits_every_job_with_its_rule_resources(tmp_path):
    log = _dry_run(["--profile", "profiles/slurm", "--profile", "profiles/slurm-local"], tmp_path / "results")
    assert "Using profiles profiles/slurm and profiles/slurm-local" in log
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", log, flags=re.MULTILINE))
    assert sum(int(n) for rule, n in counts.items() if rule.startswith("artifact")) > 15 and counts["report"] == "1"
    # Every job but the target rule `all`, which runs nothing.
    blocks = [b for b in re.split(r"\n(?=rule |localrule )", log) if "resources:" in b and not b.startswith("rule all")]
    by_rule = [(re.match(r"(?:local)?rule (\w+):", block).group(1), block) for block in blocks]
    expected = {"simulate", "fetch", "zoo", "report", "artifacts_ecd2025", "artifact_ferrer2024_fig8"}
    assert expected <= dict(by_rule).keys()
    for rule, block in by_rule:
        mem = int(re.search(r"\bmem_mb=(\d+)", block).group(1))
        assert mem == (200 if rule == "code_stamp" else rule_memory_mb(rule)), rule
        assert (
            re.search(r"\bruntime=\d+", block) and "slurm_account=calib" in block and "slurm_partition=local" in block
        )


def test_every_run_reads_the_default_profile_and_schedules_greedily(tmp_path):
    default = yaml.safe_load((ROOT / "profiles" / "default" / "config.yaml").read_text())
    assert default == {"scheduler": "greedy"}
    assert "workflow specific profile profiles/default" in _dry_run(["--cores", "2"], tmp_path / "results")


def test_profiles_are_valid_and_the_local_overlay_names_the_local_clusters_account_and_partition():
    slurm = yaml.safe_load((ROOT / "profiles" / "slurm" / "config.yaml").read_text())
    overlay = yaml.safe_load((ROOT / "profiles" / "slurm-local" / "config.yaml").read_text())
    local = yaml.safe_load((ROOT / "profiles" / "local" / "config.yaml").read_text())
    assert slurm["executor"] == "slurm" and local["cores"] == "all"
    script = (ROOT / "profiles" / "slurm" / "local_cluster.sh").read_text()
    account, partition = (
        re.search(rf"^{name}=(\w+)$", script, flags=re.MULTILINE).group(1) for name in ("account", "partition")
    )
    assert overlay["default-resources"] == {"slurm_account": account, "slurm_partition": partition}


def test_ci_brings_the_cluster_up_and_runs_the_readmes_cluster_tests():
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Scaling out") :]
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    up = lines.index("profiles/slurm/local_cluster.sh up")
    tests = lines.index("python -m pytest -q -m slurm")
    assert lines.index("python -m pytest -q -n auto") < up < tests
    assert "\nprofiles/slurm/local_cluster.sh up " in section and "\npython -m pytest -q -m slurm " in section
    assert any(line.startswith("trap ") and "local_cluster.sh down" in line for line in lines[:up])


def test_the_readme_states_what_each_rule_asks_for():
    readme = (ROOT / "README.md").read_text()
    rows = dict(re.findall(r"^\| `(\w+)[^|]*\| [^|]+ \| ([\d-]+) \|", readme, flags=re.MULTILINE))
    for rule in ("simulate", "fetch", "zoo", "report", "sweep_point"):
        assert rows[rule] == str(rule_memory_mb(rule)), rule
    requests = [rule_memory_mb(rule) for rule in artifact_rules()]
    low, high = min(requests), max(requests)
    assert rows["artifacts_"] == f"{low}-{high}"
