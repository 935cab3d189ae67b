"""What the ``calib`` command prints and writes: the evaluation's text, JSON document, files and figures,
the subgroups' table and figure, and the side-by-side comparison of several systems with paired
bootstrap intervals (:mod:`calib.evaluation.engine`).

pandas and the plotting modules (matplotlib) are imported inside the functions that write tables and figures:
a command that prints JSON loads neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from calib._internal.files import atomic_write
from calib.calibration_errors.binned import ReliabilityBins
from calib.evaluation.evidence import GAIN_INTERVAL
from calib.evaluation.interval_methods import UPPER
from calib.evaluation.lens import POSITIVE_CLASS, lens_ece, lens_of
from calib.evaluation.results import Comparison, Metric, Summary, metric_records

# Resamples of the consistency band in the CORP figure (when the samples are few enough to resample).
CORP_BAND_RESAMPLES = 500
# What `calib evaluate --out DIR` writes into DIR.
REPORT_FILES = ("metrics.json", "metrics.csv", "reliability.png", "reliability.pdf", "corp.png", "corp.pdf")
# ... and with subgroups.
GROUP_FILES = ("groups.csv", "groups.png", "groups.pdf", "segments.png", "segments.pdf")
# A group figure draws at most this many groups (the flagged first, then the largest).
SHOWN_GROUPS = 12
# A class-wise reliability panel draws at most this many classes (those with the largest ECE).
SHOWN_CLASSES = 10
CORP_SCORES = {"brier": "Brier", "log": "log"}
# The level of the reliability figure's per-bin intervals, and how they are made, as the JSON says it.
FREQUENCY_LEVEL = 0.95
FREQUENCY_INTERVAL = (
    "95 % Clopper-Pearson (exact binomial) interval of each bin's frequency (Clopper & Pearson 1934); with sample "
    "weights, of k = frequency * n_eff positives of the bin's Kish effective size n_eff = (sum w)^2 / sum w^2"
)


@dataclass(frozen=True)
class Panel:
    """One panel of the reliability figure: the summary metric it shows (its name and value are the
    panel's title), what is binned, and the bins (one set, or one per class for a class-wise panel)."""

    metric: str
    axis: str
    bins: tuple[ReliabilityBins, ...]
    classes: tuple[str, ...] = ()


def reliability_panels(summary: Summary, class_names=None) -> list[Panel]:
    """The panels of the reliability figure, from the evaluation's bins: the ECE of the CORP lens
    (:mod:`calib.evaluation.lens`: for two classes the positive class's probability, metric "ECE positive
    class"; for more the top label's confidence, "ECE top-label"), and for more than two classes each class
    one-vs-rest ("ECE class-wise", the mean of the K classes' ECEs)."""
    k = summary.n_classes
    names = tuple(class_names) if class_names else tuple(str(j) for j in range(k))
    bins = summary.reliability
    lens = lens_ece(k).name
    axis = f"P(class {names[1]})" if lens_of(k) == POSITIVE_CLASS else "confidence (top label)"
    panels = [Panel(lens, axis, tuple(bins[lens]))]
    if "ECE class-wise" in bins:
        panels.append(Panel("ECE class-wise", "P(class), each class one-vs-rest", tuple(bins["ECE class-wise"]), names))
    return panels


def evaluation_document(file: str, summary: Summary, class_names=None) -> dict:
    """The evaluation as one JSON-ready dict: sizes, classes (in class order; for two, the positive class
    too), settings, metrics with intervals, calibrator evidence, advice, the CORP decompositions, the
    reliability bins behind the figure, notes (how the file's columns and labels were read where it
    was not by name, what was left out, what was used beyond memory) and, with subgroups, the groups."""
    settings = summary.settings
    document = {
        "file": file,
        "n_samples": summary.n_samples,
        "n_classes": summary.n_classes,
        "classes": _class_list(summary.n_classes, class_names),
        **({"positive_class": _class_list(2, class_names)[1]} if summary.n_classes == 2 else {}),
        "settings": {
            "n_bins": settings.n_bins,
            "binning": settings.binning,
            "smooth_bandwidth": settings.smooth_bandwidth,
            "mmce_bandwidth": settings.mmce_bandwidth,
            "bootstrap": settings.n_boot,
            "resample_buckets": settings.resample_buckets,
            "seed": settings.seed,
        },
        **({"weights": weights_document(summary.weighting)} if summary.weighting else {}),
        "interval": summary.interval_method,
        "resampling": summary.resampling,
        "metrics": metric_records(summary.metrics),
        "interval_notes": summary.interval_notes,
        "notes": summary.notes,
        "calibrator_gains": {
            "score": summary.gain_score,
            "samples": summary.fit_samples,
            "gains": [
                {
                    "calibrator": k,
                    "gain": g.value,
                    "low": g.low,
                    "high": g.high,
                    "interval": g.method,
                    "estimand": g.estimand,
                }  # fmt: skip
                for k, g in summary.gains.items()
            ],
        },
        "recommended": summary.recommended,
        "corp": corp_document(summary.corp),
        "reliability": [_panel_document(panel) for panel in reliability_panels(summary, class_names)],
    }
    if summary.group_column:
        document["groups"] = {
            "column": summary.group_column,
            "test": GROUP_TEST,
            "rows": [
                {
                    "group": row.group,
                    "values": {column: _plain(value) for column, value in row.values.items()},
                    "n": row.n,
                    **({"weight": row.weight} if summary.weighting else {}),
                    "metrics": metric_records(row.metrics),
                    "statistic": row.statistic,
                    "degrees": row.degrees,
                    "z": row.z,
                    "p_value": row.p_value,
                    "p_adjusted": row.p_adjusted,
                    "flagged": row.flagged,
                    "tested": row.tested,
                    **({} if row.tested else {"untested": row.untested}),
                    "error": row.error,
                }
                for row in summary.groups
            ],
        }
        document["multicalibration"] = search_document(summary.multicalibration)
    return document


def search_document(search) -> dict | None:
    """The search for the worst segment in the JSON document (None when no segment was large enough)."""
    if search is None:
        return None
    return {
        "segment": search.segment,
        "n": search.n,
        "error": search.error,
        "p_value": search.p_value,
        "statistic": search.statistic,
        "critical": search.critical,
        "searched": search.searched,
        "too_small": search.too_small,
        "untestable": search.untestable,
        "draws": search.draws,
        "columns": list(search.columns),
        "depth": search.depth,
        "min_segment": search.min_segment,
        "largest_error": {"segment": search.largest_error_segment, "error": search.largest_error},
        "method": SEARCH_METHOD,
    }


def weights_document(weighting) -> dict:
    """The sample weights in the JSON document: where they were read from, their total and Kish's effective
    sample size."""
    return {"column": weighting.column, "total": weighting.total, "effective_size": weighting.effective_size}


def weights_line(weighting) -> str:
    """The sample weights as the text says them.

    Examples
    --------
    >>> from calib.evaluation.results import Weighting
    >>> weights_line(Weighting(120.0, 31.25, "w"))
    "  weights: column 'w', total 120, Kish's effective sample size 31.25 (every sum is weighted)"
    """
    source = f"column {weighting.column!r}, " if weighting.column else ""
    return (
        f"  weights: {source}total {weighting.total:.6g}, Kish's effective sample size {weighting.effective_size:.6g} "
        "(every sum is weighted)"
    )


# groups.csv's column of each group column's value (empty where a segment is not defined by that column).
GROUP_PREFIX = "group: "
# The segments the ranking figure shows, at most (those with the largest statistic).
RANKED_SEGMENTS = 25
# The subgroups' test, as the text and the JSON say it.
GROUP_TEST = (
    "Cox's score test of calibration of the CORP lens (intercept and slope of logit P(y) = a + b logit(p), "
    "statistic S on 2 df), p-values adjusted by Holm's method over the segments tested, flagged below 0.05; "
    "Spiegelhalter's z beside it"
)
# The search for the worst segment, as the text and the JSON say it.
SEARCH_METHOD = (
    "the segment with the largest Cox statistic S; its p-value is the share of outcome draws from the forecasts "
    "(the calibrated null) in which the largest S over the same segments is at least as large, counting the data "
    "as one draw (a Monte Carlo test of the maximum, valid after the search); error: the segment's weight share "
    "times its ECE"
)


def _class_list(n_classes: int, class_names) -> list[str]:
    return list(class_names) if class_names else [str(k) for k in range(n_classes)]


def _panel_document(panel: Panel) -> dict:
    """A reliability panel in the JSON document: per set of bins (per class for a class-wise panel) the
    edges, counts, mean confidences and frequencies, and the bounds of each frequency's
    :data:`FREQUENCY_INTERVAL` ("frequency_low", "frequency_high"; NaN for an empty bin) with, under sample
    weights, the bins' Kish effective sizes the intervals read ("effective_size")."""
    bins = []
    for b, name in zip(panel.bins, panel.classes or [None] * len(panel.bins), strict=True):
        low, high = b.frequency_intervals(FREQUENCY_LEVEL)
        bins.append(
            {
                **({"class": name} if name is not None else {}),
                "edges": b.edges.tolist(),
                "counts": b.counts.tolist(),
                "mean_confidence": b.mean_confidence.tolist(),
                "frequency": b.frequency.tolist(),
                "frequency_low": low.tolist(),
                "frequency_high": high.tolist(),
                **({"effective_size": b.effective_sizes().tolist()} if b.weight_squares is not None else {}),
            }
        )
    return {"metric": panel.metric, "axis": panel.axis, "frequency_interval": FREQUENCY_INTERVAL, "bins": bins}


def corp_document(corp) -> dict:
    """The CORP part of the JSON document: the lens, then per score its terms and the MCB test's p-value."""
    document = {"lens": corp.lens, "resamples": corp.resamples, "test_samples": corp.test_samples}
    for name, r in corp.scores.items():
        document[name] = {"score": r.score, "mcb": r.mcb, "dsc": r.dsc, "unc": r.unc, "p_value": r.p_value}
    return document


def summary_text(name: str, summary: Summary, class_names=None) -> str:
    """The evaluation as aligned text lines (value and interval per metric, then the calibrators)."""
    lines = [f"{name}: {summary.n_samples} samples, {summary.n_classes} classes"]
    classes = _class_list(summary.n_classes, class_names)
    positive = f"; positive class: {classes[1]}" if len(classes) == 2 else ""
    lines.append(f"  classes, in order: {', '.join(classes)}{positive}")
    if summary.weighting:
        lines.append(weights_line(summary.weighting))
    lines.append(f"  intervals: {summary.interval_method}")
    if summary.resampling:
        lines.append(f"  resampled: {summary.resampling}")
    width = max([28, *map(len, summary.metrics)])
    for metric, m in summary.metrics.items():
        lines.append(f"  {metric:<{width}s} {m.value:9.4f}{_interval_text(m)}")
    lines += [f"  note: {note}" for note in summary.interval_notes + summary.notes]
    if summary.gains:
        subset = "" if summary.fit_samples == summary.n_samples else f", on a random {summary.fit_samples} samples"
        head = f"  gain in {summary.gain_score} per sample, cross-validated calibrator{subset}"
        lines.append(f"{head} ({GAIN_INTERVAL} over the folds):")
        for calibrator, g in summary.gains.items():
            interval = "" if np.isnan(g.low) else f"   [{g.low:+.4f}, {g.high:+.4f}]"
            lines.append(f"    {calibrator:<26s} {g.value:+9.4f}{interval}")
    lines.append(f"  recommended calibrator: {summary.recommended}")
    return "\n".join(lines + corp_lines(summary.corp, summary.n_samples) + group_lines(summary))


def _interval_text(m: Metric) -> str:
    """A metric's interval as the text shows it: [low, high], or <= high for an upper bound."""
    if np.isnan(m.low):
        return ""
    if m.method == UPPER.name:
        return f"   <= {m.high:.4f} (upper bound)"
    return f"   [{m.low:.4f}, {m.high:.4f}]"


def group_lines(summary: Summary) -> list[str]:
    """The subgroups as text: per group its size (and weight, with sample weights), ECE, the calibration
    test's p-values and the flag."""
    if not summary.group_column:
        return []
    ece = lens_ece(summary.n_classes).name
    weighted = summary.weighting is not None
    weight_head = f" {'weight':>12s}" if weighted else ""
    lines = [
        f"  groups by {summary.group_column} ({GROUP_TEST}; lens: {summary.corp.lens}):",
        f"    {'group':<20s} {'n':>9s}{weight_head} {ece:>20s} {'S':>8s} {'z':>7s} {'p':>8s} {'p adj.':>8s}",
    ]
    width = max(20, *(len(row.group) for row in summary.groups))
    lines[1] = lines[1].replace(f"{'group':<20s}", f"{'group':<{width}s}")
    for row in summary.groups:
        flag = "  flagged" if row.flagged else ""
        weight = f" {row.weight:12.6g}" if weighted else ""
        test = (
            f"{row.statistic:8.2f} {row.z:7.2f} {row.p_value:8.4f} {row.p_adjusted:8.4f}{flag}"
            if row.tested
            else f"{'':8s} {row.z:7.2f}  not tested ({row.untested})"
        )
        lines.append(f"    {row.group:<{width}s} {row.n:9d}{weight} {row.metrics[ece].value:20.4f} {test}")
    return lines + search_lines(summary)


def search_lines(summary: Summary) -> list[str]:
    """The search for the worst segment in words: what was searched, what was found and flagged and why, and
    what to do about it."""
    search = summary.multicalibration
    if search is None:
        return [f"  worst segment: none searched (no segment has {summary.settings.min_segment} rows; --min-segment)"]
    depth = min(search.depth, len(search.columns))
    crossed = f"each value of {', '.join(search.columns)}"
    if depth > 1:
        crossed += f" and their crossings of up to {depth} columns"
    small = f"; {search.too_small} smaller {_plural(search.too_small, 'one')} not tested" if search.too_small else ""
    if search.untestable:
        small += f"; {search.untestable} without an uncertain forecast (every forecast 0 or 1) not tested"
    flagged = [row.group for row in summary.groups if row.flagged]
    found = search.p_value < 0.05
    lines = [
        f"  worst segment (multicalibration): {search.searched} {_plural(search.searched, 'segment')} of at least "
        f"{search.min_segment} rows "
        f"searched ({crossed}){small}",
        f"    {search.segment}: n {search.n}, S {search.statistic:.2f}, size-weighted error {search.error:.4f}; "
        f"p = {search.p_value:.4f} after the search ({search.draws} outcome draws from the forecasts; the largest S "
        f"of a draw exceeds {search.critical:.2f} in 5 % of them)",
        f"    largest size-weighted error: {search.largest_error_segment} {search.largest_error:.4f}",
    ]
    if flagged:
        lines.append(
            f"    flagged (Holm-adjusted p < 0.05): {', '.join(flagged[:10])}"
            + (f" and {len(flagged) - 10} more" if len(flagged) > 10 else "")
            + ": their outcomes depart from the forecasts in the large or in spread beyond what chance gives"
        )
    if found or flagged:
        lines.append(
            "    what to do: recalibrate where it fails, by fitting a calibrator per flagged segment (with enough "
            "rows) or one that takes the segment as a feature, then evaluate again"
        )
    else:
        lines.append(
            "    no segment departs from calibration beyond chance (after the search and Holm's adjustment); "
            "smaller departures, or ones in smaller segments, may remain unseen"
        )
    return lines


def _plain(value):
    """A group value as JSON holds it: numbers and text as they are, anything else (a date) as its text."""
    return value if isinstance(value, (str, int, float, bool)) else str(value)


def _plural(count: int, word: str) -> str:
    return word if count == 1 else f"{word}s"


def corp_lines(corp, n_samples: int) -> list[str]:
    """The CORP decompositions as text: score = MCB - DSC + UNC per score, with the MCB test's p-value."""
    tested = f"MCB test on {corp.resamples} resamples" if corp.resamples else "no MCB test (--n-boot 0)"
    if corp.resamples and corp.test_samples < n_samples:
        tested += f" of a random {corp.test_samples} samples"
    lines = [f"  CORP decomposition, {corp.lens} (score = MCB - DSC + UNC; {tested}):"]
    for name in corp.scores:
        lines.append(f"    {corp_equation(corp, name)}")
    return lines


def corp_equation(corp, score: str) -> str:
    """One score's decomposition as the text and the CORP figure print it, e.g.
    "Brier 0.1661 = MCB 0.0010 - DSC 0.0849 + UNC 0.2500, MCB test p = 0.020"."""
    r = corp.scores[score]
    tested = f", MCB test p = {r.p_value:.3f}" if corp.resamples else ""
    return f"{CORP_SCORES[score]} {r.score:.4f} = MCB {r.mcb:.4f} - DSC {r.dsc:.4f} + UNC {r.unc:.4f}{tested}"


def write_outputs(out: Path, summary: Summary, document: str, progress, class_names=None) -> list[Path]:
    """metrics.json (``document``), metrics.csv, the reliability figure and the CORP figure (PNG, PDF) in
    ``out``, and with subgroups groups.csv and the groups' figure, each written atomically."""
    import pandas as pd

    atomic_write(out / "metrics.json", lambda tmp: tmp.write_text(document + "\n"))
    frame = pd.DataFrame(summary.as_records())
    atomic_write(out / "metrics.csv", lambda tmp: frame.to_csv(tmp, index=False, float_format="%.10g"))
    panels = reliability_panels(summary, class_names)
    progress("drawing the reliability diagram")
    figures = reliability_figure(out / "reliability", panels, summary)
    progress("drawing the CORP reliability diagram")
    figures += corp_figure(out / "corp", *summary.lens, summary.corp, axis=panels[0].axis, seed=summary.settings.seed,
                           sample_weight=summary.lens_weights)  # fmt: skip
    written = [out / "metrics.json", out / "metrics.csv", *figures]
    if summary.group_column:
        columns = list(dict.fromkeys(c for r in summary.groups for c in r.values))
        rows = [
            {"group": r.group, **{f"{GROUP_PREFIX}{c}": r.values.get(c, "") for c in columns}, "n": r.n,
             **({"weight": r.weight} if summary.weighting else {}),
             "statistic": r.statistic, "degrees": r.degrees, "z": r.z, "p_value": r.p_value, "p_adjusted": r.p_adjusted,
             "flagged": r.flagged, "tested": r.tested, "error": r.error}
            | {name: m.value for name, m in r.metrics.items()}
            for r in summary.groups
        ]  # fmt: skip
        table = pd.DataFrame(rows)
        atomic_write(out / "groups.csv", lambda tmp: table.to_csv(tmp, index=False, float_format="%.10g"))
        progress("drawing the groups' reliability diagram")
        written += [out / "groups.csv", *group_figure(out / "groups", summary, panels[0].axis)]
        written += segment_figure(out / "segments", summary)
    return written


def segment_figure(stem: Path, summary: Summary) -> list[Path]:
    """The segments ranked by Cox's statistic S (at most RANKED_SEGMENTS, the largest), the flagged ones
    marked, with the value the largest S of an outcome draw exceeds 5 % of the time: a segment beyond that
    line is found by the search at the 5 % level."""
    from calib.plots.style import figure_style, save_figure, subplots

    tested = sorted((r for r in summary.groups if r.tested and np.isfinite(r.statistic)), key=lambda r: -r.statistic)
    shown = tested[:RANKED_SEGMENTS][::-1]
    search = summary.multicalibration
    with figure_style():
        fig, ax = subplots(figsize=(6.4, 1.2 + 0.22 * max(len(shown), 1)), layout="constrained")
        colors = ["tab:red" if r.flagged else "tab:blue" for r in shown]
        ax.barh(range(len(shown)), [r.statistic for r in shown], color=colors, height=0.7)
        ax.set_yticks(range(len(shown)), [f"{r.group} (n {r.n})" for r in shown], fontsize=6)
        if search is not None:
            ax.axvline(search.critical, color="black", linestyle="--", linewidth=0.8,
                       label=f"5 % after the search ({search.draws} draws)")  # fmt: skip
            ax.legend(fontsize=6, loc="lower right", frameon=False)
        ax.set_xlabel("Cox's statistic S (red: flagged, Holm-adjusted p < 0.05)")
        worst = f"\nworst: {search.segment}, p = {search.p_value:.4f} after the search" if search else ""
        ax.set_title(f"segments of {summary.group_column} by calibration test{worst}", fontsize=8)
        return save_figure(fig, stem)


def group_figure(stem: Path, summary: Summary, axis: str) -> list[Path]:
    """The groups' reliability lines (the CORP lens's bins per group, at most SHOWN_GROUPS: the flagged
    first, then the largest), each labelled with its size and adjusted p-value as the text prints them."""
    from calib.plots.style import figure_style, save_figure, subplots

    order = sorted(summary.groups, key=lambda r: (not r.flagged, -r.n))[:SHOWN_GROUPS]
    with figure_style():
        fig, ax = subplots(figsize=(5.6, 4.6), layout="constrained")
        for row in order:
            (bins,) = row.reliability
            style = "-" if row.flagged else ":"
            label = f"{row.group} (n {row.n}, p adj. {row.p_adjusted:.4f})" + (" flagged" if row.flagged else "")
            ax.plot(bins.mean_confidence[bins.occupied], bins.frequency[bins.occupied], style, marker="o",
                    markersize=2.5, linewidth=1, label=label)  # fmt: skip
        ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=0.8)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_aspect("equal", adjustable="box")
        ax.set_xlabel(axis)
        ax.set_ylabel("observed frequency")
        ax.set_title(f"reliability by {summary.group_column}", fontsize=9)
        ax.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)
        return save_figure(fig, stem)


