"""pipeline.config: every config is Hydra's composition; the workflow's jobs from the listed experiments."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hydra.errors import MissingConfigException
from omegaconf import OmegaConf

from pipeline import config
from pipeline.config import compose, config_files
from pipeline.targets import experiments, jobs


def test_the_files_of_an_experiment_are_those_its_defaults_choose_nested_ones_included():
    assert config_files(["experiment=ferrer2024_table2"]) == [
        "configs/config.yaml",  # the root config, which every composition reads
        "configs/experiment/ferrer2024_table2.yaml",
        "configs/metric_options/ferrer2024.yaml",  # included by metric_options/ferrer2024_table2.yaml
        "configs/metric_options/ferrer2024_table2.yaml",
        "configs/real_systems/ferrer2024.yaml",
    ]


def test_an_unknown_experiment_names_the_missing_file():
    with pytest.raises(MissingConfigException, match="Could not find 'experiment/no_such_paper_fig1'"):
        compose(["experiment=no_such_paper_fig1"])


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
    given = ["experiment=ferrer2024_fig1", "experiment=nope_fig9"]
    cmd = [sys.executable, "-m", "pipeline.steps.batch", "--results", str(tmp_path), *given]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=config.CONFIG_DIR.parent)
    assert done.returncode == 2 and "experiment=nope_fig9: " in done.stderr
    assert "Could not find 'experiment/nope_fig9'" in done.stderr
    assert not list(tmp_path.iterdir())
