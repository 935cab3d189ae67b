"""Binned calibration errors (ECE, MCE) as one configured estimator, and the reliability bins behind them.

:class:`BinnedCalibrationError` is configured once (target, bins, edge rule, norm, weighting,
debiasing) and called on posteriors; every binned ECE and MCE of the library, the other libraries'
presets (:mod:`calib.calibration_errors.presets`) and the configs' named metrics are instances of
it. :func:`reliability_bins` bins one score against one outcome (the diagram of a reliability
plot), and :class:`ReliabilityBins` turns bins into errors. Sources are in the class docstring;
argmax ties go to the first class (as numpy), which the survey's Table 7 needs; probabilities are
binned as given (see :func:`calib.validation.as_probs`), so scores on bin edges stay on them. Values
are fractions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated

import numpy as np
from scipy.special import betaincinv

from calib._internal.declared import check_fields
from calib.calibration_errors.binning import (
    EDGE_GRIDS,
    EDGE_TOLERANCE,
    EdgeRule,
    Strategy,
    bin_statistics,
    strategy_bin_ids,
    strategy_edges,
    strategy_name,
)
from calib.calibration_errors.miscalibration import cell_statistics, distance
from calib.validation import (
    CalibInputError,
    Choice,
    Flag,
    NBins,
    Number,
    as_labels,
    as_probs,
    as_sample_weights,
    as_vector,
    check,
    effective_size,
    top_label,
)

NORMS = ("l1", "l2", "squared", "max")
TARGETS = ("top_label", "binary", "classwise", "canonical", "auto")


@dataclass(frozen=True)
class ReliabilityBins:
    """Per-bin arrays of a reliability diagram; NaN marks the means of empty bins.

    ``edges`` are the M + 1 bin edges (for equal-mass bins, those of
    :func:`calib.calibration_errors.binning.equal_mass_edges`); None where they are not known. Bins of
    weighted samples hold their summed weights in ``counts`` (floats) and weighted means; the errors are
    then weighted (N the total weight), and the debiased form reads the weights as frequencies (a sample
    of weight 3 as three samples). ``weight_squares``, each bin's sum of squared weights, gives the
    Clopper-Pearson intervals of :meth:`frequency_intervals` Kish's effective size per bin; None (the
    default) reads ``counts`` as counts of samples.
    """

    edges: np.ndarray | None
    counts: np.ndarray
    mean_confidence: np.ndarray
    frequency: np.ndarray
    weight_squares: np.ndarray | None = None

    @property
    def occupied(self) -> np.ndarray:
        return self.counts > 0

    def ece(self, norm: str = "l1", *, average: bool = False, debiased: bool = False) -> float:
        """Calibration error of the bins in ``norm``, by :func:`binned_error`."""
        return binned_error(
            self.counts[None],
            self.counts.sum(),
            frequency=self.frequency[None],
            mean_score=self.mean_confidence[None],
            norm=norm,
            average=average,
            debiased=debiased,
        )

    def mce(self) -> float:
        """Largest gap over the non-empty bins (Def. 2)."""
        return self.ece("max")

    def effective_sizes(self) -> np.ndarray:
        """Each bin's size as its frequency's interval reads it: Kish's effective size n_eff = (sum w)^2 /
        sum w^2 of its weights (Kish (1965), Survey Sampling; :func:`calib.validation.effective_size`) when
        ``weight_squares`` is given, else ``counts``; 0 for an empty bin.

        Examples
        --------
        >>> bins = reliability_bins([0.1, 0.2, 0.8], [0, 1, 1], n_bins=2, sample_weight=[1, 10, 5])
        >>> [round(float(n), 4) for n in bins.effective_sizes()]  # 121 / 101, and one sample
        [1.198, 1.0]
        """
        n = self.counts.astype(np.float64)
        if self.weight_squares is None:
            return n
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.occupied, effective_size(n, np.asarray(self.weight_squares, np.float64)), 0.0)

    def frequency_intervals(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Clopper-Pearson (exact binomial) interval of each bin's frequency; NaN for empty bins.

        The survey's binomial bars (Sect. 4.1, Fig. 7b): with k positives of n, low = Beta(alpha/2; k,
        n - k + 1) and high = Beta(1 - alpha/2; k + 1, n - k) quantiles, low = 0 for k = 0 and high = 1
        for k = n (Clopper & Pearson (1934), Biometrika 26(4), 404-413). A bin whose outcomes are all 0
        still gets a proper interval, [0, 1 - (alpha/2)^(1/n)] (all 1: [(alpha/2)^(1/n), 1]), where a
        bootstrap interval collapses to a point.

        Without ``weight_squares`` n is the bin's count (k rounded to a whole number when the counts
        are whole). With it (bins of weighted samples) n is the bin's Kish effective size n_eff = (sum
        w)^2 / sum w^2 (:meth:`effective_sizes`; Kish (1965)) and k = frequency * n_eff, whole or not:
        the interval does not depend on the weights' scale (weights c w give the interval of w), and
        equal weights give the interval of the unweighted bin.

        Examples
        --------
        >>> bins = reliability_bins([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1], n_bins=2)
        >>> low, high = bins.frequency_intervals(0.95)
        >>> np.round(low, 4).tolist(), np.round(high, 4).tolist()  # all 0 of two: high 1 - 0.025^(1/2)
        ([0.0, 0.1581], [0.8419, 1.0])
        >>> scaled = reliability_bins([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1], n_bins=2, sample_weight=[1e3] * 4)
        >>> np.allclose(scaled.frequency_intervals(0.95), (low, high))
        True
        """
        if not 0 < level < 1:
            raise CalibInputError(f"level must be in (0, 1); got {level!r}")
        alpha = 1.0 - level
        n = self.effective_sizes()
        k = self.frequency * n
        if self.weight_squares is None and np.array_equal(n, np.round(n)):
            k = np.round(k)  # counts of samples: k is a count too, rounded after the division
        with np.errstate(invalid="ignore"):
            low = np.where(k > 0, betaincinv(k, n - k + 1, alpha / 2), 0.0)
            high = np.where(k < n, betaincinv(k + 1, n - k, 1 - alpha / 2), 1.0)
        empty = self.counts == 0
        return np.where(empty, np.nan, low), np.where(empty, np.nan, high)


