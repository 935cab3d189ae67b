"""Posterior files read in chunks, in bounded memory, with the classes and labels the whole-file loaders find.

:func:`table_chunks` reads a table (a Parquet file, a folder of Parquet files taken as one table in
the order of their names, or a CSV / TSV file, compressed too) and :func:`npy_chunks` an ``.npy`` of
scores with an ``.npy`` of labels (both memory-mapped). A table's layout is resolved once, as
:func:`calib.data.real.load_table` resolves it on the whole table: the score columns and their class
order from the first rows, and the labels' meaning from the set of distinct labels of the whole
label column, read first on its own (:func:`calib.data.classes.resolve_classes` decides from that set,
so it decides as it would on every row), by the rules both readers share (:mod:`calib.data.reading`).
Every chunk is then read with the needed columns only and converted the same way, so the chunks put
together are the set the whole-file loader returns, and a bad cell is reported with its row in the file.
Memory is bounded by the chunk size, whatever the number of rows.

pandas and pyarrow are imported inside the readers that need them, so reading a .npy file loads neither.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from calib.data.classes import ClassLayout
from calib.data.formats import TEXT_FORMATS, file_format, read_text_table, text_options
from calib.data.reading import ScoreRows, check_score_arrays, group_values, index_column, table_layout
from calib.data.table_options import TableOptions
from calib.data.weights import WeightsFile, all_zero, column_weights, column_words, refuse_two_weights
from calib.validation import CalibInputError, check_inputs, not_probabilities

# Rows per chunk read (a few MiB per score column).
CHUNK_ROWS = 1 << 18
# Rows read to find the score columns (their names and types hold for every row).
HEAD_ROWS = 1 << 10
# Distinct labels the label column may hold at most (a column of scores named as labels is refused
# before its distinct values fill the memory).
MAX_LABEL_VALUES = 10**6


# Rows of a partition (a run of row groups of one Parquet file) at most, unless one row group holds more.
PARTITION_ROWS = 1 << 23


@dataclass(frozen=True)
class Partition:
    """Rows of a Parquet data set read on their own: ``row_groups`` of ``file``, ``n_rows`` rows starting at
    row ``first_row`` of the data set and row ``file_row`` of the file."""

    file: Path
    row_groups: tuple[int, ...]
    first_row: int
    file_row: int
    n_rows: int


@dataclass(frozen=True)
class ChunkedSet:
    """Posteriors to read in chunks: their size (None when unknown before reading, e.g. a CSV file),
    classes, the kind the scores are written in, and ``chunks()``, which yields (validated
    log-posteriors (n, K), labels (n,) class indices, groups (n,) or None, sample weights (n,) or None)
    each time it is called.

    A Parquet data set is also read by parts: ``partitions(rows)`` cuts it into :class:`Partition` s of
    at most ``rows`` rows (whole row groups), and ``read(partition)``, a function that pickles, yields a
    partition's chunks (on a worker of a cluster, for instance)."""

    path: Path
    n_samples: int | None
    class_names: tuple[str, ...] | None
    n_classes: int
    kind: str
    chunks: Callable[[], Iterator[tuple]]
    estimate_rows: Callable[[], int | None] = lambda: None
    partitions: Callable[[int], list[Partition]] | None = None
    read: Callable[[Partition], Iterator[tuple]] | None = None
    notes: tuple = ()  # CalibInputWarnings: how the table was read where it was not by name
    given_order: tuple[int, ...] | None = None  # as PosteriorSet.given_order


