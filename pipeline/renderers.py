"""Step bodies that draw a figure or lay out a table from an experiment's tidy values.

One function per experiment ``kind``; each returns the paths it wrote. Percentages appear here
only (RCL and ECE are stored as fractions).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from omegaconf import DictConfig

from calib.plots.bars import grouped_bars
from calib.plots.curves import line_curves, mark_point
from calib.plots.style import figure_style, save_figure
from pipeline.io import write_table

PERCENT_PREFIXES = ("RCL", "ECE")


def _cell(values: pd.DataFrame, row: str, column: str, field: str = "value") -> float:
    return float(values.loc[(values.row == row) & (values.column == column), field].iloc[0])


def _curve(values: pd.DataFrame, row: str, column: str) -> tuple[np.ndarray, np.ndarray]:
    sel = values[(values.row == row) & (values.column == column)]
    return sel.x.to_numpy(), sel.value.to_numpy()


def _as_shown(metric: str, value: float) -> float:
    return 100.0 * value if metric.startswith(PERCENT_PREFIXES) else value


def psr_curves(exp: DictConfig, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Fig. 1: three panels (Bayes cost, log loss, Brier loss) with one curve per true class."""
    c = exp.costs
    panels = [
        ("cost", f"Cost for $c_{{12}}={c[0][1]:g}$, $c_{{21}}={c[1][0]:g}$"),
        ("log", "Log loss"),
        ("brier", "Brier loss (eq. 9)"),
    ]
    with figure_style():
        fig, axes = plt.subplots(1, 3, figsize=(8.5, 2.5), layout="constrained")
        for ax, (column, ylabel) in zip(axes, panels, strict=True):
            curves = {f"$h=H_{h}$": _curve(values, f"H{h}", column)[1] for h in (1, 2)}
            line_curves(ax, _curve(values, "H1", column)[0], curves, xlabel="$q_2$", ylabel=ylabel, legend=False)
        fig.legend(*axes[0].get_legend_handles_labels(), loc="outside right center")
        return save_figure(fig, stem)


