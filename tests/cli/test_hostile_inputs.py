"""Hostile inputs for every public calib function that reads a user's posteriors (issue "hostile inputs").

Two registries: ``ENTRIES`` holds (function name, callable taking a hostile case's data) with what the
function accepts, and ``CASES`` the hostile cases. Every entry runs on every case that applies to it,
with every warning but a documented CalibInputWarning turned into an error, and the outcome must be exactly one of

- a number: finite values in the documented range, or a documented infinity (the callables check the
  range themselves and raise :class:`OutOfRange` otherwise), or
- a clear error: a :class:`calib.validation.CalibInputError` whose message names the offending argument.

Anything else (a crash from inside numpy / scipy / sklearn, a NaN, a warning, an invalid input
accepted, a valid input rejected) is "other". Each case says what it expects: ``error`` (invalid
input), ``number`` (valid input) or ``either`` (an edge case a function may refuse, with a clear error).

``outcome_table()`` counts the outcomes per function. Print it, and the detail of every "other"
outcome, from the repository root with ``python -m tests.test_hostile_inputs`` (``tests`` imports as a
namespace package, so ``python -c "from tests.test_hostile_inputs import outcome_table, format_table;
print(format_table(outcome_table()))"`` works too).
"""

from __future__ import annotations

import io
import json
import re
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import astuple, dataclass, field, replace
from functools import cache, partial
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import calib.calibration_errors.binned as ce
import calib.calibrators as cal
import calib.resampling.significance as sig
from calib.calibration_errors.corp import corp_curve, decompose
from calib.calibration_errors.corp_bands import corp_bands
from calib.calibration_errors.entropic import ecd, ecd_terms, entropic_bins, gaussian_ecd
from calib.calibration_errors.kernel_calibration import mmce, skce
from calib.calibration_errors.lenses import TopK
from calib.calibration_errors.miscalibration import expected_miscalibration
from calib.calibration_errors.presets import ece_preset
from calib.calibration_errors.simplex_binning import DataDependent, UniformGrid
from calib.calibration_errors.smoothing import (
    brier_losses_sum,
    calibration_sharpness_top_label,
    kde,
    nadaraya_watson,
    smooth_ece,
    smooth_ece_top_label,
)
from calib.cli import main as cli_main
from calib.data.real import PosteriorSet, load_npy_pair, load_npz, load_table, one_vs_other
from calib.data.table_options import TableOptions
from calib.evaluation.engine import evaluate
from calib.resampling.bootstrap import bootstrap, bootstrap_ece, percentile_interval
from calib.scoring.calibration_losses import calibration_loss, calibration_loss_from_posteriors
from calib.scoring.decisions import bayes_decisions, expected_cost, normalized_risk
from calib.scoring.decomposition import calibration_refinement, epistemic_irreducible
from calib.scoring.divergences import expected_divergence_to_constant, score_divergence
from calib.scoring.risk_curves import bayes_risk_curve, integrated_risk
from calib.scoring.scores import brier, cross_entropy, semi_empirical_cross_entropy
from calib.validation import _ROW_SUM_TOL, CalibInputError, CalibInputWarning

pytestmark = pytest.mark.filterwarnings("error")

N = 30  # samples of the base data: 10 per class for K = 3, enough for 3-fold cross-validation
RESAMPLES = 20  # resamples, kept small for speed
HOT = (3, -1)  # the cell a case spoils: the last column is the positive class of a binary problem
SLACK = 1e-9  # rounding allowed outside a documented range
INF = np.inf

NUMBER, CLEAR_ERROR, OTHER = "number", "clear error", "other"


class OutOfRange(AssertionError):
    """A result with NaN, an undocumented infinity or a value outside the documented range."""


# ----------------------------------------------------------------------------------------------
# hostile cases


@dataclass(frozen=True)
class Data:
    """What a function receives: scores, labels, their kind and option overrides (e.g. n_bins=0)."""

    scores: object
    labels: object
    kind: str = "probs"
    options: Mapping[str, object] = field(default_factory=dict)

    def opts(self, **defaults) -> dict:
        return defaults | dict(self.options)


@dataclass(frozen=True)
class Case:
    """A hostile input, built for the K of a function's base data.

    ``expect``: "error", "number" or "either". ``culprits``: the arguments an error may name (scores,
    labels, kind or an option). ``tag`` marks a constraint that only holds for (N, K) posteriors and
    their labels: "matrix" (the shape), "rowsum", "prob" (values in [0, 1]), "class" (labels are class
    indices) or "pair" (one label per row of scores).
    """

    name: str
    build: Callable[[int], Data]
    expect: str
    culprits: tuple[str, ...]
    tag: str = ""


def base(k: int, n: int = N) -> tuple[np.ndarray, np.ndarray]:
    """Dirichlet(1) probabilities and labels 0, 1, ..., K - 1, 0, ... (every class present when n >= K)."""
    return np.random.default_rng(k).dirichlet(np.ones(k), size=n), np.arange(n) % k


def _spoil(k: int, value, kind: str = "probs") -> Data:
    probs, labels = base(k)
    scores = probs if kind == "probs" else np.log(probs)
    scores[HOT] = value
    return Data(scores, labels, kind)


def _row(k: int, row, kind: str = "probs") -> Data:
    probs, labels = base(k)
    probs[HOT[0]] = row
    return Data(probs, labels, kind)


def _scaled_row(k: int, factor: float) -> Data:
    probs, labels = base(k)
    probs[HOT[0]] *= factor
    return Data(probs, labels)


def _labels(k: int, edit: Callable[[np.ndarray], object]) -> Data:
    probs, labels = base(k)
    return Data(probs, edit(labels))