def table_chunks(path, options: TableOptions, *, map_reduce: Callable | None = None, weights_file=None) -> ChunkedSet:
    """A table as a :class:`ChunkedSet`, read with the options :func:`calib.data.real.load_table` reads it
    with whole.

    Parameters
    ----------
    path : str or Path
        A Parquet file, a folder of ``*.parquet`` files (one table, in the order of the file names, every
        file with the same columns), or a CSV / TSV file.
    options : TableOptions
        How to read it (:class:`calib.data.table_options.TableOptions`); its ``format`` is one of
        ``parquet``, ``csv``, ``tsv`` (default: from the suffix; a folder is Parquet). The id column is left
        out of the scores, not read.
    map_reduce : callable, optional
        For a Parquet table, ``map_reduce(function, partitions, merge, what)`` runs ``function`` on each
        :class:`Partition` and merges the results in order (on a cluster, for instance): the label
        column's distinct values are then found that way; by default they are read here.
    weights_file : str or Path, optional
        A file of the rows' weights, one per row of the table (:mod:`calib.data.weights`), read in the slices
        the chunks need; not with ``options.weight_column``. The chunks' fourth array holds the weights of
        either (None without weights).

    Returns
    -------
    ChunkedSet

    Examples
    --------
    >>> import pandas as pd, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "scores.parquet")
    >>> frame = pd.DataFrame({"dog": [0.1, 0.8, 0.4], "cat": [0.9, 0.2, 0.6], "label": ["cat", "dog", "dog"]})
    >>> frame.to_parquet(path)
    >>> table = table_chunks(path, TableOptions(kind="probs"))
    >>> table.class_names, [labels.tolist() for _, labels, _, _ in table.chunks()]
    (('cat', 'dog'), [[0, 1, 1]])
    >>> [np.exp(logp).round(2).tolist() for logp, _, _, _ in table.chunks()][0][0]
    [0.9, 0.1]
    """
    path = Path(path)
    refuse_two_weights(options.weight_column, weights_file)
    fmt = options.format or ("parquet" if path.is_dir() else file_format(path))
    source = _ParquetSource(path) if fmt == "parquet" else _TextSource(path, fmt, options.sep, options.decimal)
    weights = None if weights_file is None else WeightsFile(weights_file, source.n_rows)
    head, _ = index_column(source.head(), path, options.id_column)
    if head.empty and source.n_rows in (0, None):
        raise CalibInputError(f"{path} has a header but no rows: it needs one row per sample")
    label_column = options.label_column
    if label_column not in head.columns:  # refused naming the column, as the whole-file loader refuses it
        table_layout(head, path, options, labels=None)
    scan = partial(_distinct_labels, source, path, label_column)
    if map_reduce is not None and isinstance(source, _ParquetSource):
        labels = map_reduce(scan, source.partitions(PARTITION_ROWS), _Labels.merged, "label values")
    else:
        labels = scan(None)
    if labels.dtype is None:
        raise CalibInputError(f"{path} has a header but no rows: it needs one row per sample")
    layout = table_layout(head, path, options, labels=labels.series())
    columns, names = list(layout.columns), layout.names
    kind = options.kind
    scores_of = _ScoresOf(ScoreRows(path, kind, options.scale, options.renormalize), columns)
    read = _TableReader(source, path, kind, columns, label_column, options.group_column, layout, scores_of,
                        options.weight_column, weights)  # fmt: skip

    def chunks() -> Iterator[tuple]:
        rows, counted = 0, False
        for chunk in read(None):
            rows += len(chunk[1])
            counted = counted or (chunk[3] is not None and bool(chunk[3].any()))
            yield chunk
        if weights is not None:
            weights.check_length(rows)  # a CSV's rows are known once read
        if options.weight_column is not None and not counted:  # each chunk may be all 0, not every one
            raise all_zero(*column_words(path, options.weight_column))
        scores_of.rows.note()

    parquet = isinstance(source, _ParquetSource)
    return ChunkedSet(path, source.n_rows, names, len(names), kind, chunks, source.estimate_rows,
                      source.partitions if parquet else None, read if parquet else None, layout.notes,
                      layout.given_order)  # fmt: skip


@dataclass(frozen=True)
class _TableReader:
    """The chunks of a table, or of one of its partitions: scores, label classes, groups and weights (of
    ``weight_column``, or of ``weights`` at the rows of the data set), validated."""

    source: object
    path: Path
    kind: str
    columns: list
    label_column: str
    group_column: str | None
    layout: ClassLayout
    scores_of: _ScoresOf
    weight_column: str | None = None
    weights: WeightsFile | None = None

    def __call__(self, part: Partition | None) -> Iterator[tuple]:
        """The chunks of the whole table (``part`` None) or of ``part``; an error names the file and rows."""
        path, start = (self.path, 0) if part is None else (part.file, part.file_row)
        row = 0 if part is None else part.first_row  # of the data set, which a weights file follows
        line = self.source.line
        extra = [*(self.group_column or ()), *([] if self.weight_column is None else [self.weight_column])]
        for frame in self.source.batches([*self.columns, self.label_column, *extra], part):
            scores = self.scores_of(frame, start, path)
            labels = self.layout.classes_of(frame[self.label_column])
            place = partial(_shifted, line, start)
            groups = None if self.group_column is None else group_values(frame, self.group_column, path, place)
            weights = self._weights(frame, path, start, row)
            yield *_validated(scores, labels, self.kind, path, start, line), groups, weights
            start += len(frame)
            row += len(frame)

    def _weights(self, frame, path: Path, start: int, row: int) -> np.ndarray | None:
        """The weights of a chunk whose first row is row ``start`` of ``path`` and ``row`` of the data set."""
        if self.weight_column is not None:
            return column_weights(frame[self.weight_column], self.weight_column, path, self.source.line, start=start,
                                  whole=False)  # fmt: skip
        return None if self.weights is None else self.weights.rows(row, row + len(frame))


