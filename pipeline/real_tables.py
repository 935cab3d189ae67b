"""Evaluators and renderers of the tables on published real posterior sets (paper 000, Tables 2-3).

An experiment's ``systems`` lists ``{label, set, one_vs_other?}`` entries (configs/real_systems/);
sets the registry marks unavailable (SITW: scores missing upstream) are listed, never computed.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
from omegaconf import DictConfig

from calib.data.real import PosteriorSet, one_vs_other
from calib.data.registry import REAL_SETS
from pipeline.companions import UPSTREAM, monte_carlo_records
from pipeline.io import write_table
from pipeline.named_metrics import MetricOptions, calibrated_posteriors, compute
from pipeline.sources import DataSources

PERCENT_PREFIXES = ("RCL", "ECE")


def unavailable_reason(system: DictConfig) -> str | None:
    """Why a system's set cannot be computed (the registry's reason), or None."""
    return REAL_SETS[system.set].unavailable


def system_set(system: DictConfig, data: DataSources) -> PosteriorSet:
    """The posterior set of a system entry, as a one-vs-other view when it asks for one."""
    pset = data.real(system.set)
    return one_vs_other(pset, int(system.one_vs_other)) if "one_vs_other" in system else pset


def real_metrics_table(exp: DictConfig, data: DataSources) -> list[dict]:
    """Table 2: each metric of raw and calibrated posteriors (calibrators refitted per row's RCL).

    A row with ``fold_seeds: S`` (calh: the authors' histogram-binning folds were drawn from an
    unrecoverable global NumPy state) is a Monte-Carlo cell over the calibrator's fold seeds 0..S-1
    (:func:`pipeline.companions.monte_carlo_records`); the metrics' own folds (RCL) keep ``options.seed``.
    With ``upstream_rerun: true`` every other cell is computed again the way the authors' code computes
    it (:mod:`pipeline.authors_code`) and written as its ``[upstream]`` companion.
    """
    options = MetricOptions(**exp.options)
    variants = {"": options}
    if exp.get("upstream_rerun", False):
        variants[f" {UPSTREAM}"] = replace(options, implementation="authors")
    records = []
    for system in exp.systems:
        if unavailable_reason(system):
            continue
        pset = system_set(system, data)
        raw, labels = pset.logprobs(), pset.labels
        binary = pset.n_classes == 2
        metrics = [m for m in exp.metrics if binary or m not in exp.binary_only_metrics]
        print(f"evaluate: {system.label} ({pset.n_samples} samples, {pset.n_classes} classes)", flush=True)
        for suffix, opts in variants.items():
            raw_cache: dict = {}
            for row, spec in exp.posteriors.items():
                if spec is not None and spec.get("binary_only") and not binary:
                    continue
                key = f"{system.label} {row}"
                if spec is not None and "fold_seeds" in spec:
                    if suffix:  # its own spread over fold seeds is the allowance; no upstream rerun
                        continue
                    draws = {m: [] for m in metrics}
                    for seed in range(spec.fold_seeds):
                        fold_options = replace(opts, seed=seed)
                        logp = calibrated_posteriors(spec.calibrator, spec.protocol, raw, labels, fold_options)
                        cache: dict = {}
                        for metric in metrics:
                            draws[metric].append(compute(metric, logp, labels, opts, cache=cache))
                    for metric in metrics:
                        records += monte_carlo_records(key, f"{metric}{suffix}", draws[metric])
                    continue
                if spec is None:
                    logp, cache = raw, raw_cache
                else:
                    logp = calibrated_posteriors(spec.calibrator, spec.protocol, raw, labels, opts, cache=raw_cache)
                    cache = {}
                for metric in metrics:
                    value = compute(metric, logp, labels, opts, cache=cache)
                    records.append({"row": key, "column": f"{metric}{suffix}", "value": value})
    return records


def _shown(metric: str, value: float) -> str:
    if metric.startswith(PERCENT_PREFIXES):
        return f"{100 * value:.1f}"
    return f"{value:.3f}"


def render_real_metrics_table(exp: DictConfig, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Table 2 as printed: NRisk and NCE to 3 decimals, RCL and ECE in % to 1; '-' where not defined."""
    cells = values.set_index(["row", "column"]).value
    lines = []
    for system in exp.systems:
        reason = unavailable_reason(system)
        if reason:
            first, *rest = exp.metrics
            note = {first: f"not reproducible: {reason}", **dict.fromkeys(rest, "")}
            lines.append({"system": system.label, "posteriors": "-", **note})
            continue
        for row in exp.posteriors:
            key = f"{system.label} {row}"
            if (key, "NCE") not in cells:
                continue
            shown = {m: _shown(m, cells[(key, m)]) if (key, m) in cells else "-" for m in exp.metrics}
            lines.append({"system": system.label, "posteriors": row, **shown})
    return write_table(stem, pd.DataFrame(lines), exp.title)


def real_set_summary(exp: DictConfig, data: DataSources) -> list[dict]:
    """Table 3: number of classes, number of samples and the class priors (label frequencies) of each set."""
    records = []
    for system in exp.systems:
        if unavailable_reason(system):
            continue
        pset = system_set(system, data)
        records += [
            {"row": system.label, "column": "classes", "value": pset.n_classes},
            {"row": system.label, "column": "samples", "value": pset.n_samples},
        ]
        records += [{"row": system.label, "column": f"P{k + 1}", "value": p} for k, p in enumerate(pset.priors())]
    return records


def _priors_text(priors: np.ndarray) -> str:
    if priors.size <= 4:
        return ", ".join(f"{p:.2f}" for p in priors)
    if np.ptp(priors) < 0.005:
        return f"{priors.mean():.2f} each"
    return f"{priors.min():.3f} to {priors.max():.3f}"


def render_real_set_summary(exp: DictConfig, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Table 3: one line per set; priors listed up to 4 classes, otherwise their range."""
    lines = []
    for system in exp.systems:
        reason = unavailable_reason(system)
        rows = values[values.row == system.label]
        if reason or rows.empty:
            lines.append(
                {"dataset": system.label, "classes": "-", "samples": "-", "priors": f"not reproducible: {reason}"}
            )
            continue
        cell = rows.set_index("column").value
        priors = cell[[c for c in cell.index if c.startswith("P")]].to_numpy()
        lines.append(
            {
                "dataset": system.label,
                "classes": int(cell["classes"]),
                "samples": int(cell["samples"]),
                "priors": _priors_text(priors),
            }
        )
    return write_table(stem, pd.DataFrame(lines), exp.title)
