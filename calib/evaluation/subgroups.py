"""Subgroups of an evaluation (``groups``: a segment, a site, an attribute): every summed metric per group
with its interval, and per group Cox's score test of calibration of the CORP lens
(:mod:`calib.evaluation.lens`, :mod:`calib.evaluation.cox_test`: intercept and slope, with power against a
departure in the large or in spread wherever the forecasts lie), its p-values adjusted for the number of
groups by Holm's method; a group is flagged when its adjusted p-value is below 0.05. Spiegelhalter's z is
reported beside it: its terms carry the factor 1 - 2p and vanish near p = 0.5, where it cannot see a
segment that is off by a constant, so it no longer decides the flags.

A group's state is summed with the same resample counts as the whole data set's (its rows' own), so
its intervals are of the same resamples.

Sources: Cox (1958) (the recalibration model whose score test flags); Spiegelhalter (1986) (the z
statistic); Holm (1979) (the adjustment).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from calib.evaluation.cox_test import KEYS as COX_KEYS
from calib.evaluation.cox_test import cox_statistic, cox_terms
from calib.evaluation.intervals import intervals, summed_values
from calib.evaluation.lens import lens_ece, lens_forecast_log_odds, lens_forecasts
from calib.evaluation.metrics import Batch, Context, MetricDefinition, Terms, reliability
from calib.evaluation.passes import State, Summers, terms_of, weighed
from calib.evaluation.results import GroupRow
from calib.validation import CalibInputError

# Groups of a subgroup analysis, at most (each has its own sums and resamples).
MAX_GROUPS = 1000


def accumulate_groups(
    by_group: dict, batch: Batch, ctx: Context, summed: list[MetricDefinition], counts, group_ids: np.ndarray
) -> None:
    """Each group's rows of a block into that group's state in ``by_group`` (group value -> State): the terms
    of the ``summed`` metrics and of the z test, for the data and for every resample (``counts``: the
    block's resample counts, as (resample columns, (n, b) counts))."""
    values, inverse = np.unique(group_ids, return_inverse=True)
    for g, value in enumerate(values):
        rows = np.flatnonzero(inverse == g)
        key = value.item() if hasattr(value, "item") else value
        if key not in by_group:
            by_group[key] = State(ctx.settings.n_boot)
            check_group_count(by_group)
        part = Batch(batch.logp[rows], batch.labels[rows], None if batch.weights is None else batch.weights[rows])
        tests = z_test_terms(part) | cox_terms(*lens_forecasts(part), lens_forecast_log_odds(part))
        terms = terms_of(summed, part, ctx) | weighed(tests | _size_terms(part), part.weights)
        state = by_group[key]
        for term, sums in Summers.point(terms).items():
            state.add(term, slice(0, 1), sums)
        summers = Summers(terms, resampled=True)
        for columns, c in counts:
            for term, sums in summers(c[rows].astype(np.float64)).items():
                state.add(term, slice(columns.start + 1, columns.stop + 1), sums)


def _size_terms(batch: Batch) -> dict[str, Terms]:
    """A group's rows and its total weight (the rows again without weights), on the data only."""
    ones = np.ones(batch.labels.size)
    return {"group rows": Terms(ones, point_only=True, weight_power=0), "group weight": Terms(ones, point_only=True)}


def check_group_count(by_group: dict) -> None:
    """Refuse more than MAX_GROUPS groups, naming what to do.

    Examples
    --------
    >>> try:
    ...     check_group_count(dict.fromkeys(range(MAX_GROUPS + 1)))
    ... except CalibInputError as error:
    ...     print(str(error).split(":")[0])
    the groups have more than 1000 values
    """
    if len(by_group) > MAX_GROUPS:
        raise CalibInputError(
            f"the groups have more than {MAX_GROUPS} values: choose a column with fewer (a segment, a site), or "
            "bin it first"
        )


def z_test_terms(batch: Batch) -> dict[str, Terms]:
    """Spiegelhalter's z of the CORP lens as sums: sum (y - p)(1 - 2p) and sum (1 - 2p)^2 p (1 - p).

    With sample weights the numerator sums w_i (y_i - p_i)(1 - 2 p_i) and the variance w_i^2 (1 - 2 p_i)^2
    p_i (1 - p_i), the variance of that weighted sum over independent rows: rows are what was sampled, so a
    row of weight 10 is one outcome counted ten times, not ten outcomes (repeating rows would shrink the
    variance and flag noise).

    Examples
    --------
    >>> terms = z_test_terms(Batch(np.log(np.array([[0.5, 0.5], [0.2, 0.8]])), np.array([1, 0])))
    >>> [round(float(t.values.sum()), 4) for t in terms.values()]
    [0.48, 0.0576]
    """
    p, y = lens_forecasts(batch)
    weight = 1.0 - 2.0 * p
    return {"z numerator": Terms((y - p) * weight), "z variance": Terms(weight**2 * p * (1.0 - p), weight_power=2)}


def group_rows(by_group: dict, summed: list[MetricDefinition], ctx: Context) -> list[GroupRow]:
    """Per group, in the order of the group values: its metrics with intervals, Cox's score statistic of its
    CORP lens with its p-value and Holm's adjustment (the flag), Spiegelhalter's z, and the reliability bins
    of the lens's ECE.

    Parameters
    ----------
    by_group : dict of group value -> State
        Each group's sums (:func:`accumulate_groups`).
    summed : list of MetricDefinition
        The summed metrics to report per group.
    ctx : Context
        The pass's context.

    Returns
    -------
    list of GroupRow
    """
    rows = []
    for group, state in sorted(by_group.items(), key=lambda item: item[0]):
        draws = summed_values(summed, state, ctx)
        metrics, _, _ = intervals(draws, summed, ctx)
        numerator, variance = state.sums["z numerator"][0, 0], state.sums["z variance"][0, 0]
        z = numerator / np.sqrt(variance) if variance > 0 else float("nan")
        statistic, degrees, p = cox_statistic(*(float(state.sums[key][0, 0]) for key in COX_KEYS))
        n = int(state.sums["group rows"][0, 0])
        weight = float(state.sums["group weight"][0, 0])
        lens = lens_ece(ctx.n_classes)
        bins = reliability(lens.bins[0], state.sums, ctx.edges[lens.bins[1]])
        rows.append(GroupRow(str(group), n, metrics, statistic, p, p, False, bins, weight, float(z), degrees))
    adjusted = holm([r.p_value for r in rows])
    return [dataclasses.replace(r, p_adjusted=a, flagged=bool(a < 0.05)) for r, a in zip(rows, adjusted, strict=True)]


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment of m p-values: the i-th smallest times (m - i + 1), made monotone and
    capped at 1; NaN stays NaN and does not count in m.

    Source: Holm (1979).

    Examples
    --------
    >>> [round(p, 12) for p in holm([0.01, 0.04, 0.03, 0.2])]
    [0.04, 0.09, 0.09, 0.2]
    """
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.size, np.nan)
    known = np.flatnonzero(~np.isnan(p))
    order = known[np.argsort(p[known], kind="stable")]
    m = order.size
    running = 0.0
    for i, j in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[j]))
        out[j] = running
    return [float(v) for v in out]