def _scores(k: int, edit: Callable[[np.ndarray], object]) -> Data:
    probs, labels = base(k)
    return Data(edit(probs), labels)


def _nan_label(y: np.ndarray) -> np.ndarray:
    y = y.astype(np.float64)
    y[HOT[0]] = np.nan
    return y


def _set_label(value) -> Callable[[np.ndarray], np.ndarray]:
    def edit(y: np.ndarray) -> np.ndarray:
        y[HOT[0]] = value
        return y

    return edit


def _exact_zeros_and_ones(k: int) -> Data:
    """Half the rows one-hot (row 1 on a wrong class, so its true class gets probability 0)."""
    probs, labels = base(k)
    probs[::2] = np.eye(k)[labels[::2]]
    probs[1] = np.eye(k)[(labels[1] + 1) % k]
    return Data(probs, labels)


def _huge_logits(k: int) -> Data:
    _, labels = base(k)
    return Data(1e4 * np.sign(np.random.default_rng(1).normal(size=(N, k))), labels, "logits")


def _one_bin(k: int) -> Data:
    probs, labels = base(k)
    return Data(np.repeat(probs[:1], N, axis=0), labels)


def _many_classes(_: int) -> Data:
    probs, labels = base(1000, n=8)
    return Data(probs, labels)


def _option(name: str, value) -> Case:
    return Case(f"{name}={value!r}", lambda k: Data(*base(k), options={name: value}), "error", (name,))


SCORES, LABELS, BOTH = ("scores",), ("labels",), ("scores", "labels")
UNKNOWN_NAMES = ("norm", "target", "estimator", "distance", "divergence", "loss", "metric", "protocol", "preset")
UNKNOWN_NAMES += ("scaling", "weight", "method", "kernel", "score")

CASES = [
    Case("clean", lambda k: Data(*base(k)), "number", BOTH),
    Case("NaN prob", lambda k: _spoil(k, np.nan), "error", SCORES),
    Case("NaN logit", lambda k: _spoil(k, np.nan, "logits"), "error", SCORES),
    Case("NaN label", lambda k: _labels(k, _nan_label), "error", LABELS),
    Case("+inf prob", lambda k: _spoil(k, INF), "error", SCORES),
    Case("-inf prob", lambda k: _spoil(k, -INF), "error", SCORES),
    Case("+inf logit", lambda k: _spoil(k, INF, "logits"), "error", SCORES),
    Case("-inf logit", lambda k: _spoil(k, -INF, "logits"), "either", SCORES),
    Case("-inf logit row", lambda k: _row(k, -INF, "logits"), "error", SCORES),
    Case("-inf logprob", lambda k: _spoil(k, -INF, "logprobs"), "error", SCORES, "rowsum"),
    Case("negative prob", lambda k: _row(k, np.r_[-0.25, np.zeros(k - 2), 1.25]), "error", SCORES, "prob"),
    Case("prob > 1", lambda k: _row(k, np.r_[np.zeros(k - 1), 1.25]), "error", SCORES, "prob"),
    Case("row sum just inside tol", lambda k: _scaled_row(k, 1 + 0.9 * _ROW_SUM_TOL), "number", BOTH),
    Case("row sum just outside tol", lambda k: _scaled_row(k, 1 - 1.1 * _ROW_SUM_TOL), "error", SCORES, "rowsum"),
    Case("K = 1", lambda k: Data(np.ones((N, 1)), np.zeros(N, dtype=int)), "error", SCORES, "matrix"),
    Case("N = 0", lambda k: Data(np.empty((0, k)), np.empty(0, dtype=int)), "error", BOTH),
    Case("N = 1", lambda k: Data(*(a[:1] for a in base(k))), "either", BOTH),
    Case("label = K", lambda k: _labels(k, _set_label(k)), "error", LABELS, "class"),
    Case("label = -1", lambda k: _labels(k, _set_label(-1)), "error", LABELS, "class"),
    Case("integral float labels", lambda k: _labels(k, lambda y: y.astype(np.float64)), "number", LABELS),
    Case("fractional float labels", lambda k: _labels(k, lambda y: y + 0.5), "error", LABELS, "class"),
    Case("class absent", lambda k: _labels(k, lambda y: np.where(y == k - 1, 0, y)), "either", LABELS, "class"),
    Case("all in one bin", _one_bin, "either", BOTH),
    Case("exact 0 and 1", _exact_zeros_and_ones, "either", BOTH),
    Case("logits +-1e4", _huge_logits, "either", BOTH),
    Case("K = 1000, N = 8", _many_classes, "either", BOTH),
    Case("labels shorter", lambda k: _labels(k, lambda y: y[:-1]), "error", LABELS, "pair"),
    Case("kind='probabilities'", lambda k: Data(*base(k), kind="probabilities"), "error", ("kind",)),
    Case("1-D scores", lambda k: _scores(k, lambda p: p[:, -1]), "error", SCORES, "matrix"),
    Case("3-D scores", lambda k: _scores(k, lambda p: p[None]), "error", SCORES),
    Case("2-D labels", lambda k: _labels(k, lambda y: y[:, None]), "error", LABELS),
    Case("string scores", lambda k: _scores(k, lambda p: np.full(p.shape, "a")), "error", SCORES),
    Case("None scores", lambda k: _scores(k, lambda p: None), "error", SCORES),
    Case("string labels", lambda k: _labels(k, lambda y: np.array(["cat"] * y.size)), "error", LABELS),
    Case("None labels", lambda k: _labels(k, lambda y: None), "error", LABELS),
    _option("n_bins", 0),
    _option("bandwidth", -0.1),
    _option("n_resamples", 0),
    _option("alpha", 0.0),
    _option("alpha", 1.5),
    *(_option(name, "no-such-name") for name in UNKNOWN_NAMES),
]


