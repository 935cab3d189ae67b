"""One configuration path (issue 58): every listed experiment composes and types, an own set's job runs by hand
with the command the workflow runs, no module reads a composed config after typing, and reading the workflow
writes nothing."""

from __future__ import annotations

import ast
import filecmp
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pipeline.config import CONFIG_DIR, compose
from pipeline.root import typed_root

REPOSITORY = CONFIG_DIR.parent
# The modules that compose a config or type it: the only ones that may hold a composed config.
TYPING = {"config.py", "root.py", "parameters.py", "kinds.py"}


def _run(*args: str, cwd: Path = REPOSITORY) -> subprocess.CompletedProcess:
    """``python *args`` in ``cwd``, running the code of ``cwd``."""
    env = dict(os.environ, PYTHONPATH=str(cwd))
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    """A copy of the repository with a binary own set declared as configs/own/mine.yaml (a copy: tests run at
    once, and the others list the repository's experiments)."""
    folder = tmp_path_factory.mktemp("issue58")
    skipped = shutil.ignore_patterns(".git", ".snakemake", "results", "logs", "__pycache__", "benchmarks", "tests")
    repository = shutil.copytree(REPOSITORY, folder / "repository", ignore=skipped)
    rng = np.random.default_rng(58)
    p = rng.uniform(0.05, 0.95, 400)
    frame = pd.DataFrame({"label": (rng.uniform(size=400) < p).astype(int), "p0": 1 - p, "p1": p})
    frame.to_csv(folder / "mine.csv", index=False)
    (repository / "configs" / "own" / "mine.yaml").write_text(
        f"file: {folder / 'mine.csv'}\nkind: probs\nlabel: Mine\n"
    )
    return repository


LISTED = """
from pipeline import config, targets
from pipeline.config import compose, listed_jobs
from pipeline.root import Root, typed_root

listed = targets.experiments()
assert listed and {e.overrides for e in listed} <= set(listed_jobs())
own = [e for e in listed if e.own_set == "mine"]
protocols = config.group_options(config.OWN_PROTOCOLS)
assert {e.name for e in own} == {f"own/{p}" for p in protocols if p != "heldout"}  # heldout needs a calibration file
for e in listed:
    assert isinstance(e.root, Root) and e.parameters is e.root.experiment
    assert e.command.split()[0] == f"experiment={e.name}"
for e in own:
    assert e.key == f"own/mine/{e.artifact}" and e.own.label == "Mine", e.key
    assert e.parameters.own_protocol is not None and len(e.digest) == 64
# what a job's log prints composes, afresh, to the typed root the workflow lists
by_overrides = {e.overrides: e for e in listed}
for overrides in [("experiment=ferrer2024_table2",), ("experiment=own/table2", "own=mine")]:
    assert typed_root(*compose(overrides)) == by_overrides[overrides].root
print(len(listed), len(own))
"""


def test_every_listed_experiment_composes_and_types(copy):
    """Every experiment the workflow lists, own sets' included, is composed by Hydra and typed; composing its
    overrides afresh gives the same typed root."""
    listed = _run("-c", LISTED, cwd=copy)
    assert listed.returncode == 0, listed.stderr[-3000:]
    n_listed, n_own = map(int, listed.stdout.split())
    assert n_own == len(list((copy / "configs" / "experiment" / "own").glob("*.yaml"))) - 1
    assert n_listed == n_own + len(list((copy / "configs" / "experiment").glob("*.yaml")))


def test_an_own_set_job_runs_by_hand_as_the_workflow_runs_it(copy, tmp_path):
    """The by-hand command (a Hydra app) and the workflow's batch step write the same bytes."""
    overrides = ("experiment=own/ecd_table", "own=mine")
    for results in ("hand", "batch"):
        fetched = _run("-m", "pipeline.steps.fetch", "real_set=own/mine", "own=mine",
                       f"paths.results={tmp_path / results}", cwd=copy)  # fmt: skip
        assert fetched.returncode == 0, fetched.stderr
    hand = _run("-m", "pipeline.steps.artifact", *overrides, f"paths.results={tmp_path / 'hand'}", cwd=copy)
    assert hand.returncode == 0, hand.stderr
    batch = _run("-m", "pipeline.steps.batch", "--results", str(tmp_path / "batch"), shlex.join(overrides), cwd=copy)
    assert batch.returncode == 0, batch.stderr
    printed = shlex.join([*overrides, f"paths.results={tmp_path / 'batch'}"])
    assert f"python -m pipeline.steps.artifact {printed}" in batch.stdout
    written = sorted(p.relative_to(tmp_path / "hand") for p in (tmp_path / "hand" / "own").rglob("*.*"))
    assert [p.name for p in written] == ["ecd_table.csv", "ecd_table.md", "ecd_table.tex", "ecd_table_values.csv"]
    for path in written:
        assert filecmp.cmp(tmp_path / "hand" / path, tmp_path / "batch" / path, shallow=False), path


def test_a_declaration_in_the_old_folder_stops_with_the_move_that_fixes_it(copy, tmp_path):
    """A set declared where earlier versions read them stops the listing with a command; the command, run as
    shown, makes the same set listed (the copy is its own: the module's copy is left as it was)."""
    repository = shutil.copytree(copy, tmp_path / "repository")
    old = repository / "configs" / "real_systems" / "own"
    old.mkdir()
    (repository / "configs" / "own" / "mine.yaml").rename(old / "mine.yaml")
    listing = "from pipeline.targets import experiments; print(sorted({e.own_set for e in experiments()}))"
    told = _run("-c", listing, cwd=repository)
    assert told.returncode != 0 and "configs/real_systems/own/ holds mine.yaml" in told.stderr
    command = told.stderr.strip().splitlines()[-1].split("move them: ")[1]
    assert subprocess.run(command, shell=True, cwd=repository, check=False).returncode == 0
    listed = _run("-c", listing, cwd=repository)
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert listed.stdout.strip() == "['', 'mine']"


