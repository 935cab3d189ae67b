"""The command line every step shares: Hydra's ``key=value`` overrides of the root config.

A step's ``main`` is its task wrapped by :func:`step`. Its overrides are composed by Hydra's compose API
(:func:`pipeline.config.compose`); a command line with Hydra's own options (``--help``, ``--cfg job``,
``-m`` multiruns) runs as a Hydra app, which composes the same config and adds what those options do. The
compose API is used otherwise because an app's set-up (logging, run folders) doubles a short job's start.
Hydra is imported by the functions that run a step, not with this module: the batch step imports this
module (through :mod:`pipeline.steps.artifact`) but reads its configs from the cache.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from omegaconf import DictConfig

from pipeline.config import CONFIG_DIR, compose

Task = Callable[[DictConfig, Mapping[str, str]], None]


def step(task: Task) -> Callable[[list[str] | None], None]:
    """``main(argv=None)`` running ``task(cfg, choices)`` with the config the command line composes.

    ``choices`` maps each root group the command line chose (``dataset=<name>``) to its option.

    Example::

        @step
        def main(cfg, choices):
            print(choices.get("dataset"), cfg.paths.data)
    """

    @functools.wraps(task)
    def main(argv: list[str] | None = None) -> None:
        from hydra.errors import HydraException

        overrides = sys.argv[1:] if argv is None else list(argv)
        if any(argument.startswith("-") for argument in overrides):
            _run_hydra(task, overrides)
            return
        try:
            composed = compose(overrides)
        except HydraException as exc:
            raise SystemExit(f"{Path(sys.argv[0]).stem}: {exc}") from None  # the step's name, as Hydra's app says it
        task(*composed)

    return main


def _run_hydra(task: Task, overrides: list[str]) -> None:
    import hydra
    from hydra.core.hydra_config import HydraConfig

    @functools.wraps(task)  # Hydra names the app (``--help``, its logs) after the task's module
    def app(cfg: DictConfig) -> None:
        choices = HydraConfig.get().runtime.choices
        task(cfg, {group: option for group, option in choices.items() if option is not None and "/" not in group})

    sys.argv = [sys.argv[0], *overrides]  # a Hydra app reads its overrides from sys.argv
    hydra.main(version_base=None, config_path=str(CONFIG_DIR), config_name="config")(app)()
