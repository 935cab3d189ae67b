"""One pass over a data set, block by block, into states that merge: the sums behind every metric, for
the data and for each bootstrap resample, overall and per subgroup, and a seeded subsample.

The samples are taken in blocks of consecutive rows (:func:`block_rows`: at most :data:`BLOCK_ROWS`,
fewer for many classes), whatever chunks they arrive in (a file read in pieces, a folder of Parquet
files, an array), so a data set gives the same sums, added in the same order, however it is cut: a
chunked pass equals a single one to the last bit.

The random streams of an evaluation are keyed by the seed and a stream id (with a block or a group of
resamples): 1 the CORP test's resamples, 2 the rows' Poisson counts, 3 the subsample keys, 4 the subsample's
own resamples (the smooth ECE's and the MMCE's), 5 the buckets' hash, 6 the buckets' weights.

Resamples are Poisson bootstrap resamples: each resampling unit is drawn Poisson(1) times, independently,
so a resample needs no total count and is built block by block (Hanley & MacGibbon (2006)). The units are
the first 64 x G rows of the data set, each on its own, and G buckets of the later rows, a row's bucket a
hash of its position (``resample_buckets`` is G; :func:`row_buckets`). A bucket's weight multiplies the
sum of its rows, so the later rows cost a bucketed sum each (:func:`bucket_sums`) and the resamples one
(cells x G) @ (G x B) product at the end (:meth:`State.resolved`), instead of B counts per row: Chamandy
et al. (2012)'s bootstrap of massive data streams. Rows hashed to buckets independently of their values
make each bucket's centred sum a sum of independent rows, so a resampled sum has the per-row bootstrap's
variance, to a relative O(1 / G) (``benchmarks/bucket_bootstrap.py`` checks both against known truths).
The counts of a block's rows, and the weights of the buckets, come from random streams keyed by the seed
and the block's position (or the group of resamples), the same in every pass.
The subsample keeps the rows with the smallest random keys (drawn the same way), so it is the same
however the data are cut.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from calib.evaluation.metrics import Batch, Context, MetricDefinition, Terms
from calib.resampling.bootstrap import ResampledSums, with_infinite
from calib.validation import CalibInputError

# Rows per block of a pass at most, and cells (rows x classes) at most, so that one (rows, K) array of
# a block is at most 32 MiB; resamples per block of counts (a block's counts are then at most 32 MiB).
BLOCK_ROWS = 1 << 16
BLOCK_CELLS = 1 << 22
RESAMPLES_PER_BLOCK = 64


def block_rows(n_classes: int) -> int:
    """Rows per block for K = ``n_classes``: BLOCK_ROWS up to 64 classes, then BLOCK_CELLS / K (at least 1024)."""
    return min(BLOCK_ROWS, max(1024, BLOCK_CELLS // n_classes))


def blocks(chunks: Iterable[tuple], rows: int, first_row: int = 0) -> Iterator[tuple[int, int, tuple]]:
    """Re-cut ``chunks`` (tuples of arrays of one length: scores, labels, groups, ...) into consecutive
    blocks of ``rows`` rows, yielded as (block index, position of the first row in the block, arrays).

    ``first_row``: the data set's row the chunks start at (a partition of a larger set): blocks are cut
    where they are in the whole set, so the first and last may be parts of blocks.

    Examples
    --------
    >>> [(i, at, len(a)) for i, at, (a,) in blocks([(np.arange(7),)], 3, first_row=5)]
    [(1, 2, 1), (2, 0, 3), (3, 0, 3)]
    """
    pending: list[tuple] = []
    index, held = divmod(first_row, rows)
    offset = held
    for chunk in chunks:
        n = len(chunk[0])
        start = 0
        while start < n:
            take = min(rows - held, n - start)
            pending.append(tuple(None if a is None else a[start : start + take] for a in chunk))
            held += take
            start += take
            if held == rows:
                yield index, offset, _joined(pending)
                index, offset, pending, held = index + 1, 0, [], 0
    if pending:
        yield index, offset, _joined(pending)


def _joined(parts: list[tuple]) -> tuple:
    if len(parts) == 1:
        return parts[0]
    out = []
    for arrays in zip(*parts, strict=True):
        given = [a is not None for a in arrays]
        if any(given) and not all(given):
            raise CalibInputError(
                "chunks: groups or sample weights are given for some chunks and None for others; give them for "
                "every chunk (a weight of 1 where a row counts once) or for none"
            )
        out.append(np.concatenate(arrays) if all(given) else None)
    return tuple(out)


def _poisson_thresholds(top: int = 12) -> np.ndarray:
    """T_k = round(2^32 P(X < k)) for X ~ Poisson(1), k = 1..top: a uniform 32-bit integer u gives the
    count #{k : u >= T_k}, Poisson(1) to 2^-32 in each probability, cut at ``top`` (P(X > 12) < 10^-9)."""
    pmf = np.exp(-1.0) / np.cumprod(np.r_[1.0, np.arange(1.0, top)])  # e^-1 / k!, k = 0..top-1
    return np.round(np.cumsum(pmf) * 2.0**32).astype(np.uint64)


