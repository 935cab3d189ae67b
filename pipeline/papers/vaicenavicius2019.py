"""The experiment kinds of Vaicenavicius et al. (2019), "Evaluating model calibration in classification".

Artifacts: the finite counterexamples between the notions of calibration (Tables 1-2, Figs. 2 and
5); the Gaussian-mixture study (expected miscalibration by quadrature, estimator bias against the
sample size, Figs. 6-13; reliability diagrams with consistency bars and the analytic curve, Figs.
8, 11, 14); the CIFAR-10 protocol of Tables 3-5 and Figs. 1, 4, 15-18 on the models we have; and
Fig. 3 (the consistency p-value during training) as an experiment of its own on scikit-learn's
digits.

scikit-learn and the calibrators are imported inside the functions that use them: a command or job that never
calls them starts without loading them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
import pandas as pd

from calib.calibration_errors.lenses import Canonical, ClassGroups, TopK, induced_deviation, marginal_lens
from calib.calibration_errors.miscalibration import DISTANCES, batch_estimates, cell_statistics
from calib.calibration_errors.simplex_binning import DataDependent, Triangles, UniformGrid
from calib.data.gaussian_mixture import MODELS, LogisticModel, sample
from calib.data.notion_examples import finite_model
from calib.plots.reliability import deviation_diagram as draw_deviations
from calib.plots.reliability import simplex_arrows
from calib.plots.style import figure_style, save_figure, subplots
from calib.resampling.significance import deviation_diagram, miscalibration_resampling
from calib.validation import Choice, Integer
from pipeline.io import write_table
from pipeline.kinds import Kind, Parameters
from pipeline.parameters import Count, Fraction, Invalid, Positive, Seed
from pipeline.sources import DataSources, RealSet
from pipeline.values_table import render_values_table

LENSES = {"canonical": ("Canonical", Canonical()), "maximum": ("Maximum", TopK(1))}
BINNINGS = {"equal": "Equal", "dd": "Data-dep."}
DIAGRAM_FIELDS = ("share", "extent_low", "extent_high")
Model = Annotated[str, Choice(tuple(MODELS))]
Distance = Annotated[str, Choice(DISTANCES)]
Binning = Literal[tuple(BINNINGS)]


@dataclass(frozen=True, kw_only=True)
class Notions(Parameters):
    """Tables 1-2, Figs. 2 and 5: the finite model of ``example`` (``table1`` or ``table2``)."""

    example: Literal["table1", "table2"]


@dataclass(frozen=True, kw_only=True)
class GmmEta(Parameters):
    """Expected miscalibration of each of ``models`` in each of ``distances``: by quadrature, and estimated
    from ``n_samples`` draws with each of ``n_bins``."""

    models: list[Model]
    distances: list[Distance]
    n_bins: list[Count]
    n_samples: Count
    seed: Seed


@dataclass(frozen=True, kw_only=True)
class GmmBias(Parameters):
    """Figs. 6-13: the estimator's bias against the sample size (``sizes``), ``n_series`` seeded series."""

    model: Model
    n_bins: Count
    n_series: Count
    sizes: list[Count]
    seed: Seed


@dataclass(frozen=True, kw_only=True)
class _Binned(Parameters):
    """Equal bins (``n_bins`` per coordinate) and data-dependent ones (``min_size`` samples at least)."""

    binnings: list[Binning]
    n_bins: Count
    min_size: Count
    n_resamples: Count
    n_bootstrap: Count
    n_consistency: Count
    seed: Seed


@dataclass(frozen=True, kw_only=True)
class DeviationDiagrams(_Binned):
    """Figs. 4, 8, 11, 14-17: deviation diagrams of a Gaussian-mixture ``model`` (``n_samples`` draws) or of
    a real ``set``, with consistency bars from ``n_resamples`` resamples."""

    model: Model | None = None
    n_samples: Count | None = None
    set: RealSet | None = None

    def __post_init__(self):
        if (self.model is None) == (self.set is None):
            raise Invalid("set", "give either set (a real posterior set) or model (a Gaussian-mixture model)")
        if self.model is not None and self.n_samples is None:
            raise Invalid("n_samples", "a model needs n_samples (its draws)")


