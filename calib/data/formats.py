"""Which format a posteriors file is in, and reading a table of it as people export them.

A file's format comes from its suffix or is named (``format=``, ``--format``): ``csv`` and ``tsv``
text, optionally compressed as pandas reads them (``.csv.gz``, ``.tsv.bz2``, ``.csv.zip``,
``.csv.xz``, ``.csv.zst``), ``parquet``, ``feather`` (Arrow IPC: ``.feather``, ``.arrow``,
``.ipc``), numpy's ``npz`` and ``npy``, and ``excel`` workbooks (``.xlsx``: the first sheet, read
with openpyxl, the optional extra ``excel``: ``pip install -e ".[excel]"``). A named pipe
(``mkfifo``, or a shell's ``<(...)``) is read as a stream (a text table's whole stream in memory
first); a pipe without a suffix needs its format named.

Text tables: the separator is ``,`` for csv and a tab for tsv unless given (``sep=``, ``--sep``), and
decimals are written with a point unless told (``decimal=","``, ``--decimal ,``). A first line
``sep=;`` (which Excel writes, and reads as the separator's name) names the separator when none is
given and is skipped either way. A file whose header holds another separator, or whose number
columns hold decimal commas, is refused with the option that reads it, never read as something else.
Columns at the end of the header with no name and no value (the trailing separators ``,,`` a
spreadsheet leaves) are dropped, with a :class:`~calib.validation.CalibInputWarning` naming them.

pandas and pyarrow are imported inside the readers of the formats that need them: .npy and .npz files load
neither.
"""

from __future__ import annotations

import io
import re
import stat
import warnings
import zipfile
from pathlib import Path

import numpy as np

from calib.validation import CalibInputError, CalibInputWarning, MissingFileError

FORMATS = ("csv", "tsv", "parquet", "feather", "npz", "npy", "excel")
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
    ".xlsx": "excel",
    ".xlsm": "excel",
}
# The compressions pandas decompresses by suffix (pandas.read_csv's compression="infer").
COMPRESSIONS = (".gz", ".bz2", ".zip", ".xz", ".zst", ".tar")
# pandas.read_csv's names of those compressions, for a stream it cannot infer one from.
_COMPRESSION_NAMES = dict(zip(COMPRESSIONS, ("gzip", "bz2", "zip", "xz", "zstd", "tar"), strict=True))
# The first line Excel writes to name a text table's separator ("sep=;"), and reads as such.
_SEP_LINE = re.compile(r"^\ufeff?sep=(.+?)\s*$")
# The name pandas gives a header cell left empty ("a,b,,": "Unnamed: 2").
_UNNAMED_COLUMN = re.compile(r"^Unnamed: \d+$")
# How to install the reader of .xlsx files (what calib's [excel] extra installs).
EXCEL_EXTRA = "pip install 'openpyxl>=3.1' (calib's [excel] extra)"
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
    known = ".csv, .tsv (either compressed: .gz, .bz2, .zip, .xz, .zst), .parquet, .feather / .arrow, .npz, .npy, .xlsx"
    if inner in (".xls", ".ods", ".numbers"):
        raise CalibInputError(
            f"{path}: {inner} workbooks are not read; save the sheet as .xlsx (Excel Workbook) or as CSV (CSV UTF-8)"
        )
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
    """A csv / tsv table as a DataFrame, read with ``sep`` (default: the one a first line ``sep=X`` names,
    else ``,`` / tab) and ``decimal`` (its first ``nrows`` rows when given).

    A first line ``sep=X`` is skipped. A header that is one column holding another separator, and number
    columns written with decimal commas, are refused with the option that reads them
    (:func:`check_decimals` for the latter); unnamed empty columns at the end are dropped with a warning.
    A pipe is read into memory first (its first line decides how the rest is read).
    """
    import pandas as pd

    source = path if stat.S_ISREG(path.stat().st_mode) else seekable_source(path)
    sep, skip = text_options(source, fmt, sep, compression=compression_of(path))
    check_separators(sep, decimal)

    def read(**options):
        if isinstance(source, io.BytesIO):
            source.seek(0)
        # skipinitialspace: "no, yes, label" (a space after each separator) names "yes", not " yes".
        options = {"sep": sep, "encoding": "utf-8", "skiprows": skip, "compression": compression_of(path),
                   "skipinitialspace": True} | options  # fmt: skip
        return pd.read_csv(source, **options)

    _check_separator(read(nrows=0).columns, path, sep)  # the header alone first
    _refuse_repeated_names(read(header=None, nrows=1, dtype=str), path)
    frame = read(decimal=decimal, nrows=nrows)
    _check_separator(frame.columns, path, sep)
    return drop_trailing_empty_columns(frame, path)


def compression_of(path) -> str | None:
    """The compression pandas reads ``path`` with, by its suffix ("gzip" for ``.csv.gz``); None if none."""
    suffix = Path(path).suffix.lower()
    return _COMPRESSION_NAMES.get(suffix)


def text_options(source, fmt: str, sep: str | None, *, compression: str | None = None) -> tuple[str, int]:
    """The separator of a text table and the lines to skip before its header: ``sep`` when given, else the
    separator a first line ``sep=X`` names (Excel's way of naming it), else ``,`` (csv) or a tab (tsv); and
    1 when the table starts with such a line, else 0. ``source``: a file, or a stream it rewinds.

    Examples
    --------
    >>> import io
    >>> text_options(io.BytesIO(b"sep=;\\na;b;label\\n"), "csv", None)
    (';', 1)
    >>> text_options(io.BytesIO(b"a,b,label\\n"), "csv", None), text_options(io.BytesIO(b"sep=;\\n"), "csv", ",")
    ((',', 0), (',', 1))
    """
    named = _sep_line(source, compression)
    if sep is None:
        sep = named if named is not None else ("\t" if fmt == "tsv" else ",")
    return sep, int(named is not None)