def binned_error(
    counts,
    n,
    *,
    frequency=None,
    mean_score=None,
    gap_sums=None,
    outcome_sums=None,
    norm: str = "l1",
    average: bool = False,
    debiased: bool = False,
):
    """The binned calibration error of G sets of M bins: the one formula of every binned ECE and MCE of the
    library (the engine's, :class:`BinnedCalibrationError`'s, the figures' and the bootstrap's).

    With N_gm the count, ybar_gm the mean outcome and sbar_gm the mean score of bin m of column g, and N the
    samples, over the non-empty bins:

        l1 (the ECE):   sum_m (N_gm / N) |ybar_gm - sbar_gm|  =  sum_m |D_gm| / N
        squared:        sum_m (N_gm / N) (ybar_gm - sbar_gm)^2
        l2:             the root of the squared form
        max (the MCE):  max_m |ybar_gm - sbar_gm|

    with D_gm = sum over the bin of (outcome - score); G > 1 columns (the class-wise errors) are averaged
    (the largest taken for "max"). ``average`` weighs the non-empty bins equally instead of by N_gm / N;
    ``debiased`` (squared and l2) subtracts each bin's sampling variance ybar (1 - ybar) / (N_gm - 1) from
    its squared gap (bins of one sample keep theirs). Of weighted samples, N_gm is a bin's summed weight,
    N the total weight, the means and D_gm weighted: the weighted error, whose debiased form reads the
    weights as frequencies.

    The bins come as their means (``frequency`` and ``mean_score``, any norm), or as their sums, the form
    in which resamples keep them (trailing axes, e.g. one per resample, are kept): the gap sums D_gm alone
    for the L1 ECE (a resample's bins need not be counted), and with the counts and, debiased, the outcome
    sums O_gm for the squared form, sum_m [D_gm^2 / N_gm - N_gm ybar_gm (1 - ybar_gm) / (N_gm - 1)] / N
    with ybar_gm = O_gm / N_gm (the same number as from the means).

    Source: Silva Filho et al. (2023), Defs. 1-6 (the ECE and MCE of each target, after Naeini et al.
    (2015) and Guo et al. (2017)); Kumar et al. (2019), Sec. 5 (the L2 form and its debiased
    estimate).

    Parameters
    ----------
    counts : array of shape (G, M), or None with ``gap_sums``
        N_gm.
    n : float or array
        N, the samples (each counted once per column); with ``gap_sums``, one per resample.
    frequency, mean_score : arrays of shape (G, M), optional
        ybar_gm and sbar_gm (NaN or anything in empty bins).
    gap_sums : array of shape (G, M, ...), optional
        D_gm, instead of the means.
    outcome_sums : array of shape (G, M, ...), optional
        O_gm, the outcomes summed per bin (the debiased squared form from sums).
    norm : {"l1", "l2", "squared", "max"}, default "l1"
    average : bool, default False
    debiased : bool, default False

    Returns
    -------
    float, or numpy.ndarray of the trailing shape of ``gap_sums``

    Examples
    --------
    >>> counts, freq, mean = np.array([[2, 2]]), np.array([[0.5, 0.5]]), np.array([[0.25, 0.625]])
    >>> float(binned_error(counts, 4, frequency=freq, mean_score=mean))  # gaps 0.25 and 0.125
    0.1875
    >>> float(binned_error(None, 4, gap_sums=np.array([[0.5, -0.25]])))  # the same bins by their sums
    0.1875
    >>> float(binned_error(counts, 4, frequency=freq, mean_score=mean, norm="max"))
    0.25
    >>> sums = dict(gap_sums=np.array([[0.5, -0.25]]), outcome_sums=np.array([[1.0, 1.0]]))
    >>> float(binned_error(counts, 4, **sums, norm="squared", debiased=True))  # (2 (1/16 - 1/4) + 2 (1/64 - 1/4)) / 4
    -0.2109375
    """
    check(norm, Choice(NORMS), "norm")
    if debiased and norm not in ("l2", "squared"):
        raise CalibInputError(f"debiased applies to norm 'l2' or 'squared' only; got norm={norm!r}")
    if frequency is None:
        if norm == "squared" and not average and counts is not None and (outcome_sums is not None or not debiased):
            return _squared_from_sums(np.asarray(counts, dtype=np.float64), gap_sums, outcome_sums, n, debiased)
        if norm != "l1" or average:
            raise CalibInputError(f"the {norm} error{' of averaged bins' if average else ''} needs the bins' means")
        return np.abs(gap_sums).sum(axis=1).mean(axis=0) / n
    values = [
        _column_error(counts[g], frequency[g], mean_score[g], norm, average, debiased) for g in range(len(counts))
    ]
    return float(max(values)) if norm == "max" else float(np.mean(values))