def corp_figure(
    stem: Path, confidence: np.ndarray, outcome: np.ndarray, corp, *, axis: str, seed: int, sample_weight=None
) -> list[Path]:
    """The CORP reliability diagram of the evaluation's binary view (:mod:`calib.evaluation.lens`): the
    PAV curve and its 90 % consistency band alone on the diagram, the scores' histogram below it, the
    legend and the Brier score's decomposition (as the text prints it) outside, so nothing covers the
    curve; ``axis`` says what the scores are (the reliability figure's first panel's words). With
    ``sample_weight`` the curve is the weighted PAV fit, the band resamples rows keeping their weights and
    the histogram shows weight."""
    from calib.calibration_errors.corp import corp_curve
    from calib.calibration_errors.corp_bands import corp_bands
    from calib.plots.corp import band_label, corp_curve_lines, score_histogram
    from calib.plots.style import figure_style, save_figure, subplots

    curve = corp_curve(confidence, outcome, sample_weight=sample_weight)
    bands = corp_bands(curve, n_resamples=CORP_BAND_RESAMPLES, seed=seed)
    with figure_style():
        fig, (ax, below) = subplots(2, 1, figsize=(5.2, 6.4), layout="constrained", height_ratios=[4, 1])
        band = (bands.points, *bands.consistency)
        label = band_label(bands.level, bands.method)
        corp_curve_lines(ax, curve.points, curve.recalibrated, band=band, band_label=label)
        ax.set_title(f"CORP reliability diagram, {corp.lens}\n{corp_equation(corp, 'brier')}", fontsize=7.5)
        score_histogram(below, curve.points, curve.counts)
        below.set_ylabel("samples" if sample_weight is None else "weight", fontsize=7)
        below.set_xlabel(axis)
        fig.legend(loc="outside lower center", ncols=2, fontsize=7, frameon=False)
        return save_figure(fig, stem)