@dataclass(frozen=True, kw_only=True)
class MiscalibrationTable(_Binned):
    """Tables 3-5: each of ``distances`` (label -> distance) through each of ``lenses``, with bootstrap and
    consistency resamples; with ``temperature_scaled``, after temperature scaling fitted on the first
    ``calibration_fraction`` of ``set``."""

    set: RealSet
    lenses: list[Literal[tuple(LENSES)]]
    distances: dict[str, Distance]
    temperature_scaled: bool = False
    calibration_fraction: Fraction | None = None

    def __post_init__(self):
        if self.temperature_scaled and self.calibration_fraction is None:
            raise Invalid("calibration_fraction", "temperature_scaled needs the calibration_fraction it fits on")


@dataclass(frozen=True, kw_only=True)
class GroupSimplexDiagrams(Parameters):
    """Figs. 1, 18: ``set`` seen through class ``groups`` on a simplex of ``ks`` bins per side."""

    set: RealSet
    groups: list[list[Annotated[int, Integer(minimum=0)]]]
    ks: list[Count]


@dataclass(frozen=True, kw_only=True)
class TrainingPvalues(Parameters):
    """Fig. 3: the consistency test's p-value during training of ``n_runs`` MLPs on scikit-learn's digits."""

    n_runs: Count
    epochs: Count
    hidden: list[Count]
    learning_rate: Positive
    batch_size: Count
    weight_decay: float
    test_fraction: Fraction
    validation_fraction: Fraction
    split_seed: Seed
    n_bins: Count
    n_resamples: Count
    seed: Seed


def _binning(exp: _Binned, scheme: str):
    return UniformGrid(exp.n_bins) if scheme == "equal" else DataDependent(exp.min_size)


