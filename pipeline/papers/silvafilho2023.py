"""The experiment kinds of the survey, Silva Filho et al. (2023), "Classifier calibration: a survey".

Worked examples, Tables 1-8 and Figs. 1, 2, 6, 8-10 and 21: the survey computed its Tables 4-7 from
bin means rounded to 2 decimals (summed in ascending order) and ECEs rounded to 4, which gives the
printed digits (exact arithmetic gives 0.1878 for the binary ECE printed as 0.1873 in Sect. 4.2); both
that ``paper`` arithmetic and exact arithmetic are reported, so the report checks the printed digits
exactly and the exact values within the stated tolerance.

Synthetic experiments, Figs. 11-20. Binary: the pseudo-models sigmoid(0.01 x) (under-confident) and
sigmoid(0.05 x) (over-confident) and an MLP (two hidden layers of 128 ReLU units, scikit-learn
defaults otherwise, trained on 10,000 samples), each recalibrated by a binary calibrator fitted on a
separate calibration sample. Three classes: the MLP recalibrated by temperature, vector, matrix
scaling or Dirichlet calibration. Reliability curves use a large test sample in fine bins, which is
how the survey drew its "true" diagrams.

scikit-learn is imported inside the function that trains the MLP: the figures that do not need it start
without it.
"""

from __future__ import annotations

import textwrap
import warnings
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
import pandas as pd

from calib.calibration_errors.binned import BinnedCalibrationError, ReliabilityBins, reliability_bins
from calib.calibration_errors.binning import equal_width_bin_ids
from calib.calibrators.registry import make_calibrator
from calib.data import survey_synthetic as gen
from calib.data.toys import HALLENBECK_1920, decomposition_toy, ece_toy, hallenbeck_1920, marker_pitfall
from calib.plots.curves import line_curves
from calib.plots.reliability import reliability_bars, reliability_curve, reliability_points, simplex_grid, simplex_map
from calib.plots.style import figure_style, pyplot, save_figure, subplots
from calib.resampling.significance import SmallSampleWarning, multinomial_hosmer_lemeshow, resampling_test
from calib.scoring.decomposition import calibration_refinement, epistemic_irreducible
from calib.scoring.scores import cross_entropy
from calib.validation import Choice, Integer
from pipeline.companions import monte_carlo_records
from pipeline.kinds import Kind, Parameters
from pipeline.parameters import Count, Seed
from pipeline.sources import DataSources, RealSet
from pipeline.values_table import render_values_table

# Worked examples --------------------------------------------------------------------------------------------------


def _target(scores: np.ndarray, labels: np.ndarray, target) -> tuple[np.ndarray, np.ndarray]:
    """(score, outcome) of class ``target`` vs the rest, or of the confidence when ``target`` is 'confidence'."""
    if target == "confidence":
        return scores.max(axis=1), scores.argmax(axis=1) == labels
    return scores[:, int(target)], labels == int(target)


def paper_rounded_gaps(score: np.ndarray, outcome: np.ndarray, n_bins: int) -> dict[str, np.ndarray | float]:
    """The survey's arithmetic: means of ascending-sorted bin members rounded to 2, ECE rounded to 4."""
    ids = equal_width_bin_ids(score, n_bins, closed="right")
    counts = np.bincount(ids, minlength=n_bins)
    sbar = np.full(n_bins, np.nan)
    ybar = np.full(n_bins, np.nan)
    for m in np.flatnonzero(counts):  # M bins, not samples: a loop over at most M values
        sbar[m] = np.round(np.sum(np.sort(score[ids == m])) / counts[m], 2)
        ybar[m] = np.round(np.mean(outcome[ids == m]), 2)
    gap = np.abs(ybar - sbar)
    full = counts > 0
    ece = np.round(np.sum(counts[full] * gap[full]) / counts.sum(), 4)
    return {"counts": counts, "sbar": sbar, "ybar": ybar, "gap": gap, "ece": ece, "mce": np.max(gap[full])}


def toy_bins_table(exp: ToyBinsTable, data: DataSources) -> list[dict]:
    """Tables 4-7: per-bin n, mean score, frequency and gap (paper and exact), and the ECE / MCE."""
    score, outcome = _target(*ece_toy(), exp.target)
    paper = paper_rounded_gaps(score, outcome, exp.n_bins)
    exact = reliability_bins(score, outcome, n_bins=exp.n_bins, closed="right")
    records = []
    for m in range(exp.n_bins):
        row = f"B{m + 1}"
        records.append({"row": row, "column": "n", "value": exact.counts[m]})
        if exact.counts[m]:
            records += [
                {"row": row, "column": "sbar", "value": paper["sbar"][m]},
                {"row": row, "column": "ybar", "value": paper["ybar"][m]},
                {"row": row, "column": "gap", "value": paper["gap"][m]},
                {"row": row, "column": "sbar exact", "value": exact.mean_confidence[m]},
                {"row": row, "column": "ybar exact", "value": exact.frequency[m]},
                {"row": row, "column": "gap exact", "value": abs(exact.frequency[m] - exact.mean_confidence[m])},
            ]
    records += [
        {"row": "all", "column": "ECE", "value": paper["ece"]},
        {"row": "all", "column": "MCE", "value": paper["mce"]},
        {"row": "all", "column": "ECE exact", "value": exact.ece()},
        {"row": "all", "column": "MCE exact", "value": exact.mce()},
    ]
    return records


