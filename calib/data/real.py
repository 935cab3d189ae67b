"""Posterior sets: a classifier's scores on a test set, its labels, and what the scores are.

A :class:`PosteriorSet` holds scores of shape (N, K) as stored, integer labels, the declared
``kind`` of the scores (``probs``, ``logprobs`` or ``logits``; never guessed), class names and row
ids where known, and a provenance string. Loaders read ``.npy`` pairs, ``.npz`` archives and a
user's table (CSV / TSV, compressed or not, Parquet, Feather / Arrow IPC; :mod:`calib.data.formats`)
with one column per class plus a label column, matching columns and labels to classes by name
(:mod:`calib.data.classes`). :func:`one_vs_other` makes the binary
"class c vs the others" view of Ferrer & Ramos (2024), Sec. 3.5 (CIFAR-1vsO, CIFAR-2vsO).

scipy.special and pandas are imported inside the functions that use them: a command or job that never calls them
starts without loading them.
"""

from __future__ import annotations

import warnings
import zipfile
from contextlib import nullcontext
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

import numpy as np

from calib._internal.files import atomic_write
from calib.data.formats import (
    TEXT_FORMATS,
    file_format,
    read_binary_table,
    read_text_table,
    require_readable,
    row_place,
    seekable_source,
)
from calib.data.reading import ScoreRows, check_score_arrays, group_values, index_column, table_layout
from calib.data.table_options import TableOptions
from calib.data.weights import WeightsFile, column_weights, refuse_two_weights
from calib.validation import (
    KINDS,
    CalibInputError,
    CalibInputWarning,
    as_labels,
    as_logprobs,
    as_sample_weights,
    check_scores,
    not_probabilities,
)


@dataclass(frozen=True)
class PosteriorSet:
    """Scores (N, K) of kind ``kind``, labels in [0, K) (None for scores to calibrate), and metadata:
    the K class names, row ids (N,) (integers or strings, e.g. an id or index column), provenance, and the
    rows' sample weights (N,) (None: each row counts once; checked by
    :func:`calib.validation.as_sample_weights`)."""

    name: str
    scores: np.ndarray
    labels: np.ndarray | None
    kind: str
    class_names: tuple[str, ...] | None = None
    provenance: str = ""
    ids: np.ndarray | None = None
    groups: np.ndarray | None = None
    notes: tuple = ()  # CalibInputWarnings: how the table was read where it was not by name
    # Each class's place among the class columns as the table gives them (None: the class order itself).
    given_order: tuple[int, ...] | None = None
    weights: np.ndarray | None = None

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
            if len(set(self.class_names)) != len(self.class_names):
                raise CalibInputError(f"class_names of {self.name} must be distinct; got {list(self.class_names)}")
        if self.ids is not None:
            object.__setattr__(self, "ids", _row_ids(self.ids, scores.shape[0], self.name))
        if self.groups is not None:
            object.__setattr__(self, "groups", _row_groups(self.groups, scores.shape[0], self.name))
        if self.weights is not None:
            weights = as_sample_weights(self.weights, scores.shape[0], name=f"weights of {self.name}")
            object.__setattr__(self, "weights", weights)
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
    name = pset.class_names[positive] if pset.class_names else str(positive)
    others = np.delete(logp, positive, axis=1)
    return _binary_view(pset, logp, others, positive, f"{positive}vsO", name, f"one-vs-other view of class {positive}")


def top_label_view(pset: PosteriorSet) -> PosteriorSet:
    """Binary view "the top class is right": [log(1 - max_k q_k), log max_k q_k], labels (y == argmax_k q_k).

    The top-label (confidence) lens of Guo et al. (2017), Sec. 2 (the "maximum" lens of Vaicenavicius et
    al. (2019), Sec. 4); ties go to the first class, as ``argmax`` breaks them. log(1 - max q) is the
    log-sum-exp of the other classes' log-posteriors, exact where max q is near 1. O(N K) time.

    Example: on a row [0.7, 0.2, 0.1] with label 0 the view is [log 0.3, log 0.7] with label 1.
    """
    logp = pset.logprobs()
    top = np.argmax(logp, axis=1)
    others = logp.copy()
    others[np.arange(logp.shape[0]), top] = -np.inf
    return _binary_view(pset, logp, others, top, "top-label", "top class", "top-label view")


