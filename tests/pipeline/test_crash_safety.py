"""Crash-safety: no half-written output, corrupt cached datasets are found (sha256) and named with the command
that rebuilds them, and an interrupted Snakemake run resumes to the same bytes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from support import given_build

from calib._internal.files import atomic_write, checksum_matches, checksum_path
from pipeline.io import corrupt_files, load_dataset, save_dataset

ROOT = Path(__file__).resolve().parents[2]
# A dataset and an experiment whose job (its own: an own_job kind) runs a few seconds (100 bootstrap resamples).
DATASET = "ferrer2024_k2_n400"
EXPERIMENT = "ferrer2024_fig8"
VALUES = "ferrer2024/fig8_values.csv"
# One pytest-xdist worker runs these one after the other (their runs of this job share its log files under
# logs/); the workflow tests, in another, never rebuild this experiment.
pytestmark = pytest.mark.xdist_group("crash_safety")


def test_a_failing_writer_leaves_the_previous_file_and_no_litter(tmp_path):
    path = tmp_path / "table.csv"
    path.write_text("old\n")

    def half_then_crash(tmp: Path) -> None:
        tmp.write_text("new, half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(path, half_then_crash)
    assert path.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["table.csv"]


# Every write in the library and the workflow targets the temporary path that atomic_write hands over.
_WRITE = re.compile(r"\.(savefig|to_csv|write_text|write_bytes)\(|np\.savez\w*\(|pickle\.dump\(|open\([^)]*[\"']w")


def test_every_write_goes_through_atomic_write():
    offenders = []
    for path in sorted([*ROOT.glob("calib/**/*.py"), *ROOT.glob("pipeline/**/*.py")]):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            example = line.lstrip().startswith((">>>", "..."))  # a docstring example writes a user's file
            if _WRITE.search(line) and not example and not re.search(r"\btmp\b|\bside\b|\(path, \*\*arrays\)", line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert offenders == [], "write these through calib._internal.files.atomic_write:\n" + "\n".join(offenders)


def test_a_dataset_carries_its_checksum_and_a_damaged_one_is_refused_and_listed_not_deleted(tmp_path):
    path = save_dataset(tmp_path / "d.npz", np.array([0, 1]), {"cal": np.log([[0.5, 0.5], [0.2, 0.8]])})
    assert checksum_matches(path) and checksum_path(path).exists()
    labels, systems, _ = load_dataset(path)
    np.testing.assert_array_equal(labels, [0, 1])
    path.write_bytes(path.read_bytes()[:-7])  # truncated, as by a full disk or a killed copy
    with pytest.raises(SystemExit, match=f"does not match its checksum d.npz.sha256.*--forcerun {path}`$"):
        load_dataset(path)
    assert corrupt_files(tmp_path) == [path]
    assert path.exists() and checksum_path(path).exists()  # reading deletes nothing


def test_a_step_missing_its_dataset_stops_with_the_command_that_builds_it(tmp_path):
    cmd = ["python", "-m", "pipeline.steps.artifact", f"experiment={EXPERIMENT}", f"paths.results={tmp_path}"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 1
    assert f"dataset file {tmp_path}/data/{DATASET}.npz is missing: build it with `snakemake" in output
    assert "Traceback" not in output and "Error executing job" not in output
    assert not (tmp_path / VALUES).exists()


def test_an_artifact_interrupted_while_rendering_leaves_neither_values_nor_figure(tmp_path, monkeypatch):
    import pipeline.steps.artifact
    from pipeline.config import compose
    from pipeline.root import typed_root

    simulate = ["python", "-m", "pipeline.steps.simulate", f"dataset={DATASET}", f"paths.results={tmp_path}"]
    subprocess.run(simulate, cwd=ROOT, check=True, capture_output=True)
    root = typed_root(*compose([f"experiment={EXPERIMENT}", f"paths.results={tmp_path}"]))
    values = tmp_path / VALUES

    def interrupted_render(root):
        (tmp_path / "ferrer2024" / "fig8.pdf").write_bytes(b"%PDF half")  # one output written, then Ctrl-C
        assert values.exists()
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline.steps.artifact, "render", interrupted_render)
    with pytest.raises(KeyboardInterrupt):
        pipeline.steps.artifact.build(root)
    assert sorted(p.name for p in (tmp_path / "ferrer2024").iterdir()) == []


def test_a_dataset_without_its_checksum_is_not_trusted(tmp_path):
    path = save_dataset(tmp_path / "d.npz", np.array([0, 1]), {"cal": np.log([[0.5, 0.5], [0.2, 0.8]])})
    checksum_path(path).unlink()
    assert corrupt_files(tmp_path) == [path]


def _snakemake(results: Path, *targets: str, **popen) -> tuple[subprocess.Popen, Path]:
    """Start ``snakemake --cores 1 targets`` into ``results``; its output goes to a log file (a pipe could fill)."""
    log = results.parent / f"{results.name}-snakemake-{time.monotonic_ns()}.log"
    cmd = ["snakemake", "--cores", "1", *targets, "--config", f"results={results}"]
    with log.open("w") as sink:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT, text=True, **popen)
    return proc, log


def _run(results: Path, *targets: str, fails: bool = False) -> str:
    proc, log = _snakemake(results, *targets)
    proc.wait(timeout=900)
    assert (proc.returncode != 0) == fails, log.read_text()[-3000:]
    return log.read_text()


def _wait_for_step(proc: subprocess.Popen, log: Path, pattern: str, timeout: float = 300.0) -> int:
    """The pid of the running step whose command line matches ``pattern``; fails as soon as snakemake
    ``proc`` ends without starting it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split()
        if found:
            return int(found[0])
        if proc.poll() is not None:
            raise AssertionError(f"snakemake ended before the step started:\n{log.read_text()[-3000:]}")
        time.sleep(0.05)
    raise AssertionError(f"no process matching {pattern!r} started within {timeout} s")


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """An uninterrupted build of the experiment's values (in CI's complete build, if one is given)."""
    results = given_build() or tmp_path_factory.mktemp("reference")
    _run(results, f"{results}/{VALUES}")
    return results


