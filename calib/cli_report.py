"""What the ``calib`` command prints and writes: the evaluation's text, JSON document, files and figure,
and the side-by-side comparison of several systems with paired bootstrap intervals."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from calib._internal.files import atomic_write
from calib.data.real import PosteriorSet
from calib.resampling.bootstrap import percentile_interval, resample_blocks
from calib.scoring.decisions import zero_one_costs
from calib.summary import BINARY_ECE, ECE_BINS, TOP_LABEL_ECE, Summary, point_metrics, resampled_metrics

COMPARED = ("accuracy", "NCE", "NBS", "ECE top-label", "ECD")
# Resamples of the consistency band in the CORP figure (when the samples are few enough to resample).
CORP_BAND_RESAMPLES = 500


def evaluation_document(file: str, summary: Summary) -> dict:
    """The evaluation as one JSON-ready dict: sizes, metrics with intervals, calibrator evidence, advice."""
    return {
        "file": file,
        "n_samples": summary.n_samples,
        "n_classes": summary.n_classes,
        "metrics": summary.as_records(),
        "calibrator_gains": {
            "score": summary.gain_score,
            "samples": summary.fit_samples,
            "gains": [
                {"calibrator": k, "gain": g.value, "low": g.low, "high": g.high} for k, g in summary.gains.items()
            ],
        },
        "recommended": summary.recommended,
        "corp": corp_document(summary.corp),
    }


def corp_document(corp) -> dict:
    """The CORP part of the JSON document: the lens, then per score its terms and the MCB test's p-value."""
    document = {"lens": corp.lens, "resamples": corp.resamples, "test_samples": corp.test_samples}
    for name, r in corp.scores.items():
        document[name] = {"score": r.score, "mcb": r.mcb, "dsc": r.dsc, "unc": r.unc, "p_value": r.p_value}
    return document


def summary_text(name: str, summary: Summary) -> str:
    """The evaluation as aligned text lines (value and interval per metric, then the calibrators)."""
    lines = [f"{name}: {summary.n_samples} samples, {summary.n_classes} classes"]
    for metric, m in summary.metrics.items():
        interval = "" if np.isnan(m.low) else f"   [{m.low:.4f}, {m.high:.4f}]"
        lines.append(f"  {metric:<28s} {m.value:9.4f}{interval}")
    subset = "" if summary.fit_samples == summary.n_samples else f", on a random {summary.fit_samples} samples"
    lines.append(f"  gain in {summary.gain_score} per sample, cross-validated calibrator{subset} (paired bootstrap):")
    for calibrator, g in summary.gains.items():
        interval = "" if np.isnan(g.low) else f"   [{g.low:+.4f}, {g.high:+.4f}]"
        lines.append(f"    {calibrator:<26s} {g.value:+9.4f}{interval}")
    lines.append(f"  recommended calibrator: {summary.recommended}")
    return "\n".join(lines + corp_lines(summary.corp, summary.n_samples))


CORP_SCORES = {"brier": "Brier", "log": "log"}


def corp_lines(corp, n_samples: int) -> list[str]:
    """The CORP decompositions as text: score = MCB - DSC + UNC per score, with the MCB test's p-value."""
    tested = f"MCB test on {corp.resamples} resamples" if corp.resamples else "no MCB test (--bootstrap 0)"
    if corp.resamples and corp.test_samples < n_samples:
        tested += f" of a random {corp.test_samples} samples"
    lines = [f"  CORP decomposition, {corp.lens} (score = MCB - DSC + UNC; {tested}):"]
    for name, r in corp.scores.items():
        p_value = f"   p = {r.p_value:.3f}" if corp.resamples else ""
        lines.append(f"    {CORP_SCORES[name]:<8s} {r.score:.4f} = {r.mcb:.4f} - {r.dsc:.4f} + {r.unc:.4f}{p_value}")
    return lines