def toy_summary_table(exp: BinnedTable, data: DataSources) -> list[dict]:
    """Sect. 4.3-4.4: classwise ECE and MCE, mean and max of the class-j values, confidence ECE / MCE."""
    scores, labels = ece_toy()
    records = []
    for mode in ("paper", "exact"):
        per_class = []
        for target in (0, 1, 2, "confidence"):
            score, outcome = _target(scores, labels, target)
            if mode == "paper":
                r = paper_rounded_gaps(score, outcome, exp.n_bins)
                per_class.append((float(r["ece"]), float(r["mce"])))
            else:
                b = reliability_bins(score, outcome, n_bins=exp.n_bins, closed="right")
                per_class.append((b.ece(), b.mce()))
        eces, mces = np.array(per_class[:3]).T
        suffix = "" if mode == "paper" else " exact"
        classwise = paper_classwise_ece(scores, labels, exp.n_bins) if mode == "paper" else eces.mean()
        values = {
            "classwise-ECE": classwise,
            "classwise-MCE": mces.max(),
            "mean class-j-MCE": mces.mean(),
            "max class-j-ECE": eces.max(),
            "confidence-ECE": per_class[3][0],
            "confidence-MCE": per_class[3][1],
        }
        records += [{"row": name, "column": f"value{suffix}", "value": v} for name, v in values.items()]
    records.append({"row": "accuracy", "column": "value exact", "value": float(np.mean(scores.argmax(1) == labels))})
    return records


def toy_data_table(exp: Table, data: DataSources) -> list[dict]:
    """Table 3: the 30 predictions and labels (classes 1-3 as printed)."""
    scores, labels = ece_toy()
    records = []
    for i, (s, y) in enumerate(zip(scores, labels, strict=True), start=1):
        records += [{"row": str(i), "column": f"s{j + 1}", "value": s[j]} for j in range(3)]
        records.append({"row": str(i), "column": "y", "value": y + 1})
    return records


def hallenbeck_table(exp: Table, data: DataSources) -> list[dict]:
    """Table 1: forecasts, rain events and the actual percentage per 10 %-wide bin."""
    records = []
    for low, n, rains in HALLENBECK_1920:
        row = "Above 90" if low == 90 else f"{low} to {low + 9}"
        records += [
            {"row": row, "column": "forecasts", "value": n},
            {"row": row, "column": "rains", "value": rains},
            {"row": row, "column": "actual_percent", "value": 100 * rains / n if n else np.nan},
        ]
    return records


def _bin_records(prefix: str, bins: ReliabilityBins) -> list[dict]:
    records = []
    for m in range(bins.counts.size):
        row = f"{prefix} B{m + 1}"
        records += [
            {"row": row, "column": "low", "value": bins.edges[m]},
            {"row": row, "column": "high", "value": bins.edges[m + 1]},
            {"row": row, "column": "n", "value": bins.counts[m]},
            {"row": row, "column": "mean_score", "value": bins.mean_confidence[m]},
            {"row": row, "column": "frequency", "value": bins.frequency[m]},
        ]
    return records


def _bins_from(values: pd.DataFrame, prefix: str) -> ReliabilityBins:
    sel = values[values.row.str.startswith(f"{prefix} B")]
    wide = sel.pivot(index="row", columns="column", values="value")
    wide = wide.loc[sorted(wide.index, key=lambda r: int(r.rsplit("B", 1)[1]))]
    edges = np.r_[wide.low.to_numpy(), wide.high.to_numpy()[-1]]
    return ReliabilityBins(edges, wide.n.to_numpy().astype(int), wide.mean_score.to_numpy(), wide.frequency.to_numpy())


def hallenbeck_diagrams(exp: HallenbeckDiagrams, data: DataSources) -> list[dict]:
    """Figs. 1-2: Table 1's forecasts (at bin centres) in M equal-width bins for each M of ``n_bins``."""
    probs, rain = hallenbeck_1920()
    records = []
    for m in exp.n_bins:
        # Left-closed: the forecasts sit at bin centres, so no score is on an edge; [0.2, 0.4) holds 20-39 %.
        records += _bin_records(f"M={m}", reliability_bins(probs, rain, n_bins=m, closed="left"))
    return records


