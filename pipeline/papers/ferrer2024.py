"""The experiment kinds of Ferrer & Ramos (2024), "Evaluating posterior probabilities".

Synthetic Gaussian systems (Figs. 1, 4-8, Table 1), the tables on published real posterior sets
(Tables 2-3), and held-out calibration under dataset shift, which the paper recommends (Sec. 2.5.3,
4) but no published table shows: calibrators fitted on a system's calibration split, applied to each
test set beside the same calibrator cross-validated on it (xv).

Values are fractions; percentages (RCL, ECE) appear only when rendering. Real-set entries
(configs/real_systems/) list ``{label, set, one_vs_other?}``; sets the registry marks unavailable
(SITW: scores missing upstream) are listed, never computed.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
import pandas as pd

from calib.calibrators import calibrate
from calib.calibrators.protocols import held_out
from calib.data.registry import REAL_SETS
from calib.plots.bars import grouped_bars
from calib.plots.curves import line_curves, mark_point
from calib.plots.style import figure_style, save_figure, subplots
from calib.resampling.bootstrap import bootstrap
from calib.scoring.calibration_losses import calibration_loss_from_posteriors
from calib.scoring.decisions import bayes_decisions, check_costs
from calib.scoring.divergences import DIVERGENCES, expected_divergence_to_constant
from calib.scoring.risk_curves import bayes_risk_curve
from calib.scoring.scores import brier, brier_losses, cross_entropy, semi_empirical_cross_entropy
from calib.validation import CalibInputError, Choice
from pipeline.companions import UPSTREAM
from pipeline.config_blocks import Grid
from pipeline.io import write_table
from pipeline.kinds import Kind, Parameters
from pipeline.named_metrics import (
    CALIBRATOR_LETTERS,
    MetricName,
    MetricOptions,
    calibrated_posteriors,
    calibrator_for,
    compute,
)
from pipeline.parameters import Count, Fraction, Seed
from pipeline.root import root_of
from pipeline.sources import DataSources, RealSet, RealSystem, SyntheticDataset, SyntheticSystem, system_set

PERCENT_PREFIXES = ("RCL", "ECE")
PROTOCOLS = ("held-out", "xv")


# Synthetic systems: evaluators ------------------------------------------------------------------------------------


# Table 1's names of the calibrated reference posteriors -> calibrator letters.
REFERENCE_CALIBRATORS = {"affcal": "D", "temcal": "T", "hiscal": "H"}
# Table 1's reference posteriors: the true ones, or a calibrator's, trained on test (tt) or cross-validated (xv).
REFERENCES = ("true", *(f"{name}{protocol}" for name in REFERENCE_CALIBRATORS for protocol in ("tt", "xv")))
Letter = Annotated[str, Choice(tuple(CALIBRATOR_LETTERS))]


@dataclass(frozen=True, kw_only=True)
class PsrCurves(Parameters):
    """Fig. 1: per-sample losses over a ``grid`` of q2, with the Bayes decisions of the 2 x 2 ``costs``."""

    grid: Grid
    costs: list[list[float]]
    datasets: list[SyntheticDataset] = ()


@dataclass(frozen=True, kw_only=True)
class Curve:
    """One line of Fig. 4: ``system`` of ``dataset``, drawn as ``label`` in ``color`` and ``linestyle``."""

    label: str
    dataset: SyntheticDataset
    system: SyntheticSystem
    color: str
    linestyle: str


@dataclass(frozen=True, kw_only=True)
class BayesRiskCurves(Parameters):
    """Fig. 4: the weighted Bayes risk over a ``grid`` of thresholds, one line per curve."""

    curves: list[Curve]
    datasets: list[SyntheticDataset]
    grid: Grid


@dataclass(frozen=True, kw_only=True)
class _SyntheticMetrics(Parameters):
    datasets: list[SyntheticDataset]
    systems: list[SyntheticSystem]
    options: MetricOptions


@dataclass(frozen=True, kw_only=True)
class MetricPanels(_SyntheticMetrics):
    """Figs. 5-6: the ``overall`` and ``calibration`` metrics of each system; ``folds: authors`` uses the
    authors' replayed cross-validation folds; ``upstream_rerun`` adds the authors' computation."""

    overall: list[MetricName]
    calibration: list[MetricName]
    folds: Literal["authors", "seeded"] = "seeded"
    upstream_rerun: bool = False


@dataclass(frozen=True, kw_only=True)
class SemiEmpiricalTable(_SyntheticMetrics):
    """Table 1: the semi-empirical cross-entropy's relative difference with each of ``references``."""

    references: list[Literal[REFERENCES]]
    folds: Literal["authors", "seeded"] = "seeded"


