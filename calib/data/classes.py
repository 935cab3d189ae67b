"""Which columns of a table score which class, and which class each label names: by name wherever
names exist, never silently by position.

Class order. Columns named with ``class_columns`` (``--class-columns``) keep the order given;
patterns ("prob_*") and the default (every numeric column) take *numbered* columns (one integer in
every name, with the same text around it: ``c0, c1, c10``, ``prob_1 .. prob_K``, ``0.0, 1.0``, as
pivots and JSON exports write them, often in lexicographic order) in the order of their numbers, and
other columns in file order.

Labels. Text labels are class names (column names). Numeric labels and numbered columns: label v is
the class whose column carries v, wherever that column stands; labels that are not among the
numbers are refused with the fix (``label_values="index"`` or ``"1-based"`` to read them as
positions in number order). Numeric labels and other names: label k is the k-th class column of the
order above, and a note says so, naming each class's column. ``label_values`` can always say
explicitly: ``"index"``, ``"names"``, ``"1-based"``, or a mapping from label to column.

pandas is imported inside the functions that read table columns: matching .npy / .npz inputs does not load it.
"""

from __future__ import annotations

import re
import warnings
from fnmatch import fnmatch
from pathlib import Path

import numpy as np

from calib.data.formats import check_decimals, is_decimal_comma
from calib.validation import CalibInputError, CalibInputWarning, as_class_indices

LABEL_VALUES = ("auto", "index", "names", "1-based")
_GLOB = re.compile(r"[*?\[]")
_DIGITS = re.compile(r"\d+$")


def class_numbers(names) -> list[int] | None:
    """The integers that numbered column ``names`` carry (see the module docstring), else None.

    Examples
    --------
    >>> class_numbers(["c0", "c1", "c10", "c2"]), class_numbers(["prob_1_cal", "prob_2_cal"])
    ([0, 1, 10, 2], [1, 2])
    >>> class_numbers(["0.0", "1.0"]), class_numbers(["cat", "dog"]), class_numbers(["c1", "c01"])
    ([0, 1], None, None)
    """
    names = [str(n) for n in names]
    if len(names) < 2:
        return None
    prefix = _DIGITS.sub("", _common_prefix(names))
    rest = [n[len(prefix) :] for n in names]
    suffix = _common_prefix([r[::-1] for r in rest])[::-1]
    suffix = suffix[len(suffix) - len(suffix.lstrip("0123456789")) :] if suffix else ""
    middles = [r[: len(r) - len(suffix)] for r in rest]
    if not all(m.isdigit() for m in middles):
        return None
    numbers = [int(m) for m in middles]
    return numbers if len(set(numbers)) == len(numbers) else None


def _common_prefix(texts: list[str]) -> str:
    first, last = min(texts), max(texts)
    n = 0
    while n < min(len(first), len(last)) and first[n] == last[n]:
        n += 1
    return first[:n]


def pick_class_columns(frame, path: Path, label_column, class_columns, exclude=()) -> list:
    """The score columns in class order (module docstring): ``class_columns`` (names or fnmatch
    patterns) or every numeric column but the labels and ``exclude`` (other columns are left out, with
    a warning)."""
    import pandas as pd

    others = [c for c in frame.columns if c != label_column and c not in exclude]
    if class_columns is None:
        columns = [c for c in others if pd.api.types.is_numeric_dtype(frame[c])]
        skipped = [c for c in others if c not in columns]
        for column in skipped:
            refuse_text_in_numbers(frame[column], column, path)
        if skipped and columns:
            warnings.warn(f"{path}: left out the non-numeric columns {skipped}", CalibInputWarning, stacklevel=3)
        elif skipped:
            raise CalibInputError(f"{path}: no score column is numeric ({skipped}); scores must be numbers")
        return _in_number_order(columns)
    patterns = [class_columns] if isinstance(class_columns, str) else list(class_columns)
    unmatched = [p for p in patterns if not any(_matches(c, p) for c in others)]
    if unmatched:
        raise CalibInputError(
            f"{path}: no column matches {unmatched}; its columns are {list(frame.columns)}",
            cli_message=f"{path}: --class-columns {' '.join(map(str, unmatched))} matches no column; "
            f"its columns are {list(frame.columns)}",
        )
    columns = []
    for pattern in patterns:
        matched = [c for c in others if _matches(c, pattern) and c not in columns]
        columns += _in_number_order(matched) if _GLOB.search(str(pattern)) else matched
    non_numeric = [c for c in columns if not pd.api.types.is_numeric_dtype(frame[c])]
    for column in non_numeric:
        refuse_text_in_numbers(frame[column], column, path)
    if non_numeric:
        raise CalibInputError(f"{path}: class columns {non_numeric} are not numeric; they cannot hold scores")
    return columns