# ----------------------------------------------------------------------------------------------
# result checks


def within(value, lo: float = -INF, hi: float = INF, *, posinf: bool = False, neginf: bool = False):
    """``value`` (numbers or arrays) if every entry lies in [lo, hi], infinities only where allowed."""
    arr = np.asarray(value, dtype=np.float64)
    finite = np.isfinite(arr)
    ok = (finite & (arr >= lo - SLACK) & (arr <= hi + SLACK)) | (posinf & np.isposinf(arr)) | (neginf & (arr == -INF))
    if not np.all(ok):
        raise OutOfRange(f"values outside [{lo}, {hi}] (posinf={posinf}, neginf={neginf}): {arr[~ok][:5]}")
    return value


def posteriors(probs) -> np.ndarray:
    """Probabilities in [0, 1] whose rows sum to 1."""
    within(probs, 0.0, 1.0)
    within(np.sum(probs, axis=1), 1.0, 1.0)
    return probs


def log_posteriors(logp) -> np.ndarray:
    """Log-probabilities (log 0 = -inf allowed) whose rows sum to 1 in probability."""
    within(logp, -INF, 0.0, neginf=True)
    return posteriors(np.exp(logp))


# ----------------------------------------------------------------------------------------------
# the registry of functions


@dataclass(frozen=True)
class Entry:
    """A function under test: ``call(data)`` runs it (and checks the result's range).

    ``k``: the K of its base data (2 for binary-only functions). ``uses``: which of scores, labels and
    kind it takes. ``options``: the generic option names it takes (``n_resamples``, ...) mapped to its
    own parameter names. ``names``: the words an error about scores or labels must contain.
    ``skip``: case tags or names that do not apply (e.g. row sums for a function of confidences).
    """

    name: str
    call: Callable[[Data], object]
    k: int = 3
    uses: tuple[str, ...] = ("scores", "labels", "kind")
    options: Mapping[str, str] = field(default_factory=dict)
    names: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    skip: tuple[str, ...] = ()

    def applies(self, case: Case) -> bool:
        if case.tag in self.skip or case.name in self.skip:
            return False
        return any(c in self.uses or c in self.options for c in case.culprits)

    def data(self, case: Case) -> Data:
        data = case.build(self.k)
        return replace(data, options={self.options[k]: v for k, v in data.options.items()})

    def words(self, case: Case) -> tuple[str, ...]:
        """What an error for ``case`` may name."""
        return tuple(
            word
            for c in case.culprits
            if c in self.uses or c in self.options
            for word in self.names.get(c, (self.options.get(c, c),))
        )


def opt(*names: str, **renamed: str) -> dict[str, str]:
    """Options an entry takes: generic names (as the cases use them), some renamed to the parameter."""
    return {name: name for name in names} | renamed


def metric(fn, lo: float = 0.0, hi: float = INF, *, posinf: bool = False, **fixed) -> Callable[[Data], object]:
    """``fn(scores, labels, kind=..., **fixed, **options)``, checked to lie in [lo, hi]."""
    return lambda d: within(fn(d.scores, d.labels, kind=d.kind, **d.opts(**fixed)), lo, hi, posinf=posinf)


def binned(target: str, **fixed) -> Callable[[Data], object]:
    """``BinnedCalibrationError(target, **fixed, **options)(scores, labels, kind=...)``, checked to lie in [0, 1]."""
    return lambda d: within(
        ce.BinnedCalibrationError(**d.opts(target=target, n_bins=10, **fixed))(d.scores, d.labels, kind=d.kind), 0, 1
    )


def preset(name: str) -> Callable[[Data], object]:
    """``ece_preset(name, **options)(scores, labels, kind=...)``, checked to lie in [0, 1]."""
    return lambda d: within(ece_preset(name, **d.opts())(d.scores, d.labels, kind=d.kind), 0, 1)


def column(scores):
    """The last column of a score matrix (the positive class, or a confidence); other shapes as they are."""
    arr = np.asarray(scores, dtype=object)
    return arr[:, -1] if arr.ndim == 2 and arr.shape[1] else scores


def width(scores) -> int:
    """K of a score matrix (at least 2), for the cost matrices of the decision functions."""
    return max(2, np.shape(scores)[-1] if np.ndim(scores) else 2)


def length(labels) -> int:
    return np.shape(labels)[0] if np.ndim(labels) else 0


MEDIAN = {"scores": ("scores", "bandwidth"), "labels": ("labels", "bandwidth")}  # bandwidth="median" needs data
INFINITE = ("+inf prob", "-inf prob", "+inf logit", "-inf logit", "-inf logit row", "-inf logprob")
CONFIDENCE = {"scores": ("confidence",), "labels": ("correct",)}
NOT_POSTERIORS = ("matrix", "rowsum", "class")  # functions of confidences, outcomes or reals
NOT_PROBABILITIES = (*NOT_POSTERIORS, "prob")


def _reliability(d: Data):
    bins = ce.reliability_bins(column(d.scores), d.labels, **d.opts(n_bins=10))
    return within(np.r_[bins.ece(), bins.mce(), bins.frequency[bins.occupied]], 0.0, 1.0)


def _corp(d: Data):
    curve = corp_curve(column(d.scores), d.labels)
    decomposition = decompose(curve, d.opts(score="log")["score"])
    bands = corp_bands(curve, n_resamples=RESAMPLES)
    values = [curve.recalibrated, *bands.consistency, *bands.confidence]
    return within(np.r_[decomposition.mcb, decomposition.dsc, np.concatenate(values)], 0.0, posinf=True)


