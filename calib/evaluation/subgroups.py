"""Subgroups of an evaluation (``groups``: a segment, a site, an attribute; with several columns, their
values and crossings, :mod:`calib.evaluation.segments`): every summed metric per segment with its interval,
and per segment Cox's score test of calibration of the CORP lens (:mod:`calib.evaluation.lens`,
:mod:`calib.evaluation.cox_test`: intercept and slope, with power against a departure in the large or in
spread wherever the forecasts lie), its p-values adjusted for the number of segments tested (those of at
least ``min_segment`` rows) by Holm's method; a segment is flagged when its adjusted p-value is below 0.05.
Spiegelhalter's z is reported beside it: its terms carry the factor 1 - 2p and vanish near p = 0.5, where it
cannot see a segment that is off by a constant, so it no longer decides the flags. Then the search for the
worst segment, with its p-value after the search (:mod:`calib.evaluation.segments`).

A segment's state is summed with the same resample counts as the whole data set's (its rows' own), so
its intervals are of the same resamples.

Sources: Cox (1958) (the recalibration model whose score test flags); Spiegelhalter (1986) (the z
statistic); Holm (1979) (the adjustment).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from calib.evaluation.cox_test import KEYS as COX_KEYS
from calib.evaluation.cox_test import cox_statistic, cox_terms
from calib.evaluation.intervals import intervals, summed_values
from calib.evaluation.lens import lens_ece, lens_forecast_log_odds, lens_forecasts
from calib.evaluation.metrics import Batch, Context, MetricDefinition, Terms, reliability
from calib.evaluation.passes import State, Summers, terms_of, weighed
from calib.evaluation.results import GroupRow, Multicalibration
from calib.evaluation.segments import (
    block_segments,
    null_residuals,
    null_statistics,
    search_p_value,
    segment_name,
    segment_order,
    segment_score_sums,
)
from calib.validation import CalibInputError, effective_size

# Segments of a subgroup analysis, at most (each has its own sums, resamples and drawn score sums).
MAX_GROUPS = 1000


@dataclass
class SegmentSums:
    """A segment's sums: its ``state`` (the metrics' and tests' terms, for the data and every resample) and
    ``null``, its two Cox score sums in each of the search's outcome draws, (2, search_draws)."""

    state: State
    null: np.ndarray

    def merged(self, other: SegmentSums) -> SegmentSums:
        """The sums of both sets of rows (neither is changed)."""
        return SegmentSums(self.state.merged(other.state), self.null + other.null)


def accumulate_groups(
    by_group: dict, batch: Batch, ctx: Context, summed: list[MetricDefinition], counts, group_ids: np.ndarray,
    block: tuple[int, int] = (0, 0),
) -> None:  # fmt: skip
    """Each segment's rows of a block (:func:`calib.evaluation.segments.block_segments`) into that segment's
    sums in ``by_group`` (segment key -> SegmentSums): the terms of the ``summed`` metrics and of the tests,
    for the data and for every resample (``counts``: the block's resample counts, as (resample columns,
    (n, b) counts)), and the search's outcome draws (``block``: the block's index and the rows' offset in
    it, which key the draws)."""
    settings = ctx.settings
    forecasts, outcomes = lens_forecasts(batch)
    log_odds = lens_forecast_log_odds(batch)
    segments = list(block_segments(group_ids, settings.segment_depth))
    drawn = null_residuals(settings.seed, *block, forecasts, batch.weights, settings.search_draws)
    null = segment_score_sums(drawn, log_odds, [rows for _, rows in segments])
    for (key, rows), null_sums in zip(segments, null, strict=True):
        if key not in by_group:
            by_group[key] = SegmentSums(State(settings.n_boot), np.zeros((2, settings.search_draws)))
            check_group_count(by_group)
        part = Batch(batch.logp[rows], batch.labels[rows], None if batch.weights is None else batch.weights[rows])
        tests = z_test_terms(part) | cox_terms(forecasts[rows], outcomes[rows], log_odds[rows])
        terms = terms_of(summed, part, ctx) | weighed(tests | _size_terms(part), part.weights)
        sums = by_group[key]
        for term, values in Summers.point(terms).items():
            sums.state.add(term, slice(0, 1), values)
        summers = Summers(terms, resampled=True)
        for columns, c in counts:
            for term, values in summers(c[rows].astype(np.float64)).items():
                sums.state.add(term, slice(columns.start + 1, columns.stop + 1), values)
        sums.null += null_sums


def _size_terms(batch: Batch) -> dict[str, Terms]:
    """A group's rows, its total weight and its sum of squared weights (the rows again without weights), on
    the data only."""
    ones = np.ones(batch.labels.size)
    return {
        "group rows": Terms(ones, point_only=True, weight_power=0),
        "group weight": Terms(ones, point_only=True),
        "group weight squares": Terms(ones, point_only=True, weight_power=2),
    }