def bayes_risk_curves(exp: DictConfig, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Fig. 4: weighted Bayes-risk curves; left weight 1 (area CE), right a(1-a)/B(2,2); NCE / NBS in legends."""
    panels = [("risk_ce", "NCE", r"Risk$_a$"), ("risk_bs", "NBS", r"Risk$_a \cdot a_1(1-a_1)/B(2,2)$")]
    with figure_style():
        fig, axes = plt.subplots(1, 2, figsize=(8, 3), layout="constrained")
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


def metric_panels(exp: DictConfig, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Figs. 5-6: left, normalized overall metrics (dotted line: naive system); right, calibration metrics (%)."""
    with figure_style():
        fig, axes = plt.subplots(1, 2, figsize=(10, 2.8), layout="constrained")
        for ax, metrics, line, ylim in ((axes[0], exp.overall, 1.0, (0, 3)), (axes[1], exp.calibration, None, None)):
            bars = {s: [_as_shown(m, _cell(values, s, m)) for m in metrics] for s in exp.systems}
            grouped_bars(ax, bars, list(metrics), reference_line=line, ylim=ylim)
        axes[1].axhline(0, color="black", linewidth=0.5)
        fig.suptitle(exp.title)
        return save_figure(fig, stem)


def bootstrap_panels(exp: DictConfig, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Fig. 8: the same bars with percentile-interval error bars."""
    with figure_style():
        fig, axes = plt.subplots(1, 2, figsize=(8, 2.8), layout="constrained", width_ratios=[1, 3])
        for ax, metrics in ((axes[0], exp.overall), (axes[1], exp.calibration)):
            bars, errors = {}, {}
            for s in exp.systems:
                bars[s] = [_as_shown(m, _cell(values, s, m)) for m in metrics]
                errors[s] = [[_as_shown(m, _cell(values, s, m, f)) for m in metrics] for f in ("ci_low", "ci_high")]
            grouped_bars(ax, bars, list(metrics), errors=errors)
        fig.suptitle(f"{exp.title} ({exp.n_boot} resamples)")
        return save_figure(fig, stem)


def divergence_curves(exp: DictConfig, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Fig. 7: one panel per divergence; the star marks q01 = mean of s_1 (a score divergence's minimum)."""
    mean = _cell(values, "mean", "q01")
    with figure_style():
        fig, axes = plt.subplots(1, len(exp.divergences), figsize=(12, 2.8), layout="constrained")
        for ax, label in zip(axes, exp.divergences, strict=True):
            x, y = _curve(values, label, "expected_divergence")
            line_curves(ax, x, {label: y}, xlabel="$q_{01}$", legend=False)
            mark_point(ax, mean, float(np.interp(mean, x, y)), color="tab:orange")
            ax.set_title(label)
        return save_figure(fig, stem)


def semi_empirical_table(exp: DictConfig, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Table 1: rows = reference posteriors, columns = system x N, cells in rounded percent."""
    table = values.pivot(index="row", columns="column", values="value").loc[list(exp.references)]
    columns = [c for s in exp.systems for c in table.columns if c.startswith(f"{s} N=")]
    columns.sort(key=lambda c: (list(exp.systems).index(c.split()[0]), int(c.split("=")[1])))
    shown = (100 * table[columns]).round().astype(int).reset_index().rename(columns={"row": "reference"})
    return write_table(stem, shown, exp.title)


RENDERERS = {
    "psr_curves": psr_curves,
    "bayes_risk_curves": bayes_risk_curves,
    "metric_panels": metric_panels,
    "semi_empirical_table": semi_empirical_table,
    "divergence_curves": divergence_curves,
    "bootstrap_panels": bootstrap_panels,
    "real_metrics_table": "pipeline.real_tables:render_real_metrics_table",
    "real_set_summary": "pipeline.real_tables:render_real_set_summary",
    "heldout_table": "pipeline.heldout_tables:render_heldout_table",
    "hallenbeck_table": "pipeline.survey_toys:render_values_table",
    "hallenbeck_diagrams": "pipeline.survey_toys:render_hallenbeck_diagrams",
    "marker_pitfall": "pipeline.survey_toys:render_marker_pitfall",
    "toy_data_table": "pipeline.survey_toys:render_values_table",
    "toy_bins_table": "pipeline.survey_toys:render_values_table",
    "toy_summary_table": "pipeline.survey_toys:render_values_table",
    "toy_diagrams": "pipeline.survey_toys:render_toy_diagrams",
    "decomposition_table": "pipeline.survey_toys:render_values_table",
    "hosmer_lemeshow_table": "pipeline.survey_toys:render_values_table",
    "resampling_null": "pipeline.survey_toys:render_resampling_null",
    "survey_densities": "pipeline.survey_synthetic:render_survey_densities",
    "binary_calibration": "pipeline.survey_synthetic:render_binary_calibration",
    "multiclass_calibration": "pipeline.survey_synthetic:render_multiclass_calibration",
    "recalibration_table": "pipeline.reassessing:render_recalibration_table",
    "mrr_closed_form_check": "pipeline.survey_toys:render_values_table",
    "sharpness_diagrams": "pipeline.reassessing:render_sharpness_diagrams",
    "reliability_comparison": "pipeline.reassessing:render_reliability_comparison",
    "smooth_ece_diagrams": "pipeline.reassessing:render_smooth_ece_diagrams",
    "calibration_notions": "pipeline.vaicenavicius:render_calibration_notions",
    "notion_simplex": "pipeline.vaicenavicius:render_notion_simplex",
    "gmm_eta": "pipeline.survey_toys:render_values_table",
    "gmm_bias": "pipeline.vaicenavicius:render_gmm_bias",
    "deviation_diagrams": "pipeline.vaicenavicius:render_deviation_diagrams",
    "miscalibration_table": "pipeline.vaicenavicius:render_miscalibration_table",
    "group_simplex_diagrams": "pipeline.vaicenavicius:render_group_simplex_diagrams",
    "training_pvalues": "pipeline.vaicenavicius:render_training_pvalues",
    "ecd_single_datum": "pipeline.entropic_tables:render_single_datum",
    "ecd_simulation_table": "pipeline.entropic_tables:render_simulation_table",
    "ecd_simulation_figures": "pipeline.entropic_tables:render_simulation_figures",
    "ecd_table2_check": "pipeline.survey_toys:render_values_table",
    "ecd_real_table": "pipeline.entropic_tables:render_real_bin_table",
    "ecd_real_diagrams": "pipeline.entropic_tables:render_real_bin_diagrams",
    "ecd_temperature_sweep": "pipeline.entropic_tables:render_temperature_sweep",
}

TABLE_KINDS = {
    "semi_empirical_table",
    "real_metrics_table",
    "real_set_summary",
    "heldout_table",
    "hallenbeck_table",
    "toy_data_table",
    "toy_bins_table",
    "toy_summary_table",
    "decomposition_table",
    "hosmer_lemeshow_table",
    "recalibration_table",
    "mrr_closed_form_check",
    "calibration_notions",
    "gmm_eta",
    "miscalibration_table",
    "ecd_simulation_table",
    "ecd_table2_check",
    "ecd_real_table",
}