def _spiegelhalter(d: Data):
    return within(sig.spiegelhalter_z(column(d.scores), d.labels).p_value, 0.0, 1.0)


def _intervals(d: Data):
    low, high = (
        ce.BinnedCalibrationError("top_label", n_bins=10)
        .reliability(d.scores, d.labels, kind=d.kind)[0]
        .frequency_intervals()
    )
    return within(np.r_[low, high][~np.isnan(np.r_[low, high])], 0.0, 1.0)


def _sharpness(d: Data):
    s = calibration_sharpness_top_label(
        d.scores, d.labels, kind=d.kind, **d.opts(grid_points=101, n_eval=20, n_repeats=2)
    )
    within(s.curve[~np.isnan(s.curve)], 0.0, 1.0)
    return within([s.cal_mean, s.cal_std, s.total], 0.0, 2.0)


def _entropic_bins(d: Data):
    bins = entropic_bins(d.scores, d.labels, kind=d.kind, **d.opts())
    within([bins.weighted("ece"), abs(bins.weighted("esce"))], 0.0, 1.0)
    return within(bins.weighted("ecd"), -0.28, posinf=True)


def _nadaraya_watson(d: Data):
    fitted = nadaraya_watson(column(d.scores), d.labels, column(d.scores), **d.opts())
    y = np.asarray(d.labels, dtype=np.float64)
    return within(fitted, y.min(), y.max())


def _decisions(d: Data):
    k = width(d.scores)
    return within(bayes_decisions(d.scores, 1.0 - np.eye(k), kind=d.kind), 0, k - 1)


def _expected_cost(d: Data):
    return within(expected_cost(d.labels, np.zeros(length(d.labels), dtype=int), 1.0 - np.eye(3)), 0.0, 1.0)


def _risk(d: Data):
    return within(normalized_risk(d.scores, d.labels, 1.0 - np.eye(width(d.scores)), kind=d.kind), 0.0)


def _loss_from_posteriors(relative: bool) -> Callable[[Data], object]:
    def call(d: Data):
        value = calibration_loss_from_posteriors(
            d.scores, d.scores, d.labels, kind=d.kind, **d.opts(metric="ce", relative=relative)
        )
        return within(value, 0.0, 0.0)

    return call


def _decomposition(fn, loss: str) -> Callable[[Data], object]:
    def call(d: Data):
        extra = (d.scores,) if fn is epistemic_irreducible else ()
        result = astuple(fn(d.scores, d.labels, *extra, kind=d.kind, reference_kind=d.kind, **d.opts(loss=loss)))
        within(result[:3], 0.0, posinf=loss == "log")
        return within(result[3], -SLACK, SLACK)

    return call


def _miscalibration(binning: Callable[..., object], lens=None) -> Callable[[Data], object]:
    def call(d: Data):
        options = d.opts(distance="tv")
        grid = binning(**({"n_bins": options.pop("n_bins")} if "n_bins" in options else {}))
        return within(
            expected_miscalibration(d.scores, d.labels, kind=d.kind, binning=grid, lens=lens, **options), 0, 1
        )

    return call


def _lens(d: Data):
    problem = TopK(1)(d.scores, d.labels, kind=d.kind)
    within(problem.labels, 0, 1)
    return posteriors(problem.probs)


def _bootstrap_ece(d: Data):
    result = bootstrap_ece(d.scores, d.labels, kind=d.kind, **d.opts(n_boot=RESAMPLES))
    return within(np.r_[result.estimate, result.low, result.high, result.values.ravel()], 0.0, 1.0)


def _bootstrap(d: Data):
    def statistic(scores, labels, groups):
        return ce.BinnedCalibrationError("top_label", n_bins=10)(scores, labels, kind=d.kind)

    result = bootstrap(statistic, d.scores, d.labels, seed=0, **d.opts(n_boot=RESAMPLES))
    return within(np.r_[result.estimate, result.low, result.high], 0.0, 1.0)


def _test_result(fn, **fixed) -> Callable[[Data], object]:
    """A hypothesis test: p-value in [0, 1]; statistic >= -2 (SKCE estimates can be negative), +inf where
    documented (a chi-squared cell with E = 0 < O)."""

    def call(d: Data):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sig.SmallSampleWarning)  # documented, for N < 400
            result = fn(d.scores, kind=d.kind, labels=d.labels, **d.opts(**fixed))
        within(result.p_value, 0.0, 1.0)
        return within(result.statistic, -2.0, posinf=True)

    return call


def _resampling(d: Data):
    result = sig.resampling_test(
        lambda p, y: ce.BinnedCalibrationError("top_label", n_bins=10)(p, y, kind="probs"),
        d.scores,
        kind=d.kind,
        labels=d.labels,
        **d.opts(n_resamples=RESAMPLES),
    )
    within([result.p_value, result.p_value_plus_one], 0.0, 1.0)
    return within(np.r_[result.statistic, result.null_statistics], 0.0, 1.0)


def _miscalibration_resampling(d: Data):
    result = sig.miscalibration_resampling(
        d.scores, d.labels, kind=d.kind, binning=UniformGrid(5), **d.opts(n_resamples=RESAMPLES)
    )
    within(np.r_[result.p_value, result.p_value_plus_one], 0.0, 1.0)
    return within(np.r_[result.observed, result.resampled.ravel()], 0.0, 1.0)


def _deviation_diagram(d: Data):
    result = sig.deviation_diagram(
        d.scores, d.labels, kind=d.kind, binning=UniformGrid(5), **d.opts(n_resamples=RESAMPLES)
    )
    within(np.r_[result.mean_prediction, result.share, result.extent.ravel()], 0.0, 1.0)
    return within(result.deviation, -1.0, 1.0)


