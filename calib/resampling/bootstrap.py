"""Bootstrap percentile confidence intervals, for any statistic and batched for additive ones.

Source: Ferrer & Ramos (2024), App. E, after Efron & Tibshirani (1993): draw B resamples of size N with replacement,
compute the metric on each, and take the alpha/2 and 1 - alpha/2 percentiles. A metric that trains
a calibrator (tt or xv) must refit it on every resample; for xv the statistic receives the
original sample ids (``groups``) so duplicates of one sample stay in one fold.

Resample indices come from one ``numpy.random.default_rng(seed)`` stream, drawn in blocks of
resamples of about ``_BLOCK_CELLS`` (resample, sample) cells, so memory stays bounded for any B and
N (a single block, the whole B x N matrix, when B N fits). A statistic that is a function of sums
of per-sample values, within groups (bins, classes) or not, is evaluated for a whole block at once
from the block's sample counts (:func:`resample_counts`): a resample's sum of v is ``v @ counts``,
so the per-sample values are computed once and never gathered resample by resample
(:class:`ResampledSums`, as :func:`bootstrap_ece` uses it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from calib.calibration_errors.binned import BinnedCalibrationError, binned_error
from calib.validation import (
    CalibInputError,
    Choice,
    as_float_array,
    as_labels,
    as_probs,
    as_sample_weights,
    check,
    check_positive_int,
)

_BLOCK_CELLS = 1 << 22
# counted_resamples keeps this many (sample, resample) counts, one byte each.
_COUNT_CELLS = 1 << 27


@dataclass(frozen=True)
class BootstrapResult:
    """The full-data estimate, the percentile interval and the B resampled values (per output)."""

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    values: np.ndarray


def resample_blocks(n_samples: int, *, n_boot: int, seed) -> Iterator[np.ndarray]:
    """The rows of the (B, N) resample index matrix, in blocks of resamples, from ``default_rng(seed)``."""
    n = check_positive_int(n_samples, "n_samples")
    b = check_positive_int(n_boot, "n_boot")
    rng = np.random.default_rng(seed)
    block = _block_size(n)
    for start in range(0, b, block):
        yield rng.integers(0, n, size=(min(block, b - start), n))


def _block_size(n_samples: int) -> int:
    """Resamples per block of :func:`resample_blocks`: about _BLOCK_CELLS cells, at least one resample."""
    return max(1, _BLOCK_CELLS // n_samples)


def bootstrap_indices(n_samples: int, *, n_boot: int, seed) -> np.ndarray:
    """The whole (B, N) matrix of resample indices (the blocks of :func:`resample_blocks`, stacked)."""
    return np.concatenate(list(resample_blocks(n_samples, n_boot=n_boot, seed=seed)))


def resample_counts(rows: np.ndarray, n_samples: int) -> np.ndarray:
    """How often each sample is drawn in each resample of a block of resample indices.

    Parameters
    ----------
    rows : int array of shape (b, N)
        A block of :func:`resample_blocks`: row j holds the sample indices of resample j.
    n_samples : int
        N, the number of samples indexed.

    Returns
    -------
    array of shape (N, b), float64
        Column j counts the draws of each sample in resample j; a column sums to the resample's size.
        A resample's sum of per-sample values v is ``v @ counts[:, j]``: the same terms as summing
        ``v[rows[j]]``, added in sample order instead of draw order (so equal up to rounding, and
        exactly for integer values). The (N, b) layout is the one sparse-times-dense products read
        row by row.
    """
    return np.ascontiguousarray(_counts_by_resample(rows, n_samples).T, dtype=np.float64)


def _counts_by_resample(rows: np.ndarray, n_samples: int) -> np.ndarray:
    """The transpose of :func:`resample_counts`, (b, N) int64: one ``bincount`` per resample, whose
    N counters stay in cache where a single ``bincount`` over the whole block's b N cells would not."""
    counts = np.empty((rows.shape[0], n_samples), dtype=np.int64)
    for j, row in enumerate(rows):
        counts[j] = _draw_counts(row, n_samples)
    return counts


