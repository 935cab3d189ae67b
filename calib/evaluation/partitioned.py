"""A Parquet data set evaluated part by part, wherever the parts run: each partition (a run of row groups
of one file) is passed over on its own into a state, and the states are merged in order.

The engine's passes are keyed by where rows lie in the whole data set (the blocks of Poisson resample
counts and the subsample's keys, :mod:`calib.evaluation.passes`), so a partition's state is the part of
the data set's state its rows make, and the merged states are the state of a single pass: the same
metrics, intervals, subsamples, calibrators and subgroups as :func:`calib.evaluation.engine.evaluate_chunks`
on the data set (sums added in another order: equal to about 1e-15 relative).

Where the partitions run is a ``map_reduce(function, items, merge, what)``: :func:`in_process` here, or
a Dask cluster's (:mod:`calib.evaluation.dask_cluster`). Each partition keeps of its rows only those
whose subsample keys may be among the data set's smallest (:func:`calib.evaluation.passes.key_bound`),
so what a partition sends back is a small share of the subsample, not up to a whole subsample.

Dask is imported only where a cluster is asked for (:mod:`calib.evaluation.router`), never here: an
evaluation in one process never loads it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache, partial, reduce

from calib._internal.memory import return_large_arrays_to_the_system
from calib._internal.threads import PARTITION_THREADS
from calib.data.chunks import PARTITION_ROWS, ChunkedSet, Partition
from calib.evaluation.data_pass import Gathered, Pass, checked, context, edge_sample, gather, metrics_of
from calib.evaluation.engine import settings_from, summarized
from calib.evaluation.evidence import calibrators_of
from calib.evaluation.passes import Subsample, key_bound
from calib.evaluation.results import Summary
from calib.evaluation.settings import EvaluationSettings
from calib.validation import CalibInputError


def in_process(function: Callable, items: list, merge: Callable, what: str = "") -> object:
    """``function`` on each item here, one after the other, the results merged in order (a ``map_reduce``)."""
    return reduce(merge, map(function, items))


def evaluate_partitioned(
    table: ChunkedSet,
    *,
    map_reduce: Callable = in_process,
    settings: EvaluationSettings | None = None,
    costs=None,
    priors=None,
    grouped: bool = False,
    group_column: str = "group",
    progress: Callable[[str], None] | None = None,
    **options,
) -> Summary:
    """:func:`calib.evaluation.engine.evaluate_chunks` of a Parquet data set, partition by partition.

    Parameters
    ----------
    table : ChunkedSet
        A Parquet file or folder (:func:`calib.data.chunks.table_chunks`), which has partitions.
    map_reduce : callable
        ``map_reduce(function, partitions, merge, what)`` runs ``function`` on every partition and merges
        the results in order: :func:`in_process` (default) or a cluster's.
    settings, costs, priors, grouped, group_column, progress, **options
        As for :func:`calib.evaluation.engine.evaluate_chunks`.

    Returns
    -------
    Summary

    Examples
    --------
    >>> import numpy as np, pandas as pd, tempfile, os
    >>> from calib.evaluation.engine import evaluate_chunks
    >>> rng = np.random.default_rng(0)
    >>> p1 = rng.uniform(0.05, 0.95, 3000)
    >>> frame = pd.DataFrame({"0": 1 - p1, "1": p1, "label": (rng.random(3000) < p1).astype(int)})
    >>> path = os.path.join(tempfile.mkdtemp(), "log.parquet")
    >>> frame.to_parquet(path, row_group_size=700)
    >>> from calib.data.chunks import table_chunks
    >>> from calib.data.table_options import TableOptions
    >>> table = table_chunks(path, TableOptions(kind="probs"))
    >>> options = dict(n_boot=20, calibrators=())
    >>> cut = evaluate_partitioned(table, **options)
    >>> whole = evaluate_chunks(table.chunks, n_classes=2, **options)
    >>> abs(cut.metrics["NCE"].high - whole.metrics["NCE"].high) < 1e-12
    True
    """
    if table.partitions is None:
        raise CalibInputError(f"{table.path}: only a Parquet file or folder is read by partitions")
    settings = settings_from(settings, options)
    say = progress or (lambda _: None)
    k = table.n_classes
    parts = table.partitions(PARTITION_ROWS)
    n_rows = sum(part.n_rows for part in parts)
    names, left_out = calibrators_of(settings, k)
    fit_rows = 0 if not names else settings.fit_rows(k)

    def edge_sample():
        bound = key_bound(settings.sample_limit, n_rows)
        sample = map_reduce(partial(_edge_part, table.read, settings, k, bound), parts, Subsample.merged, "bin edges")
        if not sample.complete():  # fewer rows below the bound than the subsample holds (chance < 10^-15)
            sample = map_reduce(partial(_edge_part, table.read, settings, k, 1.0), parts, Subsample.merged)
        return sample.arrays

    ctx = context(k, settings, costs, priors, edge_sample)
    definitions, computed = metrics_of(ctx)
    whole_limit = settings.sample_limit
    task = partial(_part_pass, table.read, ctx, computed, grouped, whole_limit, fit_rows)
    below = (key_bound(whole_limit, n_rows), key_bound(fit_rows, n_rows))
    gathered = map_reduce(partial(task, below), parts, Gathered.merged, "partitions")
    if not (gathered.lens.complete() and gathered.fitting.complete()):
        gathered = map_reduce(partial(task, (1.0, 1.0)), parts, Gathered.merged, "partitions")
    done = checked(Pass(ctx, definitions, computed, gathered))
    return summarized(done, names, left_out, grouped=grouped, group_column=group_column, say=say)


def _edge_part(read, settings: EvaluationSettings, k: int, below: float, part: Partition) -> Subsample:
    _fixed_mmap_threshold()
    return edge_sample(lambda: read(part), settings, k, part.first_row, below)


def _part_pass(read, ctx, computed, grouped, whole_limit, fit_rows, below, part: Partition) -> Gathered:
    _fixed_mmap_threshold()
    return gather(lambda: read(part), ctx, computed, grouped=grouped, whole_limit=whole_limit, fit_rows=fit_rows,
                  threads=PARTITION_THREADS, first_row=part.first_row, below=below)  # fmt: skip


@cache
def _fixed_mmap_threshold() -> None:
    """glibc's mmap threshold fixed at 4 MiB in the process that passes over partitions, once: a Dask worker
    sets MALLOC_TRIM_THRESHOLD_, which also stops glibc from raising the threshold, so every array of a
    block (512 KiB) would be mapped and unmapped, page by page, each time (:mod:`calib._internal.memory`)."""
    return_large_arrays_to_the_system()