def reliability_figure(stem: Path, panels: list[Panel], summary: Summary) -> list[Path]:
    """Draw :func:`reliability_panels`, each titled with its metric as the text prints it: bars spanning
    each of the 15 bins up to the observed frequency with the gap to the bin's mean score and the
    frequency's 95 % Clopper-Pearson interval (:data:`FREQUENCY_INTERVAL`) at the mean score (for a
    class-wise panel, one line per class, at most SHOWN_CLASSES, with the same intervals as thin bars in
    the class's colour), and below, the samples per bin."""
    from calib.plots.reliability import reliability_bars
    from calib.plots.style import figure_style, save_figure, subplots

    with figure_style():
        fig, axes = subplots(
            2, len(panels), figsize=(3.8 * len(panels), 4.8), layout="constrained", height_ratios=[3, 1], squeeze=False
        )
        for column, panel in enumerate(panels):
            top, bottom = axes[0, column], axes[1, column]
            if panel.classes:
                _class_lines(top, panel)
            else:
                reliability_bars(top, panel.bins[0], intervals=panel.bins[0].frequency_intervals(FREQUENCY_LEVEL))
            top.set_ylabel("observed frequency")
            shown = summary.metrics.get(panel.metric)  # None when --metrics left it out
            top.set_title(panel.metric + (f" {shown.value:.4f}" if shown else ""), fontsize=9)
            top.set_xlabel("")
            edges = panel.bins[0].edges
            counts = np.sum([b.counts for b in panel.bins], axis=0)
            bottom.bar(edges[:-1], counts, width=np.diff(edges), align="edge", color="grey")
            bottom.set_xlim(0, 1)
            bottom.set_yscale("log")  # counts span orders of magnitude; an empty bin has no bar
            # Weighted counts can be below 1 (weights that sum to 1): the axis starts below the least bar.
            least = min(1.0, counts[counts > 0].min()) if (counts > 0).any() else 1.0
            bottom.set_ylim(0.7 * least, 4 * max(float(counts.max()), 1.0))
            counted = "scores" if panel.classes else "samples"
            bottom.set_ylabel(counted if summary.weighting is None else f"weight of {counted}")
            bottom.set_xlabel(f"{panel.axis} ({summary.settings.n_bins} {summary.settings.binning} bins)")
        return save_figure(fig, stem)


