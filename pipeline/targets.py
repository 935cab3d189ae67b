"""What the workflow builds, derived from the typed configs (the Snakefile repeats no path or parameter).

Every job is a composition (:func:`pipeline.config.listed_jobs`, :func:`pipeline.config.compositions`) typed
once (:func:`pipeline.root.typed_root`); an :class:`Experiment` is that typed root with the overrides that
compose it (its command by hand) and the digest of its composed config.
"""

from __future__ import annotations

import dataclasses
import functools
import shlex
from dataclasses import dataclass
from pathlib import Path

from calib.data.registry import REAL_SETS
from pipeline.config import CACHE_DIR, OWN_PROTOCOLS, compositions, listed_jobs, own_set_names
from pipeline.io import artifact_key, artifact_stem
from pipeline.kinds import Kind, Parameters, kind_of
from pipeline.root import Own, Root, typed_root

FIGURE_SUFFIXES = (".pdf", ".png")
TABLE_SUFFIXES = (".csv", ".md", ".tex")


@dataclass(frozen=True)
class Experiment:
    """One experiment as the workflow builds it: the Hydra ``overrides`` that compose it, its typed ``root``,
    and the sha256 of its composed config (``digest``: a job runs again when it changes, whichever file
    changed it)."""

    overrides: tuple[str, ...]
    root: Root
    digest: str

    @property
    def parameters(self) -> Parameters:
        return self.root.experiment

    @property
    def kind(self) -> Kind:
        return kind_of(self.parameters)

    @property
    def name(self) -> str:
        """The experiment's config: ``<paper>_<artifact>``, or ``own/<protocol>`` for an own set's protocol."""
        return self.root.names["experiment"]

    @property
    def key(self) -> str:
        """``<folder>/<artifact>``: its files' place under the results folder (:func:`pipeline.io.artifact_key`)."""
        return artifact_key(self.parameters)

    @property
    def command(self) -> str:
        """The overrides of ``python -m pipeline.steps.artifact`` that build it by hand."""
        return shlex.join(self.overrides)

    @property
    def paper(self) -> str:
        return self.parameters.paper

    @property
    def artifact(self) -> str:
        return self.parameters.artifact

    @property
    def folder(self) -> str:
        return self.parameters.results_folder

    @property
    def datasets(self) -> tuple[str, ...]:
        return tuple(getattr(self.parameters, "datasets", None) or ())

    @property
    def real_sets(self) -> tuple[str, ...]:
        return tuple(real_sets(self.parameters))

    @property
    def is_table(self) -> bool:
        return self.kind.is_table

    @property
    def suffixes(self) -> tuple[str, ...]:
        return TABLE_SUFFIXES if self.is_table else FIGURE_SUFFIXES

    @property
    def job(self) -> str:
        """The artifact job that builds it (:func:`jobs`)."""
        return self.key if self.kind.own_job else self.folder

    @property
    def own(self) -> Own | None:
        return self.root.own

    @property
    def own_set(self) -> str:
        """The own set it runs on ("" for a paper's experiment)."""
        return self.own.name if self.own is not None else ""

    @property
    def beside(self) -> str:
        """The paper's experiment whose rows an own set's table shows first ("" if none)."""
        protocol = self.parameters.own_protocol
        return (protocol.beside or "") if protocol is not None else ""


def real_sets(parameters) -> list[str]:
    """Every real posterior set typed experiment ``parameters`` name (``set`` and ``sets`` fields, at any depth),
    sorted.

    Sets the registry marks unavailable are left out: they are listed in tables, never computed.
    """
    found = []

    def named(key: str, item) -> None:
        if key == "set" and isinstance(item, str):
            found.append(item)
        elif key == "sets" and isinstance(item, list | tuple) and all(isinstance(s, str) for s in item):
            found.extend(item)
        else:
            walk(item)

    def walk(value) -> None:
        if dataclasses.is_dataclass(value):
            for f in dataclasses.fields(value):
                item = getattr(value, f.name)
                named(f.name, item)
        elif isinstance(value, dict):
            for key, item in value.items():
                named(key, item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)

    walk(parameters)
    return sorted({s for s in found if s not in REAL_SETS or not REAL_SETS[s].unavailable})


