"""CORP reliability curves, the decomposition of proper scores and the MCB test: Dimitriadis et al. (2021).

CORP (consistent, optimally binned, reproducible, PAV-based) replaces the bins of a reliability
diagram by isotonic regression: the recalibrated forecast xhat_i is the pool-adjacent-violators (PAV)
fit of the binary outcomes y_i on the scores x_i, with the samples of equal score pooled into one
point first, so equal scores always get one value. The fit is calibrated and, among the
non-decreasing functions of x, minimizes every proper scoring rule at once; so for a proper score S
(a mean over the samples, lower is better) and the climatology ybar (the mean outcome),

    S(x) = MCB - DSC + UNC,   MCB = S(x) - S(xhat),   DSC = S(ybar) - S(xhat),   UNC = S(ybar),

with MCB >= 0 (miscalibration) and DSC >= 0 (discrimination). For the log score the convention
0 log 0 = 0 holds: a PAV block whose outcomes are all 0 (or all 1) is fitted 0 (or 1) exactly and
scores 0 on its samples, so S(xhat) and S(ybar) are finite. Forecasts read from log-posteriors can
also give their log-odds (``log_odds=``): the samples are then pooled by them, and the log score of
the raw forecasts is computed from them, finite wherever the log-posteriors are (a logit of -5000
is a probability of 0 in floating point, whose log score would be infinite). Everything here works on the M
distinct scores (counts and positives per score), so after one sort the fits, scores and resamples
cost O(M): a resample under calibration draws Binomial(count_m, x_m) positives per distinct score.
The curve's bands are in :mod:`calib.calibration_errors.corp_bands`.

Sample weights (``sample_weight=``, one weight >= 0 per sample) make each distinct score's count its
summed weight and its positives the summed weight of its positive samples: the PAV fit is then the
weighted isotonic regression (Ayer et al. (1955), whose pooling takes weighted means), every mean score
a weighted mean, and integer weights give what the samples repeated w_i times give (weight 0 drops a
sample). A weighted curve keeps its samples' weights and outcomes, since a resample under calibration
draws an outcome per sample (and sums them with their weights), not a binomial per distinct score.

scipy.optimize is imported inside the functions that use it: a command or job that never calls them starts
without loading it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from scipy.special import xlogy

from calib.validation import (
    CalibInputError,
    as_binary_forecasts,
    as_float_array,
    as_sample_weights,
    check_positive_int,
    kish_effective_size,
)


def _brier(p: np.ndarray, y: float) -> np.ndarray:
    return (p - y) ** 2


def _log(p: np.ndarray, y: float) -> np.ndarray:
    return -(xlogy(y, p) + xlogy(1.0 - y, 1.0 - p))


# Resamples under calibration are drawn this many values (resamples x distinct scores) at a time.
_DRAWS_PER_BLOCK = 1 << 20

SCORES: dict[str, Callable[[np.ndarray, float], np.ndarray]] = {"brier": _brier, "log": _log}


@dataclass(frozen=True)
class CorpCurve:
    """The CORP reliability curve: per distinct score (increasing), its count, observed frequency and
    PAV-recalibrated value (non-decreasing), and the position of each sample among the distinct scores;
    ``logs`` (2, M): log x_m and log(1 - x_m) per distinct score where the forecasts' log-odds were given
    (None otherwise), from which the log score of the forecasts is computed.

    With sample weights, ``counts`` and ``positives`` are summed weights, and ``weights`` and
    ``outcomes`` hold each sample's weight and outcome (None without weights); ``index`` and they then
    cover the samples of positive weight only, in their order."""

    points: np.ndarray
    counts: np.ndarray
    positives: np.ndarray
    recalibrated: np.ndarray
    index: np.ndarray
    logs: np.ndarray | None = None
    weights: np.ndarray | None = None
    outcomes: np.ndarray | None = None

    @property
    def effective_counts(self) -> np.ndarray:
        """Per distinct score, the number of equally weighted samples as informative as its samples: the
        counts themselves, or with weights Kish's (sum w)^2 / sum w^2 (Kish (1965))."""
        if self.weights is None:
            return self.counts
        return self.counts**2 / np.bincount(self.index, weights=self.weights**2, minlength=self.points.size)

    @property
    def effective_size(self) -> float:
        """N, or with weights Kish's effective sample size (:func:`calib.validation.kish_effective_size`)."""
        return float(self.counts.sum()) if self.weights is None else kish_effective_size(self.weights)

    def at(self, x) -> np.ndarray:
        """The curve as a step function: the value of the largest distinct score <= x (the first value
        below the smallest)."""
        return step_function(self.points, self.recalibrated, x)


