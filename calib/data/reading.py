"""What the two faces of a posteriors reader share: the whole file (:mod:`calib.data.real`) and its chunks
(:mod:`calib.data.chunks`) read a file by the same rules, written here once.

A table's layout (:func:`table_layout`: which column scores which class, which class each label names, a
missing label, id or group column refused by name), the unnamed index column ``DataFrame.to_csv`` writes
(:func:`index_column`), the shapes of ``.npy`` / ``.npz`` arrays (:func:`check_score_arrays`), and the
scores' scale and renormalization (:class:`ScoreRows`), so that the chunks put together are the set the
whole-file loader returns.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np

from calib.data.classes import ClassLayout, resolve_classes, two_columns
from calib.data.table_options import TableOptions, check_scale
from calib.validation import CalibInputError, CalibInputWarning, as_labels, not_probabilities, renormalized

# The column pandas names a CSV's unnamed first column (DataFrame.to_csv writes its index that way).
_UNNAMED = re.compile(r"^(Unnamed: 0|)$")


def index_column(frame, path: Path, id_column: str | None):
    """The frame without the unnamed leading column that ``DataFrame.to_csv`` writes by default (kept as
    the rows' ids, with a warning), and those ids (None without such a column, or when ``id_column``
    names it).

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"Unnamed: 0": [7], "cat": [0.9], "dog": [0.1]})
    >>> rest, ids = index_column(frame, Path("t.csv"), "Unnamed: 0")  # named as the id column: kept
    >>> list(rest.columns), ids
    (['Unnamed: 0', 'cat', 'dog'], None)
    """
    first = frame.columns[0] if len(frame.columns) else None
    unnamed = first is not None and isinstance(first, str) and _UNNAMED.match(first) is not None
    if unnamed and first != id_column and len(frame.columns) > 1:
        warnings.warn(
            f"{path}: the unnamed first column (the index DataFrame.to_csv writes by default) is kept as the rows' "
            "ids, not as scores",
            CalibInputWarning,
            stacklevel=3,
        )
        return frame.drop(columns=first), frame[first].to_numpy()
    return frame, None


def table_layout(
    frame, path: Path, options: TableOptions, *, labels, require_labels: bool = True, require_weights: bool = True
) -> ClassLayout:
    """What the columns and labels of a table mean (:func:`calib.data.classes.resolve_classes`), from
    ``frame`` (the table, or its first rows: the columns and their types are the table's), ``options`` and
    ``labels`` (its label column, or that column's distinct values; None when the table has none); a
    missing label, id, group or weights column is refused naming it (the weights column only with
    ``require_weights``: a table of scores to calibrate may lack it). The id, group and weights columns are
    never scores.

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"dog": [0.2], "cat": [0.8], "y": ["cat"]})
    >>> layout = table_layout(frame, Path("t.csv"), TableOptions(kind="probs", label_column="y"), labels=frame["y"])
    >>> layout.columns, layout.codes.tolist()
    (('cat', 'dog'), [0])
    """
    if labels is None and require_labels:
        raise CalibInputError(
            f"{path} has no label column {options.label_column!r}; its columns are {list(frame.columns)}: "
            "name the label column with label_column=",
            cli_message=f"{path} has no label column {options.label_column!r}; its columns are "
            f"{list(frame.columns)}: name the label column with --labels COLUMN",
        )
    weights = options.weight_column if require_weights else None
    groups = tuple((column, "--groups") for column in options.group_column or ())
    named = ((options.id_column, "--id-column"), *groups, (weights, "--weights"))
    for column, flag in named:
        if column is not None and column not in frame.columns:
            raise CalibInputError(
                f"{path} has no column {column!r}; its columns are {list(frame.columns)}",
                cli_message=f"{path} has no column {column!r} ({flag}); its columns are {list(frame.columns)}",
            )
    own = (options.id_column, *(options.group_column or ()), options.weight_column)
    exclude = tuple(c for c in own if c is not None)
    return resolve_classes(
        frame,
        path,
        labels=labels,
        label_column=options.label_column,
        class_columns=options.class_columns,
        label_values=options.label_values,
        positive_label=options.positive_label,
        exclude=exclude,
    )


def check_score_arrays(scores: np.ndarray, labels: np.ndarray | None, where: str, labels_where: str) -> None:
    """Refuse scores of one column (a binary problem needs both) and labels that are not one class per row
    of ``scores``; ``where`` and ``labels_where`` name the files (or an archive's arrays) in messages.

    Examples
    --------
    >>> check_score_arrays(np.zeros((2, 3)), np.array([0, 2]), "s.npy", "y.npy")
    >>> check_score_arrays(np.zeros((2, 3)), np.array([0]), "s.npy", "y.npy")
    Traceback (most recent call last):
    ...
    calib.validation.CalibInputError: y.npy holds shape (1,); it needs one label per row of s.npy, shape (2,)
    """
    if scores.ndim == 1:
        raise CalibInputError(
            f"{where} holds one score per sample, shape {scores.shape}; a binary problem needs both columns "
            "(np.column_stack([1 - p, p])), or load a table with one score column and positive_label=",
            cli_message=f"{where} holds one score per sample, shape {scores.shape}; a binary problem needs both "
            "columns (negative, positive), or a CSV table with one score column and --positive-label LABEL",
        )
    if labels is not None and (labels.ndim != 1 or labels.shape[0] != scores.shape[0]):
        raise CalibInputError(
            f"{labels_where} holds shape {labels.shape}; it needs one label per row of {where}, "
            f"shape ({scores.shape[0]},)"
        )
    if labels is not None and scores.ndim == 2:  # refused naming the file the labels came from
        as_labels(labels, scores.shape[0], scores.shape[1], name=labels_where)


class ScoreRows:
    """Rows of scores as read, made scores of ``kind``: percentages divided by 100 (``scale="percent"``) and
    rows of probabilities renormalized (``renormalize``), the largest deviation of every piece of the file
    said once (:meth:`note`), so the whole file and its chunks say the same.

    Examples
    --------
    >>> rows = ScoreRows("s.csv", "probs", "percent", renormalize=True)
    >>> rows.renormalized(rows.scaled(np.array([[60.0, 40.1]]))).round(4).tolist(), round(rows.worst, 4)
    ([[0.5994, 0.4006]], 0.001)
    """

    def __init__(self, path, kind: str, scale: str, renormalize: bool):
        check_scale(scale, kind, path)  # an .npz archive's own kind is known only now
        self.path, self.kind, self.scale, self.renormalize = path, kind, scale, renormalize
        self.worst = 0.0

    def scaled(self, scores: np.ndarray) -> np.ndarray:
        """``scores`` divided by 100 when they are percentages."""
        return np.asarray(scores, dtype=np.float64) / 100.0 if self.scale == "percent" else scores

    def one_column(self, column: np.ndarray, name: str) -> np.ndarray:
        """A table's single score column (the positive class's, ``name``) as two columns: divided by 100 first
        when it holds percentages, and a probability outside [0, 1] refused as that column's, before the
        other class's 1 - p is formed from it (which would be out of range too, and named nowhere)."""
        column = self.scaled(column)
        if self.kind == "probs" and np.isfinite(column).all() and ((column < 0) | (column > 1)).any():
            raise not_probabilities(column[:, None], str(self.path), [name])
        return two_columns(column, self.kind)

    def renormalized(self, scores: np.ndarray) -> np.ndarray:
        """``scores`` rescaled to sum to 1 when asked (:func:`calib.validation.renormalized`), the largest
        deviation kept for :meth:`note`."""
        if not self.renormalize:
            return scores
        fixed, worst = renormalized(scores, self.kind, str(self.path))
        self.worst = max(self.worst, worst)
        return fixed

    def note(self) -> None:
        """Warn once of the largest deviation renormalized, if any."""
        if self.worst > 0:
            warnings.warn(
                f"{self.path}: renormalized rows off 1 by up to {self.worst:.3g}", CalibInputWarning, stacklevel=3
            )


def group_values(frame, columns: tuple[str, ...], path: Path, place) -> np.ndarray:
    """The group columns' values of a table's rows: (n,) for one column, (n, c) for several; a row without
    a group is refused with its place (``place(row)``: its line or row in the file).

    Examples
    --------
    >>> import pandas as pd
    >>> group_values(pd.DataFrame({"site": ["a", "b"]}), ("site",), Path("x.csv"), str).tolist()
    ['a', 'b']
    """
    for column in columns:
        missing = frame[column].isna().to_numpy()
        if missing.any():
            first = place(int(np.flatnonzero(missing)[0]))
            raise CalibInputError(
                f"{path}: {int(missing.sum())} rows have no group in {column!r} (first at {first}); fill them in "
                "(e.g. with 'unknown') or drop them"
            )
    if len(columns) == 1:
        return frame[columns[0]].to_numpy()
    return np.column_stack([frame[column].to_numpy(dtype=object) for column in columns])