def _sep_line(source, compression: str | None) -> str | None:
    """The separator a first line ``sep=X`` names (``\\t`` read as a tab), or None without such a line."""
    import pandas as pd

    if isinstance(source, io.BytesIO):
        source.seek(0)
    try:  # the first line whole: split at a character text tables do not hold, and joined back
        first = pd.read_csv(
            source, sep="\x1f", header=None, nrows=1, dtype=str, quoting=3, keep_default_na=False,
            encoding="utf-8", compression=compression, skip_blank_lines=False,
        )  # fmt: skip
    except pd.errors.EmptyDataError:
        return None
    finally:
        if isinstance(source, io.BytesIO):
            source.seek(0)
    match = _SEP_LINE.match("\x1f".join(first.iloc[0].tolist())) if len(first) else None
    if match is None:
        return None
    return "\t" if match.group(1) in ("\\t", "\t") else match.group(1)


def drop_trailing_empty_columns(frame, path):
    """``frame`` without the columns at its end that have no name in the header (pandas calls them
    ``Unnamed: 3``) and no value in any row (the trailing separators a spreadsheet writes: ``a,b,label,,``),
    with a :class:`~calib.validation.CalibInputWarning` naming the file and the columns."""
    columns = list(frame.columns)
    end = len(columns)
    while end > 1 and isinstance(columns[end - 1], str) and _UNNAMED_COLUMN.match(columns[end - 1]):
        if not frame[columns[end - 1]].isna().all():
            break
        end -= 1
    if end == len(columns):
        return frame
    dropped = columns[end:]
    warnings.warn(
        f"{path}: dropped {len(dropped)} empty column{'s' * (len(dropped) > 1)} with no name at the end of the "
        f"table ({', '.join(map(repr, dropped))}: the trailing separators a spreadsheet leaves)",
        CalibInputWarning,
        stacklevel=3,
    )
    return frame.iloc[:, :end]


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


def check_separators(sep, decimal) -> None:
    """Refuse a column separator that is not a non-empty string (None: found from the file) or a decimal mark
    that is not one character, naming both. ``decimal`` may equal ``sep``: a comma-separated file's decimal
    commas are then in quoted cells ("0,65").

    Examples
    --------
    >>> check_separators(";", ",")
    >>> check_separators("", ".")
    Traceback (most recent call last):
    ...
    calib.validation.CalibInputError: sep must be a non-empty string and decimal one character; got sep='', decimal='.'
    """
    if (sep is not None and (not isinstance(sep, str) or not sep)) or not isinstance(decimal, str) or len(decimal) != 1:
        raise CalibInputError(
            f"sep must be a non-empty string and decimal one character; got sep={sep!r}, decimal={decimal!r}",
            cli_message=f"--sep must be a non-empty string and --decimal one character; got --sep {sep!r}, "
            f"--decimal {decimal!r}",
        )


def row_place(row: int, path: Path) -> str:
    """Where the data row ``row`` (counting from 0) of the file ``path`` is, as a user finds it: a CSV or TSV
    file's line (after its header), else the row counted from 0.

    Examples
    --------
    >>> row_place(0, Path("scores.csv")), row_place(3, Path("scores.parquet"))
    ('line 2', 'row 3 (counting from 0)')
    """
    return f"line {row + 2}" if path.suffix.lower() in (".csv", ".tsv") else f"row {row} (counting from 0)"


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


def read_binary_table(source, fmt: str, path=None):
    """A Parquet, Feather / Arrow IPC or Excel table as a DataFrame (``source``: a path or an in-memory stream;
    ``path``: the file named in messages, ``source`` by default)."""
    if fmt == "excel":
        return read_excel_table(source, source if path is None else path)
    if fmt == "feather":
        import pyarrow.feather as feather

        return feather.read_table(source).to_pandas()
    return _read_parquet(source)


def read_excel_table(source, path):
    """The first sheet of an Excel workbook (``.xlsx``) as a DataFrame, its first row the header; a workbook
    of several sheets is read from its first, with a :class:`~calib.validation.CalibInputWarning` naming it.
    Unnamed empty columns at the end are dropped as for a text table. Needs openpyxl (the ``excel`` extra);
    without it, a CalibInputError says how to install it or to save the sheet as CSV."""
    import pandas as pd

    try:
        import openpyxl  # noqa: F401  (pandas reads .xlsx with it)
    except ImportError:
        raise CalibInputError(
            f"{path}: reading an Excel workbook needs openpyxl, which is not installed: {EXCEL_EXTRA}, or save "
            "the sheet as CSV (File > Save As > CSV UTF-8) and read that"
        ) from None
    try:
        with pd.ExcelFile(source, engine="openpyxl") as book:
            sheets = book.sheet_names
            header = pd.read_excel(book, sheet_name=sheets[0], header=None, nrows=1, dtype=str)
            frame = pd.read_excel(book, sheet_name=sheets[0])
    except (zipfile.BadZipFile, KeyError, ValueError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CalibInputError(
            f"{path} is not a readable Excel workbook ({first}); save it again as .xlsx, or as CSV (CSV UTF-8)"
        ) from exc
    if len(sheets) > 1:
        warnings.warn(
            f"{path}: read its first sheet, {sheets[0]!r}, of {len(sheets)} ({', '.join(map(repr, sheets))}); "
            "to read another, save it as a workbook of its own or as CSV",
            CalibInputWarning,
            stacklevel=3,
        )
    _refuse_repeated_names(header, path)
    return drop_trailing_empty_columns(frame, path)


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
