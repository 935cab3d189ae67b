"""The experiment kinds of "Reassessing calibration" (n.d.).

The paper's protocol (Sect. 3; App. F.2 for CIFAR): 20 % of a model's test set (the first 20 %, as
the authors' code splits it) fits each recalibration method, the remaining 80 % evaluates it; methods
baseline, temperature scaling (TS), one-vs-all histogram binning (HB, 15 bins) and isotonic regression
(IR), mean replacement (MRR); metrics accuracy, ECE (15 bins), ACE, smooth ECE, NLL and Brier (summed
over classes), all x 100. Plus the calibration-sharpness diagrams (Brier, Gaussian kernel) and the
published tables' MRR rows checked against their closed form.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
import pandas as pd
from matplotlib.collections import LineCollection

from calib.calibration_errors.binned import BinnedCalibrationError, ReliabilityBins
from calib.calibration_errors.binning import equal_width_edges
from calib.calibration_errors.smoothing import (
    KERNELS,
    brier_losses_sum,
    calibration_sharpness,
    kde,
    nadaraya_watson,
    smooth_ece,
    smooth_ece_top_label,
)
from calib.calibrators import TemperatureScaling
from calib.calibrators.registry import make_calibrator
from calib.calibrators.trivial import mrr_metrics
from calib.data.miscalibrated_logits import miscalibrated_logits
from calib.data.real import PosteriorSet
from calib.plots.reliability import reliability_bars
from calib.plots.style import figure_style, save_figure, subplots
from calib.scoring.scores import cross_entropy
from calib.validation import Choice, Integer, Number
from pipeline.companions import INPUT_ROUNDING, companion
from pipeline.io import write_table
from pipeline.kinds import Kind, Parameters
from pipeline.parameters import Count, Fraction, Invalid, Positive, Seed
from pipeline.sources import DataSources, RealSet
from pipeline.values_table import render_values_table

# The paper's rows: label -> (registry name, parameters) (calib.calibrators.registry); None: no calibrator.
METHODS = {
    "baseline": None,
    "TS": ("temperature", {}),
    "HB": ("ova_histogram", {"n_bins": 15}),
    "IR": ("ova_isotonic", {}),
    "MRR": ("mean_replacement", {}),
}
BIN_COLUMNS = ("n", "mean_confidence", "frequency")
Method = Literal[tuple(METHODS)]


@dataclass(frozen=True, kw_only=True)
class Split:
    """The calibration split: the first ``fraction`` of the set (``mode: first``, as the authors' code) or a
    random one drawn with ``seed`` (``mode: random``); the rest is the test split."""

    mode: Literal["first", "random"]
    fraction: Fraction
    seed: Seed = 0


@dataclass(frozen=True, kw_only=True)
class Synthetic:
    """A draw of :func:`calib.data.miscalibrated_logits.miscalibrated_logits` in place of a real set."""

    n_samples: Count
    n_classes: Annotated[int, Integer(minimum=2)]
    scale: Positive
    noise_sd: float
    seed: Seed


@dataclass(frozen=True, kw_only=True)
class Protocol(Parameters):
    """The paper's protocol (configs/reassessing_protocol/): each of ``methods`` fitted on the ``split`` of
    ``set``, evaluated on the rest with ``n_bins`` bins; here, its reliability diagrams side by side."""

    split: Split
    methods: list[Method]
    n_bins: Count
    set: RealSet


@dataclass(frozen=True, kw_only=True)
class RecalibrationTable(Protocol):
    """Tables 1-6: the protocol's metrics on ``set``, or on a ``synthetic`` draw (with its truth's row)."""

    set: RealSet | None = None
    synthetic: Synthetic | None = None

    def __post_init__(self):
        if (self.set is None) == (self.synthetic is None):
            raise Invalid("set", "give either set (a real posterior set) or synthetic (a generated one)")


@dataclass(frozen=True, kw_only=True)
class Mrr:
    """MRR's printed test-split numbers: accuracy and ECE in %, printed to ``decimals``."""

    accuracy: Annotated[float, Number(low=0, high=100)]
    ece: float
    decimals: Annotated[int, Integer(minimum=0)]