def _matches(column, pattern) -> bool:
    return str(column) == str(pattern) or (bool(_GLOB.search(str(pattern))) and fnmatch(str(column), str(pattern)))


def _in_number_order(columns: list) -> list:
    numbers = class_numbers(columns)
    return columns if numbers is None else [c for _, c in sorted(zip(numbers, columns, strict=True))]


def refuse_text_in_numbers(values, column, path: Path) -> None:
    """Stop on a column of numbers with some cells that are not numbers (a typo, a decimal comma): it
    holds scores, and leaving it out would change the problem instead of reporting the cell."""
    import pandas as pd

    check_decimals(values, column, path)
    parsed = pd.to_numeric(values, errors="coerce")
    bad = parsed.isna() & values.notna()
    if parsed.notna().any() and bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        where = f"line {row + 2}" if path.suffix.lower() in (".csv", ".tsv") else f"row {row} (counting from 0)"
        cell = values.iloc[row]
        fix = "pass decimal=',' (--decimal ,)" if is_decimal_comma(cell) else "correct that cell"
        raise CalibInputError(
            f"{path}: column {column!r} holds numbers but at {where} it holds {cell!r}, which is not a number; {fix}"
        )


def label_indices(labels, columns: list, label_values, positive_label, path: Path) -> np.ndarray:
    """Labels (a pandas Series) as class indices into ``columns`` (in class order), as the module
    docstring says."""
    import pandas as pd

    _refuse_missing(labels, path)
    names = [str(c) for c in columns]
    if positive_label is not None:
        return _positive(labels, names, positive_label, path)
    if isinstance(label_values, dict):
        mapping = {str(k): names.index(str(v)) if str(v) in names else v for k, v in label_values.items()}
        bad = [v for v in mapping.values() if not isinstance(v, int) or not 0 <= v < len(names)]
        if bad:
            raise CalibInputError(f"{path}: label_values maps to {bad}, which are not class columns {names}")
        return _mapped(labels.astype(str), mapping, path, "label_values")
    if label_values not in LABEL_VALUES:
        raise CalibInputError(
            f"label_values must be one of {LABEL_VALUES} or a mapping of label to class column; got {label_values!r}",
            cli_message=f"--label-values must be one of {', '.join(LABEL_VALUES)} or LABEL=COLUMN pairs; "
            f"got {label_values!r}",
        )
    numbers = class_numbers(names)
    numeric = pd.api.types.is_numeric_dtype(labels)
    if label_values == "names" or (label_values == "auto" and not numeric):
        text = labels.astype(str)
        if label_values == "auto" and numbers is not None and not set(text.unique()) <= set(names):
            as_numbers = pd.to_numeric(labels, errors="coerce")
            if as_numbers.notna().all():  # text that holds the columns' numbers ("3" for "class_3")
                return _by_number(as_class_indices(as_numbers.to_numpy(), f"labels of {path}"), numbers, names, path)
        return _mapped(text, {n: i for i, n in enumerate(names)}, path, "names")
    values = as_class_indices(labels.to_numpy(), f"labels of {path}")
    offset = 1 if label_values == "1-based" else 0
    if numbers is not None and (label_values == "auto" or sorted(numbers) == list(range(offset, len(names) + offset))):
        return _by_number(values, numbers, names, path)
    if label_values == "auto":
        _refuse_one_based_guess(values, names, path)
    indices = values - offset if offset else values
    _check_positions(indices, values, names, path)
    if label_values == "auto":  # numbers onto named columns: by position, which the user should see
        pairs = ", ".join(f"{k}: {n}" for k, n in enumerate(names[:6])) + (", ..." if len(names) > 6 else "")
        said = f"{path}: labels are numbers and the class columns are names: label k is read as the k-th class column"
        fix = "if the labels encode the classes in another order, give the columns in that order"
        warnings.warn(
            CalibInputWarning(
                f"{said} ({pairs}); {fix} (class_columns=) or map them (label_values={{label: column}})",
                cli_message=f"{said} ({pairs}); {fix} (--class-columns) or map them (--label-values LABEL=COLUMN)",
            ),
            stacklevel=3,
        )
    return indices


