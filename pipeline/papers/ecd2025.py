"""The experiment kinds of "An entropic metric" (2025), the entropic calibration difference (ECD).

Artifacts: Fig. 2 (one datum's ECD against the prediction, with its lower bound); the simulation of
Sect. V-A in both readings of its generator (Table I as mean +- sd over seeds, Figs. 3-4); Table II's
checkable cells (the ResNet18 single-datum bins and weighted sums); the Table II protocol on every
binary real set we have, raw and recalibrated (DP, cross-validated); and expected ECD against the
temperature of a calibrated model.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from scipy.integrate import quad
from scipy.special import expit

from calib.calibration_errors.binned import BinnedCalibrationError, ReliabilityBins
from calib.calibration_errors.entropic import ecd_terms, entropic_bins, single_datum_bound
from calib.data.ecd_simulation import simulate
from calib.plots.reliability import reliability_bars
from calib.plots.style import figure_style, save_figure, subplots
from pipeline.companions import SD, companion, monte_carlo_records
from pipeline.io import write_table
from pipeline.kinds import Kind, Parameters
from pipeline.named_metrics import MetricOptions, calibrated_posteriors
from pipeline.parameters import Count, Fraction, Positive, Seed
from pipeline.sources import DataSources, RealSystem, system_set
from pipeline.values_table import render_values_table

METRICS = ("ECE", "ESCE", "ECD")
WEIGHTED = "Weighted Sum"


@dataclass(frozen=True, kw_only=True)
class ProbabilityGrid:
    """``num`` evenly spaced probabilities from ``start`` to ``stop``."""

    start: Fraction
    stop: Fraction
    num: Count


@dataclass(frozen=True, kw_only=True)
class TemperatureGrid:
    """``num`` temperatures from ``start`` to ``stop``, evenly spaced on a log scale."""

    start: Positive
    stop: Positive
    num: Count


@dataclass(frozen=True, kw_only=True)
class SingleDatum(Parameters):
    """Fig. 2: the single-datum ECD over a ``grid`` of predictions."""

    grid: ProbabilityGrid


@dataclass(frozen=True, kw_only=True)
class Generator:
    """The simulation of Sec. IV (:func:`calib.data.ecd_simulation.simulate`): noise added in ``noise_space``
    (``prob`` or ``logit``) to scores of half-width ``half_width``, mixed with weight ``weight``, clipped at
    ``clip``."""

    noise_space: Literal["prob", "logit"]
    half_width: Positive
    weight: Positive
    clip: Positive


@dataclass(frozen=True, kw_only=True)
class _Simulation(Parameters):
    generator: Generator
    sigmas: list[float]
    n_samples: Count
    n_bins: Count
    seed: Seed


@dataclass(frozen=True, kw_only=True)
class SimulationTable(_Simulation):
    """Table I: ``n_samples`` predictions per noise level in ``sigmas``, ``n_bins`` equal-width bins, mean and
    sd over ``n_repeats`` datasets."""

    n_repeats: Count


@dataclass(frozen=True, kw_only=True)
class SimulationFigures(_Simulation):
    """Figs. 3-4: one dataset per noise level, drawn as histograms or reliability diagrams (``figure``)."""

    figure: Literal["histograms", "reliability"]


@dataclass(frozen=True, kw_only=True)
class Table2Check(Parameters):
    """Table II's single-datum bins: the prediction of each (bin -> p), printed as 1 - ECE."""

    single_datum_bins: dict[str, Fraction]


@dataclass(frozen=True, kw_only=True)
class RealBins(Parameters):
    """Table II's protocol on a real binary ``system``: raw and DP-xv, ``n_bins`` equal-width bins."""

    system: RealSystem
    options: MetricOptions
    n_bins: Count


@dataclass(frozen=True, kw_only=True)
class TemperaturePoint(Parameters):
    """Expected ECD of a calibrated model seen at ``temperature`` (a point of the declared sweep), by
    quadrature and by seeded Monte Carlo (``n_repeats`` sets of ``n_samples``): scores uniform on
    +- ``weight`` x ``half_width``."""

    half_width: Positive
    weight: Positive
    n_samples: Count
    n_repeats: Count
    seed: Seed
    temperature: Positive


@dataclass(frozen=True, kw_only=True)
class TemperatureSweep(Parameters):
    """:class:`TemperaturePoint` over the grid ``temperatures`` (quadrature) and at ``monte_carlo_temperatures``."""

    half_width: Positive
    weight: Positive
    n_samples: Count
    n_repeats: Count
    seed: Seed
    temperatures: TemperatureGrid
    monte_carlo_temperatures: list[Positive]