@dataclass(frozen=True, kw_only=True)
class MrrCheck(Parameters):
    """MRR's closed forms against its printed row, for ``n_classes`` classes."""

    n_classes: Annotated[int, Integer(minimum=2)]
    mrr: Mrr


@dataclass(frozen=True, kw_only=True)
class SharpnessDiagrams(Protocol):
    """Calibration-sharpness diagrams per kernel of ``kernels`` and bandwidth of ``bandwidths``: the curve on
    ``grid_points``, the sharpness gap from ``n_eval`` points, ``n_repeats`` seeded repeats."""

    bandwidths: list[Positive]
    kernels: list[Annotated[str, Choice(KERNELS)]] = field(default_factory=lambda: ["gaussian"])
    grid_points: Count
    n_eval: Count
    n_repeats: Count
    seed: Seed


@dataclass(frozen=True, kw_only=True)
class SmoothEceDiagrams(Protocol):
    """SmoothECE's reliability curves of each method, on ``grid_points``."""

    grid_points: Count


METRICS = ("accuracy", "ECE", "ACE", "ACE (equal-mass)", "SmoothECE", "NLL", "Brier")


def split_rows(n_rows: int, split: Split) -> tuple[np.ndarray, np.ndarray]:
    """The row indices of the calibration and the test split of ``n_rows`` rows: the first ``fraction``
    (paper) or a seeded random part."""
    n_cal = int(split.fraction * n_rows)
    if split.mode == "first":
        order = np.arange(n_rows)
    elif split.mode == "random":
        order = np.random.default_rng(split.seed).permutation(n_rows)
    else:
        raise ValueError(f"split.mode must be 'first' or 'random'; got {split.mode!r}")
    return order[:n_cal], order[n_cal:]


def split_set(pset: PosteriorSet, split: Split) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """((cal log-probs, labels), (test log-probs, labels)): the rows of :func:`split_rows`."""
    logp, labels = pset.logprobs(), pset.labels
    cal, test = split_rows(labels.size, split)
    return (logp[cal], labels[cal]), (logp[test], labels[test])


