"""Pointwise bands of a CORP reliability curve: by resampling, or from asymptotic theory for large n.

The consistency band says where the CORP curve of calibrated scores would lie (the labels redrawn
from the scores); the confidence band where the curve of the population lies (a bootstrap of the
samples). Both are pointwise, at the distinct scores (at most :data:`BAND_POINTS` of them).

Resampling costs one PAV fit per resample, O(B M) for M distinct scores; beyond
:data:`RESAMPLING_MAX_N` samples the ``"auto"`` method uses the asymptotic bands instead, which cost
one sort. The asymptotic half-width at a score x follows Wright (1981): the isotonic regression
estimate at x is n^(1/3)-consistent with Chernoff's distribution as its limit,

    n^(1/3) (xhat(x) - m(x)) -> (4 sigma^2(x) m'(x) / f(x))^(1/3) Z,   Z ~ Chernoff,

with sigma^2(x) = m(1 - m) for binary outcomes, f the density of the scores and m' the slope of the
true curve; as in R's ``reliabilitydiag`` the slope is taken to be 1 (the calibrated curve's). A
score held by at least :data:`DISCRETE_MIN_COUNT` samples is a point mass instead, whose estimate is
asymptotically normal: half-width z sqrt(m(1 - m) / n_x) (Dimitriadis et al. (2021), discrete case).

A curve of weighted samples (``corp_curve(..., sample_weight=)``) resamples its samples and sums their
weights: the consistency band redraws each sample's outcome, the bootstrap draws N samples with
replacement and sums the drawn samples' weights and weighted outcomes per score. The asymptotic bands
need sample sizes where the weights give summed weights: n and n_x are then Kish's effective sizes
(sum w)^2 / sum w^2 of all samples and of those at x (Kish (1965)), the density that of the weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from calib.calibration_errors.corp import CorpCurve, calibrated_positives, pav, step_function
from calib.validation import CalibInputError, Choice, check, check_positive_int

# Bands are evaluated at all distinct scores up to this many, else at this many spread evenly by rank.
BAND_POINTS = 1000
# "auto" resamples up to this many samples (two bands of 1000 resamples in about a second on one
# core) and uses the asymptotic bands beyond it, where they cover at their level (see the tests).
RESAMPLING_MAX_N = 20_000
# A distinct score held by this many samples gets the normal (point-mass) asymptotic band: at 100
# samples the normal 5 % and 95 % quantiles of a binomial frequency are within 0.007 of the exact ones
# for every probability in [0.1, 0.9].
DISCRETE_MIN_COUNT = 100
# Quantiles of Chernoff's distribution at (1 + level) / 2, by the band's level (Groeneboom & Wellner (2001)).
CHERNOFF_QUANTILES = {0.8: 0.6642, 0.9: 0.8451, 0.95: 0.9982, 0.98: 1.1715, 0.99: 1.2867}
BAND_METHODS = ("auto", "resampling", "asymptotic")


@dataclass(frozen=True)
class CorpBands:
    """Pointwise (level) bands of a CORP curve at ``points``: the consistency band under the hypothesis
    of calibration and the confidence band, each as (low, high), and the ``method`` that made them."""

    points: np.ndarray
    consistency: tuple[np.ndarray, np.ndarray]
    confidence: tuple[np.ndarray, np.ndarray]
    level: float
    method: str


def band_points(curve: CorpCurve, max_points: int = BAND_POINTS) -> np.ndarray:
    """The distinct scores, or ``max_points`` of them evenly spread by rank (first and last included)."""
    if curve.points.size <= max_points:
        return curve.points
    return curve.points[np.unique(np.linspace(0, curve.points.size - 1, max_points).round().astype(np.int64))]


def corp_bands(
    curve: CorpCurve, *, level: float = 0.9, n_resamples: int = 1000, seed=0, method: str = "auto"
) -> CorpBands:
    """Pointwise consistency and confidence bands of a CORP reliability curve.

    ``"resampling"``: the consistency band is made of the (1 - level)/2 and (1 + level)/2 quantiles,
    at each point, of the CORP curves refitted to labels redrawn under calibration (Binomial(n_m,
    x_m) positives at each distinct score x_m); the confidence band of those of the curves refitted
    to bootstrap resamples of the samples, read as step functions at the same points. O(B (N + M)).
    A weighted curve's resamples are of its weighted samples (see the module's text).
    ``"asymptotic"``: Chernoff (continuous scores) or normal (scores held by many samples) bands
    around the diagonal and around the curve (see the module's text). O(N log N).
    ``"auto"``: resampling up to :data:`RESAMPLING_MAX_N` samples, asymptotic beyond.

    Source: Dimitriadis et al. (2021) (consistency bands by resampling under calibration, asymptotic
    bands for large n); Wright (1981) (the Chernoff limit); Groeneboom & Wellner (2001) (its quantiles).

    Parameters
    ----------
    curve : CorpCurve
        A fitted curve (:func:`calib.calibration_errors.corp.corp_curve`).
    level : float, default 0.9
        The pointwise coverage of each band, in (0, 1); the asymptotic bands take one of
        :data:`CHERNOFF_QUANTILES` (0.8, 0.9, 0.95, 0.98, 0.99).
    n_resamples : int, default 1000
        B, the resamples for each band (resampling only).
    seed : int, default 0
        Seed of ``numpy.random.default_rng``; the consistency resamples come first.
    method : {"auto", "resampling", "asymptotic"}, default "auto"
        How the bands are made.

    Returns
    -------
    CorpBands
        ``points``, at each ``consistency`` and ``confidence`` as (low, high) arrays, ``level`` and
        ``method`` (the one used, never "auto").

    Raises
    ------
    CalibInputError
        For a ``level`` outside (0, 1) (or not tabulated, for the asymptotic bands), an invalid
        ``n_resamples`` or an unknown ``method``.

    Examples
    --------
    >>> import numpy as np
    >>> from calib.calibration_errors.corp import corp_curve
    >>> rng = np.random.default_rng(1)
    >>> x = rng.uniform(size=500)
    >>> bands = corp_bands(corp_curve(x, rng.uniform(size=500) < x), n_resamples=200)
    >>> bands.points.size, bands.method, bool(np.all(bands.consistency[0] <= bands.consistency[1]))
    (500, 'resampling', True)
    """
    if not 0 < level < 1:
        raise CalibInputError(f"level must be in (0, 1); got {level!r}")
    check(method, Choice(BAND_METHODS), "method")
    if method == "auto":
        method = "resampling" if curve.index.size <= RESAMPLING_MAX_N else "asymptotic"  # the samples, not weight
    at = band_points(curve)
    if method == "asymptotic":
        return _asymptotic_bands(curve, at, level)
    b = check_positive_int(n_resamples, "n_resamples")
    rng = np.random.default_rng(seed)
    quantiles = [(1 - level) / 2, (1 + level) / 2]
    consistent = np.array([_refit(curve, curve.counts, p, at) for p in calibrated_positives(curve, b, rng)])
    cells = _bootstrap_cells(curve, b, rng) if curve.weights is None else _weighted_bootstrap_cells(curve, b, rng)
    bootstrap = np.array([_refit(curve, c, positives, at) for c, positives in cells])
    low_c, high_c = np.quantile(consistent, quantiles, axis=0)
    low_b, high_b = np.quantile(bootstrap, quantiles, axis=0)
    return CorpBands(at, (low_c, high_c), (low_b, high_b), level, method)


def _refit(curve: CorpCurve, counts: np.ndarray, positives: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The CORP curve of resampled counts / positives per distinct score, read at ``at``."""
    present = counts > 0
    points = curve.points[present]
    return step_function(points, pav(points, counts[present], positives[present]), at)


def _bootstrap_cells(curve: CorpCurve, n_resamples: int, rng: np.random.Generator):
    """(counts, positives) per distinct score of bootstrap resamples of the N samples: N cells drawn
    with replacement, each sample being one (score, outcome) cell (O(N) per resample)."""
    m = curve.points.size
    cells = np.concatenate([curve.positives, curve.counts - curve.positives]).astype(np.int64)
    cell_of_sample = np.repeat(np.arange(2 * m), cells)
    n = cell_of_sample.size
    for _ in range(n_resamples):
        drawn = np.bincount(cell_of_sample[rng.integers(n, size=n)], minlength=2 * m)
        yield drawn[:m] + drawn[m:], drawn[:m].astype(np.float64)


def _weighted_bootstrap_cells(curve: CorpCurve, n_resamples: int, rng: np.random.Generator):
    """(summed weights, summed weights of positives) per distinct score of bootstrap resamples of a weighted
    curve's N samples: N drawn with replacement, each drawn sample adding its weight (O(N) per resample)."""
    m, n = curve.points.size, curve.index.size
    positive_weights = curve.weights * curve.outcomes
    for _ in range(n_resamples):
        drawn = rng.integers(n, size=n)
        cells = curve.index[drawn]
        yield (
            np.bincount(cells, weights=curve.weights[drawn], minlength=m),
            np.bincount(cells, weights=positive_weights[drawn], minlength=m),
        )


def _asymptotic_bands(curve: CorpCurve, at: np.ndarray, level: float) -> CorpBands:
    if level not in CHERNOFF_QUANTILES:
        raise CalibInputError(
            f"level must be one of {sorted(CHERNOFF_QUANTILES)} for the asymptotic bands (the tabulated quantiles "
            f"of Chernoff's distribution); got {level!r}. For another level use method='resampling'."
        )
    n = curve.effective_size
    counts = curve.effective_counts[np.searchsorted(curve.points, at)]
    density = score_density(curve, at) if curve.points.size > 1 else np.ones(at.size)
    chernoff, normal = CHERNOFF_QUANTILES[level], norm.ppf((1 + level) / 2)
    # One distinct score has no density to speak of: it is a point mass whatever its count.
    point_mass = (counts >= DISCRETE_MIN_COUNT) | (curve.points.size == 1)

    def band(center: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        variance = center * (1 - center)
        with np.errstate(divide="ignore"):
            half = np.where(
                point_mass,
                normal * np.sqrt(variance / counts),
                chernoff * np.cbrt(4 * variance / (n * density)),
            )
        return np.clip(center - half, 0, 1), np.clip(center + half, 0, 1)

    return CorpBands(at, band(at), band(curve.at(at)), level, "asymptotic")


def score_density(curve: CorpCurve, at: np.ndarray) -> np.ndarray:
    """The density of the scores at ``at``: the share of samples within h of each point over the width of
    that window inside [0, 1] (a boxcar kernel cut at the ends, so the ends are not halved), with h by
    Silverman's rule, 0.9 min(sd, IQR / 1.34) n^(-1/5). For weighted samples the shares, mean, sd and
    quartiles are of the weights, and n in h is Kish's effective size."""
    n = curve.counts.sum()
    cumulative = np.cumsum(curve.counts)
    mean = np.dot(curve.counts, curve.points) / n
    sd = np.sqrt(np.dot(curve.counts, (curve.points - mean) ** 2) / n)
    q1, q3 = curve.points[np.searchsorted(cumulative, [0.25 * n, 0.75 * n])]
    spread = min(sd, (q3 - q1) / 1.34) or sd
    h = 0.9 * spread * curve.effective_size ** (-0.2)
    low, high = np.maximum(at - h, 0.0), np.minimum(at + h, 1.0)
    below = np.searchsorted(curve.points, low, side="left")
    upto = np.searchsorted(curve.points, high, side="right")
    inside = np.concatenate([[0], cumulative])[upto] - np.concatenate([[0], cumulative])[below]
    return inside / (n * (high - low))
