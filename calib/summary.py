"""One evaluation of a set of posteriors: the metrics a user asks for first, with bootstrap intervals.

:func:`evaluate` gathers, for (scores, labels): accuracy; the normalized cross-entropy and Brier
score (NCE, NBS; Ferrer & Ramos (2024), eqs. 8-9 over the naive prior system); the normalized Bayes risk for
each cost matrix (Ferrer & Ramos (2024), eq. 2; 0-1 costs by default); top-label and class-wise ECE (15 equal
bins) and, for two classes, the positive-class ECE; smooth ECE (relplot's estimator); ECD ("An entropic
metric" (2025)); and the relative calibration loss RCL of the cross-entropy and the Brier score for each
calibrator under 5-fold cross-validation (Ferrer & Ramos (2024), eq. 33): DP (affine) and temperature
scaling always, histogram binning and isotonic regression for two classes, vector scaling for more.

A calibrator is recommended only with evidence: its per-sample gain in log loss (raw minus
cross-validated calibrated; in Brier score when a zero probability on a true label makes the raw
log loss infinite) is resampled with the metrics (a paired bootstrap), and the calibrator with the
largest mean gain among those whose interval lies above 0 is recommended; otherwise none.

Intervals are percentile bootstrap intervals (B resamples, seeded) of every metric except RCL,
whose calibrators would have to be refitted per resample; RCL is reported as a point estimate.
Resamples are evaluated many at a time from how often each draws each sample (:class:`Resampler`):
every metric but smooth ECE is a function of per-class or per-bin sums of per-sample values, which
are computed once and multiplied with the counts; smooth ECE bins the same counts.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from scipy.special import entr

from calib._internal.rows import float_chunks
from calib.calibration_errors.binned import BinnedCalibrationError
from calib.calibration_errors.corp import CorpReport, corp_report
from calib.calibration_errors.entropic import ecd_terms
from calib.calibration_errors.smoothing import ResampledSmoothEce
from calib.calibrators import cross_validated_folds, fold_ids
from calib.calibrators.blas_threads import one_blas_thread
from calib.calibrators.registry import make_calibrator
from calib.resampling.bootstrap import (
    ResampledSums,
    basic_interval,
    counted_resamples,
    ece_terms,
    resample_counts,
    resamples_per_matrix,
)
from calib.scoring.decisions import bayes_choices, check_costs, zero_one_costs
from calib.scoring.scores import brier_losses
from calib.validation import (
    CalibInputError,
    CalibInputWarning,
    as_priors,
    as_probs,
    check_inputs,
    check_positive_int,
    class_counts,
)

ECE_BINS = 15
# The binned ECEs of every evaluation: 15 equal-width right-closed bins (Silva Filho et al. (2023), Sect. 4.1).
TOP_LABEL_ECE = BinnedCalibrationError("top_label", ECE_BINS)
BINARY_ECE = BinnedCalibrationError("binary", ECE_BINS)
CLASSWISE_ECE = BinnedCalibrationError("classwise", ECE_BINS)
# Resampler computes confidences this many samples at a time (no full (N, K) temporary).
_VALUE_ROWS = 1 << 16
# Resampler is called on at most about this many float64 cells of per-resample work at a time (bin sums
# of every class, and smooth ECE's binned grids, about 40,000 cells at its finest bandwidths).
_RESAMPLE_CELLS = 1 << 22
_SMOOTH_ECE_CELLS = 40_000
# A long phase reports its progress at most this often (seconds).
_PROGRESS_EVERY = 2.0
RCL_FOLDS = 5
# The calibrators are cross-validated on at most this many samples (evaluate's fit_samples).
FIT_SAMPLES = 10**6
# The MCB test of evaluate resamples at most this many samples, a seeded random subset beyond it (the
# decomposition's terms use every sample): at this size the test already rejects a miscalibration of
# MCB ~ 1e-3 in the Brier score, and its 200 resamples take a tenth of a second.
CORP_TEST_SAMPLES = 20_000
# Calibrators cross-validated at once on a small problem: the machines the command targets have two cores or more.
_FIT_THREADS = 2
# The calibrators evaluate cross-validates: label -> (registry name, parameters) (calib.calibrators.registry).
CALIBRATORS: dict[str, tuple[str, dict]] = {"DP (affine)": ("dp", {}), "temperature": ("temperature", {})}
BINARY_CALIBRATORS: dict[str, tuple[str, dict]] = {
    "histogram": ("histogram", {"n_bins": ECE_BINS}),
    "isotonic": ("isotonic", {}),
}
MULTICLASS_CALIBRATORS: dict[str, tuple[str, dict]] = {"vector scaling": ("vector", {})}


@dataclass(frozen=True)
class Metric:
    """A value with its bootstrap interval (NaN bounds when none was computed)."""

    value: float
    low: float = float("nan")
    high: float = float("nan")


@dataclass(frozen=True)
class CorpSummary:
    """The CORP decompositions of an evaluation: of the Brier and log scores on one binary ``lens``
    (the positive class for two classes, the top label for more) with the MCB test's p-values (from
    ``resamples`` resamples of at most ``test_samples`` samples). The exact decomposition of the
    multiclass Brier score is :func:`calib.calibration_errors.corp_lenses.lens_decomposition`'s."""

    lens: str
    scores: dict[str, CorpReport]
    resamples: int
    test_samples: int


