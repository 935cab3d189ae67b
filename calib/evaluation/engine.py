"""One evaluation of a set of posteriors, in memory or out of core: every registered metric with its
bootstrap interval, the calibrators' cross-validated evidence, the CORP decompositions, and the same
per subgroup with a calibration test.

:func:`evaluate` takes arrays; :func:`evaluate_chunks` takes chunks (a file read in pieces,
:mod:`calib.data.chunks`). Both make one pass (:mod:`calib.evaluation.passes`) into states that
merge: the metrics declared by sums (:mod:`calib.evaluation.metrics`) are exact whatever the
chunking, and their intervals come from Poisson bootstrap resamples of the same pass. What needs its
samples at once uses a seeded subsample of the rows, as the output says when it is not all of them:
the smooth ECE and the CORP decomposition (at most ``sample_limit`` rows, in memory as out of core)
and the calibrators (at most ``fit_samples`` rows and ``fit_cells`` scores).

Intervals are basic bootstrap intervals (Davison & Hinkley (1997), Sect. 5.2), clipped to each
metric's range; an estimate outside its interval gets a note saying how biased its resamples show it
to be. A calibrator is recommended only when the paired bootstrap interval of its per-sample gain in
log loss (in Brier score when the raw log loss is infinite) lies above 0.

Subgroups (``groups``): every metric summed over the samples per group (not the smooth ECE nor RCL),
and per group Spiegelhalter's z test of calibration of the CORP lens (the positive class, or the top
label), its p-values adjusted for the number of groups by Holm's method; a group is flagged below 0.05
(Spiegelhalter (1986); Holm (1979)).
"""

from __future__ import annotations

import dataclasses
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from scipy.special import ndtr

from calib._internal.rows import float_chunks
from calib.calibration_errors.corp import CorpReport, corp_report
from calib.calibration_errors.corp_lenses import top_log_odds
from calib.calibration_errors.smoothing import ResampledSmoothEce
from calib.calibrators.blas_threads import one_blas_thread
from calib.calibrators.folds import fold_ids
from calib.calibrators.protocols import cross_validated_folds
from calib.calibrators.registry import CALIBRATORS, make_calibrator
from calib.data.classes import table_inputs
from calib.evaluation.metrics import REGISTRY, Batch, Context, MetricDefinition, Terms, bin_edges, reliability, selected
from calib.evaluation.passes import State, Summers, block_rows, blocks, poisson_counts, subsample_keys, terms_of
from calib.evaluation.settings import EvaluationSettings
from calib.resampling.bootstrap import ResampledSums, basic_interval, counted_resamples
from calib.scoring.decisions import check_costs, zero_one_costs
from calib.scoring.scores import brier_losses
from calib.validation import CalibInputError, CalibInputWarning, as_priors, check_inputs, closest

# Bytes of one block's resample counts drawn ahead on a second thread, at most (one byte per count).
COUNT_BYTES = 1 << 25
# The maps of logits as given (calib.calibrators.matrix_scaling) by the methods that are the same maps of the
# log-posteriors, which an evaluation cross-validates instead.
LOG_POSTERIOR_FORMS = {"vector": "dirichlet_diagonal", "matrix": "dirichlet"}
# The calibrators' names in the output (their registry names otherwise).
CALIBRATOR_LABELS = {"dp": "DP (affine)", "temperature": "temperature", "vector_clr": "vector scaling (centred)"}
# Groups of a subgroup analysis, at most (each has its own sums and resamples).
MAX_GROUPS = 1000
# A long phase reports its progress at most this often (seconds), and then at most every tenth of the
# time elapsed (a phase of minutes says so a few dozen times, not hundreds).
PROGRESS_EVERY = 2.0


@dataclass(frozen=True)
class Metric:
    """A value with its bootstrap interval (NaN bounds when none was computed)."""

    value: float
    low: float = float("nan")
    high: float = float("nan")


@dataclass(frozen=True)
class CorpSummary:
    """The CORP decompositions of an evaluation: of the Brier and log scores on one binary ``lens``
    (the positive class for two classes, the top label for more) with the MCB test's p-values (from
    ``resamples`` resamples of at most ``test_samples`` samples) and ``samples`` rows decomposed."""

    lens: str
    scores: dict[str, CorpReport]
    resamples: int
    test_samples: int
    samples: int = 0


@dataclass(frozen=True)
class GroupRow:
    """One subgroup: its value, size, metrics, and the calibration test's p-value before and after
    Holm's adjustment, flagged when the adjusted one is below 0.05."""

    group: str
    n: int
    metrics: dict[str, Metric]
    statistic: float
    p_value: float
    p_adjusted: float
    flagged: bool
    reliability: list = field(default_factory=list)


@dataclass
class Summary:
    """Everything an evaluation measured, in presentation order."""

    n_samples: int
    n_classes: int
    metrics: dict[str, Metric] = field(default_factory=dict)
    gains: dict[str, Metric] = field(default_factory=dict)
    gain_score: str = "log loss"
    recommended: str = ""
    fit_samples: int = 0
    corp: CorpSummary | None = None
    interval_method: str = "none (no bootstrap resamples)"
    interval_notes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    groups: list[GroupRow] = field(default_factory=list)
    group_column: str = ""
    settings: EvaluationSettings = field(default_factory=EvaluationSettings)
    # The reliability bins of each binned ECE on the data (one per score column), and the CORP lens's
    # scores and outcomes of the rows it decomposed: what the figures draw.
    reliability: dict[str, list] = field(default_factory=dict)
    lens: tuple[np.ndarray, np.ndarray] | None = None
    # The classes' names in the order of the scores' columns, where a table named them (else None).
    class_names: tuple[str, ...] | None = None

    @property
    def positive_class(self) -> str | None:
        """Of two classes, the positive one (the second: the positive-class ECE and CORP are of it), by name
        where a table named them, else "1"; None for more classes."""
        if self.n_classes != 2:
            return None
        return self.class_names[1] if self.class_names else "1"

    def as_records(self) -> list[dict]:
        """One dict per metric (name, value, low, high), e.g. for a CSV."""
        return [{"metric": k, "value": m.value, "low": m.low, "high": m.high} for k, m in self.metrics.items()]