def _squared_from_sums(counts, gap_sums, outcome_sums, n, debiased: bool):
    """The squared form of :func:`binned_error` from the bins' sums (empty bins add nothing; a bin of one
    sample keeps its squared gap, as from the means)."""
    occupied = counts > 0
    safe = np.where(occupied, counts, 1.0)
    squared = np.where(occupied, np.square(gap_sums) / safe, 0.0)
    if debiased:
        several = counts > 1
        spread = outcome_sums * (counts - outcome_sums) / np.where(several, safe * (counts - 1), 1.0)
        squared = squared - np.where(several, spread, 0.0)
    return squared.sum(axis=1).mean(axis=0) / n


def _column_error(counts, frequency, mean_score, norm: str, average: bool, debiased: bool) -> float:
    """:func:`binned_error` of one column's bins, given by their means."""
    occupied = counts > 0
    gaps = np.abs(frequency[occupied] - mean_score[occupied])
    if norm == "max":
        return float(gaps.max())
    counts = counts[occupied]
    weights = np.full(counts.size, 1.0 / counts.size) if average else counts / counts.sum()
    if norm == "l1":
        return float(np.dot(weights, gaps))
    squared = gaps**2
    if debiased:
        freq = frequency[occupied]
        with np.errstate(divide="ignore", invalid="ignore"):
            variance = np.where(counts > 1, freq * (1.0 - freq) / (counts - 1), 0.0)
        squared = squared - variance
    total = float(np.dot(weights, squared))
    return total if norm == "squared" else float(np.sqrt(max(total, 0.0)))


