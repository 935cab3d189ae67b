"""Step: evaluate an experiment and render its figure or table in one process (``batch`` runs it per experiment).

Same outputs as ``pipeline.steps.evaluate`` followed by ``pipeline.steps.render``, which stay available to rerun
either stage by hand; one process saves the start-up (Python, imports, Hydra) of a second job. The
artifact is built whole or not at all: if rendering fails or is interrupted (Ctrl-C), the values
and any file already rendered are removed, so no later run mistakes them for a finished job.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from omegaconf import DictConfig

from pipeline.config_checks import check_config
from pipeline.io import artifact_stem
from pipeline.kinds import Parameters, kind_of, parameters_of
from pipeline.steps.command_line import step
from pipeline.steps.evaluate import evaluate
from pipeline.steps.render import render
from pipeline.targets import FIGURE_SUFFIXES, TABLE_SUFFIXES


def build(cfg: DictConfig, parameters: Parameters | None = None) -> None:
    """Evaluate, then render (with the experiment's ``parameters``, typed once here if not given); on any
    failure or interruption, remove what this job wrote."""
    parameters = parameters_of(cfg.experiment) if parameters is None else parameters
    values = evaluate(cfg, parameters)
    try:
        render(cfg, parameters)
    except BaseException:
        exp = cfg.experiment
        stem = artifact_stem(cfg.paths.results, exp)
        for suffix in TABLE_SUFFIXES if kind_of(exp).is_table else FIGURE_SUFFIXES:
            Path(f"{stem}{suffix}").unlink(missing_ok=True)
        values.unlink(missing_ok=True)
        raise


@step
def main(cfg: DictConfig, choices: Mapping[str, str]) -> None:
    build(cfg, check_config(cfg))


if __name__ == "__main__":
    main()
