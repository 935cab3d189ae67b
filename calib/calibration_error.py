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
    """The bins of a reliability diagram: count, mean confidence and observed frequency per bin.

    The confidences are cut into M bins B_1..B_M and each bin gets |B_m|, the mean confidence
    sbar(B_m) and the mean outcome ybar(B_m) (the frequency of positives when the outcomes are 0/1).
    The returned object computes the binned errors of the diagram: ECE = sum_m (|B_m| / N)
    |ybar(B_m) - sbar(B_m)| over the non-empty bins, and MCE = max_m of the same gaps. Confidences
    are binned as given, so values on a bin edge stay on it (values within 1e-12 of an edge count as
    on it). O(N + M) time.

    Source: Silva Filho et al. (2023), Sect. 4.1 (reliability diagrams; right-closed equal-width
    bins), Defs. 1-2 (ECE and MCE).

    Parameters
    ----------
    confidence : array_like of shape (N,)
        Scores in [0, 1] (e.g. the positive-class probability or the top-label confidence); finite,
        non-empty.
    outcome : array_like of shape (N,)
        The outcome of each sample in [0, 1], usually 0/1 (e.g. "the label is 1" or "the argmax is
        right"); same length as ``confidence``.
    n_bins : int
        M, the number of bins (>= 1).
    closed : {"right", "left"}, default "right"
        Edge rule of equal-width bins: "right" gives [0, e1], (e1, e2], ..., (e_{M-1}, 1], so a
        score on an inner edge goes to the lower bin; "left" gives [0, e1), ..., [e_{M-1}, 1], with 1
        in the last bin. Edges are k / M. Ignored by equal-mass bins.
    strategy : {"width", "mass"}, default "width"
        "width": M equal-width bins on [0, 1]; "mass": about N / M scores per bin by rank, tied
        scores always sharing a bin (so some bins may hold more and some none).

    Returns
    -------
    ReliabilityBins
        ``edges`` (the M + 1 edges; None for equal-mass bins), ``counts``, ``mean_confidence`` and
        ``frequency`` (NaN for empty bins), with the methods ``ece(norm, average=, debiased=)``,
        ``mce()``, ``gaps()`` and ``frequency_intervals(level)`` (Clopper-Pearson intervals of the
        frequencies).

    Raises
    ------
    CalibInputError
        For vectors that are empty, not 1-D, of different lengths, non-finite or outside [0, 1], and
        for an invalid ``n_bins``, ``closed`` or ``strategy``.

    Examples
    --------
    >>> bins = reliability_bins([0.1, 0.2, 0.8, 0.9], [0, 1, 1, 1], n_bins=2)
    >>> bins.counts.tolist(), bins.frequency.tolist()
    ([2, 2], [0.5, 1.0])
    >>> round(bins.ece(), 4)
    0.25
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
    """Binary expected calibration error of the positive-class probability.

    The probabilities q_1 of class 1 are cut into M bins and ECE = sum_m (|B_m| / N) |ybar(B_m) -
    sbar(B_m)| over the non-empty bins, where ybar is the fraction of labels equal to 1 in the bin and
    sbar the mean q_1 there. ``norm``, ``average`` and ``debiased`` select the variants below. The
    value is a fraction (not x 100). O(N + M) time.

    Source: Silva Filho et al. (2023), Defs. 1-2, after Naeini et al. (2015); Ferrer & Ramos (2024),
    eq. 27, where class 1 is their positive class H2.

    Parameters
    ----------
    scores : array_like of shape (N, 2)
        Posteriors of N samples, of kind ``kind``. Probabilities are binned as given, so scores on
        bin edges stay on them.
    labels : array_like of shape (N,)
        The true class of each sample, integers in [0, K).
    kind : {"probs", "logprobs", "logits"}
        What ``scores`` hold; nothing is guessed from the values.
    n_bins : int
        M, the number of bins (>= 1).
    norm : {"l1", "l2", "squared", "max"}, default "l1"
        "l1" is the ECE; "l2" = sqrt(sum_m |B_m|/N gap_m^2) (Kumar et al. (2019)); "squared" is the
        same without the root (the L2 variant of Ferrer & Ramos (2024)); "max" is the MCE, the
        largest gap.
    average : bool, default False
        Weigh the non-empty bins equally instead of by their counts.
    debiased : bool, default False
        With "l2" or "squared" only: subtract each bin's sampling variance ybar (1 - ybar) /
        (|B_m| - 1) from its squared gap (Kumar et al. (2019), Sec. 5); a bin with one sample keeps
        its raw gap.
    **binning
        ``closed`` ({"right", "left"}, default "right"): the edge rule of equal-width bins (edges
        k / M); "right" gives [0, e1], (e1, e2], ..., (e_{M-1}, 1], so a score on an inner edge goes
        to the lower bin (the survey's convention), "left" gives [0, e1), ..., [e_{M-1}, 1].
        ``strategy`` ({"width", "mass"}, default "width"): equal-width bins, or equal-mass bins
        (about N / M scores per bin by rank, ties sharing a bin).

    Returns
    -------
    float
        The binned calibration error in ``norm``.

    Raises
    ------
    CalibInputError
        For invalid inputs, scores with K != 2 columns (use :func:`ece_top_label`), an unknown
        ``norm``, ``debiased`` with "l1" or "max", or an invalid ``n_bins``, ``closed`` or
        ``strategy``.

    Examples
    --------
    >>> p1 = [0.45, 0.5, 0.55, 0.95, 1.0]
    >>> scores = [[1 - p, p] for p in p1]
    >>> round(ece_binary(scores, [1, 0, 1, 1, 0], kind="probs", n_bins=10), 4)
    0.29
    >>> round(ece_binary(scores, [1, 0, 1, 1, 0], kind="probs", n_bins=10, closed="left"), 4)
    0.31
    """
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
    """Classwise expected calibration error: the mean over classes of each class's binary ECE.

    For each class j, the probabilities s_j are binned against the outcome "the label is j" (class j
    against the rest) and ECE_j = sum_m (|B_mj| / N) |ybar(B_mj) - sbar(B_mj)|; the classwise ECE is
    (1/K) sum_j ECE_j. ``norm``, ``average`` and ``debiased`` apply to each ECE_j. The value is a
    fraction. O(N K + K M) time.

    Source: Silva Filho et al. (2023), Defs. 3-4, after Kull et al. (2019).

    Parameters
    ----------
    scores : array_like of shape (N, K)
        Posteriors of N samples, of kind ``kind``. Probabilities are binned as given, so scores on
        bin edges stay on them.
    labels : array_like of shape (N,)
        The true class of each sample, integers in [0, K).
    kind : {"probs", "logprobs", "logits"}
        What ``scores`` hold; nothing is guessed from the values.
    n_bins : int
        M, the number of bins (>= 1).
    norm : {"l1", "l2", "squared", "max"}, default "l1"
        "l1" is the ECE; "l2" = sqrt(sum_m |B_m|/N gap_m^2) (Kumar et al. (2019)); "squared" is the
        same without the root (the L2 variant of Ferrer & Ramos (2024)); "max" is the MCE, the
        largest gap.
    average : bool, default False
        Weigh the non-empty bins equally instead of by their counts.
    debiased : bool, default False
        With "l2" or "squared" only: subtract each bin's sampling variance ybar (1 - ybar) /
        (|B_m| - 1) from its squared gap (Kumar et al. (2019), Sec. 5); a bin with one sample keeps
        its raw gap.
    **binning
        ``closed`` ({"right", "left"}, default "right"): the edge rule of equal-width bins (edges
        k / M); "right" gives [0, e1], (e1, e2], ..., (e_{M-1}, 1], so a score on an inner edge goes
        to the lower bin (the survey's convention), "left" gives [0, e1), ..., [e_{M-1}, 1].
        ``strategy`` ({"width", "mass"}, default "width"): equal-width bins, or equal-mass bins
        (about N / M scores per bin by rank, ties sharing a bin).

    Returns
    -------
    float
        The mean of the K class-wise errors.

    Raises
    ------
    CalibInputError
        For invalid inputs, an unknown ``norm``, ``debiased`` with "l1" or "max", or an invalid
        ``n_bins``, ``closed`` or ``strategy``.

    Examples
    --------
    >>> scores = [[0.7, 0.2, 0.1], [0.5, 0.3, 0.2], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6], [0.3, 0.3, 0.4]]
    >>> round(ece_classwise(scores, [0, 1, 1, 2, 0], kind="probs", n_bins=5), 4)
    0.2667
    """
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
    """Confidence (top-label) expected calibration error.

    Each sample's confidence max_j s_j is binned against whether its argmax is the true label (ties
    go to the first class, as numpy's argmax, which the survey's Table 7 needs), and ECE = sum_m
    (|B_m| / N) |acc(B_m) - conf(B_m)| over the non-empty bins. ``norm``, ``average`` and ``debiased``
    select the variants below. The value is a fraction. O(N K + M) time.

    Source: Silva Filho et al. (2023), Def. 6, after Guo et al. (2017); the ECEmc of Ferrer & Ramos
    (2024), Sec. 2.5.2.

    Parameters
    ----------
    scores : array_like of shape (N, K)
        Posteriors of N samples, of kind ``kind``. Probabilities are binned as given, so scores on
        bin edges stay on them.
    labels : array_like of shape (N,)
        The true class of each sample, integers in [0, K).
    kind : {"probs", "logprobs", "logits"}
        What ``scores`` hold; nothing is guessed from the values.
    n_bins : int
        M, the number of bins (>= 1).
    norm : {"l1", "l2", "squared", "max"}, default "l1"
        "l1" is the ECE; "l2" = sqrt(sum_m |B_m|/N gap_m^2) (Kumar et al. (2019)); "squared" is the
        same without the root (the L2 variant of Ferrer & Ramos (2024)); "max" is the MCE, the
        largest gap.
    average : bool, default False
        Weigh the non-empty bins equally instead of by their counts.
    debiased : bool, default False
        With "l2" or "squared" only: subtract each bin's sampling variance ybar (1 - ybar) /
        (|B_m| - 1) from its squared gap (Kumar et al. (2019), Sec. 5); a bin with one sample keeps
        its raw gap.
    **binning
        ``closed`` ({"right", "left"}, default "right"): the edge rule of equal-width bins (edges
        k / M); "right" gives [0, e1], (e1, e2], ..., (e_{M-1}, 1], so a score on an inner edge goes
        to the lower bin (the survey's convention), "left" gives [0, e1), ..., [e_{M-1}, 1].
        ``strategy`` ({"width", "mass"}, default "width"): equal-width bins, or equal-mass bins
        (about N / M scores per bin by rank, ties sharing a bin).

    Returns
    -------
    float
        The binned calibration error of the confidence in ``norm``.

    Raises
    ------
    CalibInputError
        For invalid inputs, an unknown ``norm``, ``debiased`` with "l1" or "max", or an invalid
        ``n_bins``, ``closed`` or ``strategy``.

    Examples
    --------
    >>> scores = [[0.7, 0.2, 0.1], [0.5, 0.3, 0.2], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6], [0.3, 0.3, 0.4]]
    >>> round(ece_top_label(scores, [0, 1, 1, 2, 0], kind="probs", n_bins=5), 4)
    0.2
    >>> round(ece_top_label(scores, [0, 1, 1, 2, 0], kind="probs", n_bins=5, norm="l2"), 4)
    0.2408
    """
    bins = top_label_reliability(scores, labels, kind=kind, n_bins=n_bins, **binning)
    return bins.ece(norm, average=average, debiased=debiased)


def mce_top_label(scores, labels, *, kind: str, n_bins: int, **binning) -> float:
    """Confidence MCE: the largest confidence-bin gap (survey Def. 6)."""
    return top_label_reliability(scores, labels, kind=kind, n_bins=n_bins, **binning).mce()