def render_hallenbeck_diagrams(exp: HallenbeckDiagrams, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Fig. 1 (bars, gaps and histogram; points) or Fig. 2 (one bar diagram per M)."""
    with figure_style():
        if exp.style == "fig1":
            fig = pyplot().figure(figsize=(8, 4), layout="constrained")
            grid = fig.add_gridspec(2, 2, height_ratios=[3, 1])
            top, hist, right = fig.add_subplot(grid[0, 0]), fig.add_subplot(grid[1, 0]), fig.add_subplot(grid[:, 1])
            bins = _bins_from(values, f"M={exp.n_bins[0]}")
            reliability_bars(top, bins)
            hist.bar(bins.edges[:-1], bins.counts, width=np.diff(bins.edges), align="edge", color="tab:blue", alpha=0.6)
            hist.set_xlim(0, 1)
            hist.set_xlabel("forecast probability")
            top.set_ylabel("proportion of rain")
            reliability_points(right, bins, style={"color": "tab:blue"})
            right.set_xlabel("average forecast in bin")
            right.set_ylabel("proportion of rain")
        else:
            fig, axes = subplots(1, len(exp.n_bins), figsize=(4 * len(exp.n_bins), 3.6), layout="constrained")
            for ax, m in zip(np.atleast_1d(axes), exp.n_bins, strict=True):
                reliability_bars(ax, _bins_from(values, f"M={m}"))
                ax.set_title(f"{m} equal-width bins")
                ax.set_xlabel("forecast probability")
        fig.suptitle(exp.title)
        return save_figure(fig, stem)


def marker_pitfall_bins(exp: Parameters, data: DataSources) -> list[dict]:
    """Fig. 6: the two examples in bins [0, 0.5] and (0.5, 1]."""
    records = []
    for name, (score, outcome) in marker_pitfall().items():
        records += _bin_records(name, reliability_bins(score, outcome, n_bins=2, closed="right"))
    return records


def render_marker_pitfall(exp: Parameters, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Fig. 6: markers at the bin centres (dashed) vs at the mean scores (solid) for (a) and (b)."""
    with figure_style():
        fig, axes = subplots(1, 2, figsize=(7, 3.6), layout="constrained")
        for ax, name in zip(axes, ("a", "b"), strict=True):
            bins = _bins_from(values, name)
            reliability_points(
                ax, bins, marker_at="centre", style={"color": "green", "linestyle": "--"}, label="centre"
            )
            reliability_points(ax, bins, marker_at="mean", style={"color": "red"}, label="mean score")
            ax.set_title(f"({name}) {'not calibrated' if name == 'a' else 'calibrated'}")
            ax.set_xlabel("score")
            ax.legend(loc="upper left")
        return save_figure(fig, stem)


def toy_diagrams(exp: ToyDiagrams, data: DataSources) -> list[dict]:
    """Figs. 8-10: the toy's bins for each target (class index or 'confidence')."""
    scores, labels = ece_toy()
    records = []
    for target in exp.targets:
        score, outcome = _target(scores, labels, target)
        records += _bin_records(str(target), reliability_bins(score, outcome, n_bins=exp.n_bins, closed="right"))
    return records


def render_toy_diagrams(exp: ToyDiagrams, values: pd.DataFrame, stem: Path) -> list[Path]:
    """One bar diagram per target with the histogram of counts below."""
    with figure_style():
        n = len(exp.targets)
        fig = pyplot().figure(figsize=(3.4 * n, 4.2), layout="constrained")
        grid = fig.add_gridspec(2, n, height_ratios=[3, 1])
        for k, target in enumerate(exp.targets):
            bins = _bins_from(values, str(target))
            top, hist = fig.add_subplot(grid[0, k]), fig.add_subplot(grid[1, k])
            reliability_bars(top, bins)
            top.set_title("confidence" if target == "confidence" else f"class {int(target) + 1} vs rest")
            hist.bar(bins.edges[:-1], bins.counts, width=np.diff(bins.edges), align="edge", color="tab:blue", alpha=0.6)
            hist.set_xlim(0, 1)
        fig.suptitle(exp.title)
        return save_figure(fig, stem)


def decomposition_table(exp: Table, data: DataSources) -> list[dict]:
    """Table 2: Brier and log-loss = calibration + refinement = epistemic + irreducible (Sect. 3.1)."""
    toy = decomposition_toy()
    records = []
    for loss, name in (("brier", "Brier"), ("log", "log-loss")):
        cr = calibration_refinement(toy["s"], toy["labels"], kind="probs", loss=loss)
        ei = epistemic_irreducible(toy["s"], toy["labels"], toy["q"], kind="probs", loss=loss)
        records += [
            {"row": name, "column": "total", "value": cr.total},
            {"row": name, "column": "calibration", "value": cr.calibration},
            {"row": name, "column": "refinement", "value": cr.refinement},
            {"row": name, "column": "epistemic", "value": ei.epistemic},
            {"row": name, "column": "irreducible", "value": ei.irreducible},
        ]
    return records


def hosmer_lemeshow_table(exp: BinnedTable, data: DataSources) -> list[dict]:
    """Table 8: multinomial Hosmer-Lemeshow on the Table 3 toy: O and E per bin and class, C, df, p."""
    scores, labels = ece_toy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallSampleWarning)  # 30 instances: illustrative, as the survey says
        result = multinomial_hosmer_lemeshow(scores, labels, kind="probs", n_bins=exp.n_bins)
    records = []
    for m in range(result.observed.shape[0]):
        row = f"B{m + 1}"
        records.append({"row": row, "column": "n", "value": result.counts[m]})
        for j in range(result.observed.shape[1]):
            records += [
                {"row": row, "column": f"O{j + 1}", "value": result.observed[m, j]},
                {"row": row, "column": f"E{j + 1}", "value": result.expected[m, j]},
            ]
    records += [
        {"row": "test", "column": "C", "value": result.statistic},
        {"row": "test", "column": "df", "value": result.df},
        {"row": "test", "column": "p", "value": result.p_value},
    ]
    return records


