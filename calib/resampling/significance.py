"""Hypothesis tests for calibration: Pearson chi-squared, Hosmer-Lemeshow, resampling and SKCE tests.

Sources: survey Silva Filho et al. (2023), Sect. 6 (Pearson chi-squared over groups of instances;
binary Hosmer-Lemeshow, eq. 20; multinomial Hosmer-Lemeshow of Fagerland et al. (2008),
eq. 21 and Table 8; the resampling test of Vaicenavicius et al. (2019), Algorithm 1 and Fig. 21);
Hosmer & Lemeshow (1980) and Hosmer & Lemeshow (2003), ch. 5, for the binary statistic and its
degrees of freedom; Widmann et al. (2019) for the SKCE tests (block and asymptotic).

The null hypothesis of every test is "the scores are calibrated". The chi-squared tests use the
observed counts O and the expected counts E = sum of predicted probabilities per cell; cells with
O = E = 0 are skipped (they carry no information), and a cell with E = 0 < O makes the statistic
infinite (p = 0). The Hosmer-Lemeshow bins are equal-frequency: edges at
``np.percentile(x, linspace(0, 100, M + 1))`` (linear interpolation), right-closed with a closed first
bin, [e0, e1], (e1, e2], ..., so ties at an edge go to the lower bin and bin counts can differ.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import chdtrc, ndtr  # the chi-squared and normal survival functions scipy.stats calls

from calib.calibration_errors.kernel_calibration import block_values, skce_kernel
from calib.calibration_errors.lenses import Canonical
from calib.calibration_errors.miscalibration import (
    batch_deviations,
    batch_estimates,
    cell_statistics,
    check_distances,
    refitted_estimates,
    relabelled_estimates,
)
from calib.validation import (
    CalibInputError,
    Choice,
    as_binary_forecasts,
    as_probs,
    check,
    check_inputs,
    check_positive_int,
)

# Fagerland et al. (2008): the multinomial HL test has satisfactory power only above this N.
FAGERLAND_MIN_N = 400


class SmallSampleWarning(UserWarning):
    """The sample is too small for the test to have useful power (Fagerland et al. (2008): N < 400)."""


@dataclass(frozen=True)
class PearsonChi2Result:
    """Pearson chi-squared over groups: ``observed``/``expected`` are (G, K) with rows in ``groups`` order."""

    statistic: float
    p_value: float
    df: int
    groups: np.ndarray
    observed: np.ndarray
    expected: np.ndarray


@dataclass(frozen=True)
class HosmerLemeshowResult:
    """Hosmer-Lemeshow test with its bin table.

    ``edges`` are the M + 1 percentile edges of the binned quantity, ``counts`` the samples per bin,
    ``observed`` and ``expected`` the (M, K) tables of class counts and summed probabilities (for the
    binary test column 0 is the negative class, column 1 the positive class). ``n_bins_used`` counts
    the non-empty bins, which set the degrees of freedom.
    """

    statistic: float
    p_value: float
    df: int
    edges: np.ndarray
    counts: np.ndarray
    observed: np.ndarray
    expected: np.ndarray
    n_bins_used: int


@dataclass(frozen=True)
class ResamplingResult:
    """Consistency-resampling test: observed statistic, p-values and the L null statistics."""

    statistic: float
    p_value: float
    p_value_plus_one: float
    null_statistics: np.ndarray


def _probabilities(scores, labels, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Validated (N, K) probabilities and int labels.

    For ``kind="probs"`` the caller's values are returned bit-for-bit (validation already bounds
    each row sum within 1e-4 of 1), so that equal scores stay tied and scores on a bin edge stay
    there; renormalising a row such as (0.6, 0.3, 0.1), whose float sum is 0.9999999999999999, would
    turn 0.6 into 0.6000000000000001. Other kinds are exponentiated from the validated log-posteriors.
    Only the label sampler renormalises (see :func:`sample_labels`).
    """
    logp, y = check_inputs(scores, labels, kind)
    return (np.array(scores, dtype=np.float64) if kind == "probs" else np.exp(logp)), y


def _chi2_cells(observed: np.ndarray, expected: np.ndarray) -> float:
    """sum (O - E)^2 / E over cells, skipping O = E = 0 cells; E = 0 < O gives +inf."""
    live = (observed > 0) | (expected > 0)
    o, e = observed[live], expected[live]
    if np.any(e <= 0):
        return float("inf")
    return float(np.sum((o - e) ** 2 / e))


def _table(group_index: np.ndarray, n_groups: int, probs: np.ndarray, labels: np.ndarray):
    """(G, K) observed class counts and summed predicted probabilities per group."""
    k = probs.shape[1]
    observed = np.bincount(group_index * k + labels, minlength=n_groups * k).reshape(n_groups, k).astype(np.float64)
    expected = np.zeros((n_groups, k))
    np.add.at(expected, group_index, probs)
    return observed, expected