def npy_chunks(
    scores_path, labels_path, *, kind: str, renormalize: bool = False, scale: str = "unit", weights_file=None
) -> ChunkedSet:
    """An ``.npy`` of scores (N, K) and an ``.npy`` of labels (N,) as a :class:`ChunkedSet`, both
    memory-mapped, with the options of :func:`calib.data.real.load_npy_pair`.

    Parameters
    ----------
    scores_path, labels_path : str or Path
        The two ``.npy`` files (regular files: a pipe cannot be memory-mapped).
    kind, renormalize, scale, weights_file
        As for :func:`calib.data.real.load_npy_pair` (a ``.npy`` weights file is memory-mapped too).

    Returns
    -------
    ChunkedSet

    Examples
    --------
    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> np.save(os.path.join(folder, "s.npy"), np.array([[0.2, 0.8], [0.6, 0.4]]))
    >>> np.save(os.path.join(folder, "y.npy"), np.array([1, 0]))
    >>> pieces = npy_chunks(os.path.join(folder, "s.npy"), os.path.join(folder, "y.npy"), kind="probs")
    >>> pieces.n_samples, [y.tolist() for _, y, _, _ in pieces.chunks()]
    (2, [[1, 0]])
    """
    scores_path, labels_path = Path(scores_path), Path(labels_path)
    scores = _mapped_npy(scores_path, "scores file")
    labels = _mapped_npy(labels_path, "labels file")
    check_score_arrays(scores, labels, f"scores file {scores_path}", f"labels file {labels_path}")
    scores_of = _ScoresOf(ScoreRows(scores_path, kind, scale, renormalize), None)
    weights = None if weights_file is None else WeightsFile(weights_file, scores.shape[0])

    def chunks() -> Iterator[tuple]:
        for start in range(0, scores.shape[0], CHUNK_ROWS):
            part = np.asarray(scores[start : start + CHUNK_ROWS], dtype=np.float64)
            y = np.asarray(labels[start : start + CHUNK_ROWS])
            w = None if weights is None else weights.rows(start, start + len(y))
            yield *_validated(scores_of.prepared(part, scores_path), y, kind, scores_path, start, _row), None, w
        scores_of.rows.note()

    return ChunkedSet(scores_path, scores.shape[0], None, scores.shape[1], kind, chunks)


def _mapped_npy(path: Path, what: str) -> np.ndarray:
    from calib.data.formats import require_readable

    path = require_readable(path, what)
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise CalibInputError(f"{what} {path} is not a readable .npy array ({exc})") from exc
    if array.dtype.kind not in "fiub":
        raise CalibInputError(f"{what} {path} holds {array.dtype} values; it needs numbers")
    return array