def split_weights(pset: PosteriorSet, split: Split) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The sample weights of the calibration and the test split of :func:`split_set` (the same rows), or
    (None, None) for a set without weights."""
    if pset.weights is None:
        return None, None
    cal, test = split_rows(pset.weights.size, split)
    return pset.weights[cal], pset.weights[test]


def recalibrated(
    method: str, cal: tuple[np.ndarray, np.ndarray], test_logp: np.ndarray, sample_weight: np.ndarray | None = None
) -> np.ndarray:
    """Test log-probabilities after ``method`` fitted on the calibration split (its rows weighted by
    ``sample_weight``, when given)."""
    if METHODS[method] is None:
        return test_logp
    registry_name, params = METHODS[method]
    model = make_calibrator(registry_name, **params)
    return model.fit(*cal, kind="logprobs", sample_weight=sample_weight).predict_log_proba(test_logp, kind="logprobs")


def table_metrics(logp: np.ndarray, labels: np.ndarray, n_bins: int, sample_weight=None) -> dict[str, float]:
    """The paper's columns as fractions (accuracy, ECE, ACE both readings, smooth ECE, NLL, Brier), each a
    weighted mean over the rows with ``sample_weight`` (None: 1 each)."""
    ece = {
        "ECE": BinnedCalibrationError("top_label", n_bins=n_bins),
        "ACE": BinnedCalibrationError("top_label", n_bins=n_bins, average=True),
        "ACE (equal-mass)": BinnedCalibrationError("top_label", n_bins=n_bins, strategy="equal-mass", average=True),
    }
    with np.errstate(over="ignore"):
        return {
            "accuracy": float(np.average(logp.argmax(axis=1) == labels, weights=sample_weight)),
            **{name: error(logp, labels, kind="logprobs", sample_weight=sample_weight) for name, error in ece.items()},
            "SmoothECE": smooth_ece_top_label(logp, labels, kind="logprobs", sample_weight=sample_weight),
            "NLL": cross_entropy(logp, labels, kind="logprobs", sample_weight=sample_weight),
            "Brier": float(np.average(brier_losses_sum(logp, labels, kind="logprobs"), weights=sample_weight)),
        }


def _synthetic_set(spec: Synthetic) -> tuple[PosteriorSet, np.ndarray]:
    """A miscalibrated-logits draw (:mod:`calib.data.miscalibrated_logits`) as a posterior set, and its
    true posteriors."""
    draw = miscalibrated_logits(
        spec.n_samples, spec.n_classes, scale=spec.scale, noise_sd=spec.noise_sd, seed=spec.seed
    )
    pset = PosteriorSet(f"synthetic scale={spec.scale}", draw.model_logits, draw.labels, "logits")
    return pset, draw.true_probs


def recalibration_table(exp: RecalibrationTable, data: DataSources) -> list[dict]:
    """One model's table: every method's metrics on the test split (fractions; rendered x 100).

    With ``synthetic`` instead of ``set``, the model is a miscalibrated-logits draw with known truth:
    the table gains a "truth" row (the true posteriors) and TS's fitted scale beside 1 / scale. A real set's
    sample weights weigh each method's fit on the calibration split and every metric on the test split.
    """
    records = []
    if exp.synthetic is not None:
        pset, truth = _synthetic_set(exp.synthetic)
        _, (truth_test, _) = split_set(PosteriorSet("truth", truth, pset.labels, "probs"), exp.split)
        cal, (test_logp, test_labels) = split_set(pset, exp.split)
        values = table_metrics(truth_test, test_labels, exp.n_bins)
        records += [{"row": "truth", "column": name, "value": v} for name, v in values.items()]
        fitted = TemperatureScaling().fit(*cal, kind="logprobs")
        records += [
            {"row": "TS", "column": "fitted scale", "value": fitted.scale_},
            {"row": "truth", "column": "fitted scale", "value": 1.0 / exp.synthetic.scale},
        ]
    else:
        pset = data.real(exp.set)
        cal, (test_logp, test_labels) = split_set(pset, exp.split)
    cal_weights, test_weights = split_weights(pset, exp.split)
    for method in exp.methods:
        logp = recalibrated(method, cal, test_logp, cal_weights)
        values = table_metrics(logp, test_labels, exp.n_bins, test_weights)
        records += [{"row": method, "column": name, "value": v} for name, v in values.items()]
    return records


def _shown(value: float) -> str:
    return "inf" if np.isinf(value) else f"{100 * value:.2f}"


def render_recalibration_table(exp: RecalibrationTable, values: pd.DataFrame, stem: Path) -> list[Path]:
    """The paper's table format: one row per method, metrics x 100 with 2 decimals."""
    cells = values.set_index(["row", "column"]).value
    methods = (["truth"] if ("truth", "NLL") in cells else []) + list(exp.methods)
    lines = [{"method": m, **{c: _shown(cells[(m, c)]) for c in METRICS if (m, c) in cells}} for m in methods]
    if ("TS", "fitted scale") in cells:
        fitted, expected = cells[("TS", "fitted scale")], cells[("truth", "fitted scale")]
        lines.append({"method": f"TS scale {fitted:.4f} (truth 1/scale = {expected:.4f})"})
    return write_table(stem, pd.DataFrame(lines).fillna(""), exp.title)