def check_group_count(by_group: dict) -> None:
    """Refuse more than MAX_GROUPS segments, naming what to do.

    Examples
    --------
    >>> try:
    ...     check_group_count(dict.fromkeys(range(MAX_GROUPS + 1)))
    ... except CalibInputError as error:
    ...     print(str(error).split(":")[0])
    the groups make more than 1000 segments
    """
    if len(by_group) > MAX_GROUPS:
        crossed = any(len(key) > 1 for key in by_group if isinstance(key, tuple))
        cross = (" or cross fewer columns (segment_depth=1: each column alone)", " or cross fewer columns "
                 "(--segment-depth 1: each column alone)") if crossed else ("", "")  # fmt: skip
        raise CalibInputError(
            f"the groups make more than {MAX_GROUPS} segments: choose group columns with fewer values (a segment, "
            f"a site) or bin them first{cross[0]}",
            cli_message=f"the groups make more than {MAX_GROUPS} segments: choose --groups columns with fewer values "
            f"(a segment, a site) or bin them first{cross[1]}",
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


def group_rows(
    by_group: dict, summed: list[MetricDefinition], ctx: Context, columns: tuple[str, ...]
) -> tuple[list[GroupRow], Multicalibration | None]:
    """Per segment, in :func:`calib.evaluation.segments.segment_order`: its metrics with intervals, Cox's score
    statistic of its CORP lens with its p-value and Holm's adjustment over the segments tested (the flag),
    Spiegelhalter's z, the reliability bins of the lens's ECE and its size-weighted error; and the search for
    the worst segment.

    Parameters
    ----------
    by_group : dict of segment key -> SegmentSums
        Each segment's sums (:func:`accumulate_groups`).
    summed : list of MetricDefinition
        The summed metrics to report per segment.
    ctx : Context
        The pass's context (its settings' ``min_segment`` and ``search_draws``).
    columns : tuple of str
        The group columns' names, which name the segments.

    Returns
    -------
    list of GroupRow, and the Multicalibration (None when no segment is large enough to test)
    """
    lens = lens_ece(ctx.n_classes)
    keys = sorted(by_group, key=segment_order)
    # Every column partitions the rows: the first column's segments hold the total weight once.
    total = sum(
        float(by_group[key].state.sums["group weight"][0, 0]) for key in keys if len(key) == 1 and key[0][0] == 0
    )
    rows, information, degrees = [], [], []
    for key in keys:
        state = by_group[key].state
        point = {name: float(state.sums[name][0, 0]) for name in ("group rows", "group weight", "group weight squares")}
        draws = summed_values(summed, state, ctx)
        metrics, _, _ = intervals(draws, summed, ctx)
        numerator, variance = state.sums["z numerator"][0, 0], state.sums["z variance"][0, 0]
        z = numerator / np.sqrt(variance) if variance > 0 else float("nan")
        cox = [float(state.sums[name][0, 0]) for name in COX_KEYS]
        untested = _untested(point, ctx.settings.min_segment)
        statistic, degree, p = cox_statistic(*cox) if not untested else (float("nan"), 2, float("nan"))
        if not untested and np.isnan(statistic):
            untested = NO_INFORMATION
        bins = reliability(lens.bins[0], state.sums, ctx.edges[lens.bins[1]])
        error = point["group weight"] / total * metrics[lens.name].value if total > 0 else float("nan")
        rows.append(GroupRow(segment_name(key, columns), int(point["group rows"]), metrics, statistic, p, p, False,
                             bins, point["group weight"], float(z), degree, not untested, error, untested,
                             {columns[j]: value for j, value in key}))  # fmt: skip
        information.append(cox[2:])
        degrees.append(degree)
    adjusted = holm([r.p_value for r in rows])
    rows = [dataclasses.replace(r, p_adjusted=a, flagged=bool(a < 0.05)) for r, a in zip(rows, adjusted, strict=True)]
    searched = [i for i, r in enumerate(rows) if r.tested]
    if not searched:
        return rows, None
    null = np.stack([by_group[keys[i]].null for i in searched])
    maxima = null_statistics(null, np.array(information)[searched], np.array(degrees)[searched]).max(axis=0)
    worst = max(searched, key=lambda i: rows[i].statistic)
    largest = max(searched, key=lambda i: rows[i].error)
    search = Multicalibration(
        segment=rows[worst].group, n=rows[worst].n, error=rows[worst].error, statistic=rows[worst].statistic,
        p_value=search_p_value(rows[worst].statistic, maxima), critical=float(np.quantile(maxima, 0.95)),
        searched=len(searched), too_small=sum(r.untested != NO_INFORMATION for r in rows if not r.tested),
        untestable=sum(r.untested == NO_INFORMATION for r in rows), draws=maxima.size,
        largest_error=rows[largest].error, largest_error_segment=rows[largest].group, columns=columns,
        depth=ctx.settings.segment_depth, min_segment=ctx.settings.min_segment,
    )  # fmt: skip
    return rows, search


# Why a segment large enough is not tested: no forecast in it is uncertain, so no outcome could depart from it
# by chance (its statistic is 0 / 0; a certain forecast that was wrong is an infinite statistic, and tested).
NO_INFORMATION = "no information: every forecast is 0 or 1"


def _untested(point: dict, minimum: int) -> str:
    """Why a segment of these sizes is not tested ("" when it is): a Kish effective size below ``minimum``
    (its rows, without sample weights: then the weights and their squares are the rows)."""
    rows, weight, squares = point["group rows"], point["group weight"], point["group weight squares"]
    if squares > 0 and effective_size(weight, squares) >= minimum:
        return ""
    return f"fewer than {minimum} rows" if weight == rows == squares else f"effective size below {minimum}"


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
