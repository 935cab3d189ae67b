"""The workflow through a real SLURM cluster: the local one of ``profiles/slurm/local_cluster.sh``.

Run with ``python -m pytest -q -m slurm`` once ``profiles/slurm/local_cluster.sh up`` (as root) has
started the cluster (CI does both). Each test rebuilds part of a complete local build, in a copy,
through ``snakemake --profile profiles/slurm --profile profiles/slurm-local``, and compares the bytes
with the local build and the jobs with what sacct recorded: a representative subset (one job per
paper, a simulated dataset, the report), a job cancelled with ``scancel`` mid-run, a
node drained while the build runs and resumed, and a job over its memory request.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from support import given_build

from pipeline.job_costs import rule_memory_mb
from pipeline.targets import experiments, jobs

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "profiles" / "slurm" / "local_cluster.sh"
PROFILES = ["--profile", "profiles/slurm", "--profile", "profiles/slurm-local"]
pytestmark = pytest.mark.slurm

# One artifact job per paper (the cheapest each has), with the dataset each reads that no other job does.
SUBSET = {
    "ferrer2024/fig8": ["data/ferrer2024_k2_n400.npz"],
    "silvafilho2023/fig21": [],
    "vaicenavicius2019/tables_resnet20_ts": [],
    "dimitriadis2021/decompositions": [],
    "ecd2025": [],
    "reassessing": [],
}
REPORT = ["report.md", "reproduction.csv", "reproduction_summary.csv", "reproduction_misses.csv", "claims.csv"]


def _sh(*cmd: str) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def build(tmp_path_factory) -> Path:
    """A complete local build (``snakemake --cores 2``): CI's, or one made here."""
    status = subprocess.run([str(CLUSTER), "status"], capture_output=True, text=True)
    if status.returncode != 0:
        start = f"{CLUSTER.relative_to(ROOT)} up (as root)"
        pytest.fail(f"the local SLURM cluster is not up; start it with: {start}\n{status.stdout}")
    results = given_build() or tmp_path_factory.mktemp("local")
    local = subprocess.run(
        ["snakemake", "--cores", "2", "--config", f"results={results}"], cwd=ROOT, capture_output=True, text=True
    )
    assert local.returncode == 0, local.stderr[-3000:]
    return results


def _outputs(results: Path, job: str) -> list[Path]:
    """The files an artifact job writes (pipeline.targets.jobs): each member's values CSV and artifact files."""
    members = jobs(experiments())[job]
    stems = [results / e.paper / e.artifact for e in members]
    return [Path(f"{stem}_values.csv") for stem in stems] + [
        Path(f"{stem}{suffix}") for stem, e in zip(stems, members, strict=True) for suffix in e.suffixes
    ]


def _copy_without(build: Path, tmp_path: Path, files: list[Path]) -> Path:
    copy = tmp_path / "results"
    shutil.copytree(build, copy, symlinks=True)
    for file in files:
        (copy / file.relative_to(build)).unlink()
    return copy


def _start(results: Path, *extra: str) -> tuple[subprocess.Popen, Path]:
    """Start snakemake through the cluster profile; its output goes to a file (a pipe could fill)."""
    log = results.parent / f"snakemake-{time.monotonic_ns()}.log"
    cmd = ["snakemake", *extra, *PROFILES, "--config", f"results={results}"]
    with log.open("w") as sink:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT, text=True)
    return proc, log


def _finish(proc: subprocess.Popen, log: Path, ok: bool = True) -> str:
    proc.wait(timeout=1200)
    text = log.read_text()
    assert (proc.returncode == 0) == ok, text[-4000:]
    return text


def _slurm_jobs(log: str) -> list[str]:
    return re.findall(r"has been submitted with SLURM jobid (\d+)", log)


def _sacct(job_ids: list[str], fields: str, steps: bool = False) -> list[dict[str, str]]:
    """sacct's records of these jobs (allocations only, or with their steps), one dict per line."""
    time.sleep(1)  # the controller hands finished jobs to slurmdbd asynchronously
    cmd = ["sacct", "-j", ",".join(job_ids), "-P", "-n", "-o", fields, *([] if steps else ["-X"])]
    names = fields.split(",")
    return [dict(zip(names, line.split("|"), strict=True)) for line in _sh(*cmd).splitlines()]


def _megabytes(value: str) -> float:
    """sacct's memory field (``4000M``, ``296156K``, ``1.5G``) in MB."""
    number, unit = float(value[:-1]), value[-1]
    return number * {"K": 1 / 1024, "M": 1.0, "G": 1024.0}[unit]


def _changed(build: Path, copy: Path, files: list[Path]) -> list[str]:
    """The files whose bytes differ between the copy and the build (report.md names its results folder)."""

    def text(path: Path, results: Path) -> bytes:
        return path.read_bytes().replace(str(results).encode(), b"<results>")

    return [str(f.relative_to(build)) for f in files if text(copy / f.relative_to(build), copy) != text(f, build)]