def _refuse_missing(labels, path: Path) -> None:
    missing = labels.isna().to_numpy()
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        where = f"line {row + 2}" if path.suffix.lower() in (".csv", ".tsv") else f"row {row} (counting from 0)"
        raise CalibInputError(
            f"{path}: {int(missing.sum())} labels are missing (first at {where}); drop the rows without a label "
            "or fill them in (a missing label cannot be scored)"
        )


def _positive(labels, names: list[str], positive_label, path: Path) -> np.ndarray:
    if len(names) > 2:
        raise CalibInputError(
            f"{path}: positive_label is for binary problems; this table has {len(names)} class columns",
            cli_message=f"{path}: --positive-label is for binary problems; this table has {len(names)} class columns",
        )
    positive = (labels.astype(str) == str(positive_label)).to_numpy()
    if not positive.any():
        as_number = _number_or_none(positive_label)
        if as_number is not None and np.issubdtype(labels.dtype, np.number):
            positive = (labels.to_numpy() == as_number).astype(bool)
    if not positive.any():
        shown = sorted(map(str, labels.unique()))[:5]
        raise CalibInputError(f"{path}: no label equals the positive label {positive_label!r}; the labels are {shown}")
    return positive.astype(np.int64)


def _number_or_none(text) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def _by_number(values: np.ndarray, numbers: list[int], names: list[str], path: Path) -> np.ndarray:
    """Each label's class: the one whose column carries the label's number."""
    order = np.argsort(numbers)
    ordered = np.asarray(numbers, dtype=np.int64)[order]
    at = np.clip(np.searchsorted(ordered, values), 0, len(ordered) - 1)
    unknown = ordered[at] != values
    if unknown.any():
        shown = np.unique(values[unknown])[:5].tolist()
        raise CalibInputError(
            f"{path}: labels {shown} are not among the numbers the class columns carry ({_listed(names)}): "
            "if a label is a position in the columns' number order, pass label_values='index' (from 0) or "
            "'1-based'",
            cli_message=f"{path}: labels {shown} are not among the numbers the class columns carry "
            f"({_listed(names)}): if a label is a position in the columns' number order, pass --label-values "
            "index (from 0) or --label-values 1-based",
        )
    return order[at].astype(np.int64)


def _refuse_one_based_guess(values: np.ndarray, names: list[str], path: Path) -> None:
    if values.size and values.min() == 1 and values.max() == len(names):
        raise CalibInputError(
            f"{path}: labels run from 1 to {len(names)} for {len(names)} classes; if they count from 1, "
            "pass label_values='1-based'",
            cli_message=f"{path}: labels run from 1 to {len(names)} for {len(names)} classes; if they count "
            "from 1, pass --label-values 1-based",
        )