def _draw_counts(row: np.ndarray, n_samples: int) -> np.ndarray:
    """How often one resample (its sample indices ``row``) draws each of the N samples."""
    return np.bincount(row, minlength=n_samples)


def counted_resamples(n_samples: int, *, n_boot: int, seed, full_sample_first: bool = False) -> Iterator[np.ndarray]:
    """The resamples of :func:`resample_blocks` (same seed, same draws, same order) as count matrices.

    Parameters
    ----------
    n_samples, n_boot, seed
        As for :func:`resample_blocks`; ``n_boot`` may be 0 with ``full_sample_first``.
    full_sample_first : bool
        Put the full sample itself (every count 1) before the resamples, as column 0 of the first
        matrix, so a statistic of the data and of its resamples comes from one pass.

    Yields
    ------
    unsigned int array of shape (N, S)
        The counts of S consecutive resamples (:func:`resample_counts`), whole blocks of
        :func:`resample_blocks` at a time, as many as fit about 2^27 one-byte cells (at least one
        block): at N = 10^5 all 200 resamples of a default bootstrap at once, at N = 10^7 thirteen.
        Small integers keep many resamples per matrix, so per-sample values computed once per matrix
        serve many resamples; read them as float64 with :func:`calib._internal.rows.float_chunks`. A
        count above 255 (for N > 255 it has probability below 10^-400) widens the matrix's type
        instead of wrapping.
        The matrix is the transpose of one filled resample by resample (column-major), so no second
        copy is made; drop it before asking for the next, whose memory it would otherwise double.
    """
    n = check_positive_int(n_samples, "n_samples")
    b = check_positive_int(n_boot, "n_boot", minimum=0 if full_sample_first else 1)
    block = _block_size(n)
    per_matrix = resamples_per_matrix(n)
    blocks = resample_blocks(n, n_boot=b, seed=seed) if b else iter(())
    lead = int(full_sample_first)
    for start in range(0, max(b, 1), per_matrix):
        by_resample = np.empty((lead + min(per_matrix, b - start), n), dtype=np.uint8)
        by_resample[:lead] = 1
        for filled in range(lead, by_resample.shape[0], block):
            for j, row in enumerate(next(blocks), start=filled):
                drawn = _draw_counts(row, n)
                if drawn.max() > np.iinfo(by_resample.dtype).max:
                    by_resample = by_resample.astype(np.min_scalar_type(drawn.max()))
                by_resample[j] = drawn
                del drawn
        lead = 0
        yield by_resample.T
        del by_resample