def artifact_files(results: str | Path, exp: Experiment) -> list[Path]:
    """The figure files (.pdf, .png) or table files (.csv, .md, .tex) of ``exp`` under ``results``."""
    stem = artifact_stem(results, exp.parameters)
    return [Path(f"{stem}{suffix}") for suffix in exp.suffixes]


def caption_path(exp: Parameters) -> Path:
    """The file of the HTML report's caption of experiment ``exp`` (typed parameters): a report caption is a
    file, one per artifact, ``.snakemake/calib/captions/<folder>/<artifact>.rst``, written by the step that
    renders the artifact (:mod:`pipeline.steps.render`)."""
    return CACHE_DIR / "captions" / f"{artifact_key(exp)}.rst"


def caption(exp: Parameters) -> str:
    """What an artifact shows (its title), where its data come from, and the note of its config."""
    text = f"**{exp.paper} / {exp.artifact}**: {exp.title}."
    sets = real_sets(exp)
    if sets:
        text += " Real posterior sets: " + ", ".join(f"``{s}``" for s in sets) + "."
    if exp.reference is not None:
        text += " Its published numbers are compared in the reproduction report."
    if exp.note is not None:
        text += f" {exp.note}"
    return text


@functools.cache  # once per process: the configs do not change under a running workflow or step
def experiments() -> list[Experiment]:
    """Every listed experiment (:func:`pipeline.config.listed_jobs`), typed, in the order listed; an own set's
    protocol only where the set gives what it ``needs``. A config whose name does not say its paper and
    artifact stops with the name it must have.
    """
    out = []
    for composition in compositions(listed_jobs()):
        root = typed_root(composition.config, composition.choices)
        exp, name = root.experiment, root.names["experiment"]
        if root.own is None and name != f"{exp.paper}_{exp.artifact}":
            raise SystemExit(
                f"configs/experiment/{name}.yaml must be named <paper>_<artifact> = {exp.paper}_{exp.artifact}"
            )
        if root.own is not None and name != f"own/{exp.artifact}":
            raise SystemExit(f"configs/{OWN_PROTOCOLS}/{name.removeprefix('own/')}.yaml must set artifact: <its name>")
        needs = exp.own_protocol.needs if exp.own_protocol is not None else None
        if root.own is not None and needs and not getattr(root.own.declaration, needs):
            continue
        out.append(Experiment(composition.overrides, root, composition.digest))
    return out


@functools.cache
def own_sets() -> dict[str, Own]:
    """Every own set (``configs/own/<name>.yaml``) by name, its declaration typed (composed with ``own=<name>``)."""
    jobs = [(f"own={name}",) for name in own_set_names()]
    return {c.choices["own"]: typed_root(c.config, c.choices).own for c in compositions(jobs)}


def settings(results: str) -> Root:
    """The root config with ``paths.results=<results>`` and nothing selected, typed (the workflow's settings)."""
    (composition,) = compositions([(f"paths.results={results}",)])
    return typed_root(composition.config, composition.choices)


def jobs(experiments: list[Experiment]) -> dict[str, list[Experiment]]:
    """The workflow's artifact jobs: name -> the experiments it builds, in name order.

    A job is ``<paper>``: every artifact of the paper whose kind is not ``own_job``, built one after
    another in one process, which starts Python, imports the libraries and matplotlib once instead
    of once per artifact (most artifacts compute for well under a second); or ``<paper>/<artifact>``:
    one artifact of an ``own_job`` kind (seconds of resampling), so those run in parallel.
    """
    out: dict[str, list[Experiment]] = {}
    for e in experiments:
        out.setdefault(e.job, []).append(e)
    return out


def rule_name(job: str) -> str:
    """The Snakemake rule of an artifact job: ``artifacts_<paper>`` or ``artifact_<paper>_<artifact>``."""
    single = job.count("/") > job.startswith("own/")  # an own set's folder is own/<set>
    return ("artifact_" if single else "artifacts_") + job.replace("/", "_")
