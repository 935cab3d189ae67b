"""One evaluation of a set of posteriors: the metrics a user asks for first, with bootstrap intervals.

:func:`evaluate` gathers, for (scores, labels): accuracy; the normalized cross-entropy and Brier
score (NCE, NBS; paper 000, eqs. 8-9 over the naive prior system); the normalized Bayes risk for
each cost matrix (paper 000, eq. 2; 0-1 costs by default); top-label and class-wise ECE (15 equal
bins) and, for two classes, the positive-class ECE; smooth ECE (relplot's estimator); ECD (paper
004); and the relative calibration loss RCL of the cross-entropy and the Brier score for each
calibrator under 5-fold cross-validation (paper 000, eq. 33): DP (affine) and temperature scaling
always, histogram binning and isotonic regression for two classes, vector scaling for more. The
recommended calibrator is the one with the largest cross-validated RCL of the cross-entropy (the
most log loss it removes), or none when every RCL-CE is negative.

Intervals are percentile bootstrap intervals (B resamples, seeded) of every metric except RCL,
whose calibrators would have to be refitted per resample; RCL is reported as a point estimate.
Resamples are evaluated a block at a time (:func:`resampled_metrics`): every metric but smooth ECE
is a function of per-class or per-bin sums of per-sample values, one ``bincount`` per block.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.special import entr

from calib.bootstrap import ece_terms, grouped_sums, percentile_interval, resample_blocks, resampled_ece
from calib.calibration_error import ece_binary, ece_classwise, ece_top_label
from calib.calibration_loss import calibration_loss
from calib.calibrators import AffineCalibrator, HistogramBinning, IsotonicCalibrator, TemperatureScaling, VectorScaling
from calib.decisions import bayes_choices, check_costs, normalized_risk, zero_one_costs
from calib.entropic import ecd, ecd_terms
from calib.kernel import smooth_ece_top_label
from calib.scores import brier, brier_losses, cross_entropy
from calib.validation import CalibInputError, as_priors, as_probs, check_inputs, check_positive_int

ECE_BINS = 15
RCL_FOLDS = 5
NO_CALIBRATOR = "none: no calibrator lowers the cross-validated log loss"
CALIBRATORS: dict[str, Callable] = {"DP (affine)": AffineCalibrator, "temperature": TemperatureScaling}
BINARY_CALIBRATORS: dict[str, Callable] = {
    "histogram": lambda: HistogramBinning(n_bins=ECE_BINS),
    "isotonic": IsotonicCalibrator,
}
MULTICLASS_CALIBRATORS: dict[str, Callable] = {"vector scaling": VectorScaling}


@dataclass(frozen=True)
class Metric:
    """A value with its bootstrap interval (NaN bounds when none was computed)."""

    value: float
    low: float = float("nan")
    high: float = float("nan")


@dataclass
class Summary:
    """Everything :func:`evaluate` measured, in presentation order."""

    n_samples: int
    n_classes: int
    metrics: dict[str, Metric] = field(default_factory=dict)
    recommended: str = ""

    def as_records(self) -> list[dict]:
        """One dict per metric (name, value, low, high), e.g. for a CSV."""
        return [{"metric": k, "value": m.value, "low": m.low, "high": m.high} for k, m in self.metrics.items()]


def point_metrics(logp: np.ndarray, labels: np.ndarray, costs: dict[str, np.ndarray], priors=None) -> dict[str, float]:
    """Every bootstrapped metric of validated log-posteriors (no calibrator is fitted). With ``priors``,
    NCE, NBS and the risks weight each class to that prior (paper 000, eqs. 36-37)."""
    k = logp.shape[1]
    out = {
        "accuracy": float(np.mean(logp.argmax(axis=1) == labels)),
        "NCE": cross_entropy(logp, labels, kind="logprobs", priors=priors, normalize=True),
        "NBS": brier(logp, labels, kind="logprobs", scaling="mean", priors=priors, normalize=True),
    }
    out |= {
        f"NRisk {name}": normalized_risk(logp, labels, c, kind="logprobs", priors=priors) for name, c in costs.items()
    }
    out["ECE top-label"] = ece_top_label(logp, labels, kind="logprobs", n_bins=ECE_BINS)
    if k == 2:
        out["ECE positive class"] = ece_binary(logp, labels, kind="logprobs", n_bins=ECE_BINS)
    else:
        out["ECE class-wise"] = ece_classwise(logp, labels, kind="logprobs", n_bins=ECE_BINS)
    out["smooth ECE"] = smooth_ece_top_label(logp, labels, kind="logprobs")
    out["ECD"] = ecd(logp, labels, kind="logprobs")
    return out


def _checked_positive(values: np.ndarray, what: str) -> np.ndarray:
    if np.any(values <= 0):
        raise CalibInputError(f"a bootstrap resample {what}; use more samples per class, or n_boot=0")
    return values


def resampled_metrics(logp: np.ndarray, labels: np.ndarray, costs: dict, priors, rows: np.ndarray) -> dict:
    """:func:`point_metrics` of every resample in the block ``rows`` (b, N): name -> (b,) values.

    With empirical priors a mean is sum / N; with ``priors`` it is sum_h P_h S_h / N_h over the class
    sums S_h (eqs. 36-37), so each resample needs only its per-class counts and sums (one
    ``bincount`` each); ECEs need per-bin sums (:func:`calib.bootstrap.resampled_ece`). Smooth ECE
    searches its bandwidth per resample and is computed one resample at a time.
    """
    n, k = logp.shape
    counts = grouped_sums(rows, labels, k)
    if priors is None:
        p = counts / n

        def mean(values):
            return values[rows].sum(axis=1) / n

    else:
        p = np.broadcast_to(priors, counts.shape)
        _checked_positive(counts, "lacks a class, which the prior weighting needs")

        def mean(values):
            return np.sum(priors * grouped_sums(rows, labels, k, values) / counts, axis=1)

    probs = as_probs(logp, "logprobs")
    losses = -logp[np.arange(n), labels]
    out = {
        "accuracy": np.mean((logp.argmax(axis=1) == labels)[rows], axis=1),
        "NCE": mean(losses) / _checked_positive(entr(p).sum(axis=1), "holds a single class (NCE is undefined)"),
        "NBS": mean(brier_losses(logp, labels, "mean"))
        / _checked_positive(np.sum(p * (1.0 - p), axis=1) / k, "holds a single class (NBS is undefined)"),
    }
    for name, c in costs.items():
        decision_costs = c[labels, bayes_choices(probs, c)]
        naive = _checked_positive(np.min(p @ c, axis=1), "gives the best constant decision zero cost")
        out[f"NRisk {name}"] = mean(decision_costs) / naive
    out["ECE top-label"] = resampled_ece(ece_terms(probs, labels, view="top_label", n_bins=ECE_BINS), rows)
    view, name = ("binary", "ECE positive class") if k == 2 else ("classwise", "ECE class-wise")
    out[name] = resampled_ece(ece_terms(probs, labels, view=view, n_bins=ECE_BINS), rows)
    out["smooth ECE"] = np.array([smooth_ece_top_label(logp[r], labels[r], kind="logprobs") for r in rows])
    out["ECD"] = ecd_terms(logp, labels, kind="logprobs")[rows].mean(axis=1)
    return out


def evaluate(
    scores,
    labels,
    *,
    kind: str,
    costs: dict[str, np.ndarray] | None = None,
    priors=None,
    n_boot: int = 200,
    alpha: float = 0.05,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> Summary:
    """Metrics of (``scores``, ``labels``) with (1 - ``alpha``) bootstrap intervals over ``n_boot`` resamples."""
    logp, y = check_inputs(scores, labels, kind)
    if np.bincount(y).max() < RCL_FOLDS:
        raise CalibInputError(
            f"labels: the RCL rows use {RCL_FOLDS}-fold cross-validation, which needs a class with at least "
            f"{RCL_FOLDS} samples; the largest class here has {np.bincount(y).max()}. Evaluate more samples."
        )
    n_boot = check_positive_int(n_boot, "n_boot", minimum=0) if n_boot else 0
    say = progress or (lambda _: None)
    costs = {
        name: check_costs(c, logp.shape[1]) for name, c in (costs or {"0-1": zero_one_costs(logp.shape[1])}).items()
    }
    priors = None if priors is None else as_priors(priors, logp.shape[1])
    summary = Summary(logp.shape[0], logp.shape[1])
    say("metrics on the full data")
    point = point_metrics(logp, y, costs, priors)
    if n_boot:
        draws, done = [], 0
        for rows in resample_blocks(y.size, n_boot=n_boot, seed=seed):
            say(f"bootstrap {done}/{n_boot}")
            draws.append(np.column_stack(list(resampled_metrics(logp, y, costs, priors, rows).values())))
            done += rows.shape[0]
        low, high = percentile_interval(np.concatenate(draws), alpha)
    for i, (name, value) in enumerate(point.items()):
        summary.metrics[name] = Metric(value, *(float(low[i]), float(high[i])) if n_boot else ())
    best, best_rcl = "", -np.inf
    extra = BINARY_CALIBRATORS if logp.shape[1] == 2 else MULTICLASS_CALIBRATORS
    for name, make in (CALIBRATORS | extra).items():
        say(f"RCL of {name} ({RCL_FOLDS}-fold cross-validation)")
        for metric, label in (("ce", "CE"), ("brier", "BS")):
            rcl = calibration_loss(
                logp, y, kind="logprobs", metric=metric, calibrator=make(), protocol="xv", n_folds=RCL_FOLDS, seed=seed
            )
            summary.metrics[f"RCL-{label} {name}"] = Metric(rcl)
            if metric == "ce" and rcl > best_rcl:
                best, best_rcl = name, rcl
    summary.recommended = best if best_rcl > 0 else NO_CALIBRATOR
    return summary
