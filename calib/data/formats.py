"""Which format a posteriors file is in, and reading a table of it as people export them.

A file's format comes from its suffix or is named (``format=``, ``--format``): ``csv`` and ``tsv``
text, optionally compressed as pandas reads them (``.csv.gz``, ``.tsv.bz2``, ``.csv.zip``,
``.csv.xz``, ``.csv.zst``), ``parquet``, ``feather`` (Arrow IPC: ``.feather``, ``.arrow``,
``.ipc``), and numpy's ``npz`` and ``npy``. A named pipe (``mkfifo``, or a shell's ``<(...)``) is
read as a stream; a pipe without a suffix needs its format named.

Text tables: the separator is ``,`` for csv and a tab for tsv unless given (``sep=``, ``--sep``), and
decimals are written with a point unless told (``decimal=","``, ``--decimal ,``). A file whose header
holds another separator, or whose number columns hold decimal commas, is refused with the option
that reads it, never read as something else.

pandas and pyarrow are imported inside the readers of the formats that need them: .npy and .npz files load
neither.
"""

from __future__ import annotations

import io
import re
import stat
from pathlib import Path

import numpy as np

from calib.validation import CalibInputError, MissingFileError

FORMATS = ("csv", "tsv", "parquet", "feather", "npz", "npy")
TEXT_FORMATS = ("csv", "tsv")
_BY_SUFFIX = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".feather": "feather",
    ".arrow": "feather",
    ".ipc": "feather",
    ".npz": "npz",
    ".npy": "npy",
}
# The compressions pandas decompresses by suffix (pandas.read_csv's compression="infer").
COMPRESSIONS = (".gz", ".bz2", ".zip", ".xz", ".zst", ".tar")
# Separators a header is searched for when the one used left it a single column.
_SEPARATORS = {";": "';'", "\t": "a tab ('\\t')", "|": "'|'", ",": "','"}
# A cell written with a decimal comma: "0,25", "-1,5e-3".
_DECIMAL_COMMA = re.compile(r"^\s*[-+]?\d*,\d+(?:[eE][-+]?\d+)?\s*$")


def file_format(path, told: str | None = None) -> str:
    """The format of ``path``: ``told`` when given, else from its suffix (a compressed text table by its
    inner suffix). A CalibInputError names ``format=`` / ``--format`` when neither says.

    Examples
    --------
    >>> file_format("scores.csv.gz"), file_format("scores.arrow"), file_format("/dev/fd/63", "tsv")
    ('csv', 'feather', 'tsv')
    """
    if told is not None:
        if told not in FORMATS:
            raise CalibInputError(
                f"format must be one of {FORMATS}; got {told!r}",
                cli_message=f"--format must be one of {', '.join(FORMATS)}; got {told!r}",
            )
        return told
    suffixes = [s.lower() for s in Path(path).suffixes]
    compressed = bool(suffixes) and suffixes[-1] in COMPRESSIONS
    inner = suffixes[-2] if compressed and len(suffixes) > 1 else (suffixes[-1] if suffixes and not compressed else "")
    fmt = _BY_SUFFIX.get(inner)
    if fmt is not None and (not compressed or fmt in TEXT_FORMATS):
        return fmt
    what = f"a compressed {inner or 'file'}" if compressed else f"suffix {inner!r}" if inner else "no suffix"
    known = ".csv, .tsv (either compressed: .gz, .bz2, .zip, .xz, .zst), .parquet, .feather / .arrow, .npz, .npy"
    raise CalibInputError(
        f"{path}: {what} says no format calib reads ({known}); rename the file or pass format= one of {FORMATS}",
        cli_message=f"{path}: {what} says no format calib reads ({known}); rename the file or name its format "
        f"with --format {{{','.join(FORMATS)}}}",
    )


def require_readable(path, what: str) -> Path:
    """``path`` as a Path if it is a file or a pipe to read; a MissingFileError naming it otherwise."""
    path = Path(path)
    if path.is_dir():
        raise MissingFileError(f"{what} {path} is a folder, not a file; give the file's path")
    try:
        mode = path.stat().st_mode
    except OSError:
        raise MissingFileError(f"{what} {path} does not exist; check the path") from None
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):
        raise MissingFileError(f"{what} {path} is not a file or a pipe; give the file's path")
    return path


def seekable_source(path: Path):
    """``path`` itself for a regular file, or the whole stream of a pipe in memory (numpy's and Arrow's
    readers seek in their files)."""
    if stat.S_ISREG(path.stat().st_mode):
        return path
    with open(path, "rb") as stream:
        return io.BytesIO(stream.read())


