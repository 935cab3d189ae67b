"""The command line every step shares: Hydra's ``key=value`` overrides of the root config.

A step's ``main`` is its task wrapped by :func:`step`. Plain overrides (group choices and single values,
what the workflow's rules and most hand-run commands pass) are composed by
:func:`pipeline.config.compose_command_line` in a few milliseconds; any other command line (``--help``,
``--cfg job``, ``+key=value``, multirun, a typo) goes to a Hydra app, which applies or reports it. Both
give the task the same config. Why two paths: a Hydra app sets up its own search path, logging and run
before the task starts, which is most of what a short job (a fetch, a simulated data set) does, and the
workflow runs dozens of them.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Mapping

from omegaconf import DictConfig

from pipeline.config import CONFIG_DIR, compose_command_line

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
        overrides = sys.argv[1:] if argv is None else list(argv)
        composed = compose_command_line(overrides)
        if composed is None:
            _run_hydra(task, overrides)
            return
        task(*composed)

    return main


def _run_hydra(task: Task, overrides: list[str]) -> None:
    import hydra
    from hydra.core.hydra_config import HydraConfig

    @functools.wraps(task)  # Hydra names the app (``--help``, its logs) after the task's module
    def app(cfg: DictConfig) -> None:
        task(cfg, {k: v for k, v in HydraConfig.get().runtime.choices.items() if v is not None})

    sys.argv = [sys.argv[0], *overrides]  # a Hydra app reads its overrides from sys.argv
    hydra.main(version_base=None, config_path=str(CONFIG_DIR), config_name="config")(app)()
