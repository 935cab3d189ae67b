"""A user's own posterior sets in the workflow: declared by config files, run under the papers' protocols.

The sets are made here: scikit-learn models trained on data the zoo does not use (``make_classification``,
three classes with text labels, and ``make_moons``, two classes in an .npz, with exact zeros). The workflow
runs in a copy of the repository (the declarations go into its configs/); with ``CALIB_TEST_BUILD`` (CI's
complete build) its results start from a copy of that build, so only the own sets' jobs run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import typing
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf
from sklearn.datasets import make_classification, make_moons
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier
from support import given_build, run_calib

from calib._internal.declared import hints
from pipeline import own_sets
from pipeline.config import compose
from pipeline.config_blocks import OwnProtocol
from pipeline.parameters import ConfigError, typed
from pipeline.real_data import ENV_MIRROR, mirror_dir
from pipeline.root import typed_root
from pipeline.sweeps import load_sweep

ROOT = Path(__file__).resolve().parents[2]
# One build serves the module; it shares the repository's logs/ folder with no other group.
pytestmark = pytest.mark.xdist_group("own_sets")

SPECIES = np.array(["ant", "bee", "cat"])
ANY = ("table2", "bootstrap", "reassessing_table", "sharpness_diagrams", "reliability", "ece_bins")
MULTICLASS = (*ANY, "lens_tables", "lens_diagrams", "corp_top_label")
BINARY = (*ANY, "ecd_table", "ecd_figure", "corp", "corp_decompositions")


def _copy_repository(to: Path) -> Path:
    """The repository's workflow files in ``to`` (times kept, so a copied build stays up to date)."""
    skipped = shutil.ignore_patterns(".git", ".snakemake", "results", "logs", "__pycache__", "benchmarks", "tests")
    shutil.copytree(ROOT, to, ignore=skipped)
    return to


def _make_sets(folder: Path) -> None:
    """insects.csv / insects_cal.csv: logistic regression on 3 classes, text labels in column ``species``;
    moons.npz: 15-nearest neighbours on two moons, arrays ``scores`` and ``labels``; k-NN gives many
    samples a class probability of exactly 0 (an infinite NCE), which every protocol must take."""
    x, y = make_classification(n_samples=2400, n_features=10, n_informative=5, n_classes=3, random_state=0)
    model = LogisticRegression(max_iter=500).fit(x[:1200], y[:1200])
    for name, rows in (("insects.csv", slice(1200, 2000)), ("insects_cal.csv", slice(2000, 2400))):
        table = pd.DataFrame(model.predict_proba(x[rows]), columns=SPECIES)
        table.insert(0, "species", SPECIES[y[rows]])
        table.to_csv(folder / name, index=False)
    x, y = make_moons(n_samples=1200, noise=0.3, random_state=0)
    neighbours = KNeighborsClassifier(n_neighbors=15).fit(x[:600], y[:600])
    np.savez(folder / "moons.npz", scores=neighbours.predict_proba(x[600:]), labels=y[600:])


def _declare(repo: Path, name: str, text: str) -> Path:
    path = repo / "configs" / "own" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _snakemake(repo: Path, results: Path, *targets: str) -> subprocess.CompletedProcess:
    """A build in the copy ``repo``, reading the real sets from the repository's mirror (its relative path
    would not reach it from the copy)."""
    mirror = mirror_dir(typed_root(*compose()))
    env = {**os.environ, ENV_MIRROR: str(ROOT / mirror)} if mirror is not None else None
    cmd = ["snakemake", "--cores", "2", *targets, "--config", f"results={results}"]
    return subprocess.run(cmd, cwd=repo, capture_output=True, text=True, check=False, env=env)


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    """The folder of the sets' files (:func:`_make_sets`)."""
    folder = tmp_path_factory.mktemp("own_data")
    _make_sets(folder)
    return folder


@pytest.fixture(scope="module")
def built(tmp_path_factory, data) -> tuple[Path, Path, Path]:
    """(repository copy, results, data folder) after ``snakemake own`` with both sets declared."""
    work = tmp_path_factory.mktemp("own")
    repo = _copy_repository(work / "repo")
    _declare(
        repo,
        "insects",
        f"file: {data / 'insects.csv'}\nkind: probs\nlabels: species\n"
        f"calibration_file: {data / 'insects_cal.csv'}\nlabel: Insects LR\n",
    )
    _declare(repo, "moons", f"file: {data / 'moons.npz'}\nkind: probs\n")
    results = work / "results"
    if given_build() is not None:
        shutil.copytree(given_build(), results)
    # A sweep of the user's naming the binary set, built in the same run (one DAG for the module's builds).
    (repo / "configs" / "sweep" / "own_bins.yaml").write_text(
        "title: ECE against bins on my set\nexperiment:\n  kind: ece_binning\n  sets: [own/moons]\n  n_bins: 15\n"
        "grid:\n  n_bins: [5, 10]\nplot: {log_x: false, ylabel: top-label ECE}\n"
    )
    done = _snakemake(repo, results, "own", str(results / "report.md"), str(results / "sweeps" / "own_bins.png"))
    assert done.returncode == 0, done.stderr[-3000:]
    return repo, results, data


def test_every_protocol_that_fits_the_classes_is_built_and_no_other(built):
    _, results, _ = built
    for name, protocols, absent in (
        ("insects", MULTICLASS + ("heldout",), ("corp", "ecd_table")),
        ("moons", BINARY, ("lens_tables", "corp_top_label", "heldout")),
    ):
        folder = results / "own" / name
        for protocol in protocols:
            assert (folder / f"{protocol}_values.csv").stat().st_size > 0, (name, protocol)
            assert (folder / f"{protocol}.md").exists() or (folder / f"{protocol}.png").stat().st_size > 0
        for protocol in absent:
            assert not (folder / f"{protocol}_values.csv").exists(), (name, protocol)