@dataclass
class Summary:
    """Everything :func:`evaluate` measured, in presentation order."""

    n_samples: int
    n_classes: int
    metrics: dict[str, Metric] = field(default_factory=dict)
    gains: dict[str, Metric] = field(default_factory=dict)
    gain_score: str = "log loss"
    recommended: str = ""
    fit_samples: int = 0
    corp: CorpSummary | None = None
    interval_method: str = "none (no bootstrap resamples)"
    interval_notes: list[str] = field(default_factory=list)

    def as_records(self) -> list[dict]:
        """One dict per metric (name, value, low, high), e.g. for a CSV."""
        return [{"metric": k, "value": m.value, "low": m.low, "high": m.high} for k, m in self.metrics.items()]


def point_metrics(logp: np.ndarray, labels: np.ndarray, costs: dict[str, np.ndarray], priors=None) -> dict[str, float]:
    """Every bootstrapped metric of validated log-posteriors (no calibrator is fitted): the
    :class:`Resampler`'s metrics of the full sample. With ``priors``, NCE, NBS and the risks weight
    each class to that prior (Ferrer & Ramos (2024), eqs. 36-37).

    Parameters
    ----------
    logp : array of shape (N, K)
        Validated log-posteriors.
    labels : int array of shape (N,)
        Validated labels.
    costs : dict of name -> (K, D) cost matrix
        Each gives a normalized Bayes risk "NRisk <name>".
    priors : array of shape (K,), optional
        Class priors for NCE, NBS and the risks.

    Returns
    -------
    dict of name -> float
        accuracy, NCE, NBS, the risks, top-label ECE, positive-class (K = 2) or class-wise ECE (15
        equal-width bins), smooth ECE and ECD, in that order.

    Examples
    --------
    >>> logp = np.log([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]])
    >>> m = point_metrics(logp, np.array([0, 1, 1, 1]), {"0-1": zero_one_costs(2)})
    >>> round(m["accuracy"], 2), round(m["NRisk 0-1"], 2)
    (0.75, 1.0)
    """
    ones = np.ones((labels.size, 1), dtype=np.uint8)
    return {name: float(values[0]) for name, values in Resampler(logp, labels, costs, priors)(ones)[0].items()}


def _checked_positive(values: np.ndarray, what: str) -> np.ndarray:
    if np.any(values <= 0):
        raise CalibInputError(
            f"the sample or a bootstrap resample of it {what}; use more samples per class, or n_boot=0"
        )
    return values


