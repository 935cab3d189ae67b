"""A step's composed config checked before any work: the root's keys, and the experiment (its kind's
parameters, :func:`pipeline.kinds.parameters_of`), dataset or sweep it selects (:mod:`pipeline.config_blocks`).
"""

from __future__ import annotations

from omegaconf import DictConfig, ListConfig, OmegaConf

from pipeline.config_blocks import ROOT_KEYS, Dataset, Sweep
from pipeline.kinds import Parameters, parameters_of
from pipeline.parameters import ConfigError, check_value, field_type, message, typed


def check_sweep(sweep: DictConfig, name: str) -> None:
    """A sweep's blocks, its experiment (a sweep kind or an experiment kind) and every grid value, each
    checked against the type of the experiment's key it sets."""
    path = f"sweep {name}"
    typed(Sweep, sweep, path)
    exp = sweep.experiment
    parameters = parameters_of(exp, f"{path}: experiment", sweep=True)
    for key, values in sweep.grid.items():
        hint = field_type(type(parameters), key)
        if hint is None or OmegaConf.select(exp, key, default="<missing>") == "<missing>":
            known = [f"{k}.{sub}" for k, v in exp.items() if isinstance(v, DictConfig) for sub in v]
            known += [k for k, v in exp.items() if not isinstance(v, DictConfig)]
            raise ConfigError(message(f"{path}: grid.{key}", "is not a key of the sweep's experiment", known, key))
        if not isinstance(values, ListConfig) or len(values) == 0:
            raise ConfigError(message(f"{path}: grid.{key}", f"must be a non-empty list of values; got {values!r}"))
        for i, value in enumerate(values):
            check_value(hint, value, f"{path}: grid.{key}[{i}]")


def check_config(cfg: DictConfig) -> Parameters | None:
    """A step's composed config: known root keys, then whichever of experiment / dataset / sweep it selects;
    the experiment's parameters (None without an experiment), typed once for the step to use.

    Example: ``check_config(compose_config(["dataset=ferrer2024_k2_n400", "dataset.prior1=1.5"]))`` stops with
    ``config error at dataset.prior1: must be a number strictly between 0 and 1; got 1.5``.
    """
    for key in cfg:
        if key not in ROOT_KEYS:
            raise ConfigError(message(f"config.{key}", "unknown key", ROOT_KEYS, key))
    parameters = parameters_of(cfg.experiment) if cfg.get("experiment") is not None else None
    if cfg.get("dataset") is not None:
        typed(Dataset, cfg.dataset, "dataset")
    if cfg.get("sweep") is not None:
        check_sweep(cfg.sweep, "sweep")
    if cfg.get("point") is not None and (isinstance(cfg.point, bool) or not isinstance(cfg.point, int)):
        raise ConfigError(message("config.point", f"must be the integer index of a sweep point; got {cfg.point!r}"))
    return parameters