def mrr_closed_form_check(exp: MrrCheck, data: DataSources) -> list[dict]:
    """MRR's NLL and Brier in closed form from a table's printed accuracy a and ECE (the inputs), and its
    ACE and SmoothECE, which equal the ECE for a constant confidence.

    MRR's confidence is h = a + ECE or a - ECE (the tables print |a - h| only, and NLL and
    Brier are stationary in h at h = a, so they cannot tell the sign either). Both readings are written
    ("NLL (h = a + ECE)", ...). The cell itself is the midpoint of the closed form's range over both
    signs and over the inputs' rounding intervals (printed x 100 to ``decimals`` places: +- half a unit
    each), and its ``[input rounding]`` companion is half that range: the report's tolerance for a
    number derived from rounded inputs. The published NLL and Brier are never read here; the comparison
    is a consistency check of the paper's arithmetic.
    """
    k, half = exp.n_classes, 0.5 * 10.0 ** -int(exp.mrr.decimals) / 100
    a0, ece0 = exp.mrr.accuracy / 100, exp.mrr.ece / 100
    records = []
    for sign, name in ((1, "a + ECE"), (-1, "a - ECE")):
        point = mrr_metrics(a0, a0 + sign * ece0, k)
        records += [{"row": "MRR", "column": f"{m} (h = {name})", "value": point[m]} for m in ("NLL", "Brier")]
    corners = [
        mrr_metrics(a, a + sign * ece, k)
        for a in (a0 - half, a0 + half)
        for ece in (ece0 - half, ece0 + half)
        for sign in (1, -1)
    ]
    for metric in ("NLL", "Brier"):
        low, high = min(c[metric] for c in corners), max(c[metric] for c in corners)
        records += [
            {"row": "MRR", "column": metric, "value": (low + high) / 2},
            {"row": "MRR", "column": companion(metric, INPUT_ROUNDING), "value": (high - low) / 2},
        ]
    # One confidence for every sample: one bin, so ACE and SmoothECE are |a - h|, the printed ECE itself.
    for metric in ("ACE", "SmoothECE"):
        records += [
            {"row": "MRR", "column": metric, "value": ece0},
            {"row": "MRR", "column": companion(metric, INPUT_ROUNDING), "value": half},
        ]
    return records


def _diagram(ax, cs, title: str, ylim=None):
    ax.fill_between(cs.grid, cs.band_low, cs.band_high, color="C3", alpha=0.5, linewidth=0, label="sharpness gap")
    density = cs.density / np.nanmax(cs.density)
    ax.fill_between(cs.grid, 0, density, color="C0", alpha=0.3, hatch="/", label=r"$\hat p(h(x))$ (max 1)")
    ax.plot(cs.grid, cs.curve, color="black", linewidth=1.5)
    ax.plot([0, 1], [0, 1], color="black", linestyle="--", linewidth=1)
    text = f"$d_{{CAL}}$ = {100 * cs.cal_mean:.2f} ± {100 * cs.cal_std:.2f}\n$d_{{TOT}}$ = {100 * cs.total:.2f}"
    ax.text(
        0.05,
        0.95,
        text,
        transform=ax.transAxes,
        va="top",
        bbox={"boxstyle": "round", "facecolor": "grey", "alpha": 0.2},
    )
    ax.set_title(title)
    ax.set_xlabel("confidence h(x)")
    ax.margins(x=0, y=0)
    ax.grid(True, alpha=0.3)
    if ylim is not None:
        ax.set_ylim(*ylim)


def _diagram_rows(exp: SharpnessDiagrams) -> list[tuple[str, float]]:
    """(kernel, bandwidth) of each figure row: every kernel of ``kernels`` (default Gaussian) x bandwidth."""
    return [(kernel, bandwidth) for kernel in exp.kernels for bandwidth in exp.bandwidths]