def test_an_own_set_fetch_needs_its_declaration(copy, tmp_path):
    told = _run("-m", "pipeline.steps.fetch", "real_set=own/mine", f"paths.results={tmp_path}", cwd=copy)
    assert told.returncode != 0 and "add own=mine" in told.stderr


def test_a_step_says_what_it_needs():
    told = _run("-m", "pipeline.steps.artifact")
    assert told.returncode != 0 and "experiment=<paper>_<artifact>" in told.stderr
    assert "experiment=own/<protocol> own=<set>" in told.stderr
    told = _run("-m", "pipeline.steps.artifact", "experiment=ferrer2024_fig1", "pahts.results=x")
    assert told.returncode != 0 and "pahts" in told.stderr


def test_hydra_options_work_on_a_step():
    shown = _run("-m", "pipeline.steps.artifact", "experiment=ferrer2024_fig1", "--cfg", "job")
    assert shown.returncode == 0 and "paper: ferrer2024" in shown.stdout
    helped = _run("-m", "pipeline.steps.simulate", "--help")
    assert helped.returncode == 0 and "own" in helped.stdout and "experiment" in helped.stdout


def _pipeline_modules() -> list[Path]:
    return sorted((REPOSITORY / "pipeline").rglob("*.py"))


def test_no_module_reads_a_composed_config_after_typing():
    """Outside the modules that compose and type, nothing imports omegaconf (so nothing holds a composed
    config), and nothing calls ``cfg.get(...)`` or indexes ``cfg[...]``."""
    offenders = []
    for path in _pipeline_modules():
        if path.name in TYPING and path.parent.name == "pipeline":
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom | ast.Import):
                modules = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                offenders += [f"{path.name}: imports {m}" for m in modules if m and m.split(".")[0] == "omegaconf"]
            receiver = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
                receiver = node.func.value
            elif isinstance(node, ast.Subscript):
                receiver = node.value
            if isinstance(receiver, ast.Name) and receiver.id in ("cfg", "config", "exp", "experiment"):
                offenders.append(f"{path.name}:{node.lineno}: {ast.unparse(node)[:60]}")
    rules = [REPOSITORY / "Snakefile", *sorted((REPOSITORY / "pipeline" / "rules").glob("*.smk"))]
    for path in rules:
        text = path.read_text()
        offenders += [f"{path.name}: {word}" for word in ("omegaconf", "compose(", "cfg.get(") if word in text]
    assert offenders == []


def test_the_root_keys_are_declared_once():
    """configs/config.yaml's keys are the typed root's fields (and the own set's names block)."""
    cfg, choices = compose()
    root = typed_root(cfg, choices)
    assert root.experiment is None and root.own is None and root.names == {}
    told = subprocess.run(
        [sys.executable, "-c", "from pipeline.config import compose; from pipeline.root import typed_root;"
         "typed_root(*compose(['+pahts=1']))"],
        cwd=REPOSITORY, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(REPOSITORY)),
    )  # fmt: skip
    assert "config error at config.pahts: unknown key" in told.stderr and "Did you mean 'paths'?" in told.stderr


def _tree(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` (not Python's __pycache__, not Snakemake's own bookkeeping in .snakemake/ but
    ours in .snakemake/calib/): its size and modification time."""
    out = {}
    for path in folder.rglob("*"):
        parts = path.relative_to(folder).parts
        if "__pycache__" in parts or (parts[0] == ".snakemake" and parts[1:2] != ("calib",)) or not path.is_file():
            continue
        stat = path.stat()
        out[str(path.relative_to(folder))] = (stat.st_size, stat.st_mtime_ns)
    return out


def test_reading_the_workflow_writes_nothing(copy, tmp_path):
    """``snakemake -n`` parses the Snakefile and its rules and writes, deletes or changes no file, composing every
    job afresh (no cache yet) with an own set declared: a corrupt cached data set is named with its fix, not
    deleted; captions are written where artifacts are rendered. In a copy of its own, which no other test runs
    in."""
    # what the module's other tests wrote in their copy (captions of rendered artifacts) left out
    repository = shutil.copytree(copy, tmp_path / "repository", ignore=shutil.ignore_patterns(".snakemake"))
    results = tmp_path / "results"
    data = results / "data"
    data.mkdir(parents=True)
    (data / "broken.npz").write_bytes(b"not a zip")
    (data / "broken.npz.sha256").write_text("0" * 64 + "\n")
    before_repository, before_results = _tree(repository), _tree(results)
    dry = subprocess.run(
        ["snakemake", "-n", "--cores", "1", "--config", f"results={results}"],
        cwd=repository, capture_output=True, text=True, check=False,
        env=dict(os.environ, PYTHONPATH=str(repository)),
    )  # fmt: skip
    assert dry.returncode == 0, dry.stderr[-2000:]
    assert f"--forcerun {data / 'broken.npz'}" in dry.stderr
    assert "artifact_own_mine_table2" in dry.stdout  # the own set's jobs were listed
    assert not (repository / ".snakemake" / "calib").exists()
    assert _tree(repository) == before_repository
    assert _tree(results) == before_results
