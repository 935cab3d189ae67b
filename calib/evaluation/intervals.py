"""The metrics' values on the data and on every bootstrap resample, and their basic intervals.

A summed metric's values come from its summed terms (:func:`summed_values`); a metric that needs its
samples at once is computed on the subsample and on multinomial resamples of it, by the resampler it
declares (:func:`whole_values`, :attr:`calib.evaluation.metrics.MetricDefinition.resampler`). Intervals
are basic bootstrap intervals (Davison & Hinkley (1997), Sect. 5.2), clipped to each metric's range; an
estimate outside its interval gets a note saying how biased its resamples show it to be (:func:`intervals`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calib.evaluation.metrics import Context, MetricDefinition
from calib.evaluation.passes import State
from calib.evaluation.results import Metric
from calib.resampling.bootstrap import basic_interval, counted_resamples


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
    definition: MetricDefinition, confidence: np.ndarray, correct: np.ndarray, ctx: Context
) -> dict[str, np.ndarray]:
    """A metric of the samples at once over (the subsample, resample 1, ..., resample B): on the subsample's
    top-label ``confidence`` and ``correct`` (0.0 or 1.0), and on its own multinomial resamples through the
    resampler the metric declares (NaN on the resamples when it declares none).

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
    samples = _TopLabel(confidence, correct)
    point = definition.whole(samples, ctx)
    n_boot = ctx.settings.n_boot
    if not n_boot:
        return {definition.name: np.array([point])}
    if definition.resampler is None:
        return {definition.name: np.concatenate([[point], np.full(n_boot, np.nan)])}
    draws = []
    resampler = definition.resampler(samples, ctx)
    seed = np.random.SeedSequence(ctx.settings.seed, spawn_key=(4,))
    width = max(1, min(64, 2**24 // confidence.size))  # resamples per call: at most 2^24 float64 counts (128 MiB)
    for counts in counted_resamples(confidence.size, n_boot=n_boot, seed=seed):
        for start in range(0, counts.shape[1], width):
            draws.append(resampler(counts[:, start : start + width]))
    return {definition.name: np.concatenate([[point], *draws])}


@dataclass(frozen=True)
class _TopLabel:
    """The top label's confidence and correctness of the subsample, as a whole metric reads them."""

    confidence: np.ndarray
    correct: np.ndarray


def intervals(
    draws: dict[str, np.ndarray], definitions: list[MetricDefinition], ctx: Context
) -> tuple[dict[str, Metric], str, list[str]]:
    """The metrics with basic intervals clipped to their ranges, the method, and why an estimate lies
    outside its interval where one does.

    Parameters
    ----------
    draws : dict of name -> array of shape (1 + B,)
        Each metric's values over (the data, resample 1, ..., resample B).
    definitions : list of MetricDefinition
        The metrics of ``draws`` (their ranges).
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
    >>> metrics, method, notes = intervals({"accuracy": np.array([0.7, 0.6, 0.8, 0.7, 0.9])},
    ...                                    [REGISTRY["accuracy"]], ctx)
    >>> metrics["accuracy"].value, method.split(" of ")[0], notes
    (0.7, '95 % basic bootstrap intervals (Davison & Hinkley (1997))', [])
    """
    bounds = {name: d.bounds(ctx) if callable(d.bounds) else d.bounds for d in definitions for name in d.names(ctx)}
    settings = ctx.settings
    metrics, notes = {}, []
    for name, values in draws.items():
        point = float(values[0])
        if not settings.n_boot:
            metrics[name] = Metric(point)
            continue
        resamples = values[1:]
        finite = resamples[~np.isnan(resamples)]
        if finite.size < 2:
            metrics[name] = Metric(point)
            continue
        low, high = basic_interval(finite, point, settings.alpha)
        low, high = np.clip([float(low), float(high)], *bounds[name])
        metrics[name] = Metric(point, float(low), float(high))
        if np.isfinite(point) and not low <= point <= high:
            bias = float(np.mean(finite)) - point
            notes.append(
                f"{name} {point:.4f} lies outside its interval: its resamples average {point + bias:.4f}, so the "
                f"estimate is biased by about {bias:+.4f} (a calibration error measured on finite samples is biased "
                "upward); the basic interval, reflected about the estimate, is for the true value"
            )
    level = round(100 * (1 - settings.alpha))
    method = (
        f"{level} % basic bootstrap intervals (Davison & Hinkley (1997)) of {settings.n_boot} Poisson resamples"
        if settings.n_boot
        else "none (no bootstrap resamples)"
    )
    return metrics, method, notes