def write_outputs(out: Path, pset: PosteriorSet, summary: Summary, document: str, progress, *, seed: int) -> list[Path]:
    """metrics.json, metrics.csv, the reliability figure and the CORP figure (PNG, PDF) in ``out``, each
    written atomically."""
    import pandas as pd

    atomic_write(out / "metrics.json", lambda tmp: tmp.write_text(document + "\n"))
    frame = pd.DataFrame(summary.as_records())
    atomic_write(out / "metrics.csv", lambda tmp: frame.to_csv(tmp, index=False, float_format="%.10g"))
    progress("drawing the reliability diagram")
    figures = reliability_figure(out / "reliability", reliability_panels(pset))
    progress("drawing the CORP reliability diagram")
    figures += corp_figure(out / "corp", pset, summary.corp, seed=seed)
    return [out / "metrics.json", out / "metrics.csv", *figures]


def corp_figure(stem: Path, pset: PosteriorSet, corp, *, seed: int) -> list[Path]:
    """The CORP reliability diagram of the evaluation's binary view (:func:`calib.summary.corp_view`): the
    PAV curve, its 90 % consistency band, the Brier score's decomposition and the scores' histogram."""
    from calib.calibration_errors.corp import corp_curve
    from calib.calibration_errors.corp_bands import corp_bands
    from calib.plots.corp import band_label, corp_diagram
    from calib.plots.style import figure_style, save_figure, subplots
    from calib.summary import corp_view

    _, confidence, outcome = corp_view(pset.logprobs(), pset.labels)
    curve = corp_curve(confidence, outcome)
    bands = corp_bands(curve, n_resamples=CORP_BAND_RESAMPLES, seed=seed)
    brier = corp.scores["brier"]
    terms = {"Brier": brier.score, "MCB": brier.mcb, "DSC": brier.dsc, "UNC": brier.unc}
    with figure_style():
        fig, ax = subplots(figsize=(4.6, 4.6), layout="constrained")
        band = (bands.points, *bands.consistency)
        label = band_label(bands.level, bands.method)
        corp_diagram(ax, curve.points, curve.recalibrated, curve.counts, terms, band=band, band_label=label)
        tested = f", MCB test p = {brier.p_value:.3f}" if corp.resamples else ""
        ax.set_title(f"CORP reliability diagram, {corp.lens}{tested}", fontsize=9)
        ax.set_xlabel("P(class 1)" if corp.lens == "positive class" else "confidence (top label)")
        ax.legend(loc="upper left", bbox_to_anchor=(0.0, 0.64), fontsize=7, frameon=False)
        return save_figure(fig, stem)


def reliability_panels(pset: PosteriorSet) -> list[tuple]:
    """The reliability diagram's panels as (bins, what is binned): for two classes the positive class's
    probability; for more, every class's probability against its one-vs-rest outcome, then the top label."""
    from calib.calibration_errors.binned import reliability_bins

    logp, y = pset.logprobs(), pset.labels
    if pset.n_classes == 2:
        positive = pset.class_names[1] if pset.class_names else "1"
        return [(BINARY_ECE.reliability(logp, y, kind="logprobs")[0], f"P(class {positive})")]
    probs = np.exp(logp)
    pooled = reliability_bins(probs.ravel(), np.eye(pset.n_classes, dtype=bool)[y].ravel(), n_bins=ECE_BINS)
    (top,) = TOP_LABEL_ECE.reliability(logp, y, kind="logprobs")
    return [(pooled, "every class, one-vs-rest"), (top, "confidence (top label)")]


def reliability_figure(stem: Path, panels: list[tuple]) -> list[Path]:
    """Draw :func:`reliability_panels`: per panel, bars spanning each of the 15 bins up to the observed
    frequency, the gap to the bin's mean score, and below it the number of samples per bin."""
    from calib.plots.reliability import reliability_bars
    from calib.plots.style import figure_style, save_figure, subplots

    with figure_style():
        fig, axes = subplots(
            2, len(panels), figsize=(3.8 * len(panels), 4.6), layout="constrained", height_ratios=[3, 1], squeeze=False
        )
        for column, (bins, what) in enumerate(panels):
            top, bottom = axes[0, column], axes[1, column]
            reliability_bars(top, bins)
            top.set_ylabel("observed frequency")
            top.set_title(f"{what}: ECE {bins.ece():.4f}", fontsize=9)
            top.set_xlabel("")
            bottom.bar(bins.edges[:-1], bins.counts, width=np.diff(bins.edges), align="edge", color="grey")
            for left, right, count in zip(bins.edges[:-1], bins.edges[1:], bins.counts, strict=True):
                if count:
                    bottom.annotate(f"{count}", ((left + right) / 2, count), ha="center", va="bottom", fontsize=5)
            bottom.set_xlim(0, 1)
            bottom.set_yscale("log")  # counts span orders of magnitude; an empty bin has no bar
            bottom.set_ylim(0.7, 4 * max(int(bins.counts.max()), 1))
            bottom.set_ylabel("samples")
            bottom.set_xlabel(f"{what} ({ECE_BINS} bins of width {1 / ECE_BINS:.3f})")
        return save_figure(fig, stem)


