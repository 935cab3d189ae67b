"""Experiment kinds: what each paper module declares once per kind, and the lookup of a kind by paper.

A paper's module (``pipeline/papers/<paper>.py``, named by the paper key of its experiment configs)
declares ``KINDS``, one :class:`Kind` per experiment kind: the dataclass of its parameters (a subclass of
:class:`Parameters`, :mod:`pipeline.parameters`), the function that computes its tidy values, the
function that draws or lays it out, and whether it is a table. Kinds that only sweeps run and no paper
owns live in :mod:`pipeline.sweep_kinds`. :func:`parameters_of` turns an experiment config into its
kind's parameters, checking every key and value.

A lookup imports only the module of the experiment's paper, not every paper's dependencies
(scikit-learn, scipy.stats, matplotlib, ...).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pipeline.config_blocks import OwnProtocol, Reference
from pipeline.parameters import ConfigError, message, typed

PAPERS_DIR = Path(__file__).resolve().parent / "papers"
SWEEP_KINDS_MODULE = "pipeline.sweep_kinds"


@dataclass(frozen=True)
class Kind:
    """One experiment kind, as its paper declares it.

    ``parameters`` is the kind's dataclass; ``evaluate(exp, data)`` returns the tidy value records of
    the experiment's parameters ``exp`` read from the data sources; ``render(exp, values, stem)`` writes
    the figure (``stem``.pdf, .png) or the table (``stem``.csv, .md, .tex) and returns the paths. A kind
    without ``render`` runs only as a sweep point (the sweep's aggregate draws the points). The
    workflow builds a paper's artifacts in one job (one process
    start-up for all of them); a kind with ``own_job`` computes for seconds per artifact, so each of
    its artifacts gets a job of its own and they run in parallel (pipeline/targets.py).
    """

    name: str
    parameters: type
    evaluate: Callable
    render: Callable | None = None
    is_table: bool = False
    own_job: bool = False


@dataclass(frozen=True, kw_only=True)
class Parameters:
    """The keys of every experiment config; each kind's dataclass adds its own.

    ``paper`` and ``artifact`` name the results (``results/<paper>/<artifact>``, or
    ``results/<folder>/<artifact>`` with ``folder``, as the protocols run on a user's own sets; a sweep's
    experiment may run a kind of no paper and has no artifact), ``title`` heads the figure or table, ``note``
    is added to its caption, ``reference`` says where its published numbers are
    (:class:`pipeline.config_blocks.Reference`), ``own_protocol`` marks a protocol run on a user's own sets
    (configs/experiment/own/, :class:`pipeline.config_blocks.OwnProtocol`).
    """

    paper: str | None = None
    kind: str
    folder: str | None = None
    artifact: str | None = None
    title: str = ""
    note: str | None = None
    reference: Reference | None = None
    own_protocol: OwnProtocol | None = None

    @property
    def results_folder(self) -> str:
        """The folder under the results folder that holds the artifact: ``folder``, else the paper's."""
        return self.folder or self.paper


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


def kind_of(parameters: Parameters) -> Kind:
    """The kind typed experiment ``parameters`` run (their ``paper`` and ``kind``); without ``paper``, a sweep kind."""
    return paper_kinds(parameters.paper)[parameters.kind]


def parameters_of(exp: Mapping, path: str = "experiment", sweep: bool = False) -> Parameters:
    """The experiment block ``exp`` of a composed config (plain, :func:`pipeline.root.typed_root`) as its kind's
    parameters, every key and value checked.

    ``sweep``: the experiment block of a sweep, which may also run the sweep kinds of no paper (and kinds
    without a renderer, which run only as sweep points).

    Example: ``parameters_of({"paper": "ferrer2024", "kind": "fig1", ...})`` is the kind's dataclass.
    """
    paper = exp.get("paper")
    if (paper is None and not sweep) or (paper is not None and paper not in papers()):
        raise ConfigError(message(f"{path}.paper", f"unknown paper {paper!r}", papers(), paper))
    kinds = {name: k for name, k in paper_kinds(paper).items() if sweep or k.render is not None}
    kind = exp.get("kind")
    if kind not in kinds:
        where = f"paper {paper}" if paper else "pipeline/sweep_kinds.py (or name a paper)"
        raise ConfigError(message(f"{path}.kind", f"unknown experiment kind {kind!r} of {where}", kinds, kind))
    return typed(kinds[kind].parameters, exp, path)