def test_a_corrupt_cached_dataset_is_named_with_the_command_that_rebuilds_it(reference, tmp_path):
    results = tmp_path / "results"
    _run(results, f"{results}/data/{DATASET}.npz")
    data = results / "data" / f"{DATASET}.npz"
    original = load_dataset(data)
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    log = _run(results, f"{results}/{VALUES}", fails=True)  # the job that reads it stops with the same advice
    assert f"{data} failed the sha256 check" in log and f"snakemake --cores 2 --forcerun {data}" in log
    assert data.exists() and not checksum_matches(data)  # reading the workflow deleted nothing
    _run(results, f"{results}/{VALUES}", "--forcerun", str(data))  # the command it names
    assert checksum_matches(data)
    rebuilt = load_dataset(data)
    np.testing.assert_array_equal(rebuilt[0], original[0])
    assert (results / VALUES).read_bytes() == (reference / VALUES).read_bytes()


@pytest.mark.parametrize("victim", ["step", "snakemake"])
def test_a_run_killed_midway_leaves_nothing_half_written_and_resumes(reference, tmp_path, victim):
    """``step``: the step's process is killed (SIGKILL, as by the OOM killer); ``snakemake``: the user
    presses Ctrl-C (SIGINT to the whole process group). Either way no output file is left that a later
    run would trust, and the next ``snakemake`` finishes with the same bytes as an uninterrupted build."""
    results = tmp_path / "results"
    target = results / VALUES
    proc, log = _snakemake(results, str(target), start_new_session=True)
    step = _wait_for_step(proc, log, f"^python -m pipeline.steps.batch --results {results} experiment={EXPERIMENT}")
    time.sleep(1.0)  # let it get into its computation
    if victim == "step":
        os.kill(step, signal.SIGKILL)
    else:
        os.killpg(proc.pid, signal.SIGINT)
    proc.wait(timeout=300)
    assert proc.returncode != 0, log.read_text()[-2000:]
    assert not target.exists(), "a killed job left its output in place"
    leftovers = list(target.parent.iterdir()) if target.parent.exists() else []
    assert all(re.match(r"^\.fig8(_values\.csv|\.pdf|\.png)\..+$", p.name) for p in leftovers), leftovers
    assert "Nothing to be done" not in _run(results, str(target))
    assert target.read_bytes() == (reference / VALUES).read_bytes()