def _binary(p1: np.ndarray) -> np.ndarray:
    return np.column_stack([1.0 - p1, p1])


def _bin_records(bins, prefix: str) -> list[dict]:
    records = []
    for b in range(bins.counts.size):
        if bins.counts[b]:
            for metric, values in zip(METRICS, (bins.ece, bins.esce, bins.ecd), strict=True):
                records.append({"row": str(b + 1), "column": f"{prefix} {metric}", "value": values[b]})
        records.append({"row": str(b + 1), "column": f"{prefix} n", "value": bins.counts[b]})
    records += [{"row": WEIGHTED, "column": f"{prefix} {m}", "value": bins.weighted(m.lower())} for m in METRICS]
    return records


def _shown(value: float) -> str:
    return "N/A" if pd.isna(value) else f"{value:.4f}"


# Fig. 2 -------------------------------------------------------------------------------------------


def single_datum(exp: SingleDatum, data: DataSources) -> list[dict]:
    """Fig. 2: (p - y) logit p for y = 0 and 1 over p, and the lower bound (p*, f(p*))."""
    p = np.linspace(exp.grid.start, exp.grid.stop, exp.grid.num)
    records = []
    for y in (0, 1):
        values = ecd_terms(_binary(p), np.full(p.size, y), kind="probs")
        records += [{"row": f"y={y}", "column": "ecd", "x": x, "value": v} for x, v in zip(p, values, strict=True)]
    p_star, bound = single_datum_bound()
    return records + [
        {"row": "bound", "column": "p", "value": p_star},
        {"row": "bound", "column": "ecd", "value": bound},
    ]


