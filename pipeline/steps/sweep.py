"""Step: one point of a declared sweep (``sweep=<name> point=<i>``), or its aggregate (``sweep=<name>``).

See :mod:`pipeline.sweeps` for what a sweep declares and what the aggregate draws.
"""

from __future__ import annotations

from collections.abc import Mapping

from omegaconf import DictConfig, OmegaConf

from pipeline.config_checks import check_config
from pipeline.io import write_csv
from pipeline.sources import DataSources
from pipeline.steps.command_line import step
from pipeline.sweeps import aggregate, point_path, run_point, sweep_names


@step
def main(cfg: DictConfig, choices: Mapping[str, str]) -> None:
    check_config(cfg)
    name = choices.get("sweep")
    if cfg.get("sweep") is None or name is None:
        raise SystemExit(f"sweep needs sweep=<name>; declared sweeps: {sweep_names()}")
    sweep = cfg.sweep
    OmegaConf.set_struct(sweep, False)
    sweep.name = name
    if cfg.get("point") is None:
        print("sweeps: wrote " + ", ".join(str(p) for p in aggregate(sweep, cfg.paths.results)))
        return
    frame = run_point(sweep, int(cfg.point), DataSources(cfg.paths.data))
    path = write_csv(point_path(cfg.paths.results, name, int(cfg.point)), frame)
    print(f"sweeps: wrote {path} ({len(frame)} values)")


if __name__ == "__main__":
    main()