def _sample_labels(d: Data):
    drawn = sig.sample_labels(d.scores, RESAMPLES, np.random.default_rng(0))
    return within(drawn, 0, width(d.scores) - 1)


def summary_values(records) -> Iterator[float]:
    """Values and bounds of evaluate's metrics: RCL has no interval (NaN bounds, documented), the rest do;
    RCL-CE is NaN (documented) when a zero probability on a true label makes the raw log loss infinite."""
    records = list(records)
    infinite_log_loss = any(name == "NCE" and value == np.inf for name, value, _, _ in records)
    for name, value, low, high in records:
        if name.startswith("RCL-CE") and infinite_log_loss and np.isnan(value):
            continue
        if name.startswith("RCL") and np.isnan(low) and np.isnan(high):
            low = high = value
        if not low <= high:
            raise OutOfRange(f"{name}: interval [{low}, {high}]")
        yield from (value, low, high)


def _evaluate(d: Data):
    summary = evaluate(d.scores, d.labels, kind=d.kind, **d.opts(n_boot=5))
    records = [(name, m.value, m.low, m.high) for name, m in summary.metrics.items()]
    return within(list(summary_values(records)), posinf=True)


def _fit_predict(make: Callable[..., object]) -> Callable[[Data], object]:
    def call(d: Data):
        model = make(**d.options).fit(d.scores, d.labels, kind=d.kind)
        posteriors(model.predict_proba(d.scores, kind=d.kind))
        return log_posteriors(model.predict_log_proba(d.scores, kind=d.kind))

    return call


@cache
def _fitted(make: Callable[..., object], k: int):
    return make().fit(*base(k), kind="probs")


def _predict(make: Callable[..., object], k: int) -> Callable[[Data], object]:
    return lambda d: log_posteriors(_fitted(make, k).predict_log_proba(d.scores, kind=d.kind))


def _protocol(protocol: str) -> Callable[[Data], object]:
    def call(d: Data):
        options = d.opts(protocol=protocol, n_folds=3, seed=0)
        return log_posteriors(cal.calibrate(cal.TemperatureScaling(), d.scores, d.labels, kind=d.kind, **options))

    return call


def _held_out(d: Data):
    return log_posteriors(cal.held_out(cal.TemperatureScaling(), d.scores, d.labels, d.scores, kind=d.kind))


# loaders and the command line: the case's arrays are written to the files a user would have


def _save_npz(d: Data, path: Path) -> Path:
    np.savez(path, scores=np.asarray(d.scores), labels=np.asarray(d.labels))
    return path


def _posterior_set(pset: PosteriorSet):
    within(pset.labels, 0, pset.n_classes - 1)
    return log_posteriors(pset.logprobs())


def _in_tmp(load: Callable[[Data, Path], PosteriorSet]) -> Callable[[Data], object]:
    def call(d: Data):
        with tempfile.TemporaryDirectory() as tmp:
            return _posterior_set(load(d, Path(tmp)))

    return call


def _npy_pair(d: Data, tmp: Path) -> PosteriorSet:
    np.save(tmp / "scores.npy", np.asarray(d.scores))
    np.save(tmp / "labels.npy", np.asarray(d.labels))
    return load_npy_pair(tmp / "scores.npy", tmp / "labels.npy", kind=d.kind)


def _table(d: Data, tmp: Path) -> PosteriorSet:
    scores, labels = np.asarray(d.scores, dtype=object), np.asarray(d.labels, dtype=object)
    frame = pd.DataFrame(scores if scores.ndim == 2 else scores[:, None]).rename(columns=lambda j: f"class{j}")
    frame["label"] = labels
    frame.to_csv(tmp / "scores.csv", index=False)
    return load_table(tmp / "scores.csv", TableOptions(kind=d.kind, label_values="index"))


def _cli(command: str) -> Callable[[Data], object]:
    """``calib COMMAND`` on an .npz file of the case, in process; exit status 1 or 2 must say what is wrong."""

    def call(d: Data):
        with tempfile.TemporaryDirectory() as tmp:
            data = str(_save_npz(d, Path(tmp, "set.npz")))
            out = str(Path(tmp, "out.npz"))
            argv = {
                "evaluate": ["evaluate", data, "--json", "--n-boot", "5"],
                "calibrate": [
                    "calibrate",
                    "--method=temperature",
                    f"--train={data}",
                    f"--apply={data}",
                    f"--out={out}",
                ],
                "compare": ["compare", data, data, "--n-boot", "5"],
            }[command]
            stdout, stderr = io.StringIO(), io.StringIO()
            with redirect_stdout(stdout), redirect_stderr(stderr):
                try:
                    status = cli_main([*argv, "--kind", d.kind, "--quiet"])
                except SystemExit as exc:  # argparse: a bad command line
                    status = exc.code
            if status != 0:
                raise CalibInputError(stderr.getvalue())
            if command == "evaluate":
                # strict JSON: a non-finite number is the string "inf", "-inf" or "nan"
                metrics = json.loads(stdout.getvalue())["metrics"]
                records = [(m["metric"], *(float(m[k]) for k in ("value", "low", "high"))) for m in metrics]
                return within(list(summary_values(records)), posinf=True)
            if command == "calibrate":
                with np.load(out) as saved:
                    return log_posteriors(saved["scores"])
            numbers = re.findall(r"[-+]?\d+\.\d+|\b[-+]?(?:nan|inf)\b", stdout.getvalue())
            return within([float(x) for x in numbers], posinf=True, neginf=True)

    return call


