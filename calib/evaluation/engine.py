"""One evaluation of a set of posteriors, in memory or out of core: every registered metric with its
bootstrap interval, the calibrators' cross-validated evidence, the CORP decompositions, and the same
per subgroup with a calibration test; and :func:`compare` of several systems on the same samples.

:func:`evaluate` takes arrays; :func:`evaluate_chunks` takes chunks (a file read in pieces,
:mod:`calib.data.chunks`). Both make one pass (:mod:`calib.evaluation.data_pass`) into states that
merge: the metrics declared by sums (:mod:`calib.evaluation.metrics`) are exact whatever the
chunking, and their intervals come from Poisson bootstrap resamples of the same pass. What needs its
samples at once uses a seeded subsample of the rows, as the output says when it is not all of them:
the smooth ECE and the CORP decomposition (at most ``sample_limit`` rows, in memory as out of core)
and the calibrators (at most ``fit_samples`` rows and ``fit_cells`` scores).

The parts, each in its own module: the values and basic intervals (:mod:`calib.evaluation.intervals`;
Davison & Hinkley (1997), Sect. 5.2), the calibrators' evidence (:mod:`calib.evaluation.evidence`), the
CORP lens (:mod:`calib.evaluation.lens`), the subgroups with Spiegelhalter's test and Holm's adjustment
(:mod:`calib.evaluation.subgroups`), what is returned (:mod:`calib.evaluation.results`). Where an
evaluation runs (whole, in chunks, on a cluster) is chosen by :mod:`calib.evaluation.router`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping

import numpy as np

from calib.data.classes import table_inputs
from calib.evaluation.data_pass import Pass, edge_note, fitting_weights, lens_weights, run_pass
from calib.evaluation.evidence import calibrator_evidence, calibrators_of
from calib.evaluation.interval_methods import BASIC
from calib.evaluation.intervals import intervals
from calib.evaluation.lens import corp_summary
from calib.evaluation.metrics import reliability
from calib.evaluation.passes import resampling_in_words
from calib.evaluation.results import Comparison, Metric, Summary
from calib.evaluation.segments import as_groups
from calib.evaluation.settings import EvaluationSettings
from calib.evaluation.subgroups import group_rows
from calib.evaluation.weighting import WEIGHTED_RESAMPLING, say_weighted, weighting_of
from calib.resampling.bootstrap import basic_interval
from calib.validation import CalibInputError, as_sample_weights, check_inputs, closest


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
    sample_weight=None,
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
    the normalized Bayes risk per cost matrix, the top-label, positive-class or class-wise binned ECE and
    its debiased squared form, smooth ECE, the unbiased squared MMCE, ECD), and RCL = (EPSR_raw - EPSR_cal)
    / EPSR_raw of the cross-entropy and the Brier score for each calibrator under cross-validation.
    Intervals from Poisson bootstrap resamples, by the method each metric declares
    (:mod:`calib.evaluation.interval_methods`: basic intervals, or upper bounds of the calibration errors;
    RCL: a point estimate). Cost: one pass over the data (O(N K) per resample block), one cross-validated
    fit per calibrator.

    Source: Ferrer & Ramos (2024), eqs. 8-9 (NCE, NBS), Sec. 2.3.1 (normalized risk), eq. 33 (RCL);
    Silva Filho et al. (2023), Defs. 1, 4 and 6 (the ECEs); Kumar et al. (2019), Sec. 5 (the debiased
    squared ECE); Błasiok & Nakkiran (2023) (smooth ECE); Kumar et al. (2018) (MMCE); "An entropic metric"
    (2025) (ECD); Davison & Hinkley (1997), Sect. 5.2 (basic intervals); Hanley &
    MacGibbon (2006) (Poisson resamples); Cox (1958), Spiegelhalter (1986) and Holm (1979) (the subgroup
    tests); Dwass (1957) (the search's p-value).

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
    groups : array of shape (N,) or (N, c), or a pandas DataFrame of c columns, optional
        A subgroup per sample (a segment, a site, an attribute), or one per column of c: every metric and
        Cox's calibration test per value of each column and per crossing of up to ``segment_depth`` columns
        (at most 1000 segments), and the search for the worst segment (:mod:`calib.evaluation.segments`).
    group_column : str or sequence of str
        What the group columns are called in the output (a DataFrame's column names by default).
    sample_weight : array of shape (N,), optional
        A weight >= 0 per sample (:func:`calib.validation.as_sample_weights`): every sum becomes a weighted
        sum (counts become total weights, equal-mass bins equal in weight), so integer weights give what
        repeating each sample that many times gives; the calibrators are fitted and scored with the weights,
        and the groups' metrics and tests are weighted. The bootstrap resamples samples, each keeping its
        weight (a sample of weight 10 is one draw counted ten times), so intervals are for the weighted
        estimand with the rows as the sampled units. The summary's ``weighting`` gives the total weight and
        Kish's effective sample size.
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
    settings = settings_from(settings, options)
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
    group_ids, group_column = (None, group_column) if groups is None else as_groups(groups, group_column, y.size)
    weights = as_sample_weights(sample_weight, y.size)
    chunks = [(logp, y, group_ids, weights)]
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

    ``chunks()`` yields (scores (n, K) of ``kind``, labels (n,), groups (n,) or (n, c) or None[, sample
    weights (n,) or None]) in order, and may
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
    settings = settings_from(settings, options)

    if not callable(chunks):
        raise CalibInputError(
            f"chunks must be a function that returns a fresh iterable of the chunks at each call (the data are read "
            f"more than once); got a {type(chunks).__name__}: pass lambda: <code that makes the chunks>"
        )

    rows_read = []  # per call of chunks(): the data are read more than once, and each reading must be whole

    def validated():
        rows_read.append(0)
        for chunk in chunks():
            if not isinstance(chunk, tuple | list) or len(chunk) not in (3, 4):
                raise CalibInputError(
                    "chunks: each chunk must be a tuple (scores, labels, groups) or (scores, labels, groups, "
                    "sample_weight), groups None without subgroups and sample_weight None without weights"
                )
            scores, labels, group_ids, weights = (*chunk, None)[:4]
            if np.shape(labels)[:1] == (0,):  # an empty partition holds nothing to add
                continue
            before = rows_read[-1]
            rows_read[-1] += np.shape(labels)[0]
            logp, y = check_inputs(scores, labels, kind)
            if logp.shape[1] != n_classes:
                raise CalibInputError(f"a chunk has {logp.shape[1]} classes; the data set has {n_classes}")
            place = lambda i, before=before: f"row {before + i} (counting from 0)"  # noqa: E731
            weights = as_sample_weights(weights, y.size, place=place, whole=False)
            yield logp, y, None if group_ids is None else np.asarray(group_ids), weights
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


def settings_from(settings: EvaluationSettings | None, options: dict) -> EvaluationSettings:
    """The settings of an evaluation: ``settings`` (default: the command's) with single fields replaced by
    ``options``; a name that is not a field is refused with the closest one.

    Examples
    --------
    >>> settings_from(None, {"n_boot": 50}).n_boot
    50
    """
    fields = [f.name for f in dataclasses.fields(EvaluationSettings)]
    # A field's former names (the command's --bootstrap for n_boot) point to it.
    former = {old: f.name for f in dataclasses.fields(EvaluationSettings) for old in f.metadata.get("deprecated", ())}
    for name in options:
        if name not in fields:
            close = former.get(name) or closest(name, fields)
            hint = f"; did you mean {close}?" if close else f"; the settings are {', '.join(fields)}"
            raise CalibInputError(f"{name} is not a setting of the evaluation{hint}")
    if settings is not None and options:
        return settings.replace(**options)
    return settings if settings is not None else EvaluationSettings(**options)


def _evaluate(source, *, n_classes, n_rows, settings, costs, priors, grouped, group_column, say, whole_limit):
    """The :class:`Summary` of one pass over ``source()`` here (:func:`evaluate`, :func:`evaluate_chunks`)."""
    settings.check_memory(n_classes)
    names, left_out = calibrators_of(settings, n_classes)
    fit_rows = 0 if not names else settings.fit_rows(n_classes)
    done = run_pass(
        source, n_classes=n_classes, n_rows=n_rows, settings=settings, costs=costs, priors=priors,
        grouped=grouped, say=say, whole_limit=whole_limit, fit_rows=fit_rows,
    )  # fmt: skip
    return summarized(done, names, left_out, grouped=grouped, group_column=group_column, say=say)


def summarized(done: Pass, names, left_out: str, *, grouped: bool, group_column: str, say) -> Summary:
    """The :class:`Summary` of a pass: metrics with intervals, the calibrators' evidence, CORP, reliability
    bins and the subgroups.

    Parameters
    ----------
    done : Pass
        A checked pass, run here (:func:`calib.evaluation.data_pass.run_pass`) or merged from partitions.
    names : sequence of str
        The calibrators to assess (:func:`calib.evaluation.evidence.calibrators_of`).
    left_out : str
        The note on the calibrators left out ("" for none).
    grouped : bool
        The pass summed each group: report the subgroups.
    group_column : str
        What the groups are called in the output.
    say : callable
        Receives progress messages.

    Returns
    -------
    Summary
    """
    settings, n_classes = done.ctx.settings, done.ctx.n_classes
    summary = Summary(done.n, n_classes, settings=settings)
    if left_out:
        summary.notes.append(left_out)
    say("metrics" + (f" and {settings.n_boot} bootstrap resamples" if settings.n_boot else ""))
    draws = done.draws()
    if done.lens.keys.size < done.n:
        whole = [d.name for d in done.definitions if d.whole is not None]
        summary.notes.append(
            f"{', '.join([*whole, 'CORP'])}: on a seeded random {done.lens.keys.size} of the {done.n} samples"
        )
    if 0 < done.ctx.edge_rows < done.n:
        summary.notes.append(edge_note(done.ctx.edge_rows, done.n))
    summary.metrics, summary.interval_method, summary.interval_notes = intervals(draws, done.definitions, done.ctx)
    summary.resampling = resampling_in_words(settings, done.n)
    if done.weighted:
        say_weighted(summary, done.gathered.weight_sums, done.ctx.settings.n_bins)
    calibrator_evidence(summary, names, done.fitting, settings, say, fitting_weights(done.fitting))
    say("CORP decomposition" + (f" and MCB test ({settings.n_boot} resamples)" if settings.n_boot else ""))
    lens_weight = lens_weights(done.lens)
    summary.corp = corp_summary(*done.lens.arrays[2:5], n_classes, settings, lens_weight)
    summary.lens, summary.lens_weights = (done.lens.arrays[2], done.lens.arrays[3]), lens_weight
    summary.reliability = {
        name: reliability(d.bins[0], done.overall.sums, done.ctx.edges[d.bins[1]])
        for d in done.computed
        if d.bins is not None
        for name in d.names(done.ctx)
    }
    if grouped:
        summed = [d for d in done.computed if d.terms is not None]
        columns = (group_column,) if isinstance(group_column, str) else tuple(group_column)
        summary.groups, summary.multicalibration = group_rows(done.by_group, summed, done.ctx, columns)
        summary.group_column = ", ".join(columns)
    return summary


def compare(
    systems: list[np.ndarray],
    labels,
    *,
    names: list[str],
    settings: EvaluationSettings | None = None,
    sample_weight=None,
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
    sample_weight : array of shape (N,), optional
        A weight per sample, the same for every system, as for :func:`evaluate`.
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
    >>> c.differences[0]["NCE"].value, c.differences[0]["NCE"].low, c.differences[0]["NCE"].high
    (0.0, 0.0, 0.0)
    """
    settings = settings_from(settings, options)
    say = progress or (lambda _: None)
    y = np.asarray(labels)
    weights = as_sample_weights(sample_weight, y.size)
    settings.check_memory(max((np.shape(s)[-1] for s in systems), default=2), systems=len(systems))
    passes, draws = [], []
    for name, lp in zip(names, systems, strict=True):
        say(f"{name}: metrics" + (f" and {settings.n_boot} paired bootstrap resamples" if settings.n_boot else ""))
        done = run_pass(lambda lp=lp: iter([(lp, y, None, weights)]), n_classes=lp.shape[1], n_rows=y.size,
                        settings=settings, costs=None, priors=None, grouped=False, say=say,
                        whole_limit=y.size)  # fmt: skip
        passes.append(done)
        draws.append(done.draws())
    metrics = [{name: float(values[0]) for name, values in d.items()} for d in draws]
    paired = {name: d.paired for p in passes for d in p.definitions for name in d.names(p.ctx)}
    differences = []
    for other in draws[1:]:
        row = {}
        for name, values in other.items():
            with np.errstate(invalid="ignore"):
                diff = values - draws[0][name]
            if np.isnan(diff[0]) or not settings.n_boot or np.isnan(diff[1:]).any() or not paired[name]:
                row[name] = Metric(float(diff[0]))
                continue
            low, high = basic_interval(diff[1:], float(diff[0]), settings.alpha)
            row[name] = Metric(float(diff[0]), float(low), float(high), BASIC.name)
        differences.append(row)
    corp = [
        corp_summary(*p.lens.arrays[2:5], p.ctx.n_classes, settings.replace(n_boot=0), lens_weights(p.lens))
        for p in passes
    ]
    level = round(100 * (1 - settings.alpha))
    method = ""
    if settings.n_boot:
        resampled = resampling_in_words(settings, y.size)
        method = f"paired {level} % basic bootstrap intervals of {settings.n_boot} resamples, {resampled}"
        if weights is not None:
            method += f"; {WEIGHTED_RESAMPLING}"
    unpaired = [name for name in draws[0] if not paired[name]]
    notes = []
    if unpaired and settings.n_boot:
        notes.append(
            f"{', '.join(unpaired)}: no interval of a difference; a plug-in calibration error is biased upward by "
            "an amount that depends on its value, so the difference of two is biased and a bootstrap interval of it "
            "misses (benchmarks/coverage.py); the debiased squared forms' differences have intervals"
        )
    weighting = None if weights is None else weighting_of(float(weights.sum()), float(weights @ weights))
    return Comparison(list(names), metrics, differences, corp, method, notes, weighting)