POISSON_THRESHOLDS = _poisson_thresholds()


def poisson_counts(seed: int, block: int, n_rows: int, n_boot: int) -> Iterator[tuple[slice, np.ndarray]]:
    """The Poisson(1) draw counts of block ``block``'s ``n_rows`` rows in resamples 0..n_boot-1, as
    (resample columns, uint8 (n_rows, b) counts) in groups of RESAMPLES_PER_BLOCK resamples.

    Examples
    --------
    >>> ((_, counts),) = poisson_counts(0, 0, 100_000, 3)
    >>> counts.shape, round(float(counts.mean()), 2), round(float(counts.var()), 2)
    ((100000, 3), 1.0, 1.0)
    """
    for start in range(0, n_boot, RESAMPLES_PER_BLOCK):
        stop = min(start + RESAMPLES_PER_BLOCK, n_boot)
        yield slice(start, stop), _poisson_draws((2, block, start // RESAMPLES_PER_BLOCK), seed, (n_rows, stop - start))


def _poisson_draws(stream: tuple, seed: int, shape: tuple[int, int]) -> np.ndarray:
    """uint8 Poisson(1) draws of ``shape`` from the random stream keyed by ``seed`` and ``stream``, by the
    inverse distribution function of uniform 32-bit integers (:func:`_poisson_thresholds`): three
    comparisons for every draw, the rest only for the 2 % of draws above 2."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=stream))
    u = rng.integers(0, 2**32, size=shape, dtype=np.uint32)
    counts = np.zeros(u.shape, dtype=np.uint8)
    for threshold in POISSON_THRESHOLDS[:3]:
        np.add(counts, u >= threshold, out=counts, casting="unsafe")
    high = np.flatnonzero(counts.ravel() == 3)
    rare = u.ravel()[high]
    for threshold in POISSON_THRESHOLDS[3:]:
        counts.ravel()[high] += rare >= threshold
    return counts


# Rows resampled on their own before the buckets start, per bucket: 64 x 4096 = 262144 rows by default, so
# that a data set of that size is resampled row by row, as small data sets always were, and a bucket of a
# larger one holds on average at least (N - 64 G) / G rows of it.
ROWS_ALONE_PER_BUCKET = 64
# A term is summed by bucket while its cells (values x groups) times the buckets are at most this many (16
# MiB of float64): a larger one (a class-wise ECE of many classes) is resampled row by row with its rows'
# bucket weights, which gives the same sums, so the states stay small for any K.
MAX_BUCKETED_CELLS = 1 << 21


def rows_alone(settings) -> float:
    """How many of the data set's first rows are resampled each on its own (all of them: infinity)."""
    buckets = settings.resample_buckets
    return math.inf if buckets is None else ROWS_ALONE_PER_BUCKET * buckets


def row_buckets(seed: int, first_row: int, n_rows: int, n_buckets: int) -> np.ndarray:
    """The buckets of the data set's rows ``first_row`` to ``first_row + n_rows``: each a hash of the row's
    position and the seed (SplitMix64's finalizer, Steele et al. (2014)), so the same row falls in the same
    bucket however the data are cut, and neighbouring rows (a file sorted by time or score) scatter.

    Source: Steele et al. (2014) (SplitMix64); Chamandy et al. (2012) (buckets of rows resampled together).

    Examples
    --------
    >>> buckets = row_buckets(0, 10**9, 100_000, 4096)
    >>> int(buckets.min()), int(buckets.max()), bool(np.bincount(buckets).std() < 2 * np.sqrt(100_000 / 4096))
    (0, 4095, True)
    >>> bool((row_buckets(0, 5, 3, 64) == row_buckets(0, 0, 8, 64)[5:]).all())
    True
    """
    key = np.random.SeedSequence(seed, spawn_key=(5,)).generate_state(1, np.uint64)[0]
    x = np.arange(first_row, first_row + n_rows, dtype=np.uint64) + key
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return ((x >> np.uint64(32)) * np.uint64(n_buckets) >> np.uint64(32)).astype(np.intp)


@dataclass(frozen=True)
class BucketWeights:
    """The Poisson(1) weight of each of ``n_buckets`` buckets in each of ``n_boot`` resamples, as (resample
    columns, uint8 (n_buckets, b)) in groups of RESAMPLES_PER_BLOCK resamples: kept once drawn while they
    take at most ``keep_bytes``, drawn again at each reading otherwise (the same draws)."""

    seed: int
    n_buckets: int
    n_boot: int
    keep_bytes: int = 1 << 25

    def __iter__(self) -> Iterator[tuple[slice, np.ndarray]]:
        if self.n_buckets * self.n_boot <= self.keep_bytes:
            yield from self._kept()
        else:
            yield from self._drawn()

    def _drawn(self) -> Iterator[tuple[slice, np.ndarray]]:
        for start in range(0, self.n_boot, RESAMPLES_PER_BLOCK):
            stop = min(start + RESAMPLES_PER_BLOCK, self.n_boot)
            shape = (self.n_buckets, stop - start)
            yield slice(start, stop), _poisson_draws((6, start // RESAMPLES_PER_BLOCK), self.seed, shape)

    def _kept(self) -> list[tuple[slice, np.ndarray]]:
        return _kept_weights(self.seed, self.n_buckets, self.n_boot)


@functools.lru_cache(maxsize=4)
def _kept_weights(seed: int, n_buckets: int, n_boot: int) -> list[tuple[slice, np.ndarray]]:
    return list(BucketWeights(seed, n_buckets, n_boot)._drawn())


@dataclass(frozen=True)
class BlockCounts:
    """The resample counts of a block's rows: its first ``alone`` rows' own Poisson counts (``own``, as
    (resample columns, (alone, b)) pairs) and, for each later row, the weights of its bucket (``buckets``,
    ``weights``). Iterating gives every row's counts, (resample columns, uint8 (n, b)), group by group."""

    own: object
    alone: int
    buckets: np.ndarray
    weights: BucketWeights | None

    def __iter__(self) -> Iterator[tuple[slice, np.ndarray]]:
        if not self.buckets.size:
            yield from self.own
            return
        if not self.alone:
            for columns, w in self.weights:
                yield columns, w[self.buckets]
            return
        for (columns, c), (_, w) in zip(self.own, self.weights, strict=True):
            yield columns, np.concatenate([c, w[self.buckets]])

    def __bool__(self) -> bool:
        return self.weights is not None or bool(self.own)


def bucket_sums(terms: Terms, buckets: np.ndarray, n_buckets: int) -> tuple[np.ndarray, dict[float, np.ndarray]]:
    """A term's sums within each bucket of its rows (``buckets``: each row's), (m, G) without groups and
    (m, n_groups, G) with them; infinite values are kept out of the sums and counted by sign (the
    resamples' sums are then infinite, or NaN, as :class:`calib.resampling.bootstrap.ResampledSums` makes
    them).

    Examples
    --------
    >>> sums, infinite = bucket_sums(Terms(np.array([1.0, 2.0, 4.0])), np.array([1, 0, 1]), 3)
    >>> sums.tolist(), infinite
    ([[2.0, 5.0, 0.0]], {})
    """
    n = buckets.size
    values = terms.values.reshape(n, -1)
    m = values.shape[1]
    n_groups = 1 if terms.groups is None else terms.n_groups
    cells = np.arange(m) * n_groups
    if terms.groups is not None:
        cells = cells + terms.groups.reshape(n, -1)
    index = (np.broadcast_to(cells, values.shape) * n_buckets + buckets[:, None]).ravel()
    finite = np.isfinite(values)
    clean = values if finite.all() else np.where(finite, values, 0.0)
    shape = (m, n_buckets) if terms.groups is None else (m, n_groups, n_buckets)
    size = m * n_groups * n_buckets
    sums = np.bincount(index, weights=clean.ravel(), minlength=size).reshape(shape)
    infinite = {}
    if not finite.all():
        for sign in (np.inf, -np.inf):
            hit = (values == sign).ravel()
            if hit.any():
                infinite[sign] = np.bincount(index[hit], minlength=size).reshape(shape)
    return sums, infinite


def bucketed(terms: Terms, n_buckets: int) -> bool:
    """Whether a term is summed by bucket (its cells x the buckets at most MAX_BUCKETED_CELLS)."""
    m = int(np.prod(terms.values.shape[1:], dtype=int))
    n_groups = 1 if terms.groups is None else terms.n_groups
    return m * n_groups * n_buckets <= MAX_BUCKETED_CELLS


def resampling_in_words(settings, n_rows: int) -> str:
    """What the resamples resample, for the output.

    Examples
    --------
    >>> from calib.evaluation.settings import EvaluationSettings
    >>> resampling_in_words(EvaluationSettings(), 1000)
    'each row on its own'
    >>> resampling_in_words(EvaluationSettings(), 10**7).split(" (")[0]
    'rows 1 to 262144 each on its own, the other 9737856 rows in 4096 buckets by their position'
    """
    alone = rows_alone(settings)
    if not settings.n_boot or n_rows <= alone:
        return "each row on its own" if settings.n_boot else ""
    return (
        f"rows 1 to {alone} each on its own, the other {n_rows - alone} rows in {settings.resample_buckets} "
        "buckets by their position (a bucketed Poisson bootstrap, Chamandy et al. (2012); resample_buckets None, "
        "--resample-buckets 0: every row on its own)"
    )


def subsample_keys(seed: int, block: int, n_rows: int, offset: int = 0) -> np.ndarray:
    """Uniform random keys of a block's rows ``offset`` to ``offset + n_rows``: the subsample keeps the
    rows with the smallest keys (a block's keys are drawn in row order, so a part of a block has its own)."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(3, block)))
    return rng.random(offset + n_rows)[offset:]


@dataclass
class Subsample:
    """The rows with the smallest random keys (:func:`subsample_keys`), at most ``limit``, in their order:
    their keys and the arrays kept of them (:attr:`keys`, :attr:`arrays`). Offered rows are copied into
    pieces, cut back to the limit whenever they hold half as many more (so each row is copied a bounded
    number of times). Once a cut has kept ``limit`` rows, an offered row with a key above the largest
    kept one cannot be among the smallest ``limit`` any more, and is not copied: past the first
    ``limit`` rows of N, about limit ln(N / limit) rows are copied in all, not N. Subsamples of
    disjoint rows merge (:meth:`merged`).

    ``below``: only rows with keys below it are kept (a partition of a large set keeps what can be among
    the smallest keys of the whole set, :func:`key_bound`; :meth:`complete` tells whether it was enough).

    Examples
    --------
    >>> sample = Subsample(2)
    >>> sample.offer(np.array([0.5, 0.1, 0.3]), np.array([10, 11, 12]))
    >>> sample.keys.tolist(), sample.arrays[0].tolist()
    ([0.1, 0.3], [11, 12])
    """

    limit: int
    below: float = 1.0
    _pieces: list[tuple[np.ndarray, ...]] = field(default_factory=list)
    _held: int = 0
    _largest: float = 1.0  # the largest key kept once a cut has kept ``limit`` rows (1: none yet)

    def offer(self, keys: np.ndarray, *arrays: np.ndarray) -> None:
        """Offer rows with their ``keys`` and the ``arrays`` to keep of them (copied)."""
        if self.limit <= 0:
            return
        if self.below < 1.0 or self._largest < 1.0:
            kept = (keys < self.below) & (keys <= self._largest)
            keys, arrays = keys[kept], tuple(a[kept] for a in arrays)  # copies
        else:
            arrays = tuple(np.array(a) for a in arrays)
        self._pieces.append((keys, *arrays))
        self._held += keys.size
        if self._held > self.limit + max(self.limit // 2, keys.size):
            self._cut()

    def _cut(self) -> None:
        if len(self._pieces) > 1:
            self._pieces = [tuple(np.concatenate(parts) for parts in zip(*self._pieces, strict=True))]
        if self._pieces and self._held > self.limit:
            keys = self._pieces[0][0]
            largest = np.partition(keys, self.limit - 1)[self.limit - 1]
            keep = keys < largest  # a mask keeps the rows in their order without sorting their positions
            ties = np.flatnonzero(keys == largest)  # the first offered of keys tied at the limit
            keep[ties[: self.limit - np.count_nonzero(keep)]] = True
            self._pieces = [tuple(a[keep] for a in self._pieces[0])]
            self._held = self.limit
            self._largest = min(self._largest, float(largest))

    def merged(self, other: Subsample) -> Subsample:
        """The subsample of both sets of rows, ``self``'s before ``other``'s (neither is changed)."""
        below = min(self.below, other.below)
        both = Subsample(self.limit, below, self._pieces + other._pieces, self._held + other._held)
        both._cut()
        return both

    def complete(self) -> bool:
        """Whether these are the smallest keys of all the rows offered: taken without a bound, or with at
        least ``limit`` rows below it."""
        return self.below >= 1.0 or self._held >= self.limit

    @property
    def keys(self) -> np.ndarray:
        """The kept rows' keys."""
        self._cut()
        return self._pieces[0][0] if self._pieces else np.empty(0)

    @property
    def arrays(self) -> list[np.ndarray]:
        """The arrays kept of the rows, in the order they were offered."""
        self._cut()
        return list(self._pieces[0][1:]) if self._pieces else []


def key_bound(limit: int, n_rows: int) -> float:
    """A key below which a subsample of ``limit`` of ``n_rows`` rows lies, but for a chance below 10^-15: the
    number of n uniform keys below b is Binomial(n, b), of mean limit + 8 sqrt(limit) + 64 here, so it falls
    short of ``limit`` only 8 standard deviations below its mean (1 when every row may be kept).

    Examples
    --------
    >>> key_bound(10**6, 10**9), key_bound(100, 1000), key_bound(100, 100)
    (0.001008064, 0.244, 1.0)
    """
    if limit <= 0:
        return 0.0
    return min(1.0, (limit + 8 * limit**0.5 + 64) / n_rows)


@dataclass
class State:
    """The summed terms of a set of samples: term key -> sums with a trailing axis over (the data,
    resample 0, ..., resample B-1). States of disjoint sets of samples merge by adding (:meth:`merge`).

    The rows resampled by bucket add their sums within each bucket instead (``buckets``: term key -> sums
    with a trailing axis over the buckets; ``infinite``: (term key, sign) -> counts of infinite values),
    which :meth:`resolved` turns into the resamples' sums once all rows are in."""

    n_boot: int
    sums: dict[str, np.ndarray] = field(default_factory=dict)
    buckets: dict[str, np.ndarray] = field(default_factory=dict)
    infinite: dict[tuple[str, float], np.ndarray] = field(default_factory=dict)

    def add(self, key: str, columns: slice, values: np.ndarray) -> None:
        if key not in self.sums:
            self.sums[key] = np.zeros(values.shape[:-1] + (1 + self.n_boot,))
        target = self.sums[key][..., columns]
        np.add(target, values, out=target)

    def add_buckets(self, key: str, sums: np.ndarray, infinite: dict[float, np.ndarray]) -> None:
        """Add a block's sums within each bucket (and its counts of infinite values, by sign)."""
        _added(self.buckets, key, sums)
        for sign, counts in infinite.items():
            _added(self.infinite, (key, sign), counts)

    def merge(self, other: State) -> State:
        for key, values in other.sums.items():
            self.add(key, slice(None), values)
        for key, values in other.buckets.items():
            _added(self.buckets, key, values)
        for key, values in other.infinite.items():
            _added(self.infinite, key, values)
        return self

    def merged(self, other: State) -> State:
        """A new state of both sets of samples (neither is changed)."""
        copy = State(self.n_boot, {key: values.copy() for key, values in self.sums.items()},
                     {key: values.copy() for key, values in self.buckets.items()},
                     {key: values.copy() for key, values in self.infinite.items()})  # fmt: skip
        return copy.merge(other)

    def resolved(self, weights: BucketWeights | None) -> State:
        """The state with the buckets' sums added to the resamples' (each bucket's sum times its weight in
        the resample), as a new state: a resample's sum is +inf or -inf where it weighs a bucket holding
        such values, NaN where it weighs both, as the plain sum over its rows would be."""
        if not self.buckets:
            return self
        sums = {key: values.copy() for key, values in self.sums.items()}
        for columns, w in weights:
            w = w.astype(np.float64)
            for key, within in self.buckets.items():
                added = within @ w
                for sign in (np.inf, -np.inf):
                    if (key, sign) in self.infinite:
                        with_infinite(added, sign, self.infinite[key, sign] @ w > 0)
                resampled = sums[key][..., columns.start + 1 : columns.stop + 1]
                np.add(resampled, added, out=resampled)
        return State(self.n_boot, sums)


def _added(into: dict, key, values: np.ndarray) -> None:
    if key in into:
        np.add(into[key], values, out=into[key])
    else:
        into[key] = values.copy()


def terms_of(definitions: list[MetricDefinition], batch: Batch, ctx: Context) -> dict[str, Terms]:
    """Every term the metrics need for ``batch``, each key once; a terms function that several metrics
    share (a binned ECE and its debiased squared form) is called once.

    With sample weights, each row's values are multiplied here by its weight (to the term's
    ``weight_power``), the one place a weight enters a sum: every summed metric becomes its weighted
    form (sum_i w_i v_i for sum_i v_i: counts become total weights), and integer weights give what
    repeating each row w_i times gives. A resample's count c_i then multiplies w_i v_i."""
    out: dict[str, Terms] = {}
    called = set()
    for definition in definitions:
        if definition.terms is not None and definition.terms not in called:
            called.add(definition.terms)
            for key, terms in definition.terms(batch, ctx).items():
                out.setdefault(key, terms)
    return weighed(out, batch.weights)


def weighed(terms: dict[str, Terms], weights: np.ndarray | None) -> dict[str, Terms]:
    """``terms`` with each row's values multiplied by its weight to the term's ``weight_power`` (unchanged
    without weights)."""
    return terms if weights is None else {key: _weighed(t, weights) for key, t in terms.items()}


def _weighed(terms: Terms, weights: np.ndarray) -> Terms:
    if terms.weight_power == 0:
        return terms
    w = weights**terms.weight_power if terms.weight_power != 1 else weights
    w = w if terms.values.ndim == 1 else w[:, None]
    with np.errstate(invalid="ignore"):
        values = terms.values * w
    if not weights.all():  # a row of weight 0 adds nothing, not 0 * inf = NaN (an infinite log loss)
        values = np.where(w == 0, 0.0, values)
    return dataclasses.replace(terms, values=values)


class Summers:
    """The sums of a block's terms under many count vectors, with terms of one grouping stacked into one
    matrix product (ResampledSums): every term without groups in one dense product, every term grouped
    by the same array (e.g. the labels) in one sparse product."""

    def __init__(self, terms: dict[str, Terms], resampled: bool = False):
        """``resampled``: leave out the terms summed on the data only (``point_only``)."""
        stacks: dict[tuple, list[tuple[str, np.ndarray]]] = {}
        for key, t in terms.items():
            if resampled and t.point_only:
                continue
            values = t.values.reshape(t.values.shape[0], -1)
            signature = (None, 1, values.shape[1]) if t.groups is None else (id(t.groups), t.n_groups, -1)
            stacks.setdefault(signature, []).append((key, values, t))
        self.parts = []
        for (_, n_groups, _), members in stacks.items():
            grouped = members[0][2].groups
            widths = [values.shape[1] for _, values, _ in members]
            if grouped is None or grouped.ndim == 1:
                stacked = np.column_stack([values for _, values, _ in members])
                summer = ResampledSums(stacked, grouped, n_groups)
            else:  # one group per value (e.g. a bin per class): each term on its own
                summer = None
            if summer is None:
                for key, values, t in members:
                    self.parts.append(([key], [values.shape[1]], ResampledSums(values, t.groups, t.n_groups)))
            else:
                self.parts.append(([key for key, _, _ in members], widths, summer))

    @staticmethod
    def point(terms: dict[str, Terms]) -> dict[str, np.ndarray]:
        """Each term's sums over the block's samples (every count 1), as plain sums: (m, 1) or (m, groups, 1)."""
        out = {}
        for key, t in terms.items():
            values = t.values.reshape(t.values.shape[0], -1)
            m = values.shape[1]
            if t.groups is None:
                out[key] = values.sum(axis=0)[:, None]
                continue
            groups = t.groups.reshape(t.groups.shape[0], -1)
            cells = np.broadcast_to(np.arange(m) * t.n_groups + groups, values.shape)
            sums = np.bincount(cells.ravel(), weights=values.ravel(), minlength=m * t.n_groups)
            out[key] = sums.reshape(m, t.n_groups, 1)
        return out

    def __call__(self, counts: np.ndarray) -> dict[str, np.ndarray]:
        """Each term's sums for the count columns ``counts`` (n, b): (m, b) or (m, groups, b)."""
        out = {}
        for keys, widths, summer in self.parts:
            sums = summer(counts)
            start = 0
            for key, width in zip(keys, widths, strict=True):
                out[key] = sums[start : start + width]
                start += width
        return out
