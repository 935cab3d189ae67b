"""What the workflow builds, derived from the configs (the Snakefile repeats no path or parameter)."""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.config import experiment_names, load_experiment
from pipeline.renderers import TABLE_KINDS

FIGURE_SUFFIXES = (".pdf", ".png")
TABLE_SUFFIXES = (".csv", ".md", ".tex")


@dataclass(frozen=True)
class Experiment:
    """One experiment as the workflow sees it."""

    name: str
    paper: str
    artifact: str
    datasets: tuple[str, ...]
    is_table: bool

    @property
    def suffixes(self) -> tuple[str, ...]:
        return TABLE_SUFFIXES if self.is_table else FIGURE_SUFFIXES


def experiments() -> list[Experiment]:
    """Every configured experiment."""
    out = []
    for name in experiment_names():
        exp = load_experiment(name).experiment
        out.append(Experiment(name, exp.paper, exp.artifact, tuple(exp.datasets), exp.kind in TABLE_KINDS))
    return out
