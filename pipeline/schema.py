"""The config schema: which keys each experiment kind, dataset, sweep and metric-options block takes,
and which values each key allows (an experiment kind's own keys are declared with the kind, in its
paper's module: :mod:`pipeline.kinds`). Checked when a config is composed (the Snakefile, every step), so
a typo stops the run before any work, with a message naming the key and listing what is allowed.

Keys are checked where the schema knows the block (experiment top level, ``options``, datasets,
sweeps and their grids); values are checked by key name at any depth (``n_bins`` must be an int >= 1
wherever it appears, in a list or not).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable

from omegaconf import DictConfig, ListConfig, OmegaConf

from pipeline.config import CONFIG_DIR
from pipeline.kinds import Kind, paper_kinds, papers

COMMON_EXPERIMENT_KEYS = ("paper", "artifact", "kind", "title", "note")

SWEEP_KEYS = ("title", "experiment", "grid", "plot")
DATASET_KEYS = ("generator", "n_classes", "n_samples", "prior1", "variance", "scale", "mismatch_prior", "rng", "seed")
OPTIONS_KEYS = (
    "ece_bins", "ece_closed", "histogram_bins", "histogram_empty_bin", "n_folds", "seed", "rcl_zero_probability",
)  # fmt: skip
ROOT_KEYS = (
    "paths", "real_data", "zoo", "zoo_dataset", "point", "real_set", "papers", "experiment", "dataset", "sweep",
)  # fmt: skip


REFERENCE_KEYS = (
    "file", "layout", "row", "column", "value", "skip_values", "percent_columns", "reading", "reading_cause",
    "decimals", "exact", "cells", "deviations", "second_readings", "repeats", "not_printed", "fitted",
)  # fmt: skip
# Each rule list of a reference block, with the keys of its rules.
REFERENCE_RULES = {
    "decimals": ("row", "column", "decimals"),
    "exact": ("row", "column"),
    "cells": ("row", "column", "status", "cause"),
    "deviations": ("row", "column", "cause", "check"),
    "second_readings": ("row", "column", "ours", "cause"),
    "repeats": ("row", "column", "of"),
    "not_printed": ("row", "column", "source"),
}
DEVIATION_CHECKS = ("rerun", "reading", "difference", "recorded")

# Longer lists of allowed values are cut after this many (the closest match is always suggested).
_LISTED = 30


class ConfigError(SystemExit):
    """A config that cannot run: the message names the key, the value and what is allowed."""


def _message(path: str, problem: str, allowed: Iterable | None = None, given=None) -> str:
    text = f"config error at {path}: {problem}"
    if allowed is not None:
        allowed = sorted(map(str, allowed))
        shown = allowed if len(allowed) <= _LISTED else [*allowed[:_LISTED], f"... ({len(allowed)} in all)"]
        text += f"; allowed: {', '.join(shown) or '(none)'}"
        close = difflib.get_close_matches(str(given), allowed, n=1) if given is not None else []
        if close:
            text += f". Did you mean {close[0]!r}?"
    return text


# --- value rules, by key name ---------------------------------------------------------------------


def _int_at_least(minimum: int) -> Callable[[object], str | None]:
    def check(value) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            return f"must be an integer >= {minimum}; got {value!r}"
        return None

    return check


def _positive_real(value) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        return f"must be a finite number > 0; got {value!r}"
    return None


def _open_unit(value) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        return f"must be a number strictly between 0 and 1; got {value!r}"
    return None


def _choice(names: Callable[[], Iterable[str]]) -> Callable[[object], tuple[str, Iterable[str]] | None]:
    """A name from ``names()`` (called lazily: some registries live in heavy modules)."""

    def check(value):
        if not isinstance(value, str):
            return None  # lists of records (e.g. systems with label / set) are checked by their own keys
        allowed = tuple(names())
        return None if value in allowed else (f"{value!r} is not a known name", allowed)

    return check


def _posterior_sets() -> Iterable[str]:
    from calib.data.registry import REAL_SETS
    from calib.data.zoo import SPLITS, zoo_names

    return (*REAL_SETS, *(f"{pair}/{split}" for pair in zoo_names() for split in SPLITS))


def _dataset_names() -> Iterable[str]:
    return (p.stem for p in (CONFIG_DIR / "dataset").glob("*.yaml"))


def _metric_names() -> Iterable[str]:
    from pipeline.named_metrics import METRIC_NAMES, RCL_NAMES

    return (*METRIC_NAMES, *RCL_NAMES)


def _empty_bin_policies() -> Iterable[str]:
    from calib.calibrators.histogram import EMPTY_BIN_POLICIES

    return EMPTY_BIN_POLICIES


_COUNTS = (
    "n_bins", "ece_bins", "histogram_bins", "n_boot", "n_bootstrap", "n_consistency",
    "n_resamples", "n_repeats", "n_seeds", "fold_seeds", "n_samples", "n_series", "n_eval", "n_points", "n_runs",
    "epochs", "batch_size", "hidden", "grid_points", "min_count", "min_size", "simplex_resolution", "sizes", "ks",
)  # fmt: skip
_POSITIVE = (
    "bandwidth", "bandwidths", "variance", "scale", "temperature", "temperatures", "monte_carlo_temperatures",
    "half_width", "learning_rate",
)  # fmt: skip
_FRACTIONS = (
    "prior1",
    "mismatch_prior",
    "alpha",
    "level",
    "calibration_fraction",
    "test_fraction",
    "validation_fraction",
)

VALUE_RULES: dict[str, Callable] = {
    **dict.fromkeys(_COUNTS, _int_at_least(1)),
    **dict.fromkeys(("seed", "split_seed"), _int_at_least(0)),
    "n_folds": _int_at_least(2),
    "n_classes": _int_at_least(2),
    **dict.fromkeys(_POSITIVE, _positive_real),
    **dict.fromkeys(_FRACTIONS, _open_unit),
    "protocol": _choice(lambda: ("tt", "xv")),
    "ece_closed": _choice(lambda: ("left", "right")),
    "rng": _choice(lambda: ("default", "paper")),
    "generator": _choice(lambda: ("gaussian",)),
    "histogram_empty_bin": _choice(_empty_bin_policies),
    "rcl_zero_probability": _choice(lambda: ("smooth", "nan")),
    **dict.fromkeys(("set", "sets"), _choice(_posterior_sets)),
    "datasets": _choice(_dataset_names),
    **dict.fromkeys(("system", "systems"), _choice(lambda: ("cal", "mcp", "mcs", "mcps"))),
    **dict.fromkeys(("overall", "calibration", "metrics", "binary_only_metrics"), _choice(_metric_names)),
}


def _check_values(node, path: str, rules: dict[str, Callable]) -> None:
    """Every leaf whose key has a rule satisfies it (list items one by one)."""
    items = node.items() if isinstance(node, DictConfig) else enumerate(node)
    for key, value in items:
        here = f"{path}.{key}" if isinstance(node, DictConfig) else f"{path}[{key}]"
        name = key if isinstance(node, DictConfig) else path.rsplit(".", 1)[-1].split("[")[0]
        if isinstance(value, DictConfig | ListConfig):
            _check_values(value, here, rules)
        elif name in rules and value is not None:
            problem = rules[name](value)
            if isinstance(problem, tuple):
                text, allowed = problem
                raise ConfigError(_message(here, text, allowed, value))
            if problem:
                raise ConfigError(_message(here, problem))


def _check_keys(node: DictConfig, path: str, allowed: Iterable[str]) -> None:
    allowed = tuple(allowed)
    for key in node:
        if key not in allowed:
            raise ConfigError(_message(f"{path}.{key}", "unknown key", allowed, key))


def _rules_for(kind: Kind) -> dict[str, Callable]:
    """The value rules, with ``calibrator`` restricted to the names the kind declares (each kind has its own)."""
    if kind.calibrators:
        return {**VALUE_RULES, "calibrator": _choice(lambda: kind.calibrators)}
    return VALUE_RULES


def _kind(exp: DictConfig, path: str, sweep: bool) -> Kind:
    """The kind ``exp`` runs, from its paper's module (only a sweep may omit the paper: a sweep kind of no paper)."""
    paper = exp.get("paper")
    if (paper is None and not sweep) or (paper is not None and paper not in papers()):
        raise ConfigError(_message(f"{path}.paper", f"unknown paper {paper!r}", papers(), paper))
    # A kind without a renderer runs only as a sweep point.
    kinds = {name: k for name, k in paper_kinds(paper).items() if sweep or k.render is not None}
    kind = exp.get("kind")
    if kind not in kinds:
        where = f"paper {paper}" if paper else "pipeline/sweep_kinds.py (or name a paper)"
        raise ConfigError(_message(f"{path}.kind", f"unknown experiment kind {kind!r} of {where}", kinds, kind))
    return kinds[kind]


