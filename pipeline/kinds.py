"""Experiment kinds: what each paper module declares once per kind, and the lookup of a kind by paper.

A paper's module (``pipeline/papers/<paper>.py``, named by the paper key of its experiment configs)
declares ``KINDS``, one :class:`Kind` per experiment kind: the config keys it takes, the function
that computes its tidy values, the function that draws or lays it out, and whether it is a table.
Kinds that only sweeps run and no paper owns live in :mod:`pipeline.sweep_kinds`.

A lookup imports only the module of the experiment's paper, not every paper's dependencies
(scikit-learn, scipy.stats, matplotlib, ...).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PAPERS_DIR = Path(__file__).resolve().parent / "papers"
SWEEP_KINDS_MODULE = "pipeline.sweep_kinds"


@dataclass(frozen=True)
class Kind:
    """One experiment kind, as its paper declares it.

    ``evaluate(exp, data)`` returns the tidy value records of experiment config ``exp`` read from
    the data sources; ``render(exp, values, stem)`` writes the figure (``stem``.pdf, .png) or the
    table (``stem``.csv, .md, .tex) and returns the paths. A kind without ``render`` runs only as a
    sweep point (the sweep's aggregate draws the points). ``calibrators`` are the names its
    ``calibrator`` key may take. The workflow builds a paper's artifacts in one job (one process
    start-up for all of them); a kind with ``own_job`` computes for seconds per artifact, so each of
    its artifacts gets a job of its own and they run in parallel (pipeline/targets.py).
    """

    name: str
    keys: tuple[str, ...]
    evaluate: Callable
    render: Callable | None = None
    is_table: bool = False
    calibrators: tuple[str, ...] = ()
    own_job: bool = False


def papers() -> list[str]:
    """Every paper key with a module under ``pipeline/papers/`` (found without importing them)."""
    return sorted(m.name for m in pkgutil.iter_modules([str(PAPERS_DIR)]))


def paper_kinds(paper: str | None) -> dict[str, Kind]:
    """The kinds ``paper`` declares by name, importing that paper's module only.

    ``None`` gives the sweep kinds no paper owns (:mod:`pipeline.sweep_kinds`).
    """
    if paper is not None and paper not in papers():
        raise KeyError(f"no module pipeline/papers/{paper}.py declares the kinds of paper {paper!r}")
    module = importlib.import_module(SWEEP_KINDS_MODULE if paper is None else f"pipeline.papers.{paper}")
    return {kind.name: kind for kind in module.KINDS}


def kind_of(exp) -> Kind:
    """The kind an experiment config (``paper`` and ``kind``) runs; a config without ``paper`` runs a sweep kind."""
    return paper_kinds(exp.get("paper"))[exp.kind]