@dataclass(frozen=True, kw_only=True)
class DivergenceCurves(Parameters):
    """Fig. 7: the expected divergence of ``system`` to a constant over a ``grid``, per divergence (label -> name)."""

    datasets: list[SyntheticDataset]
    system: SyntheticSystem
    divergences: dict[str, Annotated[str, Choice(DIVERGENCES)]]
    grid: Grid


@dataclass(frozen=True, kw_only=True)
class BootstrapPanels(_SyntheticMetrics):
    """Fig. 8: percentile bootstrap intervals at level 1 - ``alpha`` from ``n_boot`` resamples."""

    overall: list[MetricName]
    calibration: list[MetricName]
    n_boot: Count
    alpha: Fraction
    seed: Seed


@dataclass(frozen=True, kw_only=True)
class RealBootstrapPanels(Parameters):
    """Fig. 8's intervals on a real ``system``: ``overall`` and ``calibration`` metrics with percentile
    intervals at level 1 - ``alpha`` from ``n_boot`` resamples (calibrators refitted per resample)."""

    system: RealSystem
    options: MetricOptions
    overall: list[MetricName]
    calibration: list[MetricName]
    n_boot: Count
    alpha: Fraction
    seed: Seed


@dataclass(frozen=True, kw_only=True)
class Posteriors:
    """A row of Table 2: the posteriors of ``calibrator`` (a letter) under ``protocol``; ``binary_only`` rows
    are left out for sets of more classes."""

    calibrator: Letter
    protocol: Literal["tt", "xv"]
    binary_only: bool = False


@dataclass(frozen=True, kw_only=True)
class RealMetricsTable(Parameters):
    """Table 2: ``metrics`` (``binary_only_metrics`` for binary sets only) of each system's raw posteriors
    (``posteriors`` row -> null) and calibrated ones; ``upstream_rerun`` adds the authors' computation."""

    systems: list[RealSystem]
    options: MetricOptions
    posteriors: dict[str, Posteriors | None]
    metrics: list[MetricName]
    binary_only_metrics: list[MetricName] = ()
    upstream_rerun: bool = False


@dataclass(frozen=True, kw_only=True)
class RealSetSummary(Parameters):
    """Table 3: classes, samples and priors of each system's set."""

    systems: list[RealSystem]


@dataclass(frozen=True, kw_only=True)
class NamedSet:
    """A posterior set under a ``label``."""

    set: RealSet
    label: str = ""


@dataclass(frozen=True, kw_only=True)
class HeldoutSystem:
    """A classifier with a ``calibration`` set to train calibrators on and the ``tests`` sets to apply them to."""

    label: str
    calibration: NamedSet
    tests: list[NamedSet]


@dataclass(frozen=True, kw_only=True)
class HeldoutTable(Parameters):
    """NCE and RCL of each of ``calibrators`` (letter -> name shown), held-out against cross-validated."""

    systems: list[HeldoutSystem]
    calibrators: dict[Letter, str]
    options: MetricOptions


def _grid(spec: Grid) -> np.ndarray:
    if spec.step is not None:
        return np.arange(spec.start, spec.stop, spec.step)
    return np.linspace(spec.start, spec.stop, spec.num)