class Resampler:
    """Every metric of :func:`point_metrics`, and means of extra per-sample values, for many resamples.

    A resample is given by how often it draws each sample (a column of
    :func:`calib.resampling.bootstrap.counted_resamples` or
    :func:`calib.resampling.bootstrap.resample_counts`). Every metric but smooth ECE is a function
    of sums over the resample, per class or per bin, of per-sample values computed from the full
    data; here they are computed for a chunk of samples at a time and multiplied with those
    samples' counts (:class:`calib.resampling.bootstrap.ResampledSums`), so the data are never
    copied per resample and memory stays bounded for any N. With empirical priors a mean is sum / N;
    with ``priors`` it is sum_h P_h S_h / N_h over the class sums S_h (eqs. 36-37). Smooth ECE
    searches its bandwidth per resample, in lockstep over all resamples of the matrix
    (:class:`calib.calibration_errors.smoothing.ResampledSmoothEce`). The values equal
    :func:`point_metrics` of each resample up to rounding (sums are added in sample order instead of
    draw order).

    Parameters
    ----------
    logp : array of shape (N, K)
        Validated log-posteriors.
    labels : int array of shape (N,)
        Validated labels.
    costs : dict of name -> (K, D) cost matrix
        As for :func:`point_metrics`.
    priors : array of shape (K,) or None
        As for :func:`point_metrics`.
    means : dict of name -> array of shape (N,), optional
        Per-sample values whose mean over each resample is wanted too (e.g. a calibrator's gains).
    """

    def __init__(self, logp: np.ndarray, labels: np.ndarray, costs: dict, priors, means: dict | None = None):
        counts = class_counts(labels, logp.shape[1], need_all=priors is not None)
        if np.count_nonzero(counts) < 2:
            raise CalibInputError(
                "labels hold a single class: the naive cross-entropy and Brier score are 0, so NCE and NBS are "
                "undefined; evaluate samples of at least two classes"
            )
        self.logp, self.labels, self.costs, self.priors = logp, labels, costs, priors
        self.means = means or {}
        self.class_ece, self.class_ece_name = (
            (BINARY_ECE, "ECE positive class") if logp.shape[1] == 2 else (CLASSWISE_ECE, "ECE class-wise")
        )
        # Resamples per call that keep a call's memory near _RESAMPLE_CELLS, whatever the number of resamples.
        self.block = max(1, _RESAMPLE_CELLS // (4 * ECE_BINS * (logp.shape[1] + 1) + _SMOOTH_ECE_CELLS))
        confidence, correct = np.empty(labels.size), np.empty(labels.size, dtype=bool)
        for start in range(0, labels.size, _VALUE_ROWS):
            rows = slice(start, start + _VALUE_ROWS)
            probs = as_probs(logp[rows], "logprobs")  # as smooth_ece_top_label computes them
            confidence[rows], correct[rows] = probs.max(axis=1), probs.argmax(axis=1) == labels[rows]
        self.smooth = ResampledSmoothEce(confidence, correct)

    def __call__(self, counts: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """The metrics of each resample counted by ``counts`` (N, S): name -> (S,) values in
        :func:`point_metrics`' order, and the (S, len(means)) means of the extra values. The resamples
        are taken ``block`` at a time, so that what their metrics hold while computed (bin sums of every
        class, smooth ECE's grids) stays bounded however many there are."""
        parts = [self._block(counts[:, start : start + self.block]) for start in range(0, counts.shape[1], self.block)]
        metrics = {name: np.concatenate([p[0][name] for p in parts]) for name in parts[0][0]}
        return metrics, np.concatenate([p[1] for p in parts])

    def _block(self, counts: np.ndarray) -> tuple[dict[str, np.ndarray], np.ndarray]:
        n, k = self.logp.shape
        weighted, plain, top, class_gaps = 0.0, 0.0, 0.0, 0.0
        for rows, c in float_chunks(counts):
            w, p, t, v = self._chunk_sums(rows, c)
            weighted, plain, top, class_gaps = weighted + w, plain + p, top + t, class_gaps + v
        class_counts, weighted = weighted[0].T, weighted[1:]  # (S, K) and the sums behind the risks
        if self.priors is None:
            p = class_counts / n

            def mean(sums):
                return sums / n

        else:
            p = np.broadcast_to(self.priors, class_counts.shape)
            _checked_positive(class_counts, "lacks a class, which the prior weighting needs")

            def mean(sums):
                return np.sum(self.priors * sums.T / class_counts, axis=1)

        losses, brier_sums, *decision_costs = weighted if self.priors is not None else plain[: 2 + len(self.costs)]
        accuracy, ecd_sums, *extra = plain[-2 - len(self.means) :]
        out = {
            "accuracy": accuracy / n,
            "NCE": mean(losses) / _checked_positive(entr(p).sum(axis=1), "holds a single class (NCE is undefined)"),
            "NBS": mean(brier_sums)
            / _checked_positive(np.sum(p * (1.0 - p), axis=1) / k, "holds a single class (NBS is undefined)"),
        }
        for (name, c), sums in zip(self.costs.items(), decision_costs, strict=True):
            naive = _checked_positive(np.min(p @ c, axis=1), "gives the best constant decision zero cost")
            out[f"NRisk {name}"] = mean(sums) / naive
        out["ECE top-label"] = np.abs(top).sum(axis=(0, 1)) / n
        # class-wise: the mean of K ECEs (one per class gap); binary: a single ECE
        out[self.class_ece_name] = np.abs(class_gaps).sum(axis=(0, 1)) / (n * class_gaps.shape[0])
        out["smooth ECE"] = self.smooth(counts)
        out["ECD"] = ecd_sums / n
        return out, np.array(extra).reshape(len(extra), counts.shape[1]).T / n

    def _chunk_sums(self, rows: slice, counts: np.ndarray) -> tuple[np.ndarray, ...]:
        """The sums over the samples ``rows`` with their ``counts`` (L, S): per class (first the class
        counts, then with priors the values behind NCE, NBS and the risks), plain (those values without
        priors, then correctness, ECD terms and the extra values) and per ECE bin."""
        logp, y = self.logp[rows], self.labels[rows]
        k = logp.shape[1]
        probs = as_probs(logp, "logprobs")
        weighted = [-logp[np.arange(y.size), y], brier_losses(logp, y, "mean")]
        weighted += [c[y, bayes_choices(probs, c)] for c in self.costs.values()]
        plain = [logp.argmax(axis=1) == y, ecd_terms(logp, y, kind="logprobs"), *(v[rows] for v in self.means.values())]
        by_class = [np.ones(y.size)]
        if self.priors is None:
            plain = weighted + plain
        else:
            by_class += weighted
        return (
            ResampledSums(np.column_stack(by_class), y, k)(counts),
            ResampledSums(np.column_stack(plain))(counts),
            ece_terms(probs, y, TOP_LABEL_ECE).sums(counts),
            ece_terms(probs, y, self.class_ece).sums(counts),
        )


def resampled_metrics(logp: np.ndarray, labels: np.ndarray, costs: dict, priors, rows: np.ndarray) -> dict:
    """:func:`point_metrics` of every resample in the block ``rows`` (b, N): name -> (b,) values
    (see :class:`Resampler`)."""
    return Resampler(logp, labels, costs, priors)(resample_counts(rows, labels.size))[0]


class _Phase:
    """Progress of a phase of ``total`` steps: a message with the steps done, the elapsed time and the
    time left at the rate so far, at most every ``_PROGRESS_EVERY`` seconds, and one at the end."""

    def __init__(self, what: str, total: int, say: Callable[[str], None]):
        self.what, self.total, self.say, self.done = what, total, say, 0
        self.start = self.last = time.perf_counter()
        self._lock = threading.Lock()  # the calibrators' fits advance it from two threads

    def advance(self, steps: int = 1) -> None:
        with self._lock:
            self._advance(steps)

    def _advance(self, steps: int) -> None:
        self.done += steps
        now = time.perf_counter()
        if self.done < self.total and now - self.last < _PROGRESS_EVERY:
            return
        self.last, elapsed = now, now - self.start
        if self.done < self.total:
            left = elapsed / self.done * (self.total - self.done)
            self.say(f"{self.what} {self.done}/{self.total} ({elapsed:.0f} s, about {left:.0f} s left)")
        else:
            self.say(f"{self.what} {self.done}/{self.total} ({elapsed:.1f} s)")


def _per_sample_loss(logp: np.ndarray, y: np.ndarray, score: str) -> np.ndarray:
    """Each sample's log loss or (mean-scaled) Brier score."""
    return -logp[np.arange(y.size), y] if score == "log loss" else brier_losses(logp, y, "mean")


def _calibrated_losses(logp: np.ndarray, y: np.ndarray, seed: int, say, threads: int = 1) -> Iterator[tuple[str, dict]]:
    """Each calibrator's per-sample log loss and Brier score, cross-validated, ``threads`` calibrators at
    a time, yielded in the order of the calibrator maps. Exact zeros are each calibrator's to treat
    (:mod:`calib.calibrators.zeros`). The losses are taken fold by fold, so no calibrator's (N, K)
    predictions are ever whole; the folds are drawn once, as each calibration would draw them."""
    folds = fold_ids(y, n_folds=RCL_FOLDS, seed=seed).astype(np.min_scalar_type(RCL_FOLDS - 1))
    makers = CALIBRATORS | (BINARY_CALIBRATORS if logp.shape[1] == 2 else MULTICLASS_CALIBRATORS)
    fits = _Phase("cross-validated fits", len(makers) * RCL_FOLDS, say)

    def fit_folds(name: str, registry_name: str, params: dict) -> dict[str, np.ndarray]:
        say(f"{name}: {RCL_FOLDS}-fold cross-validated fit")
        losses = {"log loss": np.empty(y.size), "Brier": np.empty(y.size)}
        model = make_calibrator(registry_name, **params)
        for test, calibrated in cross_validated_folds(model, logp, y, kind="logprobs", folds=folds):
            for score, values in losses.items():
                values[test] = _per_sample_loss(calibrated, y[test], score)
            del calibrated
            fits.advance()
        return losses

    # ``threads`` calibrators at a time (numpy releases the interpreter while it computes), with BLAS on
    # one thread throughout, so that every fit does the same arithmetic however they are scheduled.
    with one_blas_thread(), ThreadPoolExecutor(max_workers=threads) as pool:
        running = [(name, pool.submit(fit_folds, name, *spec)) for name, spec in makers.items()]
        for name, fitted in running:
            yield name, fitted.result()


def _relative_loss(raw_mean: float, calibrated: np.ndarray) -> float:
    """RCL = (raw - calibrated) / raw of two mean losses (Ferrer & Ramos (2024), eq. 33); NaN when the
    raw loss is infinite."""
    cal_mean = float(np.mean(calibrated))
    if not np.isfinite(raw_mean) or raw_mean <= 0:
        return float("nan")
    return (raw_mean - cal_mean) / raw_mean


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
    overwrite: bool = False,
    fit_samples: int | None = FIT_SAMPLES,
) -> Summary:
    """Metrics of (``scores``, ``labels``) with (1 - ``alpha``) bootstrap intervals over ``n_boot`` resamples.

    The metrics are accuracy, NCE and NBS (the cross-entropy and Brier score divided by those of the
    naive system that outputs the priors), the normalized Bayes risk per cost matrix, top-label and
    class-wise ECE (15 equal-width bins; for two classes also the positive-class ECE), smooth ECE,
    ECD, and RCL = (EPSR_raw - EPSR_cal) / EPSR_raw of the cross-entropy and the Brier score for
    each calibrator under 5-fold cross-validation (see the module docstring). The interval of a
    metric is the (alpha/2, 1 - alpha/2) percentiles of its values on B = ``n_boot`` resamples of
    the N samples drawn with replacement (RCL: a point estimate). Cost: one cross-validated fit per
    calibrator, and the resamples evaluated many at a time from per-sample values and sample
    counts rather than one by one.

    Source: Ferrer & Ramos (2024), eqs. 8-9 (NCE, NBS), Sec. 2.3.1 (normalized risk), eq. 33 (RCL)
    and App. E (percentile bootstrap, after Efron & Tibshirani (1993)); Silva Filho et al. (2023),
    Defs. 1, 4 and 6 (the ECEs); Błasiok & Nakkiran (2023) (smooth ECE); "An entropic metric" (2025)
    (ECD).

    Parameters
    ----------
    scores : array of shape (N, K)
        Posteriors of kind ``kind``.
    labels : array of shape (N,)
        True classes in [0, K).
    kind : {"probs", "logprobs", "logits"}
        What ``scores`` hold; nothing is guessed from the values.
    costs : dict of name -> (K, K) cost matrix, optional
        Bayes risks to report (default: 0-1 costs).
    priors : array of shape (K,), optional
        Weight each class to these priors in NCE, NBS and the risks (Ferrer & Ramos (2024), eqs. 36-37).
    n_boot : int
        Bootstrap resamples for the intervals and for the calibrators' evidence (0: none).
    alpha : float
        1 - the intervals' level.
    seed : int
        Seed of the resamples and of the cross-validation folds.
    progress : callable, optional
        Receives progress messages.
    overwrite : bool
        ``scores`` is a float64 array the caller no longer needs: validate it in its own memory
        instead of beside a copy (see :func:`calib.validation.as_logprobs`).
    fit_samples : int or None
        The calibrators (RCL, gains, recommendation) are cross-validated on at most this many samples:
        beyond it, on a seeded random subset of this size (in sample order), so that their fits' memory
        and time stay bounded (an RCL over 10^6 samples has a standard error far below its printed
        digits). None: on all samples. The other metrics always use every sample.

    Returns
    -------
    Summary
        The metrics with intervals, RCL per calibrator, each calibrator's paired-bootstrap gain and the
        recommendation: the calibrator with the largest gain in log loss (in Brier score when the raw
        log loss is infinite) among those whose interval of the gain lies above 0, or none.

    Raises
    ------
    CalibInputError
        For invalid inputs, or labels whose largest class has fewer than 5 samples (the RCL rows use
        5-fold cross-validation).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p1 = rng.uniform(0.05, 0.95, 400)
    >>> y = (rng.random(400) < p1).astype(int)
    >>> s = evaluate(np.column_stack([1 - p1, p1]), y, kind="probs", n_boot=20)
    >>> round(s.metrics["accuracy"].value, 3), s.recommended.startswith("none")
    (0.752, True)
    """
    logp, y = check_inputs(scores, labels, kind, overwrite=overwrite)
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
    subset = _fit_subset(y.size, fit_samples, seed)
    fit_logp, fit_y = (logp, y) if subset is None else (logp[subset], y[subset])
    summary.fit_samples = fit_y.size
    if subset is not None:
        say(f"calibrators: cross-validated on a random {fit_y.size} of the {y.size} samples (fit_samples)")
    # The raw losses are kept as their means; the vector behind the gains is recomputed per calibrator.
    raw_means = {score: _per_sample_loss(fit_logp, fit_y, score) for score in ("log loss", "Brier")}
    score = "log loss" if np.isfinite(raw_means["log loss"]).all() else "Brier"
    raw_means = {name: float(np.mean(values)) for name, values in raw_means.items()}
    gains = {}
    # A small problem (its resamples fit one count matrix) overlaps work: two calibrators fit at once
    # and the matrix is drawn meanwhile. A large one works step by step, so that its memory stays flat
    # (each thread's freed memory stays with its allocator arena).
    small = n_boot <= resamples_per_matrix(y.size)
    matrices = counted_resamples(y.size, n_boot=n_boot, seed=seed, full_sample_first=True)
    if small:
        matrices = _drawn_ahead(matrices)
    # The fits' notes (e.g. exact zeros that dominate a fold's fit) come from the pool's threads: they are
    # gathered (the filters are the process's) and told once.
    with warnings.catch_warnings(record=True) as notes:
        warnings.simplefilter("always", CalibInputWarning)
        for name, own in _calibrated_losses(fit_logp, fit_y, seed, say, threads=_FIT_THREADS if small else 1):
            summary.metrics[f"RCL-CE {name}"] = Metric(_relative_loss(raw_means["log loss"], own["log loss"]))
            summary.metrics[f"RCL-BS {name}"] = Metric(_relative_loss(raw_means["Brier"], own["Brier"]))
            gains[name] = np.subtract(_per_sample_loss(fit_logp, fit_y, score), own[score], out=own[score])
            del own  # before the next calibrator's fit
    _retell(notes, len(gains) * RCL_FOLDS)
    del fit_logp
    # The full sample is column 0 of the first count matrix: its metrics and the resamples' in one pass,
    # with the gains when they are per sample of the same data (paired); a subset's gains are resampled apart.
    resampler = Resampler(logp, y, costs, priors, means=gains if subset is None else None)
    say("metrics on the full data" + (f" and {n_boot} bootstrap resamples" if n_boot else ""))
    draws, resamples = [], _Phase("bootstrap", n_boot, say)
    for counts in matrices:
        metrics, means = resampler(counts)
        draws.append(np.column_stack([*metrics.values(), means]))
        if n_boot:
            resamples.advance(counts.shape[1] - (len(draws) == 1))
        del counts  # before the generator builds the next matrix
    draws = np.concatenate(draws)
    point, draws = dict(zip(metrics, draws[0, : len(metrics)], strict=True)), draws[1:]
    gain_draws = draws[:, len(metrics) :] if subset is None else _resampled_means(gains, n_boot, seed)
    if n_boot:
        values = np.array(list(point.values()))
        low, high = _within_ranges(list(point), *basic_interval(draws[:, : len(metrics)], values, alpha))
        gain_low, gain_high = basic_interval(gain_draws, [np.mean(g) for g in gains.values()], alpha)
        summary.interval_method = (
            f"{round(100 * (1 - alpha))} % basic bootstrap intervals (Davison & Hinkley (1997)), {n_boot} resamples"
        )
        summary.interval_notes = _outside_notes(point, low, high, draws[:, : len(metrics)])
    metrics = {
        name: Metric(float(value), *(float(low[i]), float(high[i])) if n_boot else ())
        for i, (name, value) in enumerate(point.items())
    }
    summary.metrics = metrics | summary.metrics
    for i, (name, gain) in enumerate(gains.items()):
        bounds = (float(gain_low[i]), float(gain_high[i])) if n_boot else ()
        summary.gains[name] = Metric(float(np.mean(gain)), *bounds)
    summary.gain_score = score
    summary.recommended = _recommendation(summary.gains, score, n_boot, alpha)
    say("CORP decomposition" + (f" and MCB test ({n_boot} resamples)" if n_boot else ""))
    summary.corp = corp_summary(logp, y, n_resamples=n_boot, seed=seed)
    return summary


def corp_view(logp: np.ndarray, labels: np.ndarray) -> tuple[str, np.ndarray, np.ndarray]:
    """The binary problem CORP reads from validated log-posteriors: for two classes the probability of
    class 1 against the label being 1, for more the top label's confidence against it being right."""
    if logp.shape[1] == 2:
        return "positive class", np.exp(logp[:, 1]), labels == 1
    return "top label", np.exp(logp.max(axis=1)), logp.argmax(axis=1) == labels


def corp_summary(logp: np.ndarray, labels: np.ndarray, *, n_resamples: int, seed: int) -> CorpSummary:
    """:class:`CorpSummary` of validated log-posteriors (:func:`corp_view`; the MCB test on at most
    :data:`CORP_TEST_SAMPLES` samples, none with ``n_resamples`` 0)."""
    lens, confidence, outcome = corp_view(logp, labels)
    report = corp_report(confidence, outcome, n_resamples=n_resamples, seed=seed, test_samples=CORP_TEST_SAMPLES)
    return CorpSummary(lens, report, n_resamples, min(labels.size, CORP_TEST_SAMPLES) if n_resamples else 0)


def _metric_range(name: str) -> tuple[float, float]:
    """The values a bootstrapped metric can take (an interval is clipped to them)."""
    if name == "accuracy" or "ECE" in name:
        return 0.0, 1.0
    if name == "ECD":  # one datum's term is at least 1 - 1/p* ("An entropic metric" (2025))
        return -0.27846, np.inf
    return 0.0, np.inf


def _within_ranges(names: list[str], low: np.ndarray, high: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Basic intervals clipped to each metric's range (a reflected percentile can leave it)."""
    lower, upper = np.array([_metric_range(n) for n in names]).T
    return np.clip(low, lower, upper), np.clip(high, lower, upper)


def _outside_notes(point: dict[str, float], low: np.ndarray, high: np.ndarray, draws: np.ndarray) -> list[str]:
    """Why an estimate lies outside its interval: the resamples say it is biased, by how much."""
    notes = []
    for i, (name, value) in enumerate(point.items()):
        if np.isfinite(value) and not low[i] <= value <= high[i]:
            bias = float(np.mean(draws[:, i])) - value
            notes.append(
                f"{name} {value:.4f} lies outside its interval: its resamples average {value + bias:.4f}, so the "
                f"estimate is biased by about {bias:+.4f} (a calibration error measured on finite samples is biased "
                "upward); the basic interval, reflected about the estimate, is for the true value"
            )
    return notes


def _drawn_ahead(matrices: Iterator[np.ndarray]) -> Iterator[np.ndarray]:
    """``matrices`` (count matrices), the first of them drawn from now on in a thread of its own: the
    random draws and counts do not wait for the calibrators' fits, which leave a core idle at times.
    Worth it when that matrix holds every resample; with several, it would only add one matrix to the
    fits' memory."""
    pool = ThreadPoolExecutor(max_workers=1)
    pending = pool.submit(next, matrices)
    pool.shutdown(wait=False)  # the draw goes on; nothing else is submitted

    def in_order() -> Iterator[np.ndarray]:
        nonlocal pending
        first, pending = pending.result(), None
        yield first
        del first  # before the next matrix is built
        yield from matrices

    return in_order()


def _fit_subset(n_samples: int, fit_samples: int | None, seed: int) -> np.ndarray | None:
    """Sorted indices of ``fit_samples`` of ``n_samples`` drawn without replacement (None: all samples),
    from a stream of its own (a child of ``seed``, independent of the bootstrap's)."""
    if fit_samples is None:
        return None
    cap = check_positive_int(fit_samples, "fit_samples", minimum=2 * RCL_FOLDS)
    if n_samples <= cap:
        return None
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1,)))
    return np.sort(rng.choice(n_samples, size=cap, replace=False))


