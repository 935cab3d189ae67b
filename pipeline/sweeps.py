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

import copy
import itertools
from pathlib import Path

import numpy as np
import pandas as pd

from calib.plots.style import figure_style, save_figure, subplots
from pipeline.config import group_options
from pipeline.config_blocks import Sweep
from pipeline.io import values_frame, write_csv
from pipeline.kinds import kind_of, parameters_of
from pipeline.root import root_of
from pipeline.sources import DataSources


def sweep_names() -> list[str]:
    """Every declared sweep, sorted by name (configs/sweep/*.yaml)."""
    return group_options("sweep")


def load_sweep(name: str) -> Sweep:
    """A declared sweep (``sweep=<name>``), composed and typed, for the Snakefile."""
    if name not in sweep_names():
        raise SystemExit(f"sweep {name!r} is not declared; known sweeps: {sweep_names()} (configs/sweep/)")
    return root_of([f"sweep={name}"]).sweep


def points(sweep: Sweep) -> list[dict]:
    """The grid's combinations, first key slowest."""
    keys = list(sweep.grid)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(sweep.grid[k] for k in keys))]


def point_experiment(sweep: Sweep, index: int) -> dict:
    """The sweep's experiment (a plain mapping) with point ``index`` applied (dotted keys reach nested blocks)."""
    grid = points(sweep)
    if not 0 <= index < len(grid):
        raise SystemExit(f"sweep {sweep.name}: point must be in [0, {len(grid)}); got {index}")
    exp = copy.deepcopy(sweep.experiment)
    for key, value in grid[index].items():
        *blocks, last = key.split(".")
        node = exp
        for block in blocks:
            node = node.setdefault(block, {})
        node[last] = value
    return exp


def run_point(sweep: Sweep, index: int, data: DataSources) -> pd.DataFrame:
    """The tidy values of one point, with one column per grid key."""
    exp = point_experiment(sweep, index)
    parameters = parameters_of(exp, f"sweep {sweep.name}: experiment", sweep=True)
    frame = values_frame(kind_of(parameters).evaluate(parameters, data))
    for key, value in points(sweep)[index].items():
        frame[key] = value
    return frame


def point_path(results: str | Path, name: str, index: int) -> Path:
    return Path(results) / "sweeps" / name / f"point_{index}.csv"


def aggregate(sweep: Sweep, results: str | Path) -> list[Path]:
    """Concatenate the points into ``sweeps/<name>.csv`` and draw ``sweeps/<name>.pdf`` / ``.png``."""
    frame = pd.concat([pd.read_csv(point_path(results, sweep.name, i)) for i in range(len(points(sweep)))])
    stem = Path(results) / "sweeps" / sweep.name
    paths = [write_csv(stem.with_suffix(".csv"), frame)]
    keys = list(sweep.grid)
    x_key, others = keys[0], keys[1:]
    shown = frame[frame.column.isin(sweep.plot.y)] if sweep.plot.y is not None else frame
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
        if numeric and sweep.plot.log_x:
            ax.set_xscale("log")
        if not numeric:
            ax.set_xticks(range(len(categories)), categories)
        ax.set_xlabel(x_key)
        ax.set_ylabel(sweep.plot.ylabel)
        fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=3, fontsize=6)
        ax.set_title(sweep.title, fontsize=8)
        paths += save_figure(fig, stem)
    return paths