def evaluate(
    scores,
    labels,
    *,
    kind: str,
    settings: EvaluationSettings | None = None,
    costs: dict[str, np.ndarray] | None = None,
    priors=None,
    groups=None,
    group_column: str = "group",
    progress: Callable[[str], None] | None = None,
    overwrite: bool = False,
    class_columns=None,
    label_values="auto",
    positive_label=None,
    **options,
) -> Summary:
    """Every registered metric of a set of posteriors with intervals, calibrator evidence and CORP.

    The metrics of (``scores``, ``labels``) with bootstrap intervals, the calibrators' cross-validated
    evidence and the CORP decompositions; per subgroup too with ``groups``.

    The metrics are those of :data:`calib.evaluation.metrics.REGISTRY` that apply (accuracy, NCE, NBS,
    the normalized Bayes risk per cost matrix, the top-label, positive-class or class-wise binned ECE,
    smooth ECE, ECD), and RCL = (EPSR_raw - EPSR_cal) / EPSR_raw of the cross-entropy and the Brier
    score for each calibrator under cross-validation. Intervals: basic intervals of Poisson bootstrap
    resamples (RCL: a point estimate). Cost: one pass over the data (O(N K) per resample block), one
    cross-validated fit per calibrator.

    Source: Ferrer & Ramos (2024), eqs. 8-9 (NCE, NBS), Sec. 2.3.1 (normalized risk), eq. 33 (RCL);
    Silva Filho et al. (2023), Defs. 1, 4 and 6 (the ECEs); Błasiok & Nakkiran (2023) (smooth ECE);
    "An entropic metric" (2025) (ECD); Davison & Hinkley (1997), Sect. 5.2 (basic intervals); Hanley &
    MacGibbon (2006) (Poisson resamples); Spiegelhalter (1986) and Holm (1979) (the subgroup test).

    Parameters
    ----------
    scores : array or pandas DataFrame of shape (N, K)
        Posteriors of kind ``kind``; a table's (a pandas DataFrame's, an Arrow table's) columns name the
        classes, matched and ordered as a file's are (:func:`calib.data.classes.table_inputs`).
    labels : array, pandas Series or Arrow array of shape (N,)
        True classes in [0, K), or names of the table's columns.
    kind : {"probs", "logprobs", "logits"}
        What ``scores`` hold; nothing is guessed from the values.
    settings : EvaluationSettings, optional
        Bins, calibrators, bootstrap, subsamples (default: the command's); ``**options`` sets single
        fields instead (``n_boot=50``, ``n_bins=10``, ...).
    costs : dict of name -> (K, D) cost matrix, optional
        Bayes risks to report (default: 0-1 costs); rows are true classes, in the order of the columns of
        ``scores`` (a table's, whatever order its classes are evaluated in).
    priors : array of shape (K,), or a mapping of class name to prior with a table, optional
        Weight each class to these priors in NCE, NBS and the risks (Ferrer & Ramos (2024), eqs. 36-37);
        an array is in the order of the columns of ``scores``.
    groups : array of shape (N,), optional
        A subgroup per sample (a segment, a site, an attribute): every metric and a calibration test
        per group, at most 1000 groups.
    group_column : str
        What the groups are called in the output.
    progress : callable, optional
        Receives progress messages.
    overwrite : bool
        ``scores`` is a float64 array the caller no longer needs: validated in its own memory.
    class_columns, label_values, positive_label
        For a table: its class columns, what its labels hold and its positive class, as for
        :func:`calib.load_posteriors` (the summary's ``class_names``, ``positive_class`` and ``notes`` say
        what was decided).
    **options
        Single fields of :class:`~calib.evaluation.settings.EvaluationSettings` (``n_boot=50``).

    Returns
    -------
    Summary

    Raises
    ------
    CalibInputError
        For invalid inputs or settings.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p1 = rng.uniform(0.05, 0.95, 400)
    >>> y = (rng.random(400) < p1).astype(int)
    >>> s = evaluate(np.column_stack([1 - p1, p1]), y, kind="probs", n_boot=20)
    >>> round(s.metrics["accuracy"].value, 3), s.recommended.startswith("none")
    (0.752, True)
    """
    settings = _settings(settings, options)
    scores, labels, layout = table_inputs(scores, labels, kind=kind, class_columns=class_columns,
                                          label_values=label_values, positive_label=positive_label)  # fmt: skip
    names = None if layout is None else layout.names
    if isinstance(priors, Mapping) and names is not None:  # by class name, as the command's --priors NAME=VALUE
        by_name = {str(key): value for key, value in priors.items()}
        if len(by_name) != len(priors) or sorted(by_name) != sorted(names):
            raise CalibInputError(
                f"priors must name each class of scores once ({', '.join(names)}); got {list(priors)}"
            )
        priors = [by_name[name] for name in names]
    elif layout is not None:  # given in the table's column order: each class's entry follows its class
        priors = _in_class_order(priors, layout.given_order)
    if layout is not None and isinstance(costs, Mapping):  # anything else is refused below, naming the form
        costs = {key: _in_class_order(matrix, layout.given_order) for key, matrix in costs.items()}
    logp, y = check_inputs(scores, labels, kind, overwrite=overwrite)
    group_ids = None
    if groups is not None:
        group_ids = np.asarray(groups)
        if group_ids.shape != y.shape:
            raise CalibInputError(f"groups must hold one group per sample, shape {y.shape}; got {group_ids.shape}")
        missing = _missing(group_ids)
        if missing.any():
            raise CalibInputError(
                f"groups: {int(missing.sum())} samples have no group (None or NaN; first at row "
                f"{int(np.flatnonzero(missing)[0])}, counting from 0); fill them in (e.g. with 'unknown') or drop them"
            )
    chunks = [(logp, y, group_ids)]
    summary = _evaluate(
        lambda: iter(chunks),
        n_classes=logp.shape[1],
        n_rows=y.size,
        settings=settings,
        costs=costs,
        priors=priors,
        grouped=groups is not None,
        group_column=group_column,
        say=progress or (lambda _: None),
        whole_limit=settings.sample_limit,
    )
    summary.class_names = names
    if layout is not None:  # how the table's columns and labels were read, where it was not by name
        summary.notes[:0] = [str(note) for note in layout.notes]
    return summary


