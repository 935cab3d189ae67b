"""The config schema: which keys each experiment kind, dataset, sweep and metric-options block takes,
and which values each key allows. Checked when a config is composed (the Snakefile, every step), so
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

COMMON_EXPERIMENT_KEYS = ("paper", "artifact", "kind", "title", "note")

# Keys of each experiment kind besides the common ones (a new kind or key is declared here).
KIND_KEYS = {
    "bayes_risk_curves": ("curves", "datasets", "grid", "reference"),
    "binary_calibration": ("calibrator", "data", "fine_bins", "grid_points", "min_count", "models"),
    "bootstrap_panels": ("alpha", "calibration", "datasets", "n_boot", "options", "overall", "seed", "systems"),
    "calibration_notions": ("example",),
    "decomposition_table": ("index_name", "reference"),
    "deviation_diagrams": (
        "binnings", "min_size", "model", "n_bins", "n_bootstrap", "n_consistency", "n_resamples", "n_samples",
        "seed", "set",
    ),
    "divergence_curves": ("datasets", "divergences", "grid", "system"),
    "ecd_real_diagrams": ("n_bins", "options", "system"),
    "ecd_real_table": ("n_bins", "options", "system"),
    "ecd_simulation_figures": ("figure", "generator", "n_bins", "n_samples", "seed", "sigmas"),
    "ecd_simulation_table": ("generator", "n_bins", "n_repeats", "n_samples", "reference", "seed", "sigmas"),
    "ecd_single_datum": ("grid",),
    "ecd_table2_check": ("reference", "single_datum_bins"),
    "ecd_temperature_sweep": (
        "half_width", "monte_carlo_temperatures", "n_repeats", "n_samples", "seed", "temperatures", "weight",
    ),
    "gmm_bias": ("model", "n_bins", "n_series", "seed", "sizes"),
    "gmm_eta": ("bins", "distances", "models", "n_samples", "reference", "seed"),
    "group_simplex_diagrams": ("groups", "ks", "set"),
    "hallenbeck_diagrams": ("n_bins", "style"),
    "hallenbeck_table": ("index_name", "reference"),
    "heldout_table": ("calibrators", "options", "systems"),
    "hosmer_lemeshow_table": ("index_name", "n_bins", "reference"),
    "marker_pitfall": (),
    "metric_panels": (
        "calibration", "datasets", "folds", "options", "overall", "reference", "systems", "upstream_rerun",
    ),
    "miscalibration_table": (
        "binnings", "calibration_fraction", "distances", "lenses", "min_size", "n_bins", "n_bootstrap",
        "n_consistency", "n_resamples", "reference", "seed", "set", "temperature_scaled",
    ),
    "mrr_closed_form_check": ("mrr", "n_classes", "reference"),
    "multiclass_calibration": ("bins", "calibrator", "data", "min_count", "simplex_resolution"),
    "notion_simplex": ("example",),
    "psr_curves": ("costs", "datasets", "grid"),
    "real_metrics_table": (
        "binary_only_metrics", "metrics", "options", "posteriors", "reference", "systems", "upstream_rerun",
    ),
    "real_set_summary": ("systems",),
    "recalibration_table": ("methods", "n_bins", "set", "split", "synthetic"),
    "reliability_comparison": ("methods", "n_bins", "set", "split"),
    "resampling_null": ("n_bins", "n_resamples", "n_seeds", "reference", "seed"),
    "semi_empirical_table": ("datasets", "folds", "options", "reference", "references", "systems"),
    "sharpness_diagrams": (
        "bandwidths", "grid_points", "kernels", "methods", "n_bins", "n_eval", "n_repeats", "seed", "set", "split",
    ),
    "smooth_ece_diagrams": ("grid_points", "methods", "n_bins", "set", "split"),
    "survey_densities": ("n_points", "x_max", "x_min"),
    "toy_bins_table": ("index_name", "n_bins", "reference", "target"),
    "toy_data_table": ("index_name",),
    "toy_diagrams": ("n_bins", "targets"),
    "toy_summary_table": ("index_name", "n_bins", "reference"),
    "training_pvalues": (
        "batch_size", "epochs", "hidden", "learning_rate", "n_bins", "n_resamples", "n_runs", "seed", "split_seed",
        "test_fraction", "validation_fraction", "weight_decay",
    ),
}  # fmt: skip

# Kinds that only sweeps run (pipeline/sweeps.py), with their keys.
SWEEP_KIND_KEYS = {
    "calibrator_protocol": ("calibrator", "protocol", "sets"),
    "ecd_temperature": ("half_width", "n_repeats", "n_samples", "seed", "temperature", "weight"),
    "ece_binning": ("n_bins", "sets"),
    "smooth_ece_bandwidth": ("bandwidth", "sets"),
    "synthetic_metrics": ("generator", "seed", "systems"),
}
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
    "decimals", "exact", "cells", "deviations", "second_readings",
)  # fmt: skip
# Each rule list of a reference block, with the keys of its rules.
REFERENCE_RULES = {
    "decimals": ("row", "column", "decimals"),
    "exact": ("row", "column"),
    "cells": ("row", "column", "status", "cause"),
    "deviations": ("row", "column", "cause", "check"),
    "second_readings": ("row", "column", "ours", "cause"),
}
DEVIATION_CHECKS = ("rerun", "reading", "truncated", "corrected")

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
    from pipeline.config import CONFIG_DIR

    return (p.stem for p in (CONFIG_DIR / "dataset").glob("*.yaml"))


def _metric_names() -> Iterable[str]:
    from pipeline.named_metrics import METRIC_NAMES, RCL_NAMES

    return (*METRIC_NAMES, *RCL_NAMES)


def _empty_bin_policies() -> Iterable[str]:
    from calib.calibrators.histogram import EMPTY_BIN_POLICIES

    return EMPTY_BIN_POLICIES


_COUNTS = (
    "n_bins", "bins", "fine_bins", "ece_bins", "histogram_bins", "n_boot", "n_bootstrap", "n_consistency",
    "n_resamples", "n_repeats", "n_seeds", "fold_seeds", "n_samples", "n_series", "n_eval", "n_points", "n_runs",
    "epochs", "batch_size", "hidden", "grid_points", "min_count", "min_size", "simplex_resolution", "sizes", "ks",
)  # fmt: skip
_POSITIVE = (
    "bandwidth", "bandwidths", "variance", "scale", "temperature", "temperatures", "monte_carlo_temperatures",
    "half_width", "learning_rate",
)  # fmt: skip
_FRACTIONS = ("prior1", "mismatch_prior", "alpha", "calibration_fraction", "test_fraction", "validation_fraction")

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
    "rcl_zero_probability": _choice(lambda: ("floor", "nan")),
    **dict.fromkeys(("set", "sets"), _choice(_posterior_sets)),
    "datasets": _choice(_dataset_names),
    **dict.fromkeys(("system", "systems"), _choice(lambda: ("cal", "mcp", "mcs", "mcps"))),
    **dict.fromkeys(("overall", "calibration", "metrics", "binary_only_metrics"), _choice(_metric_names)),
}


def _survey_calibrators() -> Iterable[str]:
    from pipeline.survey_synthetic import CALIBRATORS

    return CALIBRATORS


def _sweep_calibrators() -> Iterable[str]:
    from pipeline.sweeps import SWEEP_CALIBRATORS

    return SWEEP_CALIBRATORS


# ``calibrator`` names a different registry in each kind that has one (None: no calibrator).
CALIBRATOR_REGISTRIES = {
    "binary_calibration": _survey_calibrators,
    "multiclass_calibration": _survey_calibrators,
    "calibrator_protocol": _sweep_calibrators,
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


def _rules_for(kind: str) -> dict[str, Callable]:
    if kind in CALIBRATOR_REGISTRIES:
        return {**VALUE_RULES, "calibrator": _choice(CALIBRATOR_REGISTRIES[kind])}
    return VALUE_RULES


def check_experiment(exp: DictConfig, path: str = "experiment", kinds: dict | None = None) -> None:
    """The experiment's kind exists, its keys belong to that kind and every value is allowed."""
    kinds = KIND_KEYS if kinds is None else kinds
    kind = exp.get("kind")
    if kind not in kinds:
        raise ConfigError(_message(f"{path}.kind", f"unknown experiment kind {kind!r}", kinds, kind))
    _check_keys(exp, path, COMMON_EXPERIMENT_KEYS + ("reference",) + kinds[kind])
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
    check_experiment(sweep.experiment, f"{path}: experiment", {**KIND_KEYS, **SWEEP_KIND_KEYS})
    exp = sweep.experiment
    known = [f"{k}.{sub}" for k, v in exp.items() if isinstance(v, DictConfig) for sub in v]
    known += [k for k, v in exp.items() if not isinstance(v, DictConfig)]
    for key, values in sweep.grid.items():
        if OmegaConf.select(exp, key, default="<missing>") == "<missing>":
            raise ConfigError(_message(f"{path}: grid.{key}", "is not a key of the sweep's experiment", known, key))
        if not isinstance(values, ListConfig) or len(values) == 0:
            raise ConfigError(_message(f"{path}: grid.{key}", f"must be a non-empty list of values; got {values!r}"))
        leaf = key.rsplit(".", 1)[-1]
        _check_values(OmegaConf.create({leaf: values}), f"{path}: grid", _rules_for(sweep.experiment.kind))


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