def render_single_datum(exp: SingleDatum, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Both curves over the whole range (left) and near 0 (right), the bound marked at p* and 1 - p*."""
    bound = values[values.row == "bound"].set_index("column").value
    with figure_style():
        fig, axes = subplots(1, 2, figsize=(8.0, 3.2), layout="constrained")
        for ax, ylim in zip(axes, (None, (-0.35, 0.6)), strict=True):
            for y, color in ((0, "tab:red"), (1, "tab:blue")):
                curve = values[values.row == f"y={y}"]
                ax.plot(curve.x, curve.value, color=color, label=f"$y={y}$")
            ax.plot([bound.p, 1 - bound.p], [bound.ecd] * 2, "o", color="black", markersize=4)
            ax.axhline(0.0, color="grey", linewidth=0.8)
            ax.set_xlabel(r"predicted probability of class 1, $\hat p$")
            if ylim:
                ax.set_ylim(*ylim)
                ax.axhline(bound.ecd, color="grey", linewidth=0.6, linestyle=":")
                ax.annotate(
                    f"lower bound {bound.ecd:.5f}\nat $\\hat p$ = {bound.p:.5f} (y = 1)",
                    (bound.p, bound.ecd),
                    xytext=(0.03, 0.97),
                    va="top",
                    textcoords="axes fraction",
                    fontsize=7,
                    arrowprops={"arrowstyle": "->", "linewidth": 0.6},
                )
                ax.set_title("near zero", fontsize=9)
            else:
                ax.set_ylabel(r"single-datum ECD $(\hat p - y)\,\mathrm{logit}\,\hat p$")
                ax.legend()
                ax.set_title(r"$\hat p \in [10^{-4}, 1 - 10^{-4}]$", fontsize=9)
        fig.suptitle(exp.title, fontsize=9)
        return save_figure(fig, stem)


# The simulation: Table I and Figs. 3-4 ------------------------------------------------------------


def _setting_label(sigma: float) -> str:
    return "eps=0" if sigma == 0 else f"sigma={sigma:g}"


def simulation_table(exp: SimulationTable, data: DataSources) -> list[dict]:
    """Table I: per-bin and weighted ECE, ESCE and ECD, mean and sd over ``n_repeats`` seeded datasets."""
    seeds = np.random.SeedSequence(exp.seed).spawn(exp.n_repeats)
    cells: dict[tuple[str, str], list[float]] = {}
    for seed in seeds:
        rng = np.random.default_rng(seed)
        for sigma in exp.sigmas:
            p1, y = simulate(exp.n_samples, sigma=sigma, rng=rng, **vars(exp.generator))
            for record in _bin_records(
                entropic_bins(_binary(p1), y, kind="probs", n_bins=exp.n_bins), _setting_label(sigma)
            ):
                cells.setdefault((record["row"], record["column"]), []).append(record["value"])
    return [record for (row, column), draws in cells.items() for record in monte_carlo_records(row, column, draws)]


def render_simulation_table(exp: SimulationTable, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Rows = bins and the weighted sum, columns = setting x metric, cells mean +- sd over the seeds."""
    wide = values.pivot(index="row", columns="column", values="value")
    rows = [str(b + 1) for b in range(exp.n_bins)] + [WEIGHTED]
    columns = [f"{_setting_label(s)} {m}" for s in exp.sigmas for m in METRICS]
    lines = [
        [row]
        + [
            _shown(wide.loc[row].get(c))
            + ("" if pd.isna(wide.loc[row].get(c)) else f" ± {wide.loc[row, companion(c, SD)]:.4f}")
            for c in columns
        ]
        for row in rows
    ]
    caption = f"{exp.title} (mean ± sd over {exp.n_repeats} seeded datasets of {exp.n_samples})"
    return write_table(stem, pd.DataFrame(lines, columns=["bin", *columns]), caption)


def _diagram_records(row: str, scores, labels, kind: str, n_bins: int) -> list[dict]:
    """Per bin (x = bin index) the count, mean prediction and frequency, then the weighted ECE, ESCE, ECD."""
    bins = BinnedCalibrationError("binary", n_bins=n_bins, closed="left").reliability(scores, labels, kind=kind)[0]
    records = []
    for b in range(n_bins):
        records.append({"row": row, "column": "count", "x": b, "value": bins.counts[b]})
        if bins.counts[b]:
            records.append({"row": row, "column": "mean", "x": b, "value": bins.mean_confidence[b]})
            records.append({"row": row, "column": "frequency", "x": b, "value": bins.frequency[b]})
    table = entropic_bins(scores, labels, kind=kind, n_bins=n_bins)
    return records + [{"row": row, "column": m, "value": table.weighted(m.lower())} for m in METRICS]


def _diagram_from_values(part: pd.DataFrame, n_bins: int) -> tuple[ReliabilityBins, pd.Series]:
    """Inverse of :func:`_diagram_records`: the reliability bins and the weighted metrics."""
    wide = part[part.x.notna()].pivot(index="x", columns="column", values="value").reindex(range(n_bins))
    edges = np.arange(n_bins + 1) / n_bins
    bins = ReliabilityBins(
        edges, wide["count"].to_numpy().astype(int), wide["mean"].to_numpy(), wide["frequency"].to_numpy()
    )
    return bins, part[part.x.isna()].set_index("column").value


def simulation_figures(exp: SimulationFigures, data: DataSources) -> list[dict]:
    """Figs. 3-4: one seeded dataset per setting: histogram counts and reliability bins (x = bin index)."""
    rng = np.random.default_rng(exp.seed)
    records = []
    for sigma in exp.sigmas:
        p1, y = simulate(exp.n_samples, sigma=sigma, rng=rng, **vars(exp.generator))
        records += _diagram_records(_setting_label(sigma), _binary(p1), y, "probs", exp.n_bins)
    return records


def render_simulation_figures(exp: SimulationFigures, values: pd.DataFrame, stem: Path) -> list[Path]:
    """``figure: histograms`` (Fig. 3) or ``figure: reliability`` (Fig. 4), one panel per setting."""
    labels = [_setting_label(s) for s in exp.sigmas]
    with figure_style():
        fig, axes = subplots(1, len(labels), figsize=(3.3 * len(labels), 3.2), layout="constrained")
        for ax, label, letter in zip(axes, labels, "abc", strict=False):
            bins, summary = _diagram_from_values(values[values.row == label], exp.n_bins)
            if exp.figure == "histograms":
                ax.bar(
                    bins.edges[:-1],
                    bins.counts,
                    width=1 / exp.n_bins,
                    align="edge",
                    color="tab:blue",
                    edgecolor="white",
                )
                ax.set_xlabel(r"$\hat p$ (class 1)")
                ax.set_ylabel("count")
            else:
                reliability_bars(ax, bins)
                ax.set_xlabel(r"mean predicted probability of class 1")
                ax.set_ylabel("fraction of positives")
            shown = ", ".join(f"{m} {summary[m]:.3f}" for m in METRICS)
            ax.set_title(f"({letter}) {label.replace('eps', 'ε').replace('sigma', 'σ')}\n{shown}", fontsize=8)
        fig.suptitle(exp.title, fontsize=9)
        return save_figure(fig, stem)


# Table II: the checkable cells, and the protocol on our binary sets --------------------------------


def table2_check(exp: Table2Check, data: DataSources) -> list[dict]:
    """ResNet18's single-datum bins: ECE, ESCE and ECD of one prediction p with label y = 1.

    The inputs are the printed ECE of bins 7 and 8 (p = 1 - ECE: 0.62 and 0.7868, as a bin holding
    one prediction p of a positive has ECE 1 - p); the ESCE and ECD that follow are a consistency check
    of the paper's arithmetic.
    """
    records = []
    for b, p in exp.single_datum_bins.items():
        bins = entropic_bins(_binary(np.array([p])), np.array([1]), kind="probs", n_bins=10)
        records += [
            {"row": str(b), "column": f"ResNet18 {m}", "value": float(getattr(bins, m.lower())[int(b) - 1])}
            for m in METRICS
        ]
    return records


def _real_inputs(exp: RealBins, data: DataSources):
    pset = system_set(exp.system, data)
    logp, labels = pset.logprobs(), pset.labels
    return {"raw": logp, "DP-xv": calibrated_posteriors("D", "xv", logp, labels, exp.options)}, labels


def real_bin_table(exp: RealBins, data: DataSources) -> list[dict]:
    """Table II protocol on a real binary set: per-bin and weighted ECE, ESCE, ECD, raw and DP-xv."""
    systems, labels = _real_inputs(exp, data)
    records = []
    for name, logp in systems.items():
        records += _bin_records(entropic_bins(logp, labels, kind="logprobs", n_bins=exp.n_bins), name)
    return records


def render_real_bin_table(exp: RealBins, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Rows = bins and the weighted sum; n and the three metrics for raw and recalibrated posteriors."""
    wide = values.pivot(index="row", columns="column", values="value")
    rows = [str(b + 1) for b in range(exp.n_bins)] + [WEIGHTED]
    columns = [f"{s} {m}" for s in ("raw", "DP-xv") for m in ("n", *METRICS)]
    lines = []
    for row in rows:
        cells = [wide.loc[row].get(c, np.nan) for c in columns]
        lines.append(
            [row]
            + [
                ("" if pd.isna(v) else f"{v:.0f}") if c.endswith(" n") else _shown(v)
                for c, v in zip(columns, cells, strict=True)
            ]
        )
    return write_table(stem, pd.DataFrame(lines, columns=["bin", *columns]), exp.title)


def real_bin_diagrams(exp: RealBins, data: DataSources) -> list[dict]:
    """Reliability bins (10, on the class-1 probability) of the raw and DP-xv posteriors, and the metrics."""
    systems, labels = _real_inputs(exp, data)
    records = []
    for name, logp in systems.items():
        records += _diagram_records(name, logp, labels, "logprobs", exp.n_bins)
    return records


def render_real_bin_diagrams(exp: RealBins, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Two reliability diagrams (raw, DP-xv) with the weighted ECE, ESCE and ECD in the titles."""
    with figure_style():
        fig, axes = subplots(1, 2, figsize=(6.6, 3.4), layout="constrained")
        for ax, name in zip(axes, ("raw", "DP-xv"), strict=True):
            bins, summary = _diagram_from_values(values[values.row == name], exp.n_bins)
            reliability_bars(ax, bins)
            ax.set_xlabel("mean predicted probability of class 1")
            ax.set_ylabel("fraction of positives")
            shown = ", ".join(f"{m} {summary[m]:.3f}" for m in METRICS)
            ax.set_title(f"{name}\n{shown}", fontsize=8)
        fig.suptitle(exp.title, fontsize=9)
        return save_figure(fig, stem)


# Expected ECD against temperature ---------------------------------------------------------------


def _population_ecd(temperature: float, half_range: float) -> float:
    """E[(sigma(t/T) - sigma(t)) t/T] for t ~ U(-h, h): labels drawn from sigma(t), predictions at temperature T."""
    integrand = lambda t: (expit(t / temperature) - expit(t)) * t / temperature  # noqa: E731
    return quad(integrand, -half_range, half_range, epsabs=1e-13, limit=200)[0] / (2 * half_range)


def _monte_carlo_ecd(temperature: float, half_range: float, n_samples: int, n_repeats: int, rng) -> tuple[float, float]:
    """Mean and sd over ``n_repeats`` seeded datasets of the ECD of sigma(t / T), labels drawn from sigma(t)."""
    draws = []
    for _ in range(n_repeats):
        t = half_range * rng.uniform(-1.0, 1.0, size=n_samples)
        labels = (rng.random(n_samples) < expit(t)).astype(np.int64)
        logits = np.column_stack([np.zeros_like(t), t / temperature])
        draws.append(float(np.mean(ecd_terms(logits, labels, kind="logits"))))
    return float(np.mean(draws)), float(np.std(draws, ddof=1))


def temperature_point(exp: TemperaturePoint, data: DataSources) -> list[dict]:
    """One point of the declared temperature sweep: expected ECD at ``temperature`` by quadrature and by
    seeded Monte Carlo (mean, with +- 1 sd as the interval)."""
    half = exp.weight * exp.half_width
    mean, sd = _monte_carlo_ecd(exp.temperature, half, exp.n_samples, exp.n_repeats, np.random.default_rng(exp.seed))
    return [
        {"row": "population (quadrature)", "column": "ECD", "value": _population_ecd(exp.temperature, half)},
        {"row": "Monte Carlo", "column": "ECD", "value": mean, "ci_low": mean - sd, "ci_high": mean + sd},
    ]


def temperature_sweep(exp: TemperatureSweep, data: DataSources) -> list[dict]:
    """Expected ECD of a calibrated model seen at temperature T: by quadrature over T, and seeded Monte Carlo."""
    half = exp.weight * exp.half_width
    grid = np.logspace(np.log10(exp.temperatures.start), np.log10(exp.temperatures.stop), exp.temperatures.num)
    records = [{"row": "population", "column": "ecd", "x": t, "value": _population_ecd(t, half)} for t in grid]
    rng = np.random.default_rng(exp.seed)
    for temperature in exp.monte_carlo_temperatures:
        mean, sd = _monte_carlo_ecd(temperature, half, exp.n_samples, exp.n_repeats, rng)
        records.append(
            {
                "row": "monte carlo",
                "column": "ecd",
                "x": temperature,
                "value": mean,
                "ci_low": mean - sd,
                "ci_high": mean + sd,
            }
        )
    return records


def render_temperature_sweep(exp: TemperatureSweep, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Expected ECD against T (log axis): over-confident below 1, under-confident above, minimum marked."""
    curve = values[values.row == "population"].sort_values("x")
    points = values[values.row == "monte carlo"]
    low = curve.loc[curve.value.idxmin()]
    with figure_style():
        fig, ax = subplots(figsize=(4.8, 3.2), layout="constrained")
        ax.plot(curve.x, curve.value, color="tab:blue", label="population (quadrature)")
        ax.errorbar(
            points.x,
            points.value,
            yerr=points.ci_high - points.value,
            fmt="o",
            color="black",
            markersize=3,
            label=f"Monte Carlo, mean ± sd ({exp.n_repeats} × N = {exp.n_samples})",
        )
        ax.axhline(0.0, color="grey", linewidth=0.8)
        ax.axvline(1.0, color="grey", linewidth=0.8, linestyle=":")
        ax.plot(low.x, low.value, "v", color="tab:red", label=f"minimum {low.value:.3f} at T = {low.x:.2f}")
        ax.set_xscale("log")
        ax.set_xlabel("temperature T (predictions sigma(t / T))")
        ax.set_ylabel("expected ECD")
        ax.text(0.03, 0.95, "over-confident", transform=ax.transAxes, va="top", fontsize=7)
        ax.text(0.97, 0.95, "under-confident", transform=ax.transAxes, va="top", ha="right", fontsize=7)
        ax.legend(fontsize=7, loc="center right")
        ax.set_title(exp.title, fontsize=8)
        return save_figure(fig, stem)


KINDS = (
    Kind("ecd_single_datum", SingleDatum, single_datum, render_single_datum),
    Kind(
        "ecd_simulation_table",
        SimulationTable,
        simulation_table,
        render_simulation_table,
        is_table=True,
    ),
    Kind(
        "ecd_simulation_figures",
        SimulationFigures,
        simulation_figures,
        render_simulation_figures,
    ),
    Kind("ecd_table2_check", Table2Check, table2_check, render_values_table, is_table=True),
    Kind("ecd_real_table", RealBins, real_bin_table, render_real_bin_table, is_table=True),
    Kind("ecd_real_diagrams", RealBins, real_bin_diagrams, render_real_bin_diagrams),
    Kind(
        "ecd_temperature_sweep",
        TemperatureSweep,
        temperature_sweep,
        render_temperature_sweep,
    ),
    # One point of the declared sweep configs/sweep/ecd_temperature.yaml (drawn by the sweep's aggregate).
    Kind("ecd_temperature", TemperaturePoint, temperature_point),
)
