"""Where an evaluation runs, chosen in one place for the command (``calib evaluate``) and the Python API
(:func:`evaluate_dataset`): on a file loaded whole (:func:`calib.evaluation.engine.evaluate`), on a table
read in chunks (:func:`calib.evaluation.engine.evaluate_chunks`), or partition by partition wherever a
``map_reduce`` runs them, here or on a Dask cluster (:func:`calib.evaluation.partitioned.evaluate_partitioned`).
The result is the same wherever it runs (the sums to the last bit in one process; a cluster adds them in
another order, equal to about 1e-15 relative).

Whether a file is loaded whole or read in chunks is the reader's choice (its size and format); this
module evaluates what it is given. Dask is imported only when a scheduler is given.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

import numpy as np

from calib.data.chunks import ChunkedSet, table_chunks
from calib.data.table_options import TableOptions
from calib.evaluation.engine import evaluate, evaluate_chunks
from calib.evaluation.partitioned import evaluate_partitioned
from calib.evaluation.results import Summary
from calib.evaluation.settings import EvaluationSettings
from calib.validation import CalibInputError


class Loaded(NamedTuple):
    """A file loaded whole: validated log-posteriors (N, K), labels (N,), groups (N,) or None and the rows'
    sample weights (N,) or None (each row counts once). They are the evaluation's to overwrite (validated in
    their own memory): the caller no longer needs them."""

    logp: np.ndarray
    labels: np.ndarray
    groups: np.ndarray | None = None
    weights: np.ndarray | None = None


def evaluate_read(
    data: Loaded | ChunkedSet, *, map_reduce: Callable | None = None, grouped: bool = False, **shared
) -> Summary:
    """Evaluate ``data`` as it was read: loaded whole, read in chunks, or by partitions through ``map_reduce``.

    Parameters
    ----------
    data : Loaded or ChunkedSet
        A file loaded whole (:class:`Loaded`: its ``weights`` are passed as ``sample_weight``), or a table
        read in chunks (:func:`calib.data.chunks.table_chunks`: the chunks carry their weights).
    map_reduce : callable, optional
        ``map_reduce(function, partitions, merge, what)`` (:mod:`calib.evaluation.partitioned`): the table's
        partitions are evaluated where it runs them (a Parquet table only).
    grouped : bool
        The table's chunks carry groups (a loaded file's groups are its ``groups``).
    **shared
        ``settings``, ``costs``, ``priors``, ``group_column``, ``progress`` and single settings, as for
        :func:`calib.evaluate`.

    Returns
    -------
    Summary

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p1 = rng.uniform(0.05, 0.95, 400)
    >>> y = (rng.random(400) < p1).astype(int)
    >>> s = evaluate_read(Loaded(np.log(np.column_stack([1 - p1, p1])), y), n_boot=0, calibrators=())
    >>> s.n_samples, round(s.metrics["accuracy"].value, 3)
    (400, 0.752)
    """
    if isinstance(data, Loaded):
        return evaluate(data.logp, data.labels, kind="logprobs", groups=data.groups, sample_weight=data.weights,
                        overwrite=True, **shared)  # fmt: skip
    if map_reduce is not None:
        return evaluate_partitioned(data, map_reduce=map_reduce, grouped=grouped, **shared)
    rows = data.n_samples or data.estimate_rows()
    return evaluate_chunks(data.chunks, n_classes=data.n_classes, n_rows=rows, grouped=grouped, **shared)


def evaluate_dataset(
    path,
    table: TableOptions | None = None,
    *,
    scheduler=None,
    settings: EvaluationSettings | None = None,
    costs=None,
    priors=None,
    progress: Callable[[str], None] | None = None,
    **options,
) -> Summary:
    """Evaluate a Parquet data set where it lives: here in chunks, or on a Dask cluster (``scheduler``).

    The data set is a file, or a folder of files with the same columns; on a cluster each partition is
    evaluated on a worker. The result is the same either way (:func:`evaluate_partitioned`): every
    registered metric with Poisson bootstrap intervals, the calibrators' evidence, CORP and the
    subgroups, as :func:`calib.evaluate` gives them on the rows at once.

    Source: as :func:`calib.evaluate`; the Poisson resamples that make partitions merge: Hanley &
    MacGibbon (2006).

    Parameters
    ----------
    path : str or Path
        A ``.parquet`` file or a folder of them (one table, files in the order of their names).
    table : TableOptions, optional
        How to read it (:class:`calib.data.table_options.TableOptions`; read as Parquet whatever its
        ``format``); or give its fields as keywords among ``**options`` (``kind="probs",
        label_column="clicked"``). With a ``group_column``: every summed metric (not the smooth ECE nor
        RCL) and a calibration test per group.
    scheduler : str or dask.distributed.Client, optional
        A Dask scheduler's address (``tcp://host:8786``) or a client: the partitions are evaluated on its
        workers (needs ``pip install 'calib-repro[dask]'``). Unreachable within
        :data:`calib.evaluation.dask_cluster.CONNECT_TIMEOUT` seconds: a CalibInputError.
    settings, costs, priors, progress, **options
        As for :func:`calib.evaluate`; ``**options`` may also hold the fields of ``table``.

    Returns
    -------
    Summary

    Examples
    --------
    >>> import numpy as np, pandas as pd, tempfile, os
    >>> rng = np.random.default_rng(1)
    >>> p1 = rng.uniform(0.05, 0.95, 2000)
    >>> frame = pd.DataFrame({"no": 1 - p1, "yes": p1, "clicked": np.where(rng.random(2000) < p1, "yes", "no")})
    >>> folder = tempfile.mkdtemp()
    >>> frame[:1200].to_parquet(os.path.join(folder, "part-0.parquet"))
    >>> frame[1200:].to_parquet(os.path.join(folder, "part-1.parquet"))
    >>> s = evaluate_dataset(folder, kind="probs", label_column="clicked", n_boot=0, calibrators=())
    >>> s.n_samples, round(s.metrics["accuracy"].value, 3)
    (2000, 0.721)
    """
    given = sorted(set(options) & set(TableOptions.names()))
    if table is not None and given:
        raise CalibInputError(f"{', '.join(given)}: give the table's options once, in table= or as keywords")
    table = replace(table or TableOptions.taken_from(options), format="parquet")
    group_column = table.group_column
    shared = dict(settings=settings, costs=costs, priors=priors, grouped=group_column is not None,
                  group_column=group_column or "group", progress=progress, **options)  # fmt: skip
    path = Path(path)
    if scheduler is None:
        return evaluate_read(table_chunks(path, table), **shared)
    from calib.evaluation.dask_cluster import on_cluster

    with on_cluster(scheduler, say=progress or (lambda _: None)) as map_reduce:
        return evaluate_read(table_chunks(path, table, map_reduce=map_reduce), map_reduce=map_reduce, **shared)
