"""CORP reliability curves, their bands, and the decomposition of proper scores: Dimitriadis et al. (2021).

CORP (consistent, optimally binned, reproducible, PAV-based) replaces the bins of a reliability
diagram by isotonic regression: the recalibrated forecast xhat_i is the pool-adjacent-violators (PAV)
fit of the binary outcomes y_i on the scores x_i, with the samples of equal score pooled into one
point first, so equal scores always get one value. The fit is calibrated and, among the
non-decreasing functions of x, minimizes every proper scoring rule at once; so for a proper score S
(a mean over the samples, lower is better) and the climatology ybar (the mean outcome),

    S(x) = MCB - DSC + UNC,   MCB = S(x) - S(xhat),   DSC = S(ybar) - S(xhat),   UNC = S(ybar),

with MCB >= 0 (miscalibration) and DSC >= 0 (discrimination). Everything here works on the M
distinct scores (counts and positives per score), so after one sort the fits, scores and resamples
cost O(M): a resample under calibration draws Binomial(count_m, x_m) positives per distinct score, a
bootstrap resample one multinomial draw of the (score, outcome) cells.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import xlogy

from calib.validation import CalibInputError, as_binary_forecasts, check_positive_int

# Bands are evaluated at all distinct scores up to this many, else at this many spread evenly by rank.
BAND_POINTS = 1000


def _brier(p: np.ndarray, y: float) -> np.ndarray:
    return (p - y) ** 2


def _log(p: np.ndarray, y: float) -> np.ndarray:
    return -(xlogy(y, p) + xlogy(1.0 - y, 1.0 - p))


SCORES: dict[str, Callable[[np.ndarray, float], np.ndarray]] = {"brier": _brier, "log": _log}


@dataclass(frozen=True)
class CorpCurve:
    """The CORP reliability curve: per distinct score (increasing), its count, observed frequency and
    PAV-recalibrated value (non-decreasing), and the position of each sample among the distinct scores."""

    points: np.ndarray
    counts: np.ndarray
    positives: np.ndarray
    recalibrated: np.ndarray
    index: np.ndarray

    def at(self, x) -> np.ndarray:
        """The curve as a step function: the value of the largest distinct score <= x (the first value
        below the smallest)."""
        return _step(self.points, self.recalibrated, x)


def _step(points: np.ndarray, values: np.ndarray, x) -> np.ndarray:
    """The step function through (points, values), right-continuous, read at ``x``."""
    position = np.searchsorted(points, np.asarray(x, dtype=np.float64), side="right") - 1
    return values[np.clip(position, 0, points.size - 1)]


def _pav(points: np.ndarray, counts: np.ndarray, positives: np.ndarray) -> np.ndarray:
    """PAV fit of the frequencies at increasing distinct points, weighted by their counts."""
    from sklearn.isotonic import isotonic_regression  # compiled PAV; loaded only when a curve is fitted

    return isotonic_regression(positives / counts, sample_weight=counts.astype(np.float64), increasing=True)


def corp_curve(confidence, outcome) -> CorpCurve:
    """The CORP reliability curve: the isotonic (PAV) regression of binary outcomes on their scores.

    Samples of equal score are pooled into one point before the fit (so equal scores get one
    recalibrated value, as CORP requires); the pool-adjacent-violators algorithm then fits the
    non-decreasing step function xhat that minimizes sum_m n_m (ybar_m - xhat_m)^2 over the distinct
    scores, which also minimizes every proper score among non-decreasing functions of the score.
    O(N log N) time (one sort), O(M) after it for M distinct scores.

    Source: Dimitriadis et al. (2021), the CORP approach (PAV with ties pooled).

    Parameters
    ----------
    confidence : array_like of shape (N,)
        Scores in [0, 1]: the forecast probabilities of the outcome.
    outcome : array_like of shape (N,)
        The binary outcomes, 0 or 1.

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
    """
    x, y = as_binary_forecasts(confidence, outcome)
    points, index, counts = np.unique(x, return_inverse=True, return_counts=True)
    positives = np.bincount(index, weights=y, minlength=points.size)
    return CorpCurve(points, counts, positives, _pav(points, counts, positives), index.ravel())


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


def _mean_score(fn, forecasts: np.ndarray, counts: np.ndarray, positives: np.ndarray) -> float:
    """Mean of s(forecast, y) over samples grouped by forecast: s(p, 1) for the positives, s(p, 0) for
    the rest (a group without positives or negatives contributes nothing of the other kind, also where
    that score is infinite)."""
    negatives = counts - positives
    with np.errstate(invalid="ignore", divide="ignore"):  # infinite scores of groups that hold no such sample
        ones = np.asarray(fn(forecasts, 1.0), dtype=np.float64)
        zeros = np.asarray(fn(forecasts, 0.0), dtype=np.float64)
        if ones.shape != forecasts.shape or zeros.shape != forecasts.shape:
            raise CalibInputError(
                "score must map an array of forecasts to an array of per-sample scores of the same shape"
            )
        total = np.sum(np.where(positives > 0, ones * positives, 0.0))
        total += np.sum(np.where(negatives > 0, zeros * negatives, 0.0))
    if np.isnan(total):
        raise CalibInputError("score returned NaN for forecasts in [0, 1]; give a proper score defined there")
    return float(total / counts.sum())


def _raw_and_recalibrated(fn, points, counts, positives, recalibrated) -> tuple[float, float]:
    """The mean score of the forecasts at the distinct ``points`` and of their ``recalibrated`` values."""
    return _mean_score(fn, points, counts, positives), _mean_score(fn, recalibrated, counts, positives)


def decompose(curve: CorpCurve, score="brier") -> CorpDecomposition:
    """S = MCB - DSC + UNC of a fitted CORP curve for one proper score (see :func:`corp_decomposition`)."""
    fn = _score_function(score)
    n, positives = curve.counts.sum(), curve.positives.sum()
    raw, recalibrated = _raw_and_recalibrated(fn, curve.points, curve.counts, curve.positives, curve.recalibrated)
    unc = _mean_score(fn, np.array([positives / n]), np.array([n]), np.array([positives]))
    return CorpDecomposition(raw, raw - recalibrated, unc - recalibrated, unc)


def corp_decomposition(confidence, outcome, *, score="brier") -> CorpDecomposition:
    """Decompose a proper score into miscalibration, discrimination and uncertainty: S = MCB - DSC + UNC.

    With xhat the CORP (PAV) recalibration of the scores x (:func:`corp_curve`) and ybar the mean
    outcome, MCB = S(x) - S(xhat) >= 0, DSC = S(ybar) - S(xhat) >= 0 and UNC = S(ybar), where S(f)
    is the mean of s(f_i, y_i). MCB is the calibration loss of Ferrer & Ramos (2024) with isotonic
    regression fitted and evaluated on the same data. O(N log N).

    Source: Dimitriadis et al. (2021) (the CORP score decomposition).

    Parameters
    ----------
    confidence : array_like of shape (N,)
        Scores in [0, 1]: the forecast probabilities of the outcome.
    outcome : array_like of shape (N,)
        The binary outcomes, 0 or 1.
    score : {"brier", "log"} or callable, default "brier"
        The proper score: "brier" is (p - y)^2, "log" is -log p(y) in nats; a function ``s(p, y)``
        maps an array of forecasts and an outcome (0.0 or 1.0) to the per-sample scores.

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
    """
    return decompose(corp_curve(confidence, outcome), score)


@dataclass(frozen=True)
class CorpBands:
    """Pointwise (level) bands of a CORP curve at ``points``: the consistency band under the hypothesis
    of calibration and the bootstrap confidence band, each as (low, high)."""

    points: np.ndarray
    consistency: tuple[np.ndarray, np.ndarray]
    confidence: tuple[np.ndarray, np.ndarray]
    level: float


def band_points(curve: CorpCurve, max_points: int = BAND_POINTS) -> np.ndarray:
    """The distinct scores, or ``max_points`` of them evenly spread by rank (first and last included)."""
    if curve.points.size <= max_points:
        return curve.points
    return curve.points[np.unique(np.linspace(0, curve.points.size - 1, max_points).round().astype(np.int64))]


def _refit(curve: CorpCurve, counts: np.ndarray, positives: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The CORP curve of resampled counts / positives per distinct score, read at ``at``."""
    present = counts > 0
    points = curve.points[present]
    return _step(points, _pav(points, counts[present], positives[present]), at)


