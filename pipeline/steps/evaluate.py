"""Step: compute an experiment's values (``experiment=<paper>_<artifact>``) into a tidy CSV.

Writes ``<paths.results>/<paper>/<artifact>_values.csv``; the rendered figure or table sits beside it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path

from omegaconf import DictConfig

from pipeline.config_checks import check_config
from pipeline.io import values_frame, values_path, write_csv
from pipeline.kinds import Parameters, kind_of, parameters_of
from pipeline.sources import DataSources
from pipeline.steps.command_line import step


def evaluate(cfg: DictConfig, parameters: Parameters | None = None) -> Path:
    """Compute the values of ``cfg.experiment`` (its ``parameters``, typed here if not given) and write them;
    the path written."""
    exp = cfg.get("experiment")
    if exp is None:
        raise SystemExit(
            "evaluate needs an experiment: python -m pipeline.steps.evaluate experiment=<paper>_<artifact>"
        )
    start = time.perf_counter()

    parameters = parameters_of(exp) if parameters is None else parameters
    frame = values_frame(kind_of(exp).evaluate(parameters, DataSources(cfg.paths.data)))
    path = write_csv(values_path(cfg.paths.results, exp), frame)
    print(f"evaluate: wrote {path} ({len(frame)} values) in {time.perf_counter() - start:.1f} s")
    return path


@step
def main(cfg: DictConfig, choices: Mapping[str, str]) -> None:
    evaluate(cfg, check_config(cfg))


if __name__ == "__main__":
    main()
