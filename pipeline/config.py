"""Where the configs are and how to compose them outside a Hydra app (the Snakefile, the report, tests).

A leaf: it imports nothing of the pipeline, so any module may import it.
"""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from omegaconf import DictConfig, OmegaConf

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"


def compose_config(overrides: list[str] | None = None) -> DictConfig:
    """The root config with ``overrides`` applied, exactly as a step would see it."""
    if GlobalHydra.instance().is_initialized():  # inside a Hydra app: reuse its config search path
        return compose(config_name="config", overrides=overrides or [])
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        return compose(config_name="config", overrides=overrides or [])


def experiment_names() -> list[str]:
    """Every experiment config, sorted by name (configs/experiment/*.yaml)."""
    return sorted(p.stem for p in (CONFIG_DIR / "experiment").glob("*.yaml"))


def experiment_files(name: str) -> list[Path]:
    """The files an experiment's config is composed from: its own YAML and the group files of its
    ``defaults`` list (e.g. ``/metric_options@options: calib_defaults``), so editing any of them
    reruns its jobs."""
    path = CONFIG_DIR / "experiment" / f"{name}.yaml"
    files = [path]
    for entry in OmegaConf.load(path).get("defaults", []):
        if isinstance(entry, str) or len(entry) != 1:
            continue
        ((group, option),) = entry.items()
        files.append(CONFIG_DIR / group.lstrip("/").split("@")[0] / f"{option}.yaml")
    return files