def pearson_chi2(scores, labels, *, kind: str, groups) -> PearsonChi2Result:
    """Pearson chi-squared test of calibration over groups of instances.

    Source: survey Silva Filho et al. (2023), Sect. 6 (group the instances that share a covariate
    value and compare observed with predicted class counts); Hosmer & Lemeshow (2003), ch. 5 (the
    covariate-pattern Pearson statistic).

    X^2 = sum_g sum_j (O_gj - E_gj)^2 / E_gj, with O_gj the count of class j in group g and E_gj the
    sum of the predicted class-j probabilities there; cells with O = E = 0 are skipped.

    ``groups`` holds one group id per sample (shape (N,)) or one covariate row per sample (shape
    (N, d), grouped by identical rows).

    Degrees of freedom: df = G (K - 1), each group contributing K - 1 free cells of a multinomial
    with fully specified probabilities (Pearson (1900)). This assumes the scores were NOT fitted on
    the tested data (a held-out set). For a model fitted on the same data, Hosmer & Lemeshow
    (2003), ch. 5, subtract the p + 1 fitted parameters, df = G - (p + 1) for a binary logistic model;
    recompute the p-value with ``scipy.stats.chi2.sf(statistic, df)`` in that case. The chi-squared
    approximation needs reasonably large expected counts per cell, so it is unreliable when most
    groups hold one or two instances (survey Sect. 6).
    """
    probs, y = _probabilities(scores, labels, kind)
    arr = np.asarray(groups)
    if arr.ndim not in (1, 2) or arr.shape[0] != y.size:
        raise CalibInputError(
            f"groups must have one entry (shape (N,)) or one covariate row (shape (N, d)) per sample, N = {y.size}; "
            f"got shape {arr.shape}"
        )
    try:
        ids, inverse = np.unique(arr, return_inverse=True, axis=0 if arr.ndim == 2 else None)
    except TypeError as exc:
        raise CalibInputError(f"groups must hold sortable ids (ints, strings or numeric rows): {exc}") from exc
    inverse = inverse.reshape(-1)
    observed, expected = _table(inverse, ids.shape[0], probs, y)
    statistic = _chi2_cells(observed, expected)
    df = ids.shape[0] * (probs.shape[1] - 1)
    return PearsonChi2Result(statistic, float(chdtrc(df, statistic)), df, ids, observed, expected)


