"""The rows' sample weights as a user gives them: a column of the table (``weight_column``, ``--weights
COLUMN``) or a file of their own (``weights_file``, ``--weights-file PATH``), checked by the one rule for
weights (:func:`calib.validation.as_sample_weights`: numbers >= 0, finite, not all 0) and refused in one
line naming the column or file and the first bad row as the user finds it (a CSV's line).

A weights file holds one weight per row of the scores, in their order, and is one of:

* a ``.npy`` array of shape (N,) of numbers (``numpy.save(path, weights)``), memory-mapped;
* a text file (``.csv``, ``.tsv``, ``.txt``, or any other suffix; compressed ``.gz`` / ``.bz2`` / ``.zip`` /
  ``.xz`` / ``.zst`` too) of one number per line, with ``.`` as the decimal mark, optionally under one header
  line that is not a number (``weight``); a blank line (but at the end) or a line of two cells is refused.

A text file is held whole as float64 (8 bytes per row: 80 MB for 10^7 rows; a cluster's worker receives a
copy); a ``.npy`` file is memory-mapped and read in the slices the chunks need, so reading in chunks holds
one chunk's weights at a time (a worker maps the file at the same path).

pandas is imported inside the functions that read text.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from calib.validation import CalibInputError, all_zero_weights, as_sample_weights

# Suffixes read as a numpy array; any other suffix is read as text.
NPY_SUFFIXES = (".npy",)
# Weights of a .npy file read at once when looking for one that is not 0 (2 MiB).
SCAN_ROWS = 1 << 18


def column_weights(values, column, path: Path, place: Callable[[int], str], *, start: int = 0, whole: bool = True):
    """The weights column ``column`` of ``path`` (a pandas Series: the whole column, or a chunk of it whose
    first row is row ``start`` of the file) as float64 weights, refused in one line naming the column and
    the first bad row (``place(row)``: where a user finds it, e.g. a CSV's line).

    Parameters
    ----------
    values : pandas.Series
        The column's cells.
    column : str
        Its name, said in errors.
    path : Path
        The file, said in errors.
    place : callable
        Maps a row of the file (counting from 0) to where a user finds it.
    start : int, default 0
        The file's row of ``values``' first cell.
    whole : bool, default True
        ``values`` is the whole column, so weights all 0 are refused; a chunk's weights may all be 0.

    Returns
    -------
    ndarray of shape (len(values),)

    Examples
    --------
    >>> import pandas as pd
    >>> from calib.data.formats import row_place
    >>> column_weights(pd.Series([1, 10]), "w", Path("s.csv"), lambda r: row_place(r, Path("s.csv"))).tolist()
    [1.0, 10.0]
    >>> column_weights(pd.Series([1, None]), "w", Path("s.csv"), lambda r: row_place(r, Path("s.csv")))
    Traceback (most recent call last):
    ...
    calib.validation.CalibInputError: s.csv: the weights of column 'w' (weight_column=) are missing at line 3; ...
    """
    import pandas as pd

    from calib.data.formats import check_decimals

    python, cli = column_words(path, column)
    at = lambda i: place(start + i)  # noqa: E731 - the rows of the chunk, as rows of the file
    missing = values.isna().to_numpy()
    if missing.any():
        problem = f"are missing at {at(int(np.flatnonzero(missing)[0]))}; fill it in (a weight of 0 leaves the row out)"
        raise CalibInputError(f"{python} {problem}", cli_message=f"{cli} {problem}")
    if not (pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values)):
        # Text cells are read as the numbers they write, so that a chunk of a text column whose cells are all
        # numbers reads as the whole column does.
        check_decimals(values, column, path)  # a decimal comma says --decimal ,
        numbers = pd.to_numeric(values, errors="coerce")
        text = numbers.isna().to_numpy()
        if text.any():
            row = int(np.flatnonzero(text)[0])
            problem = f"hold {values.iloc[row]!r} at {at(row)}, not a number; a weight is a number >= 0"
            raise CalibInputError(f"{python} {problem}", cli_message=f"{cli} {problem}")
        values = numbers
    return checked(values.to_numpy(), python, cli, at, whole=whole)


def column_words(path: Path, column) -> tuple[str, str]:
    """What errors call the weights of column ``column`` of ``path``: (in Python's words, in the command's)."""
    return f"{path}: the weights of column {column!r} (weight_column=)", f"{path}: the weights of --weights {column}"


def checked(values: np.ndarray, python: str, cli: str, at: Callable[[int], str], *, whole: bool) -> np.ndarray:
    """``values`` checked by :func:`calib.validation.as_sample_weights`, its refusal naming them ``python`` (the
    Python wording) or ``cli`` (the command's) and the row ``at(i)``; a part (not ``whole``) may be all 0.

    Examples
    --------
    >>> checked(np.array([0, 0]), "w", "--weights w", str, whole=False).tolist()
    [0.0, 0.0]
    """
    values = np.asarray(values)
    try:
        return as_sample_weights(values, values.shape[0] if values.ndim else 0, name=python, place=at, whole=whole)
    except CalibInputError as exc:
        raise CalibInputError(str(exc), cli_message=str(exc).replace(python, cli, 1)) from None


def all_zero(python: str, cli: str) -> CalibInputError:
    """The refusal of weights that are all 0, read in parts (each part may be all 0, not every one)."""
    return all_zero_weights(python, cli)


def refuse_two_weights(weight_column: str | None, weights_file) -> None:
    """Refuse weights given twice, as a column (``weight_column``) and as a file (``weights_file``).

    Examples
    --------
    >>> refuse_two_weights("w", None)
    """
    if weight_column is not None and weights_file is not None:
        raise CalibInputError(
            f"weight_column={weight_column!r} and weights_file={str(weights_file)!r} both give the rows' weights; "
            "give one",
            cli_message=f"--weights {weight_column} and --weights-file {weights_file} both give the rows' weights; "
            "give one",
        )


class WeightsFile:
    """A weights file (module docstring) of ``n_rows`` weights, checked when opened; :meth:`rows` gives a slice.

    A ``.npy`` file is memory-mapped and each slice checked when read (zeros everywhere are refused when
    opened, by a pass over the file in slices); a text file is read whole and checked once.

    Parameters
    ----------
    path : str or Path
        The file.
    n_rows : int or None
        The rows of the scores, which it must match (None: unknown until the scores are read: a CSV
        read in chunks; :meth:`check_length` then checks it).

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "w.csv")
    >>> _ = open(path, "w").write("weight\\n1\\n10\\n2.5\\n")
    >>> WeightsFile(path, 3).rows(1, 3).tolist()
    [10.0, 2.5]
    """

    def __init__(self, path, n_rows: int | None):
        from calib.data.formats import require_readable

        self.path = require_readable(path, "weights file")
        self.python = f"the weights of {self.path} (weights_file=)"
        self.cli = f"the weights of --weights-file {self.path}"
        self._npy = self.path.suffix.lower() in NPY_SUFFIXES
        if self._npy:
            self._array, self._header = self._mapped(), 0
            self.n_rows = int(self._array.shape[0])
            self._check_length(n_rows)
            self._refuse_all_zero()
        else:
            values, self._header = self._text()
            self.n_rows = len(values)
            self._check_length(n_rows)
            self._array = checked(values, self.python, self.cli, self.place, whole=True)

    def __getstate__(self) -> dict:
        """Pickled (for a cluster's worker, with a partition's reader) without the memory-mapped array, which
        would travel whole: the worker maps the file again, at the same path as the data set's files."""
        state = self.__dict__.copy()
        if self._npy:
            state["_array"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if self._npy:
            self._array = self._mapped()

    def place(self, row: int) -> str:
        """Where weight ``row`` (counting from 0) is in the file: a text file's line, an array's index."""
        if self._npy:
            return f"index {row}"
        return f"line {row + 1 + self._header}"

    def rows(self, start: int, stop: int) -> np.ndarray:
        """The checked weights of rows ``start`` to ``stop`` (exclusive) as float64; rows past the file's end are
        refused (the scores have more rows than the file has weights)."""
        if stop > self.n_rows:
            problem = f"are {self.n_rows} for more rows of scores; give one weight per row, in their order"
            raise CalibInputError(f"{self.python} {problem}", cli_message=f"{self.cli} {problem}")
        if not self._npy:  # checked whole when read
            return self._array[start:stop]
        part = np.asarray(self._array[start:stop])
        return checked(part, self.python, self.cli, lambda i: self.place(start + i), whole=False)

    def check_length(self, n_rows: int) -> None:
        """Refuse a file that does not hold one weight per row of ``n_rows`` rows, naming both counts."""
        if n_rows != self.n_rows:
            problem = f"are {self.n_rows} for {n_rows} rows of scores; give one weight per row, in their order"
            raise CalibInputError(f"{self.python} {problem}", cli_message=f"{self.cli} {problem}")

    def _check_length(self, n_rows: int | None) -> None:
        if n_rows is not None:
            self.check_length(n_rows)

    def _mapped(self) -> np.ndarray:
        try:
            array = np.load(self.path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError, EOFError) as exc:
            problem = f"are not a readable .npy array ({exc}); save them with numpy.save(path, weights)"
            raise CalibInputError(f"{self.python} {problem}", cli_message=f"{self.cli} {problem}") from None
        if array.ndim != 1 or array.dtype.kind not in "fiub":
            problem = f"are {array.dtype} values of shape {array.shape}; give one number per row, shape (N,)"
            raise CalibInputError(f"{self.python} {problem}", cli_message=f"{self.cli} {problem}")
        return array

    def _refuse_all_zero(self) -> None:
        for start in range(0, self.n_rows, SCAN_ROWS):
            if np.asarray(self._array[start : start + SCAN_ROWS]).any():
                return
        raise all_zero(self.python, self.cli)

    def _text(self) -> tuple[np.ndarray, int]:
        """The numbers of a text file of one per line, and 1 when its first line is a header, else 0."""
        import pandas as pd

        try:
            # One cell per line: a comma makes a second cell, refused below (a tab, a cell that is not a number).
            frame = pd.read_csv(self.path, header=None, dtype=str, sep=",", skip_blank_lines=False,
                                keep_default_na=False, encoding="utf-8")  # fmt: skip
        except pd.errors.EmptyDataError:
            frame = pd.DataFrame({0: []}, dtype=str)
        except (OSError, ValueError, UnicodeDecodeError, pd.errors.ParserError) as exc:
            problem = f"are not a text file of one number per line ({str(exc).splitlines()[0]})"
            raise CalibInputError(f"{self.python} {problem}", cli_message=f"{self.cli} {problem}") from None
        if frame.shape[1] != 1:
            problem = f"have {frame.shape[1]} cells in a line; give one weight per line"
            raise CalibInputError(f"{self.python} {problem}", cli_message=f"{self.cli} {problem}")
        cells = frame[0].str.strip()
        filled = np.flatnonzero((cells != "").to_numpy())
        cells = cells.iloc[: filled[-1] + 1 if filled.size else 0]  # blank lines at the end are no rows
        header = int(bool(len(cells)) and pd.isna(pd.to_numeric(cells.iloc[:1], errors="coerce")).iloc[0])
        cells = cells.iloc[header:]
        numbers = pd.to_numeric(cells, errors="coerce")
        bad = (numbers.isna() & (cells.str.lower() != "nan")).to_numpy()
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            problem = f"hold {cells.iloc[row]!r} at line {row + 1 + header}, not a number; a weight is a number >= 0"
            raise CalibInputError(f"{self.python} {problem}", cli_message=f"{self.cli} {problem}")
        return numbers.to_numpy(dtype=np.float64), header
