"""pipeline.config: every config is Hydra's composition; the cache of composed experiments holds exactly it."""

from __future__ import annotations

import subprocess
import sys

import pytest
from omegaconf import OmegaConf

from pipeline import config
from pipeline.config import compose, compose_config, experiment_config, experiment_files, experiment_names
from pipeline.targets import experiments, jobs


@pytest.mark.parametrize("name", experiment_names(own=False))
def test_each_cached_experiment_is_what_hydra_composes_for_it_alone(name):
    cached = experiment_config(name, results="/tmp/elsewhere")
    hydra = compose_config([f"experiment={name}", "paths.results=/tmp/elsewhere"])
    assert OmegaConf.to_yaml(cached) == OmegaConf.to_yaml(hydra)  # values, their types, key order, interpolations
    assert OmegaConf.is_struct(cached) and OmegaConf.is_struct(hydra)
    assert cached.paths.data == hydra.paths.data == "/tmp/elsewhere/data"


def test_the_files_of_an_experiment_are_those_its_defaults_choose_nested_ones_included():
    assert experiment_files("ferrer2024_table2") == [
        "configs/experiment/ferrer2024_table2.yaml",
        "configs/metric_options/ferrer2024.yaml",  # included by metric_options/ferrer2024_table2.yaml
        "configs/metric_options/ferrer2024_table2.yaml",
        "configs/real_systems/ferrer2024.yaml",
    ]


def test_a_stale_or_broken_cache_is_composed_again(tmp_path, monkeypatch):
    monkeypatch.setattr(config, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(config, "experiment_names", lambda: ["ferrer2024_fig1", "ecd2025_fig2"])
    compose = config.composed_experiments.__wrapped__  # without the per-process memo
    first = compose()
    (cached,) = tmp_path.glob("configs-*.json")
    cached.write_text("{truncated")
    assert compose() == first
    monkeypatch.setattr(config, "_configs_key", lambda: "other")
    assert compose() == first
    assert [p.name for p in tmp_path.glob("configs-*.json")] == ["configs-other.json"]


def test_an_unknown_experiment_names_the_missing_file():
    with pytest.raises(FileNotFoundError, match="no_such_paper_fig1.yaml does not exist"):
        experiment_config("no_such_paper_fig1")


def test_compose_returns_the_root_groups_the_command_line_chose():
    cfg, choices = compose(["dataset=ferrer2024_k2_n400", "experiment=ferrer2024_table2"])
    assert choices == {"dataset": "ferrer2024_k2_n400", "experiment": "ferrer2024_table2"}
    assert "hydra" not in cfg and OmegaConf.is_struct(cfg)


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