LOADER_NAMES = {"scores": ("score",), "labels": ("label",)}
# (name, constructor, K of its base data, options); their parameters' invalid values are generated from their
# declarations (tests/calib/calibrators/test_parameters.py)
CALIBRATORS = [
    *((name, getattr(cal, name), 3, {}) for name in ("AffineCalibrator", "TemperatureScaling", "VectorScaling")),
    *((name, getattr(cal, name), 3, {}) for name in ("MatrixScaling", "DirichletCalibrator", "MeanReplacement")),
    *((name, getattr(cal, name), 2, {}) for name in ("BetaCalibrator", "IsotonicCalibrator", "PlattCalibrator")),
    ("DirichletCalibrator(cv)", partial(cal.DirichletCalibrator, lambdas=(0.01, 1.0), n_folds=3), 3, {}),
    ("OneVsAllHistogramBinning", cal.OneVsAllHistogramBinning, 3, {}),
    ("OneVsAllIsotonic", cal.OneVsAllIsotonic, 3, {}),
    ("OneVsRest(IsotonicCalibrator)", partial(cal.OneVsRest, cal.IsotonicCalibrator()), 3, {}),
    ("HistogramBinning", cal.HistogramBinning, 2, {}),
]

ENTRIES = [
    # scoring/scores.py
    Entry("cross_entropy", metric(cross_entropy, posinf=True)),
    Entry("cross_entropy(normalize)", metric(cross_entropy, posinf=True, normalize=True)),
    Entry("brier", metric(brier, 0.0, 2.0, scaling="mean"), options=opt("scaling")),
    Entry("brier(normalize)", metric(brier, scaling="sum", normalize=True)),
    Entry(
        "semi_empirical_cross_entropy",
        lambda d: within(
            semi_empirical_cross_entropy(d.scores, d.scores, kind=d.kind, reference_kind=d.kind), 0.0, posinf=True
        ),
        uses=("scores", "kind"),
    ),
    # calibration_errors/binned.py
    Entry("BinnedCalibrationError(top_label)", binned("top_label"), options=opt("n_bins", "norm", "target")),
    Entry("BinnedCalibrationError(top_label, max)", binned("top_label", norm="max"), options=opt("n_bins")),
    Entry("BinnedCalibrationError(classwise)", binned("classwise"), options=opt("n_bins", "norm", "target")),
    Entry("BinnedCalibrationError(classwise, max)", binned("classwise", norm="max"), options=opt("n_bins")),
    Entry("BinnedCalibrationError(binary)", binned("binary"), k=2, options=opt("n_bins", "norm", "target")),
    Entry("BinnedCalibrationError(binary, max)", binned("binary", norm="max"), k=2, options=opt("n_bins")),
    Entry("BinnedCalibrationError(canonical)", binned("canonical"), options=opt("n_bins")),
    Entry("BinnedCalibrationError(top_label, mass)", binned("top_label", strategy="equal-mass"), options=opt("n_bins")),
    Entry(
        "binary_reliability.ece(l2, debiased)",
        lambda d: within(
            ce.BinnedCalibrationError("binary", n_bins=5)
            .reliability(d.scores, d.labels, kind=d.kind)[0]
            .ece("l2", debiased=True),
            0,
            1,
        ),
        k=2,
    ),
    Entry(
        "reliability_bins",
        _reliability,
        k=2,
        uses=("scores", "labels"),
        options=opt("n_bins"),
        names={"scores": ("confidence",), "labels": ("outcome",)},
        skip=NOT_POSTERIORS,
    ),
    Entry("ReliabilityBins.frequency_intervals", _intervals),
    # calibration_errors/corp.py
    Entry(
        "corp_curve, decompose, corp_bands",
        _corp,
        k=2,
        uses=("scores", "labels"),
        options=opt("score"),
        names={"scores": ("confidence",), "labels": ("outcome",)},
        skip=NOT_POSTERIORS,
    ),
    # calibration_errors/presets.py
    Entry("ece_preset(survey)", preset("survey"), options=opt("n_bins", "norm")),
    Entry("ece_preset(sklearn)", preset("sklearn"), k=2, options=opt("n_bins", "norm")),
    Entry("ece_preset(torchmetrics)", preset("torchmetrics"), options=opt("n_bins")),
    # calibration_errors/smoothing.py
    Entry(
        "smooth_ece",
        lambda d: within(smooth_ece(column(d.scores), d.labels, **d.opts()), 0.0, 1.0),
        k=2,
        uses=("scores", "labels"),
        options=opt("bandwidth"),
        names=CONFIDENCE,
        skip=NOT_POSTERIORS,
    ),
    Entry("smooth_ece_top_label", metric(smooth_ece_top_label, 0.0, 1.0), options=opt("bandwidth")),
    Entry(
        "kde",
        lambda d: within(kde(column(d.scores), np.linspace(0, 1, 11), **d.opts()), 0.0),
        uses=("scores",),
        options=opt("bandwidth", "kernel", "method"),
        names={"scores": ("x_data",)},
        skip=NOT_PROBABILITIES,
    ),
    Entry(
        "nadaraya_watson",
        _nadaraya_watson,
        k=2,
        uses=("scores", "labels"),
        options=opt("bandwidth", "kernel"),
        names={"scores": ("x_data",), "labels": ("y_data",)},
        skip=NOT_PROBABILITIES,
    ),
    Entry("brier_losses_sum", metric(brier_losses_sum, 0.0, 2.0)),
    Entry("calibration_sharpness_top_label", _sharpness, options=opt("bandwidth", "kernel", "method")),
    # calibration_errors/kernel_calibration.py
    Entry("skce(unbiased)", metric(skce, -2, 2), options=opt("bandwidth", "estimator", "kernel"), names=MEDIAN),
    Entry("skce(biased, gaussian)", metric(skce, 0.0, 2.0, estimator="biased", kernel="gaussian", bandwidth=0.5)),
    Entry("skce(block)", metric(skce, -2.0, 2.0, estimator="block"), options=opt("bandwidth"), names=MEDIAN),
    Entry("mmce", metric(mmce, 0.0, 1.0), options=opt("bandwidth", "estimator")),
    # calibration_errors/entropic.py
    Entry("ecd", metric(ecd, -np.log(1000), posinf=True)),
    Entry("ecd_terms", metric(ecd_terms, -np.log(1000), posinf=True)),
    Entry("entropic_bins", _entropic_bins, k=2, options=opt("n_bins")),
    Entry(
        "gaussian_ecd",
        lambda d: within(gaussian_ecd(d.scores, np.eye(np.shape(d.scores)[-1] if np.ndim(d.scores) else 1)), -500.0),
        uses=("scores",),
        names={"scores": ("errors",)},
        skip=(*NOT_PROBABILITIES, "K = 1000, N = 8"),  # errors of a 1000-dimensional state: slow, nothing new
    ),
    # scoring/decisions.py
    Entry("bayes_decisions", _decisions, uses=("scores", "kind")),
    Entry("expected_cost", _expected_cost, uses=("labels",), skip=("pair",)),
    Entry("normalized_risk", _risk),
    # scoring/calibration_losses.py
    Entry(
        "calibration_loss_from_posteriors",
        _loss_from_posteriors(False),
        options=opt("metric"),
        names={"scores": ("raw",)},
    ),
    Entry("calibration_loss_from_posteriors(relative)", _loss_from_posteriors(True), names={"scores": ("raw",)}),
    Entry(
        "calibration_loss",
        metric(calibration_loss, -INF, 1.0, metric="ce", calibrator=cal.TemperatureScaling(), protocol="xv", n_folds=3),
        options=opt("metric", "protocol"),
    ),
    # scoring/divergences.py
    Entry(
        "score_divergence(kl)",
        lambda d: within(score_divergence(d.scores, d.scores, kind=d.kind, **d.opts(divergence="kl")), 0, posinf=True),
        uses=("scores", "kind"),
        options=opt("divergence"),
        names={"scores": ("reference",)},
    ),
    Entry(
        "expected_divergence_to_constant",
        lambda d: within(
            expected_divergence_to_constant(
                d.scores, np.linspace(0.05, 0.95, 19), kind=d.kind, **d.opts(divergence="kl")
            ),
            0.0,
        ),
        k=2,
        uses=("scores", "kind"),
        options=opt("divergence"),
        names={"scores": ("reference",)},
    ),
    # scoring/decomposition.py
    Entry("calibration_refinement(brier)", _decomposition(calibration_refinement, "brier"), options=opt("loss")),
    Entry("calibration_refinement(log)", _decomposition(calibration_refinement, "log")),
    Entry("epistemic_irreducible(log)", _decomposition(epistemic_irreducible, "log"), options=opt("loss")),
    # miscalibration.py, lenses.py
    Entry("expected_miscalibration(UniformGrid)", _miscalibration(UniformGrid), options=opt("n_bins", "distance")),
    Entry("expected_miscalibration(TopK, DataDependent)", _miscalibration(partial(DataDependent, 10), TopK(1))),
    Entry("TopK(1) lens", _lens),
    # scoring/risk_curves.py
    Entry(
        "bayes_risk_curve",
        lambda d: within(bayes_risk_curve(d.scores, d.labels, np.linspace(0.01, 0.99, 99), kind=d.kind, **d.opts()), 0),
        k=2,
        options=opt("weight"),
    ),
    Entry("integrated_risk", metric(integrated_risk, weight="uniform", n_grid=2001), k=2, options=opt("weight")),
    # resampling/bootstrap.py
    Entry("bootstrap_ece", _bootstrap_ece, options=opt("estimator", "alpha", n_resamples="n_boot")),
    Entry(
        "bootstrap",
        _bootstrap,
        options=opt("alpha", n_resamples="n_boot"),
        names={"scores": ("scores", "arrays"), "labels": ("labels", "arrays")},
    ),
    Entry(
        "percentile_interval",
        lambda d: within(percentile_interval(d.scores, **d.opts(alpha=0.05))),
        uses=("scores",),
        options=opt("alpha"),
        names={"scores": ("values",)},
        skip=(*NOT_PROBABILITIES, *INFINITE, "3-D scores"),  # any array of reals, infinities included
    ),
    # resampling/significance.py
    Entry("pearson_chi2", lambda d: _test_result(sig.pearson_chi2, groups=d.labels)(d)),
    Entry("hosmer_lemeshow", _test_result(sig.hosmer_lemeshow), k=2, options=opt("n_bins")),
    Entry(
        "spiegelhalter_z",
        _spiegelhalter,
        k=2,
        uses=("scores", "labels"),
        names={"scores": ("confidence",), "labels": ("outcome",)},
        skip=NOT_POSTERIORS,
    ),
    Entry("multinomial_hosmer_lemeshow", _test_result(sig.multinomial_hosmer_lemeshow), options=opt("n_bins")),
    Entry("resampling_test", _resampling, options=opt("n_resamples")),
    Entry(
        "miscalibration_resampling",
        _miscalibration_resampling,
        options=opt("n_resamples", "method", distance="distances"),
        names={"distance": ("distance",)},
    ),
    Entry("deviation_diagram", _deviation_diagram, options=opt("n_resamples", "method")),
    Entry("skce_block_test", _test_result(sig.skce_block_test), options=opt("bandwidth", "kernel"), names=MEDIAN),
    Entry(
        "skce_asymptotic_test",
        _test_result(sig.skce_asymptotic_test, n_resamples=RESAMPLES),
        options=opt("bandwidth", "n_resamples"),
        names=MEDIAN,
    ),
    Entry("sample_labels", _sample_labels, uses=("scores",), names={"scores": ("probs",)}),
    # evaluation/engine.py
    Entry("evaluate", _evaluate, options=opt("alpha")),
    # calibrators/
    *(Entry(f"{name}.fit+predict_proba", _fit_predict(make), k=k, options=o) for name, make, k, o in CALIBRATORS),
    *(
        Entry(f"{name}.predict_log_proba", _predict(make, k), k=k, uses=("scores", "kind"))
        for name, make, k, _ in CALIBRATORS
    ),
    Entry("calibrate(xv)", _protocol("xv"), options=opt("protocol")),
    Entry("calibrate(tt)", _protocol("tt")),
    Entry("held_out", _held_out),
    Entry(
        "fold_ids",
        lambda d: within(cal.fold_ids(d.labels, n_folds=3, seed=0), 0, 2),
        uses=("labels",),
        skip=("class", "pair"),
    ),
    # data/real.py
    # labels=None is a set of scores to calibrate (test_real covers it), not a bad input here
    Entry(
        "PosteriorSet.logprobs",
        lambda d: _posterior_set(PosteriorSet("set", d.scores, d.labels, d.kind)),
        names=LOADER_NAMES,
        skip=("None labels",),
    ),
    Entry("load_npy_pair", _in_tmp(_npy_pair), names=LOADER_NAMES),
    Entry("load_npz", _in_tmp(lambda d, tmp: load_npz(_save_npz(d, tmp / "set.npz"), kind=d.kind)), names=LOADER_NAMES),
    # a CSV holds one row of scores and one label per sample: these cases cannot be written into one
    Entry(
        "load_table(csv)",
        _in_tmp(_table),
        names=LOADER_NAMES,
        skip=("labels shorter", "3-D scores", "2-D labels", "None scores", "None labels"),
    ),
    Entry(
        "one_vs_other",
        lambda d: _posterior_set(one_vs_other(PosteriorSet("set", d.scores, d.labels, d.kind), 0)),
        names=LOADER_NAMES,
        skip=("None labels",),
    ),
    # cli.py
    *(Entry(f"calib {command}", _cli(command), names=LOADER_NAMES) for command in ("evaluate", "calibrate", "compare")),
]


