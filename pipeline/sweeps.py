"""Declared parameter sweeps (configs/sweep/<name>.yaml): one Snakemake job per point, then an aggregate.

A sweep file holds an ``experiment`` block (a ``kind`` from :data:`SWEEP_KINDS` or any experiment
kind, with its parameters), a ``grid`` of parameter lists (the cartesian product gives the points,
in the order listed) and a ``plot`` block: ``y`` (the value column shown), ``log_x``, and a title.
Point i overrides the experiment's grid keys with the i-th combination:

    python -m pipeline.sweeps sweep=<name> point=<i>      # results/sweeps/<name>/point_<i>.csv
    python -m pipeline.sweeps sweep=<name>                # results/sweeps/<name>.csv, .pdf, .png

The aggregate CSV is the tidy values of every point with one column per grid key. The figure plots
``value`` against the first grid key, one line per remaining grid value, row and column; a
categorical first key gives grouped bars instead.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import hydra
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from calib.calibration_error import ece_top_label
from calib.calibrators import (
    AffineCalibrator,
    DirichletCalibrator,
    HistogramBinning,
    IsotonicCalibrator,
    TemperatureScaling,
    VectorScaling,
    calibrate,
)
from calib.data.synthetic import gaussian_posteriors
from calib.kernel import smooth_ece
from calib.plots.style import figure_style, save_figure
from calib.scores import brier, cross_entropy
from pipeline.config import CONFIG_DIR
from pipeline.io import values_frame, write_csv
from pipeline.lazy import resolve
from pipeline.schema import check_config, check_sweep
from pipeline.sources import DataSources

SWEEP_DIR = CONFIG_DIR / "sweep"
SWEEP_CALIBRATORS = {
    "dp": AffineCalibrator,
    "temperature": TemperatureScaling,
    "vector": VectorScaling,
    "dirichlet": DirichletCalibrator,
    "histogram": HistogramBinning,
    "isotonic": IsotonicCalibrator,
}


def sweep_names() -> list[str]:
    """Every declared sweep (configs/sweep/*.yaml)."""
    return sorted(p.stem for p in SWEEP_DIR.glob("*.yaml"))


def load_sweep(name: str) -> DictConfig:
    """A sweep file as written (its name added), for the Snakefile."""
    path = SWEEP_DIR / f"{name}.yaml"
    if not path.exists():
        raise SystemExit(f"sweep {name!r} is not declared; known sweeps: {sweep_names()} (configs/sweep/)")
    sweep = OmegaConf.load(path)
    check_sweep(sweep, name)
    sweep.name = name
    return sweep


def points(sweep: DictConfig) -> list[dict]:
    """The grid's combinations, first key slowest."""
    keys = list(sweep.grid)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(sweep.grid[k] for k in keys))]


def _sets(exp: DictConfig, data: DataSources):
    for name in exp.sets:
        pset = data.real(name)
        yield name.split("/")[-1], pset.logprobs(), pset.labels


def ece_binning(exp: DictConfig, data: DataSources) -> list[dict]:
    """Top-label ECE with ``n_bins`` equal-width and equal-mass bins on each real set."""
    return [
        {
            "row": label,
            "column": f"ECE ({strategy})",
            "value": ece_top_label(logp, y, kind="logprobs", n_bins=exp.n_bins, strategy=strategy),
        }
        for label, logp, y in _sets(exp, data)
        for strategy in ("width", "mass")
    ]


def smooth_ece_bandwidth(exp: DictConfig, data: DataSources) -> list[dict]:
    """Top-label smooth ECE at a fixed kernel ``bandwidth`` on each real set (relplot's estimator)."""
    records = []
    for label, logp, y in _sets(exp, data):
        confidence, correct = np.exp(logp.max(axis=1)), (logp.argmax(axis=1) == y).astype(float)
        records.append(
            {"row": label, "column": "smooth ECE", "value": smooth_ece(confidence, correct, bandwidth=exp.bandwidth)}
        )
    return records


def synthetic_metrics(exp: DictConfig, data: DataSources) -> list[dict]:
    """NCE, top-label ECE and the RCL of DP (xv) of the paper-000 Gaussian systems at these generator settings."""
    dataset = gaussian_posteriors(**OmegaConf.to_container(exp.generator), seed=exp.seed)
    records = []
    for system in exp.systems:
        logp, y = dataset.systems[system], dataset.labels
        calibrated = calibrate(AffineCalibrator(), logp, y, kind="logprobs", protocol="xv", seed=exp.seed)
        raw_ce = cross_entropy(logp, y, kind="logprobs")
        metrics = {
            "NCE": cross_entropy(logp, y, kind="logprobs", normalize=True),
            "ECE": ece_top_label(logp, y, kind="logprobs", n_bins=15),
            "RCL-CE-Dxv": (raw_ce - cross_entropy(calibrated, y, kind="logprobs")) / raw_ce,
        }
        records += [{"row": system, "column": m, "value": v} for m, v in metrics.items()]
    return records


def calibrator_protocol(exp: DictConfig, data: DataSources) -> list[dict]:
    """Cross-entropy and Brier score after ``calibrator`` under ``protocol`` (tt or xv) on each real set."""
    records = []
    for label, logp, y in _sets(exp, data):
        cal = calibrate(SWEEP_CALIBRATORS[exp.calibrator](), logp, y, kind="logprobs", protocol=exp.protocol, seed=0)
        records.append({"row": label, "column": "NCE", "value": cross_entropy(cal, y, kind="logprobs", normalize=True)})
        records.append(
            {"row": label, "column": "NBS", "value": brier(cal, y, kind="logprobs", scaling="mean", normalize=True)}
        )
    return records


SWEEP_KINDS = {
    "ece_binning": ece_binning,
    "smooth_ece_bandwidth": smooth_ece_bandwidth,
    "synthetic_metrics": synthetic_metrics,
    "calibrator_protocol": calibrator_protocol,
    "ecd_temperature": "pipeline.entropic_tables:temperature_point",
}


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
    from pipeline.evaluators import EVALUATORS

    exp = point_experiment(sweep, index)
    evaluator = SWEEP_KINDS.get(exp.kind) or EVALUATORS.get(exp.kind)
    evaluator = resolve(evaluator) if evaluator is not None else None
    if evaluator is None:
        raise SystemExit(
            f"sweep {sweep.name}: unknown kind {exp.kind!r}; known: {sorted(SWEEP_KINDS)} and experiments'"
        )
    frame = values_frame(evaluator(exp, data))
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
        fig, ax = plt.subplots(figsize=(5.6, 4.0), layout="constrained")
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


@hydra.main(version_base=None, config_path="../configs", config_name="config")
def main(cfg: DictConfig) -> None:
    check_config(cfg)
    name = HydraConfig.get().runtime.choices.get("sweep")
    if cfg.get("sweep") is None or name is None:
        raise SystemExit(f"sweeps needs sweep=<name>; declared sweeps: {sweep_names()}")
    sweep = cfg.sweep
    OmegaConf.set_struct(sweep, False)
    sweep.name = name
    if cfg.get("point") is None:
        print("sweeps: wrote " + ", ".join(str(p) for p in aggregate(sweep, cfg.paths.results)))
        return
    frame = run_point(sweep, int(cfg.point), DataSources(cfg.paths.data))
    path = write_csv(point_path(cfg.paths.results, name, int(cfg.point)), frame)
    print(f"sweeps: wrote {path} ({len(frame)} values)")


if __name__ == "__main__":
    main()
