"""Beyond the papers: the CORP approach of Dimitriadis et al. (2021) applied to the papers' binary systems.

Artifacts (none has a published counterpart: the PNAS paper uses other data): per binary real set or
zoo model, the CORP reliability diagrams of its raw and DP-recalibrated (cross-validated) posteriors
with their consistency bands and Brier decompositions, beside their Murphy diagram; one table of the
Brier and log score decompositions S = MCB - DSC + UNC with the MCB test's p-values for every
system; and one table setting each system's rank by binned ECE beside its ranks by MCB and DSC.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from calib.calibration_errors.binned import BinnedCalibrationError
from calib.calibration_errors.corp import corp_curve, corp_decomposition, corp_report, decompose, mcb_test
from calib.calibration_errors.corp_bands import corp_bands
from calib.plots.corp import band_label, corp_diagram, murphy_lines
from calib.plots.style import figure_style, save_figure, subplots
from calib.scoring.murphy import MurphyDiagram, murphy_diagram
from pipeline.io import write_table
from pipeline.kinds import Kind, Parameters
from pipeline.named_metrics import MetricOptions, calibrated_posteriors
from pipeline.parameters import Count, Fraction, Seed
from pipeline.sources import DataSources, RealSystem, system_set

VARIANTS = ("raw", "DP-xv")
TERMS = ("score", "mcb", "dsc", "unc", "p_value")
SCORE_LABELS = {"brier": "BS", "log": "LS"}


@dataclass(frozen=True, kw_only=True)
class CorpDiagrams(Parameters):
    """One binary system's CORP diagrams: consistency bands at ``level`` from ``n_resamples`` resamples."""

    system: RealSystem
    options: MetricOptions
    level: Fraction
    n_resamples: Count
    seed: Seed


@dataclass(frozen=True, kw_only=True)
class CorpDecompositions(Parameters):
    """Every system's Brier and log score decompositions, with the MCB test from ``n_resamples`` resamples."""

    systems: list[RealSystem]
    options: MetricOptions
    n_resamples: Count
    seed: Seed


@dataclass(frozen=True, kw_only=True)
class CorpRankings(Parameters):
    """Every system ranked by binned ECE (``n_bins`` equal-width bins), MCB and DSC."""

    systems: list[RealSystem]
    options: MetricOptions
    n_bins: Count


