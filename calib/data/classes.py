"""What a table's columns and labels mean: which column scores which class, which class each label
names, and which class is positive, decided once (:func:`resolve_classes`) for every path that reads
a table (a whole file, its chunks, a Dask partition, a DataFrame or Arrow table in Python, the files of
``calibrate`` and ``compare``, a workflow's own sets).

Class columns. Columns named with ``class_columns`` (``--class-columns``) are the classes; patterns
("prob_*") and the default take *numbered* columns (one integer in every name, with the same text
around it: ``c0, c1, c10``, ``prob_1 .. prob_K``, ``0.0, 1.0``) in the order of their numbers. By
default every numeric column but the labels, ids and groups is a candidate, and three kinds of column
are left out, each named in a note: numeric columns outside the numbered family that the labels name
(``fold`` beside ``p0, p1`` with labels 0 / 1), columns beside the ``true`` / ``false`` columns that
boolean labels name, and, for text labels, numeric columns that no label names (``is_test`` beside
``cat, dog``); ``class_columns`` keeps them.

Labels. Text labels are class names (column names; ``true`` / ``false`` in any case for columns so
named). Numeric labels and numbered columns: label v is the class whose column carries v; labels that
are not among the numbers are refused with the fix (``label_values="index"`` or ``"1-based"``).
Booleans (a Parquet or pandas bool column, or ``true`` / ``false`` that pandas parsed) are the words
they stand for when the columns are so named, else the numbers 0 / 1; labels 0 / 1 name ``false`` /
``true`` columns by meaning. Numeric labels with other names are positions: label k is the k-th class
column, and a note names each class's column; positions that leave a column unreached (an id, a fold)
are refused, unless ``class_columns`` named the columns. Categories are read as their values.
``label_values`` can always say explicitly: ``"index"``, ``"names"``, ``"1-based"``, or a mapping from
label to column.

Class order. Once matched, classes are put in one order that depends on their names only, never on
how the file orders its columns: by the numbers numbered columns carry, ``false`` before ``true``,
else by name. For two classes the positive class comes second: the one ``positive_label`` names (as
a column name, or as a label names a class), else the later in that order (as scikit-learn's
``classes_[1]``); a ``positive_label`` that names no class is refused, never read as a position.

pandas is imported inside the functions that read table columns: matching .npy / .npz inputs does not load it.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path

import numpy as np

from calib.data.formats import check_decimals, is_decimal_comma, row_place
from calib.validation import CalibInputError, CalibInputWarning, as_class_indices

LABEL_VALUES = ("auto", "index", "names", "1-based")
_GLOB = re.compile(r"[*?\[]")
_DIGITS = re.compile(r"\d+$")
_NUMBERED = re.compile(r"^(\D*?)(-?\d+)(\D*)$")
_INTEGER = re.compile(r"-?\d+")
_BOOLEAN_WORDS = {"false": 0, "true": 1}


def class_numbers(names) -> list[int] | None:
    """The integers that numbered column ``names`` carry (see the module docstring), else None.

    Examples
    --------
    >>> class_numbers(["c0", "c1", "c10", "c2"]), class_numbers(["prob_1_cal", "prob_2_cal"])
    ([0, 1, 10, 2], [1, 2])
    >>> class_numbers(["0.0", "1.0"]), class_numbers(["cat", "dog"]), class_numbers(["c1", "c01"])
    ([0, 1], None, None)
    >>> class_numbers(["-1", "0", "1"]), class_numbers(["-1", "1"])  # scikit-learn's classes_ of -1 / +1 labels
    ([-1, 0, 1], [-1, 1])
    """
    names = [str(n) for n in names]
    if len(names) < 2:
        return None
    prefix = _DIGITS.sub("", _common_prefix(names))
    if prefix == "-":  # every name a negative number: the sign is the number's
        prefix = ""
    rest = [n[len(prefix) :] for n in names]
    suffix = _common_prefix([r[::-1] for r in rest])[::-1]
    suffix = suffix[len(suffix) - len(suffix.lstrip("0123456789")) :] if suffix else ""
    middles = [r[: len(r) - len(suffix)] for r in rest]
    if not all(_INTEGER.fullmatch(m) for m in middles):
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
        where = row_place(row, path)
        cell = values.iloc[row]
        fix = "pass decimal=',' (--decimal ,)" if is_decimal_comma(cell) else "correct that cell"
        raise CalibInputError(
            f"{path}: column {column!r} holds numbers but at {where} it holds {cell!r}, which is not a number; {fix}"
        )


@dataclass(frozen=True)
class ClassLayout:
    """What a table's columns and labels mean, as :func:`resolve_classes` decided it.

    ``columns`` are the score columns in class order, ``names`` the class names (for one score column:
    ``("not P", "P")``), ``positive`` the positive class of two (else None), ``notes`` what was decided
    by position or left out (CalibInputWarnings, each also warned), ``codes`` the class of each of the
    distinct labels ``distinct`` (a pandas Index; None without labels), and ``given_order`` the place of
    each class among the class columns as the table gives them (``class_columns``' order, numbered
    columns by number, else the file's order): what values given by position (priors, cost rows) follow."""

    columns: tuple
    names: tuple[str, ...]
    positive: str | None
    notes: tuple[CalibInputWarning, ...] = ()
    distinct: object = None
    codes: np.ndarray | None = field(default=None, repr=False)
    given_order: tuple[int, ...] = ()

    @property
    def one_column(self) -> bool:
        """A binary table whose one score column is the positive class's."""
        return len(self.columns) == 1

    def classes_of(self, labels) -> np.ndarray:
        """Class indices of ``labels`` (a pandas Series of the labels this layout was resolved on)."""
        at = self.distinct.get_indexer(_as_read(labels))
        if (at < 0).any():  # a label the layout was not resolved on: the caller's bug, not the file's
            raise CalibInputError(f"labels {sorted(map(str, set(labels[at < 0])))[:5]} were not seen on resolving")
        return self.codes[at]


def resolve_classes(
    frame,
    path: Path,
    *,
    labels=None,
    label_column=None,
    class_columns=None,
    label_values="auto",
    positive_label=None,
    exclude=(),
) -> ClassLayout:
    """Decide once which column of ``frame`` scores which class, which class each label names, the class
    order and the positive class (the module docstring gives the rules).

    Parameters
    ----------
    frame : pandas.DataFrame
        The table, or its first rows (its columns and their types are the table's).
    path : Path
        What the table is called in messages (a file, or the argument of a Python call).
    labels : pandas.Series, optional
        The table's labels, or their distinct values (the decision depends on the set of values only).
    label_column, class_columns, label_values, positive_label, exclude
        As for :class:`calib.data.table_options.TableOptions`; ``exclude``: columns that are neither scores nor labels
        (ids, groups).

    Returns
    -------
    ClassLayout

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"p1": [0.3], "p0": [0.7], "fold": [0]})
    >>> layout = resolve_classes(frame, Path("t.csv"), labels=pd.Series([0, 1]), positive_label="0")
    >>> layout.columns, layout.positive, layout.codes.tolist()
    (('p1', 'p0'), 'p0', [1, 0])
    """
    import pandas as pd

    candidates = pick_class_columns(frame, path, label_column, class_columns, exclude)
    notes: list[str] = []
    distinct = None
    if labels is not None:
        _refuse_missing(labels, path)
        distinct = pd.Index(pd.unique(_as_read(labels)))
        if class_columns is None and label_values == "auto" and len(candidates) > 2:
            candidates = _left_out(candidates, distinct, path, notes)
    if len(candidates) == 1:
        return _one_column(candidates[0], distinct, positive_label, path, notes)
    if positive_label is not None and len(candidates) > 2:
        raise CalibInputError(
            f"{path}: positive_label is for binary problems; this table has {len(candidates)} class columns",
            cli_message=f"{path}: --positive-label is for binary problems; this table has {len(candidates)} class "
            "columns",
        )
    names = [str(c) for c in candidates]
    codes = None
    if distinct is not None:
        named = class_columns is not None
        codes = _label_indices(pd.Series(distinct), names, label_values, path, notes, named, frame)
    order = canonical_order(names)
    if len(names) == 2:
        positive = order[-1]
        if positive_label is not None:
            positive = _positive_column(positive_label, names, distinct, codes, label_values, path, notes)
        order = [1 - positive, positive]
    inverse = np.argsort(order)
    columns = tuple(candidates[i] for i in order)
    return ClassLayout(
        columns=columns,
        names=tuple(names[i] for i in order),
        positive=names[order[-1]] if len(names) == 2 else None,
        notes=_warned(notes),
        distinct=distinct,
        codes=None if codes is None else inverse[codes].astype(np.int64),
        given_order=tuple(int(i) for i in order),
    )


def canonical_order(names) -> list[int]:
    """The order of classes that depends on their names only: by the numbers numbered names carry,
    ``false`` before ``true``, else by name.

    Examples
    --------
    >>> canonical_order(["c10", "c2"]), canonical_order(["True", "False"]), canonical_order(["dog", "cat"])
    ([1, 0], [1, 0], [1, 0])
    """
    names = [str(n) for n in names]
    numbers = class_numbers(names)
    words = _boolean_words(names)
    key = numbers if numbers is not None else words if words is not None else names
    return sorted(range(len(names)), key=key.__getitem__)


def _boolean_words(names: list[str]) -> list[int] | None:
    """0 / 1 for names that are the words false / true in any case, else None."""
    lowered = [n.lower() for n in names]
    return [_BOOLEAN_WORDS[n] for n in lowered] if sorted(lowered) == ["false", "true"] else None


def _as_read(labels):
    """Labels as their values: categories as the values they stand for, pandas' nullable booleans as bools."""
    import pandas as pd

    if isinstance(labels.dtype, pd.CategoricalDtype):
        labels = labels.astype(labels.cat.categories.dtype)
    if pd.api.types.is_bool_dtype(labels.dtype):
        return labels.astype(bool)
    return labels


def _note_forms(note) -> tuple[str, str]:
    """(the Python wording, the command's wording) of a note given as one string or a pair."""
    return (note, note) if isinstance(note, str) else note


def _warned(notes: list) -> tuple[CalibInputWarning, ...]:
    """Each note as a CalibInputWarning, warned (the command prints it on stderr, in its own wording) and
    returned, to be kept with what was read."""
    kept = tuple(CalibInputWarning(python, cli_message=cli) for python, cli in map(_note_forms, notes))
    for note in kept:
        warnings.warn(note, stacklevel=4)
    return kept


def _left_out(candidates: list, distinct, path: Path, notes: list) -> list:
    """The default candidate columns without those that are plainly not classes (module docstring)."""
    import pandas as pd

    names = [str(c) for c in candidates]
    if class_numbers(names) is not None:
        return candidates
    words = [c for c in candidates if str(c).lower() in _BOOLEAN_WORDS]
    if len(words) == 2 and _boolean_words([str(c) for c in words]) is not None and _are_booleans(distinct):
        return _kept(candidates, words, "beside the true / false columns the labels name", path, notes)
    numbers = _label_numbers(distinct)
    if numbers is not None:
        family = _numbered_family(names)
        if family is None or not set(numbers) <= set(family.values()):
            return candidates
        kept = [c for c in candidates if str(c) in family]
    elif not pd.api.types.is_numeric_dtype(distinct.dtype) and not pd.api.types.is_bool_dtype(distinct.dtype):
        text = set(map(str, distinct))
        kept = [c for c in candidates if str(c) in text]
        if len(kept) < 2:
            return candidates
    else:
        return candidates
    why = "not numbered like the class columns the labels name" if numbers is not None else "named by no label"
    return _kept(candidates, kept, why, path, notes)


def _kept(candidates: list, kept: list, why: str, path: Path, notes: list) -> list:
    """``kept`` of the ``candidates``, with a note naming the others and the option that keeps them."""
    dropped = [c for c in candidates if c not in kept]
    if dropped:
        keep = " ".join(map(str, candidates))
        notes.append(
            (
                f"{path}: left out the numeric columns {dropped} ({why}); if they are classes, keep them with "
                f"class_columns={[str(c) for c in candidates]}",
                f"{path}: left out the numeric columns {dropped} ({why}); if they are classes, keep them with "
                f"--class-columns {keep}",
            )
        )
    return kept


def _are_booleans(distinct) -> bool:
    """Labels that are booleans, or the words true / false in any case."""
    import pandas as pd

    if pd.api.types.is_bool_dtype(distinct.dtype):
        return True
    return all(str(v).lower() in _BOOLEAN_WORDS for v in distinct)


def _label_numbers(distinct) -> list[int] | None:
    """The labels as whole numbers (numbers, text holding numbers, booleans as 0 / 1), else None."""
    import pandas as pd

    values = pd.to_numeric(pd.Series(np.asarray(distinct, dtype=object)), errors="coerce")
    if values.isna().any() or (values != values.round()).any():
        return None
    return [int(v) for v in values]


def _numbered_family(names: list[str]) -> dict[str, int] | None:
    """The one group of at least two names sharing a text around distinct numbers (``p0, p1`` among
    ``p0, p1, fold``), as name -> number; None when there is no such group or more than one."""
    groups: dict[tuple, dict[str, int]] = {}
    for name in names:
        match = _NUMBERED.match(name)
        if match:
            groups.setdefault((match[1], match[3]), {})[name] = int(match[2])
    families = [g for g in groups.values() if len(g) >= 2 and len(set(g.values())) == len(g)]
    return families[0] if len(families) == 1 else None


def _one_column(column, distinct, positive_label, path: Path, notes: list) -> ClassLayout:
    """A binary table whose one column scores the positive class: labels equal to ``positive_label`` are
    that class, every other label the negative class."""
    if positive_label is None:
        raise CalibInputError(
            f"{path} has one score column, {column!r}: for a binary problem whose column scores the positive class, "
            "pass positive_label= (the label of that class)",
            cli_message=f"{path} has one score column, {column!r}: for a binary problem whose column scores the "
            "positive class, pass --positive-label LABEL",
        )
    codes = None
    if distinct is not None:
        codes = _equal_to(distinct, positive_label).astype(np.int64)
        _require_positive(codes, distinct, positive_label, path)
    names = (f"not {positive_label}", str(positive_label))
    return ClassLayout((column,), names, names[1], _warned(notes), distinct, codes, (0, 1))


def _equal_to(distinct, positive_label) -> np.ndarray:
    """Which distinct labels are ``positive_label`` as written, as a number, or as a boolean word."""
    import pandas as pd

    text = str(positive_label)
    if pd.api.types.is_bool_dtype(distinct.dtype):
        word = _BOOLEAN_WORDS.get(text.lower(), {"1": 1, "0": 0}.get(text))
        return np.asarray(distinct, dtype=bool) == bool(word) if word is not None else np.zeros(len(distinct), bool)
    equal = np.asarray(distinct.astype(str)) == text
    number = _number_or_none(text)
    if number is not None and pd.api.types.is_numeric_dtype(distinct.dtype):
        equal |= np.asarray(distinct, dtype=np.float64) == number
    return equal


def _require_positive(codes: np.ndarray, distinct, positive_label, path: Path) -> None:
    if not codes.any():
        shown = sorted(map(str, distinct))[:5]
        raise CalibInputError(f"{path}: no label equals the positive label {positive_label!r}; the labels are {shown}")


def _positive_column(positive_label, names: list[str], distinct, codes, label_values, path: Path, notes: list) -> int:
    """The column of two that ``positive_label`` names: as a column name, or as the class the labels equal
    to it name (without labels: as a label would name one); refused when it names none."""
    import pandas as pd

    if str(positive_label) in names:
        return names.index(str(positive_label))
    if codes is not None:
        classes = set(codes[_equal_to(distinct, positive_label)].tolist())
        if len(classes) == 1:
            return classes.pop()
    if distinct is None:  # no labels (scores to calibrate): as a label would name a class
        for as_label in _label_forms(positive_label):
            try:
                return int(_label_indices(pd.Series([as_label]), names, label_values, path, notes)[0])
            except CalibInputError:
                continue
    listed = "" if distinct is None else " and the labels equal to it name no single class"
    raise CalibInputError(
        f"{path}: the positive label {positive_label!r} names no class column ({', '.join(names)}){listed}; give a "
        "class column's name (positive_label=) or a label of the positive class",
        cli_message=f"{path}: --positive-label {positive_label} names no class column ({', '.join(names)}){listed}; "
        f"give a class column's name (--positive-label {names[1]}) or a label of the positive class",
    )


def _label_forms(positive_label) -> list:
    """``positive_label`` as the label it may stand for: as a whole number, and as written."""
    number = _number_or_none(positive_label)
    forms = [str(positive_label)]
    if number is not None and number == int(number):
        forms.insert(0, int(number))
    return forms


def check_label_values(label_values) -> None:
    """Refuse a ``label_values`` that is neither one of :data:`LABEL_VALUES` nor a mapping of label to class
    column, naming ``label_values=`` (``--label-values`` on the command line).

    Examples
    --------
    >>> check_label_values("1-based"), check_label_values({"-1": "neg", "1": "pos"})
    (None, None)
    """
    if isinstance(label_values, dict):
        return
    if label_values not in LABEL_VALUES:
        raise CalibInputError(
            f"label_values must be one of {LABEL_VALUES} or a mapping of label to class column; got {label_values!r}",
            cli_message=f"--label-values must be one of {', '.join(LABEL_VALUES)} or LABEL=COLUMN pairs; "
            f"got {label_values!r}",
        )


def _label_indices(labels, names: list[str], label_values, path: Path, notes: list, named=False, frame=None):
    """Labels (a pandas Series) as class indices into the columns ``names``, as the module docstring says;
    a note when numbers are read as positions (which must then reach every column unless the columns were
    ``named``: given with ``class_columns``; ``frame``, the table or its first rows, tells which columns
    hold whole numbers only, for the advice)."""
    import pandas as pd

    if isinstance(label_values, dict):
        mapping = {str(k): names.index(str(v)) if str(v) in names else v for k, v in label_values.items()}
        bad = [v for v in mapping.values() if not isinstance(v, int) or not 0 <= v < len(names)]
        if bad:
            raise CalibInputError(f"{path}: label_values maps to {bad}, which are not class columns {names}")
        return _mapped(labels.astype(str), mapping, path, "label_values")
    check_label_values(label_values)
    numbers = class_numbers(names)
    words = _boolean_words(names)
    booleans = pd.api.types.is_bool_dtype(labels.dtype)
    if booleans and words is not None and label_values in ("auto", "names"):  # True / False as the words
        return np.asarray([words.index(int(v)) for v in labels], dtype=np.int64)
    as_numbers = _label_numbers(labels) if words is not None and label_values == "auto" else None
    if as_numbers is not None and set(as_numbers) <= {0, 1}:  # 0 / 1 against false / true columns: by meaning
        return np.asarray([words.index(v) for v in as_numbers], dtype=np.int64)
    if booleans:
        labels = labels.astype(np.int64)
    numeric = pd.api.types.is_numeric_dtype(labels)
    if label_values == "names" or (label_values == "auto" and not numeric):
        text = labels.astype(str)
        if words is not None and set(text.str.lower()) <= set(_BOOLEAN_WORDS):  # TRUE / false against True / False
            return _mapped(text.str.lower(), {n.lower(): i for i, n in enumerate(names)}, path, "names")
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
    pairs = ", ".join(f"{k + offset}: {n}" for k, n in enumerate(names[:6])) + (", ..." if len(names) > 6 else "")
    if label_values == "auto":  # numbers onto named columns: by position, which the user should see
        if not named:
            _refuse_unlabelled_positions(indices, names, pairs, path, frame)
        said = f"{path}: labels are numbers and the class columns are names: label k is read as the k-th class column"
        fix = "if the labels encode the classes in another order, give the columns in that order"
        notes.append(
            (
                f"{said} ({pairs}); {fix} (class_columns=) or map them (label_values={{label: column}})",
                f"{said} ({pairs}); {fix} (--class-columns) or map them (--label-values LABEL=COLUMN)",
            )
        )
    elif numbers is None:  # positions, as told: which column each is, since classes are listed by name
        notes.append(f"{path}: labels are positions among the class columns as given ({pairs})")
    return indices


def _refuse_unlabelled_positions(indices: np.ndarray, names: list[str], pairs: str, path: Path, frame) -> None:
    """Numbers read as positions must label every column: a column no label reaches means the columns
    hold something else than the classes in the labels' order (an id, a fold, a feature), or a class
    without a sample; which one, only the user knows."""
    reached = set(np.unique(indices).tolist())
    if len(reached) == len(names):
        return
    whole = []
    if frame is not None:  # ids, folds and counts hold whole numbers; scores hardly ever do
        whole = [str(c) for c in frame.columns if str(c) in names and _whole_numbers(frame[c])]
    others = [n for n in names if n not in whole] if whole and len(names) - len(whole) >= 2 else None
    hint = f"; {whole} hold whole numbers only, like ids or folds" if whole else ""
    problem = (
        f"{path}: labels are the numbers {sorted(reached)[:6]}, read as positions among {len(names)} class columns "
        f"({pairs}), and no label reaches {len(names) - len(reached)} of them{hint}: name the class columns in the "
        "labels' order"
    )
    example = others or names
    raise CalibInputError(
        f"{problem} (class_columns={example}; id_column= for an id column) or map the labels (label_values="
        "{label: column})",
        cli_message=f"{problem} (--class-columns {' '.join(example)}; --id-column for an id column) or map the labels "
        "(--label-values LABEL=COLUMN ...)",
    )


def _whole_numbers(values) -> bool:
    """A numeric column whose values are all whole numbers."""
    import pandas as pd

    if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        return False
    array = values.to_numpy(dtype=np.float64, na_value=np.nan)
    return bool(array.size) and bool(np.all(np.isfinite(array) & (array == np.round(array))))


def _refuse_missing(labels, path: Path) -> None:
    missing = labels.isna().to_numpy()
    if missing.any():
        row = int(np.flatnonzero(missing)[0])
        where = row_place(row, path)
        raise CalibInputError(
            f"{path}: {int(missing.sum())} labels are missing (first at {where}); drop the rows without a label "
            "or fill them in (a missing label cannot be scored)"
        )


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
        low, high = shown
        first, second = sorted(names)
        fix = (
            f"for a binary problem whose labels are {low} / {high}, map each label to the column that scores it: "
            f"label_values={{{low!r}: {first!r}, {high!r}: {second!r}}} or label_values={{{low!r}: {second!r}, "
            f"{high!r}: {first!r}}}, whichever is right"
        )
        cli = (
            f"for a binary problem whose labels are {low} / {high}, map each label to the column that scores it: "
            f"--label-values={low}={first},{high}={second} or --label-values={low}={second},{high}={first}, "
            "whichever is right"
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


def table_inputs(scores, labels, *, kind="probs", class_columns=None, label_values="auto", positive_label=None):
    """``scores`` and ``labels`` of a Python call, a table's columns read as class names as the command
    reads a file's.

    ``scores`` may be a pandas DataFrame, an Arrow table, or any table that offers the Arrow stream
    (``__arrow_c_stream__``: polars, DuckDB results) or the dataframe interchange protocol
    (``__dataframe__``); its columns are matched to the labels and ordered by :func:`resolve_classes`,
    with the options of :class:`calib.data.table_options.TableOptions` (by name, as for a file: numeric columns that
    are plainly not classes left out, numbers onto other names by position; each with a warning, kept
    in the layout's ``notes``). Labels with an index (a Series) must have the table's index, so rows
    cannot pair up wrongly; Arrow arrays are read as their values. Arrays are returned unchanged, and
    the table options are then refused. O(N K) time.

    Parameters
    ----------
    scores : array_like or table of shape (N, K)
        The scores; a table's column names are its classes.
    labels : array_like, pandas.Series or Arrow array of shape (N,), optional
        The true classes: indices, or names of the table's columns.
    kind : {"probs", "logprobs", "logits"}
        What the scores hold (for a binary table of one column, the positive class's).
    class_columns, label_values, positive_label
        As for :class:`calib.data.table_options.TableOptions`.

    Returns
    -------
    tuple
        For a table: (scores as an array with its columns in class order, labels as class indices, the
        :class:`ClassLayout`, whose ``given_order`` puts anything given in the table's column order, such
        as priors, in class order); (scores, labels, None) otherwise.

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"dog": [0.2, 0.7], "cat": [0.8, 0.3]})
    >>> scores, labels, layout = table_inputs(frame, ["cat", "dog"])
    >>> layout.names, labels.tolist(), scores[:, 0].tolist(), layout.given_order
    (('cat', 'dog'), [0, 1], [0.8, 0.3], (1, 0))
    """
    frame = _as_frame(scores)
    if frame is None or labels is None:
        told = {"class_columns": class_columns, "positive_label": positive_label}
        told = [name for name, value in told.items() if value is not None] + ["label_values"] * (label_values != "auto")
        if told:
            raise CalibInputError(
                f"{', '.join(told)}: for the columns of a table (a pandas DataFrame or an Arrow table); scores is an "
                f"array, whose columns are the classes in order: drop {'it' if len(told) == 1 else 'them'}"
            )
        return scores, labels, None
    import pandas as pd

    labels = _as_values(labels)
    label_index = labels.index if isinstance(labels, pd.Series) else None  # a list's index is a method
    if label_index is not None and not label_index.equals(frame.index):
        raise CalibInputError(
            "labels: its index differs from that of scores, so rows would pair up by position; align them first "
            "(labels.loc[scores.index]) or pass labels.to_numpy() if the rows are in the same order"
        )
    series = pd.Series(np.asarray(labels)) if label_index is None else labels.reset_index(drop=True)
    layout = resolve_classes(
        frame,
        Path("scores"),
        labels=series,
        class_columns=class_columns,
        label_values=label_values,
        positive_label=positive_label,
    )
    at = list(frame.columns)
    values = frame.iloc[:, [at.index(column) for column in layout.columns]].to_numpy()  # names may be booleans
    if layout.one_column:
        values = two_columns(values[:, 0].astype(np.float64), kind)
    return values, layout.classes_of(series), layout


def two_columns(score: np.ndarray, kind: str) -> np.ndarray:
    """The two columns (negative, positive) of a binary table that holds one: the positive class's
    probability, log-probability or logit ``score`` (N,) of ``kind``.

    Examples
    --------
    >>> two_columns(np.array([0.25]), "probs").tolist(), two_columns(np.array([2.0]), "logits").tolist()
    ([[0.75, 0.25]], [[0.0, 2.0]])
    """
    if kind == "probs":
        return np.column_stack([1.0 - score, score])
    if kind == "logprobs":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.column_stack([np.log1p(-np.exp(score)), score])
    return np.column_stack([np.zeros_like(score), score])


def _as_frame(scores):
    """``scores`` as a pandas DataFrame when it is a table (pandas, Arrow, or a table offering the Arrow
    stream or the interchange protocol), else None."""
    if getattr(scores, "columns", None) is not None and hasattr(scores, "iloc"):
        return scores
    if hasattr(scores, "to_pandas") and hasattr(scores, "column_names"):  # an Arrow table or record batch
        return scores.to_pandas()
    if hasattr(scores, "__arrow_c_stream__"):
        import pyarrow as pa

        return pa.table(scores).to_pandas()
    if hasattr(scores, "__dataframe__"):
        import pandas as pd

        return pd.api.interchange.from_dataframe(scores)
    return None


def _as_values(labels):
    """Arrow arrays and chunked arrays (and columns offering the Arrow stream) as pandas Series."""
    if hasattr(labels, "to_pandas") and not hasattr(labels, "iloc"):
        return labels.to_pandas()
    if hasattr(labels, "__arrow_c_stream__") and not hasattr(labels, "iloc"):
        import pyarrow as pa

        return pa.chunked_array(labels).to_pandas()
    return labels