def paper_classwise_ece(scores: np.ndarray, labels: np.ndarray, n_bins: int) -> float:
    """The survey's classwise ECE: the mean of its per-class ECEs (each from rounded bin means), to 4 decimals."""
    eces = [paper_rounded_gaps(*_target(scores, labels, k), n_bins)["ece"] for k in range(scores.shape[1])]
    return float(np.round(np.mean(eces), 4))


def resampling_null(exp: ResamplingNull, data: DataSources) -> list[dict]:
    """Fig. 21: null distribution of the classwise ECE under labels drawn from the toy's predictions.

    The authors ran Algorithm 1 once, unseeded; p is therefore a Monte-Carlo cell over the seeds
    ``seed .. seed + n_seeds - 1`` (mean, and its sd over seeds as the ``[sd]`` companion); the
    histogram shows the first seed's draws. The statistic is the exact classwise ECE; "observed" is
    also given in the survey's arithmetic (rounded bin means), which is what the caption prints.
    """
    scores, labels = ece_toy()
    # The predictions stay fixed (only labels are redrawn): binned once, the statistic counts outcomes.
    of_labels = BinnedCalibrationError("classwise", n_bins=exp.n_bins).with_scores(scores, kind="probs")

    def classwise(probs, y):
        return of_labels(y)

    results = [
        resampling_test(classwise, scores, kind="probs", labels=labels, n_resamples=exp.n_resamples, seed=seed)
        for seed in range(exp.seed, exp.seed + exp.n_seeds)
    ]
    first = results[0]
    records = [
        {"row": "resampled", "column": "statistic", "x": i, "value": v} for i, v in enumerate(first.null_statistics)
    ]
    records += [
        {"row": "test", "column": "observed", "value": paper_classwise_ece(scores, labels, exp.n_bins)},
        {"row": "test", "column": "observed exact", "value": first.statistic},
        {"row": "test", "column": "p (first seed)", "value": first.p_value},
        {"row": "test", "column": "p (1 + #) / (1 + L), first seed", "value": first.p_value_plus_one},
    ]
    records += monte_carlo_records("test", "p", [r.p_value for r in results])
    return records


