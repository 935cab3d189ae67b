"""Posterior sets: a classifier's scores on a test set, its labels, and what the scores are.

A :class:`PosteriorSet` holds scores of shape (N, K) as stored, integer labels, the declared
``kind`` of the scores (``probs``, ``logprobs`` or ``logits``; never guessed), class names where
known and a provenance string. Loaders read ``.npy`` pairs, ``.npz`` archives and a user's CSV or
Parquet table (one column per class plus a label column). :func:`one_vs_other` makes the binary
"class c vs the others" view of paper 000, Sec. 3.5 (CIFAR-1vsO, CIFAR-2vsO).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from scipy.special import logsumexp

from calib.files import atomic_write
from calib.validation import KINDS, CalibInputError, as_labels, as_logprobs

TABLE_SUFFIXES = (".csv", ".parquet", ".pq")


@dataclass(frozen=True)
class PosteriorSet:
    """Scores (N, K) of kind ``kind``, labels in [0, K), and metadata."""

    name: str
    scores: np.ndarray
    labels: np.ndarray
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
        labels = as_labels(self.labels, scores.shape[0], scores.shape[1], name=f"labels of {self.name}")
        if self.class_names is not None and len(self.class_names) != scores.shape[1]:
            raise CalibInputError(
                f"class_names of {self.name} has {len(self.class_names)} names for {scores.shape[1]} score columns"
            )
        if self.class_names is not None:
            object.__setattr__(self, "class_names", tuple(str(c) for c in self.class_names))
        object.__setattr__(self, "scores", scores)
        object.__setattr__(self, "labels", labels.astype(np.int64))

    @property
    def n_samples(self) -> int:
        return int(self.labels.size)

    @property
    def n_classes(self) -> int:
        return int(self.scores.shape[1])

    def logprobs(self) -> np.ndarray:
        """The scores as float64 log-posteriors (validated against the declared kind)."""
        return as_logprobs(self.scores, self.kind, name=f"scores of {self.name} (declared {self.kind!r})")

    def priors(self) -> np.ndarray:
        """Class frequencies of the labels (length K)."""
        return np.bincount(self.labels, minlength=self.n_classes) / self.n_samples


def one_vs_other(pset: PosteriorSet, positive: int) -> PosteriorSet:
    """Binary view "class ``positive`` vs the rest": [logsumexp(others), log q_c], labels (y == c).

    Paper 000, Sec. 3.5 (the CIFAR-XvsO tasks); class index 1 of the view is the positive class.
    """
    if not 0 <= positive < pset.n_classes:
        raise CalibInputError(f"positive must be a class index in [0, {pset.n_classes}); got {positive}")
    logp = pset.logprobs()
    others = np.delete(logp, positive, axis=1)
    binary = np.column_stack([logsumexp(others, axis=1), logp[:, positive]])
    name = pset.class_names[positive] if pset.class_names else str(positive)
    return replace(
        pset,
        name=f"{pset.name}-{positive}vsO",
        scores=binary,
        labels=(pset.labels == positive).astype(np.int64),
        kind="logprobs",
        class_names=("other", name),
        provenance=f"{pset.provenance}; one-vs-other view of class {positive}".lstrip("; "),
    )


def _require_file(path: Path, what: str) -> Path:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{what} {path} does not exist; check the path")
    return path


def _numeric_array(read, where: str) -> np.ndarray:
    """``read()`` (an array from a .npy / .npz file); object arrays (None, mixed types) are a CalibInputError."""
    try:
        return read()
    except ValueError as exc:  # numpy refuses object arrays without allow_pickle
        raise CalibInputError(
            f"{where} holds Python objects (e.g. None), not numbers ({exc}); save a numeric array"
        ) from exc


def _load_npy(path, what: str) -> np.ndarray:
    path = _require_file(path, what)
    return _numeric_array(lambda: np.load(path, allow_pickle=False), f"{what} {path}")


def _archive_array(data, key: str, path) -> np.ndarray:
    return _numeric_array(lambda: data[key], f"array {key!r} of {path}")


def load_npy_pair(scores_path, labels_path, *, kind: str, name: str | None = None, **meta) -> PosteriorSet:
    """Scores from one ``.npy`` file and labels from another."""
    scores = _load_npy(scores_path, "scores file")
    labels = _load_npy(labels_path, "labels file")
    if labels.ndim != 1 or labels.shape[0] != scores.shape[0]:
        raise CalibInputError(
            f"labels file {labels_path} holds shape {labels.shape}; it needs one label per row of the scores "
            f"file {scores_path}, shape ({scores.shape[0]},)"
        )
    return PosteriorSet(name or Path(scores_path).parent.name, scores, labels, kind, **meta)


def load_npz(
    path, *, kind: str, scores_key: str = "scores", labels_key: str = "labels", name: str | None = None, **meta
) -> PosteriorSet:
    """Scores and labels from two arrays of one ``.npz`` archive."""
    with np.load(_require_file(path, "archive"), allow_pickle=False) as data:
        missing = [k for k in (scores_key, labels_key) if k not in data.files]
        if missing:
            raise CalibInputError(
                f"{path} has no array named {missing}; it holds {sorted(data.files)}: pass scores_key= and labels_key="
            )
        scores, labels = _archive_array(data, scores_key, path), _archive_array(data, labels_key, path)
    if labels.ndim != 1 or labels.shape[0] != scores.shape[0]:
        raise CalibInputError(
            f"{path}: {labels_key} has shape {labels.shape}, scores {scores.shape}; need (N,) and (N, K)"
        )
    return PosteriorSet(name or Path(path).stem, scores, labels, kind, **meta)


def load_table(
    path,
    *,
    kind: str,
    label_column: str = "label",
    class_columns: list[str] | None = None,
    label_values: str = "auto",
    name: str | None = None,
    **meta,
) -> PosteriorSet:
    """A user's CSV or Parquet table: one column per class (``class_columns``, default all others) and labels.

    Column names become the class names. ``label_values`` says what the labels hold: ``"index"``
    (0..K-1), ``"name"`` (class column names) or ``"auto"`` (names if the column is text, indices if
    numeric; an error when numeric labels could be either, as with class columns named 1, 2, 3).
    """
    import pandas as pd

    path = _require_file(path, "table")
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise CalibInputError(f"{path}: unknown table format {suffix!r}; use one of {TABLE_SUFFIXES}")
    if suffix == ".csv":
        frame = pd.read_csv(path)
    else:
        try:
            frame = pd.read_parquet(path)
        except ImportError as exc:
            raise CalibInputError(f"reading {path} needs pyarrow: pip install pyarrow") from exc
    if label_column not in frame.columns:
        raise CalibInputError(
            f"{path} has no label column {label_column!r}; its columns are {list(frame.columns)}: "
            "pass label_column= (the CLI: --labels COL)"
        )
    columns = list(class_columns) if class_columns is not None else [c for c in frame.columns if c != label_column]
    absent = [c for c in columns if c not in frame.columns]
    if absent:
        raise CalibInputError(f"{path} has no class columns {absent}; its columns are {list(frame.columns)}")
    non_numeric = [c for c in columns if not pd.api.types.is_numeric_dtype(frame[c])]
    if non_numeric:
        raise CalibInputError(
            f"{path}: class columns {non_numeric} are not numeric; list the score columns in class_columns="
        )
    labels = frame[label_column]
    if label_values not in ("auto", "index", "name"):
        raise CalibInputError(f"label_values must be 'auto', 'index' or 'name'; got {label_values!r}")
    numeric = pd.api.types.is_numeric_dtype(labels)
    integer_names = all(str(c).lstrip("-").isdigit() for c in columns)
    if (
        label_values == "auto"
        and numeric
        and integer_names
        and [str(c) for c in columns] != list(map(str, range(len(columns))))
    ):
        raise CalibInputError(
            f"{path}: labels are numbers and the class columns are named {columns}: pass label_values='index' "
            "(labels count from 0) or label_values='name' (labels are column names)"
        )
    if label_values == "name" or (label_values == "auto" and not numeric):
        lookup = {str(c): i for i, c in enumerate(columns)}
        unknown = sorted(set(labels.astype(str)) - set(lookup))
        if unknown:
            raise CalibInputError(
                f"{path}: labels {unknown[:5]} are neither class indices nor class column names {columns}"
            )
        labels = labels.astype(str).map(lookup)
    return PosteriorSet(
        name or path.stem,
        frame[columns].to_numpy(dtype=np.float64),
        labels.to_numpy(),
        kind,
        class_names=tuple(str(c) for c in columns),
        **meta,
    )


def load_posteriors(path, *, kind: str, labels=None, **options) -> PosteriorSet:
    """Load by file type: ``.npz``, ``.csv`` / ``.parquet``, or ``.npy`` scores with ``labels`` = a ``.npy`` path."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".npz":
        return load_npz(path, kind=kind, **options)
    if suffix in TABLE_SUFFIXES:
        return load_table(path, kind=kind, **options)
    if suffix == ".npy":
        if labels is None:
            raise CalibInputError(f"{path} holds scores only: pass the labels .npy file as labels=")
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