def reliability_bins(
    confidence, outcome, *, n_bins: int, closed: str = "right", strategy: str = "equal-width", sample_weight=None
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
    strategy : {"equal-width", "equal-mass"}, default "equal-width"
        M equal-width bins on [0, 1], or M equal-mass bins of the confidences
        (:func:`calib.calibration_errors.binning.equal_mass_edges`: N / M scores per bin, rounded, tied
        scores always sharing a bin, a tie across a boundary on the side nearer to it, so the bins are
        equal in mass where ties allow).
    sample_weight : array_like of shape (N,), optional
        A weight >= 0 per sample (:func:`calib.validation.as_sample_weights`): |B_m| becomes the bin's
        summed weight W_m, its means weighted means, N the total weight W, so ECE = sum_m (W_m / W)
        |ybar(B_m) - sbar(B_m)|, and equal-mass bins are equal in weight; integer weights give the bins
        of each sample repeated w_i times. None weighs every sample 1.

    Returns
    -------
    ReliabilityBins
        ``edges`` (the M + 1 edges), ``counts``, ``mean_confidence`` and
        ``frequency`` (NaN for empty bins), with the methods ``ece(norm, average=, debiased=)``,
        ``mce()`` and ``frequency_intervals(level)`` (Clopper-Pearson intervals of the
        frequencies); with ``sample_weight``, ``weight_squares`` (each bin's sum of squared weights, for
        the intervals' effective sizes).

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
    >>> weighted = reliability_bins([0.1, 0.2, 0.8, 0.9], [0, 1, 1, 1], n_bins=2, sample_weight=[3, 1, 1, 1])
    >>> weighted.counts.tolist(), weighted.frequency.tolist(), round(weighted.ece(), 4)
    ([4.0, 2.0], [0.25, 1.0], 0.1333)
    """
    conf = as_vector(confidence, "confidence", unit=True)
    hit = as_vector(outcome, "outcome", unit=True)
    if hit.shape != conf.shape:
        raise CalibInputError(f"confidence and outcome must be 1-D of equal length; got {conf.shape} and {hit.shape}")
    w = as_sample_weights(sample_weight, conf.size)
    strategy = strategy_name(strategy)
    edges = strategy_edges(strategy, n_bins, conf, sample_weight=w)
    ids = strategy_bin_ids(conf, edges, strategy=strategy, closed=closed)
    stats = bin_statistics(ids, conf, hit, n_bins, sample_weight=w)
    return ReliabilityBins(edges, stats.counts, stats.mean_score, stats.frequency, stats.weight_squares)


@dataclass(frozen=True)
class BinnedCalibrationError:
    """A binned calibration error, configured once and then called on posteriors like a metric.

    The scores of the ``target`` are cut into bins B_1..B_M and, over the non-empty bins,

        ECE = sum_m (|B_m| / N) |ybar(B_m) - sbar(B_m)|

    with sbar the mean score and ybar the mean outcome of a bin; ``norm`` turns this into the L2,
    squared or max (MCE) form. Every binned ECE of the library is an instance: the survey's (the
    defaults), the named metrics of the configs, the ``calib`` command's and the other libraries'
    presets (:func:`calib.calibration_errors.presets.ece_preset`). O(N K + M) time (canonical:
    O(N K log N)).

    Source: Silva Filho et al. (2023), Defs. 1-6 (binary, class-j, class-wise and confidence ECE
    and MCE, after Naeini et al. (2015), Kull et al. (2019) and Guo et al. (2017)); Kumar et al.
    (2019) (the L2 norm and its debiased estimate, Sec. 5); Vaicenavicius et al. (2019), eq. 6 (the
    canonical target's estimator over a partition of the simplex); Ferrer & Ramos (2024), eq. 27
    and Sec. 2.5.2 (their ECE and ECEmc are the binary and top-label targets).

    Parameters
    ----------
    target : {"top_label", "binary", "classwise", "canonical", "auto"}, default "top_label"
        What is binned against what. "top_label": the confidence max_k q_k against the argmax
        (first on ties) being right (Def. 6). "binary": q(class 1) against the label being 1; K = 2
        only (Def. 1). "classwise": each class's q_j against the label being j, and the mean of the
        K errors (the max for ``norm="max"``, Defs. 3-5). "canonical": the whole vector q, binned
        on classes 1..K-1 into cells of the simplex, with the total-variation distance
        1/2 ||ybar - qbar||_1 per cell (Vaicenavicius et al. (2019), eq. 6; equal to "binary" for
        K = 2); norms "l1" and "max" only. "auto": "binary" for K = 2, else "top_label".
    n_bins : int, default 15
        M, the number of bins (per class for "canonical"); 1 .. 10000 (:data:`calib.validation.N_BINS`).
    norm : {"l1", "l2", "squared", "max"}, default "l1"
        "l1" is the ECE; "l2" = sqrt(sum_m |B_m|/N gap_m^2) (Kumar et al. (2019)); "squared" is the
        same without the root (the L2 variant of Ferrer & Ramos (2024)); "max" is the MCE, the
        largest gap.
    strategy : {"equal-width", "equal-mass"}, default "equal-width"
        Equal-width bins on [0, 1], or equal-mass bins of the scores (N / M per bin, rounded, tied
        scores sharing a bin on the side of a boundary nearer to them:
        :func:`calib.calibration_errors.binning.equal_mass_edges`, the binning of
        ``calib evaluate --binning equal-mass``). The former names "width" and "mass" are read as these,
        with a FutureWarning.
    closed : {"right", "left"}, default "right"
        Edge rule of equal-width bins: "right" gives [0, e1], (e1, e2], ..., (e_{M-1}, 1], so a
        score on an inner edge goes to the lower bin (the survey's convention, Sect. 4.1); "left"
        gives [0, e1), ..., [e_{M-1}, 1].
    edges : {"exact", "linspace", "float32"}, default "exact"
        How equal-width edges are computed: k / M from the integers, numpy's float64 ``linspace``,
        or torch's float32 ``linspace`` (scores are then rounded to float32 too, as torchmetrics
        bins float32 tensors); see :func:`calib.calibration_errors.binning.grid_edges`.
    edge_tolerance : float, default 1e-12
        Scores this close to an edge count as on it (so 0.1 + 0.2 - 0.1 = 0.20000000000000004 bins like 0.2); 0 bins the
        scores exactly as given, as other libraries do.
    one_in_extra_bin : bool, default False
        Put scores past the last edge (with ``closed="left"``: p = 1) in an (M + 1)-th bin of their
        own, as torchmetrics does.
    average : bool, default False
        Weigh the non-empty bins equally instead of by their counts.
    debiased : bool, default False
        With "l2" or "squared" only: subtract each bin's sampling variance ybar (1 - ybar) /
        (|B_m| - 1) from its squared gap (Kumar et al. (2019), Sec. 5); a bin with one sample keeps
        its raw gap. With sample weights |B_m| is the bin's summed weight: the weights are read as
        frequencies (counts of repeated samples), not as survey weights.

    Sample weights (``sample_weight=`` of the methods, one weight >= 0 per sample) make every count a
    summed weight and every mean a weighted mean: ECE = sum_m (W_m / W) |ybar_m - sbar_m| with W_m the
    weight of bin m and W the total, ybar_m and sbar_m its weighted means; equal-mass bins are equal in
    weight. Integer weights give the error of the samples repeated w_i times (weight 0 drops a sample).

    Methods
    -------
    __call__(scores, labels, *, kind, sample_weight=None)
        The error of posteriors ``scores`` (N, K) against ``labels``, a float.
    reliability(scores, labels, *, kind, sample_weight=None)
        The :class:`ReliabilityBins` the error is computed from (K of them for "classwise").
    with_scores(scores, *, kind, sample_weight=None)
        The error of fixed scores as a function of the labels alone (for label resampling tests).
    binned_columns(probs, labels, sample_weight=None)
        The binned scores, outcomes and bin ids, as the batched bootstrap uses them.

    Raises
    ------
    CalibInputError
        For an unknown or invalid setting, named with the values it accepts.

    Examples
    --------
    >>> scores = [[0.7, 0.2, 0.1], [0.5, 0.3, 0.2], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6], [0.3, 0.3, 0.4]]
    >>> labels = [0, 1, 1, 2, 0]
    >>> ece = BinnedCalibrationError(n_bins=5)
    >>> round(ece(scores, labels, kind="probs"), 4)
    0.2
    >>> round(BinnedCalibrationError("classwise", n_bins=5)(scores, labels, kind="probs"), 4)
    0.2667
    >>> round(BinnedCalibrationError(n_bins=5, norm="l2")(scores, labels, kind="probs"), 4)
    0.2408
    >>> p1 = [0.45, 0.5, 0.55, 0.95, 1.0]
    >>> binary = BinnedCalibrationError("binary", n_bins=10)
    >>> round(binary([[1 - p, p] for p in p1], [1, 0, 1, 1, 0], kind="probs"), 4)
    0.29
    >>> round(ece(scores, labels, kind="probs", sample_weight=[2, 1, 1, 1, 0]), 4)  # the first twice, no last
    0.18
    """

    target: Annotated[str, Choice(TARGETS)] = "top_label"
    n_bins: NBins = 15
    norm: Annotated[str, Choice(NORMS)] = "l1"
    strategy: Strategy = "equal-width"
    closed: EdgeRule = "right"
    edges: Annotated[str, Choice(EDGE_GRIDS)] = "exact"
    edge_tolerance: Annotated[float, Number(0, 1, closed="low")] = EDGE_TOLERANCE
    one_in_extra_bin: Flag = False
    average: Flag = False
    debiased: Flag = False

    def __post_init__(self):
        check_fields(self)
        object.__setattr__(self, "strategy", strategy_name(self.strategy))
        # The rules across fields.
        if self.debiased and self.norm not in ("l2", "squared"):
            raise CalibInputError(f"debiased applies to norm 'l2' or 'squared' only; got norm={self.norm!r}")
        if self.target == "canonical" and self.norm not in ("l1", "max"):
            raise CalibInputError(f"target='canonical' takes norm 'l1' or 'max'; got norm={self.norm!r}")

    def __call__(self, scores, labels, *, kind: str, sample_weight=None) -> float:
        """The calibration error of ``scores`` against ``labels``.

        Parameters
        ----------
        scores : array_like of shape (N, K)
            Posteriors of N samples, of kind ``kind``. Probabilities are binned as given, so scores
            on bin edges stay on them.
        labels : array_like of shape (N,)
            The true class of each sample, integers in [0, K).
        kind : {"probs", "logprobs", "logits"}
            What ``scores`` hold; nothing is guessed from the values.
        sample_weight : array_like of shape (N,), optional
            A weight >= 0 per sample (:func:`calib.validation.as_sample_weights`): the weighted error of
            the class's text (bins' summed weights and weighted means). None weighs every sample 1.

        Returns
        -------
        float
            The error, a fraction (not x 100).

        Raises
        ------
        CalibInputError
            For invalid inputs, or K != 2 with ``target="binary"``.
        """
        probs, y = probs_and_labels(scores, labels, kind)
        w = as_sample_weights(sample_weight, y.size)
        if self.resolved_target(probs.shape[1]) == "canonical":
            return self._canonical(probs, y, w)
        scores, outcomes, ids = self.binned_columns(probs, y, w)
        counts, score_sums = self._counts_and_sums(ids, scores, w)
        return self._error(counts, score_sums, self._sums(ids, outcomes, w))

    def with_scores(self, scores, *, kind: str, sample_weight=None) -> Callable[..., float]:
        """The error of fixed posteriors ``scores`` as a function of the labels alone.

        ``with_scores(scores, kind=k)(labels)`` equals ``self(scores, labels, kind=k)`` bit for bit;
        the probabilities are validated and binned once, and each bin's count and score sum counted
        once, so a test that redraws the labels thousands of times (e.g.
        :func:`calib.resampling.significance.resampling_test`) counts only the outcomes per draw.

        Parameters
        ----------
        scores : array_like of shape (N, K)
            Posteriors of N samples, of kind ``kind``.
        kind : {"probs", "logprobs", "logits"}
            What ``scores`` hold; nothing is guessed from the values.
        sample_weight : array_like of shape (N,), optional
            A weight >= 0 per sample, fixed with the scores (as for calling the estimator).

        Returns
        -------
        callable
            ``labels -> float``, labels of shape (N,) as for calling the estimator.

        Examples
        --------
        >>> ece = BinnedCalibrationError("classwise", n_bins=5)
        >>> scores = [[0.7, 0.2, 0.1], [0.5, 0.3, 0.2], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]]
        >>> of_labels = ece.with_scores(scores, kind="probs")
        >>> of_labels([0, 1, 1, 2]) == ece(scores, [0, 1, 1, 2], kind="probs")
        True
        """
        probs = as_probs(scores, kind)
        n, k = probs.shape
        w = as_sample_weights(sample_weight, n)
        target = self.resolved_target(k)
        if target == "canonical":  # its cells hold the predictions of each class: nothing to count ahead
            return lambda labels: self._canonical(probs, as_labels(labels, n, k), w)
        binned, _, ids = self.binned_columns(probs, np.zeros(n, dtype=np.int64), w)  # the scores ignore the labels
        counts, score_sums = self._counts_and_sums(ids, binned, w)

        def error(labels) -> float:
            outcomes = target_columns(probs, as_labels(labels, n, k), target)[1]
            return self._error(counts, score_sums, self._sums(ids, outcomes, w))

        return error

    def _sums(self, ids: np.ndarray, values: np.ndarray, w: np.ndarray | None = None) -> np.ndarray:
        """(G, slots): each column's sum of ``values`` per bin, weighted by ``w`` when given."""
        return np.stack(
            [
                np.bincount(ids[:, g], weights=values[:, g] if w is None else w * values[:, g], minlength=self.n_slots)
                for g in range(ids.shape[1])
            ]
        )

    def _counts_and_sums(
        self, ids: np.ndarray, scores: np.ndarray, w: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(G, slots) each: the bins' counts (summed weights, with ``w``) and score sums."""
        counts = np.stack([np.bincount(ids[:, g], weights=w, minlength=self.n_slots) for g in range(ids.shape[1])])
        return counts, self._sums(ids, scores, w)

    def _error(self, counts: np.ndarray, score_sums: np.ndarray, outcome_sums: np.ndarray) -> float:
        """The error of the bins' counts and sums (G, slots), by :func:`binned_error`."""
        with np.errstate(invalid="ignore", divide="ignore"):
            frequency, mean_score = outcome_sums / counts, score_sums / counts
        return binned_error(
            counts,
            counts[0].sum(),
            frequency=frequency,
            mean_score=mean_score,
            norm=self.norm,
            average=self.average,
            debiased=self.debiased,
        )

    def reliability(self, scores, labels, *, kind: str, sample_weight=None) -> tuple[ReliabilityBins, ...]:
        """The reliability bins the error is computed from: one set, or K for ``target="classwise"``.

        Parameters
        ----------
        scores, labels, kind, sample_weight
            As for calling the estimator (with weights, the bins' counts are their summed weights).

        Returns
        -------
        tuple of ReliabilityBins
            Class j's bins at position j for "classwise"; a single entry otherwise.

        Raises
        ------
        CalibInputError
            For invalid inputs, K != 2 with ``target="binary"``, or ``target="canonical"`` (its
            cells are not bins of one score).

        Examples
        --------
        >>> (bins,) = BinnedCalibrationError(n_bins=2).reliability([[0.9, 0.1], [0.4, 0.6]], [0, 0], kind="probs")
        >>> bins.counts.tolist(), bins.frequency.tolist()
        ([0, 2], [nan, 0.5])
        """
        probs, y = probs_and_labels(scores, labels, kind)
        w = as_sample_weights(sample_weight, y.size)
        if self.resolved_target(probs.shape[1]) == "canonical":
            raise CalibInputError(
                "target='canonical' bins cells of the simplex, not one score: it has no reliability bins"
            )
        return self._bins(probs, y, w)

    def resolved_target(self, n_classes: int) -> str:
        """The target for K = ``n_classes`` ("auto" resolved); checks that "binary" has K = 2."""
        if self.target == "auto":
            return lens_target(n_classes)
        if self.target == "binary" and n_classes != 2:
            raise CalibInputError(
                f"target='binary' needs scores with K = 2 columns; got {n_classes}. Use target='top_label' "
                "or 'classwise' for K > 2"
            )
        return self.target

    def binned_columns(
        self, probs: np.ndarray, labels: np.ndarray, sample_weight: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Scores, outcomes and bin ids, each (N, G), of validated ``probs`` (N, K) and ``labels``.

        G is K for "classwise" (column j: class j against the rest) and 1 otherwise; ids are in
        [0, M), or [0, M] with ``one_in_extra_bin``. Equal-mass bins are those of each column's scores
        (equal in the validated weights ``sample_weight`` when given). Not for "canonical".
        """
        scores, outcomes = target_columns(probs, labels, self.resolved_target(probs.shape[1]))
        if self.edges == "float32":
            scores = scores.astype(np.float32).astype(np.float64)
        return scores, outcomes, self._bin_ids(scores, self.bin_edges(scores, sample_weight))

    @property
    def n_slots(self) -> int:
        """How many bin ids there are: M, or M + 1 with ``one_in_extra_bin``."""
        return self.n_bins + 1 if self.one_in_extra_bin and self.strategy == "equal-width" else self.n_bins

    def bin_edges(self, scores: np.ndarray, sample_weight: np.ndarray | None = None) -> np.ndarray:
        """The bins' edges for binned ``scores`` (N, G): (M + 1,) equal-width edges on the ``edges`` grid, or
        (M + 1, G) equal-mass edges, one set per column (equal in ``sample_weight``, one per row, if given)."""
        return strategy_edges(self.strategy, self.n_bins, scores, grid=self.edges, sample_weight=sample_weight)

    def _bin_ids(self, scores: np.ndarray, edges: np.ndarray) -> np.ndarray:
        return strategy_bin_ids(
            scores,
            edges,
            strategy=self.strategy,
            closed=self.closed,
            tolerance=self.edge_tolerance,
            one_in_extra_bin=self.one_in_extra_bin,
        )

    def _bins(self, probs: np.ndarray, labels: np.ndarray, w: np.ndarray | None) -> tuple[ReliabilityBins, ...]:
        scores, outcomes, ids = self.binned_columns(probs, labels, w)
        edges = self.bin_edges(scores, w)
        if self.one_in_extra_bin and self.strategy == "equal-width":
            edges = np.r_[edges, 1.0]
        found = []
        for g in range(scores.shape[1]):
            stats = bin_statistics(ids[:, g], scores[:, g], outcomes[:, g], self.n_slots, sample_weight=w)
            column_edges = edges if edges.ndim == 1 else edges[:, g]
            found.append(
                ReliabilityBins(column_edges, stats.counts, stats.mean_score, stats.frequency, stats.weight_squares)
            )
        return tuple(found)

    def _canonical(self, probs: np.ndarray, labels: np.ndarray, w: np.ndarray | None = None) -> float:
        coordinates = probs[:, 1:]
        if self.edges == "float32":
            coordinates = coordinates.astype(np.float32).astype(np.float64)
        ids = self._bin_ids(coordinates, self.bin_edges(coordinates, w))
        if w is not None:  # a cell of samples of weight 0 alone is no cell of the repeated data
            probs, labels, ids, w = probs[w > 0], labels[w > 0], ids[w > 0], w[w > 0]
        _, cells = np.unique(ids, axis=0, return_inverse=True)
        cells = cells.ravel()
        n_cells = int(cells.max()) + 1
        if w is None:
            stats = cell_statistics(probs, labels, cells, n_cells)
            frequency, mean_prediction, share = stats.frequency, stats.mean_prediction, stats.share
        else:
            weight = np.bincount(cells, weights=w, minlength=n_cells)
            mean_prediction = (
                np.stack(
                    [np.bincount(cells, weights=w * probs[:, j], minlength=n_cells) for j in range(probs.shape[1])], 1
                )
                / weight[:, None]
            )
            hits = np.bincount(cells * probs.shape[1] + labels, weights=w, minlength=n_cells * probs.shape[1])
            frequency = hits.reshape(n_cells, probs.shape[1]) / weight[:, None]
            share = weight / weight.sum()
        gaps = distance(frequency, mean_prediction, "tv")
        if self.norm == "max":
            return float(gaps.max())
        weights = np.full(gaps.size, 1.0 / gaps.size) if self.average else share
        return float(np.dot(weights, gaps))


def lens_target(n_classes: int) -> str:
    """The one binary view of K-class posteriors when none is named: "binary" (class 1 against the rest) for
    K = 2, else "top_label" (the argmax's confidence against its being right). ``target="auto"`` and the
    evaluation's lens (:mod:`calib.evaluation.lens`) ask this rule.

    Examples
    --------
    >>> lens_target(2), lens_target(10)
    ('binary', 'top_label')
    """
    return "binary" if n_classes == 2 else "top_label"


def target_columns(probs: np.ndarray, labels: np.ndarray, target: str) -> tuple[np.ndarray, np.ndarray]:
    """The scores and boolean outcomes, each (N, G), that a resolved ``target`` compares.

    "binary": q(class 1) against the label being 1; "top_label": max_k q_k against the argmax (first on
    ties) being right; "classwise": column j is q_j against the label being j (G = K).
    """
    if target == "binary":
        return probs[:, 1:], (labels == 1)[:, None]
    if target == "top_label":
        confidence, prediction = top_label(probs)
        return confidence[:, None], (prediction == labels)[:, None]
    return probs, np.eye(probs.shape[1], dtype=bool)[labels]


def probs_and_labels(scores, labels, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Validated probabilities (N, K) of posteriors ``scores`` of ``kind`` and their labels."""
    probs = as_probs(scores, kind)
    return probs, as_labels(labels, probs.shape[0], probs.shape[1])