def read_text_table(path: Path, fmt: str, *, sep: str | None = None, decimal: str = ".", nrows: int | None = None):
    """A csv / tsv table as a DataFrame, read with ``sep`` (default: ``,`` / tab) and ``decimal`` (its first
    ``nrows`` rows when given).

    A header that is one column holding another separator, and number columns written with decimal
    commas, are refused with the option that reads them (:func:`check_decimals` for the latter).
    """
    import pandas as pd

    sep = sep if sep is not None else ("\t" if fmt == "tsv" else ",")
    if not isinstance(sep, str) or not sep or not isinstance(decimal, str) or len(decimal) != 1 or decimal == sep:
        raise CalibInputError(
            f"sep must be a non-empty string and decimal one character other than sep; got sep={sep!r}, "
            f"decimal={decimal!r}",
            cli_message=f"--sep must be a non-empty string and --decimal one character other than it; got --sep "
            f"{sep!r}, --decimal {decimal!r}",
        )
    if stat.S_ISREG(path.stat().st_mode):  # the header alone first: a pipe can be read only once
        _check_separator(pd.read_csv(path, sep=sep, nrows=0, encoding="utf-8").columns, path, sep)
        _refuse_repeated_names(pd.read_csv(path, sep=sep, header=None, nrows=1, encoding="utf-8", dtype=str), path)
    frame = pd.read_csv(path, sep=sep, decimal=decimal, encoding="utf-8", nrows=nrows)
    _check_separator(frame.columns, path, sep)
    return frame


def _refuse_repeated_names(header, path: Path) -> None:
    """A header that names a column twice: pandas would rename the second (``ant`` -> ``ant.1``), a class
    that does not exist."""
    names = [name for name in header.iloc[0].tolist() if isinstance(name, str)] if len(header) else []
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise CalibInputError(
            f"{path}: its header names {', '.join(map(repr, repeated))} more than once; give each column its own "
            f"name (read as it is, the second would be a class {repeated[0] + '.1'!r})"
        )


def _check_separator(columns, path: Path, sep: str) -> None:
    """A one-column header that holds another separator is a table read with the wrong one."""
    if len(columns) != 1:
        return
    header = str(columns[0])
    for other, shown in _SEPARATORS.items():
        if other != sep and other in header:
            flag = "--sep $'\\t'" if other == "\t" else f"--sep '{other}'"
            raise CalibInputError(
                f"{path}: its header {_short(header)} is one column holding {shown}: the columns seem separated "
                f"by {shown}, not {sep!r}; pass sep={other!r}",
                cli_message=f"{path}: its header {_short(header)} is one column holding {shown}: the columns seem "
                f"separated by {shown}, not {sep!r}; pass {flag}"
                + (" (and --decimal , if its decimals are written with commas)" if other == ";" else ""),
            )


def check_decimals(values, column, path: Path) -> None:
    """Refuse a column of text whose cells are numbers written with a decimal comma ("0,25")."""
    text = values.dropna().astype(str)
    if text.size and text.str.match(_DECIMAL_COMMA).mean() > 0.5:
        example = text[text.str.match(_DECIMAL_COMMA)].iloc[0]
        raise CalibInputError(
            f"{path}: column {column!r} holds numbers written with a decimal comma ({example!r}); pass decimal=','",
            cli_message=f"{path}: column {column!r} holds numbers written with a decimal comma ({example!r}); "
            "pass --decimal ,",
        )


def is_decimal_comma(cell) -> bool:
    """Whether one cell is a number written with a decimal comma.

    Examples
    --------
    >>> is_decimal_comma("0,25"), is_decimal_comma("0.25"), is_decimal_comma("a,b")
    (True, False, False)
    """
    return isinstance(cell, str) and bool(_DECIMAL_COMMA.match(cell))


def read_binary_table(source, fmt: str):
    """A Parquet or Feather / Arrow IPC table as a DataFrame (``source``: a path or an in-memory stream)."""
    if fmt == "feather":
        import pyarrow.feather as feather

        return feather.read_table(source).to_pandas()
    return _read_parquet(source)


def _read_parquet(source):
    """A Parquet table as a DataFrame: a table of numbers only is read batch by batch into one array per
    column (no whole Arrow table beside the arrays); other tables (e.g. with text labels, or an index
    that pandas stored as a column and restores as the index) are converted whole, as pandas reads them."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    with pq.ParquetFile(source) as parquet:
        schema = parquet.schema_arrow
        fields = list(schema)
        stored_index = any(isinstance(c, str) for c in (schema.pandas_metadata or {}).get("index_columns", []))
        if stored_index or not all(pa.types.is_integer(f.type) or pa.types.is_floating(f.type) for f in fields):
            return parquet.read().to_pandas()
        columns = {f.name: np.empty(parquet.metadata.num_rows, dtype=f.type.to_pandas_dtype()) for f in fields}
        start = 0
        for batch in parquet.iter_batches(batch_size=1 << 16, use_threads=False):
            if any(column.null_count for column in batch.columns):  # missing cells: as pandas types them
                return parquet.read().to_pandas()
            for name, column in zip(batch.schema.names, batch.columns, strict=True):
                columns[name][start : start + len(batch)] = column.to_numpy()
            start += len(batch)
    return pd.DataFrame(columns, copy=False)


def _short(text: str) -> str:
    return repr(text) if len(text) <= 60 else repr(text[:57] + "...")