def _authors_folds(exp: MetricPanels | SemiEmpiricalTable, extras: dict, system: str) -> dict | None:
    """The replayed folds of ``system`` when the experiment asks for them (``folds: authors``)."""
    if exp.folds != "authors":
        return None
    folds = {key.rsplit("/", 1)[1]: ids for key, ids in extras.items() if key.startswith(f"folds/{system}/")}
    if not folds:
        raise ValueError(
            f"experiment {exp.paper}_{exp.artifact} asks for the authors' folds, but the dataset has "
            "none: set `rng: paper` in its dataset config or `folds: seeded` in the experiment"
        )
    return folds


def psr_curves(exp: PsrCurves, data: DataSources) -> list[dict]:
    """Fig. 1: per-sample losses vs q2 for h = H1, H2: Bayes cost (eq. 2), log loss (eq. 8), Brier (eq. 9)."""
    q2 = _grid(exp.grid)
    logp = np.log(np.column_stack([1.0 - q2, q2]))
    costs = check_costs(np.asarray(exp.costs), 2)
    decisions = bayes_decisions(logp, costs, kind="logprobs")
    records = []
    for h in (0, 1):
        labels = np.full(q2.size, h)
        losses = {"cost": costs[h, decisions], "log": -logp[:, h], "brier": brier_losses(logp, labels, "mean")}
        records += [
            {"row": f"H{h + 1}", "column": name, "x": x, "value": v}
            for name, vals in losses.items()
            for x, v in zip(q2, vals, strict=True)
        ]
    return records


def bayes_risk_curves(exp: BayesRiskCurves, data: DataSources) -> list[dict]:
    """Fig. 4: W(a) Risk(a) for both weights, and NCE / NBS of each curve's system (the legend)."""
    grid = _grid(exp.grid)
    records = []
    for curve in exp.curves:
        labels, systems, _ = data.dataset(curve.dataset)
        logp = systems[curve.system]
        for weight, column in (("uniform", "risk_ce"), ("beta22", "risk_bs")):
            values = bayes_risk_curve(logp, labels, grid, kind="logprobs", weight=weight)
            records += [
                {"row": curve.label, "column": column, "x": x, "value": v} for x, v in zip(grid, values, strict=True)
            ]
        records.append(
            {"row": curve.label, "column": "NCE", "value": cross_entropy(logp, labels, kind="logprobs", normalize=True)}
        )
        records.append(
            {
                "row": curve.label,
                "column": "NBS",
                "value": brier(logp, labels, kind="logprobs", scaling="mean", normalize=True),
            }
        )
    return records


def metric_panels(exp: MetricPanels, data: DataSources) -> list[dict]:
    """Figs. 5-6: each named metric of each system (see :mod:`pipeline.named_metrics`).

    With ``upstream_rerun: true`` the calibration metrics are computed again the way the authors'
    code computes them (:mod:`pipeline.authors_code`, same folds), as their ``[upstream]`` companions.
    """
    labels, systems, extras = data.dataset(exp.datasets[0])
    options = exp.options
    reruns = [(f" {UPSTREAM}", replace(options, implementation="authors"))] if exp.upstream_rerun else []
    records = []
    for system in exp.systems:
        folds = _authors_folds(exp, extras, system)
        for suffix, opts, names in [("", options, [*exp.overall, *exp.calibration])] + [
            (suffix, opts, list(exp.calibration)) for suffix, opts in reruns
        ]:
            cache: dict = {}
            for name in names:
                value = compute(name, systems[system], labels, opts, folds=folds, cache=cache)
                records.append({"row": system, "column": f"{name}{suffix}", "value": value})
    return records


