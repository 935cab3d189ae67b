"""Posterior sets: a classifier's scores on a test set, its labels, and what the scores are.

A :class:`PosteriorSet` holds scores of shape (N, K) as stored, integer labels, the declared
``kind`` of the scores (``probs``, ``logprobs`` or ``logits``; never guessed), class names where
known and a provenance string. Loaders read ``.npy`` pairs, ``.npz`` archives and a user's CSV or
Parquet table (one column per class plus a label column). :func:`one_vs_other` makes the binary
"class c vs the others" view of Ferrer & Ramos (2024), Sec. 3.5 (CIFAR-1vsO, CIFAR-2vsO).
"""

from __future__ import annotations

import re
import warnings
import zipfile
from dataclasses import dataclass, replace
from fnmatch import fnmatch
from pathlib import Path

import numpy as np

from calib._internal.files import atomic_write
from calib.validation import (
    KINDS,
    CalibInputError,
    CalibInputWarning,
    MissingFileError,
    as_class_indices,
    as_labels,
    as_logprobs,
    not_probabilities,
    renormalized,
)

TABLE_SUFFIXES = (".csv", ".parquet", ".pq")


@dataclass(frozen=True)
class PosteriorSet:
    """Scores (N, K) of kind ``kind``, labels in [0, K) (None for scores to calibrate), and metadata."""

    name: str
    scores: np.ndarray
    labels: np.ndarray | None
    kind: str
    class_names: tuple[str, ...] | None = None
    provenance: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise CalibInputError(
                f"kind must be one of {KINDS}; got {self.kind!r}. Say what the scores of {self.name} hold."
            )
        scores = np.asarray(self.scores)
        if scores.ndim != 2 or scores.shape[1] < 2 or scores.shape[0] == 0:
            raise CalibInputError(
                f"scores of {self.name} must have shape (N, K) with N >= 1 and K >= 2; got {scores.shape}"
            )
        labels = None
        if self.labels is not None:
            labels = as_labels(self.labels, scores.shape[0], scores.shape[1], name=f"labels of {self.name}")
        if self.class_names is not None and len(self.class_names) != scores.shape[1]:
            raise CalibInputError(
                f"class_names of {self.name} has {len(self.class_names)} names for {scores.shape[1]} score columns"
            )
        if self.class_names is not None:
            object.__setattr__(self, "class_names", tuple(str(c) for c in self.class_names))
        object.__setattr__(self, "scores", scores)
        object.__setattr__(self, "labels", None if labels is None else labels.astype(np.int64, copy=False))

    @property
    def n_samples(self) -> int:
        return int(self.scores.shape[0])

    @property
    def n_classes(self) -> int:
        return int(self.scores.shape[1])

    def logprobs(self) -> np.ndarray:
        """The scores as float64 log-posteriors (validated against the declared kind)."""
        return as_logprobs(self.scores, self.kind, name=f"scores of {self.name}")

    def priors(self) -> np.ndarray:
        """Class frequencies of the labels (length K)."""
        if self.labels is None:
            raise CalibInputError(f"{self.name} has no labels: class frequencies need them")
        return np.bincount(self.labels, minlength=self.n_classes) / self.n_samples


def one_vs_other(pset: PosteriorSet, positive: int) -> PosteriorSet:
    """Binary view "class ``positive`` vs the rest": [logsumexp(others), log q_c], labels (y == c).

    Ferrer & Ramos (2024), Sec. 3.5 (the CIFAR-XvsO tasks); class index 1 of the view is the positive class.
    """
    if not 0 <= positive < pset.n_classes:
        raise CalibInputError(f"positive must be a class index in [0, {pset.n_classes}); got {positive}")
    logp = pset.logprobs()
    others = np.delete(logp, positive, axis=1)
    from scipy.special import logsumexp  # here, not at the top: a fetch job imports this module and never needs it

    binary = np.column_stack([logsumexp(others, axis=1), logp[:, positive]])
    name = pset.class_names[positive] if pset.class_names else str(positive)
    return replace(
        pset,
        name=f"{pset.name}-{positive}vsO",
        scores=binary,
        labels=None if pset.labels is None else (pset.labels == positive).astype(np.int64),
        kind="logprobs",
        class_names=("other", name),
        provenance=f"{pset.provenance}; one-vs-other view of class {positive}".lstrip("; "),
    )


