"""Declared parameter sweeps (configs/sweep/<name>.yaml): one Snakemake job per point, then an aggregate.

A sweep file holds an ``experiment`` block (a ``kind`` from :mod:`pipeline.sweep_kinds`, or a paper's
kind with that ``paper`` named, and its parameters), a ``grid`` of parameter lists (the cartesian
product gives the points, in the order listed) and a ``plot`` block: ``y`` (the value column shown),
``log_x``, and a title.
Point i overrides the experiment's grid keys with the i-th combination:

    python -m pipeline.steps.sweep sweep=<name> point=<i>      # results/sweeps/<name>/point_<i>.csv
    python -m pipeline.steps.sweep sweep=<name>                # results/sweeps/<name>.csv, .pdf, .png

The aggregate CSV is the tidy values of every point with one column per grid key. The figure plots
``value`` against the first grid key, one line per remaining grid value, row and column; a
categorical first key gives grouped bars instead.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf

from calib.plots.style import figure_style, save_figure, subplots
from pipeline.config import sweep_config, sweep_names
from pipeline.config_checks import check_sweep
from pipeline.io import values_frame, write_csv
from pipeline.kinds import kind_of, parameters_of
from pipeline.sources import DataSources


def load_sweep(name: str) -> DictConfig:
    """A declared sweep as composed (its name added), checked, for the Snakefile."""
    if name not in sweep_names():
        raise SystemExit(f"sweep {name!r} is not declared; known sweeps: {sweep_names()} (configs/sweep/)")
    sweep = sweep_config(name)
    check_sweep(sweep, name)
    sweep.name = name
    return sweep


def points(sweep: DictConfig) -> list[dict]:
    """The grid's combinations, first key slowest."""
    keys = list(sweep.grid)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(sweep.grid[k] for k in keys))]


def point_experiment(sweep: DictConfig, index: int) -> DictConfig:
    """The sweep's experiment with point ``index`` applied (dotted keys reach nested blocks)."""
    grid = points(sweep)
    if not 0 <= index < len(grid):
        raise SystemExit(f"sweep {sweep.name}: point must be in [0, {len(grid)}); got {index}")
    exp = OmegaConf.create(OmegaConf.to_container(sweep.experiment))
    for key, value in grid[index].items():
        OmegaConf.update(exp, key, value, force_add=True)
    return exp


def run_point(sweep: DictConfig, index: int, data: DataSources) -> pd.DataFrame:
    """The tidy values of one point, with one column per grid key."""
    exp = point_experiment(sweep, index)
    parameters = parameters_of(exp, f"sweep {sweep.name}: experiment", sweep=True)
    frame = values_frame(kind_of(exp).evaluate(parameters, data))
    for key, value in points(sweep)[index].items():
        frame[key] = value
    return frame


def point_path(results: str | Path, name: str, index: int) -> Path:
    return Path(results) / "sweeps" / name / f"point_{index}.csv"


def aggregate(sweep: DictConfig, results: str | Path) -> list[Path]:
    """Concatenate the points into ``sweeps/<name>.csv`` and draw ``sweeps/<name>.pdf`` / ``.png``."""
    frame = pd.concat([pd.read_csv(point_path(results, sweep.name, i)) for i in range(len(points(sweep)))])
    stem = Path(results) / "sweeps" / sweep.name
    paths = [write_csv(stem.with_suffix(".csv"), frame)]
    keys = list(sweep.grid)
    x_key, others = keys[0], keys[1:]
    shown = frame[frame.column.isin(list(sweep.plot.y))] if "y" in sweep.plot else frame
    with figure_style():
        fig, ax = subplots(figsize=(5.6, 4.0), layout="constrained")
        series = shown.groupby([*others, "row", "column"], sort=False)
        numeric = pd.api.types.is_numeric_dtype(shown[x_key])
        categories = list(dict.fromkeys(shown[x_key]))
        width = 0.8 / max(1, series.ngroups)
        infinite = []
        for i, (label, part) in enumerate(series):
            name = " ".join(str(v) for v in (label if isinstance(label, tuple) else (label,)))
            values = part["value"].where(np.isfinite(part["value"]))
            if numeric:
                where = part[x_key].to_list()
                ax.plot(where, values, "o-", markersize=3, label=name)
            else:
                where = [categories.index(c) + (i - series.ngroups / 2 + 0.5) * width for c in part[x_key]]
                ax.bar(where, values, width=width, label=name)
            infinite += [x for x, v in zip(where, part["value"], strict=True) if not np.isfinite(v)]
        for x in infinite:  # an infinite value (e.g. a log loss with an exact 0) is marked, never dropped
            ax.annotate("inf", (x, 1.0), xycoords=("data", "axes fraction"), ha="center", va="top", color="red")
        if numeric and sweep.plot.get("log_x", False):
            ax.set_xscale("log")
        if not numeric:
            ax.set_xticks(range(len(categories)), categories)
        ax.set_xlabel(x_key)
        ax.set_ylabel(sweep.plot.get("ylabel", "value"))
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=3, fontsize=6)
        ax.set_title(sweep.title, fontsize=8)
        paths += save_figure(fig, stem)
    return paths