def test_table2_row_sits_beside_the_papers_systems_and_its_nce_is_calib_evaluates(built):
    repo, results, data = built
    table = pd.read_csv(results / "own" / "insects" / "table2.csv", dtype=str)
    assert table.system.iloc[-1] == "Insects LR"
    assert "SST2 GPT2-4sh" in set(table.system)  # the paper's systems first
    values = pd.read_csv(results / "own" / "insects" / "table2_values.csv")
    ours = values[(values.row == "Insects LR raw") & (values.column == "NCE")].value.item()
    done = run_calib("evaluate", str(data / "insects.csv"), "--labels", "species", "--json", "--quiet", cwd=repo)
    assert done.returncode == 0, done.stderr
    evaluated = {m["metric"]: m["value"] for m in json.loads(done.stdout)["metrics"]}
    assert np.isfinite(ours)
    # Values files keep 10 significant digits (pipeline.io.write_csv): equal to half a unit of the 10th.
    assert ours == pytest.approx(evaluated["NCE"], rel=5e-10)


def test_the_report_has_a_section_for_the_own_sets(built):
    repo, results, _ = built
    section = (results / "own" / "report.md").read_text()
    assert "## Insects LR (`configs/own/insects.yaml`)" in section
    assert "800 samples, 3 classes (ant, bee, cat)." in section
    assert "Not run (for sets of another number of classes): corp" in section
    assert "| Insects LR" in section  # the Table-2 rows, as a table
    full = (results / "report.md").read_text()  # the full report: the same section, a level down
    assert "\n## Your own posterior sets\n" in full
    assert "### Insects LR (`configs/own/insects.yaml`)" in full


def test_a_sweep_accepts_an_own_set_by_name(built):
    _, results, _ = built
    points = pd.read_csv(results / "sweeps" / "own_bins.csv")
    assert sorted(points.n_bins.unique()) == [5, 10]
    assert points.value.between(0, 1).all()


def test_the_ece_bins_protocol_runs_the_grid_of_the_declared_sweep():
    protocol = compose(["experiment=own/ece_bins"])[0].experiment
    assert list(protocol.n_bins) == load_sweep("ece_bins").grid["n_bins"]


def test_a_protocols_misspelt_classes_is_a_config_error_not_multiclass():
    def protocol(classes: str) -> OwnProtocol:
        """The own_protocol block of configs/experiment/own/table2.yaml with ``classes``, typed (the rest of the
        protocol needs an own set chosen)."""
        cfg, _ = compose(["experiment=own/table2", f"experiment.own_protocol.classes={classes}"])
        return typed(OwnProtocol, cfg.experiment.own_protocol, "experiment own/table2.own_protocol")

    for classes in typing.get_args(hints(OwnProtocol)["classes"]):  # the one declaration of the names
        assert protocol(classes).classes == classes
    with pytest.raises(ConfigError) as error:
        protocol("binry")
    assert str(error.value) == (
        "config error at experiment own/table2.own_protocol.classes: 'binry' is not a known name; "
        "allowed: any, binary, multiclass. Did you mean 'binary'?"
    )


def _out_of_range(data: Path) -> Path:
    """insects.csv with numeric labels, the last one 3: no class column has that index."""
    table = pd.read_csv(data / "insects.csv").drop(columns="species")
    path = data / "out_of_range.csv"
    table.assign(label=np.r_[np.arange(len(table) - 1) % 3, 3]).to_csv(path, index=False)
    return path


@pytest.mark.parametrize(
    ("declaration", "key", "says"),
    [
        ("file: {data}/nowhere.csv\nkind: probs\n", "file", "nowhere.csv does not exist"),
        ("file: {data}/insects.csv\nkind: prob\nlabels: species\n", "kind", "Did you mean 'probs'?"),
        ("file: {data}/insects.csv\nkind: probs\nlabels: species\nsha256: '{ab}'\n", "sha256", "has sha256"),
        ("file: {data}/insects.csv\nkind: probs\nlabels: species\nsha256: {digits}\n", "sha256", "in quotes"),
        ("file: {data}/out_of_range.csv\nkind: probs\n", "labels", "out_of_range.csv"),
        ("file: {data}/insects.csv\nkind: probs\nlabel_column: species\n", "label_column", "unknown key"),
        ("file: {data}/insects.csv\nkind: probs\n", "labels", "with labels: COLUMN"),  # the fix, as a key
        (
            "file: {data}/moons.npz\nkind: probs\nlabels: species\ncalibration_file: {data}/insects_cal.csv\n",
            "calibration_file",
            "classes",
        ),
    ],
)
def test_a_wrong_declaration_is_one_line_naming_the_file_and_key(data, declaration, key, says):
    _out_of_range(data)
    text = declaration.format(data=data, ab="ab" * 32, digits="1" * 64)
    with pytest.raises(ConfigError) as error:
        own_sets.shape("bad", own_sets.declared_in(OmegaConf.create(text), "bad"))
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"config error at configs/own/bad.yaml: key {key}: ")
    assert says in message


def test_the_workflow_stops_on_a_wrong_declaration_before_any_work(built, tmp_path):
    repo, _, data = built
    bad = _declare(repo, "bad", f"file: {_out_of_range(data)}\nkind: probs\n")
    results = tmp_path / "results"
    try:
        done = _snakemake(repo, results, "own")
    finally:
        bad.unlink()
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if "error" in line.lower()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("config error at configs/own/bad.yaml: key labels: ")
    assert "Traceback" not in done.stderr
    assert not results.exists()  # no job ran