def _require_file(path: Path, what: str) -> Path:
    path = Path(path)
    if path.is_dir():
        raise MissingFileError(f"{what} {path} is a folder, not a file; give the file's path")
    if not path.is_file():
        raise MissingFileError(f"{what} {path} does not exist; check the path")
    return path


def _numeric_array(read, where: str) -> np.ndarray:
    """``read()`` (an array from a .npy / .npz file); object arrays and damaged files are a CalibInputError."""
    try:
        return read()
    except ValueError as exc:  # numpy refuses object arrays without allow_pickle, and bad headers
        if "allow_pickle" in str(exc) or "Object arrays" in str(exc):
            raise CalibInputError(
                f"{where} holds Python objects (e.g. None), not numbers; save a numeric array"
            ) from exc
        raise CalibInputError(f"{where} is not a readable numpy array ({exc}); write it again") from exc
    except (OSError, EOFError, zipfile.BadZipFile) as exc:
        raise CalibInputError(f"{where} is damaged or truncated ({exc}); write it again") from exc


def _load_npy(path, what: str) -> np.ndarray:
    path = _require_file(path, what)
    return _numeric_array(lambda: np.load(path, allow_pickle=False), f"{what} {path}")


def _archive_array(data, key: str, path) -> np.ndarray:
    return _numeric_array(lambda: data[key], f"array {key!r} of {path}")


def _scores_and_labels(scores: np.ndarray, labels: np.ndarray | None, where: str, labels_where: str) -> None:
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


def load_npy_pair(
    scores_path, labels_path, *, kind: str, renormalize: bool = False, name: str | None = None, **meta
) -> PosteriorSet:
    """Scores from one ``.npy`` file and labels from another (``labels_path=None``: scores only)."""
    scores = _load_npy(scores_path, "scores file")
    labels = None if labels_path is None else _load_npy(labels_path, "labels file")
    _scores_and_labels(scores, labels, f"scores file {scores_path}", f"labels file {labels_path}")
    scores = _renormalized_if(scores, kind, renormalize, scores_path)
    return PosteriorSet(name or Path(scores_path).parent.name, scores, labels, kind, **meta)


def _renormalized_if(scores: np.ndarray, kind: str, renormalize: bool, path) -> np.ndarray:
    if not renormalize:
        return scores
    fixed, worst = renormalized(scores, kind, str(path))
    if worst > 0:
        warnings.warn(f"{path}: renormalized rows off 1 by up to {worst:.3g}", CalibInputWarning, stacklevel=3)
    return fixed


def load_npz(
    path,
    *,
    kind: str,
    scores_key: str = "scores",
    labels_key: str = "labels",
    renormalize: bool = False,
    require_labels: bool = True,
    name: str | None = None,
    **meta,
) -> PosteriorSet:
    """Scores and labels from two arrays of one ``.npz`` archive (labels optional if not ``require_labels``)."""
    path = _require_file(path, "archive")
    data = _numeric_array(lambda: np.load(path, allow_pickle=False), f"archive {path}")
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise CalibInputError(f"{path} holds one array, not an .npz archive of scores and labels; rename it .npy")
    with data:
        wanted = [scores_key, labels_key] if require_labels else [scores_key]
        missing = [k for k in wanted if k not in data.files]
        if missing:
            raise CalibInputError(
                f"{path} has no array named {missing}; it holds {sorted(data.files)}: pass scores_key= and labels_key=",
                cli_message=f"{path} has no array named {missing}; it holds {sorted(data.files)}: name them with "
                "--scores-key and --labels-key",
            )
        scores = _archive_array(data, scores_key, path)
        labels = _archive_array(data, labels_key, path) if labels_key in data.files else None
    _scores_and_labels(scores, labels, f"{path} ({scores_key})", f"{path} ({labels_key})")
    scores = _renormalized_if(scores, kind, renormalize, path)
    return PosteriorSet(name or Path(path).stem, scores, labels, kind, **meta)


