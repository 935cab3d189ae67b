"""The metrics' values on the data and on every bootstrap resample, and their basic intervals.

A summed metric's values come from its summed terms (:func:`summed_values`); a metric that needs its
samples at once is computed on the subsample and on multinomial resamples of it, by the resampler it
declares (:func:`whole_values`, :attr:`calib.evaluation.metrics.MetricDefinition.resampler`). Each metric's
interval is made by the method it declares (:mod:`calib.evaluation.interval_methods`: basic bootstrap
intervals, Davison & Hinkley (1997), Sect. 5.2, or one-sided upper bounds), clipped to its range; an estimate
outside its interval gets a note saying why (:func:`intervals`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calib._internal.threads import thread_pool
from calib.evaluation.interval_methods import UPPER, IntervalMethod
from calib.evaluation.metrics import Context, MetricDefinition
from calib.evaluation.passes import State
from calib.evaluation.results import Metric
from calib.resampling.bootstrap import basic_interval, counted_resamples, upper_bound


def summed_values(summed: list[MetricDefinition], state: State, ctx: Context) -> dict[str, np.ndarray]:
    """Each metric of ``summed`` (metrics declared by terms) over (the data, resample 1, ..., resample B),
    from the sums of ``state``.

    Examples
    --------
    >>> from calib.evaluation.metrics import REGISTRY
    >>> from calib.evaluation.settings import EvaluationSettings
    >>> state = State(1, {"correct": np.array([[3.0, 2.0]]), "n": np.array([[4.0, 4.0]])})
    >>> ctx = Context(2, EvaluationSettings(), {})
    >>> summed_values([REGISTRY["accuracy"]], state, ctx)["accuracy"].tolist()
    [0.75, 0.5]
    """
    out: dict[str, np.ndarray] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for definition in summed:
            out |= {name: np.asarray(v, dtype=np.float64) for name, v in definition.value(state.sums, ctx).items()}
    return out


def whole_values(
    definition: MetricDefinition, confidence: np.ndarray, correct: np.ndarray, ctx: Context, weights=None
) -> dict[str, np.ndarray]:
    """A metric of the samples at once over (the subsample, resample 1, ..., resample B): on the subsample's
    top-label ``confidence`` and ``correct`` (0.0 or 1.0) with their sample ``weights`` (None: 1 each), and
    on its own multinomial resamples through the resampler the metric declares (NaN on the resamples when it
    declares none), each sample counted its draws times its weight.

    Examples
    --------
    >>> from calib.evaluation.metrics import REGISTRY
    >>> from calib.evaluation.settings import EvaluationSettings
    >>> rng = np.random.default_rng(0)
    >>> confidence = rng.uniform(0.5, 1.0, 300)
    >>> correct = (rng.random(300) < confidence).astype(float)
    >>> ctx = Context(2, EvaluationSettings(n_boot=5), {})
    >>> whole_values(REGISTRY["smooth ECE"], confidence, correct, ctx)["smooth ECE"].shape
    (6,)
    """
    samples = _TopLabel(confidence, correct, weights)
    point = definition.whole(samples, ctx)
    n_boot = ctx.settings.n_boot
    if not n_boot:
        return {definition.name: np.array([point])}
    if definition.resampler is None:
        return {definition.name: np.concatenate([[point], np.full(n_boot, np.nan)])}
    draws = []
    resampler = definition.resampler(samples, ctx)
    seed = np.random.SeedSequence(ctx.settings.seed, spawn_key=(4,))
    # Resamples per call: at most 2^24 float64 counts (128 MiB), one call per thread at a time.
    width = max(1, min(64, 2**24 // confidence.size))
    with thread_pool(ctx.settings.threads) as pool:
        for counts in counted_resamples(confidence.size, n_boot=n_boot, seed=seed):
            starts = range(0, counts.shape[1], width)
            draws += pool.map(lambda start, counts=counts: resampler(counts[:, start : start + width]), starts)
            del counts  # the next matrix of counts is drawn once the pool is done with this one
    return {definition.name: np.concatenate([[point], *draws])}


@dataclass(frozen=True)
class _TopLabel:
    """The top label's confidence and correctness of the subsample, and the samples' weights (None: 1 each),
    as a whole metric reads them."""

    confidence: np.ndarray
    correct: np.ndarray
    weights: np.ndarray | None = None


def intervals(
    draws: dict[str, np.ndarray], definitions: list[MetricDefinition], ctx: Context
) -> tuple[dict[str, Metric], str, list[str]]:
    """The metrics with the intervals their definitions declare (:mod:`calib.evaluation.interval_methods`),
    clipped to their ranges, the methods in words, and notes on estimates that lie outside their intervals.

    A basic interval reflects the resamples' percentiles about the estimate; an upper bound is the
    (B + 1)(1 - alpha)-th of the B resampled estimates, with the metric's least value as its lower end.

    Parameters
    ----------
    draws : dict of name -> array of shape (1 + B,)
        Each metric's values over (the data, resample 1, ..., resample B).
    definitions : list of MetricDefinition
        The metrics of ``draws`` (their ranges and interval methods).
    ctx : Context
        The settings (resamples, alpha) and what the ranges depend on.

    Returns
    -------
    (dict of name -> Metric, str, list of str)

    Examples
    --------
    >>> from calib.evaluation.metrics import REGISTRY
    >>> from calib.evaluation.settings import EvaluationSettings
    >>> ctx = Context(2, EvaluationSettings(n_boot=4), {})
    >>> draws = {"accuracy": np.array([0.7, 0.6, 0.8, 0.7, 0.9]),
    ...          "ECE top-label": np.array([0.02, 0.03, 0.05, 0.04, 0.03])}
    >>> metrics, method, notes = intervals(draws, [REGISTRY["accuracy"], REGISTRY["ECE top-label"]], ctx)
    >>> accuracy, ece = metrics["accuracy"], metrics["ECE top-label"]
    >>> round(accuracy.low, 4), round(accuracy.high, 4), accuracy.method, ece.low, round(ece.high, 4), ece.method
    (0.5, 0.8, 'basic', 0.0, 0.05, 'upper bound')
    """
    declared = {name: d for d in definitions for name in d.names(ctx)}
    settings = ctx.settings
    metrics, notes, below = {}, [], []
    for name, values in draws.items():
        definition = declared[name]
        point = float(values[0])
        finite = values[1:][~np.isnan(values[1:])]
        if not settings.n_boot or finite.size < 2:
            metrics[name] = Metric(point)
            continue
        bounds = definition.bounds(ctx) if callable(definition.bounds) else definition.bounds
        method = definition.interval
        if method.two_sided:
            low, high = basic_interval(finite, point, settings.alpha)
        else:
            low, high = bounds[0], upper_bound(finite, settings.alpha)
        low, high = np.clip([float(low), float(high)], *bounds)
        metrics[name] = Metric(point, float(low), float(high), method.name, definition.estimand)
        if np.isfinite(point) and point < low and not method.two_sided:
            below.append(name)
        elif np.isfinite(point) and not low <= point <= high:
            notes.append(_outside(name, point, finite, method))
    if below:
        notes.append(
            f"{', '.join(below)} {'is' if len(below) == 1 else 'are'} below 0, which the true value cannot be: an "
            "unbiased estimate of an error that is 0 for a calibrated model falls below 0 about as often as above"
        )
    return metrics, _methods_in_words(draws, declared, settings), notes


def _outside(name: str, point: float, resamples: np.ndarray, method: IntervalMethod) -> str:
    """Why the estimate ``point`` of metric ``name`` lies outside its interval."""
    bias = float(np.mean(resamples)) - point
    if method is UPPER:
        return f"{name} {point:.4f} lies above its upper bound: its resamples average {point + bias:.4f}"
    return (
        f"{name} {point:.4f} lies outside its interval: its resamples average {point + bias:.4f}, so the "
        f"estimate is biased by about {bias:+.4f}; the basic interval, reflected about the estimate, moves the "
        "other way"
    )


def _methods_in_words(draws: dict, declared: dict[str, MetricDefinition], settings) -> str:
    """The intervals' level, resamples and each method with the metrics it is used for."""
    if not settings.n_boot:
        return "none (no bootstrap resamples)"
    used: dict[IntervalMethod, list[str]] = {}
    for name in draws:
        used.setdefault(declared[name].interval, []).append(name)
    level = round(100 * (1 - settings.alpha))
    parts = [f"{method.words}: {', '.join(names)}" for method, names in used.items()]
    return f"{level} % from {settings.n_boot} Poisson resamples; " + "; ".join(parts)