# ----------------------------------------------------------------------------------------------
# outcomes


def run(entry: Entry, case: Case) -> tuple[str, str]:
    """(outcome, detail) of ``entry`` on ``case``, with every warning but a CalibInputWarning raised as an error."""
    data = entry.data(case)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            # A documented note on the input (e.g. exact zeros that dominate a calibrator's fit) comes with a number.
            warnings.simplefilter("ignore", CalibInputWarning)
            entry.call(data)
    except CalibInputError as exc:
        words = entry.words(case)
        if not any(word in str(exc) for word in words):
            return OTHER, f"CalibInputError naming none of {words}: {exc}"
        if case.expect == "number":
            return OTHER, f"rejected a valid input: {exc}"
        return CLEAR_ERROR, str(exc)
    except Exception as exc:  # noqa: BLE001 - any other exception is the failure this test looks for
        return OTHER, f"{type(exc).__name__}: {exc}"
    if case.expect == "error":
        return OTHER, "accepted an invalid input without an error"
    return NUMBER, ""


_OUTCOMES: dict[tuple[str, str], tuple[str, str]] = {}


def outcome(entry: Entry, case: Case) -> tuple[str, str]:
    """:func:`run`, once per pair (the parametrized tests and the table share the results)."""
    key = (entry.name, case.name)
    if key not in _OUTCOMES:
        _OUTCOMES[key] = run(entry, case)
    return _OUTCOMES[key]


