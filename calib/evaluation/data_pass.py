"""A pass over a data set: its context (costs, priors, bin edges), what it gathers in one reading (the
summed terms of every metric for the data and every Poisson resample, overall and per subgroup, and the
seeded subsamples of the CORP lens and of the calibrators' rows), and the metrics' values from them.

The building blocks (blocks of rows, resample counts, subsample keys, states that merge) are in
:mod:`calib.evaluation.passes`; a pass run here in one process (:func:`run_pass`) and the passes over the
partitions of a data set merged (:mod:`calib.evaluation.partitioned`) give the same :class:`Pass`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from calib._internal.threads import pass_drawer
from calib.evaluation.intervals import summed_values, whole_values
from calib.evaluation.lens import lens_ece, lens_forecast_log_odds, lens_forecasts
from calib.evaluation.metrics import Batch, Context, MetricDefinition, Terms, bin_edges, selected
from calib.evaluation.passes import (
    BlockCounts,
    BucketWeights,
    State,
    Subsample,
    Summers,
    block_rows,
    blocks,
    bucket_sums,
    bucketed,
    poisson_counts,
    row_buckets,
    rows_alone,
    subsample_keys,
    terms_of,
)
from calib.evaluation.progress import Phase
from calib.evaluation.settings import EvaluationSettings
from calib.evaluation.subgroups import accumulate_groups, check_group_count
from calib.scoring.decisions import check_costs, zero_one_costs
from calib.validation import CalibInputError, all_zero_weights, as_priors

MIXED_WEIGHTS = (
    "sample_weight: some rows have weights and others none; give a weight for every row (1 where a row counts "
    "once) or for none"
)

# Bytes of one block's resample counts drawn ahead on a second thread, at most (one byte per count).
COUNT_BYTES = 1 << 25


@dataclass
class Gathered:
    """What a pass over rows gathers: the summed state overall and per group, the subsamples (of the lens and
    of the calibrators' rows) and the class counts. Those of disjoint rows merge (:meth:`merged`).

    The lens subsample keeps of each row its top-label confidence and correctness (the smooth ECE reads
    them), and its lens forecast, outcome and forecast log-odds (CORP reads them), in that order, then its
    sample weight when the rows have weights; the fitting subsample its log-posteriors and label, then its
    weight. ``seen``: the rows of each class; ``weight_sums``: with weights, the weight of each class's rows
    and then the sum of the squared weights, (K + 1,); None without."""

    overall: State
    by_group: dict
    lens: Subsample
    fitting: Subsample
    seen: np.ndarray
    weight_sums: np.ndarray | None = None

    def merged(self, other: Gathered) -> Gathered:
        """What both passes gathered, ``self``'s rows before ``other``'s (neither is changed, so a merge run
        again, as a cluster does after losing a worker, gives the same)."""
        by_group = dict(self.by_group)
        for key, state in other.by_group.items():
            by_group[key] = by_group[key].merged(state) if key in by_group else state
        check_group_count(by_group)
        if (self.weight_sums is None) != (other.weight_sums is None) and self.seen.any() and other.seen.any():
            raise CalibInputError(MIXED_WEIGHTS)
        sums = [s for s in (self.weight_sums, other.weight_sums) if s is not None]
        return Gathered(self.overall.merged(other.overall), by_group, self.lens.merged(other.lens),
                        self.fitting.merged(other.fitting), self.seen + other.seen,
                        sum(sums) if sums else None)  # fmt: skip


@dataclass
class Pass:
    """A data set's pass: the context, the metrics reported and those computed (the reported ones and the
    lens's binned ECE, which the figures and the subgroups read), and what was gathered."""

    ctx: Context
    definitions: list[MetricDefinition]
    computed: list[MetricDefinition]
    gathered: Gathered

    @property
    def overall(self) -> State:
        """The sums of all rows."""
        return self.gathered.overall

    @property
    def by_group(self) -> dict:
        """The sums of each group's rows, by group value."""
        return self.gathered.by_group

    @property
    def lens(self) -> Subsample:
        """The subsample that the smooth ECE and CORP read."""
        return self.gathered.lens

    @property
    def fitting(self) -> Subsample:
        """The subsample the calibrators are cross-validated on."""
        return self.gathered.fitting

    @property
    def n(self) -> int:
        """The number of rows passed over."""
        return int(self.gathered.seen.sum())

    @property
    def weighted(self) -> bool:
        """Whether the rows have sample weights."""
        return self.gathered.weight_sums is not None

    def draws(self) -> dict[str, np.ndarray]:
        """Every metric's values over (the data, resample 1, ..., resample B): the summed metrics from the
        state, the others from the subsample and its own resamples."""
        out = summed_values([d for d in self.computed if d.terms is not None], self.overall, self.ctx)
        conf, correct = self.lens.arrays[0], self.lens.arrays[1]
        weights = lens_weights(self.lens)
        for definition in self.definitions:
            if definition.whole is not None:
                out |= whole_values(definition, conf, correct, self.ctx, weights)
        reported = {name for d in self.definitions for name in d.names(self.ctx)}
        return {name: values for name, values in out.items() if name in reported}


# Where the subsamples keep a row's sample weight, when the rows have weights (Gathered).
LENS_WEIGHT, FITTING_WEIGHT, EDGE_WEIGHT = 5, 2, 2


def lens_weights(lens: Subsample) -> np.ndarray | None:
    """The sample weights of the lens subsample's rows (None when the rows have none)."""
    return _kept(lens, LENS_WEIGHT)


def fitting_weights(fitting: Subsample) -> np.ndarray | None:
    """The sample weights of the fitting subsample's rows (None when the rows have none)."""
    return _kept(fitting, FITTING_WEIGHT)


def _kept(sample: Subsample, index: int) -> np.ndarray | None:
    arrays = sample.arrays
    return arrays[index] if len(arrays) > index else None


def run_pass(source, *, n_classes, n_rows, settings, costs, priors, grouped, say, whole_limit, fit_rows=0) -> Pass:
    """One pass over ``source()`` (chunks of (log-posteriors, labels, groups)) into a :class:`Pass`.

    Parameters
    ----------
    source : callable
        Returns a fresh iterable of the chunks at each call (equal-mass edges read the data first).
    n_classes : int
        K.
    n_rows : int or None
        The rows, when known or estimated (for the time left).
    settings : EvaluationSettings
        The evaluation's settings.
    costs, priors
        As for :func:`calib.evaluate` (checked here).
    grouped : bool
        The chunks carry groups: sum each group's rows too.
    say : callable
        Receives progress messages.
    whole_limit, fit_rows : int
        The rows at most of the lens's subsample and of the calibrators'.

    Returns
    -------
    Pass
    """
    ctx = context(n_classes, settings, costs, priors, lambda: edge_sample(source, settings, n_classes).arrays)
    definitions, computed = metrics_of(ctx)
    reading = Phase("reading", n_rows, say, unit="rows")
    gathered = gather(source, ctx, computed, grouped=grouped, whole_limit=whole_limit, fit_rows=fit_rows,
                      threads=settings.threads, advance=reading.advance)  # fmt: skip
    return checked(Pass(ctx, definitions, computed, gathered))


def context(n_classes: int, settings: EvaluationSettings, costs, priors, edge_sample: Callable) -> Context:
    """The context of a pass: costs and priors checked, and the bins' edges (equal-mass edges from the
    arrays ``edge_sample()`` returns: a seeded subsample's top-label confidence and probabilities)."""
    k = n_classes
    if costs is not None and not isinstance(costs, Mapping):
        raise CalibInputError(
            f"costs must be a mapping of a name to a (K, D) cost matrix, e.g. {{'my costs': matrix}}; got a "
            f"{type(costs).__name__}"
        )
    if isinstance(priors, Mapping):
        raise CalibInputError(
            "priors must be K numbers in the order of the classes (of the columns of scores); got a mapping: "
            "give [priors[name] for name in class_names]"
        )
    costs = {name: check_costs(c, k) for name, c in (costs or {"0-1": zero_one_costs(k)}).items()}
    priors = None if priors is None else as_priors(priors, k)
    if settings.binning == "equal-mass":
        confidence, probs, *weights = edge_sample()
        columns = {"confidence": confidence, "positive": probs[:, 1], "classes": probs}
        edges = bin_edges(settings, columns, *weights)
        return Context(k, settings, costs, priors, edges, edge_rows=confidence.size)
    edges = bin_edges(settings, {"confidence": None, "positive": None, "classes": None})
    return Context(k, settings, costs, priors, edges)


def metrics_of(ctx: Context) -> tuple[list[MetricDefinition], list[MetricDefinition]]:
    """The metrics reported, and those computed (the reported ones and the lens's binned ECE)."""
    definitions = selected(ctx)
    lens = lens_ece(ctx.n_classes)
    return definitions, definitions + ([lens] if lens not in definitions else [])


def edge_sample(source, settings: EvaluationSettings, k: int, first_row: int = 0, below: float = 1.0) -> Subsample:
    """What equal-mass edges are the quantiles of: the top-label confidence and the probabilities of a seeded
    subsample of ``sample_limit`` rows (all rows when they are fewer), and their sample weights when they have
    some, read in a first pass over ``source()``, whose chunks start at row ``first_row`` of the data set (keys
    below ``below``)."""
    sample = Subsample(settings.sample_limit, below)
    for index, offset, (logp, y, _, sample_weight) in blocks(source(), block_rows(k), first_row):
        batch = Batch(logp, y)
        weights = () if sample_weight is None else (sample_weight,)
        sample.offer(subsample_keys(settings.seed, index, y.size, offset), batch.confidence, batch.probs, *weights)
    return sample


# The chance that the bound said of equal-mass edges found on a subsample fails (edge_note).
EDGE_NOTE_RISK = 0.001


def edge_note(sampled: int, rows: int, risk: float = EDGE_NOTE_RISK) -> str:
    """The note of equal-mass edges found on a subsample of ``sampled`` of the ``rows`` samples: how far the
    share of all samples at or below an edge may be from its share of the subsample.

    For m samples drawn at random, sup_x |F_m(x) - F(x)| <= eps = sqrt(ln(2 / delta) / (2 m)) with
    probability 1 - delta, for every x at once, so for every edge (``risk`` is delta; eps is rounded up
    to two digits). The inequality is proved for samples drawn independently; the subsample draws them
    without replacement, which makes each share's variance smaller by the factor (N - m) / (N - 1), and the
    note says the bound as for independent draws.

    Source: Dvoretzky et al. (1956) (the inequality); Massart (1990) (its constant 2).

    Examples
    --------
    >>> edge_note(1_000_000, 2_500_000).split("; ")[0]
    'equal-mass bins: edges from a seeded random 1000000 of the 2500000 samples (sample_limit)'
    >>> edge_note(1_000_000, 2_500_000).split(" within ")[1][:7]  # sqrt(ln(2000) / (2 10^6)) = 0.00195
    '±0.0020'
    """
    eps = math.sqrt(math.log(2 / risk) / (2 * sampled))
    digits = 1 - math.floor(math.log10(eps))  # two significant digits
    bound = math.ceil(eps * 10**digits) / 10**digits
    return (
        f"equal-mass bins: edges from a seeded random {sampled} of the {rows} samples (sample_limit); the share "
        f"of the samples at or below each edge is within ±{bound:.{digits}f} of its share of the subsample, for "
        f"every edge at once with probability {1 - risk:g} (the Dvoretzky-Kiefer-Wolfowitz inequality with "
        "Massart's constant, as for samples drawn independently)"
    )


def gather(source, ctx: Context, computed, *, grouped, whole_limit, fit_rows, threads, first_row=0,
           below=(1.0, 1.0), advance=None) -> Gathered:  # fmt: skip
    """A pass over the chunks of ``source()``, which start at row ``first_row`` of the data set: the sums
    of the ``computed`` metrics' terms for the data and every resample, overall and per group, and the
    subsamples of ``whole_limit`` and ``fit_rows`` rows (keys below ``below``'s two bounds), on ``threads``
    threads (:func:`calib._internal.threads.pass_drawer`); ``advance(rows)`` is told of each block read."""
    settings, k = ctx.settings, ctx.n_classes
    summed = [d for d in computed if d.terms is not None]
    lens, fitting = Subsample(whole_limit, below[0]), Subsample(fit_rows, below[1])
    result = Gathered(State(settings.n_boot), {}, lens, fitting, np.zeros(k, dtype=np.int64))
    size = block_rows(k)
    alone_rows = rows_alone(settings)
    weights = bucket_weights(settings)
    # The next block's resample counts are drawn on a second thread while this block's sums are taken
    # (numpy draws and compares without the GIL; with threads = 1, here before them), once a full block
    # shows that more rows may follow; a part of a block takes its rows of the full block's draws, which are
    # its own (the draws fill the rows in order, so drawing only the rows a block holds gives the same
    # counts: a small data set draws no more). Only the rows resampled on their own are drawn: the later
    # ones take their buckets' weights.
    with pass_drawer(threads) as drawer:
        ahead = None
        for index, offset, (logp, y, group_ids, sample_weight) in blocks(source(), size, first_row):
            start = index * size + offset  # the data set's row this piece starts at
            alone = int(min(max(alone_rows - start, 0), y.size))
            if ahead is not None:
                drawn = ahead.result()
            else:
                drawn = _block_counts(settings, index, offset + alone) if alone else []
            own = [(columns, c[offset : offset + alone]) for columns, c in drawn]
            next_alone = offset + y.size == size and (index + 1) * size < alone_rows
            ahead = drawer.submit(_block_counts, settings, index + 1, size) if next_alone else None
            if settings.n_boot and alone and not own:  # too many to hold at once: drawn group by group, as read
                own = _LazyCounts(settings.seed, index, offset, alone, settings.n_boot)
            counts = BlockCounts(own, alone, *_later_buckets(settings.seed, start + alone, y.size - alone, weights))
            batch = Batch(logp, y, sample_weight)
            _count(result, batch, k, first=start == first_row)
            keys = subsample_keys(settings.seed, index, y.size, offset)
            correct = batch.correct.astype(np.float64)
            kept = () if sample_weight is None else (sample_weight,)
            forecasts = (*lens_forecasts(batch), lens_forecast_log_odds(batch))
            result.lens.offer(keys, batch.confidence, correct, *forecasts, *kept)
            result.fitting.offer(keys, logp, y, *kept)
            _accumulate(result.overall, terms_of(summed, batch, ctx), counts)
            if grouped:
                accumulate_groups(result.by_group, batch, ctx, summed, counts, group_ids, (index, offset))
            if advance is not None:
                advance(y.size)
    return result


def _count(result: Gathered, batch: Batch, k: int, first: bool) -> None:
    """Add a block's rows per class (and, with weights, its weights per class and squared) to ``result``;
    the first block decides whether the rows have weights, and every later one must agree."""
    if first and batch.weights is not None:
        result.weight_sums = np.zeros(k + 1)
    if (batch.weights is None) != (result.weight_sums is None):
        raise CalibInputError(MIXED_WEIGHTS)
    result.seen += np.bincount(batch.labels, minlength=k)
    if batch.weights is not None:
        result.weight_sums[:k] += np.bincount(batch.labels, weights=batch.weights, minlength=k)
        result.weight_sums[k] += float(batch.weights @ batch.weights)


def _later_buckets(seed: int, first_row: int, n_rows: int, weights: BucketWeights | None):
    """The buckets of rows resampled by bucket, and their weights (none when there are no such rows)."""
    if weights is None or n_rows <= 0:
        return np.empty(0, np.intp), None
    return row_buckets(seed, first_row, n_rows, weights.n_buckets), weights


def bucket_weights(settings: EvaluationSettings) -> BucketWeights | None:
    """The buckets' weights in the resamples (None without resamples or buckets)."""
    if not settings.n_boot or settings.resample_buckets is None:
        return None
    return BucketWeights(settings.seed, settings.resample_buckets, settings.n_boot)


def checked(done: Pass) -> Pass:
    """``done`` ready to read, with the bucketed rows' sums turned into the resamples' (:meth:`State.resolved`);
    refused when it holds no samples or a single class, or misses a class its priors weight."""
    if done.n == 0:
        raise CalibInputError("the data hold no samples: nothing to evaluate")
    sums = done.gathered.weight_sums
    if sums is not None and not sums[:-1].any():
        raise all_zero_weights()
    _check_classes(done.gathered.seen if sums is None else sums[:-1], done.ctx.priors)
    done.gathered.overall = done.gathered.overall.resolved(bucket_weights(done.ctx.settings))
    return done


@dataclass(frozen=True)
class _LazyCounts:
    """A block's resample counts of rows ``offset`` to ``offset + rows``, drawn 64 resamples at a time each time
    they are read (the same draws)."""

    seed: int
    index: int
    offset: int
    rows: int
    n_boot: int

    def __iter__(self):
        for columns, counts in poisson_counts(self.seed, self.index, self.offset + self.rows, self.n_boot):
            yield columns, counts[self.offset :]

    def __bool__(self) -> bool:
        return self.n_boot > 0


def _block_counts(settings: EvaluationSettings, index: int, rows: int) -> list[tuple[slice, np.ndarray]]:
    """A block's resample counts drawn ahead, or none when they would exceed COUNT_BYTES (the pass then
    draws them 64 resamples at a time, so memory does not grow with the number of resamples)."""
    if rows * settings.n_boot > COUNT_BYTES:
        return []
    return list(poisson_counts(settings.seed, index, rows, settings.n_boot))


def _accumulate(state: State, terms: dict, counts: BlockCounts) -> None:
    """Add a block's sums for the data (column 0) and for every resample: of the rows resampled on their own
    and of every row of the terms too large to sum by bucket, by their counts; of the other terms' later
    rows, within their buckets."""
    for key, sums in Summers.point(terms).items():
        state.add(key, slice(0, 1), sums)
    if not counts:
        return
    resampled = {key: t for key, t in terms.items() if not t.point_only}
    later = counts.buckets
    by_bucket = {key: t for key, t in resampled.items() if later.size and bucketed(t, counts.weights.n_buckets)}
    by_row = {key: t for key, t in resampled.items() if key not in by_bucket}
    if by_bucket and counts.alone:
        _add_resampled(state, {key: _first_rows(t, counts.alone) for key, t in by_bucket.items()}, counts.own)
    if by_row:
        _add_resampled(state, by_row, counts)
    for key, t in by_bucket.items():
        state.add_buckets(key, *bucket_sums(_later_rows(t, counts.alone), later, counts.weights.n_buckets))


def _add_resampled(state: State, terms: dict, counts) -> None:
    summers = Summers(terms)
    for columns, c in counts:
        for key, sums in summers(c.astype(np.float64)).items():
            state.add(key, slice(columns.start + 1, columns.stop + 1), sums)


def _first_rows(terms: Terms, rows: int) -> Terms:
    return _rows_of(terms, slice(None, rows))


def _later_rows(terms: Terms, rows: int) -> Terms:
    return _rows_of(terms, slice(rows, None))


def _rows_of(terms: Terms, rows: slice) -> Terms:
    groups = None if terms.groups is None else terms.groups[rows]
    return dataclasses.replace(terms, values=terms.values[rows], groups=groups)


def _check_classes(seen: np.ndarray, priors) -> None:
    if np.count_nonzero(seen) < 2:
        raise CalibInputError(
            "labels hold a single class: the naive cross-entropy and Brier score are 0, so NCE and NBS are "
            "undefined; evaluate samples of at least two classes"
        )
    if priors is not None and (seen == 0).any():
        missing = np.flatnonzero(seen == 0).tolist()
        raise CalibInputError(f"labels have no samples of classes {missing}; the prior weighting needs every class")