def step_function(points: np.ndarray, values: np.ndarray, x) -> np.ndarray:
    """The step function through (points, values), right-continuous, read at ``x``."""
    position = np.searchsorted(points, np.asarray(x, dtype=np.float64), side="right") - 1
    return values[np.clip(position, 0, points.size - 1)]


def pav(points: np.ndarray, counts: np.ndarray, positives: np.ndarray) -> np.ndarray:
    """PAV fit of the frequencies at increasing distinct points, weighted by their counts (SciPy's
    compiled pool-adjacent-violators); counts may be summed sample weights (Ayer et al. (1955))."""
    from scipy.optimize import isotonic_regression

    return isotonic_regression(positives / counts, weights=counts.astype(np.float64), increasing=True).x


def corp_curve(confidence, outcome, sample_weight=None) -> CorpCurve:
    """The CORP reliability curve: the isotonic (PAV) regression of binary outcomes on their scores.

    Samples of equal score are pooled into one point before the fit (so equal scores get one
    recalibrated value, as CORP requires); the pool-adjacent-violators algorithm then fits the
    non-decreasing step function xhat that minimizes sum_m n_m (ybar_m - xhat_m)^2 over the distinct
    scores, which also minimizes every proper score among non-decreasing functions of the score.
    O(N log N) time (one sort), O(M) after it for M distinct scores. With ``sample_weight``, n_m is the
    summed weight of the samples at score m and ybar_m their weighted mean outcome: the weighted PAV fit.

    Source: Dimitriadis et al. (2021), the CORP approach (PAV with ties pooled); Ayer et al. (1955) (the
    pool-adjacent-violators algorithm for weighted means).

    Parameters
    ----------
    confidence : array_like of shape (N,)
        Scores in [0, 1]: the forecast probabilities of the outcome.
    outcome : array_like of shape (N,)
        The binary outcomes, 0 or 1.
    sample_weight : array_like of shape (N,), optional
        A weight >= 0 per sample (:func:`calib.validation.as_sample_weights`); samples of weight 0 are
        dropped. None weighs every sample 1.

    Returns
    -------
    CorpCurve
        ``points`` (the distinct scores), ``counts``, ``positives``, ``recalibrated`` (the PAV values),
        ``index`` (each sample's point) and ``at(x)``, the curve as a step function.

    Raises
    ------
    CalibInputError
        For vectors that are empty, of different lengths, non-finite, outside [0, 1], or outcomes
        other than 0 and 1.

    Examples
    --------
    >>> curve = corp_curve([0.1, 0.3, 0.3, 0.6, 0.8], [0, 1, 0, 0, 1])
    >>> curve.points.tolist(), curve.recalibrated.tolist()
    ([0.1, 0.3, 0.6, 0.8], [0.0, 0.3333333333333333, 0.3333333333333333, 1.0])
    >>> weighted = corp_curve([0.1, 0.3, 0.3, 0.6, 0.8], [0, 1, 0, 0, 1], sample_weight=[1, 3, 1, 2, 0])
    >>> weighted.points.tolist(), weighted.counts.tolist(), weighted.recalibrated.tolist()  # 0.3 (3/4) pools with 0.6
    ([0.1, 0.3, 0.6], [1.0, 4.0, 2.0], [0.0, 0.5, 0.5])
    """
    return _curve(*_weighted(*as_binary_forecasts(confidence, outcome), None, sample_weight))