def _resampled_means(values: dict[str, np.ndarray], n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, len(values)): the mean of each vector of ``values`` (all of one length n) over each
    bootstrap resample of its n samples (:func:`calib.resampling.bootstrap.counted_resamples` with ``seed``)."""
    if not n_boot or not values:
        return np.empty((n_boot, len(values)))
    matrix = np.column_stack(list(values.values()))
    out = []
    for counts in counted_resamples(matrix.shape[0], n_boot=n_boot, seed=seed):
        total = sum(ResampledSums(matrix[rows])(c) for rows, c in float_chunks(counts))
        out.append(total.T / matrix.shape[0])
    return np.concatenate(out)


def _retell(notes: list, n_fits: int) -> None:
    """The calibrators' notes of the cross-validated fits, once: how many fits gave one, and the first."""
    fits = [n for n in notes if issubclass(n.category, CalibInputWarning)]
    if fits:
        first = fits[0].message
        head = f"{len(fits)} of the {n_fits} cross-validated calibrator fits noted: "
        warnings.warn(
            CalibInputWarning(head + str(first), cli_message=head + getattr(first, "cli_message", str(first))),
            stacklevel=3,
        )
    for other in notes:
        if not issubclass(other.category, CalibInputWarning):
            warnings.warn_explicit(other.message, other.category, other.filename, other.lineno)


def _recommendation(gains: dict[str, Metric], score: str, n_boot: int, alpha: float) -> str:
    """The calibrator with the largest mean gain among those whose interval of the gain lies above 0."""
    if not n_boot:
        return "none assessed: the evidence needs bootstrap resamples (n_boot > 0)"
    better = {name: g.value for name, g in gains.items() if g.low > 0}
    if not better:
        level = round(100 * (1 - alpha))
        return f"none: no calibrator lowers the {score} beyond noise ({level} % paired bootstrap interval includes 0)"
    return max(better, key=better.get)
