"""Step: draw an experiment's figure (PDF + PNG) or lay out its table (CSV + Markdown + LaTeX)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig

from pipeline import own_sets
from pipeline.config import experiment_config
from pipeline.config_checks import check_config
from pipeline.io import artifact_stem, values_path
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
    stem = artifact_stem(cfg.paths.results, exp)
    parameters = parameters_of(exp) if parameters is None else parameters
    values, parameters = _beside(cfg, parameters, pd.read_csv(source))
    paths = kind_of(exp).render(parameters, values, stem)
    print("render: wrote " + ", ".join(str(p) for p in paths))
    return paths


def _beside(cfg, parameters, values: pd.DataFrame):
    """An own set's table ``values`` and ``parameters`` with the rows of the paper's experiment it sits beside
    (``own.beside``, a config whose kind lists ``systems``) first, when that experiment's values are built;
    unchanged otherwise (not an own set's table, or the paper's table not built here).

    Example: the ``table2`` protocol on own set ``mine`` shows Table 2's systems, then ``mine``'s rows.
    """
    own = cfg.get("own")
    name = own.get("beside") if own is not None else None
    if not name:
        return values, parameters
    paper = experiment_config(name, results=cfg.paths.results).experiment
    path = values_path(cfg.paths.results, paper)
    if not path.exists():
        return values, parameters
    theirs = parameters_of(paper)
    clash = {s.label for s in theirs.systems} & {s.label for s in parameters.systems}
    if clash:
        problem = f"{sorted(clash)} is also a system of {name}: give the set another label"
        raise own_sets.error(own.name, "label", problem)
    joined = replace(parameters, systems=[*theirs.systems, *parameters.systems])
    return pd.concat([pd.read_csv(path), values], ignore_index=True), joined


@step
def main(cfg: DictConfig, choices: Mapping[str, str]) -> None:
    render(cfg, check_config(cfg))


if __name__ == "__main__":
    main()
