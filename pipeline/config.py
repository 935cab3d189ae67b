"""How the pipeline composes its configs: by Hydra's compose API, with a cache of the composed experiments.

Every config a step, the Snakefile, the report or a test sees is what Hydra composes from configs/. The
workflow reads every experiment's and sweep's config to build its DAG, and its jobs and the report read
them again; since a composition is slow next to reading its result, the composed experiments and sweeps
are kept in ``.snakemake/calib/``, keyed by the sha256 of every config file and of Hydra's version: a
cache of Hydra's result, not a reading of our own. A missing, stale or unreadable cache is composed again.

A leaf: it imports nothing of the pipeline, so any module may import it. Hydra is imported by the
functions that compose (the cache and the experiment list do without it).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from calib._internal.files import atomic_write

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"
CACHE_DIR = CONFIG_DIR.parent / ".snakemake" / "calib"
# Experiments composed per Hydra call: each call pays Hydra's own node once, and merging grows slower as the
# composed tree grows (tests/pipeline/test_config.py checks that a batch composes as single calls do).
_BATCH = 24
OWN_SETS = "real_systems/own"  # the config group of the user's own posterior sets
OWN_PROTOCOLS = "own_protocol"  # the config group of the protocols run on each of them


def compose(overrides: list[str] | None = None) -> tuple[DictConfig, dict[str, str]]:
    """The root config with Hydra command-line ``overrides``, and the options they choose for the root's groups.

    Hydra's compose API reads the overrides (its grammar, its errors); the result has no ``hydra`` node and
    is in struct mode, as a Hydra app's config.

    Example: ``compose(["dataset=ferrer2024_k2_n400"])[1]`` is ``{"dataset": "ferrer2024_k2_n400"}``.
    """
    cfg, choices = _composed(overrides or [])
    return cfg, {group: option for group, option in choices.items() if "/" not in group and "@" not in group}


def compose_config(overrides: list[str] | None = None) -> DictConfig:
    """The root config with ``overrides`` applied, as a step sees it (:func:`compose` without the choices)."""
    return compose(overrides)[0]


def _composed(overrides: list[str]) -> tuple[DictConfig, dict[str, str]]:
    """Hydra's composition of the root config with ``overrides`` (no ``hydra`` node, struct mode), and every
    choice of its defaults lists (``<group>@<package>``: option)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    if not GlobalHydra.instance().is_initialized():  # inside a Hydra app, the app's search path is kept
        initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None)
    cfg = hydra_compose(config_name="config", overrides=overrides, return_hydra_config=True)
    choices = {group: option for group, option in cfg.hydra.runtime.choices.items() if option is not None}
    OmegaConf.set_struct(cfg, False)
    del cfg["hydra"]
    OmegaConf.set_struct(cfg, True)
    return cfg, choices


def experiment_names(own: bool = True) -> list[str]:
    """Every experiment, sorted by name: each config of configs/experiment/, and (``own``) each own set's
    protocols (``own_<set>_<protocol>``, :func:`composed_experiments`)."""
    return sorted(composed_experiments()["configs"]) if own else _group_names("experiment")


def _group_names(group: str) -> list[str]:
    return sorted(p.stem for p in (CONFIG_DIR / group).glob("*.yaml"))


def own_set_names() -> list[str]:
    """Every posterior set of the user's own, sorted by name (configs/real_systems/own/<name>.yaml)."""
    return _group_names(OWN_SETS)


def own_set_config(name: str) -> DictConfig:
    """The declaration of the own set ``name`` (configs/real_systems/own/<name>.yaml), as Hydra composes it."""
    return OmegaConf.create(composed_experiments()["own_sets"][name])


def dataset_names() -> list[str]:
    """Every synthetic dataset config, sorted by name (configs/dataset/*.yaml)."""
    return _group_names("dataset")


def sweep_names() -> list[str]:
    """Every declared sweep, sorted by name (configs/sweep/*.yaml)."""
    return _group_names("sweep")


def sweep_config(name: str) -> DictConfig:
    """The ``sweep`` block of the root config with ``sweep=<name>``, as Hydra composes it (from the cache).

    Example: ``sweep_config("ece_bins").grid.n_bins`` lists the bin counts it sweeps.
    """
    sweeps = composed_experiments()["sweeps"]
    if name not in sweeps:
        raise FileNotFoundError(f"{CONFIG_DIR / 'sweep' / name}.yaml does not exist: no sweep of that name")
    return OmegaConf.create(sweeps[name])


def experiment_config(name: str, results: str | None = None) -> DictConfig:
    """The root config with ``experiment=<name>`` (and ``paths.results=<results>``), as Hydra composes it.

    Read from the cache of composed experiments (:func:`composed_experiments`).

    Example: ``experiment_config("ferrer2024_fig1", results="/tmp/out").paths.data`` is ``/tmp/out/data``.
    """
    composed = composed_experiments()
    if name not in composed["configs"]:
        raise FileNotFoundError(f"{CONFIG_DIR / 'experiment' / name}.yaml does not exist: no experiment of that name")
    cfg = OmegaConf.create(composed["configs"][name])
    if results is not None:
        cfg.paths.results = results
    OmegaConf.set_struct(cfg, True)
    return cfg