def _check_positions(indices: np.ndarray, values: np.ndarray, names: list[str], path: Path) -> None:
    """Positions outside [0, K), with the fix for the usual encodings (-1 / +1, other codes)."""
    outside = (indices < 0) | (indices >= len(names))
    if not outside.any():
        return
    distinct = np.unique(values)
    shown = distinct[:5].tolist()
    if len(names) == 2 and distinct.size == 2:
        fix = (
            f"for a binary problem whose labels are {shown[0]} / {shown[1]}, name the positive class's label: "
            f"positive_label={shown[1]} if column {names[1]!r} scores it"
        )
        cli = (
            f"for a binary problem whose labels are {shown[0]} / {shown[1]}, name the positive class's label: "
            f"--positive-label {shown[1]} if column {names[1]!r} scores it"
        )
    else:
        fix = "map each label to its class column with label_values={label: column}"
        cli = (
            "map each label to its class column with --label-values LABEL=COLUMN ... (write labels that start "
            "with '-' as --label-values=-1=neg,1=pos)"
        )
    problem = f"{path}: labels hold {shown} but class indices run from 0 to {len(names) - 1} ({_listed(names)})"
    raise CalibInputError(f"{problem}; {fix}", cli_message=f"{problem}; {cli}")


def _mapped(text, mapping: dict, path: Path, how: str) -> np.ndarray:
    unknown = sorted(set(text.unique()) - set(mapping))
    if unknown:
        raise CalibInputError(
            f"{path}: labels {unknown[:5]} are not among {sorted(mapping)} ({how}); fix the labels or "
            "map them with label_values={label: class column}",
            cli_message=f"{path}: labels {unknown[:5]} are not among {sorted(mapping)} ({how}); fix the labels "
            "or map them with --label-values LABEL=COLUMN ...",
        )
    return text.map(mapping).to_numpy().astype(np.int64)


def _listed(names: list[str]) -> str:
    return ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")


def table_inputs(scores, labels):
    """``scores`` and ``labels`` of a Python call, with a pandas DataFrame's columns read as class names.

    When ``scores`` is a DataFrame, its columns name the classes, as a table's columns do for the command
    (module docstring): text labels are matched to the column names, numbers to columns named by numbers
    wherever they stand, and other numbers are read as positions, with a warning naming each class's
    column. Labels with an index (a Series) must have the DataFrame's index, so rows cannot pair up
    wrongly. Anything else is returned unchanged. O(N K) time.

    Parameters
    ----------
    scores : array_like or pandas.DataFrame of shape (N, K)
        The scores; a DataFrame's column names are its classes.
    labels : array_like or pandas.Series of shape (N,), optional
        The true classes: indices, or names of the DataFrame's columns.

    Returns
    -------
    tuple
        (scores as an array, labels as class indices) for a DataFrame; the inputs otherwise.

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"dog": [0.2, 0.7], "cat": [0.8, 0.3]})
    >>> table_inputs(frame, ["cat", "dog"])[1].tolist()
    [1, 0]
    """
    columns = getattr(scores, "columns", None)
    if columns is None or labels is None:
        return scores, labels
    import pandas as pd

    label_index = labels.index if isinstance(labels, pd.Series) else None  # a list's index is a method
    if label_index is not None and not label_index.equals(scores.index):
        raise CalibInputError(
            "labels: its index differs from that of scores, so rows would pair up by position; align them first "
            "(labels.loc[scores.index]) or pass labels.to_numpy() if the rows are in the same order"
        )
    series = pd.Series(np.asarray(labels)) if label_index is None else labels.reset_index(drop=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CalibInputWarning)
        indices = label_indices(series, list(columns), "auto", None, Path("labels"))
    if any("labels are numbers" in str(w.message) for w in caught):
        names = [str(c) for c in columns]
        pairs = ", ".join(f"{k}: {n}" for k, n in enumerate(names[:6])) + (", ..." if len(names) > 6 else "")
        warnings.warn(
            f"labels are numbers and the columns of scores are names: label k is read as the k-th column ({pairs}); "
            "if the labels encode the classes in another order, reorder the columns (scores[[...]]) or give the "
            "labels as class names",
            CalibInputWarning,
            stacklevel=3,
        )
    return scores.to_numpy(), indices
