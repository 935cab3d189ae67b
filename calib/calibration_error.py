"""Binned calibration errors (ECE, MCE) and the reliability-diagram bins behind them.

Sources: Silva Filho et al. (2023), the survey, Defs. 1-6: binary ECE / MCE on the positive-class
score (Naeini et al. (2015)), class-j ECE (class j vs the rest), classwise ECE (mean over classes) and
MCE (max over classes and bins) (Kull et al. (2019)), confidence ECE / MCE on max_j s_j against
argmax being correct (Guo et al. (2017); the ECEmc of Ferrer & Ramos (2024), Sec. 2.5.2; their binary ECE
is eq. 27). ECE = sum_m (|B_m| / N) |ybar(B_m) - sbar(B_m)| over non-empty bins; MCE = max_m of the
gaps. Norms: ``l1`` (the ECE), ``l2`` = sqrt(sum_m |B_m|/N gap_m^2) (Kumar et al. (2019)), ``squared``
(the same without the root, the L2 variant of Ferrer & Ramos (2024)), ``max`` (the MCE). ``average`` weighs the
non-empty bins equally instead of by count. ``debiased`` (l2 / squared only) subtracts each bin's
sampling variance ybar (1 - ybar) / (|B_m| - 1) from its squared gap (Kumar et al. (2019), Sec. 5);
bins with one sample keep their raw gap. Argmax ties go to the first class (as numpy), which the
survey's Table 7 needs. Probabilities are binned as given (see :func:`calib.validation.as_probs`),
so scores on bin edges stay on them. Values are fractions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import betaincinv

from calib.binning import (
    BinStatistics,
    bin_ids,
    bin_statistics,
    equal_width_edges,
    equal_width_statistics,
    equal_width_top_label_statistics,
)
from calib.validation import CalibInputError, as_labels, as_probs, as_vector, top_label

NORMS = ("l1", "l2", "squared", "max")


@dataclass(frozen=True)
class ReliabilityBins:
    """Per-bin arrays of a reliability diagram; NaN marks the means of empty bins.

    ``edges`` are the M + 1 bin edges of equal-width bins, None for equal-mass bins.
    """

    edges: np.ndarray | None
    counts: np.ndarray
    mean_confidence: np.ndarray
    frequency: np.ndarray

    @property
    def occupied(self) -> np.ndarray:
        return self.counts > 0

    def gaps(self) -> np.ndarray:
        """|frequency - mean confidence| of the non-empty bins."""
        full = self.occupied
        return np.abs(self.frequency[full] - self.mean_confidence[full])

    def ece(self, norm: str = "l1", *, average: bool = False, debiased: bool = False) -> float:
        """Calibration error of the bins in ``norm`` (see the module docstring)."""
        if norm not in NORMS:
            raise CalibInputError(f"norm must be one of {NORMS}; got {norm!r}")
        if debiased and norm not in ("l2", "squared"):
            raise CalibInputError(f"debiased applies to norm 'l2' or 'squared' only; got norm={norm!r}")
        gaps = self.gaps()
        if norm == "max":
            return float(gaps.max())
        counts = self.counts[self.occupied]
        weights = np.full(counts.size, 1.0 / counts.size) if average else counts / counts.sum()
        if norm == "l1":
            return float(np.dot(weights, gaps))
        squared = gaps**2
        if debiased:
            freq = self.frequency[self.occupied]
            with np.errstate(divide="ignore", invalid="ignore"):
                variance = np.where(counts > 1, freq * (1.0 - freq) / (counts - 1), 0.0)
            squared = squared - variance
        total = float(np.dot(weights, squared))
        if norm == "squared":
            return total
        return float(np.sqrt(max(total, 0.0)))

    def mce(self) -> float:
        """Largest gap over the non-empty bins (Def. 2)."""
        return self.ece("max")

    def frequency_intervals(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Clopper-Pearson (exact binomial) interval of each bin's frequency; NaN for empty bins.

        The survey's binomial bars (Sect. 4.1, Fig. 7b; Clopper & Pearson (1934)): with k positives of
        n, low = Beta(alpha/2; k, n - k + 1) and high = Beta(1 - alpha/2; k + 1, n - k) quantiles.
        """
        if not 0 < level < 1:
            raise CalibInputError(f"level must be in (0, 1); got {level!r}")
        alpha = 1.0 - level
        n = self.counts.astype(np.float64)
        k = np.round(self.frequency * n)
        with np.errstate(invalid="ignore"):
            low = np.where(k > 0, betaincinv(k, n - k + 1, alpha / 2), 0.0)
            high = np.where(k < n, betaincinv(k + 1, n - k, 1 - alpha / 2), 1.0)
        empty = self.counts == 0
        return np.where(empty, np.nan, low), np.where(empty, np.nan, high)


def reliability_bins(
    confidence, outcome, *, n_bins: int, closed: str = "right", strategy: str = "width"
) -> ReliabilityBins:
    """Bin ``confidence`` (equal-width with edge rule ``closed``, or equal-mass) and average it and ``outcome``.

    Both are non-empty 1-D vectors of equal length with values in [0, 1] (``outcome`` is usually 0/1).
    """
    conf = as_vector(confidence, "confidence", unit=True)
    hit = as_vector(outcome, "outcome", unit=True)
    if hit.shape != conf.shape:
        raise CalibInputError(f"confidence and outcome must be 1-D of equal length; got {conf.shape} and {hit.shape}")
    if strategy == "width":
        return _width_bins(equal_width_statistics(conf, hit, n_bins, closed=closed), n_bins)
    stats = bin_statistics(bin_ids(conf, n_bins, strategy=strategy, closed=closed), conf, hit, n_bins)
    return ReliabilityBins(None, stats.counts, stats.mean_score, stats.frequency)


