"""The command line every step shares: a Hydra app over the root config, its config typed once.

A step's ``main`` is its task wrapped by :func:`step`: a Hydra app (``hydra.main``), so a step takes Hydra's
``key=value`` overrides and Hydra's own options (``--help``, ``--cfg job``, ``-m`` multiruns), and its task
receives the composed config typed by :func:`pipeline.root.typed_root`. The workflow's batch step composes
the same overrides with :func:`pipeline.config.compose` and calls the same task.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable

from pipeline.config import CONFIG_DIR, root_choices
from pipeline.root import Root, typed_root

Task = Callable[[Root], None]


def step(task: Task) -> Callable[[list[str] | None], None]:
    """``main(argv=None)``: the Hydra app running ``task(root)`` with the config its command line composes.

    Example::

        @step
        def main(root):
            print(root.names.get("dataset"), root.paths.data)
    """

    @functools.wraps(task)
    def main(argv: list[str] | None = None) -> None:
        import hydra
        from hydra.core.global_hydra import GlobalHydra
        from hydra.core.hydra_config import HydraConfig

        @functools.wraps(task)  # Hydra names the app (``--help``, its logs) after the task's module
        def app(cfg) -> None:
            task(typed_root(cfg, root_choices(HydraConfig.get().runtime.choices)))

        if argv is not None:
            sys.argv = [sys.argv[0], *argv]  # a Hydra app reads its overrides from sys.argv
        GlobalHydra.instance().clear()  # an app sets Hydra up itself (a composition may have, in this process)
        hydra.main(version_base=None, config_path=str(CONFIG_DIR), config_name="config")(app)()

    return main
