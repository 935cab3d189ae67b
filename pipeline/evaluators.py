"""Step bodies that turn datasets into tidy values, one function per experiment ``kind``.

Each evaluator takes the composed experiment config and the data sources, and returns a tidy
table (:data:`pipeline.io.VALUE_COLUMNS`): ``row`` and ``column`` name a cell as the paper's
artifact does (system x metric, reference x "system N=..."), ``x`` is the abscissa of curve
points, and values are fractions (percentages are applied only when rendering).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from omegaconf import DictConfig

from calib.bootstrap import bootstrap
from calib.decisions import bayes_decisions, check_costs
from calib.divergences import expected_divergence_to_constant
from calib.risk_curves import bayes_risk_curve
from calib.scores import brier, brier_losses, cross_entropy, semi_empirical_cross_entropy
from pipeline.companions import UPSTREAM
from pipeline.config import compose_config
from pipeline.named_metrics import MetricOptions, calibrated_posteriors, compute
from pipeline.sources import DataSources

CALIBRATOR_LETTERS = {"affcal": "D", "temcal": "T", "hiscal": "H"}


def _grid(spec: DictConfig) -> np.ndarray:
    if "step" in spec:
        return np.arange(spec.start, spec.stop, spec.step)
    return np.linspace(spec.start, spec.stop, spec.num)


def _options(exp: DictConfig) -> MetricOptions:
    return MetricOptions(**exp.options)


def _authors_folds(exp: DictConfig, extras: dict, system: str) -> dict | None:
    """The replayed folds of ``system`` when the experiment asks for them (``folds: authors``)."""
    if exp.get("folds") != "authors":
        return None
    folds = {key.rsplit("/", 1)[1]: ids for key, ids in extras.items() if key.startswith(f"folds/{system}/")}
    if not folds:
        raise ValueError(
            f"experiment {exp.paper}_{exp.artifact} asks for the authors' folds, but the dataset has "
            "none: set `rng: paper` in its dataset config or `folds: seeded` in the experiment"
        )
    return folds


def psr_curves(exp: DictConfig, data: DataSources) -> list[dict]:
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


def bayes_risk_curves(exp: DictConfig, data: DataSources) -> list[dict]:
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


def metric_panels(exp: DictConfig, data: DataSources) -> list[dict]:
    """Figs. 5-6: each named metric of each system (see :mod:`pipeline.named_metrics`).

    With ``upstream_rerun: true`` the calibration metrics are computed again the way the authors'
    code computes them (:mod:`pipeline.authors_code`, same folds), as their ``[upstream]`` companions.
    """
    labels, systems, extras = data.dataset(exp.datasets[0])
    options = _options(exp)
    reruns = [(f" {UPSTREAM}", replace(options, implementation="authors"))] if exp.get("upstream_rerun") else []
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


def semi_empirical_table(exp: DictConfig, data: DataSources) -> list[dict]:
    """Table 1: (NCE_emp - NCE_semi-emp) / NCE_emp with each reference posterior (Sec. 3.4)."""
    options = _options(exp)
    records = []
    for dataset in exp.datasets:
        labels, systems, extras = data.dataset(dataset)
        nominal_n = compose_config([f"dataset={dataset}"]).dataset.n_samples  # paper mode may drop a sample
        for system in exp.systems:
            logp = systems[system]
            folds = _authors_folds(exp, extras, system)
            empirical = cross_entropy(logp, labels, kind="logprobs", normalize=True)
            for ref in exp.references:
                if ref == "true":
                    reference = systems["cal"]
                else:
                    letter, protocol = CALIBRATOR_LETTERS[ref[:-2]], ref[-2:]
                    reference = calibrated_posteriors(letter, protocol, logp, labels, options, folds=folds)
                semi = semi_empirical_cross_entropy(
                    logp, reference, kind="logprobs", reference_kind="logprobs", normalize=True
                )
                records.append(
                    {"row": ref, "column": f"{system} N={nominal_n}", "value": (empirical - semi) / empirical}
                )
    return records


def divergence_curves(exp: DictConfig, data: DataSources) -> list[dict]:
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


def bootstrap_panels(exp: DictConfig, data: DataSources) -> list[dict]:
    """Fig. 8: percentile bootstrap CIs; calibrators refitted per resample, xv folds grouped by sample id."""
    labels, systems, _ = data.dataset(exp.datasets[0])
    options = _options(exp)
    names = [*exp.overall, *exp.calibration]
    records = []
    for system in exp.systems:

        def statistic(logp, y, groups):
            cache: dict = {}
            return [compute(name, logp, y, options, groups=groups, cache=cache) for name in names]

        print(f"evaluate: bootstrap of {system} ({exp.n_boot} resamples)", flush=True)
        result = bootstrap(statistic, systems[system], labels, n_boot=exp.n_boot, seed=exp.seed, alpha=exp.alpha)
        for i, name in enumerate(names):
            records.append(
                {
                    "row": system,
                    "column": name,
                    "value": result.estimate[i],
                    "ci_low": result.low[i],
                    "ci_high": result.high[i],
                }
            )
    return records


EVALUATORS = {
    "psr_curves": psr_curves,
    "bayes_risk_curves": bayes_risk_curves,
    "metric_panels": metric_panels,
    "semi_empirical_table": semi_empirical_table,
    "divergence_curves": divergence_curves,
    "bootstrap_panels": bootstrap_panels,
    "real_metrics_table": "pipeline.real_tables:real_metrics_table",
    "real_set_summary": "pipeline.real_tables:real_set_summary",
    "heldout_table": "pipeline.heldout_tables:heldout_table",
    "hallenbeck_table": "pipeline.survey_toys:hallenbeck_table",
    "hallenbeck_diagrams": "pipeline.survey_toys:hallenbeck_diagrams",
    "marker_pitfall": "pipeline.survey_toys:marker_pitfall_bins",
    "toy_data_table": "pipeline.survey_toys:toy_data_table",
    "toy_bins_table": "pipeline.survey_toys:toy_bins_table",
    "toy_summary_table": "pipeline.survey_toys:toy_summary_table",
    "toy_diagrams": "pipeline.survey_toys:toy_diagrams",
    "decomposition_table": "pipeline.survey_toys:decomposition_table",
    "hosmer_lemeshow_table": "pipeline.survey_toys:hosmer_lemeshow_table",
    "resampling_null": "pipeline.survey_toys:resampling_null",
    "survey_densities": "pipeline.survey_synthetic:survey_densities",
    "binary_calibration": "pipeline.survey_synthetic:binary_calibration",
    "multiclass_calibration": "pipeline.survey_synthetic:multiclass_calibration",
    "recalibration_table": "pipeline.reassessing:recalibration_table",
    "mrr_closed_form_check": "pipeline.reassessing:mrr_closed_form_check",
    "sharpness_diagrams": "pipeline.reassessing:sharpness_diagrams",
    "reliability_comparison": "pipeline.reassessing:reliability_comparison",
    "smooth_ece_diagrams": "pipeline.reassessing:smooth_ece_diagrams",
    "calibration_notions": "pipeline.vaicenavicius:calibration_notions",
    "notion_simplex": "pipeline.vaicenavicius:calibration_notions",
    "gmm_eta": "pipeline.vaicenavicius:gmm_eta",
    "gmm_bias": "pipeline.vaicenavicius:gmm_bias",
    "deviation_diagrams": "pipeline.vaicenavicius:deviation_diagrams",
    "miscalibration_table": "pipeline.vaicenavicius:miscalibration_table",
    "group_simplex_diagrams": "pipeline.vaicenavicius:group_simplex_diagrams",
    "training_pvalues": "pipeline.vaicenavicius:training_pvalues",
    "ecd_single_datum": "pipeline.entropic_tables:single_datum",
    "ecd_simulation_table": "pipeline.entropic_tables:simulation_table",
    "ecd_simulation_figures": "pipeline.entropic_tables:simulation_figures",
    "ecd_table2_check": "pipeline.entropic_tables:table2_check",
    "ecd_real_table": "pipeline.entropic_tables:real_bin_table",
    "ecd_real_diagrams": "pipeline.entropic_tables:real_bin_diagrams",
    "ecd_temperature_sweep": "pipeline.entropic_tables:temperature_sweep",
}