def check_experiment(exp: DictConfig, path: str = "experiment", sweep: bool = False) -> None:
    """The experiment's paper declares its kind, its keys belong to that kind and every value is allowed.

    ``sweep``: the experiment block of a sweep, which may also run the sweep kinds of no paper.
    """
    kind = _kind(exp, path, sweep)
    _check_keys(exp, path, COMMON_EXPERIMENT_KEYS + ("reference",) + kind.keys)
    if "reference" in exp:
        check_reference(exp.reference, f"{path}.reference")
    if isinstance(exp.get("options"), DictConfig):
        _check_keys(exp.options, f"{path}.options", OPTIONS_KEYS)
    _check_values(exp, path, _rules_for(kind))


def check_reference(ref: DictConfig, path: str) -> None:
    """A reference block's keys, its rules' keys, each declared status and each deviation's check."""
    from pipeline.statuses import NON_VERDICTS

    _check_keys(ref, path, REFERENCE_KEYS)
    if ref.get("layout") not in ("wide", "long"):
        raise ConfigError(_message(f"{path}.layout", "unknown layout", ("wide", "long"), ref.get("layout")))
    if ref.get("reading", "primary") not in ("primary", "second"):
        raise ConfigError(_message(f"{path}.reading", "unknown reading", ("primary", "second"), ref.reading))
    if ref.get("reading", "primary") == "second" and "reading_cause" not in ref:
        raise ConfigError(_message(f"{path}.reading_cause", "a second reading needs a reading_cause"))
    for name, keys in REFERENCE_RULES.items():
        for i, rule in enumerate(ref.get(name, [])):
            here = f"{path}.{name}[{i}]"
            _check_keys(rule, here, keys)
            if name == "cells" and rule.get("status") not in NON_VERDICTS:
                given = rule.get("status")
                raise ConfigError(_message(f"{here}.status", "not a status a config may declare", NON_VERDICTS, given))
            if name != "exact" and "cause" in keys and not rule.get("cause"):
                raise ConfigError(_message(f"{here}.cause", "every declared status or deviation needs its cause"))
            if name == "deviations":
                check = rule.get("check")
                kind = check if isinstance(check, str) else next(iter(check), None) if check else None
                if kind not in DEVIATION_CHECKS:
                    raise ConfigError(_message(f"{here}.check", "unknown check", DEVIATION_CHECKS, kind))