def resamples_per_matrix(n_samples: int) -> int:
    """How many resamples of N samples one matrix of :func:`counted_resamples` holds (whole blocks of
    :func:`resample_blocks`, about 2^27 one-byte cells, at least one block)."""
    block = _block_size(n_samples)
    return block * max(1, _COUNT_CELLS // (block * n_samples))


class ResampledSums:
    """Per-resample sums of per-sample values, optionally within groups, from sample counts.

    The values are fixed once; each call takes the counts of a block of resamples
    (:func:`resample_counts`) and returns every sum for every resample of the block by one matrix
    product: a dense one without groups, a sparse (groups x samples) one with groups. Infinite values
    are kept out of the products (an infinity times a zero count would give NaN) and counted
    separately, so a sum is +inf or -inf exactly when the resample draws such a sample, and NaN when
    it draws both, as the plain sum over the resample would be.

    Parameters
    ----------
    values : array of shape (N,) or (N, m)
        One or m values per sample, finite or infinite (never NaN).
    groups : int array of shape (N,) or (N, m), optional
        The group in [0, n_groups) of each value (a vector: the same group for all m values of a sample).
    n_groups : int
        Number of groups (ignored without ``groups``).

    Examples
    --------
    >>> rows = np.array([[0, 0, 2], [1, 2, 2]])
    >>> counts = resample_counts(rows, 3)
    >>> ResampledSums(np.array([1.0, 10.0, 100.0]))(counts)
    array([[102., 210.]])
    >>> ResampledSums(np.array([1.0, 10.0, 100.0]), groups=np.array([0, 1, 1]), n_groups=2)(counts)[0]
    array([[  2.,   0.],
           [100., 210.]])
    """

    def __init__(self, values: np.ndarray, groups: np.ndarray | None = None, n_groups: int = 1):
        values = values.reshape(values.shape[0], -1)
        self.n_values = values.shape[1]
        self.dense = groups is None
        self.n_groups = 1 if self.dense else n_groups
        finite = np.isfinite(values)
        clean = values if finite.all() else np.where(finite, values, 0.0)
        # Row of each value in the (m n_groups, N) sparse matrix: value c of a sample in group g -> c n_groups + g.
        rows = np.arange(self.n_values) * self.n_groups
        rows = rows if self.dense else rows + groups.reshape(groups.shape[0], -1)
        self.base = None
        if self.dense:
            self.matrix = clean.T
        elif groups.ndim == 1 or self.n_values == 1:  # column i holds sample i's m values: nothing to sort
            n, m = values.shape
            indptr = np.arange(0, n * m + 1, m)
            self.matrix = sparse.csc_array((clean.ravel(), rows.ravel(), indptr), shape=(m * self.n_groups, n))
        else:
            self._split_by_base_group(clean, rows, groups)
        # The samples with an infinite value, as (usually empty) indicator matrices.
        self.infinite = []
        for sign in (np.inf, -np.inf):
            sample, column = np.nonzero(values == sign)
            if sample.size:
                where = np.broadcast_to(rows, values.shape)[sample, column]
                indicator = (np.ones(sample.size), (where, sample))
                shape = (self.n_values * self.n_groups, values.shape[0])
                self.infinite.append((sign, sparse.csc_array(indicator, shape=shape)))

    def _split_by_base_group(self, clean: np.ndarray, rows: np.ndarray, groups: np.ndarray) -> None:
        """Values with a group each (e.g. each class's probability in its bin): each column's most common
        group is its base; the sums of the other groups are sparse products over the few values in them,
        the base's the column's total (one dense product) minus those. With many columns (a class-wise
        ECE of a thousand classes, where almost every probability lies in the lowest bin) this costs a
        dense product instead of a sparse one over every value."""
        n, m = clean.shape
        column = np.arange(m)
        tally = np.bincount((column * self.n_groups + groups).ravel(), minlength=m * self.n_groups)
        self.base = column * self.n_groups + tally.reshape(m, self.n_groups).argmax(axis=1)
        self.totals = clean.T
        sample, where = np.nonzero(rows != self.base)
        self.matrix = sparse.csc_array(
            (clean[sample, where], (rows[sample, where], sample)), shape=(m * self.n_groups, n)
        )

    def __call__(self, counts: np.ndarray) -> np.ndarray:
        """The sums for the resamples counted by ``counts`` (N, b): shape (m, b) without groups, else
        (m, n_groups, b)."""
        sums = self.matrix @ counts
        if self.base is not None:
            others = sums.reshape(self.n_values, self.n_groups, -1).sum(axis=1)
            sums[self.base] = self.totals @ counts - others
        for sign, drawn in self.infinite:
            with_infinite(sums, sign, (drawn @ counts) > 0)
        return sums if self.dense else sums.reshape(self.n_values, self.n_groups, -1)


def with_infinite(sums: np.ndarray, sign: float, hit: np.ndarray) -> None:
    """Resampled sums (in place) where the resamples ``hit`` draw a value ``sign`` (+inf or -inf): that
    infinity, or NaN where they also draw the opposite one (a sum already at -``sign``), as the plain sum
    over the resample's draws would be."""
    opposite = hit & (sums == -sign)
    sums[hit] = sign
    sums[opposite] = np.nan


# How a percentile of B resamples is read off them: "linear" interpolates between the order statistics at
# position p (B - 1) (numpy's default, as scipy and the papers' code read them); "weibull" at p (B + 1), the
# (B + 1) p-th order statistic of Davison & Hinkley (1997), Sect. 5.2, whose expected distribution function
# is p itself. With B = 200, "linear" 2.5 and 97.5 percentiles lie at expected levels 0.0297 and 0.9702, so a
# two-sided 95 % interval read that way covers 94 % at best (the coverage study measured 0.936-0.944).
PERCENTILE_POSITIONS = ("linear", "weibull")


def percentile_interval(values, alpha: float, positions: str = "linear") -> tuple[np.ndarray, np.ndarray]:
    """The (alpha/2, 1 - alpha/2) percentiles of ``values`` along axis 0, read at ``positions``
    (:data:`PERCENTILE_POSITIONS`; default numpy's linear interpolation).

    Infinite values are allowed (e.g. the cross-entropies of resamples with a zero probability on a
    true label): a percentile between two equal infinities is that infinity, between a finite value
    and an infinity it is the infinity (or the finite value where the interpolation weight is 0).
    """
    lower, upper = _percentiles(values, alpha, [50 * alpha, 100 - 50 * alpha], positions)
    return lower, upper


def upper_bound(values, alpha: float) -> np.ndarray:
    """The one-sided percentile upper bound: the (1 - alpha) percentile of the resampled statistic
    ``values`` along axis 0, the (B + 1)(1 - alpha)-th of the B ordered values (Davison & Hinkley's
    positions, :data:`PERCENTILE_POSITIONS`).

    For a statistic biased upward (a calibration error near 0), the resamples lie above the estimate as
    the estimate lies above the true value, so this bound is conservative where a reflected (basic)
    interval misses; ``benchmarks/coverage.py`` measures its coverage.

    Source: Efron & Tibshirani (1993), Ch. 13 (the percentile interval, here one-sided); Davison & Hinkley
    (1997), Sect. 5.2 (the order statistic it is read at).

    Examples
    --------
    >>> float(upper_bound(np.arange(1.0, 200.0), 0.25))  # the 150th of 199
    150.0
    """
    return _percentiles(values, alpha, [100 * (1 - alpha)], "weibull")[0]


def _percentiles(values, alpha: float, levels: list[float], positions: str) -> np.ndarray:
    """The ``levels`` percentiles of ``values`` along axis 0, read at ``positions``."""
    check(positions, Choice(PERCENTILE_POSITIONS), "positions")
    if not 0 < alpha < 1:
        raise CalibInputError(f"alpha must be in (0, 1), e.g. 0.05 for a 95% interval; got {alpha!r}")
    arr = as_float_array(values, "values")
    if arr.ndim == 0 or arr.shape[0] == 0:
        raise CalibInputError(
            f"values must be an array with one row per resample (at least one); got shape {arr.shape}"
        )
    if np.isnan(arr).any():
        raise CalibInputError("values contains NaN: every resample needs a number")
    with np.errstate(invalid="ignore"):  # inf - inf inside the interpolation gives NaN, repaired below
        bounds = np.percentile(arr, levels, axis=0, method=positions)
    if np.isnan(bounds).any():
        repaired = [_percentile_of_infinities(arr, level, positions) for level in levels]
        bounds = np.where(np.isnan(bounds), repaired, bounds)
    return bounds


def basic_interval(values, estimate, alpha: float, positions: str = "weibull") -> tuple[np.ndarray, np.ndarray]:
    """The basic (reverse percentile) bootstrap interval: (2 t - t*_(1 - alpha/2), 2 t - t*_(alpha/2)).

    The resamples' spread around the estimate t stands for the estimate's spread around the true
    value, so the percentiles are reflected about t: where the statistic is biased (the resamples lie
    mostly on one side of t, as binned and smoothed calibration errors of finite samples lie above
    it), the interval moves the other way, toward the true value. An infinite estimate has that
    infinity as both bounds. The percentiles are the (B + 1)(alpha / 2)-th and (B + 1)(1 - alpha / 2)-th
    of the B ordered resamples by default (:data:`PERCENTILE_POSITIONS`).

    Source: Davison & Hinkley (1997), Sect. 5.2 (basic bootstrap confidence limits and their order
    statistics).

    Parameters
    ----------
    values : array of shape (B, ...)
        The statistic on B resamples.
    estimate : float or array of shape (...)
        The statistic on the data.
    alpha : float
        1 - the interval's level.
    positions : {"weibull", "linear"}, default "weibull"
        Where the percentiles are read (:data:`PERCENTILE_POSITIONS`).

    Returns
    -------
    low, high : arrays of shape (...)

    Examples
    --------
    >>> low, high = basic_interval(np.arange(1.0, 40.0), 20.0, 0.1)  # the 2nd and 38th of 39
    >>> float(low), float(high)
    (2.0, 38.0)
    """
    lower, upper = percentile_interval(values, alpha, positions)
    t = np.asarray(estimate, dtype=np.float64)
    with np.errstate(invalid="ignore"):  # inf - inf where an infinite estimate meets infinite resamples
        low, high = 2 * t - upper, 2 * t - lower
    return np.where(np.isinf(t), t, low), np.where(np.isinf(t), t, high)


def _percentile_of_infinities(arr: np.ndarray, level: float, positions: str) -> np.ndarray:
    """The ``level``-th percentile along axis 0 where the two order statistics around it include an infinity."""
    n = arr.shape[0]
    position = level / 100 * (n - 1) if positions == "linear" else min(max(level / 100 * (n + 1) - 1, 0), n - 1)
    below = math.floor(position)
    weight = position - below
    ordered = np.sort(arr, axis=0)
    lo, hi = ordered[below], ordered[min(below + 1, n - 1)]
    if np.any(np.isneginf(lo) & np.isposinf(hi) & (weight > 0)):
        raise CalibInputError(f"values: the {level:g}th percentile lies between -inf and +inf and is undefined")
    return np.where((lo == hi) | (weight == 0) | np.isinf(lo), lo, hi)


def bootstrap(
    statistic: Callable[..., float | np.ndarray], *arrays, n_boot: int, seed, alpha: float = 0.05
) -> BootstrapResult:
    """Bootstrap percentile confidence interval of any statistic of the samples.

    B = ``n_boot`` resamples of size N are drawn with replacement (the same rows of every array),
    the statistic is computed on each, and the interval is the (alpha/2, 1 - alpha/2) percentiles
    of the B values (linear interpolation), beside the statistic of the full data. The statistic is
    called B + 1 times, once per resample: use this for statistics that refit a model (a tt or xv
    calibrator must be refitted on every resample); additive statistics have faster paths (e.g.
    :func:`bootstrap_ece`). Resample indices come from one ``numpy.random.default_rng(seed)``
    stream, drawn in blocks of about 2^22 (resample, sample) cells, so memory stays bounded.

    Source: Ferrer & Ramos (2024), App. E, after Efron & Tibshirani (1993).

    Parameters
    ----------
    statistic : callable
        ``statistic(*resampled_arrays, groups=ids)`` returning a float or a 1-D array of metrics.
        ``groups`` holds the original sample ids of the resample (0..N-1 for the full data), so a
        cross-validated statistic can keep duplicates of one sample in one fold.
    *arrays : ndarray
        One or more arrays sharing their first dimension N (one entry or row per sample), indexed
        with integer arrays. Sample weights are one more such array, which the statistic reads: each
        resample then keeps the drawn rows' weights.
    n_boot : int
        B, the number of resamples (>= 1).
    seed : int or numpy.random.Generator
        Seed of ``numpy.random.default_rng``.
    alpha : float, default 0.05
        1 - the interval's level, in (0, 1): 0.05 gives a 95% interval.

    Returns
    -------
    BootstrapResult
        ``estimate`` (the statistic of the full data), ``low`` and ``high`` (the interval), each of
        shape (m,) for m outputs, and ``values`` (B, m), the resampled statistics. Infinite values
        are allowed: a percentile between two equal infinities is that infinity.

    Raises
    ------
    CalibInputError
        For no arrays, a scalar among them, arrays of different lengths, an invalid ``n_boot`` or
        ``alpha``, a statistic that returns NaN on a resample, or a percentile between -inf and +inf.

    Examples
    --------
    >>> import numpy as np
    >>> result = bootstrap(lambda x, groups: x.mean(), np.array([1.0, 2.0, 3.0, 4.0, 5.0]), n_boot=200, seed=0)
    >>> float(result.estimate[0]), round(float(result.low[0]), 4), round(float(result.high[0]), 4)
    (3.0, 2.0, 4.4)
    """
    if not arrays:
        raise CalibInputError("bootstrap needs at least one data array to resample")
    if any(np.ndim(a) == 0 for a in arrays):
        raise CalibInputError("arrays passed to bootstrap must be arrays with one entry (row) per sample; got a scalar")
    n = len(arrays[0])
    if any(len(a) != n for a in arrays):
        raise CalibInputError("all arrays passed to bootstrap must have the same number of samples (rows)")
    full_ids = np.arange(n)
    estimate = np.atleast_1d(np.asarray(statistic(*arrays, groups=full_ids), dtype=np.float64))
    values = np.stack(
        [
            np.atleast_1d(np.asarray(statistic(*(a[ids] for a in arrays), groups=ids), dtype=np.float64))
            for block in resample_blocks(n, n_boot=n_boot, seed=seed)
            for ids in block
        ]
    )
    low, high = percentile_interval(values, alpha)
    return BootstrapResult(estimate, low, high, values)


@dataclass(frozen=True)
class EceTerms:
    """What a resample's binned ECE needs: each sample's outcome - score gap(s) summed per group.

    A group is a (class, bin) cell: the class-wise target has K gaps per sample, one per class, and
    averages K class ECEs (``n_averaged``); the other targets have one gap per sample. With sample
    weights the gaps are w_i times the sample's gap, and ``weights`` (N,) hold the w_i, whose resampled
    sum is the resample's total weight (None: every sample weighs 1).
    """

    sums: ResampledSums
    n_averaged: int
    weights: np.ndarray | None = None


def ece_terms(
    probs: np.ndarray, labels: np.ndarray, estimator: BinnedCalibrationError, sample_weight: np.ndarray | None = None
) -> EceTerms:
    """The groups and gaps of validated ``probs`` (N, K) and ``labels`` for ``estimator``'s ECE, weighted by
    the validated ``sample_weight`` (N,) when given.

    Only an L1 ECE of bins weighted by their counts is a sum of per-bin sums that resamples can share;
    other settings raise :class:`CalibInputError`. Equal-mass bins are found once, on the data, and every
    resample keeps them (as ``calib evaluate`` does).
    """
    if estimator.norm != "l1" or estimator.average or estimator.target == "canonical":
        raise CalibInputError(
            "the batched ECE bootstrap needs norm='l1', average=False and a target other than 'canonical'; "
            f"got {estimator}. Bootstrap other estimators with calib.resampling.bootstrap.bootstrap(statistic, ...)"
        )
    scores, outcomes, ids = estimator.binned_columns(probs, labels, sample_weight)
    gaps = outcomes - scores
    if sample_weight is not None:
        gaps = gaps * sample_weight[:, None]
    if gaps.shape[1] == 1:
        return EceTerms(ResampledSums(gaps[:, 0], ids[:, 0], estimator.n_slots), 1, sample_weight)
    return EceTerms(ResampledSums(gaps, ids, estimator.n_slots), gaps.shape[1], sample_weight)


def resampled_ece(terms: EceTerms, counts: np.ndarray) -> np.ndarray:
    """The ECE (:func:`~calib.calibration_errors.binned.binned_error`) of each resample counted by
    ``counts`` (N, b, :func:`resample_counts`); of weighted terms, sum_b |sum_i c_i w_i gap_i| / sum_i c_i w_i."""
    gap_sums = terms.sums(counts).reshape(terms.n_averaged, -1, counts.shape[1])
    total = counts.sum(axis=0) if terms.weights is None else terms.weights @ counts
    return binned_error(None, total, gap_sums=gap_sums)


def bootstrap_ece(
    scores,
    labels,
    *,
    kind: str,
    estimator: BinnedCalibrationError | None = None,
    n_boot: int = 1000,
    seed=0,
    alpha: float = 0.05,
    sample_weight=None,
) -> BootstrapResult:
    """Bootstrap percentile confidence interval of a binned ECE (L1), fast.

    ECE = sum over bins of |sum_{i in bin} (outcome_i - score_i)| / N, the value that ``estimator``
    gives (an L1 :class:`~calib.calibration_errors.binned.BinnedCalibrationError`). The bins are fixed
    on the data (equal-width edges do not depend on it; equal-mass edges are found once, as
    ``calib evaluate`` finds them), so every sample keeps its bin in every resample and a
    resample's ECE needs only its per-bin sums: all resamples of a block are evaluated at once by one
    sparse product, with no loop over them (O(B N) time, in blocks of about 2^22 (resample, sample)
    cells). The interval is the (alpha/2, 1 - alpha/2) percentiles of the B resampled ECEs.

    With ``sample_weight`` the ECE is the weighted one, sum_b |sum_{i in b} w_i (outcome_i - score_i)| /
    sum_i w_i (:class:`~calib.calibration_errors.binned.BinnedCalibrationError` with the weights), and a
    resample draws the samples of positive weight, each drawn c_i times counting c_i w_i.

    Source: Ferrer & Ramos (2024), App. E, after Efron & Tibshirani (1993) (percentile bootstrap);
    Silva Filho et al. (2023), Defs. 1, 4 and 6 (the ECE of each target).

    Parameters
    ----------
    scores : array_like of shape (N, K)
        Posteriors of N samples, of kind ``kind``.
    labels : array_like of shape (N,)
        The true class of each sample, integers in [0, K).
    kind : {"probs", "logprobs", "logits"}
        What ``scores`` hold; nothing is guessed from the values.
    estimator : BinnedCalibrationError, optional
        The ECE to bootstrap: any target but "canonical", either binning, ``norm="l1"``, bins
        weighted by their counts. Default None: ``BinnedCalibrationError()``, the top-label ECE
        with 15 right-closed bins.
    n_boot : int, default 1000
        B, the number of resamples.
    seed : int, default 0
        Seed of ``numpy.random.default_rng``, which draws the resamples.
    alpha : float, default 0.05
        1 - the interval's level, in (0, 1).
    sample_weight : array_like of shape (N,), optional
        A weight >= 0 per sample (:func:`calib.validation.as_sample_weights`); samples of weight 0 are
        dropped before resampling. None weighs every sample 1.

    Returns
    -------
    BootstrapResult
        ``estimate``, ``low`` and ``high`` of shape (1,) and ``values`` of shape (B, 1).

    Raises
    ------
    CalibInputError
        For invalid inputs, an ``estimator`` of other settings, "binary" with K != 2, or an invalid
        ``n_boot`` or ``alpha``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> p1 = rng.uniform(0.05, 0.95, 200)
    >>> scores, labels = np.column_stack([1 - p1, p1]), (rng.random(200) < p1).astype(int)
    >>> binary = BinnedCalibrationError("binary", n_bins=10)
    >>> result = bootstrap_ece(scores, labels, kind="probs", estimator=binary, n_boot=200)
    >>> [round(float(v[0]), 4) for v in (result.estimate, result.low, result.high)]
    [0.0851, 0.0685, 0.15]
    """
    probs = as_probs(scores, kind)
    y = as_labels(labels, probs.shape[0], probs.shape[1])
    if estimator is None:
        estimator = BinnedCalibrationError()
    elif not isinstance(estimator, BinnedCalibrationError):
        raise CalibInputError(
            f"estimator must be a calib.BinnedCalibrationError, e.g. BinnedCalibrationError('top_label', n_bins=15); "
            f"got {estimator!r}"
        )
    w = as_sample_weights(sample_weight, y.size)
    if w is not None:  # a sample of weight 0 is not in the data, nor in any resample of it
        probs, y, w = probs[w > 0], y[w > 0], w[w > 0]
    terms = ece_terms(probs, y, estimator, w)
    estimate = resampled_ece(terms, np.ones((y.size, 1)))
    blocks = resample_blocks(y.size, n_boot=n_boot, seed=seed)
    values = np.concatenate([resampled_ece(terms, resample_counts(rows, y.size)) for rows in blocks])
    low, high = percentile_interval(values[:, None], alpha)
    return BootstrapResult(estimate, low, high, values[:, None])
