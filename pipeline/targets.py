"""What the workflow builds, derived from the configs (the Snakefile repeats no path or parameter)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, ListConfig

import calib.data.registry
import calib.validation
from calib.data.registry import REAL_SETS
from pipeline.config import CACHE_DIR, CONFIG_DIR, OWN_PROTOCOLS, experiment_config, experiment_files, experiment_names
from pipeline.io import atomic_write
from pipeline.kinds import PAPERS_DIR, kind_of, parameters_of
from pipeline.own_sets import check_classes, check_weights

# Besides configs/, the experiment list depends only on the pipeline's modules (the kinds and their parameters),
# the registry of real sets and the checking rules.
_LIST_SOURCES = (
    *sorted(Path(__file__).parent.glob("*.py")),
    *sorted(PAPERS_DIR.glob("*.py")),
    Path(calib.data.registry.__file__),
    Path(calib.validation.__file__),
)

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
    job: str = ""
    folder: str = ""  # results/<folder>/<artifact>: the paper's, or own/<set> for an own set's protocol
    # An own set's protocol: the set, the classes it runs on, whether it takes sample weights, the experiment it
    # sits beside (its own_protocol block).
    own_set: str = ""
    classes: str = "any"
    weights: bool = False
    beside: str = ""

    @property
    def suffixes(self) -> tuple[str, ...]:
        return TABLE_SUFFIXES if self.is_table else FIGURE_SUFFIXES


def load_experiment(name: str) -> DictConfig:
    """The composed config of one experiment, checked by typing it (:func:`pipeline.kinds.parameters_of`);
    its file name must be ``<paper>_<artifact>`` (an own set's protocol: ``own_<set>_<artifact>``)."""
    cfg = experiment_config(name)
    exp = cfg.experiment
    own = cfg.get("own")
    if own is not None:
        parameters_of(exp, f"configs/{OWN_PROTOCOLS}/{exp.artifact}.yaml (run on own set {own.name})")
        check_classes(own.classes, exp.artifact)
        check_weights(own.get("weights", False), exp.artifact)
        if name != f"own_{own.name}_{exp.artifact}":
            raise ValueError(f"configs/{OWN_PROTOCOLS}/{exp.artifact}.yaml must set artifact: <its file name>")
        return cfg
    parameters_of(exp, f"experiment {name}")
    if name != f"{exp.paper}_{exp.artifact}":
        raise ValueError(
            f"configs/experiment/{name}.yaml must be named <paper>_<artifact> = {exp.paper}_{exp.artifact}"
        )
    return cfg


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
    """Every configured experiment.

    Composing ~170 configs and importing every paper's module takes a few seconds, which every
    ``snakemake`` call would pay before building its DAG; the list is therefore cached in
    ``.snakemake/calib/``, keyed by the sha256 of every config file and of the modules that derive it.
    A missing, stale or unreadable cache is simply recomputed; the cache is written atomically.
    """
    path = CACHE_DIR / f"experiments-{_list_key()}.json"
    try:
        return [
            Experiment(**{k: tuple(v) if isinstance(v, list) else v for k, v in row.items()})
            for row in json.loads(path.read_text())
        ]
    except (OSError, ValueError, TypeError):
        pass
    out = composed_experiments()
    for stale in CACHE_DIR.glob("experiments-*.json"):
        stale.unlink(missing_ok=True)
    atomic_write(path, lambda tmp: tmp.write_text(json.dumps([dataclasses.asdict(e) for e in out])))
    return out


def _list_key() -> str:
    """sha256 of the config files (paths and bytes) and of the modules the experiment list comes from."""
    digest = hashlib.sha256()
    named = [(str(f.relative_to(CONFIG_DIR)), f) for f in sorted(CONFIG_DIR.rglob("*.yaml"))]
    for name, file in named + [(f.name, f) for f in _LIST_SOURCES]:
        digest.update(name.encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


def composed_experiments() -> list[Experiment]:
    """Every configured experiment, composed afresh."""
    out = []
    for name in experiment_names():
        cfg = load_experiment(name)
        exp, own = cfg.experiment, cfg.get("own") or {}
        kind = kind_of(exp)
        datasets = tuple(exp.get("datasets", []))
        configs = tuple(experiment_files(name))
        sets = tuple(real_sets(exp))
        folder = exp.get("folder") or exp.paper
        job = f"{folder}/{exp.artifact}" if kind.own_job else folder
        own = (
            {"own_set": own.name, "classes": own.classes, "weights": own.get("weights", False)}
            | {"beside": own.get("beside") or ""}
            if own
            else {}
        )
        out.append(
            Experiment(
                name, exp.paper, exp.artifact, datasets, kind.is_table, sets, configs, caption(exp, sets), job, folder,
                **own,
            )
        )  # fmt: skip
    return out


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