def _weighted(x: np.ndarray, y: np.ndarray, log_odds: np.ndarray | None, sample_weight):
    """Validated vectors and weights without the samples of weight 0 (the weights None without weights, and
    for weights all 1, whose curve is the unweighted one: so its resamples are too, draw for draw)."""
    w = as_sample_weights(sample_weight, y.size)
    if w is None or np.all(w == 1.0):
        return x, y, log_odds, None
    kept = w > 0
    return x[kept], y[kept], None if log_odds is None else log_odds[kept], w[kept]


def _curve(
    x: np.ndarray, y: np.ndarray, log_odds: np.ndarray | None = None, weights: np.ndarray | None = None
) -> CorpCurve:
    """:func:`corp_curve` of validated vectors; with ``log_odds`` (log(x / (1 - x)) per sample, from
    log-posteriors), the samples are pooled by their log-odds, which tell apart forecasts that round to
    the same probability, and the curve keeps log x and log(1 - x) per distinct forecast. ``weights``
    (positive) make the counts and positives summed weights."""
    if log_odds is None:
        points, index, counts = np.unique(x, return_inverse=True, return_counts=True)
        logs = None
    else:
        keys, first, index, counts = np.unique(log_odds, return_index=True, return_inverse=True, return_counts=True)
        points = np.maximum.accumulate(x[first])  # non-decreasing, as the log-odds (x's rounding aside)
        logs = np.vstack([-np.logaddexp(0.0, -keys), -np.logaddexp(0.0, keys)])  # log x, log(1 - x)
    index = index.ravel()
    if weights is not None:
        counts = np.bincount(index, weights=weights, minlength=points.size)
        positives = np.bincount(index, weights=weights * y, minlength=points.size)
        return CorpCurve(points, counts, positives, pav(points, counts, positives), index, logs, weights, y)
    positives = np.bincount(index, weights=y, minlength=points.size)
    return CorpCurve(points, counts, positives, pav(points, counts, positives), index, logs)


def _log_odds(log_odds, n: int) -> np.ndarray | None:
    """Validated log-odds: N numbers, +-inf allowed (forecasts of exactly 1 or 0), NaN refused."""
    if log_odds is None:
        return None
    z = as_float_array(log_odds, "log_odds", "vector")
    if z.shape != (n,) or np.isnan(z).any():
        raise CalibInputError(f"log_odds must hold one number (not NaN) per forecast, shape ({n},); got {z.shape}")
    return z


@dataclass(frozen=True)
class CorpDecomposition:
    """S = MCB - DSC + UNC of one proper score: the mean score, miscalibration, discrimination and
    uncertainty."""

    score: float
    mcb: float
    dsc: float
    unc: float


def _score_function(score) -> Callable[[np.ndarray, float], np.ndarray]:
    if callable(score):
        return score
    if score not in SCORES:
        raise CalibInputError(f"score must be one of {sorted(SCORES)} or a function s(p, y); got {score!r}")
    return SCORES[score]