def sharpness_diagrams(exp: SharpnessDiagrams, data: DataSources) -> list[dict]:
    """Figs. 1, 3-7 analogues: the calibration-sharpness diagram of every method (Brier), per kernel and bandwidth."""
    cal, (test_logp, test_labels) = split_set(data.real(exp.set), exp.split)
    outputs = {method: recalibrated(method, cal, test_logp) for method in exp.methods}
    records = []
    for kernel, bandwidth in _diagram_rows(exp):
        for method, logp in outputs.items():
            probs = np.exp(logp)
            cs = calibration_sharpness(
                probs.max(axis=1),
                probs.argmax(axis=1) == test_labels,
                brier_losses_sum(logp, test_labels, kind="logprobs"),
                bandwidth=bandwidth,
                kernel=kernel,
                grid_points=exp.grid_points,
                n_eval=exp.n_eval,
                n_repeats=exp.n_repeats,
                seed=exp.seed,
            )
            row = f"{method} {kernel} sigma={bandwidth}"
            for name in ("curve", "density", "band_low", "band_high"):
                records += [
                    {"row": row, "column": name, "x": x, "value": v}
                    for x, v in zip(cs.grid, getattr(cs, name), strict=True)
                ]
            records += [
                {"row": row, "column": "cal_mean", "value": cs.cal_mean},
                {"row": row, "column": "cal_std", "value": cs.cal_std},
                {"row": row, "column": "total", "value": cs.total},
            ]
    return records


class _Arrays:
    """Read back one diagram's arrays from the tidy values."""

    def __init__(self, values: pd.DataFrame, row: str):
        sel = values[values.row == row]
        curves = sel[sel.x.notna()]
        for name in ("curve", "density", "band_low", "band_high"):
            part = curves[curves.column == name].sort_values("x")
            self.grid = part.x.to_numpy()
            setattr(self, name, part.value.to_numpy())
        scalars = sel[sel.x.isna()].set_index("column").value
        self.cal_mean, self.cal_std, self.total = scalars["cal_mean"], scalars["cal_std"], scalars["total"]


def render_sharpness_diagrams(exp: SharpnessDiagrams, values: pd.DataFrame, stem: Path) -> list[Path]:
    """One panel per method, one row per (kernel, bandwidth); y-axes not aligned, as in the paper's Fig. 1."""
    rows = _diagram_rows(exp)
    cols = len(exp.methods)
    with figure_style():
        fig, axes = subplots(
            len(rows), cols, figsize=(3.4 * cols, 3.2 * len(rows)), layout="constrained", squeeze=False
        )
        for r, (kernel, bandwidth) in enumerate(rows):
            for c, method in enumerate(exp.methods):
                arrays = _Arrays(values, f"{method} {kernel} sigma={bandwidth}")
                _diagram(axes[r, c], arrays, f"{method} ({kernel}, σ = {bandwidth})")
        axes[0, 0].set_ylabel("E[Y = c(X) | h(X)]")
        fig.suptitle(exp.title)
        return save_figure(fig, stem)


def reliability_comparison(exp: Protocol, data: DataSources) -> list[dict]:
    """Fig. 2 analogue: 15-bin top-label reliability of two methods; with the set's sample weights, each
    method fitted on the weighted calibration split and the bins of the weighted test split (their counts
    the summed weights)."""
    pset = data.real(exp.set)
    cal, (test_logp, test_labels) = split_set(pset, exp.split)
    cal_weights, test_weights = split_weights(pset, exp.split)
    records = []
    for method in exp.methods:
        bins = BinnedCalibrationError("top_label", n_bins=exp.n_bins).reliability(
            recalibrated(method, cal, test_logp, cal_weights), test_labels, kind="logprobs", sample_weight=test_weights
        )[0]
        for m in range(exp.n_bins):
            arrays = (bins.counts, bins.mean_confidence, bins.frequency)
            records += [
                {"row": method, "column": c, "x": m, "value": a[m]} for c, a in zip(BIN_COLUMNS, arrays, strict=True)
            ]
    return records


