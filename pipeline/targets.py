"""What the workflow builds, derived from the configs (the Snakefile repeats no path or parameter)."""

from __future__ import annotations

from dataclasses import dataclass

from omegaconf import DictConfig, ListConfig

from calib.data.registry import REAL_SETS
from pipeline.config import CONFIG_DIR, experiment_files, experiment_names, load_experiment
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
    real_sets: tuple[str, ...] = ()
    configs: tuple[str, ...] = ()
    caption: str = ""

    @property
    def suffixes(self) -> tuple[str, ...]:
        return TABLE_SUFFIXES if self.is_table else FIGURE_SUFFIXES


def real_sets(node) -> list[str]:
    """Every real posterior set an experiment config names (values of ``set`` keys, at any depth).

    Sets the registry marks unavailable are left out: they are listed in tables, never computed.
    """
    found = []
    if isinstance(node, DictConfig):
        for key, value in node.items():
            if key == "set" and isinstance(value, str):
                found.append(value)
            else:
                found += real_sets(value)
    elif isinstance(node, ListConfig):
        for item in node:
            found += real_sets(item)
    return sorted({s for s in found if s not in REAL_SETS or not REAL_SETS[s].unavailable})


def caption(exp: DictConfig, sets: tuple[str, ...]) -> str:
    """What an artifact shows (its title), where its data come from, and the note of its config."""
    text = f"**{exp.paper} / {exp.artifact}**: {exp.title}."
    if sets:
        text += " Real posterior sets: " + ", ".join(f"``{s}``" for s in sets) + "."
    if "reference" in exp:
        text += " Its published numbers are compared in the reproduction report."
    if "note" in exp:
        text += f" {exp.note}"
    return text


def experiments() -> list[Experiment]:
    """Every configured experiment."""
    out = []
    for name in experiment_names():
        exp = load_experiment(name).experiment
        datasets = tuple(exp.get("datasets", []))
        configs = tuple(str(p.relative_to(CONFIG_DIR.parent)) for p in experiment_files(name))
        sets = tuple(real_sets(exp))
        out.append(
            Experiment(
                name, exp.paper, exp.artifact, datasets, exp.kind in TABLE_KINDS, sets, configs, caption(exp, sets)
            )
        )
    return out
