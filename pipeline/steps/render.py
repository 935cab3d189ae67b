"""Step: draw an experiment's figure (PDF + PNG) or lay out its table (CSV + Markdown + LaTeX)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig

from pipeline.config_checks import check_config
from pipeline.io import values_path
from pipeline.kinds import Parameters, kind_of, parameters_of
from pipeline.steps.command_line import step


def render(cfg: DictConfig, parameters: Parameters | None = None) -> list[Path]:
    """Draw or lay out ``cfg.experiment`` (its ``parameters``, typed here if not given) from its values CSV;
    the paths written."""
    exp = cfg.get("experiment")
    if exp is None:
        raise SystemExit("render needs an experiment: python -m pipeline.steps.render experiment=<paper>_<artifact>")
    source = values_path(cfg.paths.results, exp)
    if not source.exists():
        raise SystemExit(
            f"{source} is missing: run `python -m pipeline.steps.evaluate experiment={exp.paper}_{exp.artifact}`"
        )
    stem = Path(cfg.paths.results) / exp.paper / exp.artifact
    parameters = parameters_of(exp) if parameters is None else parameters
    paths = kind_of(exp).render(parameters, pd.read_csv(source), stem)
    print("render: wrote " + ", ".join(str(p) for p in paths))
    return paths


@step
def main(cfg: DictConfig, choices: Mapping[str, str]) -> None:
    render(cfg, check_config(cfg))


if __name__ == "__main__":
    main()