def _probs(data: DataSources, name: str, scaled_after: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The real set ``name`` as probabilities; with ``scaled_after``, its first ``scaled_after`` fraction fits
    temperature scaling and the rest, so calibrated, is returned."""
    pset = data.real(name)
    logp, labels = pset.logprobs(), pset.labels
    if scaled_after is None:
        return np.exp(logp), labels
    from calib.calibrators import TemperatureScaling

    n_fit = int(round(scaled_after * labels.size))
    scaler = TemperatureScaling().fit(logp[:n_fit], labels[:n_fit], kind="logprobs")
    return scaler.predict_proba(logp[n_fit:], kind="logprobs"), labels[n_fit:]


# Tables 1-2, Figs. 2 and 5 -------------------------------------------------------------------------


def _notion_lenses(n_classes: int) -> dict:
    lenses = {"canonical (eq. 1)": Canonical(), "maximum (eq. 2)": TopK(1)}
    lenses |= {f"marginal, class {c + 1} (eq. 3)": marginal_lens(c, n_classes) for c in range(n_classes)}
    return lenses


def calibration_notions(exp: Notions, data: DataSources) -> list[dict]:
    """Tables 1-2: the atoms g(X) and P[Y | g(X)], and max |r_psi - id| under each lens (0 = calibrated)."""
    model = finite_model(exp.example)
    records = []
    for i, (g, r) in enumerate(zip(model.predictions, model.conditionals, strict=True)):
        records += [{"row": f"atom {i + 1}", "column": f"g_{j + 1}", "value": v} for j, v in enumerate(g)]
        records += [{"row": f"atom {i + 1}", "column": f"r_{j + 1}", "value": v} for j, v in enumerate(r)]
    for label, lens in _notion_lenses(model.predictions.shape[1]).items():
        deviation = induced_deviation(lens, model.predictions, model.conditionals, model.weights)
        records.append({"row": label, "column": "max deviation", "value": deviation})
        records.append({"row": label, "column": "calibrated", "value": float(deviation < 1e-12)})
    return records


def _deviation_shown(value: float) -> str:
    return f"{value:.3g}" if value >= 1e-12 else "0 (< 1e-12)"


def render_calibration_notions(exp: Notions, values: pd.DataFrame, stem: Path) -> list[Path]:
    """The atoms as in the paper, then one line per notion: its largest deviation and yes / no."""
    wide = values.pivot(index="row", columns="column", values="value")
    atoms = [r for r in values.row.unique() if r.startswith("atom")]
    lenses = [r for r in values.row.unique() if not r.startswith("atom")]

    def vector(row, prefix):
        return "(" + ", ".join(f"{wide.loc[row, f'{prefix}_{j}']:.1f}" for j in (1, 2, 3)) + ")"

    lines = [[row, vector(row, "g"), vector(row, "r"), ""] for row in atoms]
    lines += [
        [row, "", _deviation_shown(wide.loc[row, "max deviation"]), "yes" if wide.loc[row, "calibrated"] else "no"]
        for row in lenses
    ]
    table = pd.DataFrame(lines, columns=["", "g(X)", "P[Y | g(X)] / max |r - id|", "calibrated"])
    return write_table(stem, table, exp.title)


def render_notion_simplex(exp: Notions, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Figs. 2 and 5: each prediction g(X) on the simplex with an arrow to P[Y | g(X)]."""
    wide = values.pivot(index="row", columns="column", values="value")
    atoms = sorted(r for r in values.row.unique() if r.startswith("atom"))
    g = wide.loc[atoms, ["g_1", "g_2", "g_3"]].to_numpy()
    r = wide.loc[atoms, ["r_1", "r_2", "r_3"]].to_numpy()
    with figure_style():
        fig, ax = subplots(figsize=(3.6, 3.4), layout="constrained")
        simplex_arrows(ax, g, r, names=("class 1", "class 2", "class 3"), marks=True)
        ax.set_title(exp.title.replace(", ", "\n", 1), fontsize=8)
        return save_figure(fig, stem)


# The Gaussian mixture: expected miscalibration, bias studies, reliability diagrams ---------------


def gmm_eta(exp: GmmEta, data: DataSources) -> list[dict]:
    """eta_d by quadrature, the Theorem 2 limits of equal bins, and the estimator on a large sample."""
    rng = np.random.default_rng(exp.seed)
    records = []
    for name in exp.models:
        model = LogisticModel.named(name)
        probs, labels = sample(model, exp.n_samples, rng)
        for d in exp.distances:
            records.append({"row": name, "column": f"eta_{d}", "value": model.expected_miscalibration(d)})
        for m in exp.n_bins:
            records.append({"row": name, "column": f"limit_{m}", "value": model.fixed_partition_limit(m)})
            ids, n_cells = UniformGrid(m).cells(probs)
            estimate = cell_statistics(probs, labels, ids, n_cells).estimate("tv")
            records.append({"row": name, "column": f"estimate_{m}", "value": estimate})
    return records


def gmm_bias(exp: GmmBias, data: DataSources) -> list[dict]:
    """Figs. 6-13: 5th percentile, mean and 95th percentile of eta_hat_TV - eta_TV over nested series.

    Each of the ``n_series`` series is one draw of max(sizes) points; the estimate at size n uses its
    first n points, so the curves follow each series as it grows (the paper's "series of random data").
    """
    model = LogisticModel.named(exp.model)
    eta = model.expected_miscalibration("tv")
    sizes = sorted(exp.sizes)
    probs, labels = sample(model, exp.n_series * sizes[-1], np.random.default_rng(exp.seed))
    ids, n_cells = UniformGrid(exp.n_bins).cells(probs)
    series = np.arange(exp.n_series)[:, None] * sizes[-1]
    records = [
        {"row": "eta", "column": "eta", "value": eta},
        {"row": "eta", "column": "limit", "value": model.fixed_partition_limit(exp.n_bins)},
    ]
    for n in sizes:
        rows = series + np.arange(n)
        errors = batch_estimates(probs, ids, n_cells, rows, labels[rows], ("tv",))[:, 0] - eta
        p5, p95 = np.percentile(errors, [5, 95])
        for column, value in (("p5", p5), ("mean", errors.mean()), ("p95", p95)):
            records.append({"row": "bias", "column": column, "x": n, "value": value})
    return records


def render_gmm_bias(exp: GmmBias, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Percentile band and mean of eta_hat - eta against n (log axis), with the Theorem 2 limit."""
    bias = values[values.row == "bias"].pivot(index="x", columns="column", values="value")
    eta = values.loc[values.column == "eta", "value"].iloc[0]
    limit = values.loc[values.column == "limit", "value"].iloc[0]
    with figure_style():
        fig, ax = subplots(figsize=(4.2, 3.0), layout="constrained")
        ax.fill_between(bias.index, bias.p5, bias.p95, color="tab:blue", alpha=0.25, label="5th-95th percentile")
        ax.plot(bias.index, bias["mean"], "o-", color="tab:blue", markersize=3, label="mean")
        ax.axhline(0.0, color="grey", linewidth=0.8)
        if abs(limit - eta) > 1e-4:
            ax.axhline(limit - eta, color="red", linestyle="--", linewidth=1, label="fixed-partition limit (Thm. 2)")
        ax.set_xscale("log")
        ax.set_xlabel("number of samples n")
        ax.set_ylabel(r"$\hat\eta_{TV} - \eta_{TV}$")
        ax.set_title(exp.title.replace(", ", "\n", 1), fontsize=8)
        ax.legend(fontsize=7)
        return save_figure(fig, stem)


def _diagram_records(panel: str, diagram) -> list[dict]:
    records = []
    for i, x in enumerate(diagram.mean_prediction):
        records.append(
            {
                "row": panel,
                "column": "deviation",
                "x": x,
                "value": diagram.deviation[i],
                "ci_low": diagram.low[i],
                "ci_high": diagram.high[i],
            }
        )
        for field, value in zip(DIAGRAM_FIELDS, (diagram.share[i], *diagram.extent[i]), strict=True):
            records.append({"row": panel, "column": field, "x": x, "value": value})
    return records


def deviation_diagrams(exp: DeviationDiagrams, data: DataSources) -> list[dict]:
    """Figs. 4, 8, 11, 14-17: 1-D deviation diagrams, equal and data-dependent bins, consistency bars.

    A Gaussian-mixture ``model`` is sampled (class -1 probability, canonical lens) and its analytic
    deviation r_1(mu) - mu is added; a real ``set`` is seen through the maximum lens (confidence).
    """
    if exp.model is not None:
        model = LogisticModel.named(exp.model)
        probs, labels = sample(model, exp.n_samples, np.random.default_rng(exp.seed))
        lens = Canonical()
    else:
        probs, labels = _probs(data, exp.set)
        lens = TopK(1)
    records = []
    for scheme in exp.binnings:
        diagram = deviation_diagram(
            probs,
            labels,
            kind="probs",
            lens=lens,
            binning=_binning(exp, scheme),
            n_resamples=exp.n_resamples,
            seed=exp.seed,
        )
        records += _diagram_records(scheme, diagram)
    if exp.model is not None and model.beta1 != 0.0:
        grid = np.linspace(0.005, 0.995, 199)
        curve = model.calibration_function(grid) - grid
        records += [
            {"row": "analytic", "column": "deviation", "x": x, "value": v} for x, v in zip(grid, curve, strict=True)
        ]
    return records


def render_deviation_diagrams(exp: DeviationDiagrams, values: pd.DataFrame, stem: Path) -> list[Path]:
    """One panel per binning scheme; the green curve is the analytic deviation where it is known."""
    xlabel = "mean prediction of class -1" if exp.model is not None else "mean confidence (maximum lens)"
    with figure_style():
        fig, axes = subplots(1, len(exp.binnings), figsize=(4.0 * len(exp.binnings), 3.2), layout="constrained")
        for ax, scheme in zip(np.atleast_1d(axes), exp.binnings, strict=True):
            cells = values[values.row == scheme].pivot(index="x", columns="column")
            dev = cells.value.deviation
            analytic = values[values.row == "analytic"]
            if len(analytic):
                ax.plot(analytic.x, analytic.value, color="green", linewidth=1.2, label="analytic")
            draw_deviations(
                ax,
                dev.index.to_numpy(),
                dev.to_numpy(),
                low=cells.ci_low.deviation.to_numpy(),
                high=cells.ci_high.deviation.to_numpy(),
                share=cells.value.share.to_numpy(),
                extent=cells.value[["extent_low", "extent_high"]].to_numpy(),
                xlabel=xlabel,
            )
            name = f"{exp.n_bins} equal bins" if scheme == "equal" else f"data-dependent bins (min size {exp.min_size})"
            ax.set_title(f"({'ab'[list(exp.binnings).index(scheme)]}) {name}", fontsize=9)
        np.atleast_1d(axes)[0].legend(fontsize=7, loc="best")
        fig.suptitle(f"{exp.title} ({exp.n_resamples} consistency resamples)", fontsize=9)
        return save_figure(fig, stem)


# CIFAR-10: Tables 3-5 protocol and the simplex diagrams -----------------------------------------


def miscalibration_table(exp: MiscalibrationTable, data: DataSources) -> list[dict]:
    """Tables 3-5: eta_hat +- pair-bootstrap sd and the null mean +- sd with p-values, from the paper's
    consistency resampling and from labels redrawn with the predictions kept."""
    probs, labels = _probs(data, exp.set, exp.calibration_fraction if exp.temperature_scaled else None)
    records = [{"row": "accuracy", "column": "accuracy", "value": float(np.mean(probs.argmax(axis=1) == labels))}]
    names = list(exp.distances.values())
    for lens_key in exp.lenses:
        lens_label, lens = LENSES[lens_key]
        for scheme in exp.binnings:
            common = {"kind": "probs", "binning": _binning(exp, scheme), "distances": names, "lens": lens}
            print(f"evaluate: {lens_label} lens, {BINNINGS[scheme]} bins", flush=True)
            boot = miscalibration_resampling(
                probs, labels, method="bootstrap", n_resamples=exp.n_bootstrap, seed=exp.seed, **common
            )
            null = miscalibration_resampling(
                probs, labels, method="consistency", n_resamples=exp.n_consistency, seed=exp.seed + 1, **common
            )
            given = miscalibration_resampling(
                probs, labels, method="labels", n_resamples=exp.n_consistency, seed=exp.seed + 2, **common
            )
            for k, label in enumerate(exp.distances):
                row = f"{lens_label} {label}"
                fields = {
                    "eta": boot.observed[k],
                    "eta_sd": boot.sd[k],
                    "null": null.mean[k],
                    "null_sd": null.sd[k],
                    "p": null.p_value[k],
                    "p_plus_one": null.p_value_plus_one[k],
                    "labels_null": given.mean[k],
                    "labels_null_sd": given.sd[k],
                    "labels_p": given.p_value[k],
                }
                records += [{"row": row, "column": f"{scheme}_{f}", "value": v} for f, v in fields.items()]
    return records


def render_miscalibration_table(exp: MiscalibrationTable, values: pd.DataFrame, stem: Path) -> list[Path]:
    """The paper's layout (eta_hat +- sd, eta_hat^id +- sd per binning) plus the consistency p-values."""
    wide = values.pivot(index="row", columns="column", values="value")
    accuracy = wide.loc["accuracy", "accuracy"]
    rows = [f"{LENSES[lens][0]} {label}" for lens in exp.lenses for label in exp.distances]
    lines = []
    for row in rows:
        lens, label = row.split(" ", 1)
        line = [lens, label]
        for scheme in exp.binnings:
            cell = wide.loc[row]
            line += [
                f"{cell[f'{scheme}_eta']:.3f} ± {cell[f'{scheme}_eta_sd']:.3f}",
                f"{cell[f'{scheme}_null']:.3f} ± {cell[f'{scheme}_null_sd']:.3f}",
                f"{cell[f'{scheme}_p']:.3f}",
                f"{cell[f'{scheme}_labels_null']:.3f} ± {cell[f'{scheme}_labels_null_sd']:.3f}",
                f"{cell[f'{scheme}_labels_p']:.3f}",
            ]
        lines.append(line)
    columns = ["Lens", "Distance"] + [
        f"{BINNINGS[s]}: {c}"
        for s in exp.binnings
        for c in ("η̂", "η̂^id (consistency)", "p", "η̂^id (labels only)", "p (labels only)")
    ]
    caption = (
        f"{exp.title}; accuracy {accuracy:.3f}; {exp.n_bootstrap} pair-bootstrap and {exp.n_consistency} "
        f"consistency resamples; {exp.n_bins} equal bins per coordinate, data-dependent bins of min size "
        f"{exp.min_size}. 'Squared Euclidean' is the paper's label; as in its tables it is computed as ||.||_2. "
        "η̂^id is the mean ± sd of η̂ under H0 'calibrated': the paper's consistency resampling (predictions "
        "bootstrapped, labels drawn from them), and labels redrawn with the predictions kept, which is not biased "
        "low when cells hold one or two predictions (calib.resampling.significance.miscalibration_resampling)."
    )
    return write_table(stem, pd.DataFrame(lines, columns=columns), caption)


def group_simplex_diagrams(exp: GroupSimplexDiagrams, data: DataSources) -> list[dict]:
    """Figs. 1, 16, 18: the 3-group lens, k^2 equal triangles; share, mean prediction and frequency per cell."""
    probs, labels = _probs(data, exp.set)
    problem = ClassGroups(tuple(tuple(g) for g in exp.groups))(probs, labels, kind="probs")
    records = []
    for k in exp.ks:
        ids, n_cells = Triangles(k).cells(problem.probs)
        stats = cell_statistics(problem.probs, problem.labels, ids, n_cells)
        for cell in range(n_cells):
            fields = {"share": stats.share[cell]}
            fields |= {f"mean_{j}": stats.mean_prediction[cell, j] for j in range(3)}
            fields |= {f"freq_{j}": stats.frequency[cell, j] for j in range(3)}
            records += [{"row": f"k={k}", "column": f, "x": cell, "value": v} for f, v in fields.items()]
    return records


def render_group_simplex_diagrams(exp: GroupSimplexDiagrams, values: pd.DataFrame, stem: Path) -> list[Path]:
    """One simplex per k: cells coloured by share, arrows from mean prediction to outcome frequency."""
    names = ["{" + ",".join(str(c) for c in g) + "}" for g in exp.groups]
    with figure_style():
        fig, axes = subplots(1, len(exp.ks), figsize=(4.2 * len(exp.ks), 3.8), layout="constrained")
        for ax, k in zip(np.atleast_1d(axes), exp.ks, strict=True):
            cells = values[values.row == f"k={k}"].pivot(index="x", columns="column", values="value").sort_index()
            share = cells.share.to_numpy()
            mapping = simplex_arrows(
                ax,
                cells[["mean_0", "mean_1", "mean_2"]].to_numpy()[share > 0],
                cells[["freq_0", "freq_1", "freq_2"]].to_numpy()[share > 0],
                names=names,
                cells=Triangles(k).vertices(),
                share=share,
            )
            fig.colorbar(mapping, ax=ax, shrink=0.7, label="share of predictions")
            ax.set_title(f"{k * k} equal bins", fontsize=9, pad=16)
        fig.suptitle(exp.title, fontsize=9)
        return save_figure(fig, stem)


# Fig. 3: the consistency p-value during training -------------------------------------------------

TRAINING_METRICS = {"nll": "test NLL", "accuracy": "test accuracy", "ece": "test ECE", "p_value": "test pECE"}


def _digits_splits(exp: TrainingPvalues):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x = x / 16.0
    rest_x, test_x, rest_y, test_y = train_test_split(
        x, y, test_size=exp.test_fraction, stratify=y, random_state=exp.split_seed
    )
    train_x, val_x, train_y, val_y = train_test_split(
        rest_x,
        rest_y,
        test_size=exp.validation_fraction / (1 - exp.test_fraction),
        stratify=rest_y,
        random_state=exp.split_seed,
    )
    return (train_x, train_y), (val_x, val_y), (test_x, test_y)


def training_pvalues(exp: TrainingPvalues, data: DataSources) -> list[dict]:
    """Fig. 3 as an experiment: an MLP trained epoch by epoch on digits, one run per initialization seed.

    After every epoch (one ``partial_fit`` pass) the test split gets NLL, accuracy, ECE (maximum
    lens, TV, equal bins) and the consistency p-value of that ECE; the validation NLL picks each
    run's checkpoint (the paper's asterisk).
    """
    from sklearn.neural_network import MLPClassifier

    from calib.scoring.scores import cross_entropy

    (train_x, train_y), (val_x, val_y), (test_x, test_y) = _digits_splits(exp)
    classes = np.unique(train_y)
    records = []
    for run in range(exp.n_runs):
        print(f"evaluate: training run {run + 1}/{exp.n_runs}", flush=True)
        net = MLPClassifier(
            hidden_layer_sizes=tuple(exp.hidden),
            learning_rate_init=exp.learning_rate,
            batch_size=exp.batch_size,
            alpha=exp.weight_decay,
            random_state=run,
        )
        for epoch in range(1, exp.epochs + 1):
            net.partial_fit(train_x, train_y, classes=classes)
            test = net.predict_proba(test_x)
            test_stat = miscalibration_resampling(
                test,
                test_y,
                kind="probs",
                lens=TopK(1),
                binning=UniformGrid(exp.n_bins),
                method="consistency",
                n_resamples=exp.n_resamples,
                seed=exp.seed + epoch,
            )
            metrics = {
                "val_nll": cross_entropy(net.predict_proba(val_x), val_y, kind="probs"),
                "nll": cross_entropy(test, test_y, kind="probs"),
                "accuracy": float(np.mean(test.argmax(axis=1) == test_y)),
                "ece": float(test_stat.observed[0]),
                "p_value": float(test_stat.p_value[0]),
            }
            records += [{"row": f"run {run + 1}", "column": c, "x": epoch, "value": v} for c, v in metrics.items()]
    return records


def render_training_pvalues(exp: TrainingPvalues, values: pd.DataFrame, stem: Path) -> list[Path]:
    """Four panels against the epoch, one line per run; stars mark each run's minimum validation NLL."""
    with figure_style():
        fig, axes = subplots(1, 4, figsize=(11, 2.8), layout="constrained")
        for i, (run, frame) in enumerate(values.groupby("row", sort=True)):
            wide = frame.pivot(index="x", columns="column", values="value")
            best = wide.val_nll.idxmin()
            for ax, (column, label) in zip(axes, TRAINING_METRICS.items(), strict=True):
                ax.plot(wide.index, wide[column], color=f"C{i}", linewidth=1, label=run)
                ax.plot(best, wide.loc[best, column], "*", color=f"C{i}", markersize=10, markeredgecolor="black")
                ax.set_xlabel("epoch")
                ax.set_title(label, fontsize=9)
        axes[1].set_ylim(top=1.0)
        axes[3].axhline(0.05, color="grey", linestyle="--", linewidth=0.8)
        axes[3].set_ylim(-0.02, 1.02)
        axes[0].legend(fontsize=7)
        fig.suptitle(f"{exp.title}; * = minimum validation NLL", fontsize=9)
        return save_figure(fig, stem)


KINDS = (
    Kind("calibration_notions", Notions, calibration_notions, render_calibration_notions, is_table=True),
    Kind("notion_simplex", Notions, calibration_notions, render_notion_simplex),
    Kind("gmm_eta", GmmEta, gmm_eta, render_values_table, is_table=True),
    Kind("gmm_bias", GmmBias, gmm_bias, render_gmm_bias),
    Kind("deviation_diagrams", DeviationDiagrams, deviation_diagrams, render_deviation_diagrams),
    Kind(
        "miscalibration_table",
        MiscalibrationTable,
        miscalibration_table,
        render_miscalibration_table,
        is_table=True,
        own_job=True,
    ),
    Kind("group_simplex_diagrams", GroupSimplexDiagrams, group_simplex_diagrams, render_group_simplex_diagrams),
    Kind("training_pvalues", TrainingPvalues, training_pvalues, render_training_pvalues, own_job=True),
)