def corp_bands(curve: CorpCurve, *, level: float = 0.9, n_resamples: int = 1000, seed=0) -> CorpBands:
    """Pointwise consistency and confidence bands of a CORP reliability curve, by resampling.

    Consistency band (under the hypothesis that the scores are calibrated): the labels are redrawn
    from the scores, Binomial(n_m, x_m) positives at each distinct score x_m, and the (1 - level)/2,
    (1 + level)/2 quantiles of the refitted curves at each point give the band around the diagonal.
    Confidence band: the (score, outcome) pairs are bootstrapped (one multinomial draw over the cells)
    and the refitted curves, read as step functions at the same points, give the quantiles. O(B M)
    for M distinct scores; the points are at most :data:`BAND_POINTS` (:func:`band_points`).

    Source: Dimitriadis et al. (2021) (consistency bands by resampling under calibration,
    confidence bands by bootstrap).

    Parameters
    ----------
    curve : CorpCurve
        A fitted curve (:func:`corp_curve`).
    level : float, default 0.9
        The pointwise coverage of each band, in (0, 1).
    n_resamples : int, default 1000
        B, the resamples for each band.
    seed : int, default 0
        Seed of ``numpy.random.default_rng``; the consistency resamples come first.

    Returns
    -------
    CorpBands
        ``points`` and, at each, ``consistency`` and ``confidence`` as (low, high) arrays.

    Raises
    ------
    CalibInputError
        For a ``level`` outside (0, 1) or an invalid ``n_resamples``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> x = rng.uniform(size=500)
    >>> bands = corp_bands(corp_curve(x, rng.uniform(size=500) < x), n_resamples=200)
    >>> bands.points.size, bool(np.all(bands.consistency[0] <= bands.consistency[1]))
    (500, True)
    """
    if not 0 < level < 1:
        raise CalibInputError(f"level must be in (0, 1); got {level!r}")
    b = check_positive_int(n_resamples, "n_resamples")
    rng = np.random.default_rng(seed)
    at = band_points(curve)
    cells = np.concatenate([curve.positives, curve.counts - curve.positives])
    n = int(curve.counts.sum())
    consistent, bootstrap = np.empty((b, at.size)), np.empty((b, at.size))
    for r in range(b):  # a loop over resamples, each O(M)
        consistent[r] = _refit(curve, curve.counts, rng.binomial(curve.counts, curve.points), at)
    for r in range(b):
        drawn = rng.multinomial(n, cells / n)
        positives = drawn[: curve.points.size]
        bootstrap[r] = _refit(curve, positives + drawn[curve.points.size :], positives, at)
    quantiles = [(1 - level) / 2, (1 + level) / 2]
    low_c, high_c = np.quantile(consistent, quantiles, axis=0)
    low_b, high_b = np.quantile(bootstrap, quantiles, axis=0)
    return CorpBands(at, (low_c, high_c), (low_b, high_b), level)


@dataclass(frozen=True)
class McbTest:
    """The MCB of the scores, the MCBs of the resamples under calibration, and the p-value."""

    mcb: float
    resampled: np.ndarray
    p_value: float


def mcb_test(curve: CorpCurve, *, score="brier", n_resamples: int = 1000, seed=0) -> McbTest:
    """Test of calibration by the CORP miscalibration: is MCB larger than calibrated scores give?

    Under H0 (the scores are calibrated) the labels are redrawn from the scores, Binomial(n_m, x_m)
    positives at each distinct score, and the MCB of each resample is computed; the p-value is
    (1 + #{MCB* >= MCB}) / (B + 1). O(B M).

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
    rng = np.random.default_rng(seed)
    resampled = np.empty(b)
    for r in range(b):
        positives = rng.binomial(curve.counts, curve.points).astype(np.float64)
        fitted = _pav(curve.points, curve.counts, positives)
        raw, recalibrated = _raw_and_recalibrated(fn, curve.points, curve.counts, positives, fitted)
        resampled[r] = raw - recalibrated
    return McbTest(observed, resampled, float((1 + np.count_nonzero(resampled >= observed)) / (b + 1)))
