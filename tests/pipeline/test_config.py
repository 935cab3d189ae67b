"""pipeline.config.compose_experiment: the same config Hydra composes, for every experiment, or a clear refusal."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
import yaml
from omegaconf import OmegaConf

from pipeline import config
from pipeline.config import UnsupportedDefaults, compose_config, compose_experiment, experiment_names
from pipeline.targets import experiments, jobs


@pytest.mark.parametrize("name", experiment_names())
def test_every_experiment_composes_as_hydra_composes_it(name):
    ours = compose_experiment(name, results="/tmp/elsewhere")
    hydra = compose_config([f"experiment={name}", "paths.results=/tmp/elsewhere"])
    assert OmegaConf.to_yaml(ours) == OmegaConf.to_yaml(hydra)  # values, key order and interpolations
    assert OmegaConf.is_struct(ours) and OmegaConf.is_struct(hydra)
    assert ours.paths.data == hydra.paths.data == "/tmp/elsewhere/data"


@pytest.fixture
def configs(tmp_path, monkeypatch):
    """A copy of configs/ that compose_experiment reads instead."""
    root = tmp_path / "configs"
    shutil.copytree(config.CONFIG_DIR, root)
    monkeypatch.setattr(config, "CONFIG_DIR", root)
    return root


@pytest.mark.parametrize(
    "entry", ["- optional /metric_options@options: calib_defaults", "- metric_options@options: calib_defaults"]
)
def test_a_defaults_entry_it_does_not_merge_is_refused_not_guessed(configs, entry):
    path = configs / "experiment" / "ferrer2024_fig1.yaml"
    path.write_text(f"defaults:\n  {entry}\n  - _self_\n" + path.read_text())
    with pytest.raises(UnsupportedDefaults, match="ferrer2024_fig1.yaml"):
        compose_experiment("ferrer2024_fig1")


def test_an_unknown_experiment_names_the_missing_file(configs):
    with pytest.raises(FileNotFoundError, match="no_such_paper_fig1.yaml does not exist"):
        compose_experiment("no_such_paper_fig1")


def test_each_experiment_is_in_exactly_one_job_and_costly_kinds_have_their_own():
    listed = experiments()
    grouped = jobs(listed)
    assert sorted(e.name for members in grouped.values() for e in members) == sorted(e.name for e in listed)
    tables = grouped["vaicenavicius2019/tables_lenet5"]
    assert [e.name for e in tables] == ["vaicenavicius2019_tables_lenet5"]
    assert len(grouped["reassessing"]) > 30 and all(e.paper == "reassessing" for e in grouped["reassessing"])


def test_the_batch_step_refuses_an_unknown_experiment_before_building_anything(tmp_path):
    cmd = [sys.executable, "-m", "pipeline.steps.batch", "--results", str(tmp_path), "ferrer2024_fig1", "nope_fig9"]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=config.CONFIG_DIR.parent)
    assert done.returncode == 2 and "['nope_fig9']" in done.stderr and "ls configs/experiment" in done.stderr
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("path", sorted(config.CONFIG_DIR.rglob("*.yaml")), ids=lambda p: p.name)
def test_each_config_file_reads_as_omegaconf_reads_it(path):
    assert config._read(path) == OmegaConf.to_container(OmegaConf.load(path))


SCALARS = ["1e-3", "1E3", "-2.5e+4", "1.0e3", "1.", ".5", ".5e-1", ".5e3", "+1_000.5", "1_000", "12", "0x1F", "0o7",
           ".inf", "-.Inf", ".nan", "1:30", "1:30.5", "2019-01-01", "2019-01-01 10:00:00", "yes", "off", "null", "~",
           "1e", "e3", "1.2.3", "'1e-3'", "${paths.results}/x"]  # fmt: skip


@pytest.mark.parametrize("scalar", SCALARS)
def test_a_scalar_reads_as_omegaconf_reads_it(tmp_path, scalar):
    path = tmp_path / "c.yaml"
    path.write_text(f"a: {scalar}\nb:\n  - {scalar}\n")
    ours, theirs = config._read(path), OmegaConf.to_container(OmegaConf.load(path))
    assert ours == theirs and type(ours["a"]) is type(theirs["a"])


def test_a_key_given_twice_is_refused(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("a: 1\nb: 2\na: 3\n")
    with pytest.raises(yaml.constructor.ConstructorError, match="duplicate key a"):
        config._read(path)
    with pytest.raises(yaml.constructor.ConstructorError):  # as OmegaConf refuses it
        OmegaConf.load(path)
