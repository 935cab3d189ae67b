"""How the pipeline composes its configs: one function, :func:`compose`, and one cache of what it composed.

Every config a step, the Snakefile, the report or a test sees is what Hydra composes from ``configs/`` for
some command-line overrides. By hand, a step is a Hydra app (:mod:`pipeline.steps.command_line`); everything
else composes with :func:`compose`, the same overrides giving the same config. The workflow lists its jobs
(:func:`listed_jobs`: every ``experiment=<paper>_<artifact>``, and ``experiment=own/<protocol> own=<set>``
for each own set and protocol) and reads each one's composition; since composing is slow next to reading its
result, :func:`compositions` keeps them in memory, reads them from one file in ``.snakemake/calib/``, and
:func:`remember` writes that file (the workflow does when a run starts, never when it only reads). The file
is keyed by the sha256 of every config file, of Hydra's version and of this module; a missing, stale or
unreadable one is composed again.

It imports only the pipeline's config errors (:mod:`pipeline.parameters`), so any module may import it. Hydra
is imported by the functions that compose.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from calib._internal.files import atomic_write
from pipeline.parameters import ConfigError, message

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"
CACHE_DIR = CONFIG_DIR.parent / ".snakemake" / "calib"
OWN_SETS = "own"  # the config group of the user's own posterior sets (configs/own/<name>.yaml)
OWN_PROTOCOLS = "experiment/own"  # the protocols run on each of them: experiment=own/<protocol> own=<set>
_MOVED_OWN_SETS = "real_systems/own"  # where own sets were declared before they became the group ``own``


def compose(overrides: list[str] | tuple[str, ...] = ()) -> tuple[DictConfig, dict[str, str]]:
    """The root config Hydra composes with command-line ``overrides``, and the option chosen for each root group.

    Hydra's compose API reads the overrides (its grammar, its errors). The config has no ``hydra`` node, every
    interpolation is resolved (``${hydra:runtime.choices.own}`` as a Hydra app resolves it), and it is in
    struct mode, as a Hydra app's config.

    Parameters
    ----------
    overrides : sequence of str
        Hydra overrides, as on a step's command line (``experiment=ferrer2024_fig1``, ``paths.results=out``).

    Returns
    -------
    (DictConfig, dict)
        The config, and ``{group: option}`` for the root's groups that are chosen (``experiment``, ``own``, ...).

    Example: ``compose(["dataset=ferrer2024_k2_n400"])[1]`` is ``{"dataset": "ferrer2024_k2_n400"}``.
    """
    from hydra import compose as hydra_compose
    from hydra.core.hydra_config import HydraConfig

    _initialize()
    cfg = hydra_compose(config_name="config", overrides=list(overrides), return_hydra_config=True)
    running = HydraConfig.instance().cfg  # a Hydra app's, when composing inside one: given back after
    HydraConfig.instance().set_config(cfg)  # what a Hydra app sets: the ${hydra:...} resolver reads it
    try:
        choices = root_choices(cfg.hydra.runtime.choices)
        OmegaConf.set_struct(cfg, False)
        del cfg["hydra"]
        OmegaConf.set_struct(cfg, True)
        resolve(cfg)
    finally:
        if running is not None:
            HydraConfig.instance().cfg = running
    return cfg, choices


def resolve(cfg: DictConfig) -> dict:
    """Resolve every interpolation of the composed ``cfg`` in place, now (``${hydra:...}`` reads Hydra's state
    of this composition), and return it as plain Python; one that does not resolve stops with its key.

    Example: with ``experiment.title=${nowhere}`` it stops with ``config error at experiment.title: cannot be
    resolved: ...``.
    """
    from omegaconf.errors import OmegaConfBaseException

    try:
        OmegaConf.resolve(cfg)
    except OmegaConfBaseException as exc:
        where = _unresolved(cfg, "") or "config"
        raise ConfigError(message(where, f"cannot be resolved: {str(exc).splitlines()[0]}")) from None
    return OmegaConf.to_container(cfg)


def _unresolved(node, path: str) -> str | None:
    """The first key under ``node`` (a config block at ``path``) whose value does not resolve, or None."""
    from omegaconf import ListConfig
    from omegaconf.errors import OmegaConfBaseException

    for key in node.keys() if isinstance(node, DictConfig) else range(len(node)):
        where = f"{path}.{key}" if path else str(key)
        try:
            value = node[key]
        except OmegaConfBaseException:
            return where
        if isinstance(value, DictConfig | ListConfig) and (found := _unresolved(value, where)):
            return found
    return None


def root_choices(choices) -> dict[str, str]:
    """The options chosen for the root config's own groups, from Hydra's ``runtime.choices`` (which also lists
    nested groups, ``group/sub`` or ``group@package``, and groups left null)."""
    return {g: o for g, o in choices.items() if o is not None and "/" not in g and "@" not in g}


def _initialize() -> None:
    """Hydra's search path set to configs/ (inside a Hydra app, the app's is kept: the same folder)."""
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    if not GlobalHydra.instance().is_initialized():
        initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None)


def group_options(group: str) -> list[str]:
    """Every option of the config group ``group`` (its files' names, ``.yaml`` dropped), sorted.

    Example: ``group_options("sweep")`` lists ``configs/sweep/*.yaml``.
    """
    return sorted(p.stem for p in (CONFIG_DIR / group).glob("*.yaml"))


def own_set_names() -> list[str]:
    """Every posterior set of the user's own (``configs/own/<name>.yaml``), sorted; declarations left in the
    folder of earlier versions stop with how to move them."""
    moved = group_options(_MOVED_OWN_SETS)
    if moved:
        raise SystemExit(
            f"configs/{_MOVED_OWN_SETS}/ holds {', '.join(f'{n}.yaml' for n in moved)}: own sets are now the "
            f"config group `own` (experiment=own/<protocol> own=<set>); move them: "
            f"mv configs/{_MOVED_OWN_SETS}/*.yaml configs/{OWN_SETS}/"
        )
    return group_options(OWN_SETS)


def listed_jobs() -> list[tuple[str, ...]]:
    """The overrides of every experiment the workflow lists: ``experiment=<name>`` for each config of
    ``configs/experiment/``, and ``experiment=own/<protocol> own=<set>`` for each own set and protocol (whether a
    protocol applies to a set is decided once both are typed, :mod:`pipeline.targets`)."""
    papers = [(f"experiment={name}",) for name in group_options("experiment")]
    own = [(f"experiment=own/{p}", f"own={s}") for s in own_set_names() for p in group_options(OWN_PROTOCOLS)]
    return papers + own


@dataclass(frozen=True)
class Composition:
    """What :func:`compose` gave for ``overrides``: the config (a plain container) and the choices."""

    overrides: tuple[str, ...]
    config: dict
    choices: dict[str, str]

    @property
    def digest(self) -> str:
        """sha256 of the config: what the workflow records of a job's config, to run it again when it changes."""
        return hashlib.sha256(json.dumps(self.config, sort_keys=True).encode()).hexdigest()


def compositions(jobs: list[tuple[str, ...]]) -> list[Composition]:
    """The composition of each of ``jobs`` (override tuples), from the cache or composed (on every core) and
    kept in memory for :func:`remember`.

    Example: ``compositions([("experiment=ferrer2024_fig1",)])[0].choices["experiment"]`` is ``ferrer2024_fig1``.
    """
    known = _known()
    missing = [job for job in dict.fromkeys(jobs) if _key(job) not in known]
    if missing:
        chunks = [missing[i :: os.cpu_count() or 1] for i in range(min(len(missing), os.cpu_count() or 1))]
        if len(chunks) > 1:  # each in a process of its own: Hydra's state is global
            with ProcessPoolExecutor(len(chunks), mp_context=multiprocessing.get_context("spawn")) as pool:
                parts = list(pool.map(_compose_all, chunks))
        else:
            parts = [_compose_all(chunk) for chunk in chunks]
        for part in parts:
            known.update({_key(c.overrides): c for c in part})
    return [known[_key(job)] for job in jobs]


def remember() -> Path | None:
    """Write every composition made or read in this process to the cache file (atomically, replacing stale
    ones); None when there is nothing new to write."""
    known = _known()
    path = _cache_path()
    if not known or _read(path).keys() >= known.keys():
        return None
    for stale in CACHE_DIR.glob("compositions-*.json"):
        if stale != path:
            stale.unlink(missing_ok=True)
    rows = {key: [list(c.overrides), c.config, c.choices] for key, c in known.items()}
    return atomic_write(path, lambda tmp: tmp.write_text(json.dumps(rows)))


def _compose_all(jobs: list[tuple[str, ...]]) -> list[Composition]:
    out = []
    for job in jobs:
        cfg, choices = compose(job)
        out.append(Composition(tuple(job), OmegaConf.to_container(cfg), choices))
    return out


@functools.cache  # one dictionary per process, which compositions() fills and remember() writes
def _known() -> dict[str, Composition]:
    try:
        rows = _read(_cache_path()).items()
        return {key: Composition(tuple(o), config, choices) for key, (o, config, choices) in rows}
    except (TypeError, ValueError, AttributeError):  # not what remember() writes: composed again
        return {}


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _key(job: tuple[str, ...]) -> str:
    return " ".join(job)


def _cache_path() -> Path:
    """The cache file: named by the sha256 of every config file (path and bytes), of Hydra's version and of
    this module."""
    digest = hashlib.sha256(importlib.metadata.version("hydra-core").encode() + Path(__file__).read_bytes())
    for file in sorted(CONFIG_DIR.rglob("*.yaml")):
        digest.update(str(file.relative_to(CONFIG_DIR)).encode() + b"\0" + file.read_bytes() + b"\0")
    return CACHE_DIR / f"compositions-{digest.hexdigest()[:20]}.json"