def _class_lines(ax, panel: Panel) -> None:
    """One reliability line per class (observed frequency at each bin's mean score, with its 95 %
    Clopper-Pearson interval as a thin bar), the classes with the largest ECE first when there are more
    than SHOWN_CLASSES."""
    errors = np.array([b.ece() if b.occupied.any() else 0.0 for b in panel.bins])
    shown = np.argsort(-errors, kind="stable")[:SHOWN_CLASSES]
    for k in sorted(shown):
        b = panel.bins[k]
        (line,) = ax.plot(b.mean_confidence[b.occupied], b.frequency[b.occupied], "o-", markersize=2.5, linewidth=1,
                          label=panel.classes[k])  # fmt: skip
        low, high = b.frequency_intervals(FREQUENCY_LEVEL)
        full = b.occupied
        ax.vlines(b.mean_confidence[full], low[full], high[full], color=line.get_color(), linewidth=0.6, alpha=0.5)
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=0.8)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal", adjustable="box")
    hidden = len(panel.bins) - len(shown)
    title = f"{len(shown)} classes of largest ECE" if hidden else None
    ax.legend(fontsize=6, title=title, title_fontsize=6, loc="center left", bbox_to_anchor=(1.02, 0.5), frameon=False)


def compare_text(comparison: Comparison) -> str:
    """Each system's metrics, its CORP decomposition, then each one's differences from the first with
    paired bootstrap intervals."""
    names = comparison.names
    lines = [weights_line(comparison.weighting).strip()] if comparison.weighting else []
    lines.append("metric".ljust(24) + "".join(n[:18].rjust(20) for n in names))
    for metric in comparison.metrics[0]:
        lines.append(metric.ljust(24) + "".join(f"{m[metric]:20.4f}" for m in comparison.metrics))
    lines += corp_rows(comparison)
    if comparison.interval_method:
        lines.append(f"\ndifferences from {names[0]} ({comparison.interval_method}):")
    else:
        lines.append(f"\ndifferences from {names[0]} (no bootstrap intervals: --n-boot 0):")
    for name, row in zip(names[1:], comparison.differences, strict=True):
        for metric, d in row.items():
            head = f"  {name} - {names[0]}: {metric:<24s}"
            if np.isnan(d.value):
                lines.append(f"{head} undefined: infinite for both (a zero probability on a true label)")
            elif np.isnan(d.low):
                lines.append(f"{head} {d.value:+.4f}")
            else:
                lines.append(f"{head} {d.value:+.4f} [{d.low:+.4f}, {d.high:+.4f}]")
    lines += [f"  note: {note}" for note in comparison.notes]
    return "\n".join(lines)


def corp_rows(comparison: Comparison) -> list[str]:
    """The systems' CORP decompositions side by side: per score, its value, MCB, DSC and UNC (UNC is
    the same for every system of a binary lens; for the top label it is each system's own accuracy's)."""
    reports = comparison.corp
    lines = [f"CORP, {reports[0].lens} (score = MCB - DSC + UNC):"]
    for score, label in CORP_SCORES.items():
        for term in ("score", "mcb", "dsc", "unc"):
            name = f"  {label}" if term == "score" else f"    {term.upper()}"
            lines.append(name.ljust(24) + "".join(f"{getattr(r.scores[score], term):20.4f}" for r in reports))
    return lines