def _in_class_order(values, order):
    """``values`` (priors, or a cost matrix's rows) given in a table's column order, in class order; a
    shape that does not fit is left for the checks that name it."""
    if values is None:
        return None
    array = np.asarray(values)
    return array[list(order)] if array.ndim >= 1 and array.shape[0] == len(order) else values


def evaluate_chunks(
    chunks: Callable[[], Iterable[tuple]],
    *,
    n_classes: int,
    kind: str = "logprobs",
    settings: EvaluationSettings | None = None,
    costs: dict[str, np.ndarray] | None = None,
    priors=None,
    grouped: bool = False,
    group_column: str = "group",
    n_rows: int | None = None,
    progress: Callable[[str], None] | None = None,
    **options,
) -> Summary:
    """:func:`evaluate` of a data set given in chunks, out of core, in memory bounded by the chunks.

    ``chunks()`` yields (scores (n, K) of ``kind``, labels (n,), groups (n,) or None) in order, and may
    be called again (equal-mass bins read the data twice). The result equals that of :func:`evaluate`
    on the whole data set, whatever the chunking: the sum-based metrics and their intervals to the last
    bit, and what needs its samples at once (the smooth ECE and CORP, the calibrators) is computed on
    the same seeded subsample of at most ``sample_limit`` (``fit_samples``) rows.

    Source: as :func:`evaluate`; the Poisson resamples that make chunks merge: Hanley & MacGibbon (2006).

    Parameters
    ----------
    chunks : callable
        Returns an iterable of (scores, labels, groups) tuples.
    n_classes : int
        K.
    kind : {"probs", "logprobs", "logits"}
        What the scores hold.
    n_rows : int, optional
        The number of rows, when known or estimated (for the time left).
    settings, costs, priors, grouped, group_column, progress, **options
        As for :func:`evaluate` (``grouped``: the chunks carry groups).

    Returns
    -------
    Summary

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p1 = rng.uniform(0.05, 0.95, 400)
    >>> y = (rng.random(400) < p1).astype(int)
    >>> probs = np.column_stack([1 - p1, p1])
    >>> pieces = lambda: ((probs[i : i + 150], y[i : i + 150], None) for i in range(0, 400, 150))
    >>> whole = evaluate(probs, y, kind="probs", n_boot=20, calibrators=())
    >>> cut = evaluate_chunks(pieces, n_classes=2, kind="probs", n_boot=20, calibrators=())
    >>> cut.metrics["NCE"] == whole.metrics["NCE"]
    True
    """
    settings = _settings(settings, options)

    if not callable(chunks):
        raise CalibInputError(
            f"chunks must be a function that returns a fresh iterable of the chunks at each call (the data are read "
            f"more than once); got a {type(chunks).__name__}: pass lambda: <code that makes the chunks>"
        )

    rows_read = []  # per call of chunks(): the data are read more than once, and each reading must be whole

    def validated():
        rows_read.append(0)
        for chunk in chunks():
            if not isinstance(chunk, tuple | list) or len(chunk) != 3:
                raise CalibInputError(
                    "chunks: each chunk must be a tuple (scores, labels, groups), groups None without subgroups"
                )
            scores, labels, group_ids = chunk
            if np.shape(labels)[:1] == (0,):  # an empty partition holds nothing to add
                continue
            rows_read[-1] += np.shape(labels)[0]
            logp, y = check_inputs(scores, labels, kind)
            if logp.shape[1] != n_classes:
                raise CalibInputError(f"a chunk has {logp.shape[1]} classes; the data set has {n_classes}")
            yield logp, y, None if group_ids is None else np.asarray(group_ids)
        if len(rows_read) > 1 and rows_read[-1] != rows_read[0]:
            raise CalibInputError(
                f"chunks() gave {rows_read[0]} rows at its first call and {rows_read[-1]} at call {len(rows_read)}: it "
                "must return a fresh iterable of the same chunks each time (a generator is read once): pass a "
                "function that makes the chunks anew"
            )

    return _evaluate(
        validated,
        n_classes=n_classes,
        n_rows=n_rows,
        settings=settings,
        costs=costs,
        priors=priors,
        grouped=grouped,
        group_column=group_column,
        say=progress or (lambda _: None),
        whole_limit=settings.sample_limit,
    )


def _missing(values: np.ndarray) -> np.ndarray:
    """Which values are None or NaN (as pandas' isna, without pandas)."""
    if values.dtype.kind == "f":
        return np.isnan(values)
    if values.dtype.kind != "O":
        return np.zeros(values.shape, dtype=bool)
    return np.equal(values, None) | np.not_equal(values, values)  # elementwise on objects: NaN differs from itself


def _settings(settings: EvaluationSettings | None, options: dict) -> EvaluationSettings:
    fields = [f.name for f in dataclasses.fields(EvaluationSettings)]
    for name in options:
        if name not in fields:
            close = "n_boot" if name == "bootstrap" else closest(name, fields)  # the command's --bootstrap
            hint = f"; did you mean {close}?" if close else f"; the settings are {', '.join(fields)}"
            raise CalibInputError(f"{name} is not a setting of the evaluation{hint}")
    if settings is not None and options:
        return settings.replace(**options)
    return settings if settings is not None else EvaluationSettings(**options)