def render_resampling_null(exp: ResamplingNull, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Fig. 21: histogram of the resampled statistics; red where they exceed the observed value."""
    null = values[values.row == "resampled"].value.to_numpy()
    test = values[values.row == "test"].set_index("column").value
    observed = test["observed exact"]
    with figure_style():
        fig, ax = subplots(figsize=(5, 3), layout="constrained")
        edges = np.linspace(null.min(), max(null.max(), observed), 40)
        ax.hist(null[null <= observed], bins=edges, color="tab:blue", alpha=0.7, label="resampled")
        ax.hist(null[null > observed], bins=edges, color="red", alpha=0.8, label="above observed")
        ax.axvline(observed, color="black", linestyle="--", label=f"observed {observed:.4f}")
        ax.set_xlabel("classwise ECE under calibrated labels")
        ax.set_title(
            f"p = {test['p (first seed)']:.3f} (L = {null.size}, seed {exp.seed}); "
            f"mean over {exp.n_seeds} seeds {test['p']:.3f}"
        )
        ax.legend()
        return save_figure(fig, stem)


# Synthetic experiments --------------------------------------------------------------------------------------------


# The survey's calibrators by config name: (registry name, parameters) (calib.calibrators.registry).
CALIBRATORS = {
    "binning": ("histogram", {"n_bins": 10, "empty_bin": "prior"}),
    "isotonic": ("isotonic", {}),
    "platt": ("platt", {}),
    "platt_score": ("platt", {"feature": "score"}),
    "beta": ("beta", {}),
    "temperature": ("temperature", {}),
    "vector": ("vector_log_ratios", {}),  # the survey's logits: log-ratios to the last class
    "matrix": ("matrix_log_ratios", {}),
    # ODIR over the grid these figures were first drawn with, weakest first (mu = lambda)
    "dirichlet": ("dirichlet", {"lambdas": (1e-3, 1e-2, 1e-1, 1.0, 10.0), "patience": None}),
}


def _calibrator(name: str):
    """A new calibrator of the survey's config name ``name``."""
    registry_name, params = CALIBRATORS[name]
    return make_calibrator(registry_name, **params)


MODEL_TITLES = {"under": r"$\hat f_{under}$", "over": r"$\hat f_{over}$", "mlp": r"$\hat f_{MLP}$"}


@cache
def _splits(n_classes: int, train: int, calibration: int, test: int, seed: int):
    """(x, y) of the train, calibration and test samples, seeded."""
    return tuple(gen.sample(n, n_classes, seed=seed + i) for i, n in enumerate((train, calibration, test)))


@cache
def _mlp(n_classes: int, train: int, seed: int):
    # Imported here: scikit-learn is heavy, and most of this paper's jobs (the worked examples) train no MLP.
    from sklearn.neural_network import MLPClassifier

    (x, y), _, _ = _splits(n_classes, train, 1, 1, seed)
    return MLPClassifier(hidden_layer_sizes=(128, 128), random_state=seed).fit(x[:, None], y)


def _model_probs(model: str, data: SurveyData, n_classes: int, split: str) -> np.ndarray:
    """The predictions of ``model`` on the ``split`` ("calibration" or "test") sample of ``data`` (read-only).

    Computed once per process: Figs. 12-16 share their data, as do Figs. 17-20, and the MLP's predictions
    on the test sample are the largest part of each of these figures' work."""
    return _predictions(model, n_classes, data.train, data.calibration, data.test, data.seed, split)


@cache
def _predictions(model: str, n_classes: int, train: int, calibration: int, test: int, seed: int, split: str):
    x = _splits(n_classes, train, calibration, test, seed)[("train", "calibration", "test").index(split)][0]
    if model == "under":
        probs = gen.pseudo_model(x, gen.UNDER_SLOPE)
    elif model == "over":
        probs = gen.pseudo_model(x, gen.OVER_SLOPE)
    elif model == "mlp":
        probs = _mlp(n_classes, train, seed).predict_proba(x[:, None])
    else:
        raise ValueError(f"unknown model {model!r}; known: under, over, mlp")
    probs.setflags(write=False)
    return probs


def _logs(probs: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(np.clip(probs, 0.0, 1.0))


def _curve_records(row: str, column: str, bins: ReliabilityBins, min_count: int) -> list[dict]:
    keep = bins.counts >= min_count
    return [
        {"row": row, "column": column, "x": x, "value": v}
        for x, v in zip(bins.mean_confidence[keep], bins.frequency[keep], strict=True)
    ]


def survey_densities(exp: SurveyDensities, data: DataSources) -> list[dict]:
    """Fig. 11: class-conditional densities p(x | class) and the Bayes posterior of the positive class."""
    x = np.linspace(exp.x_min, exp.x_max, exp.n_points)
    dens = np.exp(gen.class_log_densities(x, 2))
    post = np.exp(gen.bayes_log_posteriors(x, 2))[:, 1]
    columns = {"p(x | Y=1)": dens[:, 1], "p(x | Y=2)": dens[:, 0], "P(Y=1 | x)": post}
    return [
        {"row": name, "column": "curve", "x": xi, "value": v}
        for name, ys in columns.items()
        for xi, v in zip(x, ys, strict=True)
    ]


def render_survey_densities(exp: SurveyDensities, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Fig. 11: densities (left axis) and posterior (right axis)."""
    with figure_style():
        fig, ax = subplots(figsize=(6, 3.2), layout="constrained")
        for name, color in (("p(x | Y=1)", "tab:blue"), ("p(x | Y=2)", "tab:orange")):
            sel = values[values.row == name]
            ax.plot(sel.x, sel.value, color=color, label=name)
        ax.set_xlabel("x")
        ax.set_ylabel("density")
        twin = ax.twinx()
        sel = values[values.row == "P(Y=1 | x)"]
        twin.plot(sel.x, sel.value, color="black", linestyle="--", label="P(Y=1 | x)")
        twin.set_ylim(0, 1)
        twin.set_ylabel("Bayes posterior")
        fig.legend(loc="outside upper center", ncols=3)
        return save_figure(fig, stem)


def binary_calibration(exp: BinaryCalibration, data: DataSources) -> list[dict]:
    """Figs. 12-16: per model, the true reliability curve, the fitted map g(s) and the curve after calibration."""
    d = exp.data
    (_, _), (_, y_cal), (_, y_test) = _splits(2, d.train, d.calibration, d.test, d.seed)
    grid = np.linspace(0.0005, 0.9995, exp.grid_points)
    grid_probs = np.column_stack([1.0 - grid, grid])
    records = []
    for model in exp.models:
        test = _model_probs(model, d, 2, "test")
        bins = reliability_bins(test[:, 1], y_test == 1, n_bins=exp.n_bins)
        records += _curve_records(model, "reliability raw", bins, exp.min_count)
        records += [
            {"row": model, "column": "score min", "value": test[:, 1].min()},
            {"row": model, "column": "score max", "value": test[:, 1].max()},
            {
                "row": model,
                "column": "ECE raw",
                "value": BinnedCalibrationError("binary", n_bins=15)(test, y_test, kind="probs"),
            },
            {"row": model, "column": "NLL raw", "value": cross_entropy(_logs(test), y_test, kind="logprobs")},
        ]
        if exp.calibrator is None:
            continue
        cal = _model_probs(model, d, 2, "calibration")
        fitted = _calibrator(exp.calibrator).fit(_logs(cal), y_cal, kind="logprobs")
        mapped = fitted.predict_proba(_logs(grid_probs), kind="logprobs")[:, 1]
        after = fitted.predict_proba(_logs(test), kind="logprobs")
        records += [{"row": model, "column": "map", "x": s, "value": g} for s, g in zip(grid, mapped, strict=True)]
        bins = reliability_bins(after[:, 1], y_test == 1, n_bins=exp.n_bins)
        records += _curve_records(model, "reliability calibrated", bins, exp.min_count)
        records += [
            {
                "row": model,
                "column": "ECE calibrated",
                "value": BinnedCalibrationError("binary", n_bins=15)(after, y_test, kind="probs"),
            },
            {"row": model, "column": "NLL calibrated", "value": cross_entropy(_logs(after), y_test, kind="logprobs")},
            {"row": model, "column": "distinct outputs", "value": np.unique(np.round(after[:, 1], 12)).size},
        ]
    return records


def _scalar(values: pd.DataFrame, row: str, column: str) -> float:
    sel = values[(values.row == row) & (values.column == column)]
    return float(sel.value.iloc[0]) if len(sel) else np.nan


def _xy(values: pd.DataFrame, row: str, column: str) -> tuple[np.ndarray, np.ndarray]:
    sel = values[(values.row == row) & (values.column == column)].sort_values("x")
    return sel.x.to_numpy(), sel.value.to_numpy()


def render_binary_calibration(exp: BinaryCalibration, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Top: true reliability (dashed) and the fitted map; bottom: reliability after calibration."""
    rows = 1 if exp.calibrator is None else 2
    with figure_style():
        fig, axes = subplots(rows, len(exp.models), figsize=(3.3 * len(exp.models), 3.3 * rows), layout="constrained")
        axes = np.atleast_2d(axes)
        for k, model in enumerate(exp.models):
            top = axes[0, k]
            reliability_curve(top, *_xy(values, model, "reliability raw"), label="reliability", color="tab:blue")
            ece = _scalar(values, model, "ECE raw")
            if exp.calibrator is not None:
                reliability_curve(top, *_xy(values, model, "map"), label=f"{exp.calibrator} map", color="red")
                bottom = axes[1, k]
                x, y = _xy(values, model, "reliability calibrated")
                reliability_curve(bottom, x, y, color="tab:green", marker=".", label="after calibration")
                bottom.set_title(f"after: ECE {_scalar(values, model, 'ECE calibrated'):.3f}")
                bottom.set_xlabel("calibrated score")
            top.set_title(f"{MODEL_TITLES.get(model, model)}: ECE {ece:.3f}")
            top.set_xlabel("score s")
            top.legend(loc="upper left", fontsize=7)
        fig.suptitle(exp.title)
        return save_figure(fig, stem)


def multiclass_calibration(exp: MulticlassCalibration, data: DataSources) -> list[dict]:
    """Figs. 17-20: the change g_j(s) - s_j over the simplex and classwise reliability after calibration."""
    d = exp.data
    (_, _), (_, y_cal), (_, y_test) = _splits(3, d.train, d.calibration, d.test, d.seed)
    cal, test = _model_probs("mlp", d, 3, "calibration"), _model_probs("mlp", d, 3, "test")
    fitted = _calibrator(exp.calibrator).fit(_logs(cal), y_cal, kind="logprobs")
    points = simplex_grid(exp.simplex_resolution)
    change = fitted.predict_proba(np.log(points), kind="logprobs") - points
    after = fitted.predict_proba(_logs(test), kind="logprobs")
    records = []
    for j in range(3):
        records += [{"row": "simplex", "column": f"s{j + 1}", "x": i, "value": v} for i, v in enumerate(points[:, j])]
        records += [
            {"row": "simplex", "column": f"change{j + 1}", "x": i, "value": v} for i, v in enumerate(change[:, j])
        ]
        for stage, probs in (("raw", test), ("calibrated", after)):
            bins = reliability_bins(probs[:, j], y_test == j, n_bins=exp.n_bins)
            records += _curve_records(f"class {j + 1}", f"reliability {stage}", bins, exp.min_count)
    records += [
        {
            "row": "all",
            "column": "classwise ECE raw",
            "value": BinnedCalibrationError("classwise", n_bins=15)(test, y_test, kind="probs"),
        },
        {
            "row": "all",
            "column": "classwise ECE calibrated",
            "value": BinnedCalibrationError("classwise", n_bins=15)(after, y_test, kind="probs"),
        },
        {"row": "all", "column": "NLL raw", "value": cross_entropy(_logs(test), y_test, kind="logprobs")},
        {"row": "all", "column": "NLL calibrated", "value": cross_entropy(_logs(after), y_test, kind="logprobs")},
        {"row": "all", "column": "accuracy raw", "value": float(np.mean(test.argmax(1) == y_test))},
        {"row": "all", "column": "accuracy calibrated", "value": float(np.mean(after.argmax(1) == y_test))},
    ]
    return records


def render_multiclass_calibration(exp: MulticlassCalibration, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Top: one simplex map per class; bottom: classwise reliability before (dashed) and after calibration."""
    simplex = values[values.row == "simplex"]
    points = np.column_stack([simplex[simplex.column == f"s{j + 1}"].sort_values("x").value for j in range(3)])
    changes = [simplex[simplex.column == f"change{j + 1}"].sort_values("x").value.to_numpy() for j in range(3)]
    limit = max(float(np.max(np.abs(c))) for c in changes)
    with figure_style():
        fig, axes = subplots(2, 3, figsize=(10, 6.4), layout="constrained")
        for j in range(3):
            image = simplex_map(axes[0, j], points, changes[j], limit=limit)
            axes[0, j].set_title(f"class {j + 1}: $g_{j + 1}(s) - s_{j + 1}$")
            bottom = axes[1, j]
            reliability_curve(bottom, *_xy(values, f"class {j + 1}", "reliability raw"), color="grey", linestyle="--")
            reliability_curve(
                bottom, *_xy(values, f"class {j + 1}", "reliability calibrated"), color="tab:blue", marker="."
            )
            bottom.set_xlabel(f"$s_{j + 1}$")
        fig.colorbar(image, ax=axes[0, :], shrink=0.7)
        ece_raw = _scalar(values, "all", "classwise ECE raw")
        ece_cal = _scalar(values, "all", "classwise ECE calibrated")
        fig.suptitle(f"{exp.title}: classwise ECE {ece_raw:.3f} -> {ece_cal:.3f}")
        return save_figure(fig, stem)


ClassIndex = Annotated[int, Integer(minimum=0)]


@dataclass(frozen=True, kw_only=True)
class Table(Parameters):
    """A table laid out from its values, its first column headed ``index_name``."""

    index_name: str = "row"


@dataclass(frozen=True, kw_only=True)
class BinnedTable(Table):
    """A table of the worked examples with ``n_bins`` equal-width bins."""

    n_bins: Count


@dataclass(frozen=True, kw_only=True)
class ToyBinsTable(BinnedTable):
    """The worked example's bins of class ``target`` against the rest, or of the confidence (``confidence``)."""

    target: ClassIndex | Literal["confidence"]


@dataclass(frozen=True, kw_only=True)
class HallenbeckDiagrams(Parameters):
    """Figs. 1-2: Hallenbeck's forecasts binned into each of ``n_bins``, drawn in the ``style`` of either figure."""

    n_bins: list[Count]
    style: Literal["fig1", "fig2"]


@dataclass(frozen=True, kw_only=True)
class EceAgainstBins(Parameters):
    """The top-label ECE of a real ``set`` with each of ``n_bins`` equal-width and equal-mass bins."""

    set: RealSet
    n_bins: list[Count]


@dataclass(frozen=True, kw_only=True)
class ToyDiagrams(Parameters):
    """Reliability diagrams of the worked example, one per class or the confidence of ``targets``."""

    n_bins: Count
    targets: list[ClassIndex | Literal["confidence"]]


@dataclass(frozen=True, kw_only=True)
class ResamplingNull(Parameters):
    """The resampling test's null distribution: ``n_resamples`` per seed, over ``n_seeds`` seeds from ``seed``."""

    n_bins: Count
    n_resamples: Count
    n_seeds: Count
    seed: Seed


@dataclass(frozen=True, kw_only=True)
class SurveyDensities(Parameters):
    """The survey's synthetic class densities on ``n_points`` from ``x_min`` to ``x_max``."""

    n_points: Count
    x_min: float
    x_max: float


@dataclass(frozen=True, kw_only=True)
class SurveyData:
    """Sizes of the seeded train, calibration and test samples of the survey's synthetic data."""

    train: Count
    calibration: Count
    test: Count
    seed: Seed


@dataclass(frozen=True, kw_only=True)
class BinaryCalibration(Parameters):
    """Figs. 12-17: reliability of each of ``models`` before and after ``calibrator`` (none: before only)."""

    data: SurveyData
    models: list[Literal[tuple(MODEL_TITLES)]]
    calibrator: Annotated[str, Choice(tuple(CALIBRATORS))] | None = None
    n_bins: Count
    min_count: Count
    grid_points: Count


@dataclass(frozen=True, kw_only=True)
class MulticlassCalibration(Parameters):
    """Figs. 18-21: ``calibrator``'s map over the simplex (``simplex_resolution``) and classwise reliability."""

    data: SurveyData
    calibrator: Annotated[str, Choice(tuple(CALIBRATORS))]
    n_bins: Count
    min_count: Count
    simplex_resolution: Count


def ece_against_bins(exp: EceAgainstBins, data: DataSources) -> list[dict]:
    """Silva Filho et al. (2023), end of Sect. 4 (and Figs. 1-2): binned ECE estimates "can provide very
    different values given different number of bins"; here the top-label ECE of a real set against the
    number of bins, with width and frequency binning (Sect. 4's two methods), the rows weighted by the set's
    sample weights if it has them (issue 56)."""
    pset = data.real(exp.set)
    logp = pset.logprobs()
    return [
        {
            "row": f"{short} binning",
            "column": "ECE",
            "x": n_bins,
            "value": BinnedCalibrationError("top_label", n_bins=n_bins, strategy=strategy)(
                logp, pset.labels, kind="logprobs", sample_weight=pset.weights
            ),
        }
        for short, strategy in (("width", "equal-width"), ("mass", "equal-mass"))
        for n_bins in exp.n_bins
    ]


def render_ece_against_bins(exp: EceAgainstBins, values: pd.DataFrame, stem: Path) -> list[Path]:
    """One curve per binning, the number of bins on a log axis."""
    with figure_style():
        fig, ax = subplots(figsize=(4.8, 3.4), layout="constrained")
        ordered = values.sort_values("x")
        curves = {row: sel.value.to_numpy() for row, sel in ordered.groupby("row", sort=False)}
        line_curves(ax, np.sort(np.unique(ordered.x)), curves, xlabel="number of bins", ylabel="top-label ECE")
        ax.set_xscale("log")
        ax.set_title(textwrap.fill(exp.title, 60), fontsize=9)
        return save_figure(fig, stem)


KINDS = (
    Kind("hallenbeck_table", Table, hallenbeck_table, render_values_table, is_table=True),
    Kind("hallenbeck_diagrams", HallenbeckDiagrams, hallenbeck_diagrams, render_hallenbeck_diagrams),
    Kind("marker_pitfall", Parameters, marker_pitfall_bins, render_marker_pitfall),
    Kind("toy_data_table", Table, toy_data_table, render_values_table, is_table=True),
    Kind("toy_bins_table", ToyBinsTable, toy_bins_table, render_values_table, is_table=True),
    Kind("toy_summary_table", BinnedTable, toy_summary_table, render_values_table, is_table=True),
    Kind("toy_diagrams", ToyDiagrams, toy_diagrams, render_toy_diagrams),
    Kind("ece_against_bins", EceAgainstBins, ece_against_bins, render_ece_against_bins),
    Kind("decomposition_table", Table, decomposition_table, render_values_table, is_table=True),
    Kind("hosmer_lemeshow_table", BinnedTable, hosmer_lemeshow_table, render_values_table, is_table=True),
    Kind("resampling_null", ResamplingNull, resampling_null, render_resampling_null, own_job=True),
    Kind("survey_densities", SurveyDensities, survey_densities, render_survey_densities),
    Kind("binary_calibration", BinaryCalibration, binary_calibration, render_binary_calibration),
    Kind("multiclass_calibration", MulticlassCalibration, multiclass_calibration, render_multiclass_calibration),
)