class _ScoresOf:
    """A chunk's score columns as scores of ``kind``: percentages divided, probabilities checked, rows
    renormalized (:class:`calib.data.reading.ScoreRows`: the largest deviation over every chunk noted once,
    as the whole-file loader notes it)."""

    def __init__(self, rows: ScoreRows, columns):
        self.rows, self.kind, self.columns = rows, rows.kind, columns

    def __call__(self, frame, start: int, path: Path) -> np.ndarray:
        try:
            scores = frame[self.columns].to_numpy(dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise CalibInputError(
                f"{path}: a score cell in rows {start} to {start + len(frame) - 1} is not a number ({exc}); "
                "scores must be numbers"
            ) from None
        if len(self.columns) == 1:  # scaled and checked as the one column it is, then completed to two classes
            return self.rows.one_column(scores[:, 0], self.columns[0])
        return self.prepared(scores, path)

    def prepared(self, scores: np.ndarray, path: Path) -> np.ndarray:
        scores = self.rows.scaled(scores)
        # A chunk with a missing or infinite score is left to _validated, which names its rows in the file.
        if self.kind == "probs" and np.isfinite(scores).all() and not ((scores >= 0) & (scores <= 1)).all():
            raise not_probabilities(scores, str(path), self.columns)
        return self.rows.renormalized(scores)


def _row(row: int) -> str:
    return f"row {row} (counting from 0)"


class _ParquetSource:
    """A Parquet file, or a folder of them read one after the other in the order of their names.

    Files are opened without pre-buffering: with it, Arrow keeps the column chunks it has read until the
    file is closed, so reading a file in batches held as much memory as the file (833 MB at 5 x 10^7 x 2).
    """

    def __init__(self, path: Path):
        import pyarrow.parquet as pq

        files = sorted(path.glob("*.parquet")) if path.is_dir() else [path]
        if not files:
            raise CalibInputError(f"{path} is a folder without .parquet files; give a file or a folder of them")
        self.files = files
        schemas = []
        # Rows of each row group of each file, from the files' footers.
        self.group_rows = []
        for file in files:
            try:
                with pq.ParquetFile(file, pre_buffer=False) as parquet:
                    schemas.append(parquet.schema_arrow)
                    meta = parquet.metadata
                    self.group_rows.append([meta.row_group(i).num_rows for i in range(meta.num_row_groups)])
            except (OSError, ValueError) as exc:
                raise CalibInputError(f"{file} is not a readable parquet table ({_one_line(exc)})") from exc
        self.n_rows = sum(map(sum, self.group_rows))
        for file, schema in zip(files[1:], schemas[1:], strict=True):
            if schema.names != schemas[0].names or schema.types != schemas[0].types:
                raise CalibInputError(
                    f"{file} has other columns than {files[0]} ({schema.names} against {schemas[0].names}): the files "
                    "of a folder make one table; give them the same columns and types"
                )
        self.schema = schemas[0]

    @staticmethod
    def line(row: int) -> str:
        return _row(row)

    def partitions(self, rows: int) -> list[Partition]:
        """Runs of consecutive row groups of one file of at most ``rows`` rows (or one row group), in order."""
        out = []
        first = 0
        for file, sizes in zip(self.files, self.group_rows, strict=True):
            groups: list[int] = []
            held = file_row = 0
            for i, size in enumerate(sizes):
                if groups and held + size > rows:
                    out.append(Partition(file, tuple(groups), first, file_row, held))
                    first, file_row, groups, held = first + held, file_row + held, [], 0
                groups.append(i)
                held += size
            if groups:
                out.append(Partition(file, tuple(groups), first, file_row, held))
                first += held
        return out

    def head(self):
        """The first rows as pandas reads the whole file (a stored pandas index restored as the index)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        with pq.ParquetFile(self.files[0], pre_buffer=False) as parquet:
            batch = next(parquet.iter_batches(batch_size=HEAD_ROWS, use_threads=False), None)
        if batch is None:
            return self.schema.empty_table().to_pandas()
        return pa.Table.from_batches([batch], schema=self.schema).to_pandas()

    def batches(self, columns: list, part: Partition | None = None) -> Iterator:
        """The columns of every file (``part`` None) or of a partition, in frames of CHUNK_ROWS rows at most."""
        import pyarrow.parquet as pq

        for file in self.files if part is None else [part.file]:
            groups = None if part is None else list(part.row_groups)
            with _read_errors(file), pq.ParquetFile(file, pre_buffer=False) as parquet:
                frames = parquet.iter_batches(CHUNK_ROWS, groups, columns, use_threads=False)
                for batch in frames:
                    yield batch.to_pandas()

    def estimate_rows(self) -> int:
        return self.n_rows


class _TextSource:
    """A CSV / TSV file read in chunks by pandas (its rows are counted as they are read)."""

    def __init__(self, path: Path, fmt: str, sep, decimal: str):
        assert fmt in TEXT_FORMATS
        self.path, self.fmt, self.decimal = path, fmt, decimal
        self.sep, self.skip = text_options(path, fmt, sep)  # a first line "sep=X" names it, and is skipped
        self.n_rows = None
        self._bytes = path.stat().st_size
        self._read_bytes = 0

    def line(self, row: int) -> str:
        return f"line {row + 2 + self.skip}"

    def head(self):
        return read_text_table(self.path, self.fmt, sep=self.sep, decimal=self.decimal, nrows=HEAD_ROWS)

    def batches(self, columns: list, part: None = None) -> Iterator:
        import pandas as pd

        wanted = set(map(str, columns))
        options = {"sep": self.sep, "decimal": self.decimal, "encoding": "utf-8", "chunksize": CHUNK_ROWS}
        options |= {"skiprows": self.skip, "skipinitialspace": True}  # as read_text_table reads the head
        with pd.read_csv(self.path, usecols=lambda c: str(c) in wanted, **options) as reader:
            yield from reader

    def estimate_rows(self) -> int | None:
        """The rows of an uncompressed file, estimated from the bytes of its first lines (None when compressed)."""
        if self.path.suffix.lower() not in (".csv", ".tsv", ".txt"):
            return None
        with open(self.path, "rb") as stream:
            stream.readline()  # the header
            lines = [len(line) for _, line in zip(range(HEAD_ROWS), stream, strict=False)]
        return round(self._bytes / (sum(lines) / len(lines))) if lines else 0


@dataclass(frozen=True)
class _Labels:
    """The distinct values of a label column (in order of first appearance) and their dtype."""

    values: np.ndarray
    dtype: object
    path: Path
    label_column: str

    def series(self):
        """The distinct labels as a pandas Series of their dtype."""
        import pandas as pd

        return pd.Series(self.values, dtype=self.dtype)

    def merged(self, other: _Labels) -> _Labels:
        """The distinct labels of both parts, ``self``'s first."""
        import pandas as pd

        both = [np.asarray(labels.values, dtype=object) for labels in (self, other)]
        values = pd.unique(np.concatenate(both))
        if self.dtype is None or other.dtype is None:  # a part without rows
            dtype = other.dtype if self.dtype is None else self.dtype
        else:
            dtype = self.dtype if self.dtype == other.dtype else np.dtype(object)
        return _Labels(_few_labels(values, self.path, self.label_column), dtype, self.path, self.label_column)


def _distinct_labels(source, path: Path, label_column: str, part: Partition | None) -> _Labels:
    """The distinct labels of the whole column (``part`` None) or of a partition's rows; a missing label is
    refused with its row (in the partition's file)."""
    import pandas as pd

    path, start = (path, 0) if part is None else (part.file, part.file_row)
    seen = None
    dtype = None
    for frame in source.batches([label_column], part):
        values = frame[label_column]
        missing = values.isna().to_numpy()
        if missing.any():
            where = source.line(start + int(np.flatnonzero(missing)[0]))
            raise CalibInputError(
                f"{path}: labels are missing (first at {where}); drop the rows without a label or fill them in (a "
                "missing label cannot be scored)"
            )
        unique = pd.unique(values)
        seen = unique if seen is None else pd.unique(np.concatenate([np.asarray(seen, dtype=object), unique]))
        dtype = values.dtype if dtype is None or dtype == values.dtype else np.dtype(object)
        seen = _few_labels(seen, path, label_column)
        start += len(values)
    return _Labels(np.asarray([] if seen is None else seen), dtype, path, label_column)


def _few_labels(values, path: Path, label_column: str):
    if len(values) > MAX_LABEL_VALUES:
        raise CalibInputError(
            f"{path}: the label column {label_column!r} holds more than {MAX_LABEL_VALUES} distinct values: labels "
            "name classes; check which column holds them (label_column=)",
            cli_message=f"{path}: the label column {label_column!r} holds more than {MAX_LABEL_VALUES} distinct "
            "values: labels name classes; check which column holds them (--labels COLUMN)",
        )
    return values


@contextmanager
def _read_errors(file: Path):
    """Arrow's errors reading ``file`` as one error naming it."""
    try:
        yield
    except CalibInputError:
        raise
    except (OSError, ValueError) as exc:
        raise CalibInputError(
            f"{file} is not a readable parquet table ({_one_line(exc)}); rewrite or remove it"
        ) from None


def _one_line(exc: Exception) -> str:
    """Arrow's message of ``exc`` on one line of printable characters (it may hold the bytes it could not parse)."""
    words = "".join(c if c.isprintable() else " " for c in str(exc)).split()
    return " ".join(words) or type(exc).__name__


def _validated(scores: np.ndarray, labels: np.ndarray, kind: str, path: Path, start: int, line) -> tuple:
    """A chunk's (log-posteriors, labels), validated; an error names the chunk's place in the file."""
    try:
        return check_inputs(scores, labels, kind, overwrite=True)
    except CalibInputError as exc:
        where = f"{path}, {line(start)} to {line(start + len(labels) - 1)}"
        counted = " (rows counted from the first of these)"
        raise CalibInputError(f"{where}: {exc}{counted}", cli_message=f"{where}: {exc.cli_message}{counted}") from None


def _shifted(line, start: int, row: int) -> str:
    """The place in the file of a chunk's row ``row``, the chunk starting at row ``start``."""
    return line(start + row)