def compare_text(names: list[str], sets: list[PosteriorSet], *, n_boot: int, seed: int, progress) -> str:
    """Each system's metrics, then each one's differences from the first with paired bootstrap intervals."""
    labels = sets[0].labels
    costs = {"0-1": zero_one_costs(sets[0].n_classes)}
    logps = [s.logprobs() for s in sets]
    point = [point_metrics(lp, labels, costs) for lp in logps]
    lines = ["metric".ljust(16) + "".join(n[:18].rjust(20) for n in names)]
    for m in COMPARED:
        lines.append(m.ljust(16) + "".join(f"{p[m]:20.4f}" for p in point))
    lines += corp_rows(logps, labels)
    point_diffs = np.array([[_difference(p[m], point[0][m]) for m in COMPARED] for p in point[1:]])
    if not n_boot:
        lines.append(f"\ndifferences from {names[0]} (no bootstrap intervals: --bootstrap 0):")
        for i, name in enumerate(names[1:]):
            lines += [f"  {name} - {names[0]}: {m:<16s} {point_diffs[i, j]:+.4f}" for j, m in enumerate(COMPARED)]
        return "\n".join(lines)
    progress(f"paired bootstrap over {n_boot} resamples")
    diffs = []
    for rows in resample_blocks(labels.size, n_boot=n_boot, seed=seed):
        values = [resampled_metrics(lp, labels, costs, None, rows) for lp in logps]
        diffs.append(np.array([[_difference(v[m], values[0][m]) for m in COMPARED] for v in values[1:]]))
    diffs = np.concatenate(diffs, axis=-1)  # (S - 1, M, B)
    undefined = np.isnan(point_diffs) | np.isnan(diffs).any(axis=-1)
    low, high = percentile_interval(np.where(undefined[..., None], 0.0, diffs).transpose(2, 0, 1), 0.05)
    lines.append(f"\ndifferences from {names[0]} (paired bootstrap 95 % interval):")
    for i, name in enumerate(names[1:]):
        for j, m in enumerate(COMPARED):
            head = f"  {name} - {names[0]}: {m:<16s}"
            if undefined[i, j]:
                lines.append(f"{head} undefined: infinite for both (a zero probability on a true label)")
            else:
                lines.append(f"{head} {point_diffs[i, j]:+.4f} [{low[i, j]:+.4f}, {high[i, j]:+.4f}]")
    return "\n".join(lines)


def corp_rows(logps: list[np.ndarray], labels: np.ndarray) -> list[str]:
    """The systems' CORP decompositions side by side: per score, its value, MCB, DSC and UNC (UNC is
    the same for every system of a binary lens; for the top label it is each system's own accuracy's)."""
    from calib.summary import corp_summary

    reports = [corp_summary(lp, labels, n_resamples=0, seed=0) for lp in logps]
    lines = [f"CORP, {reports[0].lens} (score = MCB - DSC + UNC):"]
    for score, label in CORP_SCORES.items():
        for term in ("score", "mcb", "dsc", "unc"):
            name = f"  {label}" if term == "score" else f"    {term.upper()}"
            lines.append(name.ljust(16) + "".join(f"{getattr(r.scores[score], term):20.4f}" for r in reports))
    return lines


def _difference(a, b):
    """a - b, NaN where both are the same infinity (e.g. two infinite cross-entropies), without a warning."""
    with np.errstate(invalid="ignore"):
        return np.subtract(a, b)