def semi_empirical_table(exp: SemiEmpiricalTable, data: DataSources) -> list[dict]:
    """Table 1: (NCE_emp - NCE_semi-emp) / NCE_emp with each reference posterior (Sec. 3.4)."""
    options = exp.options
    records = []
    for dataset in exp.datasets:
        labels, systems, extras = data.dataset(dataset)
        nominal_n = root_of([f"dataset={dataset}"]).dataset.n_samples  # paper mode may drop a sample
        for system in exp.systems:
            logp = systems[system]
            folds = _authors_folds(exp, extras, system)
            empirical = cross_entropy(logp, labels, kind="logprobs", normalize=True)
            for ref in exp.references:
                if ref == "true":
                    reference = systems["cal"]
                else:
                    letter, protocol = REFERENCE_CALIBRATORS[ref[:-2]], ref[-2:]
                    reference = calibrated_posteriors(letter, protocol, logp, labels, options, folds=folds)
                semi = semi_empirical_cross_entropy(
                    logp, reference, kind="logprobs", reference_kind="logprobs", normalize=True
                )
                records.append(
                    {"row": ref, "column": f"{system} N={nominal_n}", "value": (empirical - semi) / empirical}
                )
    return records


def divergence_curves(exp: DivergenceCurves, data: DataSources) -> list[dict]:
    """Fig. 7: E[d(s, q0)] over q0 for each divergence, and the mean of s_1 (where a score divergence is lowest)."""
    labels, systems, _ = data.dataset(exp.datasets[0])
    s = systems[exp.system]
    grid = _grid(exp.grid)
    records = [{"row": "mean", "column": "q01", "value": float(np.exp(s[:, 0]).mean())}]
    for label, divergence in exp.divergences.items():
        values = expected_divergence_to_constant(s, grid, kind="logprobs", divergence=divergence)
        records += [
            {"row": label, "column": "expected_divergence", "x": x, "value": v}
            for x, v in zip(grid, values, strict=True)
        ]
    return records


def bootstrap_panels(exp: BootstrapPanels, data: DataSources) -> list[dict]:
    """Fig. 8: percentile bootstrap CIs; calibrators refitted per resample, xv folds grouped by sample id."""
    labels, systems, _ = data.dataset(exp.datasets[0])
    return [record for system in exp.systems for record in _bootstrapped(exp, system, systems[system], labels)]


def real_bootstrap_panels(exp: RealBootstrapPanels, data: DataSources) -> list[dict]:
    """Fig. 8's bootstrap on a real system's posteriors."""
    pset = system_set(exp.system, data)
    return _bootstrapped(exp, exp.system.label, pset.logprobs(), pset.labels)


def _bootstrapped(exp: BootstrapPanels | RealBootstrapPanels, row: str, logp: np.ndarray, labels: np.ndarray):
    """The value and percentile interval of each of ``exp``'s metrics on ``logp``, as value records of ``row``."""
    options = exp.options
    names = [*exp.overall, *exp.calibration]

    def statistic(logp, y, groups):
        cache: dict = {}
        return [compute(name, logp, y, options, groups=groups, cache=cache) for name in names]

    print(f"evaluate: bootstrap of {row} ({exp.n_boot} resamples)", flush=True)
    result = bootstrap(statistic, logp, labels, n_boot=exp.n_boot, seed=exp.seed, alpha=exp.alpha)
    return [
        {"row": row, "column": name, "value": result.estimate[i], "ci_low": result.low[i], "ci_high": result.high[i]}
        for i, name in enumerate(names)
    ]


# Synthetic systems: renderers -------------------------------------------------------------------------------------


def _cell(values: pd.DataFrame, row: str, column: str, field: str = "value") -> float:
    return float(values.loc[(values.row == row) & (values.column == column), field].iloc[0])


def _curve(values: pd.DataFrame, row: str, column: str) -> tuple[np.ndarray, np.ndarray]:
    sel = values[(values.row == row) & (values.column == column)]
    return sel.x.to_numpy(), sel.value.to_numpy()


def _as_shown(metric: str, value: float) -> float:
    return 100.0 * value if metric.startswith(PERCENT_PREFIXES) else value