def _per_outcome(fn, forecasts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """s(forecast, 1) and s(forecast, 0) for each forecast."""
    with np.errstate(invalid="ignore", divide="ignore"):  # infinite scores are kept, for _mean_score to judge
        ones = np.asarray(fn(forecasts, 1.0), dtype=np.float64)
        zeros = np.asarray(fn(forecasts, 0.0), dtype=np.float64)
    if ones.shape != forecasts.shape or zeros.shape != forecasts.shape:
        raise CalibInputError("score must map an array of forecasts to an array of per-sample scores of the same shape")
    return ones, zeros


def _mean_score(scored: tuple[np.ndarray, np.ndarray], counts: np.ndarray, positives: np.ndarray) -> float:
    """Mean score over samples grouped by forecast, given s(p, 1) and s(p, 0) per group (``scored``): a group
    without positives or negatives contributes nothing of the other kind, also where that score is infinite."""
    ones, zeros = scored
    with np.errstate(invalid="ignore"):  # inf x 0 of the groups the where leaves out
        total = np.sum(np.where(positives > 0, ones * positives, 0.0))
        total += np.sum(np.where(counts > positives, zeros * (counts - positives), 0.0))
    if np.isnan(total):
        raise CalibInputError("score returned NaN for forecasts in [0, 1]; give a proper score defined there")
    return float(total / counts.sum())


def _recalibrated_score(fn, fitted: np.ndarray, counts: np.ndarray, positives: np.ndarray) -> float:
    """The mean score of the PAV values ``fitted``, scored once per block of equal values (a PAV fit has
    few blocks, so the score function runs on far fewer than the M distinct scores)."""
    starts = np.flatnonzero(np.concatenate([[True], fitted[1:] != fitted[:-1]]))
    block_counts, block_positives = np.add.reduceat(counts, starts), np.add.reduceat(positives, starts)
    return _mean_score(_per_outcome(fn, fitted[starts]), block_counts, block_positives)


def _forecast_scores(fn, curve: CorpCurve) -> tuple[np.ndarray, np.ndarray]:
    """s(x_m, 1) and s(x_m, 0) at the curve's distinct forecasts: for the log score, from log x_m and
    log(1 - x_m) where the curve has them (finite for a forecast that rounds to 0 or 1)."""
    if fn is _log and curve.logs is not None:
        return -curve.logs[0], -curve.logs[1]
    return _per_outcome(fn, curve.points)


def decompose(curve: CorpCurve, score="brier") -> CorpDecomposition:
    """S = MCB - DSC + UNC of a fitted CORP curve for one proper score (see :func:`corp_decomposition`)."""
    fn = _score_function(score)
    n, positives = curve.counts.sum(), curve.positives.sum()
    raw = _mean_score(_forecast_scores(fn, curve), curve.counts, curve.positives)
    recalibrated = _recalibrated_score(fn, curve.recalibrated, curve.counts, curve.positives)
    unc = _mean_score(_per_outcome(fn, np.array([positives / n])), np.array([n]), np.array([positives]))
    return CorpDecomposition(raw, raw - recalibrated, unc - recalibrated, unc)


def corp_decomposition(confidence, outcome, *, score="brier", log_odds=None, sample_weight=None) -> CorpDecomposition:
    """Decompose a proper score into miscalibration, discrimination and uncertainty: S = MCB - DSC + UNC.

    With xhat the CORP (PAV) recalibration of the scores x (:func:`corp_curve`) and ybar the mean
    outcome, MCB = S(x) - S(xhat) >= 0, DSC = S(ybar) - S(xhat) >= 0 and UNC = S(ybar), where S(f)
    is the mean of s(f_i, y_i). MCB is the calibration loss of Ferrer & Ramos (2024) with isotonic
    regression fitted and evaluated on the same data. O(N log N). For the log score, 0 log 0 = 0: a PAV
    block of outcomes all 0 (or all 1) is fitted 0 (or 1) and scores 0, so MCB, DSC and UNC are finite
    wherever the mean log score of the forecasts is. With ``sample_weight`` every S is the weighted mean
    sum_i w_i s(f_i, y_i) / sum_i w_i, ybar the weighted mean outcome and xhat the weighted PAV fit
    (:func:`corp_curve`), so the identity holds as it does unweighted.

    Source: Dimitriadis et al. (2021) (the CORP score decomposition, stated for any proper score; their
    R package reliabilitydiag computes it for the Brier score only). 0 log 0 = 0 is this module's
    convention, the limit of p log p at p = 0, as in an entropy: with it S(xhat) for the log score is
    the mean binary entropy of the outcome frequencies of the PAV blocks.

    Parameters
    ----------
    confidence, outcome : array_like of shape (N,)
        The forecast probabilities in [0, 1] and the binary outcomes, as for :func:`corp_curve`.
    score : {"brier", "log"} or callable, default "brier"
        The proper score: "brier" is (p - y)^2, "log" is -log p(y) in nats; a function ``s(p, y)``
        maps an array of forecasts and an outcome (0.0 or 1.0) to the per-sample scores.
    log_odds : array_like of shape (N,), optional
        log(x / (1 - x)) per forecast, as log-posteriors give it (for two classes, the difference of the
        log-probabilities; +-inf for forecasts of exactly 1 or 0): samples are pooled by it, and the log
        score of the forecasts comes from it, finite where it is finite, however close x rounds to 0 or 1.
    sample_weight : array_like of shape (N,), optional
        A weight >= 0 per sample (:func:`calib.validation.as_sample_weights`); None weighs every sample 1.

    Returns
    -------
    CorpDecomposition
        ``score`` (the mean score of the raw forecasts), ``mcb``, ``dsc`` and ``unc``.

    Raises
    ------
    CalibInputError
        For invalid vectors, an unknown ``score`` or a function that returns NaN or the wrong shape.

    Examples
    --------
    >>> d = corp_decomposition([0.1, 0.3, 0.3, 0.6, 0.8], [0, 1, 0, 0, 1])
    >>> round(d.score, 4), round(d.mcb, 4), round(d.dsc, 4), round(d.unc, 4)
    (0.198, 0.0647, 0.1067, 0.24)
    >>> z = np.array([-800.0, -800.0, 800.0, 800.0])  # logits whose probabilities round to 0 and 1
    >>> from scipy.special import expit
    >>> d = corp_decomposition(expit(z), [0, 1, 1, 1], score="log", log_odds=z)
    >>> round(d.score, 4), round(d.mcb, 4), round(d.unc, 4)
    (200.0, 199.6534, 0.5623)
    """
    x, y = as_binary_forecasts(confidence, outcome)
    return decompose(_curve(*_weighted(x, y, _log_odds(log_odds, y.size), sample_weight)), score)


def calibrated_positives(curve: CorpCurve, n_resamples: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """The positives per distinct score of ``n_resamples`` resamples under calibration, one (M,) array
    each: Binomial(n_m, x_m) at each distinct score x_m, drawn many resamples at a time.

    A score held by one sample (every score, for continuous forecasts) is one Bernoulli(x_m) draw,
    taken as uniform < x_m: numpy's binomial costs far more per draw than its count-1 case needs. A
    weighted curve draws one Bernoulli outcome per sample and sums the positives' weights per score (a
    binomial of the summed weight would not be the resample of the weighted samples); O(N) per resample.
    """
    if curve.weights is not None:
        yield from _weighted_calibrated_positives(curve, n_resamples, rng)
        return
    single = curve.counts == 1
    several = ~single
    per_block = max(1, _DRAWS_PER_BLOCK // curve.points.size)
    for start in range(0, n_resamples, per_block):
        size = min(per_block, n_resamples - start)
        if single.all():  # continuous scores: no mask to scatter through
            yield from (rng.random((size, curve.points.size)) < curve.points).astype(np.float64)
            continue
        positives = np.empty((size, curve.points.size))
        positives[:, single] = rng.random((size, np.count_nonzero(single))) < curve.points[single]
        positives[:, several] = rng.binomial(curve.counts[several], curve.points[several], (size, several.sum()))
        yield from positives


def _weighted_calibrated_positives(
    curve: CorpCurve, n_resamples: int, rng: np.random.Generator
) -> Iterator[np.ndarray]:
    """:func:`calibrated_positives` of a weighted curve: per sample, an outcome drawn Bernoulli(x) at its
    score x, summed with the samples' weights per distinct score."""
    n, m = curve.index.size, curve.points.size
    forecast = curve.points[curve.index]
    per_block = max(1, _DRAWS_PER_BLOCK // n)
    for start in range(0, n_resamples, per_block):
        size = min(per_block, n_resamples - start)
        drawn = rng.random((size, n)) < forecast
        # Resample r's scores are numbered r M .. r M + M - 1, so one bincount serves the whole block.
        cells = (curve.index + m * np.arange(size)[:, None]).ravel()
        yield from np.bincount(cells, weights=(drawn * curve.weights).ravel(), minlength=size * m).reshape(size, m)


@dataclass(frozen=True)
class McbTest:
    """The MCB of the scores, the MCBs of the resamples under calibration, and the p-value."""

    mcb: float
    resampled: np.ndarray
    p_value: float


def _raw_score_of_draws(fn, curve: CorpCurve) -> Callable[[np.ndarray], float]:
    """The mean score of the curve's forecasts as a function of the positives drawn under calibration.

    Draws under calibration put no positive on a forecast of 0 and no negative on a forecast of 1, so
    where the score is finite elsewhere it is one dot product: (sum_m n_m s(x_m, 0) + sum_m k_m (s(x_m, 1)
    - s(x_m, 0))) / N for k_m positives; otherwise the general sum.
    """
    ones, zeros = scored = _forecast_scores(fn, curve)
    may_be_positive, may_be_negative = curve.points > 0, curve.points < 1
    if not (np.isfinite(ones[may_be_positive]).all() and np.isfinite(zeros[may_be_negative]).all()):
        return lambda positives: _mean_score(scored, curve.counts, positives)
    ones, zeros = np.where(may_be_positive, ones, 0.0), np.where(may_be_negative, zeros, 0.0)
    n, base, slope = curve.counts.sum(), np.dot(curve.counts, zeros), ones - zeros
    return lambda positives: float((base + np.dot(positives, slope)) / n)


def _resampled_mcb(curve: CorpCurve, fns: list, n_resamples: int, seed) -> np.ndarray:
    """(B, len(fns)): the MCB of each score function on each resample under calibration."""
    out = np.empty((n_resamples, len(fns)))
    raw_scores = [_raw_score_of_draws(fn, curve) for fn in fns]  # the forecasts stay; only the labels are redrawn
    for r, positives in enumerate(calibrated_positives(curve, n_resamples, np.random.default_rng(seed))):
        fitted = pav(curve.points, curve.counts, positives)
        for j, fn in enumerate(fns):
            out[r, j] = raw_scores[j](positives) - _recalibrated_score(fn, fitted, curve.counts, positives)
    return out


def _p_value(observed: float, resampled: np.ndarray) -> float:
    return float((1 + np.count_nonzero(resampled >= observed)) / (resampled.size + 1))


def mcb_test(curve: CorpCurve, *, score="brier", n_resamples: int = 1000, seed=0) -> McbTest:
    """Test of calibration by the CORP miscalibration: is MCB larger than calibrated scores give?

    Under H0 (the scores are calibrated) the labels are redrawn from the scores, Binomial(n_m, x_m)
    positives at each distinct score (:func:`calibrated_positives`), and the MCB of each resample is
    computed; the p-value is (1 + #{MCB* >= MCB}) / (B + 1). O(B M). For a curve of weighted samples
    (``corp_curve(..., sample_weight=)``) each sample's outcome is redrawn, Bernoulli(x_i), and the
    outcomes summed with the samples' weights; the MCBs are weighted. O(B N).

    Source: Dimitriadis et al. (2021), MCB as a test statistic with the consistency resampling of
    its bands; p-value with the +1 of Davison & Hinkley (1997).

    Parameters
    ----------
    curve : CorpCurve
        A fitted curve (:func:`corp_curve`).
    score : {"brier", "log"} or callable, default "brier"
        The proper score whose MCB is the statistic.
    n_resamples : int, default 1000
        B, the resamples under calibration.
    seed : int, default 0
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    McbTest
        ``mcb``, the B ``resampled`` values and ``p_value``.

    Raises
    ------
    CalibInputError
        For an unknown ``score`` or an invalid ``n_resamples``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(size=400)
    >>> mcb_test(corp_curve(x, rng.uniform(size=400) < x**2), n_resamples=200).p_value < 0.01
    True
    """
    b = check_positive_int(n_resamples, "n_resamples")
    fn = _score_function(score)
    observed = decompose(curve, fn).mcb
    resampled = _resampled_mcb(curve, [fn], b, seed)[:, 0]
    return McbTest(observed, resampled, _p_value(observed, resampled))


@dataclass(frozen=True)
class CorpReport:
    """One score's decomposition with the p-value of its MCB test."""

    score: float
    mcb: float
    dsc: float
    unc: float
    p_value: float


def corp_report(
    confidence,
    outcome,
    *,
    scores=("brier", "log"),
    n_resamples: int = 1000,
    seed=0,
    test_samples: int | None = None,
    log_odds=None,
    sample_weight=None,
) -> dict[str, CorpReport]:
    """The CORP decomposition of several proper scores with the MCB test of each, from one set of resamples.

    Every term is that of :func:`corp_decomposition` on all samples; the p-values are those of
    :func:`mcb_test`, whose resamples under calibration serve every score at once (one PAV fit per
    resample: the PAV fit minimizes every proper score together). With ``test_samples``, the test
    runs on a seeded random subset of at most that many samples (its MCB against its own resamples),
    so its cost stays bounded for any N: a valid test of the same hypothesis, with less power.

    Source: Dimitriadis et al. (2021) (decomposition and MCB test).

    Parameters
    ----------
    confidence, outcome : array_like of shape (N,)
        The forecast probabilities in [0, 1] and the binary outcomes, as for :func:`corp_curve`.
    scores : sequence of {"brier", "log"} or callables, default ("brier", "log")
        The proper scores; a callable is reported under its ``__name__``.
    n_resamples : int, default 1000
        B, the resamples under calibration of the MCB test; 0 runs no test (``p_value`` NaN).
    seed : int, default 0
        Seed of the resamples (and of the subset; a stream of its own).
    test_samples : int, optional
        Run the test on at most this many samples (None: on all).
    log_odds : array_like of shape (N,), optional
        log(x / (1 - x)) per forecast, from log-posteriors (:func:`corp_decomposition`): the log score is
        then finite wherever the log-posteriors are.
    sample_weight : array_like of shape (N,), optional
        A weight >= 0 per sample: weighted decompositions and the weighted test (:func:`mcb_test`); the
        test's subset is drawn from the samples of positive weight, keeping their weights.

    Returns
    -------
    dict of name -> CorpReport
        ``score``, ``mcb``, ``dsc``, ``unc`` and ``p_value`` per score.

    Raises
    ------
    CalibInputError
        For invalid vectors, scores, ``n_resamples`` or ``test_samples``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(size=400)
    >>> report = corp_report(x, rng.uniform(size=400) < x, n_resamples=99)
    >>> sorted(report), report["brier"].p_value > 0.01
    (['brier', 'log'], True)
    """
    b = check_positive_int(n_resamples, "n_resamples", minimum=0)
    fns = {(s.__name__ if callable(s) else s): _score_function(s) for s in scores}
    x, y = as_binary_forecasts(confidence, outcome)
    x, y, z, w = _weighted(x, y, _log_odds(log_odds, y.size), sample_weight)
    curve = _curve(x, y, z, w)
    parts = {name: decompose(curve, fn) for name, fn in fns.items()}
    observed = [d.mcb for d in parts.values()]
    if b and test_samples is not None and y.size > check_positive_int(test_samples, "test_samples", minimum=2):
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1,)))
        subset = np.sort(rng.choice(y.size, size=test_samples, replace=False))
        curve = _curve(x[subset], y[subset], None if z is None else z[subset], None if w is None else w[subset])
        observed = [decompose(curve, fn).mcb for fn in fns.values()]
    resampled = _resampled_mcb(curve, list(fns.values()), b, seed)
    return {
        name: CorpReport(d.score, d.mcb, d.dsc, d.unc, _p_value(observed[j], resampled[:, j]) if b else float("nan"))
        for j, (name, d) in enumerate(parts.items())
    }
