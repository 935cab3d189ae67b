"""A sweep's composed block checked beyond its dataclass (:func:`pipeline.root.typed_root` calls it): each grid
value against the type of the experiment key it sets.
"""

from __future__ import annotations

from omegaconf import DictConfig, ListConfig, OmegaConf

from pipeline.config_blocks import Sweep
from pipeline.kinds import parameters_of
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