LABEL_VALUES = ("auto", "index", "names", "1-based")
# The column pandas names a CSV's unnamed first column (DataFrame.to_csv writes its index that way).
_UNNAMED = re.compile(r"^(Unnamed: 0|)$")


def _read_frame(path: Path):
    """The table at ``path`` as a DataFrame; unreadable files are a CalibInputError naming the file."""
    import pandas as pd

    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise CalibInputError(f"{path}: unknown table format {suffix!r}; use one of {TABLE_SUFFIXES}")
    try:
        if suffix == ".csv":
            return pd.read_csv(path, encoding="utf-8")
        return _read_parquet(path)
    except UnicodeDecodeError as exc:
        raise CalibInputError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8") from exc
    except pd.errors.EmptyDataError as exc:
        raise CalibInputError(f"{path} is empty: it needs a header and one row per sample") from exc
    except (pd.errors.ParserError, ValueError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CalibInputError(f"{path} is not a readable {suffix[1:]} table ({first})") from exc


def _read_parquet(path: Path):
    """A Parquet table as a DataFrame: a table of numbers only is read batch by batch into one array per
    column (no whole Arrow table beside the arrays); other tables (e.g. with text labels, or an index
    that pandas stored as a column and restores as the index) are converted whole, as pandas reads them."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    with pq.ParquetFile(path) as parquet:
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


def _drop_index_column(frame, path: Path):
    """Without the unnamed leading column that ``DataFrame.to_csv`` writes by default (with a warning)."""
    first = frame.columns[0] if len(frame.columns) else None
    if first is not None and isinstance(first, str) and _UNNAMED.match(first) and len(frame.columns) > 1:
        warnings.warn(
            f"{path}: dropped the unnamed first column (the index DataFrame.to_csv writes by default)",
            CalibInputWarning,
            stacklevel=3,
        )
        return frame.drop(columns=first)
    return frame


def _refuse_damaged_numbers(values, column, path: Path) -> None:
    """Stop on a column of numbers with some cells that are not numbers (a typo, a decimal comma): it
    holds scores, and leaving it out would change the problem instead of reporting the cell."""
    import pandas as pd

    parsed = pd.to_numeric(values, errors="coerce")
    bad = parsed.isna() & values.notna()
    if parsed.notna().any() and bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        where = f"line {row + 2}" if path.suffix.lower() == ".csv" else f"row {row} (counting from 0)"
        raise CalibInputError(
            f"{path}: column {column!r} holds numbers but at {where} it holds {values.iloc[row]!r}, which is "
            "not a number; correct that cell (write decimals with a point)"
        )


def _pick_class_columns(frame, path: Path, label_column: str, class_columns) -> list:
    """The score columns: ``class_columns`` (names or fnmatch patterns, in file order) or every numeric
    column but the labels (other columns are left out, with a warning)."""
    import pandas as pd

    others = [c for c in frame.columns if c != label_column]
    if class_columns is None:
        columns = [c for c in others if pd.api.types.is_numeric_dtype(frame[c])]
        skipped = [c for c in others if c not in columns]
        for column in skipped:
            _refuse_damaged_numbers(frame[column], column, path)
        if skipped and columns:
            warnings.warn(f"{path}: left out the non-numeric columns {skipped}", CalibInputWarning, stacklevel=3)
        elif skipped:
            raise CalibInputError(f"{path}: no score column is numeric ({skipped}); scores must be numbers")
    else:
        patterns = [class_columns] if isinstance(class_columns, str) else list(class_columns)
        columns = [c for c in others if any(fnmatch(str(c), str(p)) for p in patterns)]
        unmatched = [p for p in patterns if not any(fnmatch(str(c), str(p)) for c in others)]
        if unmatched:
            raise CalibInputError(
                f"{path}: no column matches {unmatched}; its columns are {list(frame.columns)}",
                cli_message=f"{path}: --class-columns {' '.join(map(str, unmatched))} matches no column; "
                f"its columns are {list(frame.columns)}",
            )
        non_numeric = [c for c in columns if not pd.api.types.is_numeric_dtype(frame[c])]
        for column in non_numeric:
            _refuse_damaged_numbers(frame[column], column, path)
        if non_numeric:
            raise CalibInputError(f"{path}: class columns {non_numeric} are not numeric; they cannot hold scores")
    if not columns:
        raise CalibInputError(
            f"{path} has no numeric score column besides the labels {label_column!r}",
            cli_message=f"{path} has no numeric score column besides the labels ({label_column!r}, --labels)",
        )
    return columns


def _label_indices(labels, columns: list, label_values, positive_label, path: Path) -> np.ndarray:
    """Labels as class indices, read as ``label_values`` says (see :func:`load_table`)."""
    import pandas as pd

    names = [str(c) for c in columns]

    def text():
        # Labels as strings, only where they are matched to names: at 10^7 rows the strings take gigabytes.
        return labels.astype(str)

    if positive_label is not None:
        if len(columns) > 2:
            raise CalibInputError(
                f"{path}: positive_label is for binary problems; this table has {len(columns)} class columns",
                cli_message=f"{path}: --positive-label is for binary problems; this table has {len(columns)} "
                "class columns",
            )
        positive = text() == str(positive_label)
        if not positive.any():
            raise CalibInputError(f"{path}: no label equals the positive label {positive_label!r}")
        return positive.to_numpy().astype(np.int64)
    if isinstance(label_values, dict):
        mapping = {str(k): names.index(str(v)) if str(v) in names else v for k, v in label_values.items()}
        bad = [v for v in mapping.values() if not isinstance(v, int) or not 0 <= v < len(names)]
        if bad:
            raise CalibInputError(f"{path}: label_values maps to {bad}, which are not class columns {names}")
        return _mapped(text(), mapping, path, "label_values")
    if label_values not in LABEL_VALUES:
        raise CalibInputError(
            f"label_values must be one of {LABEL_VALUES} or a mapping of label to class column; got {label_values!r}",
            cli_message=f"--label-values must be one of {', '.join(LABEL_VALUES)} or LABEL=COLUMN pairs; "
            f"got {label_values!r}",
        )
    numeric = pd.api.types.is_numeric_dtype(labels)
    if label_values == "names" or (label_values == "auto" and not numeric):
        return _mapped(text(), {n: i for i, n in enumerate(names)}, path, "names")
    values = labels.to_numpy()
    if label_values == "1-based":
        return as_class_indices(values, f"labels of {path}") - 1
    indices = as_class_indices(values, f"labels of {path}")
    if label_values == "auto":
        counted = names == [str(i) for i in range(len(names))]
        named_by_number = all(n.lstrip("-").isdigit() for n in names)
        if named_by_number and not counted:
            raise CalibInputError(
                f"{path}: labels are numbers and the class columns are named {names}: say whether a label is a "
                "class index (label_values='index') or a column name (label_values='names')",
                cli_message=f"{path}: labels are numbers and the class columns are named {names}: say whether a "
                "label is a class index (--label-values index) or a column name (--label-values names)",
            )
        if indices.size and indices.min() == 1 and indices.max() == len(names):
            raise CalibInputError(
                f"{path}: labels run from 1 to {len(names)} for {len(names)} classes; if they count from 1, "
                "pass label_values='1-based'",
                cli_message=f"{path}: labels run from 1 to {len(names)} for {len(names)} classes; if they count "
                "from 1, pass --label-values 1-based",
            )
    return indices


def _mapped(text, mapping: dict, path: Path, how: str) -> np.ndarray:
    unknown = sorted(set(text) - set(mapping))
    if unknown:
        raise CalibInputError(
            f"{path}: labels {unknown[:5]} are not among {sorted(mapping)} ({how}); fix the labels or "
            "map them with label_values={label: class column}",
            cli_message=f"{path}: labels {unknown[:5]} are not among {sorted(mapping)} ({how}); fix the labels "
            "or map them with --label-values LABEL=COLUMN ...",
        )
    return text.map(mapping).to_numpy().astype(np.int64)


def _one_column_binary(score: np.ndarray, kind: str) -> np.ndarray:
    """Two columns (negative, positive) from the positive class's probability, log-probability or logit."""
    if kind == "probs":
        return np.column_stack([1.0 - score, score])
    if kind == "logprobs":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.column_stack([np.log1p(-np.exp(score)), score])
    return np.column_stack([np.zeros_like(score), score])


def load_table(
    path,
    *,
    kind: str,
    label_column: str = "label",
    class_columns=None,
    label_values="auto",
    positive_label=None,
    renormalize: bool = False,
    require_labels: bool = True,
    name: str | None = None,
    **meta,
) -> PosteriorSet:
    """A user's CSV or Parquet table: score columns and a label column.

    Parameters
    ----------
    path : str or Path
        ``.csv`` (UTF-8) or ``.parquet``. An unnamed first column (the index ``DataFrame.to_csv`` writes
        by default) is dropped with a :class:`~calib.validation.CalibInputWarning`.
    kind : {"probs", "logprobs", "logits"}
        What the score columns hold.
    label_column : str
        The column of true labels.
    class_columns : str or list of str, optional
        The score columns, by name or fnmatch pattern (``"prob_*"``), in file order. Default: every
        numeric column but the labels (non-numeric columns are left out with a warning).
    label_values : {"auto", "index", "names", "1-based"} or dict
        How labels name classes: class indices from 0, class column names, indices from 1, or a dict
        from label to class column. ``"auto"`` reads text labels as names and numbers as indices (and
        refuses the ambiguous cases, e.g. numbers with columns named by other numbers).
    positive_label : optional
        For a binary problem: the label of the positive class. With one score column, that column
        holds the positive class's probability (or log-probability, or logit); any other label is
        the negative class.
    renormalize : bool
        Divide rows of probabilities by their sums when they are off 1 by rounding (at most 0.01);
        the largest deviation is reported in a warning.
    require_labels : bool
        False: a table without the label column loads with ``labels=None`` (scores to calibrate).

    Returns
    -------
    PosteriorSet
        Column names become the class names.

    Examples
    --------
    >>> import pandas as pd, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "scores.csv")
    >>> pd.DataFrame({"cat": [0.9, 0.2], "dog": [0.1, 0.8], "label": ["cat", "dog"]}).to_csv(path, index=False)
    >>> pset = load_table(path, kind="probs")
    >>> pset.class_names, pset.labels.tolist()
    (('cat', 'dog'), [0, 1])
    """
    path = _require_file(path, "table")
    frame = _drop_index_column(_read_frame(path), path)
    if frame.empty:
        raise CalibInputError(f"{path} has a header but no rows: it needs one row per sample")
    has_labels = label_column in frame.columns
    if not has_labels and require_labels:
        raise CalibInputError(
            f"{path} has no label column {label_column!r}; its columns are {list(frame.columns)}: "
            "name the label column with label_column=",
            cli_message=f"{path} has no label column {label_column!r}; its columns are {list(frame.columns)}: "
            "name the label column with --labels COLUMN",
        )
    columns = _pick_class_columns(frame, path, label_column, class_columns)
    if len(columns) == 1 and positive_label is None:
        raise CalibInputError(
            f"{path} has one score column, {columns[0]!r}: for a binary problem whose column scores the "
            "positive class, pass positive_label= (the label of that class)",
            cli_message=f"{path} has one score column, {columns[0]!r}: for a binary problem whose column scores "
            "the positive class, pass --positive-label LABEL",
        )
    scores = frame[columns].to_numpy(dtype=np.float64)
    labels = _label_indices(frame[label_column], columns, label_values, positive_label, path) if has_labels else None
    if len(columns) == 1:
        scores = _one_column_binary(scores[:, 0], kind)
        class_names = (f"not {positive_label}", str(positive_label))
    elif positive_label is not None and str(positive_label) == str(columns[0]):  # the positive class goes second
        scores, class_names = scores[:, ::-1].copy(), (str(columns[1]), str(columns[0]))
    else:
        class_names = tuple(str(c) for c in columns)
    if kind == "probs" and np.isfinite(scores).all() and not ((scores >= 0) & (scores <= 1)).all():
        raise not_probabilities(scores, str(path), columns)
    if renormalize:
        scores, worst = renormalized(scores, kind, str(path))
        if worst > 0:
            warnings.warn(f"{path}: renormalized rows off 1 by up to {worst:.3g}", CalibInputWarning, stacklevel=2)
    return PosteriorSet(name or path.stem, scores, labels, kind, class_names=class_names, **meta)


def load_posteriors(path, *, kind: str, labels=None, **options) -> PosteriorSet:
    """Load a posteriors file by its type.

    The file's suffix picks the loader: ``.npz`` archives, ``.csv`` / ``.parquet`` tables (one column
    per class plus a label column), or ``.npy`` scores with a separate ``.npy`` of labels. Scores are
    kept as stored, with the declared ``kind`` (nothing is guessed); the file, the shape (N, K) and
    the labels are checked on loading, and ``renormalize=True`` rescales rows of probabilities (or
    log-probabilities) that are off 1 by rounding (up to 0.01) to sum to 1. O(N K) time.

    Source: the file layouts are calib's own, with no published counterpart; the ``.npy`` pair is the
    layout of the posteriors released with the code of Ferrer & Ramos (2024) (``scores.npy`` and
    ``targets.npy``), which :mod:`calib.data.registry` reads the same way.

    Parameters
    ----------
    path : str or Path
        ``.npz`` (arrays ``scores`` and ``labels``), ``.csv`` / ``.parquet`` (see :func:`load_table`), or
        ``.npy`` scores with ``labels`` the path of a ``.npy`` of labels.
    kind : {"probs", "logprobs", "logits"}
        What the scores hold; nothing is guessed.
    labels : str or Path, optional
        The labels file of ``.npy`` scores.
    **options
        Passed to the loader: ``renormalize``, ``require_labels`` (all types); ``scores_key``,
        ``labels_key`` (``.npz``); ``label_column``, ``class_columns``, ``label_values``,
        ``positive_label`` (tables).

    Returns
    -------
    PosteriorSet

    Raises
    ------
    CalibInputError
        One line naming the file and the fix, for a missing, empty, damaged, non-UTF-8 or malformed file.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "scores.npz")
    >>> np.savez(path, scores=np.array([[0.8, 0.2], [0.3, 0.7]]), labels=np.array([0, 1]))
    >>> load_posteriors(path, kind="probs").n_samples
    2
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".npz":
        return load_npz(path, kind=kind, **options)
    if suffix in TABLE_SUFFIXES:
        return load_table(path, kind=kind, **options)
    if suffix == ".npy":
        if labels is None and options.get("require_labels", True):
            raise CalibInputError(
                f"{path} holds scores only: pass the labels .npy file as labels=",
                cli_message=f"{path} holds scores only: give the labels with --labels-file LABELS.npy",
            )
        options.pop("require_labels", None)
        return load_npy_pair(path, labels, kind=kind, **options)
    raise CalibInputError(f"{path}: unknown file type {suffix!r}; use .npz, .npy (with labels), .csv or .parquet")


def save_posterior_set(path, pset: PosteriorSet) -> None:
    """Write a set to ``path`` (an open binary file, or a path ending in ``.npz``, written atomically)."""
    arrays = {
        "scores": pset.scores,
        "labels": pset.labels,
        "kind": np.array(pset.kind),
        "name": np.array(pset.name),
        "class_names": np.array(pset.class_names or (), dtype=str),
        "provenance": np.array(pset.provenance),
    }
    if not isinstance(path, str | Path):
        np.savez_compressed(path, **arrays)
        return
    if Path(path).suffix != ".npz":
        raise CalibInputError(f"posterior set files end in .npz (numpy would append it); got {path}")
    atomic_write(path, lambda tmp: np.savez_compressed(tmp, **arrays))


def read_posterior_set(path) -> PosteriorSet:
    """Inverse of :func:`save_posterior_set`."""
    with np.load(_require_file(path, "posterior set"), allow_pickle=False) as data:
        missing = sorted({"scores", "labels", "kind", "name", "class_names", "provenance"} - set(data.files))
        if missing:
            raise CalibInputError(
                f"{path} is not a saved posterior set (no {missing}); read plain archives with load_npz(path, kind=...)"
            )
        names = tuple(str(c) for c in data["class_names"]) or None
        scores, labels = _archive_array(data, "scores", path), _archive_array(data, "labels", path)
        return PosteriorSet(str(data["name"]), scores, labels, str(data["kind"]), names, str(data["provenance"]))