def _binary_view(pset: PosteriorSet, logp, others, positive, suffix: str, name: str, what: str) -> PosteriorSet:
    """The two-class view [log-sum-exp of ``others``, ``logp`` of ``positive``] with labels (y == ``positive``):
    ``positive`` is a class index, or one per row; the view is called ``<set>-<suffix>``, its classes
    ("other", ``name``), and ``what`` is added to its provenance."""
    from scipy.special import logsumexp

    positive_logp = logp[:, positive] if np.ndim(positive) == 0 else logp[np.arange(logp.shape[0]), positive]
    return replace(
        pset,
        name=f"{pset.name}-{suffix}",
        scores=np.column_stack([logsumexp(others, axis=1), positive_logp]),
        labels=None if pset.labels is None else (pset.labels == positive).astype(np.int64),
        kind="logprobs",
        class_names=("other", name),
        provenance=f"{pset.provenance}; {what}".lstrip("; "),
    )


def _row_groups(groups, n: int, name: str) -> np.ndarray:
    """Row groups as :func:`_row_ids` reads ids: (N,) for one group column, (N, c) objects for c columns,
    each column's values integers or strings."""
    arr = np.asarray(groups)
    if arr.ndim != 2:
        return _row_ids(arr, n, name)
    out = np.empty(arr.shape, dtype=object)
    for j in range(arr.shape[1]):
        out[:, j] = _row_ids(arr[:, j], n, name).tolist()
    return out


def _row_ids(ids, n: int, name: str) -> np.ndarray:
    """Row ids as a 1-D array of N integers or strings (what an .npz archive holds without pickles)."""
    arr = np.asarray(ids)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise CalibInputError(f"ids of {name} must hold one id per row, shape ({n},); got shape {arr.shape}")
    if arr.dtype.kind in "iu":
        return arr.astype(np.int64, copy=False)
    if arr.dtype.kind == "U":
        return arr
    return np.array([str(v) for v in arr.tolist()], dtype=str)


def _numeric_array(read, where: str) -> np.ndarray:
    """``read()`` (an array from a .npy / .npz file); object arrays and damaged files are a CalibInputError."""
    try:
        return read()
    except ValueError as exc:  # numpy refuses object arrays without allow_pickle, and bad headers
        if "allow_pickle" in str(exc) or "Object arrays" in str(exc):
            raise CalibInputError(
                f"{where} holds Python objects (e.g. None, or strings kept as objects), not numbers or text; save "
                "a numeric array, or text labels as text (numpy.save(path, labels.astype(str)))"
            ) from exc
        raise CalibInputError(f"{where} is not a readable numpy array ({exc}); write it again") from exc
    except (OSError, EOFError, zipfile.BadZipFile) as exc:
        raise CalibInputError(f"{where} is damaged or truncated ({exc}); write it again") from exc


def _load_npy(path, what: str) -> np.ndarray:
    path = require_readable(path, what)
    source = seekable_source(path)
    with open(source, "rb") if isinstance(source, Path) else nullcontext(source) as stream:
        magic = stream.read(6)
        stream.seek(0)
    if magic != b"\x93NUMPY":  # numpy would try it as a pickle and speak of Python objects
        raise CalibInputError(
            f"{what} {path} is not a .npy file (numpy's format); save the array with numpy.save(path, array), or give "
            "a table with a label column"
        )
    return _numeric_array(lambda: np.load(source, allow_pickle=False), f"{what} {path}")


def _archive_array(data, key: str, path) -> np.ndarray:
    return _numeric_array(lambda: data[key], f"array {key!r} of {path}")


def _prepared(scores: np.ndarray, kind: str, scale: str, renormalize: bool, path, columns=None) -> np.ndarray:
    """Scores as read, divided by 100 for ``scale="percent"``, checked to be probabilities when ``kind``
    says so, and rescaled to sum to 1 with ``renormalize`` (:class:`calib.data.reading.ScoreRows`)."""
    rows = ScoreRows(path, kind, scale, renormalize)
    scores = rows.scaled(scores)
    numbers = scores.dtype.kind in "fiu"
    missing = np.isnan(scores) if scores.dtype.kind == "f" else None
    if missing is not None and missing.any():
        rows, cols = np.nonzero(missing)
        named = list(range(scores.shape[1])) if columns is None else list(columns)
        more = f" and {rows.size - 1} more" if rows.size > 1 else ""
        raise CalibInputError(
            f"{path}: column {named[cols[0]]!r} holds NaN (an empty or missing score) at row {rows[0]} (counted from "
            f"0){more}; repair those samples or leave them out"
        )
    if kind == "probs" and numbers and ((scores < 0) | (scores > 1)).any():
        raise not_probabilities(scores, str(path), columns)
    scores = rows.renormalized(scores)
    rows.note()
    check_scores(scores, kind, f"scores of {path}")  # refused naming the file: a set's name may say nothing
    return scores


