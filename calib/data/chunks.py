"""A Parquet table read in chunks, in bounded memory, with the classes and labels :func:`load_table` finds.

:func:`parquet_chunks` resolves the table's layout once, as :func:`calib.data.real.load_table` does on
the whole table: the score columns and their class order from the first rows (the schema and the
column types are those of every row), and the labels' meaning from the set of distinct labels of the
whole label column, read first on its own. Every chunk is then read with the needed columns only and
converted the same way, so the chunks put together are the set ``load_table`` returns; a bad cell is
reported with its row in the whole table. The evaluation reads the chunks one after the other
(:func:`calib.evaluation.engine.evaluate_chunks`); memory is bounded by the chunk size, whatever the
number of rows.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from calib.data.classes import label_indices, pick_class_columns
from calib.validation import CalibInputError, CalibInputWarning, check_inputs

# Rows per chunk read (a few MiB per score column).
CHUNK_ROWS = 1 << 18
# Rows read to find the score columns (their names and types are the schema's).
HEAD_ROWS = 1 << 10
# Distinct labels the label column may hold at most (a column of scores named as labels is refused
# before its distinct values fill the memory).
MAX_LABEL_VALUES = 10**6


@dataclass(frozen=True)
class ChunkedTable:
    """A table to read in chunks: its size, classes, the kind its scores are written in, and ``chunks()``,
    which yields (validated log-posteriors (n, K), labels (n,) class indices, groups (n,) or None) each
    time it is called (a bad row is reported with its row in the table)."""

    path: Path
    n_samples: int
    class_names: tuple[str, ...]
    kind: str
    chunks: Callable[[], Iterator[tuple]]

    @property
    def n_classes(self) -> int:
        return len(self.class_names)


def parquet_chunks(
    path,
    *,
    kind: str,
    label_column: str = "label",
    class_columns=None,
    label_values="auto",
    positive_label=None,
    group_column: str | None = None,
    renormalize: bool = False,
    scale: str = "unit",
    id_column: str | None = None,
) -> ChunkedTable:
    """A Parquet file as a :class:`ChunkedTable`, with the options of :func:`calib.data.real.load_table`.

    Parameters
    ----------
    path : str or Path
        A Parquet file with score columns and a label column.
    kind, label_column, class_columns, label_values, positive_label, group_column, renormalize, scale, id_column
        As for :func:`calib.data.real.load_table` (the id column is left out of the scores, not read).

    Returns
    -------
    ChunkedTable

    Examples
    --------
    >>> import pandas as pd, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "scores.parquet")
    >>> pd.DataFrame({"dog": [0.1, 0.8, 0.4], "cat": [0.9, 0.2, 0.6], "label": ["cat", "dog", "dog"]}).to_parquet(path)
    >>> table = parquet_chunks(path, kind="probs")
    >>> table.class_names, [labels.tolist() for _, labels, _ in table.chunks()]
    (('dog', 'cat'), [[1, 0, 0]])
    >>> [np.exp(logp).round(2).tolist() for logp, _, _ in table.chunks()][0][0]
    [0.1, 0.9]
    """
    import pyarrow.parquet as pq

    from calib.data.real import _index_column, _one_column_binary, _prepared

    path = Path(path)
    with pq.ParquetFile(path) as parquet:
        n_rows = parquet.metadata.num_rows
        head, _ = _index_column(_head(parquet), path, id_column)
    if n_rows == 0:
        raise CalibInputError(f"{path} has a header but no rows: it needs one row per sample")
    if label_column not in head.columns:
        raise CalibInputError(
            f"{path} has no label column {label_column!r}; its columns are {list(head.columns)}: "
            "name the label column with label_column=",
            cli_message=f"{path} has no label column {label_column!r}; its columns are {list(head.columns)}: "
            "name the label column with --labels COLUMN",
        )
    for column, flag in ((id_column, "--id-column"), (group_column, "--groups")):
        if column is not None and column not in head.columns:
            raise CalibInputError(
                f"{path} has no column {column!r}; its columns are {list(head.columns)}",
                cli_message=f"{path} has no column {column!r} ({flag}); its columns are {list(head.columns)}",
            )
    exclude = tuple(c for c in (id_column, group_column) if c is not None)
    columns = pick_class_columns(head, path, label_column, class_columns, exclude)
    if len(columns) == 1 and positive_label is None:
        raise CalibInputError(
            f"{path} has one score column, {columns[0]!r}: for a binary problem whose column scores the "
            "positive class, pass positive_label= (the label of that class)",
            cli_message=f"{path} has one score column, {columns[0]!r}: for a binary problem whose column scores "
            "the positive class, pass --positive-label LABEL",
        )
    if positive_label is not None and len(columns) == 2 and str(positive_label) == str(columns[0]):
        columns = columns[::-1]  # the positive class goes second
    distinct, codes = _label_codes(path, label_column, columns, label_values, positive_label)
    names = (f"not {positive_label}", str(positive_label)) if len(columns) == 1 else tuple(str(c) for c in columns)

    def chunks() -> Iterator[tuple]:
        noted: list = []
        start = 0
        with pq.ParquetFile(path) as parquet:
            needed = [*columns, label_column, *([group_column] if group_column else [])]
            for batch in parquet.iter_batches(batch_size=CHUNK_ROWS, columns=needed, use_threads=False):
                frame = batch.to_pandas()
                scores = frame[columns].to_numpy(dtype=np.float64)
                if len(columns) == 1:
                    scores = _one_column_binary(scores[:, 0], kind)
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always", CalibInputWarning)
                    scores = _prepared(scores, kind, scale, renormalize, path, columns)
                noted += caught
                labels = codes[distinct.get_indexer(frame[label_column])]
                groups = None
                if group_column:
                    groups = _groups(frame[group_column], path, start)
                yield _validated(scores, labels, kind, path, start), labels, groups
                start += len(frame)
        if noted:  # one note for the file (each chunk notes its own renormalization)
            warnings.warn(noted[0].message, noted[0].category, stacklevel=2)

    return ChunkedTable(path, n_rows, names, kind, chunks)


def _head(parquet):
    """The first rows as a DataFrame, as pandas reads the whole file (a stored index restored as the index)."""
    import pyarrow as pa

    batch = next(parquet.iter_batches(batch_size=HEAD_ROWS, use_threads=False), None)
    if batch is None:
        return parquet.schema_arrow.empty_table().to_pandas()
    return pa.Table.from_batches([batch], schema=parquet.schema_arrow).to_pandas()


def _label_codes(path: Path, label_column: str, columns: list, label_values, positive_label):
    """The distinct labels of the whole column (an Index, in order of first appearance) and the class of
    each: :func:`calib.data.classes.label_indices` decides from the set of labels, so it decides on the
    distinct ones as it would on all. A missing label is refused with its row."""
    import pandas as pd
    import pyarrow.parquet as pq

    seen = None
    start = 0
    with pq.ParquetFile(path) as parquet:
        for batch in parquet.iter_batches(batch_size=CHUNK_ROWS, columns=[label_column], use_threads=False):
            values = batch.column(0).to_pandas()
            missing = values.isna().to_numpy()
            if missing.any():
                row = start + int(np.flatnonzero(missing)[0])
                raise CalibInputError(
                    f"{path}: labels are missing (first at row {row}, counting from 0); drop the rows without a "
                    "label or fill them in (a missing label cannot be scored)"
                )
            seen = pd.unique(values) if seen is None else pd.unique(np.concatenate([seen, pd.unique(values)]))
            if len(seen) > MAX_LABEL_VALUES:
                raise CalibInputError(
                    f"{path}: the label column {label_column!r} holds more than {MAX_LABEL_VALUES} distinct values: "
                    "labels name classes; check which column holds them (label_column=)",
                    cli_message=f"{path}: the label column {label_column!r} holds more than {MAX_LABEL_VALUES} "
                    "distinct values: labels name classes; check which column holds them (--labels COLUMN)",
                )
            start += len(values)
    distinct = pd.Series(seen, dtype=values.dtype)
    codes = label_indices(distinct, columns, label_values, positive_label, path)
    return pd.Index(distinct), np.asarray(codes, dtype=np.int64)


def _validated(scores: np.ndarray, labels: np.ndarray, kind: str, path: Path, start: int) -> np.ndarray:
    """A chunk's scores as log-posteriors; an error names the chunk's place in the table."""
    try:
        return check_inputs(scores, labels, kind, overwrite=True)[0]
    except CalibInputError as exc:
        where = f"{path}, rows {start} to {start + len(labels) - 1} (rows named below count from {start})"
        raise CalibInputError(f"{where}: {exc}", cli_message=f"{where}: {exc.cli_message}") from None


def _groups(values, path: Path, start: int) -> np.ndarray:
    missing = values.isna().to_numpy()
    if missing.any():
        row = start + int(np.flatnonzero(missing)[0])
        raise CalibInputError(
            f"{path}: rows have no group (first at row {row}, counting from 0); fill them in (e.g. with "
            "'unknown') or drop them"
        )
    return values.to_numpy()