def experiment_files(name: str) -> list[str]:
    """The config files ``experiment=<name>`` is composed from (relative to the repository): its own and
    those its defaults list includes, as Hydra chose them, so that editing any of them reruns its jobs."""
    return composed_experiments()["files"][name]


@functools.cache  # once per process: the configs do not change under a running step
def composed_experiments() -> dict:
    """Every experiment's composed root config (``configs``: name -> plain container), the config files
    each is composed from (``files``: name -> paths), every sweep's block (``sweeps``: name -> plain
    container), every own set's declaration (``own_sets``) and protocol (``own_protocols``), from the cache
    or composed by Hydra and cached. Each own set under each protocol is an experiment
    (``own_<set>_<protocol>``): the protocol's config, and the root's ``own`` block its interpolations name.
    The result is shared: read it, do not change it."""
    path = CACHE_DIR / f"configs-{_configs_key()}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        pass
    names = _group_names("experiment")
    batches = [names[start : start + _BATCH] for start in range(0, len(names), _BATCH)]
    composed = {"configs": {}, "files": {}, "sweeps": {}}
    # The batches are independent: composed on every core (each in a process of its own, Hydra being global).
    workers = min(len(batches), os.cpu_count() or 1)
    if workers > 1:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
            results = list(pool.map(_composed_batch, batches))
    else:
        results = [_composed_batch(batch) for batch in batches]
    for configs, files in results:
        composed["configs"].update(configs)
        composed["files"].update(files)
    groups = {"sweeps": "sweep", "own_sets": OWN_SETS, "own_protocols": OWN_PROTOCOLS}
    overrides = [f"+{group}@{key}.{name}={name}" for key, group in groups.items() for name in _group_names(group)]
    root, files = _composed_with_files(overrides)
    for key in groups:
        composed[key] = root.pop(key, {})
    # Each own set under each protocol: the protocol's experiment, and beside it the root's ``own`` block that
    # its ``${own.set}`` and ``${own.label}`` name (the set's name is its file's, so it is not in the file).
    for name, declaration in composed["own_sets"].items():
        for protocol, template in composed["own_protocols"].items():
            experiment = dict(template)
            own = {"name": name, "set": f"own/{name}", "label": declaration.get("label") or name}
            own |= experiment.pop("own_protocol", {})
            needs = own.pop("needs", None)  # a declaration key the protocol reads (calibration_file)
            if needs and not declaration.get(needs):
                continue
            key = f"own_{name}_{protocol}"
            composed["configs"][key] = {**root, "experiment": experiment, "own": own}
            composed["files"][key] = sorted({f"configs/{OWN_SETS}/{name}.yaml", *files(f"own_protocols.{protocol}")})
    for stale in CACHE_DIR.glob("configs-*.json"):
        stale.unlink(missing_ok=True)
    atomic_write(path, lambda tmp: tmp.write_text(json.dumps(composed)))  # concurrent jobs may write it at once
    return composed


def _composed_batch(names: list[str]) -> tuple[dict, dict]:
    """Compose ``experiment=<name>`` for each of ``names`` in one Hydra call: each experiment as the option of
    the experiment group placed at the package ``experiments.<name>``, which composes its defaults list
    relative to that package, exactly as ``experiment=<name>`` does at ``experiment``."""
    root, files = _composed_with_files([f"+experiment@experiments.{name}={name}" for name in names])
    experiments = root.pop("experiments")
    configs = {name: {**root, "experiment": experiments[name]} for name in names}
    return configs, {name: files(f"experiments.{name}") for name in names}


def _composed_with_files(overrides: list[str]) -> tuple[dict, Callable[[str], list[str]]]:
    """Hydra's composition with ``overrides`` (a plain container), and the config files (relative to the
    repository) that the composition read for a package, nested defaults included, as Hydra lists them."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.types import RunMode

    cfg, _ = _composed(overrides)
    defaults = GlobalHydra.instance().config_loader().compute_defaults_list("config", overrides, RunMode.RUN)

    def files(package: str) -> list[str]:
        return sorted(
            f"configs/{d.config_path}.yaml" for d in defaults.defaults if f"{d.package}.".startswith(f"{package}.")
        )

    return OmegaConf.to_container(cfg), files


def _configs_key() -> str:
    """sha256 of every config file (path and bytes), of Hydra's version and of this module (what it caches)."""
    digest = hashlib.sha256(importlib.metadata.version("hydra-core").encode() + Path(__file__).read_bytes())
    for file in sorted(CONFIG_DIR.rglob("*.yaml")):
        digest.update(str(file.relative_to(CONFIG_DIR)).encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()[:20]