def load_npy_pair(
    scores_path,
    labels_path,
    *,
    kind: str,
    renormalize: bool = False,
    scale: str = "unit",
    name: str | None = None,
    weights_file=None,
    **meta,
) -> PosteriorSet:
    """Scores from one ``.npy`` file and labels from another (``labels_path=None``: scores only), and the
    rows' weights from ``weights_file`` (:mod:`calib.data.weights`; None: each row counts once)."""
    scores = _load_npy(scores_path, "scores file")
    labels = None if labels_path is None else _load_npy(labels_path, "labels file")
    check_score_arrays(scores, labels, f"scores file {scores_path}", f"labels file {labels_path}")
    scores = _prepared(scores, kind, scale, renormalize, scores_path)
    weights = _file_weights(weights_file, scores.shape[0])
    return PosteriorSet(name or Path(scores_path).parent.name, scores, labels, kind, weights=weights, **meta)


def _file_weights(weights_file, n_rows: int) -> np.ndarray | None:
    """The weights of ``weights_file`` for ``n_rows`` rows, checked (:class:`calib.data.weights.WeightsFile`)."""
    return None if weights_file is None else WeightsFile(weights_file, n_rows).rows(0, n_rows)


def load_npz(
    path,
    *,
    kind: str | None,
    scores_key: str = "scores",
    labels_key: str = "labels",
    labels=None,
    renormalize: bool = False,
    require_labels: bool = True,
    scale: str = "unit",
    default_kind: str | None = None,
    name: str | None = None,
    weights_file=None,
    **meta,
) -> PosteriorSet:
    """Scores and labels from two arrays of one ``.npz`` archive, or its scores with the labels of the
    ``.npy`` file ``labels`` (labels optional if not ``require_labels``). Arrays ``kind``,
    ``class_names`` (K strings) and ``ids`` (one per row), as ``calib calibrate`` writes them, are
    read too: ``kind=None`` takes the archive's kind (``default_kind`` when it has none, else an
    error), and a ``kind`` that contradicts it is refused. ``weights_file``: the rows' weights
    (:mod:`calib.data.weights`; None: each row counts once)."""
    path = require_readable(path, "archive")
    data = _numeric_array(lambda: np.load(seekable_source(path), allow_pickle=False), f"archive {path}")
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise CalibInputError(f"{path} holds one array, not an .npz archive of scores and labels; rename it .npy")
    with data:
        missing = [scores_key] * (scores_key not in data.files)
        missing += [labels_key] * (labels is None and require_labels and labels_key not in data.files)
        if missing:
            labelled = labels_key in data.files or labels is not None
            python_fix = "pass scores_key= and labels_key=" + ("" if labelled else ", or labels= a .npy file of labels")
            cli_fix = "name them with --scores-key and --labels-key" + (
                "" if labelled else ", or give the labels with --labels-file LABELS.npy"
            )
            problem = f"{path} has no array named {missing}; it holds {sorted(data.files)}"
            raise CalibInputError(f"{problem}: {python_fix}", cli_message=f"{problem}: {cli_fix}")
        scores = _archive_array(data, scores_key, path)
        stored = _archive_array(data, labels_key, path) if labels is None and labels_key in data.files else None
        names = _archive_array(data, "class_names", path) if "class_names" in data.files else None
        ids = _archive_array(data, "ids", path) if "ids" in data.files else None
        stored_kind = str(_archive_array(data, "kind", path)) if "kind" in data.files else None
    kind = _archive_kind(kind, stored_kind, path, default_kind)
    if labels is not None:
        stored = _load_npy(labels, "labels file")
    check_score_arrays(scores, stored, f"{path} ({scores_key})", f"{path} ({labels_key})")
    scores = _prepared(scores, kind, scale, renormalize, path)
    meta.setdefault("class_names", tuple(str(n) for n in names) if names is not None and names.size else None)
    weights = _file_weights(weights_file, scores.shape[0])
    return PosteriorSet(name or Path(path).stem, scores, stored, kind, ids=ids, weights=weights, **meta)