def check_dataset(ds: DictConfig, path: str = "dataset") -> None:
    _check_keys(ds, path, DATASET_KEYS)
    _check_values(ds, path, VALUE_RULES)


def check_sweep(sweep: DictConfig, name: str) -> None:
    """A sweep's blocks, its experiment (a sweep kind or an experiment kind) and every grid point's values."""
    path = f"sweep {name}"
    _check_keys(sweep, path, SWEEP_KEYS + ("name",))
    check_experiment(sweep.experiment, f"{path}: experiment", sweep=True)
    exp = sweep.experiment
    known = [f"{k}.{sub}" for k, v in exp.items() if isinstance(v, DictConfig) for sub in v]
    known += [k for k, v in exp.items() if not isinstance(v, DictConfig)]
    for key, values in sweep.grid.items():
        if OmegaConf.select(exp, key, default="<missing>") == "<missing>":
            raise ConfigError(_message(f"{path}: grid.{key}", "is not a key of the sweep's experiment", known, key))
        if not isinstance(values, ListConfig) or len(values) == 0:
            raise ConfigError(_message(f"{path}: grid.{key}", f"must be a non-empty list of values; got {values!r}"))
        leaf = key.rsplit(".", 1)[-1]
        _check_values(OmegaConf.create({leaf: values}), f"{path}: grid", _rules_for(_kind(exp, path, sweep=True)))


def check_config(cfg: DictConfig) -> None:
    """The whole composed config of a step: known root keys, then whichever of experiment / dataset it selects."""
    _check_keys(cfg, "config", ROOT_KEYS)
    if cfg.get("experiment") is not None:
        check_experiment(cfg.experiment)
    if cfg.get("dataset") is not None:
        check_dataset(cfg.dataset)
    if cfg.get("sweep") is not None:
        check_sweep(cfg.sweep, "sweep")
    if cfg.get("point") is not None and (isinstance(cfg.point, bool) or not isinstance(cfg.point, int)):
        raise ConfigError(_message("config.point", f"must be the integer index of a sweep point; got {cfg.point!r}"))
