"""pipeline.config: every config is Hydra's composition; the workflow's jobs from the listed experiments."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from hydra.errors import MissingConfigException
from omegaconf import OmegaConf

from pipeline import config
from pipeline.config import compose
from pipeline.targets import experiments, jobs


def test_a_jobs_digest_follows_its_composed_config():
    """A job reruns when its composition changes, whichever file changed it (here a value nested two includes
    deep, metric_options/ferrer2024.yaml's under ferrer2024_table2's), and only then."""
    plain = compose(["experiment=ferrer2024_table2"])[0]
    again = compose(["experiment=ferrer2024_table2"])[0]
    changed = compose(["experiment=ferrer2024_table2", "experiment.options.n_folds=3"])[0]
    digest = [config.Composition((), OmegaConf.to_container(c), {}).digest for c in (plain, again, changed)]
    assert digest[0] == digest[1] != digest[2]


def test_a_damaged_cache_is_composed_again_and_a_changed_config_names_another(tmp_path, monkeypatch):
    """The cache of compositions is read only when it is what remember() wrote for these configs."""
    monkeypatch.setattr(config, "CACHE_DIR", tmp_path)
    config._known.cache_clear()
    job = ("experiment=ferrer2024_fig1",)
    (composition,) = config.compositions([job])
    path = config.remember()
    assert path is not None and path.parent == tmp_path and config.remember() is None  # nothing new
    config._known.cache_clear()
    assert config.compositions([job]) == [composition]  # read back
    path.write_text('{"experiment=ferrer2024_fig1": [1, 2]}')  # not what remember() writes
    config._known.cache_clear()
    assert config.compositions([job]) == [composition]  # composed again
    configs = tmp_path / "configs"
    shutil.copytree(config.CONFIG_DIR, configs)
    monkeypatch.setattr(config, "CONFIG_DIR", configs)
    before = config._cache_path()
    (configs / "experiment" / "ferrer2024_fig1.yaml").write_text(
        (configs / "experiment" / "ferrer2024_fig1.yaml").read_text() + "# edited\n"
    )
    assert config._cache_path() != before
    config._known.cache_clear()


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