@dataclass
class _Subsample:
    """The rows with the smallest random keys, at most ``limit``, in their order: their keys and the arrays
    kept of them (:attr:`keys`, :attr:`arrays`). Offered rows are copied into pieces, cut back to the
    limit whenever they hold a quarter more (so each row is copied a bounded number of times).

    ``below``: only rows with keys below it are kept (a partition of a large set keeps what can be among
    the smallest keys of the whole set, :func:`key_bound`; :meth:`complete` tells whether it was enough)."""

    limit: int
    below: float = 1.0
    _pieces: list[tuple[np.ndarray, ...]] = field(default_factory=list)
    _held: int = 0

    def offer(self, keys: np.ndarray, *arrays: np.ndarray) -> None:
        if self.limit <= 0:
            return
        if self.below < 1.0:
            kept = keys < self.below
            keys, arrays = keys[kept], tuple(a[kept] for a in arrays)
        self._pieces.append((keys, *(np.array(a) for a in arrays)))
        self._held += keys.size
        if self._held > self.limit + max(self.limit // 4, keys.size):
            self._cut()

    def _cut(self) -> None:
        if len(self._pieces) > 1:
            self._pieces = [tuple(np.concatenate(parts) for parts in zip(*self._pieces, strict=True))]
        if self._pieces and self._held > self.limit:
            keys = self._pieces[0][0]
            keep = np.sort(np.argpartition(keys, self.limit - 1)[: self.limit])
            self._pieces = [tuple(a[keep] for a in self._pieces[0])]
            self._held = self.limit

    def merged(self, other: _Subsample) -> _Subsample:
        """The subsample of both sets of rows, ``self``'s before ``other``'s (neither is changed)."""
        below = min(self.below, other.below)
        both = _Subsample(self.limit, below, self._pieces + other._pieces, self._held + other._held)
        both._cut()
        return both

    def complete(self) -> bool:
        """Whether these are the smallest keys of all the rows offered: taken without a bound, or with at
        least ``limit`` rows below it."""
        return self.below >= 1.0 or self._held >= self.limit

    @property
    def keys(self) -> np.ndarray:
        self._cut()
        return self._pieces[0][0] if self._pieces else np.empty(0)

    @property
    def arrays(self) -> list[np.ndarray]:
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
class Gathered:
    """What a pass over rows gathers: the summed state overall and per group, the subsamples (of the lens and
    of the calibrators' rows) and the class counts. Those of disjoint rows merge (:meth:`merged`)."""

    overall: State
    by_group: dict
    lens: _Subsample
    fitting: _Subsample
    seen: np.ndarray

    def merged(self, other: Gathered) -> Gathered:
        """What both passes gathered, ``self``'s rows before ``other``'s (neither is changed, so a merge run
        again, as a cluster does after losing a worker, gives the same)."""
        by_group = dict(self.by_group)
        for key, state in other.by_group.items():
            by_group[key] = by_group[key].merged(state) if key in by_group else state
        _check_group_count(by_group)
        return Gathered(self.overall.merged(other.overall), by_group, self.lens.merged(other.lens),
                        self.fitting.merged(other.fitting), self.seen + other.seen)  # fmt: skip


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
        return self.gathered.overall

    @property
    def by_group(self) -> dict:
        return self.gathered.by_group

    @property
    def lens(self) -> _Subsample:
        return self.gathered.lens

    @property
    def fitting(self) -> _Subsample:
        return self.gathered.fitting

    @property
    def n(self) -> int:
        return int(self.gathered.seen.sum())

    def draws(self) -> dict[str, np.ndarray]:
        """Every metric's values over (the data, resample 1, ..., resample B): the summed metrics from the
        state, the others from the subsample and its own resamples."""
        out = _values([d for d in self.computed if d.terms is not None], self.overall, self.ctx)
        conf, correct = self.lens.arrays[0], self.lens.arrays[1]
        for definition in self.definitions:
            if definition.whole is not None:
                out |= _whole_values(definition, conf, correct, self.ctx)
        reported = {name for d in self.definitions for name in d.names(self.ctx)}
        return {name: values for name, values in out.items() if name in reported}


def run_pass(source, *, n_classes, n_rows, settings, costs, priors, grouped, say, whole_limit, fit_rows=0) -> Pass:
    """One pass over ``source()`` (chunks of (log-posteriors, labels, groups)) into a :class:`Pass`."""
    ctx = context(n_classes, settings, costs, priors, lambda: _edge_sample(source, settings, n_classes).arrays)
    definitions, computed = metrics_of(ctx)
    reading = _Phase("reading", n_rows, say, unit="rows")
    gathered = gather(source, ctx, computed, grouped=grouped, whole_limit=whole_limit, fit_rows=fit_rows,
                      advance=reading.advance)  # fmt: skip
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
        confidence, probs = edge_sample()
        edges = bin_edges(settings, {"confidence": confidence, "positive": probs[:, 1], "classes": probs})
    else:
        edges = bin_edges(settings, {"confidence": None, "positive": None, "classes": None})
    return Context(k, settings, costs, priors, edges)


def metrics_of(ctx: Context) -> tuple[list[MetricDefinition], list[MetricDefinition]]:
    """The metrics reported, and those computed (the reported ones and the lens's binned ECE)."""
    definitions = selected(ctx)
    lens = lens_ece(ctx.n_classes)
    return definitions, definitions + ([lens] if lens not in definitions else [])


def gather(source, ctx: Context, computed, *, grouped, whole_limit, fit_rows, first_row=0, below=(1.0, 1.0),
           advance=None) -> Gathered:  # fmt: skip
    """A pass over the chunks of ``source()``, which start at row ``first_row`` of the data set: the sums
    of the ``computed`` metrics' terms for the data and every resample, overall and per group, and the
    subsamples of ``whole_limit`` and ``fit_rows`` rows (keys below ``below``'s two bounds); ``advance(rows)``
    is told of each block read."""
    settings, k = ctx.settings, ctx.n_classes
    summed = [d for d in computed if d.terms is not None]
    lens, fitting = _Subsample(whole_limit, below[0]), _Subsample(fit_rows, below[1])
    result = Gathered(State(settings.n_boot), {}, lens, fitting, np.zeros(k, dtype=np.int64))
    size = block_rows(k)
    # The next block's resample counts are drawn on a second thread while this block's sums are taken
    # (numpy draws and compares without the GIL); a part of a block takes its rows of the full block's
    # draws, which are its own (the draws fill the rows in order).
    with ThreadPoolExecutor(max_workers=1) as drawer:
        ahead = drawer.submit(_block_counts, settings, first_row // size, size)
        for index, offset, (logp, y, group_ids) in blocks(source(), size, first_row):
            counts = [(columns, c[offset : offset + y.size]) for columns, c in ahead.result()]
            ahead = drawer.submit(_block_counts, settings, index + 1, size)
            if settings.n_boot and not counts:  # too many to hold at once: drawn group by group, as read
                counts = _LazyCounts(settings.seed, index, offset, y.size, settings.n_boot)
            batch = Batch(logp, y)
            result.seen += np.bincount(y, minlength=k)
            keys = subsample_keys(settings.seed, index, y.size, offset)
            result.lens.offer(keys, *_lens(batch, k), _lens_log_odds(batch, k))
            result.fitting.offer(keys, logp, y)
            _accumulate(result.overall, terms_of(summed, batch, ctx), counts)
            if grouped:
                _accumulate_groups(result.by_group, batch, ctx, summed, settings, counts, group_ids)
            if advance is not None:
                advance(y.size)
    return result


def checked(done: Pass) -> Pass:
    """``done``, refused when it holds no samples or single class, or misses a class its priors weight."""
    if done.n == 0:
        raise CalibInputError("the data hold no samples: nothing to evaluate")
    _check_classes(done.gathered.seen, done.ctx.priors)
    return done


def calibrators_of(settings: EvaluationSettings, n_classes: int) -> tuple[tuple[str, ...], str]:
    """The calibrators to assess for K = ``n_classes`` and the note on any left out; unknown or binary-only
    names for K > 2 are refused."""
    names, left_out = settings.calibrators_for(n_classes)
    for name in names:
        if name not in CALIBRATORS:
            known = f"unknown {name!r}; known: {', '.join(CALIBRATORS)}"
            raise CalibInputError(f"calibrators: {known}", cli_message=f"--calibrators: {known} (or none)")
        if CALIBRATORS[name].binary_only and n_classes != 2:
            what = f"{name} is for two classes; these scores have {n_classes}"
            raise CalibInputError(f"calibrators: {what}", cli_message=f"--calibrators: {what}; leave it out")
        if make_calibrator(name).fits_logits():
            same = LOG_POSTERIOR_FORMS[name]
            what = (
                f"{name} maps the logits as given, which an evaluation does not keep (it works on log-posteriors, "
                f"from files of any kind and in chunks); its map on the log-posteriors is {same}"
            )
            raise CalibInputError(
                f"calibrators: {what}: ask for {same}, or fit {name} with calibrate(...)",
                cli_message=f"--calibrators: {what}: ask for {same}, or fit it with calib calibrate --method {name}",
            )
    return names, left_out


def _evaluate(source, *, n_classes, n_rows, settings, costs, priors, grouped, group_column, say, whole_limit):
    settings.check_memory(n_classes)
    names, left_out = calibrators_of(settings, n_classes)
    fit_rows = 0 if not names else settings.fit_rows(n_classes)
    done = run_pass(
        source, n_classes=n_classes, n_rows=n_rows, settings=settings, costs=costs, priors=priors,
        grouped=grouped, say=say, whole_limit=whole_limit, fit_rows=fit_rows,
    )  # fmt: skip
    return summarized(done, names, left_out, grouped=grouped, group_column=group_column, say=say)


def summarized(done: Pass, names, left_out: str, *, grouped: bool, group_column: str, say) -> Summary:
    """The :class:`Summary` of a pass: metrics with intervals, the calibrators ``names`` (``left_out``: the
    note on those left out), CORP, reliability bins and the subgroups."""
    settings, n_classes = done.ctx.settings, done.ctx.n_classes
    summary = Summary(done.n, n_classes, settings=settings)
    if left_out:
        summary.notes.append(left_out)
    say("metrics" + (f" and {settings.n_boot} bootstrap resamples" if settings.n_boot else ""))
    draws = done.draws()
    if done.lens.keys.size < done.n:
        summary.notes.append(f"smooth ECE and CORP: on a seeded random {done.lens.keys.size} of the {done.n} samples")
    summary.metrics, summary.interval_method, summary.interval_notes = _intervals(draws, done.definitions, done.ctx)
    _calibrators(summary, names, done.fitting, settings, say)
    say("CORP decomposition" + (f" and MCB test ({settings.n_boot} resamples)" if settings.n_boot else ""))
    summary.corp = _corp(*done.lens.arrays[2:5], n_classes, settings)
    summary.lens = (done.lens.arrays[2], done.lens.arrays[3])
    summary.reliability = {
        name: reliability(d.bins[0], done.overall.sums, done.ctx.edges[d.bins[1]])
        for d in done.computed
        if d.bins is not None
        for name in d.names(done.ctx)
    }
    if grouped:
        summed = [d for d in done.computed if d.terms is not None]
        summary.groups, summary.group_column = _group_rows(done.by_group, summed, done.ctx), group_column
    return summary


def lens_ece(n_classes: int) -> MetricDefinition:
    """The binned ECE of the CORP lens (the positive class for two classes, else the top label): always
    computed, as the reliability figure and the subgroups draw its bins."""
    return REGISTRY["ECE positive class" if n_classes == 2 else "ECE top-label"]


def _edge_sample(source, settings: EvaluationSettings, k: int, first_row: int = 0, below: float = 1.0) -> _Subsample:
    """What equal-mass edges are the quantiles of: the top-label confidence and the probabilities of a seeded
    subsample of ``sample_limit`` rows (all rows when they are fewer), read in a first pass."""
    sample = _Subsample(settings.sample_limit, below)
    for index, offset, (logp, y, _) in blocks(source(), block_rows(k), first_row):
        batch = Batch(logp, y)
        sample.offer(subsample_keys(settings.seed, index, y.size, offset), batch.confidence, batch.probs)
    return sample


def _lens(batch: Batch, k: int) -> tuple[np.ndarray, ...]:
    """What the subsample keeps of each row: the top label's confidence and correctness (smooth ECE), and
    the CORP lens's score and outcome (the positive class for two classes, else the top label)."""
    correct = batch.correct.astype(np.float64)
    if k == 2:
        return batch.confidence, correct, batch.probs[:, 1], (batch.labels == 1).astype(np.float64)
    return batch.confidence, correct, batch.confidence, correct


def _lens_log_odds(batch: Batch, k: int) -> np.ndarray:
    """The log-odds of the CORP lens's score, from the log-posteriors: CORP's log score is computed from
    them, finite wherever the log-posteriors are (a score can round to 0 or 1 where they do not)."""
    if k == 2:
        return batch.logp[:, 1] - batch.logp[:, 0]
    return top_log_odds(batch.logp, batch.prediction)


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


def _accumulate(state: State, terms: dict, counts: list[tuple[slice, np.ndarray]]) -> None:
    """Add a block's sums for the data (column 0) and for every resample (``counts``: the block's)."""
    for key, sums in Summers.point(terms).items():
        state.add(key, slice(0, 1), sums)
    if not counts:
        return
    summers = Summers(terms, resampled=True)
    for columns, c in counts:
        for key, sums in summers(c.astype(np.float64)).items():
            state.add(key, slice(columns.start + 1, columns.stop + 1), sums)


def _accumulate_groups(by_group, batch, ctx, summed, settings, counts, group_ids) -> None:
    """Each group's rows of the block into that group's state (with the same counts as the whole block)."""
    values, inverse = np.unique(group_ids, return_inverse=True)
    for g, value in enumerate(values):
        rows = np.flatnonzero(inverse == g)
        key = value.item() if hasattr(value, "item") else value
        if key not in by_group:
            by_group[key] = State(settings.n_boot)
            _check_group_count(by_group)
        part = Batch(batch.logp[rows], batch.labels[rows])
        terms = terms_of(summed, part, ctx) | _test_terms(part, ctx.n_classes)
        state = by_group[key]
        for term, sums in Summers.point(terms).items():
            state.add(term, slice(0, 1), sums)
        summers = Summers(terms, resampled=True)
        for columns, c in counts:
            for term, sums in summers(c[rows].astype(np.float64)).items():
                state.add(term, slice(columns.start + 1, columns.stop + 1), sums)


def _check_group_count(by_group: dict) -> None:
    if len(by_group) > MAX_GROUPS:
        raise CalibInputError(
            f"the groups have more than {MAX_GROUPS} values: choose a column with fewer (a segment, a site), or "
            "bin it first"
        )


def _test_terms(batch: Batch, k: int):
    """Spiegelhalter's z of the CORP lens as sums: sum (y - p)(1 - 2p) and sum (1 - 2p)^2 p (1 - p)."""

    _, _, p, y = _lens(batch, k)
    weight = 1.0 - 2.0 * p
    return {"z numerator": Terms((y - p) * weight), "z variance": Terms(weight**2 * p * (1.0 - p))}


def _check_classes(seen: np.ndarray, priors) -> None:
    if np.count_nonzero(seen) < 2:
        raise CalibInputError(
            "labels hold a single class: the naive cross-entropy and Brier score are 0, so NCE and NBS are "
            "undefined; evaluate samples of at least two classes"
        )
    if priors is not None and (seen == 0).any():
        missing = np.flatnonzero(seen == 0).tolist()
        raise CalibInputError(f"labels have no samples of classes {missing}; the prior weighting needs every class")


def _values(summed: list[MetricDefinition], state: State, ctx: Context) -> dict[str, np.ndarray]:
    """Each metric's values over (the data, resample 1, ..., resample B)."""
    out: dict[str, np.ndarray] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        for definition in summed:
            out |= {name: np.asarray(v, dtype=np.float64) for name, v in definition.value(state.sums, ctx).items()}
    return out


def _whole_values(definition, conf, correct, ctx) -> dict[str, np.ndarray]:
    """A metric of the samples at once: on the subsample, and on its own multinomial resamples."""

    point = definition.whole(_LensBatch(conf, correct), ctx)
    n_boot = ctx.settings.n_boot
    if not n_boot:
        return {definition.name: np.array([point])}
    draws = []
    resampler = ResampledSmoothEce(conf, correct, bandwidth=ctx.settings.smooth_bandwidth)
    seed = np.random.SeedSequence(ctx.settings.seed, spawn_key=(4,))
    width = max(1, min(64, 2**24 // conf.size))  # resamples per call: at most 2^24 float64 counts (128 MiB)
    for counts in counted_resamples(conf.size, n_boot=n_boot, seed=seed):
        for start in range(0, counts.shape[1], width):
            draws.append(resampler(counts[:, start : start + width]))
    return {definition.name: np.concatenate([[point], *draws])}


@dataclass(frozen=True)
class _LensBatch:
    """The top label's confidence and correctness of the subsample, as a whole metric reads them."""

    confidence: np.ndarray
    correct: np.ndarray


def _intervals(draws, definitions, ctx) -> tuple[dict[str, Metric], str, list[str]]:
    """The metrics with basic intervals clipped to their ranges, the method, and why an estimate lies
    outside its interval where one does."""
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


# --- the calibrators -------------------------------------------------------------------------------------


def _calibrators(summary: Summary, names, fitting: _Subsample, settings: EvaluationSettings, say) -> None:
    """RCL of the log loss and the Brier score of each calibrator, cross-validated on the fitting subsample,
    each calibrator's paired bootstrap gain per sample, and the recommendation."""
    if not names:
        summary.recommended = "none assessed: no calibrator was asked for"
        return
    logp, y = fitting.arrays[0], fitting.arrays[1]
    summary.fit_samples = y.size
    if y.size < summary.n_samples:
        bound = "fit_samples" if y.size == settings.fit_samples else f"fit_cells: {settings.fit_cells} scores"
        summary.notes.append(
            f"calibrators: cross-validated on a seeded random {y.size} of the {summary.n_samples} samples ({bound})"
        )
    largest = int(np.bincount(y).max())
    if largest < settings.folds:
        problem = (
            f"labels: the calibrators are cross-validated in {settings.folds} folds, which needs a class with at "
            f"least {settings.folds} samples; the largest class here has {largest}. Ask for fewer folds"
        )
        fewer = f" (folds={largest})" if largest >= 2 else ""
        raise CalibInputError(
            f"{problem}{fewer}, evaluate more samples, or no calibrator (calibrators=())",
            cli_message=f"{problem}{fewer.replace('folds=', '--folds ')}, evaluate more samples, or no calibrator "
            "(--calibrators none)",
        )
    raw = {score: _per_sample_loss(logp, y, score) for score in ("log loss", "Brier")}
    score = "log loss" if np.isfinite(raw["log loss"]).all() else "Brier"
    raw_means = {name: float(np.mean(values)) for name, values in raw.items()}
    gains = {}
    with warnings.catch_warnings(record=True) as notes:
        warnings.simplefilter("always", CalibInputWarning)
        for name, own in _cross_validated(logp, y, names, settings, say):
            label = CALIBRATOR_LABELS.get(name, name)
            summary.metrics[f"RCL-CE {label}"] = Metric(_relative_loss(raw_means["log loss"], own["log loss"]))
            summary.metrics[f"RCL-BS {label}"] = Metric(_relative_loss(raw_means["Brier"], own["Brier"]))
            gains[label] = raw[score] - own[score]
    _retell(notes, len(names) * settings.folds)
    summary.gain_score = score
    draws = _resampled_means(gains, settings)
    for i, (label, gain) in enumerate(gains.items()):
        bounds = ()
        if settings.n_boot:
            low, high = basic_interval(draws[:, i], float(np.mean(gain)), settings.alpha)
            bounds = (float(low), float(high))
        summary.gains[label] = Metric(float(np.mean(gain)), *bounds)
    summary.recommended = _recommendation(summary.gains, score, settings)


def _cross_validated(logp, y, names, settings: EvaluationSettings, say):
    """Each calibrator's per-sample log loss and Brier score, cross-validated on shared folds, ``threads``
    calibrators at a time on small problems (BLAS on one thread: the same bits however they run)."""
    folds = fold_ids(y, n_folds=settings.folds, seed=settings.seed).astype(np.min_scalar_type(settings.folds - 1))
    fits = _Phase("cross-validated fits", len(names) * settings.folds, say)
    threads = settings.threads

    def fit_folds(name: str) -> dict[str, np.ndarray]:
        say(f"{name}: {settings.folds}-fold cross-validated fit")
        losses = {"log loss": np.empty(y.size), "Brier": np.empty(y.size)}
        for test, calibrated in cross_validated_folds(make_calibrator(name), logp, y, kind="logprobs", folds=folds):
            for score, values in losses.items():
                values[test] = _per_sample_loss(calibrated, y[test], score)
            fits.advance()
        return losses

    with one_blas_thread(), ThreadPoolExecutor(max_workers=threads) as pool:
        running = [(name, pool.submit(fit_folds, name)) for name in names]
        for name, fitted in running:
            yield name, fitted.result()


def _per_sample_loss(logp: np.ndarray, y: np.ndarray, score: str) -> np.ndarray:
    return -logp[np.arange(y.size), y] if score == "log loss" else brier_losses(logp, y, "mean")


def _relative_loss(raw_mean: float, calibrated: np.ndarray) -> float:
    """RCL = (raw - calibrated) / raw of two mean losses (Ferrer & Ramos (2024), eq. 33); NaN when the raw
    loss is infinite."""
    if not np.isfinite(raw_mean) or raw_mean <= 0:
        return float("nan")
    return (raw_mean - float(np.mean(calibrated))) / raw_mean


def _resampled_means(values: dict[str, np.ndarray], settings: EvaluationSettings) -> np.ndarray:
    """(B, len(values)): the mean of each per-sample vector over each multinomial resample of its samples."""
    if not settings.n_boot or not values:
        return np.empty((settings.n_boot, len(values)))
    matrix = np.column_stack(list(values.values()))
    out = []
    seed = np.random.SeedSequence(settings.seed, spawn_key=(5,))
    for counts in counted_resamples(matrix.shape[0], n_boot=settings.n_boot, seed=seed):
        total = sum(ResampledSums(matrix[rows])(c) for rows, c in float_chunks(counts))
        out.append(total.T / matrix.shape[0])
    return np.concatenate(out)


def _retell(notes: list, n_fits: int) -> None:
    """The calibrators' notes of the cross-validated fits, once: how many fits gave one, and the first."""
    fits = [n for n in notes if issubclass(n.category, CalibInputWarning)]
    if fits:
        first = fits[0].message
        head = f"{len(fits)} of the {n_fits} cross-validated calibrator fits noted: "
        warnings.warn(
            CalibInputWarning(head + str(first), cli_message=head + getattr(first, "cli_message", str(first))),
            stacklevel=4,
        )
    for other in notes:
        if not issubclass(other.category, CalibInputWarning):
            warnings.warn_explicit(other.message, other.category, other.filename, other.lineno)


def _recommendation(gains: dict[str, Metric], score: str, settings: EvaluationSettings) -> str:
    """The calibrator with the largest mean gain among those whose interval of the gain lies above 0."""
    if not settings.n_boot:
        return "none assessed: the evidence needs bootstrap resamples (n_boot > 0)"
    better = {name: g.value for name, g in gains.items() if g.low > 0}
    if not better:
        level = round(100 * (1 - settings.alpha))
        return f"none: no calibrator lowers the {score} beyond noise ({level} % paired bootstrap interval includes 0)"
    return max(better, key=better.get)


# --- CORP and the subgroups --------------------------------------------------------------------------------


def corp_view(logp: np.ndarray, labels: np.ndarray) -> tuple[str, np.ndarray, np.ndarray]:
    """The binary problem CORP reads from validated log-posteriors: for two classes the probability of
    class 1 against the label being 1, for more the top label's confidence against it being right."""
    if logp.shape[1] == 2:
        return "positive class", np.exp(logp[:, 1]), labels == 1
    return "top label", np.exp(logp.max(axis=1)), logp.argmax(axis=1) == labels


def _corp(x: np.ndarray, y: np.ndarray, log_odds: np.ndarray, k: int, settings: EvaluationSettings) -> CorpSummary:
    lens = "positive class" if k == 2 else "top label"
    tests = {"n_resamples": settings.n_boot, "seed": settings.seed, "test_samples": settings.corp_test_samples}
    report = corp_report(x, y, log_odds=log_odds, **tests)
    tested = min(y.size, settings.corp_test_samples) if settings.n_boot else 0
    return CorpSummary(lens, report, settings.n_boot, tested, y.size)


def _group_rows(by_group: dict, summed, ctx: Context) -> list[GroupRow]:
    """Per group, in the order of the group values: its metrics with intervals, Spiegelhalter's z of its
    CORP lens, and Holm's adjustment."""

    rows = []
    for group, state in sorted(by_group.items(), key=lambda item: item[0]):
        draws = _values(summed, state, ctx)
        metrics, _, _ = _intervals(draws, summed, ctx)
        numerator, variance = state.sums["z numerator"][0, 0], state.sums["z variance"][0, 0]
        z = numerator / np.sqrt(variance) if variance > 0 else float("nan")
        p = float(2 * ndtr(-abs(z))) if np.isfinite(z) else float("nan")
        n = int(round(float(state.sums["n"][0, 0]))) if "n" in state.sums else 0
        lens = lens_ece(ctx.n_classes)
        bins = reliability(lens.bins[0], state.sums, ctx.edges[lens.bins[1]])
        rows.append(GroupRow(str(group), n, metrics, float(z), p, p, False, bins))
    adjusted = holm([r.p_value for r in rows])
    return [
        GroupRow(r.group, r.n, r.metrics, r.statistic, r.p_value, a, bool(a < 0.05), r.reliability)
        for r, a in zip(rows, adjusted, strict=True)
    ]


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


class _Phase:
    """Progress of a phase of ``total`` steps (None: unknown): steps done, elapsed time and, when the
    total is known, the time left at the rate so far, at most every PROGRESS_EVERY seconds."""

    def __init__(self, what: str, total: int | None, say, unit: str = ""):
        self.what, self.total, self.say, self.unit, self.done = what, total, say, unit, 0
        self.start = self.last = time.perf_counter()
        self._lock = threading.Lock()  # the calibrators' fits advance it from their threads

    def advance(self, steps: int = 1) -> None:
        with self._lock:
            self._advance(steps)

    def _advance(self, steps: int) -> None:
        self.done += steps
        if self.total is not None and self.done > self.total:  # an estimate that fell short: no time left
            self.total = None
        now = time.perf_counter()
        finished = self.total is not None and self.done >= self.total
        if not finished and now - self.last < max(PROGRESS_EVERY, 0.1 * (now - self.start)):
            return
        self.last, elapsed = now, now - self.start
        counted = f"{self.done}" + (f"/{self.total}" if self.total else "") + (f" {self.unit}" if self.unit else "")
        if finished:
            self.say(f"{self.what} {counted} ({elapsed:.1f} s)")
        elif self.total:
            left = elapsed / self.done * (self.total - self.done)
            self.say(f"{self.what} {counted} ({elapsed:.0f} s, about {left:.0f} s left)")
        else:
            self.say(f"{self.what} {counted} ({elapsed:.0f} s)")


@dataclass(frozen=True)
class Comparison:
    """Systems on the same samples: each one's metrics, and each one's differences from the first with
    paired intervals (the same resamples of the same samples for every system)."""

    names: list[str]
    metrics: list[dict[str, float]]
    differences: list[dict[str, Metric]]
    corp: list[CorpSummary]
    interval_method: str


def compare(
    systems: list[np.ndarray],
    labels,
    *,
    names: list[str],
    settings: EvaluationSettings | None = None,
    progress: Callable[[str], None] | None = None,
    **options,
) -> Comparison:
    """Every registered metric of several systems' log-posteriors on the same ``labels``, and each
    system's differences from the first with paired basic bootstrap intervals (Poisson resamples of the
    sum-based metrics and the subsample's resamples of the others, the same for every system).

    Parameters
    ----------
    systems : list of arrays of shape (N, K)
        Validated log-posteriors of each system, rows in the same order.
    labels : array of shape (N,)
        The true classes.
    names : list of str
        One name per system.
    settings : EvaluationSettings, optional
        As for :func:`evaluate` (the calibrators are not fitted); ``**options`` sets single fields.
    progress : callable, optional
        Receives progress messages.

    Returns
    -------
    Comparison

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p1 = rng.uniform(0.05, 0.95, 300)
    >>> y = (rng.random(300) < p1).astype(int)
    >>> raw = np.log(np.column_stack([1 - p1, p1]))
    >>> c = compare([raw, raw], y, names=["a", "b"], n_boot=20)
    >>> c.differences[0]["NCE"]
    Metric(value=0.0, low=0.0, high=0.0)
    """
    settings = _settings(settings, options)
    say = progress or (lambda _: None)
    y = np.asarray(labels)
    settings.check_memory(max((np.shape(s)[-1] for s in systems), default=2), systems=len(systems))
    passes, draws = [], []
    for name, lp in zip(names, systems, strict=True):
        say(f"{name}: metrics" + (f" and {settings.n_boot} paired bootstrap resamples" if settings.n_boot else ""))
        done = run_pass(lambda lp=lp: iter([(lp, y, None)]), n_classes=lp.shape[1], n_rows=y.size, settings=settings,
                        costs=None, priors=None, grouped=False, say=say, whole_limit=y.size)  # fmt: skip
        passes.append(done)
        draws.append(done.draws())
    metrics = [{name: float(values[0]) for name, values in d.items()} for d in draws]
    differences = []
    for other in draws[1:]:
        row = {}
        for name, values in other.items():
            with np.errstate(invalid="ignore"):
                diff = values - draws[0][name]
            if np.isnan(diff[0]) or not settings.n_boot or np.isnan(diff[1:]).any():
                row[name] = Metric(float(diff[0]))
                continue
            low, high = basic_interval(diff[1:], float(diff[0]), settings.alpha)
            row[name] = Metric(float(diff[0]), float(low), float(high))
        differences.append(row)
    corp = [_corp(*p.lens.arrays[2:5], p.ctx.n_classes, settings.replace(n_boot=0)) for p in passes]
    level = round(100 * (1 - settings.alpha))
    method = f"paired {level} % basic bootstrap intervals of {settings.n_boot} resamples" if settings.n_boot else ""
    return Comparison(list(names), metrics, differences, corp, method)