def percentile_bins(values: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Equal-frequency edges and right-closed bin indices of ``values`` (survey Sect. 6, Table 8).

    Edges are ``np.percentile(values, linspace(0, 100, n_bins + 1))`` with linear interpolation;
    bins are [e0, e1], (e1, e2], ..., (e_{M-1}, e_M]. Repeated edges give empty bins.
    """
    edges = np.percentile(values, np.linspace(0.0, 100.0, n_bins + 1))
    index = np.searchsorted(edges, values, side="left") - 1
    return edges, np.clip(index, 0, n_bins - 1)


def _hl_core(probs: np.ndarray, labels: np.ndarray, binned: np.ndarray, n_bins: int) -> HosmerLemeshowResult:
    edges, index = percentile_bins(binned, n_bins)
    observed, expected = _table(index, n_bins, probs, labels)
    counts = np.bincount(index, minlength=n_bins)
    used = int(np.count_nonzero(counts))
    if used < 3:
        raise CalibInputError(
            f"scores: only {used} of the n_bins={n_bins} equal-frequency bins are non-empty (too many tied "
            "scores); the Hosmer-Lemeshow test needs at least 3, so use more distinct scores or pearson_chi2"
        )
    statistic = _chi2_cells(observed, expected)
    df = (used - 2) * (probs.shape[1] - 1)
    return HosmerLemeshowResult(statistic, float(chdtrc(df, statistic)), df, edges, counts, observed, expected, used)


def hosmer_lemeshow(scores, labels, *, kind: str, n_bins: int = 10) -> HosmerLemeshowResult:
    """Binary Hosmer-Lemeshow goodness-of-fit test of calibration (H0: the scores are calibrated).

    The positive-class probabilities (column 1) are split into M = ``n_bins`` equal-frequency bins,
    with edges at ``np.percentile(p, linspace(0, 100, M + 1))`` (linear interpolation), right-closed
    with a closed first bin, [e0, e1], (e1, e2], ..., so ties at an edge go to the lower bin and bin
    counts can differ. Then

        H = sum_m (O_m+ - E_m+)^2 / E_m+ + (O_m- - E_m-)^2 / E_m-,

    with O the observed positives/negatives and E the summed positive/negative probabilities of the
    bin; 0/0 cells are skipped and a cell with E = 0 < O makes H infinite (p = 0). The p-value is
    that of chi^2 with df = M - 2 (the survey; eq. 21 with K = 2), where M counts the non-empty bins,
    so ties that empty a bin lower df. M - 2 comes from a model fitted on the tested data; for a
    held-out test set (no parameters estimated) Hosmer & Lemeshow (2003) (ch. 5, external
    validation) refer H to M degrees of freedom, which gives larger p-values:
    ``scipy.stats.chi2.sf(result.statistic, result.n_bins_used)``. O(N log M) time.

    Source: Silva Filho et al. (2023), Sect. 6, eq. 20; Hosmer & Lemeshow (1980); Hosmer & Lemeshow
    (2003), ch. 5, for the degrees of freedom.

    Parameters
    ----------
    scores : array_like of shape (N, 2)
        Binary posteriors of kind ``kind``; column 1 is the positive class.
    labels : array_like of shape (N,)
        The true class of each sample, 0 or 1.
    kind : {"probs", "logprobs", "logits"}
        What ``scores`` hold; nothing is guessed from the values.
    n_bins : int, default 10
        M, the number of equal-frequency bins (>= 3).

    Returns
    -------
    HosmerLemeshowResult
        ``statistic`` (H), ``p_value``, ``df``, and the bin table: ``edges`` (M + 1 percentile
        edges), ``counts`` (samples per bin), ``observed`` and ``expected`` ((M, 2) tables of class
        counts and summed probabilities, column 0 the negative class), ``n_bins_used`` (the
        non-empty bins).

    Raises
    ------
    CalibInputError
        For invalid inputs, scores with K != 2 columns (see ``multinomial_hosmer_lemeshow``),
        ``n_bins`` < 3, or fewer than 3 non-empty bins (too many tied scores).

    Examples
    --------
    >>> from calib.data.miscalibrated_logits import miscalibrated_logits
    >>> draw = miscalibrated_logits(200, 2, scale=1.0)  # calibrated: the model's logits are the true ones
    >>> result = hosmer_lemeshow(draw.model_logits, draw.labels, kind="logits")
    >>> round(result.statistic, 4), result.df, round(result.p_value, 4)
    (4.4114, 8, 0.8182)
    """
    n_bins = check_positive_int(n_bins, "n_bins", minimum=3)
    probs, y = _probabilities(scores, labels, kind)
    if probs.shape[1] != 2:
        raise CalibInputError(
            f"hosmer_lemeshow is binary: scores need 2 columns, got {probs.shape[1]}; use multinomial_hosmer_lemeshow"
        )
    return _hl_core(probs, y, probs[:, 1], n_bins)


@dataclass(frozen=True)
class SpiegelhalterResult:
    """Spiegelhalter's Z statistic and its two-sided p-value under H0 (the scores are calibrated)."""

    statistic: float
    p_value: float


def spiegelhalter_z(confidence, outcome) -> SpiegelhalterResult:
    """Spiegelhalter's Z test of calibration for probability forecasts of a binary outcome.

    With forecasts p_i and outcomes y_i, the Brier score's deviation from its expectation under
    calibration, standardized:

        Z = sum_i (y_i - p_i)(1 - 2 p_i) / sqrt(sum_i (1 - 2 p_i)^2 p_i (1 - p_i)),

    is approximately standard normal when the forecasts are calibrated; the p-value is two-sided,
    2 (1 - Phi(|Z|)). It is the test R's ``rms::val.prob`` reports. O(N).

    Source: Spiegelhalter (1986).

    Parameters
    ----------
    confidence : array_like of shape (N,)
        The forecast probabilities of the outcome, in [0, 1].
    outcome : array_like of shape (N,)
        The binary outcomes, 0 or 1.

    Returns
    -------
    SpiegelhalterResult
        ``statistic`` (Z) and ``p_value``.

    Raises
    ------
    CalibInputError
        For invalid vectors, outcomes other than 0 and 1, or forecasts that are all 0, 1/2 or 1 (Z's
        variance is then 0).

    Examples
    --------
    >>> result = spiegelhalter_z([0.1, 0.2, 0.7, 0.9, 0.6], [0, 0, 1, 1, 0])
    >>> round(result.statistic, 4), round(result.p_value, 4)
    (-0.6025, 0.5469)
    """
    p, y = as_binary_forecasts(confidence, outcome)
    weight = 1.0 - 2.0 * p
    variance = float(np.sum(weight**2 * p * (1.0 - p)))
    if not variance > 0:
        raise CalibInputError(
            "Spiegelhalter's Z is undefined when every forecast is 0, 1/2 or 1 (its variance is 0); "
            "test such forecasts with calib.hosmer_lemeshow or calib.resampling_test"
        )
    z = float(np.sum((y - p) * weight) / np.sqrt(variance))
    return SpiegelhalterResult(z, float(2.0 * ndtr(-abs(z))))


def multinomial_hosmer_lemeshow(scores, labels, *, kind: str, n_bins: int = 10) -> HosmerLemeshowResult:
    """Multinomial Hosmer-Lemeshow test of Fagerland et al. (2008) (survey Sect. 6, eq. 21, Table 8).

    Instances are binned into M = ``n_bins`` equal-frequency, right-closed bins of 1 - s_1, the
    total probability of the non-reference classes (reference class 1 = column 0), and

        C = sum_m sum_j (O_mj - E_mj)^2 / E_mj  ~  chi^2 with (M - 2)(K - 1) df,

    with O_mj the count of class j in bin m and E_mj the summed class-j probabilities; 0/0 cells are
    skipped. The survey's eq. 21 prints the summand twice; Fagerland's statistic has one term per
    cell, which reproduces Table 8 (C = 25.30, df = 6, p = 0.0003). M counts the non-empty bins.
    Emits a :class:`SmallSampleWarning` when N < 400, below which Fagerland et al. (2008) found the
    power unsatisfactory.
    """
    n_bins = check_positive_int(n_bins, "n_bins", minimum=3)
    probs, y = _probabilities(scores, labels, kind)
    if y.size < FAGERLAND_MIN_N:
        warnings.warn(
            f"multinomial_hosmer_lemeshow on N = {y.size} < {FAGERLAND_MIN_N} samples: Fagerland et al. (2008) "
            "report low power below 400, so a large p-value is weak evidence of calibration",
            SmallSampleWarning,
            stacklevel=2,
        )
    return _hl_core(probs, y, 1.0 - probs[:, 0], n_bins)


# Resampled labels are produced in blocks of about this many (resample, sample) cells to bound memory;
# the uniforms come from one generator stream, so the result does not depend on the block size.
_BLOCK_CELLS = 1 << 22
# Up to this many classes a pass per class is fastest; above it a vectorised bisection (log2 K passes).
_LINEAR_SCAN_MAX_K = 64


def _cdf(probs: np.ndarray) -> np.ndarray:
    """Row-wise CDF, column-major: the label draws read it one class column at a time."""
    cdf = np.cumsum(probs, axis=1)
    cdf = np.minimum(cdf / cdf[:, -1:], 1.0)
    cdf[:, -1] = 1.0
    return np.asfortranarray(cdf)


def _inverse_cdf(cdf: np.ndarray, u: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """Smallest j with u < F_ij, for a (m, N) block of uniforms and the (N, K) non-decreasing CDF
    (column-major, as ``_cdf`` makes it; any layout gives the same labels).

    With ``rows`` (m, N), uniform u_li is compared with the CDF of row ``rows[l, i]`` instead of i.
    """
    n, k = cdf.shape
    if k <= _LINEAR_SCAN_MAX_K:
        labels = np.zeros(u.shape, dtype=np.int64)
        for j in range(k - 1):
            labels += u >= (cdf[:, j] if rows is None else cdf[:, j].take(rows))
        return labels
    flat, row = cdf.ravel(order="F"), (np.arange(n) if rows is None else rows)
    lo = np.zeros(u.shape, dtype=np.int64)
    hi = np.full(u.shape, k - 1, dtype=np.int64)
    for _ in range(int(np.ceil(np.log2(k)))):
        mid = (lo + hi) >> 1
        right = u >= flat[mid * n + row]
        lo = np.where(right, mid + 1, lo)
        hi = np.where(right, hi, mid)
    return lo


def _label_blocks(probs: np.ndarray, n_resamples: int, rng: np.random.Generator):
    cdf = _cdf(probs)
    n = probs.shape[0]
    block = max(1, _BLOCK_CELLS // n)
    for start in range(0, n_resamples, block):
        yield _inverse_cdf(cdf, rng.random((min(block, n_resamples - start), n)))


def sample_labels(probs: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Draw an (L, N) int64 matrix of labels, y_li ~ Cat(probs_i), by inverse-CDF sampling.

    One stream of uniforms U (L, N) is drawn from ``rng`` (row by row, in blocks); y_li is the
    smallest class j with U_li < F_ij, where F is the row-wise cumulative sum of ``probs`` divided by
    the row total (so rows whose float sum is not 1 are renormalised), clipped to 1 with the last
    column set to exactly 1. Classes of probability 0 are never drawn.
    Nothing loops over samples: one pass per class for K <= 64, a vectorised bisection otherwise.
    """
    n_resamples = check_positive_int(n_resamples, "n_resamples")
    return np.concatenate(list(_label_blocks(as_probs(probs, "probs", "probs"), n_resamples, rng)), axis=0)


def _as_statistic_value(value, what: str) -> float:
    try:
        out = float(np.asarray(value, dtype=np.float64).reshape(()))
    except (TypeError, ValueError) as exc:
        raise CalibInputError(
            f"statistic must return a single real number; on the {what} it returned {value!r}"
        ) from exc
    if np.isnan(out):
        raise CalibInputError(f"statistic returned NaN on the {what}; it must return a real number")
    return out


def resampling_test(
    statistic: Callable[[np.ndarray, np.ndarray], float],
    scores,
    *,
    kind: str,
    labels,
    n_resamples: int = 1000,
    seed=0,
) -> ResamplingResult:
    """Consistency-resampling test of calibration for any measure (Vaicenavicius et al. (2019), Algorithm 1).

    Source: survey Silva Filho et al. (2023), Sect. 6, Algorithm 1 and Fig. 21; Vaicenavicius et al.
    (2019); consistency resampling of Bröcker & Smith (2007).

    The scores are kept fixed and only the labels are resampled under H0 "calibrated": for
    l = 1..L, y_li ~ Cat(s_i) for every instance i, each row renormalised to sum to 1 for the draw
    (inverse-CDF sampling of the whole L x N label matrix from one stream of
    ``numpy.random.default_rng(seed)``, generated in memory-bounded blocks of resamples; see
    :func:`sample_labels`). Then phi_l = statistic(probs, y_l), the observed value is
    phi = statistic(probs, labels), and p = #{phi_l > phi} / L. Cost: the statistic is called L + 1
    times, and only those calls loop (over L); drawing the labels takes O(L N K) time without a loop
    over samples.

    Parameters
    ----------
    statistic : callable
        ``statistic(probs, labels) -> float``, a measure of miscalibration (larger = worse), e.g.
        a binned ECE. ``probs`` is the (N, K) probability matrix (the caller's values unchanged for
        ``kind="probs"``, so bin assignments match a direct call) and ``labels`` an int64 vector.
    scores : array_like of shape (N, K)
        Posteriors of N samples, of kind ``kind``; kept fixed.
    kind : {"probs", "logprobs", "logits"}
        What ``scores`` hold; nothing is guessed from the values.
    labels : array_like of shape (N,)
        The observed class of each sample, integers in [0, K).
    n_resamples : int, default 1000
        L, the number of label resamples (>= 1).
    seed : int, default 0
        Seed of ``numpy.random.default_rng``, which draws the labels.

    Returns
    -------
    ResamplingResult
        ``statistic`` (the observed value); ``p_value``, the fraction of phi_l strictly greater than
        the observed value (the survey's convention); ``p_value_plus_one`` = (1 + #{phi_l >=
        observed}) / (1 + L), the conservative Monte Carlo p-value (Davison & Hinkley (1997)), which
        is never 0; ``null_statistics``, the L values phi_l (e.g. for the Fig. 21 histogram). Values
        equal to the observed one up to rounding (``_TIE_SLACK``) count as equal, so the p-values do
        not depend on the input kind.

    Raises
    ------
    CalibInputError
        For a ``statistic`` that is not callable or does not return a single real number (or
        returns NaN), invalid ``scores``, ``labels`` or ``kind``, or an invalid ``n_resamples``.

    Examples
    --------
    >>> from calib.calibration_errors.binned import BinnedCalibrationError
    >>> from calib.data.miscalibrated_logits import miscalibrated_logits
    >>> draw = miscalibrated_logits(200, 2, scale=1.0)  # calibrated: the model's logits are the true ones
    >>> ece = BinnedCalibrationError("binary", n_bins=10)
    >>> def statistic(probs, y):
    ...     return ece(probs, y, kind="probs")
    >>> result = resampling_test(statistic, draw.model_logits, kind="logits", labels=draw.labels, n_resamples=100)
    >>> round(result.statistic, 4), result.p_value, round(result.p_value_plus_one, 4)
    (0.0465, 0.36, 0.3663)
    """
    if not callable(statistic):
        raise CalibInputError(
            f"statistic must be a callable statistic(probs, labels) -> float; got {type(statistic).__name__}"
        )
    n_resamples = check_positive_int(n_resamples, "n_resamples")
    probs, y = _probabilities(scores, labels, kind)
    observed = _as_statistic_value(statistic(probs, y), "observed labels")
    null = np.array(
        [
            _as_statistic_value(statistic(probs, row), "resampled labels")
            for block in _label_blocks(probs, n_resamples, np.random.default_rng(seed))
            for row in block
        ]
    )
    at_least = _at_least(null, observed)
    p_value = float(np.count_nonzero(at_least & ~_ties(null, observed))) / n_resamples
    p_plus_one = (1.0 + np.count_nonzero(at_least)) / (1.0 + n_resamples)
    return ResamplingResult(observed, p_value, float(p_plus_one), null)


# Resamples are evaluated in blocks of about this many (resample, sample) cells.
_RESAMPLE_BLOCK_CELLS = 1 << 21
RESAMPLING_METHODS = ("consistency", "labels", "bootstrap")


@dataclass(frozen=True)
class MiscalibrationResampling:
    """eta_hat on the data and on R resamples, one column per distance (``distances``).

    For the null methods (``consistency``, ``labels``) the p-values test H0 "calibrated":
    ``p_value`` = #{T_j >= T} / R as in Vaicenavicius et al. (2019), Sect. 4.3, and
    ``p_value_plus_one`` = (1 + #{T_j >= T}) / (1 + R), which counts the data as one draw from the
    null and is never 0 (Davison & Hinkley (1997)). The spreads use ddof = 0 as the authors' code.
    """

    method: str
    distances: tuple[str, ...]
    observed: np.ndarray
    resampled: np.ndarray

    @property
    def mean(self) -> np.ndarray:
        return self.resampled.mean(axis=0)

    @property
    def sd(self) -> np.ndarray:
        return self.resampled.std(axis=0)

    @property
    def p_value(self) -> np.ndarray:
        return np.mean(_at_least(self.resampled, self.observed), axis=0)

    @property
    def p_value_plus_one(self) -> np.ndarray:
        return (1.0 + np.sum(_at_least(self.resampled, self.observed), axis=0)) / (1.0 + self.resampled.shape[0])


# Resampled statistics within this fraction of the statistics' scale of the observed one tie with it:
# equal in exact arithmetic, they differ only by rounding, which must not decide a p-value.
_TIE_SLACK = 1e-12


def _ties(null: np.ndarray, observed) -> np.ndarray:
    """Which resampled statistics equal the observed one up to rounding (columnwise for 2-D ``null``)."""
    scale = np.maximum(np.abs(observed), np.max(np.abs(null), axis=0, initial=0.0))
    return np.abs(null - observed) <= _TIE_SLACK * scale


def _at_least(null: np.ndarray, observed) -> np.ndarray:
    """null >= observed, counting rounding-level ties as equal."""
    return (null >= observed) | _ties(null, observed)


def _streams(seed) -> tuple[np.random.Generator, np.random.Generator]:
    """Independent generators for the resample indices and the drawn labels."""
    index_rng, label_rng = np.random.default_rng(seed).spawn(2)
    return index_rng, label_rng


def _resample_blocks(probs, labels, n_resamples: int, seed, method: str):
    """Blocks of (rows (b, N), labels (b, N)): which points each resample holds and their labels."""
    n = probs.shape[0]
    index_rng, label_rng = _streams(seed)
    cdf = None if method == "bootstrap" else _cdf(probs)
    block = max(1, _RESAMPLE_BLOCK_CELLS // n)
    for start in range(0, n_resamples, block):
        size = (min(block, n_resamples - start), n)
        if method == "labels":
            yield np.broadcast_to(np.arange(n), size), _inverse_cdf(cdf, label_rng.random(size))
            continue
        rows = index_rng.integers(0, n, size=size)
        yield rows, (labels[rows] if method == "bootstrap" else _inverse_cdf(cdf, label_rng.random(size), rows))


def _resampled_estimates(probs, labels, binning, distances, n_resamples, seed, method: str) -> np.ndarray:
    fixed = binning.data_independent or method == "labels"
    if fixed:
        ids, n_cells = binning.cells(probs)
    # Column-major: the cell sums gather each class from one contiguous column, and the refit reads
    # each drawn sample column by column.
    columns = np.ascontiguousarray(probs.T)
    out = []
    for rows, y in _resample_blocks(probs, labels, n_resamples, seed, method):
        if method == "labels":
            out.append(relabelled_estimates(columns.T, ids, n_cells, y, distances))
            continue
        if fixed:
            out.append(batch_estimates(columns.T, ids, n_cells, rows, y, distances))
            continue
        # The partition is refitted to each resample; the block's estimates are then counted at once.
        cells, n_cells = np.empty(rows.shape, dtype=np.int64), np.empty(rows.shape[0], dtype=np.int64)
        for b, r in enumerate(rows):
            cells[b], n_cells[b] = binning.cells(columns.take(r, axis=1).T)
        out.append(refitted_estimates(columns.T, cells, n_cells, rows, y, distances))
    return np.concatenate(out, axis=0)


def _check_method(method: str) -> str:
    check(method, Choice(RESAMPLING_METHODS), "method")
    return method


def miscalibration_resampling(
    scores,
    labels,
    *,
    kind: str,
    binning,
    distances=("tv",),
    lens=None,
    method: str = "consistency",
    n_resamples: int = 1000,
    seed=0,
) -> MiscalibrationResampling:
    """eta_hat (eq. 6) on the data and on resamples; Vaicenavicius et al. (2019), Sects. 4.2-4.3.

    Methods:

    - ``consistency`` (the paper's; consistency resampling of Bröcker & Smith (2007)): each resample
      draws N predictions with replacement, then each label from its own prediction, and refits the
      partition. The null distribution of H0 "calibrated".
    - ``labels``: the predictions are kept and only the labels are redrawn from them (the partition
      is then fixed). Also a null distribution, conditional on the predictions. Prefer it when most
      cells hold one or two predictions (e.g. the canonical lens with equal bins on 10 classes): the
      duplicates of a bootstrap share cells, which lowers eta_hat, so the ``consistency`` null sits
      below the value calibrated data give and rejects calibrated models (our tests measure 0.665
      +- 0.006 against 0.769 for Dirichlet(1) predictions, K = 10, N = 2000, 10 bins).
    - ``bootstrap``: the pair bootstrap of (prediction, label), partition refitted; its spread is the
      "+-" of the paper's Tables 3-5.

    The ``lens`` (default canonical) is applied first; drawing induced targets from the induced
    predictions has the same null distribution as drawing labels and then applying the lens. Index
    and label draws come from two streams spawned from ``seed``. Fixed partitions evaluate whole
    blocks of resamples through ``bincount`` (``labels`` counts the kept predictions once and only
    the redrawn labels per resample); the recursive scheme refits one resample at a time, then counts
    a block of them at once.
    """
    names = check_distances(distances)
    n_resamples = check_positive_int(n_resamples, "n_resamples")
    _check_method(method)
    problem = (lens or Canonical())(scores, labels, kind=kind)
    probs, y = problem.probs, problem.labels
    ids, n_cells = binning.cells(probs)
    observed = batch_estimates(probs, ids, n_cells, np.arange(y.size)[None, :], y[None, :], names)[0]
    resampled = _resampled_estimates(probs, y, binning, names, n_resamples, seed, method)
    return MiscalibrationResampling(method, names, observed, resampled)


@dataclass(frozen=True)
class DeviationDiagram:
    """A 1-D reliability diagram of deviations (Vaicenavicius et al. (2019), Sect. 4.4), per occupied cell.

    ``mean_prediction`` and ``deviation`` = frequency - mean prediction of the plotted class,
    ``share`` of the predictions, ``extent`` (L, 2) the smallest and largest prediction in the cell,
    and ``low``/``high`` the consistency bars: percentiles of the deviation over consistency resamples.
    """

    mean_prediction: np.ndarray
    deviation: np.ndarray
    share: np.ndarray
    extent: np.ndarray
    low: np.ndarray
    high: np.ndarray


def deviation_diagram(
    scores,
    labels,
    *,
    kind: str,
    binning,
    lens=None,
    column: int = 0,
    method: str = "consistency",
    n_resamples: int = 1000,
    percentiles=(5.0, 95.0),
    seed=0,
) -> DeviationDiagram:
    """Deviations r_i - g_i of class ``column`` per cell, with consistency bars on the fixed partition.

    The partition is fitted once on the data and held fixed. Each consistency resample draws N
    predictions with replacement, draws each label from its prediction, keeps every resampled point
    in its original cell and recomputes each cell's deviation; cells a resample leaves empty are
    skipped for it. ``method="labels"`` keeps the predictions and redraws only the labels. The bars
    are the ``percentiles`` (default the paper's 5th and 95th) of these deviations: where the
    deviation would fall if the model were calibrated.
    """
    n_resamples = check_positive_int(n_resamples, "n_resamples")
    problem = (lens or Canonical())(scores, labels, kind=kind)
    probs, y = problem.probs, problem.labels
    if not 0 <= column < probs.shape[1]:
        raise CalibInputError(f"column must be an induced class in [0, {probs.shape[1]}); got {column}")
    ids, n_cells = binning.cells(probs)
    stats = cell_statistics(probs, y, ids, n_cells)
    if method == "bootstrap":
        raise CalibInputError("consistency bars need a null method: method='consistency' or 'labels'")
    deviations = [
        batch_deviations(probs, ids, n_cells, rows, drawn, column)
        for rows, drawn in _resample_blocks(probs, y, n_resamples, seed, _check_method(method))
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a cell empty in every resample keeps NaN bars
        low, high = np.nanpercentile(np.concatenate(deviations), percentiles, axis=0)
    values = probs[:, column]
    extent = np.column_stack(
        [
            _cell_extreme(values, ids, n_cells, np.minimum),
            _cell_extreme(values, ids, n_cells, np.maximum),
        ]
    )
    keep = stats.counts > 0
    mean = stats.mean_prediction[:, column]
    return DeviationDiagram(
        mean[keep], (stats.frequency[:, column] - mean)[keep], stats.share[keep], extent[keep], low[keep], high[keep]
    )


def _cell_extreme(values: np.ndarray, ids: np.ndarray, n_cells: int, ufunc) -> np.ndarray:
    start = np.inf if ufunc is np.minimum else -np.inf
    out = np.full(n_cells, start)
    ufunc.at(out, ids, values)
    return out


@dataclass(frozen=True)
class SkceTestResult:
    """An SKCE test of H0 "calibrated": the estimate, its one-sided p-value, and what the p-value rests on.

    ``standard_error`` is set by the block test, ``null_statistics`` (the bootstrap values) by the
    asymptotic test.
    """

    statistic: float
    p_value: float
    method: str
    standard_error: float | None = None
    null_statistics: np.ndarray | None = None


def skce_block_test(
    scores, labels, *, kind: str, block_size: int = 2, kernel: str = "laplacian", bandwidth="median"
) -> SkceTestResult:
    """The block test of Widmann et al. (2019): the n // m block estimates are i.i.d. with mean SKCE.

    Under H0 their mean is 0, so z = mean / (sd / sqrt(#blocks)) is asymptotically N(0, 1) (central
    limit theorem) and p = 1 - Phi(z), one-sided since SKCE >= 0. O(n m) time and memory; m = 2 is the
    linear estimator. Blocks follow the sample order: shuffle first if the order carries structure.
    """
    values = block_values(skce_kernel(scores, labels, kind=kind, kernel=kernel, bandwidth=bandwidth), block_size)
    if values.size < 2:
        raise CalibInputError(f"the block test needs at least 2 blocks of block_size = {block_size} samples")
    mean = float(np.mean(values))
    se = float(np.std(values, ddof=1) / np.sqrt(values.size))
    p_value = float(ndtr(-(mean / se))) if se > 0 else float(mean <= 0)
    return SkceTestResult(mean, p_value, "block", standard_error=se)


# Bootstrap weights are drawn for about this many (resample, sample) cells at a time.
_WILD_BOOTSTRAP_CELLS = 1 << 22


def skce_asymptotic_test(
    scores, labels, *, kind: str, kernel: str = "laplacian", bandwidth="median", n_resamples: int = 1000, seed=0
) -> SkceTestResult:
    """Asymptotic test of calibration (H0: calibrated) with the unbiased SKCE estimator U.

    U = sum_{i != j} h_ij / (n (n - 1)), with h the SKCE pair kernel (see :func:`skce`). Under H0 the
    pair kernel h is degenerate (E h((p, y), z) = 0 for calibrated (p, y) and every z), so n U tends
    to sum_k lambda_k (Z_k^2 - 1), not to a normal law. Its quantiles come from the wild
    (multiplier) bootstrap of degenerate U-statistics: U*_b = sum_{i != j} w_bi w_bj h_ij /
    (n (n - 1)) with independent Rademacher signs w, seeded from ``seed``; p = (1 + #{U*_b >= U}) /
    (1 + B). The pairs are visited in tiles, never as an n x n matrix: O(n^2 B) operations, O(n B)
    memory in chunks of resamples.

    Source: Widmann et al. (2019) (the test); Dehling & Mikosch (1994) (the wild bootstrap of
    degenerate U-statistics).

    Parameters
    ----------
    scores, labels, kind
        Posteriors (n, K), K >= 2, of kind "probs", "logprobs" or "logits", and the true classes
        in [0, K), as :func:`calib.validation.check_inputs` takes them.
    kernel : {"laplacian", "gaussian"}, default "laplacian"
        The scalar kernel kappa of the SKCE.
    bandwidth : float or "median", default "median"
        nu > 0, or the median heuristic (median pairwise distance of the predictions).
    n_resamples : int, default 1000
        B, the number of bootstrap sign draws (>= 1).
    seed : int, default 0
        Seed of ``numpy.random.default_rng``, which draws the signs.

    Returns
    -------
    SkceTestResult
        ``statistic`` (U), the one-sided ``p_value``, ``method`` ("asymptotic") and
        ``null_statistics`` (the B bootstrap values U*_b); ``standard_error`` is None.

    Raises
    ------
    CalibInputError
        For invalid inputs, an unknown ``kernel``, an invalid ``bandwidth`` or ``n_resamples``, or
        fewer than 2 samples.

    Examples
    --------
    >>> from calib.data.miscalibrated_logits import miscalibrated_logits
    >>> draw = miscalibrated_logits(200, 2, scale=1.0)  # calibrated: the model's logits are the true ones
    >>> result = skce_asymptotic_test(draw.model_logits, draw.labels, kind="logits", n_resamples=100)
    >>> result.method, round(result.p_value, 4), result.null_statistics.shape
    ('asymptotic', 0.703, (100,))
    """
    n_resamples = check_positive_int(n_resamples, "n_resamples")
    h = skce_kernel(scores, labels, kind=kind, kernel=kernel, bandwidth=bandwidth)
    n = h.n
    if n < 2:
        raise CalibInputError("the asymptotic SKCE test needs at least 2 samples")
    statistic = h.off_diagonal_sum() / (n * (n - 1))
    rng = np.random.default_rng(seed)
    chunk = max(1, _WILD_BOOTSTRAP_CELLS // n)
    null = np.concatenate(
        [
            h.quadratic_forms(2.0 * rng.integers(0, 2, size=(min(chunk, n_resamples - start), n)) - 1.0)
            for start in range(0, n_resamples, chunk)
        ]
    ) / (n * (n - 1))
    p_value = (1.0 + np.count_nonzero(_at_least(null, statistic))) / (1.0 + n_resamples)
    return SkceTestResult(statistic, float(p_value), "asymptotic", null_statistics=null)