def _wait_running(proc: subprocess.Popen, log: Path, rule: str | None = None, timeout: float = 300.0) -> str:
    """The SLURM job id of ``rule``'s job (its comment is rule_<name>), or of any job, once it runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in _sh("squeue", "-h", "-t", "RUNNING", "-o", "%i|%k").splitlines():
            job, comment = line.split("|")
            if rule is None or comment == f"rule_{rule}":
                return job
        assert proc.poll() is None, f"snakemake ended before {rule or 'a job'} ran:\n{log.read_text()[-3000:]}"
        time.sleep(0.2)
    raise AssertionError(f"{rule or 'no job'} did not start within {timeout} s")


def test_a_subset_built_through_slurm_has_the_local_builds_bytes_and_every_job_is_in_sacct(build, tmp_path):
    files = [f for key in SUBSET for f in _outputs(build, key)] + [build / name for name in REPORT]
    files += [build / data for extra in SUBSET.values() for data in extra]
    assert len(files) > 3 * len(SUBSET)
    copy = _copy_without(build, tmp_path, files)
    start = time.monotonic()
    log = _finish(*_start(copy))
    wall = time.monotonic() - start
    assert _changed(build, copy, files) == []
    ran = dict(re.findall(r"^(\w+)\s+(\d+)$", log, flags=re.MULTILINE))
    for local in ("total", "all", "code_stamp"):  # the count, the target rule, and the rule run by Snakemake itself
        ran.pop(local, None)
    assert set(ran) >= {"simulate", "report", "artifact_ferrer2024_fig8", "artifacts_ecd2025", "artifacts_reassessing"}
    records = _sacct(_slurm_jobs(log), "JobID,Comment,State,ReqMem,ReqCPUS,Account,Partition,Elapsed")
    assert len(records) == sum(int(n) for n in ran.values()), log[-3000:]
    for record in records:
        rule = record["Comment"].removeprefix("rule_").split("_wildcards_")[0]
        assert rule in ran, record
        assert record["State"] == "COMPLETED" and record["Account"] == "calib" and record["Partition"] == "local"
        assert record["ReqCPUS"] == "1" and _megabytes(record["ReqMem"]) == rule_memory_mb(rule), record
    # What SLURM measured stays under what each job asked for (the accounting poll kills a job above it).
    requested = {r["JobID"]: _megabytes(r["ReqMem"]) for r in records}
    for step in _sacct(list(requested), "JobID,MaxRSS", steps=True):
        if step["MaxRSS"]:
            assert _megabytes(step["MaxRSS"]) < requested[step["JobID"].split(".")[0]], step
    print(f"subset through SLURM: {len(records)} jobs in {wall:.0f} s")


def test_a_job_cancelled_mid_run_leaves_nothing_half_written_and_a_rerun_finishes_it(build, tmp_path):
    files = _outputs(build, "silvafilho2023/fig21")
    copy = _copy_without(build, tmp_path, files)
    proc, log = _start(copy, "--retries", "0")
    job = _wait_running(proc, log, "artifact_silvafilho2023_fig21")
    time.sleep(3)  # into its computation
    _sh("scancel", job)
    text = _finish(proc, log, ok=False)
    assert f"SLURM-job '{job}' failed, SLURM status is: 'CANCELLED" in text
    assert _sacct([job], "JobID,State")[0]["State"].startswith("CANCELLED")
    leftovers = [p.name for p in (copy / "silvafilho2023").iterdir() if p.name.startswith(("fig21", ".fig21"))]
    assert all(name.startswith(".fig21") for name in leftovers), leftovers  # at most a hidden temporary file
    _finish(*_start(copy))
    assert _changed(build, copy, files) == []


def test_a_node_drained_mid_build_holds_new_jobs_until_resumed_and_the_build_finishes(build, tmp_path):
    keys = ["ferrer2024/fig8", "dimitriadis2021/decompositions", "vaicenavicius2019/tables_resnet20_ts"]
    files = [f for key in keys for f in _outputs(build, key)]
    copy = _copy_without(build, tmp_path, files)
    node = _sh("sinfo", "-h", "-o", "%N").strip()
    proc, log = _start(copy)
    try:
        running = _wait_running(proc, log)  # three jobs, two CPUs: one waits for a CPU when the node drains
        _sh("scontrol", "update", f"nodename={node}", "state=drain", "reason=calib-repro drain test")
        deadline = time.monotonic() + 300
        while _sh("squeue", "-h", "-t", "RUNNING", "-o", "%i").split():  # the running jobs go on to their end
            assert time.monotonic() < deadline and proc.poll() is None, log.read_text()[-3000:]
            time.sleep(0.5)
        time.sleep(5)
        held = _sh("squeue", "-h", "-t", "PENDING", "-o", "%i").split()
        assert held and proc.poll() is None, log.read_text()[-3000:]  # held, not failed
        assert _sacct([running], "JobID,State")[0]["State"] == "COMPLETED"
        assert _sh("sinfo", "-h", "-n", node, "-o", "%T").strip() == "drained"
    finally:
        _sh("scontrol", "update", f"nodename={node}", "state=resume")
    _finish(proc, log)
    assert _changed(build, copy, files) == []


def test_a_job_over_its_memory_request_is_killed_and_reported_with_the_fix(build, tmp_path):
    files = _outputs(build, "ferrer2024/fig8")
    copy = _copy_without(build, tmp_path, files)
    rule = "artifact_ferrer2024_fig8"
    proc, log = _start(copy, "--retries", "0", "--set-resources", f"{rule}:mem_mb=300")
    text = _finish(proc, log, ok=False)
    assert f"SLURM killed rule {rule} for memory: it used" in text and "over its request of 300 MB" in text
    assert f"--set-resources {rule}:mem_mb=600" in text  # twice the request
    [record] = _sacct(_slurm_jobs(text), "JobID,State,ReqMem")
    assert record["State"] == "FAILED" and record["ReqMem"] == "300M"
    assert not any((copy / f.relative_to(build)).exists() for f in files)
    _finish(*_start(copy, "--set-resources", f"{rule}:mem_mb=600"))
    assert _changed(build, copy, files) == []