def render_psr_curves(exp: PsrCurves, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Fig. 1: three panels (Bayes cost, log loss, Brier loss) with one curve per true class."""
    c = exp.costs
    panels = [
        ("cost", f"Cost for $c_{{12}}={c[0][1]:g}$, $c_{{21}}={c[1][0]:g}$"),
        ("log", "Log loss"),
        ("brier", "Brier loss (eq. 9)"),
    ]
    with figure_style():
        fig, axes = subplots(1, 3, figsize=(8.5, 2.5), layout="constrained")
        for ax, (column, ylabel) in zip(axes, panels, strict=True):
            curves = {f"$h=H_{h}$": _curve(values, f"H{h}", column)[1] for h in (1, 2)}
            line_curves(ax, _curve(values, "H1", column)[0], curves, xlabel="$q_2$", ylabel=ylabel, legend=False)
        fig.legend(*axes[0].get_legend_handles_labels(), loc="outside right center")
        return save_figure(fig, stem)


def render_bayes_risk_curves(exp: BayesRiskCurves, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Fig. 4: weighted Bayes-risk curves; left weight 1 (area CE), right a(1-a)/B(2,2); NCE / NBS in legends."""
    panels = [("risk_ce", "NCE", r"Risk$_a$"), ("risk_bs", "NBS", r"Risk$_a \cdot a_1(1-a_1)/B(2,2)$")]
    with figure_style():
        fig, axes = subplots(1, 2, figsize=(8, 3), layout="constrained")
        for ax, (column, legend_metric, ylabel) in zip(axes, panels, strict=True):
            for curve in exp.curves:
                x, y = _curve(values, curve.label, column)
                ax.plot(
                    x,
                    y,
                    color=curve.color,
                    linestyle=curve.linestyle,
                    label=f"{curve.label}, {legend_metric}={_cell(values, curve.label, legend_metric):.2f}",
                )
            ax.set_xlabel("$a_1$")
            ax.set_ylabel(ylabel)
            ax.set_ylim(0, 0.7)
            ax.legend(loc="upper center")
        return save_figure(fig, stem)


def render_metric_panels(exp: MetricPanels, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Figs. 5-6: left, normalized overall metrics (dotted line: naive system); right, calibration metrics (%)."""
    with figure_style():
        fig, axes = subplots(1, 2, figsize=(10, 2.8), layout="constrained")
        for ax, metrics, line, ylim in ((axes[0], exp.overall, 1.0, (0, 3)), (axes[1], exp.calibration, None, None)):
            bars = {s: [_as_shown(m, _cell(values, s, m)) for m in metrics] for s in exp.systems}
            grouped_bars(ax, bars, list(metrics), reference_line=line, ylim=ylim)
        axes[1].axhline(0, color="black", linewidth=0.5)
        fig.suptitle(exp.title)
        return save_figure(fig, stem)


def render_bootstrap_panels(exp: BootstrapPanels | RealBootstrapPanels, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Fig. 8: the same bars with percentile-interval error bars."""
    rows = exp.systems if isinstance(exp, BootstrapPanels) else [exp.system.label]
    with figure_style():
        fig, axes = subplots(1, 2, figsize=(8, 2.8), layout="constrained", width_ratios=[1, 3])
        for ax, metrics in ((axes[0], exp.overall), (axes[1], exp.calibration)):
            bars, errors = {}, {}
            for s in rows:
                bars[s] = [_as_shown(m, _cell(values, s, m)) for m in metrics]
                errors[s] = [[_as_shown(m, _cell(values, s, m, f)) for m in metrics] for f in ("ci_low", "ci_high")]
            grouped_bars(ax, bars, list(metrics), errors=errors)
        fig.suptitle(textwrap.fill(f"{exp.title} ({exp.n_boot} resamples)", 80))  # a long own-set title wraps
        return save_figure(fig, stem)


def render_divergence_curves(exp: DivergenceCurves, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Fig. 7: one panel per divergence; the star marks q01 = mean of s_1 (a score divergence's minimum)."""
    mean = _cell(values, "mean", "q01")
    with figure_style():
        fig, axes = subplots(1, len(exp.divergences), figsize=(12, 2.8), layout="constrained")
        for ax, label in zip(axes, exp.divergences, strict=True):
            x, y = _curve(values, label, "expected_divergence")
            line_curves(ax, x, {label: y}, xlabel="$q_{01}$", legend=False)
            mark_point(ax, mean, float(np.interp(mean, x, y)), color="tab:orange")
            ax.set_title(label)
        return save_figure(fig, stem)


def render_semi_empirical_table(exp: SemiEmpiricalTable, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Table 1: rows = reference posteriors, columns = system x N, cells in rounded percent."""
    table = values.pivot(index="row", columns="column", values="value").loc[list(exp.references)]
    columns = [c for s in exp.systems for c in table.columns if c.startswith(f"{s} N=")]
    columns.sort(key=lambda c: (list(exp.systems).index(c.split()[0]), int(c.split("=")[1])))
    shown = (100 * table[columns]).round().astype(int).reset_index().rename(columns={"row": "reference"})
    return write_table(stem, shown, exp.title)


# Tables 2-3 on published real posterior sets ----------------------------------------------------------------------


def unavailable_reason(system: RealSystem) -> str | None:
    """Why a system's set cannot be computed (the registry's reason), or None."""
    return REAL_SETS[system.set].unavailable if system.set in REAL_SETS else None


def real_metrics_table(exp: RealMetricsTable, data: DataSources) -> list[dict]:
    """Table 2: each metric of raw and calibrated posteriors (calibrators refitted per row's RCL).

    Every calibrator is cross-validated on the seed-0 folds, the authors' (their histogram-binning folds
    come from NumPy's global stream right after it is seeded with 0, which draws the same folds). With
    ``upstream_rerun: true`` every other cell is computed again the way the authors' code computes
    it (:mod:`pipeline.authors_code`) and written as its ``[upstream]`` companion.
    """
    options = exp.options
    variants = {"": options}
    if exp.upstream_rerun:
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
                if spec is not None and spec.binary_only and not binary:
                    continue
                key = f"{system.label} {row}"
                if spec is None:
                    logp, cache = raw, raw_cache
                else:
                    logp = calibrated_posteriors(spec.calibrator, spec.protocol, raw, labels, opts, cache=raw_cache)
                    cache = {}
                for metric in metrics:
                    value = compute(metric, logp, labels, opts, cache=cache)
                    records.append({"row": key, "column": f"{metric}{suffix}", "value": value})
    return records


def _real_shown(metric: str, value: float) -> str:
    if metric.startswith(PERCENT_PREFIXES):
        return f"{100 * value:.1f}"
    return f"{value:.3f}"


def render_real_metrics_table(exp: RealMetricsTable, values: pd.DataFrame, stem: Path) -> list[Path]:
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
            shown = {m: _real_shown(m, cells[(key, m)]) if (key, m) in cells else "-" for m in exp.metrics}
            lines.append({"system": system.label, "posteriors": row, **shown})
    return write_table(stem, pd.DataFrame(lines), exp.title)


def real_set_summary(exp: RealSetSummary, data: DataSources) -> list[dict]:
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


def render_real_set_summary(exp: RealSetSummary, values: pd.DataFrame, stem: Path) -> list[Path]:
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


# Held-out calibration and dataset shift ----------------------------------------------------------------------------


def _rcl(raw: np.ndarray, calibrated: np.ndarray, labels: np.ndarray) -> float:
    """RCL-CE as a fraction; NaN when the raw CE is infinite (a zero posterior on a true class)."""
    try:
        return calibration_loss_from_posteriors(raw, calibrated, labels, kind="logprobs", metric="ce")
    except CalibInputError:
        return float("nan")


def heldout_table(exp: HeldoutTable, data: DataSources) -> list[dict]:
    """NCE and RCL of each calibrator, held-out vs xv, on every test set of every system."""
    options = exp.options
    records = []
    for system in exp.systems:
        cal_set = data.real(system.calibration.set)
        cal_logp = cal_set.logprobs()
        print(f"evaluate: {system.label}: calibrators trained on {cal_set.name} ({cal_set.n_samples})", flush=True)
        for test in system.tests:
            tset = data.real(test.set)
            raw, labels = tset.logprobs(), tset.labels
            nce = cross_entropy(raw, labels, kind="logprobs", normalize=True)
            records += [
                {"row": f"{system.label} raw", "column": f"{test.label} NCE {p}", "value": nce} for p in PROTOCOLS
            ]
            for letter in exp.calibrators:
                calibrator = calibrator_for(letter, options)
                if calibrator.binary_only and tset.n_classes != 2:
                    continue
                outputs = {
                    "held-out": held_out(calibrator, cal_logp, cal_set.labels, raw, kind="logprobs"),
                    "xv": calibrate(
                        calibrator,
                        raw,
                        labels,
                        kind="logprobs",
                        protocol="xv",
                        n_folds=options.n_folds,
                        seed=options.seed,
                    ),
                }
                row = f"{system.label} {letter}"
                for protocol, logp in outputs.items():
                    value = cross_entropy(logp, labels, kind="logprobs", normalize=True)
                    records.append({"row": row, "column": f"{test.label} NCE {protocol}", "value": value})
                    records.append(
                        {"row": row, "column": f"{test.label} RCL {protocol}", "value": _rcl(raw, logp, labels)}
                    )
    return records


def _heldout_shown(column: str, value: float) -> str:
    if np.isnan(value):
        return "-"
    return f"{100 * value:.1f}" if " RCL " in column else f"{value:.3f}"


def render_heldout_table(exp: HeldoutTable, values: pd.DataFrame, stem: Path) -> list[Path]:
    """One line per system and calibrator; per test set, NCE and RCL (%) held-out and xv."""
    cells = values.set_index(["row", "column"]).value
    lines = []
    for system in exp.systems:
        columns = [f"{t.label} {m} {p}" for t in system.tests for p in PROTOCOLS for m in ("NCE", "RCL")]
        for letter in ["raw", *exp.calibrators]:
            row = f"{system.label} {letter}"
            if (row, columns[0]) not in cells:
                continue
            shown = {c: _heldout_shown(c, cells[(row, c)]) if (row, c) in cells else "-" for c in columns}
            name = "raw" if letter == "raw" else exp.calibrators[letter]
            lines.append({"system": system.label, "calibrator": name, **shown})
    return write_table(stem, pd.DataFrame(lines).fillna("-"), exp.title)


KINDS = (
    Kind("psr_curves", PsrCurves, psr_curves, render_psr_curves),
    Kind("bayes_risk_curves", BayesRiskCurves, bayes_risk_curves, render_bayes_risk_curves),
    Kind("metric_panels", MetricPanels, metric_panels, render_metric_panels),
    Kind("semi_empirical_table", SemiEmpiricalTable, semi_empirical_table, render_semi_empirical_table, is_table=True),
    Kind("divergence_curves", DivergenceCurves, divergence_curves, render_divergence_curves),
    Kind("bootstrap_panels", BootstrapPanels, bootstrap_panels, render_bootstrap_panels, own_job=True),
    Kind("real_bootstrap_panels", RealBootstrapPanels, real_bootstrap_panels, render_bootstrap_panels, own_job=True),
    Kind(
        "real_metrics_table",
        RealMetricsTable,
        real_metrics_table,
        render_real_metrics_table,
        is_table=True,
        own_job=True,
    ),
    Kind("real_set_summary", RealSetSummary, real_set_summary, render_real_set_summary, is_table=True),
    Kind("heldout_table", HeldoutTable, heldout_table, render_heldout_table, is_table=True),
)
