"""Each rule's memory request and start order come from its measured cost; a memory kill on a cluster is explained."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import BUILD_STEP_RULES, SWEEP_RULES, artifact_rules

from pipeline.cluster_failures import explain_memory_kills, memory_kills
from pipeline.config import group_options
from pipeline.job_costs import (
    DEFAULT_MB,
    JOBSTEP_MB,
    input_priorities,
    main,
    measured_costs,
    request_mb,
    rule_memory_mb,
    rule_of,
    rule_priority,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("peak", [0.0, 1.0, 63.0, 206.35, 700.0, 913.0, 12_345.6])
def test_a_request_is_the_peak_and_the_jobstep_with_a_quarter_on_top_in_steps_of_100_mb(peak):
    need = (peak + JOBSTEP_MB) * 1.25
    assert request_mb(peak) % 100 == 0 and need <= request_mb(peak) < need + 100


def test_every_rule_that_runs_a_job_has_a_measured_cost():
    rules = artifact_rules() | BUILD_STEP_RULES | SWEEP_RULES
    assert group_options("experiment") and sorted(rules - set(measured_costs())) == []
    assert all(rule_memory_mb(rule) < DEFAULT_MB and rule_priority(rule) >= 0 for rule in rules)
    assert rule_priority("never_measured") == 0 and rule_memory_mb("never_measured") == DEFAULT_MB


def test_longer_jobs_start_first_and_a_file_before_the_longest_job_that_reads_it():
    costs = measured_costs()
    rules = sorted(artifact_rules(), key=lambda rule: costs[rule].seconds)
    assert rule_priority(rules[-1]) > rule_priority(rules[0]) and rule_priority(rules[-1]) == round(
        costs[rules[-1]].seconds
    )
    inputs = {rules[0]: ["stamp", "a.npz"], rules[-1]: ["stamp", "b.npz"], "never_measured": ["c.npz"]}
    assert input_priorities(inputs) == {
        "stamp": rule_priority(rules[-1]),
        "a.npz": rule_priority(rules[0]),
        "b.npz": rule_priority(rules[-1]),
        "c.npz": 0,
    }


def test_benchmark_records_map_to_their_rules():
    folder = Path("logs/benchmarks")
    records = {
        "artifacts/ferrer2024/fig8.tsv": "artifact_ferrer2024_fig8",
        "artifacts/ecd2025.tsv": "artifacts_ecd2025",
        "fetch/netcal/lenet-5-cifar-10.tsv": "fetch",
        "sweep_point/ece_bins_3.tsv": "sweep_point",
        "report.tsv": "report",
    }
    assert {name: rule_of(folder / name, folder) for name in records} == records


def test_the_table_is_written_from_benchmark_records(tmp_path, capsys):
    header = "s\th:m:s\tmax_rss\tmax_vms\n"
    (tmp_path / "simulate").mkdir()
    (tmp_path / "simulate" / "a.tsv").write_text(header + "3.3\t0:00:03\t120.4\t900\n")
    (tmp_path / "simulate" / "b.tsv").write_text(header + "1.0\t0:00:01\t180.6\t900\n2.0\t0:00:02\t150.0\t900\n")
    (tmp_path / "report.tsv").write_text(header + "7.0\t0:00:07\t381.2\t1200\n")
    assert main([str(tmp_path)]) == 0
    rows = [line.split("\t") for line in capsys.readouterr().out.splitlines() if not line.startswith("#")]
    # The largest peak and the longest time of each rule, each from whichever job had it.
    assert rows == [["rule", "peak_mb", "seconds"], ["report", "381", "7.0"], ["simulate", "181", "3.3"]]


def test_a_memory_kill_is_explained_with_the_option_that_fixes_it(tmp_path, capsys):
    slurm_log = tmp_path / "5.log"
    slurm_log.write_text(
        "Building DAG of jobs...\n"
        "slurmstepd-vm: error: StepId=5.0 exceeded memory limit (383053824 > 314572800), being killed\n"
        "slurmstepd-vm: error: Exceeded job memory limit\n"
    )
    snakemake_log = (
        "[Wed Nov 25 01:08:46 2026]\n"
        "Error in rule artifact_ferrer2024_fig8:\n"
        "    message: SLURM-job '5' failed, SLURM status is: 'FAILED'. Reason: Unknown.\n"
        "    jobid: 0\n"
        f"    log: logs/artifacts/ferrer2024/fig8.log, {slurm_log} (check log file(s) for error details)\n"
        "    external_jobid: 5\n"
        "Error in rule report:\n"
        "    log: logs/report.log (check log file(s) for error details)\n"
        "Exiting because a job execution failed. Look above for error messages\n"
    )
    [message] = memory_kills(snakemake_log)
    assert "rule artifact_ferrer2024_fig8 for memory: it used 365 MB, over its request of 300 MB" in message
    assert "--set-resources artifact_ferrer2024_fig8:mem_mb=600" in message  # twice the request
    (tmp_path / "snakemake.log").write_text(snakemake_log)
    for handed in (str(tmp_path / "snakemake.log"), [str(tmp_path / "snakemake.log")]):  # Snakemake 8, 9
        explain_memory_kills(handed)
        assert capsys.readouterr().err == message + "\n"
    slurm_log.write_text("slurmstepd-vm: error: *** JOB 5 ON vm CANCELLED AT 2026-11-25T01:08:38 ***\n")
    assert memory_kills(snakemake_log) == memory_kills("") == []