def _archive_kind(kind: str | None, stored: str | None, path, default: str | None) -> str:
    """The kind of an archive's scores: its own ``kind`` array, or the one the caller declares, or the
    caller's default when neither says."""
    if stored is not None and kind is not None and kind != stored:
        raise CalibInputError(
            f"{path} holds {stored} (its kind array) but kind={kind!r} was given; drop kind= or give the right one",
            cli_message=f"{path} holds {stored} (its kind array) but --kind {kind} was given; drop --kind",
        )
    if stored is None and kind is None and default is not None:
        return default
    if stored is None and kind is None:
        raise CalibInputError(
            f"{path} does not say what its scores are (no kind array): say kind='probs', 'logprobs' or 'logits'",
            cli_message=f"{path} does not say what its scores are (no kind array): say --kind probs, logprobs or "
            "logits",
        )
    return stored if kind is None else kind


def _read_frame(path: Path, fmt: str, sep, decimal):
    """The table at ``path`` as a DataFrame; unreadable files are a CalibInputError naming the file."""
    import pandas as pd

    try:
        if fmt in TEXT_FORMATS:
            return read_text_table(path, fmt, sep=sep, decimal=decimal)
        return read_binary_table(seekable_source(path), fmt)
    except UnicodeDecodeError as exc:
        raise CalibInputError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8") from exc
    except pd.errors.EmptyDataError as exc:
        raise CalibInputError(f"{path} is empty: it needs a header and one row per sample") from exc
    except CalibInputError:
        raise
    except (pd.errors.ParserError, ValueError, OSError, EOFError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CalibInputError(f"{path} is not a readable {fmt} table ({first})") from exc


def load_table(
    path,
    options: TableOptions,
    *,
    labels=None,
    require_labels: bool = True,
    weights_file=None,
    require_weights: bool = True,
    name: str | None = None,
    **meta,
) -> PosteriorSet:
    """A user's table, whole: score columns, a label column and optionally id and group columns.

    Columns and labels are matched to classes by name (:mod:`calib.data.classes`): columns named in
    ``class_columns`` keep the order given; numbered columns (``c0, c1, c10, ...``) are taken in the
    order of their numbers and numeric labels name the column that carries them; text labels are
    column names. :func:`calib.data.chunks.table_chunks` reads a table in chunks by the same rules
    (:mod:`calib.data.reading`).

    Parameters
    ----------
    path : str or Path
        A CSV / TSV file (UTF-8; compressed ``.gz``, ``.bz2``, ``.zip``, ``.xz``, ``.zst`` too), Parquet
        or Feather / Arrow IPC (:mod:`calib.data.formats`), or a named pipe of one. An unnamed first
        column (the index ``DataFrame.to_csv`` writes by default) is kept as the rows' ids, with a
        :class:`~calib.validation.CalibInputWarning`.
    options : TableOptions
        How to read it (:class:`calib.data.table_options.TableOptions`: the kind of the scores, the label,
        class, id and group columns, how labels name classes, the positive label, scale, renormalization,
        separator, decimal mark and format).
    labels : str or Path, optional
        A ``.npy`` file of labels, one per row, read as the label column (``options.label_column``): they
        replace the table's own label column, with a warning, when it has one.
    require_labels : bool
        False: a table without the label column loads with ``labels=None`` (scores to calibrate).
    weights_file : str or Path, optional
        A file of the rows' weights, one per row (:mod:`calib.data.weights`); not with
        ``options.weight_column``.
    require_weights : bool
        False: a table without ``options.weight_column`` loads with ``weights=None`` (scores to calibrate).
    name : str, optional
        The set's name (default: the file's stem).
    **meta
        Passed to :class:`PosteriorSet` (e.g. ``provenance``).

    Returns
    -------
    PosteriorSet
        Column names become the class names.

    Examples
    --------
    >>> import pandas as pd, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "scores.csv")
    >>> pd.DataFrame({"cat": [0.9, 0.2], "dog": [0.1, 0.8], "label": ["cat", "dog"]}).to_csv(path, index=False)
    >>> pset = load_table(path, TableOptions(kind="probs"))
    >>> pset.class_names, pset.labels.tolist()
    (('cat', 'dog'), [0, 1])
    >>> frame = pd.DataFrame({"c1": [0.1, 0.7], "c0": [0.9, 0.3], "label": [0, 1]})  # columns out of order
    >>> frame.to_csv(path, index=False)
    >>> pset = load_table(path, TableOptions(kind="probs"))
    >>> pset.class_names, pset.labels.tolist(), pset.scores[:, 1].tolist()
    (('c0', 'c1'), [0, 1], [0.1, 0.7])
    """
    path = require_readable(path, "table")
    refuse_two_weights(options.weight_column, weights_file)
    fmt = file_format(path, options.format)
    frame, index_ids = index_column(_read_frame(path, fmt, options.sep, options.decimal), path, options.id_column)
    if frame.empty:
        raise CalibInputError(f"{path} has a header but no rows: it needs one row per sample")
    label_column = options.label_column
    if labels is not None:
        frame = _with_labels_file(frame, path, labels, label_column)
    has_labels = label_column in frame.columns
    labelled = frame[label_column] if has_labels else None
    layout = table_layout(
        frame, path, options, labels=labelled, require_labels=require_labels, require_weights=require_weights
    )
    columns = list(layout.columns)
    scores = frame[columns].to_numpy(dtype=np.float64)
    labels = layout.classes_of(frame[label_column]) if has_labels else None
    if layout.one_column:  # scaled and checked as the one column it is, then completed to two classes
        scores = ScoreRows(path, options.kind, options.scale, False).one_column(scores[:, 0], columns[0])
        scores = _prepared(scores, options.kind, "unit", False, path)
    else:
        scores = _prepared(scores, options.kind, options.scale, options.renormalize, path, columns)
    ids = frame[options.id_column].to_numpy() if options.id_column is not None else index_ids
    place = partial(row_place, path=path)
    groups = None if options.group_column is None else group_values(frame, options.group_column, path, place)
    weights = _file_weights(weights_file, len(frame))
    column = options.weight_column
    if column is not None and column in frame.columns:
        weights = column_weights(frame[column], column, path, place)
    return PosteriorSet(
        name or path.stem,
        scores,
        labels,
        options.kind,
        class_names=layout.names,
        ids=ids,
        groups=groups,
        notes=layout.notes,
        given_order=layout.given_order,
        weights=weights,
        **meta,
    )


def _with_labels_file(frame, path: Path, labels_path, label_column):
    """``frame`` with the labels of the ``.npy`` file ``labels_path`` as its label column (replacing the
    table's own, with a warning)."""
    import pandas as pd

    values = _load_npy(labels_path, "labels file")
    if values.ndim != 1 or values.shape[0] != len(frame):
        raise CalibInputError(
            f"labels file {labels_path} holds shape {values.shape}; it needs one label per row of {path}, "
            f"shape ({len(frame)},)"
        )
    if label_column in frame.columns:
        warnings.warn(
            CalibInputWarning(
                f"{path}: its label column {label_column!r} is replaced by the labels of {labels_path} (labels=)",
                cli_message=f"{path}: its label column {label_column!r} is replaced by the labels of --labels-file "
                f"{labels_path}",
            ),
            stacklevel=3,
        )
    return frame.assign(**{label_column: pd.Series(values, index=frame.index)})


def load_posteriors(
    path, *, kind: str, labels=None, weights_file=None, format: str | None = None, **options
) -> PosteriorSet:
    """Load a posteriors file by its format.

    The file's suffix (or ``format``) picks the loader: ``.npz`` archives, tables (CSV / TSV, also
    compressed, Parquet, Feather / Arrow IPC; one column per class plus a label column), or ``.npy``
    scores with a separate ``.npy`` of labels. Scores are kept as stored, with the declared ``kind``
    (nothing is guessed); the file, the shape (N, K) and the labels are checked on loading,
    ``scale="percent"`` divides percentages by 100, and ``renormalize=True`` rescales rows of
    probabilities (or log-probabilities) that are off 1 by rounding (up to 0.01) to sum to 1.
    O(N K) time.

    Source: the file layouts are calib's own, with no published counterpart; the ``.npy`` pair is the
    layout of the posteriors released with the code of Ferrer & Ramos (2024) (``scores.npy`` and
    ``targets.npy``), which :mod:`calib.data.registry` reads the same way.

    Parameters
    ----------
    path : str or Path
        ``.npz`` (arrays ``scores`` and ``labels``), a table (see :func:`load_table`), or ``.npy``
        scores with ``labels`` the path of a ``.npy`` of labels; or a named pipe of one of them.
    kind : {"probs", "logprobs", "logits"}
        What the scores hold; nothing is guessed.
    labels : str or Path, optional
        A ``.npy`` file of labels, for ``.npy`` scores or an ``.npz`` archive without labels; for a table,
        they replace its label column (with a warning when it has one).
    weights_file : str or Path, optional
        A file of the rows' sample weights, one per row (:mod:`calib.data.weights`); a table may instead
        name its column of weights (``weight_column``).
    format : str, optional
        The format, when the suffix does not say it (:data:`calib.data.formats.FORMATS`).
    **options
        Passed to the loader: ``renormalize``, ``require_labels``, ``scale`` (all types);
        ``scores_key``, ``labels_key`` (``.npz``); for a table, the fields of
        :class:`calib.data.table_options.TableOptions` (``label_column``, ``class_columns``,
        ``label_values``, ``positive_label``, ``id_column``, ``group_column``, ``weight_column``, ``sep``,
        ``decimal``).

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
    fmt = file_format(path, format)
    if fmt in ("npz", "npy") and options.get("weight_column") is not None:
        column = options.pop("weight_column")
        raise CalibInputError(
            f"weight_column={column!r}: {path} is .{fmt}, which has no columns; give the weights as weights_file= "
            "(a .npy of one weight per row)",
            cli_message=f"--weights {column}: {path} is .{fmt}, which has no columns; give the weights with "
            "--weights-file WEIGHTS.npy",
        )
    if fmt == "npz":
        return load_npz(path, kind=kind, labels=labels, weights_file=weights_file, **options)
    if fmt == "npy":
        if labels is None and options.get("require_labels", True):
            raise CalibInputError(
                f"{path} holds scores only: pass the labels .npy file as labels=",
                cli_message=f"{path} holds scores only: give the labels with --labels-file LABELS.npy",
            )
        options.pop("require_labels", None)
        return load_npy_pair(path, labels, kind=kind, weights_file=weights_file, **options)
    keywords = {"kind": kind, "format": fmt, **options}
    table = TableOptions.taken_from(keywords)  # what is left is load_table's own (require_labels, name, ...)
    return load_table(path, table, labels=labels, weights_file=weights_file, **keywords)


def save_posterior_set(path, pset: PosteriorSet) -> None:
    """Write a set to ``path`` (an open binary file, or a path ending in ``.npz``, written atomically); its
    weights, when it has them, as the optional array ``weights``."""
    arrays = {
        "scores": pset.scores,
        "labels": pset.labels,
        "kind": np.array(pset.kind),
        "name": np.array(pset.name),
        "class_names": np.array(pset.class_names or (), dtype=str),
        "provenance": np.array(pset.provenance),
    }
    if pset.weights is not None:
        arrays["weights"] = pset.weights
    if not isinstance(path, str | Path):
        np.savez_compressed(path, **arrays)
        return
    if Path(path).suffix != ".npz":
        raise CalibInputError(f"posterior set files end in .npz (numpy would append it); got {path}")
    atomic_write(path, lambda tmp: np.savez_compressed(tmp, **arrays))


def read_posterior_set(path) -> PosteriorSet:
    """Inverse of :func:`save_posterior_set`."""
    with np.load(require_readable(path, "posterior set"), allow_pickle=False) as data:
        missing = sorted({"scores", "labels", "kind", "name", "class_names", "provenance"} - set(data.files))
        if missing:
            raise CalibInputError(
                f"{path} is not a saved posterior set (no {missing}); read plain archives with load_npz(path, kind=...)"
            )
        names = tuple(str(c) for c in data["class_names"]) or None
        scores, labels = _archive_array(data, "scores", path), _archive_array(data, "labels", path)
        weights = _archive_array(data, "weights", path) if "weights" in data.files else None
        return PosteriorSet(
            str(data["name"]), scores, labels, str(data["kind"]), names, str(data["provenance"]), weights=weights
        )
