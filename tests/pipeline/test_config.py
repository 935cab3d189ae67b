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


DATASETS = sorted(p.stem for p in (config.CONFIG_DIR / "dataset").glob("*.yaml"))
SWEEPS = sorted(p.stem for p in (config.CONFIG_DIR / "sweep").glob("*.yaml"))
COMMAND_LINES = (
    [[], ["paths.results=/tmp/x y"], ["experiment=ferrer2024_fig1", "experiment.title=other"]]
    + [[f"dataset={name}", "paths.results=/tmp/r"] for name in DATASETS]
    + [[f"sweep={name}", "point=3"] for name in SWEEPS]
    + [
        ["real_set=ferrer2024/sst2_gpt2", "real_data.download=true", "real_data.timeout_seconds=1e-3"],
        ["zoo_dataset=digits", "zoo.seed=7", "real_data.mirror=null", "real_data.url=yes"],
        ["real_set='1.5'", "paths.data=${paths.results}/elsewhere"],
    ]
)


@pytest.mark.parametrize("overrides", COMMAND_LINES, ids=" ".join)
def test_a_plain_command_line_composes_as_hydra_composes_it(overrides):
    cfg, choices = config.compose_command_line(overrides)
    hydra = compose_config(overrides)
    assert OmegaConf.to_yaml(cfg) == OmegaConf.to_yaml(hydra)  # values, their types, key order, interpolations
    assert OmegaConf.is_struct(cfg) and OmegaConf.is_struct(hydra)
    assert choices == {o.split("=")[0]: o.split("=")[1] for o in overrides if o.split("=")[0] in config.ROOT_GROUPS}


@pytest.mark.parametrize(
    "overrides",
    [
        ["--cfg", "job"],
        ["--help"],
        ["-m", "dataset=ferrer2024_k2_n400"],
        ["+extra=1"],
        ["~zoo"],
        ["++zoo.seed=1"],
        ["zoo.seed=1,2"],
        ["zoo.fractions=[0.5,0.5]"],
        ["zoo=1"],
        ["no_such_key=1"],
        ["zoo.no_such_key=1"],
        ["dataset=no_such_dataset"],
        ["dataset=null"],
        ["experiment@elsewhere=ferrer2024_fig1"],
        ["hydra.run.dir=/tmp"],
        ["paths.results"],
    ],
    ids=" ".join,
)
def test_any_other_command_line_is_left_to_hydra(overrides):
    assert config.compose_command_line(overrides) is None