def _width_bins(stats: BinStatistics, n_bins: int) -> ReliabilityBins:
    return ReliabilityBins(equal_width_edges(n_bins), stats.counts, stats.mean_score, stats.frequency)


def _probs_and_labels(scores, labels, kind: str) -> tuple[np.ndarray, np.ndarray]:
    probs = as_probs(scores, kind)
    return probs, as_labels(labels, probs.shape[0], probs.shape[1])


def class_reliability(scores, labels, cls: int, *, kind: str, n_bins: int, **binning) -> ReliabilityBins:
    """Reliability bins of s_j against the label being j (class j vs the rest, Def. 3)."""
    probs, y = _probs_and_labels(scores, labels, kind)
    if not 0 <= cls < probs.shape[1]:
        raise CalibInputError(f"cls must be a class index in [0, {probs.shape[1]}); got {cls!r}")
    return reliability_bins(probs[:, cls], y == cls, n_bins=n_bins, **binning)


def binary_reliability(scores, labels, *, kind: str, n_bins: int, **binning) -> ReliabilityBins:
    """Reliability bins of q(class 1) against the label being 1 (the positive class, H2 of Ferrer & Ramos (2024))."""
    probs, _ = _probs_and_labels(scores, labels, kind)
    if probs.shape[1] != 2:
        raise CalibInputError(
            f"binary ECE needs scores with K = 2 columns; got {probs.shape[1]}. Use top-label ECE for K > 2"
        )
    return class_reliability(scores, labels, 1, kind=kind, n_bins=n_bins, **binning)


def top_label_reliability(
    scores, labels, *, kind: str, n_bins: int, closed: str = "right", strategy: str = "width"
) -> ReliabilityBins:
    """Reliability bins of the confidence max_k q_k against argmax (first on ties) being correct (Def. 6)."""
    probs, y = _probs_and_labels(scores, labels, kind)
    if strategy == "width":
        return _width_bins(equal_width_top_label_statistics(probs, y, n_bins, closed=closed), n_bins)
    confidence, prediction = top_label(probs)
    return reliability_bins(confidence, prediction == y, n_bins=n_bins, closed=closed, strategy=strategy)


def ece_binary(scores, labels, *, kind: str, n_bins: int, norm: str = "l1", average=False, debiased=False, **binning):
    """Binary ECE on the positive-class score (survey Def. 1; Ferrer & Ramos (2024), eq. 27)."""
    bins = binary_reliability(scores, labels, kind=kind, n_bins=n_bins, **binning)
    return bins.ece(norm, average=average, debiased=debiased)


def mce_binary(scores, labels, *, kind: str, n_bins: int, **binning) -> float:
    """Binary MCE: the largest bin gap (survey Def. 2)."""
    return binary_reliability(scores, labels, kind=kind, n_bins=n_bins, **binning).mce()


def ece_class(scores, labels, cls: int, *, kind: str, n_bins: int, norm="l1", average=False, debiased=False, **binning):
    """Class-j ECE: the binary ECE of class ``cls`` against the rest (survey Def. 3)."""
    bins = class_reliability(scores, labels, cls, kind=kind, n_bins=n_bins, **binning)
    return bins.ece(norm, average=average, debiased=debiased)


def ece_classwise(scores, labels, *, kind: str, n_bins: int, norm="l1", average=False, debiased=False, **binning):
    """Classwise ECE: the mean of the K class-j ECEs (survey Def. 4)."""
    probs, y = _probs_and_labels(scores, labels, kind)
    values = [
        ece_class(probs, y, j, kind="probs", n_bins=n_bins, norm=norm, average=average, debiased=debiased, **binning)
        for j in range(probs.shape[1])
    ]
    return float(np.mean(values))


def mce_classwise(scores, labels, *, kind: str, n_bins: int, **binning) -> float:
    """Classwise MCE: the largest gap over classes and bins (survey Def. 5)."""
    probs, y = _probs_and_labels(scores, labels, kind)
    return max(
        class_reliability(probs, y, j, kind="probs", n_bins=n_bins, **binning).mce() for j in range(probs.shape[1])
    )


def ece_top_label(scores, labels, *, kind: str, n_bins: int, norm="l1", average=False, debiased=False, **binning):
    """Confidence (top-label) ECE (survey Def. 6); the ECEmc of Ferrer & Ramos (2024), Sec. 2.5.2."""
    bins = top_label_reliability(scores, labels, kind=kind, n_bins=n_bins, **binning)
    return bins.ece(norm, average=average, debiased=debiased)


def mce_top_label(scores, labels, *, kind: str, n_bins: int, **binning) -> float:
    """Confidence MCE: the largest confidence-bin gap (survey Def. 6)."""
    return top_label_reliability(scores, labels, kind=kind, n_bins=n_bins, **binning).mce()