def render_reliability_comparison(exp: Protocol, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Bars per bin with gaps, one panel per method."""
    with figure_style():
        fig, axes = subplots(1, len(exp.methods), figsize=(3.6 * len(exp.methods), 3.6), layout="constrained")
        for ax, method in zip(np.atleast_1d(axes), exp.methods, strict=True):
            sel = values[values.row == method]
            n, conf, freq = (sel[sel.column == c].sort_values("x").value.to_numpy() for c in BIN_COLUMNS)
            bins = ReliabilityBins(equal_width_edges(exp.n_bins), n, conf, freq)  # weighted counts are not whole
            reliability_bars(ax, bins)
            ax.set_title(f"{method}: ECE {100 * bins.ece():.2f}")
            ax.set_xlabel("confidence")
        fig.suptitle(exp.title)
        return save_figure(fig, stem)


def smooth_ece_diagrams(exp: SmoothEceDiagrams, data: DataSources) -> list[dict]:
    """Fig. 8 analogue: smoothed reliability curve at smooth ECE's own bandwidth, with the confidence density."""
    cal, (test_logp, test_labels) = split_set(data.real(exp.set), exp.split)
    grid = np.linspace(0.0, 1.0, exp.grid_points)
    records = []
    for method in exp.methods:
        probs = np.exp(recalibrated(method, cal, test_logp))
        conf, correct = probs.max(axis=1), (probs.argmax(axis=1) == test_labels).astype(float)
        value, sigma = smooth_ece(conf, correct, return_bandwidth=True)
        sigma = max(sigma, 1e-3)  # MRR: one confidence value, smooth ECE's bandwidth may vanish
        curve = nadaraya_watson(conf, correct, grid, bandwidth=sigma)
        density = kde(conf, grid, bandwidth=sigma)
        records += [{"row": method, "column": "curve", "x": x, "value": v} for x, v in zip(grid, curve, strict=True)]
        records += [
            {"row": method, "column": "density", "x": x, "value": v} for x, v in zip(grid, density, strict=True)
        ]
        records += [
            {"row": method, "column": "smooth ECE", "value": value},
            {"row": method, "column": "bandwidth", "value": sigma},
        ]
    return records


def render_smooth_ece_diagrams(exp: SmoothEceDiagrams, values: pd.DataFrame, stem: Path) -> list[Path]:
    """One panel per method: the curve drawn thicker where the confidences are denser (App. G)."""
    with figure_style():
        fig, axes = subplots(1, len(exp.methods), figsize=(3.2 * len(exp.methods), 3.4), layout="constrained")
        for ax, method in zip(np.atleast_1d(axes), exp.methods, strict=True):
            sel = values[values.row == method]
            curve = sel[sel.column == "curve"].sort_values("x")
            density = sel[sel.column == "density"].sort_values("x").value.to_numpy()
            x, y = curve.x.to_numpy(), curve.value.to_numpy()
            ok = np.isfinite(y)
            points = np.column_stack([x[ok], y[ok]]).reshape(-1, 1, 2)
            widths = 0.5 + 6 * density[ok] / np.nanmax(density)
            ax.add_collection(LineCollection(np.concatenate([points[:-1], points[1:]], axis=1), linewidths=widths[:-1]))
            ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=0.8)
            scalars = sel[sel.x.isna()].set_index("column").value
            ax.set_title(f"{method}: smECE {100 * scalars['smooth ECE']:.2f} (σ = {scalars['bandwidth']:.3f})")
            ax.set_xlim(0, 1)
            ax.set_ylim(0, 1)
            ax.set_xlabel("confidence")
        fig.suptitle(exp.title)
        return save_figure(fig, stem)


KINDS = (
    Kind("recalibration_table", RecalibrationTable, recalibration_table, render_recalibration_table, is_table=True),
    Kind("mrr_closed_form_check", MrrCheck, mrr_closed_form_check, render_values_table, is_table=True),
    Kind("sharpness_diagrams", SharpnessDiagrams, sharpness_diagrams, render_sharpness_diagrams),
    Kind("reliability_comparison", Protocol, reliability_comparison, render_reliability_comparison),
    Kind("smooth_ece_diagrams", SmoothEceDiagrams, smooth_ece_diagrams, render_smooth_ece_diagrams),
)