def _variants(
    system: RealSystem, options: MetricOptions, data: DataSources
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """P(class 1) of a binary system, raw and recalibrated by DP under cross-validation, and its labels."""
    pset = system_set(system, data)
    logp, labels = pset.logprobs(), pset.labels
    if logp.shape[1] != 2:
        raise ValueError(f"{system.label}: CORP needs a binary system; {system.set} has {logp.shape[1]} classes")
    calibrated = calibrated_posteriors("D", "xv", logp, labels, options)
    return {"raw": np.exp(logp[:, 1]), "DP-xv": np.exp(calibrated[:, 1])}, labels


# One system: CORP diagrams and Murphy diagram ------------------------------------------------------------


def corp_diagrams(exp: CorpDiagrams, data: DataSources) -> list[dict]:
    """Per variant: the CORP curve at its distinct scores, the consistency band, the Brier decomposition
    and the Murphy diagram (raw and recalibrated mean elementary scores)."""
    forecasts, labels = _variants(exp.system, exp.options, data)
    records = []
    for variant, x in forecasts.items():
        curve = corp_curve(x, labels)
        bands = corp_bands(curve, level=exp.level, n_resamples=exp.n_resamples, seed=exp.seed)
        records += [
            {"row": variant, "column": "curve", "x": p, "value": v}
            for p, v in zip(curve.points, curve.recalibrated, strict=True)
        ]
        records += [
            {"row": variant, "column": "count", "x": p, "value": c}
            for p, c in zip(curve.points, curve.counts, strict=True)
        ]
        for side, values in zip(("band low", "band high"), bands.consistency, strict=True):
            records += [
                {"row": variant, "column": side, "x": p, "value": v} for p, v in zip(bands.points, values, strict=True)
            ]
        records.append({"row": variant, "column": "band method", "value": bands.method})
        d, test = decompose(curve), mcb_test(curve, n_resamples=exp.n_resamples, seed=exp.seed)
        terms = {"score": d.score, "mcb": d.mcb, "dsc": d.dsc, "unc": d.unc, "p_value": test.p_value}
        records += [{"row": variant, "column": f"BS {t}", "value": v} for t, v in terms.items()]
    murphy = murphy_diagram(forecasts, labels)
    for variant in forecasts:
        for kind, values in (
            ("murphy raw", murphy.raw[variant]),
            ("murphy recalibrated", murphy.recalibrated[variant]),
        ):
            records += [
                {"row": variant, "column": kind, "x": t, "value": v}
                for t, v in zip(murphy.thresholds, values, strict=True)
            ]
    return records


def _series(values: pd.DataFrame, variant: str, column: str) -> pd.Series:
    rows = values[(values.row == variant) & (values.column == column)]
    return pd.Series(rows.value.astype(float).to_numpy(), index=rows.x.astype(float).to_numpy())


def _value(values: pd.DataFrame, variant: str, column: str):
    return values[(values.row == variant) & (values.column == column)].value.iloc[0]


def render_corp_diagrams(exp: CorpDiagrams, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Three panels: the CORP diagram of the raw and of the DP-xv posteriors, then their Murphy diagram."""
    with figure_style():
        fig, axes = subplots(1, 3, figsize=(11.5, 3.9), layout="constrained")
        murphy = MurphyDiagram(_series(values, "raw", "murphy raw").index.to_numpy(), {}, {})
        for ax, variant in zip(axes[:2], VARIANTS, strict=True):
            curve = _series(values, variant, "curve")
            low, high = _series(values, variant, "band low"), _series(values, variant, "band high")
            terms = {"BS": float(_value(values, variant, "BS score"))}
            terms |= {t.upper(): float(_value(values, variant, f"BS {t}")) for t in ("mcb", "dsc", "unc")}
            corp_diagram(
                ax, curve.index, curve.to_numpy(), _series(values, variant, "count").to_numpy(), terms,
                band=(low.index, low.to_numpy(), high.to_numpy()),
                band_label=band_label(exp.level, _value(values, variant, "band method")),
            )  # fmt: skip
            ax.set_title(f"{variant}: MCB test p = {float(_value(values, variant, 'BS p_value')):.3f}", fontsize=9)
            ax.set_xlabel("P(class 1)")
            murphy.raw[variant] = _series(values, variant, "murphy raw").to_numpy()
            murphy.recalibrated[variant] = _series(values, variant, "murphy recalibrated").to_numpy()
        axes[0].legend(loc="upper left", bbox_to_anchor=(0.0, 0.64), fontsize=6, frameon=False)
        murphy_lines(axes[2], murphy)
        axes[2].set_title("Murphy diagram (dashed: CORP recalibrated)", fontsize=9)
        axes[2].legend(fontsize=6)
        fig.suptitle(exp.title, fontsize=10)
        return save_figure(fig, stem)


# All systems: decompositions and rankings -----------------------------------------------------------------


def decompositions(exp: CorpDecompositions, data: DataSources) -> list[dict]:
    """Per system and variant: the Brier and log score decompositions with the MCB test's p-values."""
    records = []
    for system in exp.systems:
        forecasts, labels = _variants(system, exp.options, data)
        for variant, x in forecasts.items():
            report = corp_report(x, labels, n_resamples=exp.n_resamples, seed=exp.seed)
            row = f"{system.label} | {variant}"
            for score, r in report.items():
                records += [{"row": row, "column": f"{SCORE_LABELS[score]} {t}", "value": getattr(r, t)} for t in TERMS]
    return records


def render_decompositions(exp: CorpDecompositions, values: pd.DataFrame, stem: Path) -> list[Path]:
    """One row per system and variant: BS and LS with MCB, DSC, UNC and the MCB test's p-value."""
    wide = values.pivot(index="row", columns="column", values="value").reindex(values.row.unique())
    columns = [f"{SCORE_LABELS[s]} {t}" for s in SCORE_LABELS for t in TERMS]
    headers = [c.replace(" score", "").replace(" p_value", " p").replace("mcb", "MCB").replace("dsc", "DSC")
               .replace("unc", "UNC") for c in columns]  # fmt: skip
    rows = [[*row.split(" | "), *(_shown(wide.loc[row, c], c) for c in columns)] for row in wide.index]
    return write_table(stem, pd.DataFrame(rows, columns=["system", "posteriors", *headers]), exp.title)


def _shown(value, column: str) -> str:
    return f"{float(value):.3f}" if column.endswith("p_value") else f"{float(value):.4f}"


def rankings(exp: CorpRankings, data: DataSources) -> list[dict]:
    """Per system and variant: binned ECE (positive class, ``n_bins`` equal-width bins), MCB and DSC of
    the Brier score, and each one's rank among all (1 = best: least ECE or MCB, most DSC); then
    Kendall's tau between the ECE ranking and each CORP one."""
    ece = BinnedCalibrationError("binary", exp.n_bins)
    rows = {}
    for system in exp.systems:
        forecasts, labels = _variants(system, exp.options, data)
        for variant, x in forecasts.items():
            d = corp_decomposition(x, labels)
            rows[f"{system.label} | {variant}"] = {
                "ECE": ece(np.column_stack([1 - x, x]), labels, kind="probs"),
                "MCB": d.mcb,
                "DSC": d.dsc,
            }
    frame = pd.DataFrame.from_dict(rows, orient="index")
    ranks = {
        "ECE": frame.ECE.rank(method="min"),
        "MCB": frame.MCB.rank(method="min"),
        "DSC": frame.DSC.rank(method="min", ascending=False),
    }
    records = []
    for row in frame.index:
        for metric in ("ECE", "MCB", "DSC"):
            records += [
                {"row": row, "column": metric, "value": frame.loc[row, metric]},
                {"row": row, "column": f"rank {metric}", "value": ranks[metric][row]},
            ]
    for metric in ("MCB", "DSC"):
        tau = kendalltau(ranks["ECE"], ranks[metric]).statistic
        records.append({"row": f"Kendall tau (ECE rank, {metric} rank)", "column": "tau", "value": tau})
    return records


def render_rankings(exp: CorpRankings, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Systems ordered by ECE rank, with their MCB and DSC ranks; Kendall's tau below."""
    systems = values[~values.row.str.startswith("Kendall")]
    wide = systems.pivot(index="row", columns="column", values="value").sort_values("rank ECE")
    lines = [
        [
            *row.split(" | "),
            f"{r.ECE:.4f}",
            f"{r['rank ECE']:.0f}",
            f"{r.MCB:.4f}",
            f"{r['rank MCB']:.0f}",
            f"{r.DSC:.4f}",
            f"{r['rank DSC']:.0f}",
        ]
        for row, r in wide.iterrows()
    ]
    for _, r in values[values.row.str.startswith("Kendall")].iterrows():
        lines.append([r.row, "", f"{float(r.value):.3f}", "", "", "", "", ""])
    columns = ["system", "posteriors", f"ECE ({exp.n_bins} bins)", "rank", "MCB (BS)", "rank", "DSC (BS)", "rank"]
    return write_table(stem, pd.DataFrame(lines, columns=columns), exp.title)


KINDS = (
    Kind("corp_diagrams", CorpDiagrams, corp_diagrams, render_corp_diagrams),
    Kind(
        "corp_decompositions",
        CorpDecompositions,
        decompositions,
        render_decompositions,
        is_table=True,
        own_job=True,
    ),
    Kind("corp_rankings", CorpRankings, rankings, render_rankings, is_table=True),
)
