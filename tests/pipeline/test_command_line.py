"""A step's command line: a Hydra app whose task receives the composed config typed (a Root); the compose API
(the batch step) gives the same config."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pipeline.steps.command_line import step

ROOT = Path(__file__).resolve().parents[2]
DATASET = "ferrer2024_k2_n400"


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True)


def test_overrides_reach_the_task_with_the_chosen_groups():
    seen = []
    main = step(seen.append)
    main([f"dataset={DATASET}", "paths.results=/tmp/out"])
    (root,) = seen
    assert dict(root.names) == {"dataset": DATASET}
    assert root.paths.data == "/tmp/out/data" and root.dataset.n_samples == 400


def test_a_run_and_a_multirun_simulate_the_same_bytes(tmp_path):
    composed, app = tmp_path / "composed", tmp_path / "app"
    first = _run("pipeline.steps.simulate", f"dataset={DATASET}", f"paths.results={composed}")
    # A multirun of one job runs through Hydra's launcher.
    second = _run("pipeline.steps.simulate", "-m", f"dataset={DATASET}", f"paths.results={app}")
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    name = f"data/{DATASET}.npz"
    assert (composed / name).read_bytes() == (app / name).read_bytes()


def test_hydra_options_still_work_on_a_step():
    shown = _run("pipeline.steps.fetch", "--cfg", "job", "real_set=netcal/lenet-5-cifar-10")
    assert shown.returncode == 0 and "real_set: netcal/lenet-5-cifar-10" in shown.stdout


def test_a_mistyped_key_is_reported_by_hydra_naming_it_in_one_error():
    typo = _run("pipeline.steps.fetch", "real_sett=netcal/lenet-5-cifar-10")
    assert typo.returncode == 1 and typo.stderr.startswith("Could not override 'real_sett'.")
    assert "Traceback" not in typo.stderr


def test_hydras_help_names_the_step():
    shown = _run("pipeline.steps.fetch", "--help")
    assert shown.returncode == 0 and shown.stdout.startswith("fetch is powered by Hydra."), shown.stdout[:200]