PAIRS = [(entry, case) for entry in ENTRIES for case in CASES if entry.applies(case)]


def outcome_table() -> list[tuple[str, int, int, int, int]]:
    """Rows (function, n_cases, n_number, n_clear_error, n_other) over every case that applies."""
    rows = []
    for entry in ENTRIES:
        results = [outcome(entry, case)[0] for case in CASES if entry.applies(case)]
        counts = [results.count(kind) for kind in (NUMBER, CLEAR_ERROR, OTHER)]
        rows.append((entry.name, len(results), *counts))
    return rows


def format_table(rows) -> str:
    header = ("function", "cases", "number", "clear error", "other")
    lines = [f"{header[0]:<46s}" + "".join(f"{h:>12s}" for h in header[1:])]
    lines += [f"{row[0]:<46s}" + "".join(f"{v:>12d}" for v in row[1:]) for row in rows]
    totals = [sum(row[i] for row in rows) for i in range(1, 5)]
    lines.append(f"{'total':<46s}" + "".join(f"{v:>12d}" for v in totals))
    return "\n".join(lines)


@pytest.mark.parametrize(("entry", "case"), PAIRS, ids=[f"{e.name}-{c.name}" for e, c in PAIRS])
def test_hostile_input_gives_a_number_or_a_clear_error(entry, case):
    result, detail = outcome(entry, case)
    assert result != OTHER, detail


def test_outcome_table_has_no_other_outcomes():
    rows = outcome_table()
    assert len(rows) == len(ENTRIES)
    assert all(row[1] == row[2] + row[3] + row[4] for row in rows)
    assert [row for row in rows if row[4]] == []


if __name__ == "__main__":
    print(format_table(outcome_table()))
    others = [(e.name, c.name, outcome(e, c)[1]) for e, c in PAIRS if outcome(e, c)[0] == OTHER]
    for name, case, detail in others:
        print(f"OTHER {name} / {case}: {detail[:300]}")
    sys.exit(1 if others else 0)
