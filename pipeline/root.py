"""The composed root config as typed settings: :func:`typed_root`, the one place a composed config is read.

Hydra composes a config (:func:`pipeline.config.compose`, or a step's Hydra app); :func:`typed_root` turns it
into a :class:`Root` once, checking every key and value (:func:`pipeline.parameters.typed`): the root's own
keys, the experiment as its kind's parameters (:func:`pipeline.kinds.parameters_of`), the dataset, the sweep
and the own set it selects. Everything after reads typed fields; no step, rule or report reads the config.

A wrong config stops with one line naming the key path, the problem, what is allowed and the closest match:

    config error at config.pahts: unknown key; allowed: dataset, experiment, ... Did you mean 'paths'?
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from omegaconf import DictConfig

from calib.validation import Integer
from pipeline.config import compose, resolve
from pipeline.config_blocks import Dataset, Sweep
from pipeline.kinds import Parameters, parameters_of
from pipeline.own_sets import OwnSet, declared_in
from pipeline.parameters import ConfigError, Fraction, Positive, Seed, check_value, field_type, message, typed


@dataclass(frozen=True, kw_only=True)
class Paths:
    """Where results go (``results``), where the data they are computed from go (``data``), and where the
    published numbers are (``references``)."""

    results: str
    data: str
    references: str


@dataclass(frozen=True, kw_only=True)
class RealData:
    """How the published real posterior sets are found (configs/config.yaml, ``real_data``)."""

    mirror: str | None = None
    download: Literal["auto"] | bool = "auto"
    url: str
    cache: str
    timeout_seconds: Positive


@dataclass(frozen=True, kw_only=True)
class Zoo:
    """The zoo's seed and its train / calibration / test fractions."""

    seed: Seed = 0
    fractions: list[Fraction]


@dataclass(frozen=True, kw_only=True)
class OwnNames:
    """How the protocols name the own set chosen with ``own=<name>`` (configs/config.yaml, ``own_set``): its
    name, its real-set name (``own/<name>``), the results folder of its protocols, its label in tables."""

    name: str
    set: str
    folder: str
    label: str


@dataclass(frozen=True, kw_only=True)
class Own(OwnNames):
    """The own posterior set chosen with ``own=<name>``: its names and its declaration."""

    declaration: OwnSet


@dataclass(frozen=True, kw_only=True)
class Root:
    """A step's composed config, typed.

    ``experiment``, ``dataset``, ``sweep`` and ``own`` are what the command line selected (None otherwise);
    ``names`` maps each selected group to the option chosen (``{"dataset": "ferrer2024_k2_n400"}``).
    """

    paths: Paths
    real_data: RealData
    zoo: Zoo
    papers: list[str]
    zoo_dataset: str | None = None
    point: Annotated[int, Integer(minimum=0)] | None = None
    real_set: str | None = None
    experiment: Parameters | None = None
    dataset: Dataset | None = None
    sweep: Sweep | None = None
    own: Own | None = None
    names: Mapping[str, str] = field(default_factory=dict)

    @property
    def results(self) -> Path:
        """The results folder."""
        return Path(self.paths.results)


_SELECTED = ("experiment", "dataset", "sweep", "own", "own_set")  # typed apart from the root's own keys
_ROOT_KEYS = tuple(f.name for f in dataclasses.fields(Root) if f.name != "names") + ("own_set",)


def typed_root(cfg: DictConfig | dict, choices: Mapping[str, str]) -> Root:
    """The composed config ``cfg`` as a :class:`Root`, every key and value checked.

    Parameters
    ----------
    cfg : DictConfig or dict
        The root config Hydra composed (:func:`pipeline.config.compose`, or a Hydra app's), or the plain
        container of a resolved one (:class:`pipeline.config.Composition`).
    choices : mapping
        The option chosen for each root group (``{"experiment": "ferrer2024_fig1"}``).

    Raises
    ------
    ConfigError
        For an unknown or missing key, a value its declaration does not allow, or one that does not resolve.

    Example: ``typed_root(*compose(["experiment=ferrer2024_fig6"])).experiment.n_boot`` is an int.
    """
    cfg = resolve(cfg) if isinstance(cfg, DictConfig) else cfg  # now, while Hydra's state is this config's
    for key in cfg:
        if key not in _ROOT_KEYS:
            raise ConfigError(message(f"config.{key}", "unknown key", _ROOT_KEYS, key))
    settings = typed(Root, {k: v for k, v in cfg.items() if k not in _SELECTED}, "config")
    names = {group: choices[group] for group in ("experiment", "dataset", "sweep", "own") if group in choices}
    selected: dict = {"names": names}
    if cfg.get("experiment") is not None:
        where = names.get("experiment", "experiment")
        selected["experiment"] = parameters_of(cfg["experiment"], f"experiment {where}")
    if cfg.get("dataset") is not None:
        selected["dataset"] = typed(Dataset, cfg["dataset"], "dataset")
    if cfg.get("sweep") is not None:
        where = f"sweep {names.get('sweep', '')}".strip()
        sweep = typed(Sweep, cfg["sweep"], where)
        _check_grid(sweep, where)
        selected["sweep"] = dataclasses.replace(sweep, name=names.get("sweep"))
    if cfg.get("own") is not None:
        own = typed(OwnNames, cfg["own_set"], "own_set")
        selected["own"] = Own(**dataclasses.asdict(own), declaration=declared_in(cfg["own"], own.name))
    return dataclasses.replace(settings, **selected)


def root_of(overrides: list[str] | tuple[str, ...] = ()) -> Root:
    """The root config composed with ``overrides`` (:func:`pipeline.config.compose`), typed.

    Example: ``root_of(["dataset=ferrer2024_k2_n400"]).dataset.n_samples`` is 400.
    """
    return typed_root(*compose(overrides))


def _check_grid(sweep: Sweep, path: str) -> None:
    """A sweep's experiment (a sweep kind or an experiment kind) and every grid value, each checked against the
    type of the experiment's key it sets."""
    exp = sweep.experiment
    parameters = parameters_of(exp, f"{path}: experiment", sweep=True)
    for key, values in sweep.grid.items():
        hint = field_type(type(parameters), key)
        if hint is None or _lookup(exp, key) is _ABSENT:
            known = [f"{k}.{sub}" for k, v in exp.items() if isinstance(v, dict) for sub in v]
            known += [k for k, v in exp.items() if not isinstance(v, dict)]
            raise ConfigError(message(f"{path}: grid.{key}", "is not a key of the sweep's experiment", known, key))
        if len(values) == 0:
            raise ConfigError(message(f"{path}: grid.{key}", f"must be a non-empty list of values; got {values!r}"))
        for i, value in enumerate(values):
            check_value(hint, value, f"{path}: grid.{key}[{i}]")


_ABSENT = object()


def _lookup(block: dict, dotted: str):
    """The value at ``dotted`` (``generator.prior1``) in the nested mapping ``block``, or :data:`_ABSENT`."""
    node = block
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return _ABSENT
        node = node[part]
    return node
