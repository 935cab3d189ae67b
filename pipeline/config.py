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


def compose_experiment(name: str, results: str | None = None) -> DictConfig:
    """The root config with ``experiment=<name>`` (and ``paths.results=<results>``), as Hydra composes it.

    Hydra's ``compose`` spends ~70 ms per call building its own ``hydra`` node; the workflow composes
    every experiment to build its DAG and again in its jobs, so this merges the YAML files itself
    (a few ms), following the defaults-list rules the configs use: ``_self_`` (last when absent),
    ``/<group>@<package>: <option>`` (package relative to the including one, ``_here_`` for the same),
    a bare name for another config of the same group, and ``null`` options. Any other entry raises
    :class:`UnsupportedDefaults`. tests/pipeline/test_config.py checks that the result equals
    Hydra's composition for every experiment config.

    Example: ``compose_experiment("ferrer2024_fig1", results="/tmp/out").paths.data`` is ``/tmp/out/data``.
    """
    root = OmegaConf.load(CONFIG_DIR / "config.yaml")
    root.pop("defaults", None)
    root.pop("hydra", None)
    pieces = [("", root), *_pieces(CONFIG_DIR / "experiment" / f"{name}.yaml", "experiment")]
    cfg = OmegaConf.merge(*(OmegaConf.create(_nest(package, node)) for package, node in pieces))
    if results is not None:
        cfg.paths.results = results
    OmegaConf.set_struct(cfg, True)
    return cfg


class UnsupportedDefaults(ValueError):
    """A defaults-list entry :func:`compose_experiment` does not merge itself (Hydra's ``compose_config`` does)."""


def _pieces(path: Path, package: str) -> list[tuple[str, DictConfig]]:
    """(package, content) of ``path`` and of its defaults list, in Hydra's merge order."""
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: no config of that name under {CONFIG_DIR}")
    node = OmegaConf.load(path)
    entries = list(node.pop("defaults", []))
    if "_self_" not in entries:
        entries.append("_self_")
    out = []
    for entry in entries:
        if entry == "_self_":
            out.append((package, node))
        elif isinstance(entry, str):
            out += _pieces(path.parent / f"{entry}.yaml", package)
        elif isinstance(entry, DictConfig) and len(entry) == 1:
            ((key, option),) = entry.items()
            group, _, target = str(key).partition("@")
            if not group.startswith("/") or not isinstance(option, str | None):
                raise UnsupportedDefaults(f"{path}: defaults entry {entry} (use /<group>@<package>: <option>)")
            if option is not None:
                target = package if target == "_here_" else ".".join(p for p in (package, target) if p)
                out += _pieces(CONFIG_DIR / group.lstrip("/") / f"{option}.yaml", target)
        else:
            raise UnsupportedDefaults(f"{path}: defaults entry {entry} is not one compose_experiment merges")
    return out


def _nest(package: str, node: DictConfig) -> dict:
    """``node`` placed at the dotted ``package`` of an empty root."""
    for key in reversed(package.split(".") if package else []):
        node = {key: node}
    return node
