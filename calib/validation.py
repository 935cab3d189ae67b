"""Input validation and conversion to the library's internal form.

Inside ``calib`` posteriors are float64 log-probabilities of shape (N, K), K >= 2, and labels
are integers in [0, K). Public functions accept probabilities, log-probabilities or logits, but
the caller names which with ``kind``; nothing is guessed from the values. Every rejection is a
:class:`CalibInputError` (a ``ValueError``) whose message names the argument and the fix.
"""

from __future__ import annotations

import difflib
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Annotated

import numpy as np

from calib._internal.rows import exp_row_sums, log_softmax_rows, row_max, row_sums

KINDS = ("probs", "logprobs", "logits")

# Rows of probabilities may deviate from 1 by float32 rounding; more than this is an error.
_ROW_SUM_TOL = 1e-4
# Rows off by at most this much are probabilities rounded to a few decimals (3 decimals over 10
# classes can add up to 0.005): the error offers to renormalize them; beyond it, a class is missing.
ROUNDING_TOL = 0.01


class _TwoMessages:
    """A message in Python terms and ``cli_message``, the same in the command line's terms (defaults to
    ``message``): what :class:`CalibInputError` and :class:`CalibInputWarning` both carry."""

    def __init__(self, message: str, *, cli_message: str | None = None):
        super().__init__(message)
        self.cli_message = message if cli_message is None else cli_message

    def __reduce__(self):
        # Both messages survive pickling (raised on a worker of a cluster, it reaches the client whole).
        return self.__class__, (str(self),), {"cli_message": self.cli_message}


class CalibInputError(_TwoMessages, ValueError):
    """Raised for any invalid argument passed to a public ``calib`` function.

    The message names the argument and a fix in Python terms (``kind='logits'``); where the ``calib``
    command would need other words for the same fix (``--kind logits``), ``cli_message`` holds them,
    so each interface only ever advises what it can do.

    Parameters
    ----------
    message : str
        The problem and its fix, in terms of the Python API.
    cli_message : str, optional
        The same in terms of the command line; defaults to ``message``.

    Examples
    --------
    >>> error = CalibInputError("pass renormalize=True", cli_message="pass --renormalize")
    >>> str(error), error.cli_message
    ('pass renormalize=True', 'pass --renormalize')
    """


class MissingFileError(CalibInputError, FileNotFoundError):
    """An input file that does not exist (or is a directory): a CalibInputError and a FileNotFoundError."""


class CalibInputWarning(_TwoMessages, UserWarning):
    """Something about the input that calib handled on its own and the user should know (e.g. an index
    column kept as ids, rows renormalized): the command line prints it as a note on stderr, in the words
    of ``cli_message`` where the Python wording would name arguments (as for :class:`CalibInputError`).

    Examples
    --------
    >>> note = CalibInputWarning("pass class_columns=", cli_message="pass --class-columns")
    >>> str(note), note.cli_message
    ('pass class_columns=', 'pass --class-columns')
    """


def as_float_array(values, name: str, expected: str = "array") -> np.ndarray:
    """``np.asarray(values, float64)``, or a CalibInputError naming ``name`` for non-numeric input."""
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise CalibInputError(f"{name} must be a numeric {expected}; got {type(values).__name__}") from exc


def _as_float_matrix(scores, name: str) -> np.ndarray:
    arr = as_float_array(scores, name, "array of shape (N, K)")
    if arr.ndim != 2:
        raise CalibInputError(
            f"{name} must have shape (N, K) with one row per sample; got shape {arr.shape}. "
            "For a binary task pass both columns, e.g. np.column_stack([1 - p, p])."
        )
    if arr.shape[0] == 0:
        raise CalibInputError(f"{name} is empty: it needs at least one sample (row)")
    if arr.shape[1] < 2:
        raise CalibInputError(f"{name} needs K >= 2 columns (one per class); got {arr.shape[1]}")
    return arr


def as_vector(values, name: str, *, unit: bool = False) -> np.ndarray:
    """Return ``values`` as a non-empty, finite float64 vector (in [0, 1] with ``unit``)."""
    arr = as_float_array(values, name, "1-D array")
    if arr.ndim != 1:
        raise CalibInputError(f"{name} must be a 1-D array with one entry per sample; got shape {arr.shape}")
    if arr.size == 0:
        raise CalibInputError(f"{name} is empty: it needs at least one sample")
    if not np.all(np.isfinite(arr)):
        raise CalibInputError(f"{name} contains NaN or inf at index {int(np.flatnonzero(~np.isfinite(arr))[0])}")
    if unit and (arr.min() < 0 or arr.max() > 1):
        raise CalibInputError(f"{name} must lie in [0, 1]; found values in [{arr.min():.6g}, {arr.max():.6g}]")
    return arr


def as_binary_forecasts(confidence, outcome) -> tuple[np.ndarray, np.ndarray]:
    """``confidence`` in [0, 1] and ``outcome`` in {0, 1} as float64 vectors of one length (forecasts
    of a binary event and what happened)."""
    x = as_vector(confidence, "confidence", unit=True)
    y = as_vector(outcome, "outcome", unit=True)
    if y.shape != x.shape:
        raise CalibInputError(f"confidence and outcome must be 1-D of equal length; got {x.shape} and {y.shape}")
    if np.any((y != 0) & (y != 1)):
        raise CalibInputError("outcome must hold 0 or 1 for each sample (the forecasts are of a binary event)")
    return x, y


def as_logprobs(scores, kind: str, name: str = "scores", *, overwrite: bool = False) -> np.ndarray:
    """Return ``scores`` as float64 log-posteriors of shape (N, K).

    ``kind`` is ``"probs"`` (rows on the simplex), ``"logprobs"`` (rows whose exponentials sum
    to 1) or ``"logits"`` (any finite reals; normalized with log-softmax). ``overwrite``: when
    ``scores`` is a float64 array the caller no longer needs, compute the log-posteriors in its
    memory (the same numbers, without a second (N, K) matrix). Invalid scores are refused as
    :func:`check_scores` refuses them.
    """
    arr, sums = _checked(scores, kind, name)
    if kind == "probs":
        out = np.divide(arr, sums[:, None], out=arr if overwrite and arr.flags.writeable else None)
        with np.errstate(divide="ignore"):
            return np.log(out, out=out)
    if kind == "logprobs":
        # sums are within 1e-4 of 1: no shift is needed
        return np.subtract(arr, np.log(sums)[:, None], out=arr if overwrite and arr.flags.writeable else None)
    return log_softmax_rows(arr, overwrite=overwrite and arr.flags.writeable)


def as_finite_logits(scores, name: str = "scores", *, overwrite: bool = False) -> np.ndarray:
    """Return logits ``scores`` as they are, a float64 (N, K) matrix of finite reals, for the maps that act
    on the logits themselves (Guo et al. (2017)'s vector and matrix scaling), where a -inf has no image.

    ``overwrite``: a float64 array the caller no longer needs is returned itself, else a copy (callers
    may work in the returned memory).

    Examples
    --------
    >>> as_finite_logits([[0.0, 2.5]]).tolist()
    [[0.0, 2.5]]
    """
    arr, _ = _checked(scores, "logits", name)
    if np.isneginf(arr).any():
        rows = np.flatnonzero(np.isneginf(arr).any(axis=1))[:5].tolist()
        raise CalibInputError(
            f"{name} holds -inf logits (first rows: {rows}), which a map of the logits themselves cannot take; "
            "give finite logits, or say kind='logprobs' (log-softmax of the logits) to fit on log-posteriors",
            cli_message=f"{name} holds -inf logits (first rows: {rows}), which a map of the logits themselves "
            "cannot take; give finite logits, or give log-posteriors (--kind logprobs)",
        )
    owned = arr is not scores or (overwrite and arr.flags.writeable)  # a conversion made a new array
    return arr if owned else np.array(arr, copy=True)


def check_scores(scores, kind: str, name: str = "scores") -> None:
    """Refuse ``scores`` that :func:`as_logprobs` would refuse, with the same CalibInputError naming ``name``
    (e.g. the file they were read from), without computing the log-posteriors: O(N K) time, O(N) memory
    beside the scores.

    Examples
    --------
    >>> check_scores(np.array([[0.2, 0.8]]), "probs")
    >>> check_scores(np.array([[0.2, 0.7]]), "probs", "scores.npy")
    Traceback (most recent call last):
    ...
    calib.validation.CalibInputError: scores.npy: rows of probabilities must sum to 1; ...
    """
    _checked(scores, kind, name)


def _checked(scores, kind: str, name: str) -> tuple[np.ndarray, np.ndarray | None]:
    """``scores`` as a float64 (N, K) matrix once every check of :func:`as_logprobs` passed, with the row sums
    of the probabilities (``kind="probs"``) or of the exponentiated log-probabilities (None for logits)."""
    if kind not in KINDS:
        raise CalibInputError(f"kind must be one of {KINDS}; got {kind!r}. Say what {name} holds.")
    arr = _as_float_matrix(scores, name)
    # One pass instead of a mask per check: the sum is finite or -inf unless an entry is NaN or +inf
    # (or huge finite logits overflow it), and only then are the masks built.
    with np.errstate(over="ignore", invalid="ignore"):
        total = float(np.sum(arr))
    has_posinf = (np.isnan(total) or total == np.inf) and bool(np.isposinf(arr).any())
    if np.isnan(total) and np.isnan(arr).any():
        rows = np.flatnonzero(np.isnan(arr).any(axis=1))[:5].tolist()
        raise CalibInputError(f"{name} contains NaN (first rows: {rows}); remove or repair those samples")
    if kind == "probs":
        if has_posinf or arr.min() < 0 or arr.max() > 1:
            raise not_probabilities(arr, name)
        sums = row_sums(arr)
        _check_row_sums(sums, name, kind)
        return arr, sums
    if has_posinf:
        raise CalibInputError(f"{name} contains +inf; {kind} must be finite or -inf")
    if kind == "logprobs":
        if arr.max() > 1e-6:
            looks = "probs" if arr.min() >= 0 and arr.max() <= 1 else "logits"
            problem = "has positive values, which log-probabilities cannot have; if they are"
            raise CalibInputError(
                f"{name} (kind='logprobs') {problem} {looks}, say kind={looks!r}",
                cli_message=f"{name} (--kind logprobs) {problem} {looks}, use --kind {looks}",
            )
        sums = exp_row_sums(arr)
        _check_row_sums(sums, name, kind)
        return arr, sums
    if total == -np.inf and np.isneginf(row_max(arr)).any():
        raise CalibInputError(f"{name} has a row that is -inf everywhere; logits need a finite entry per row")
    return arr, None


def as_probs(scores, kind: str, name: str = "scores") -> np.ndarray:
    """Return ``scores`` as float64 probabilities of shape (N, K), for metrics that bin them.

    Probabilities (``kind="probs"``) are used as given (a read-only view, not a copy) when their rows
    sum to 1 within 1e-12, so a score of 0.2 stays exactly 0.2 (a trip through logarithms could move
    it across a bin edge); other rows are divided by their sums. Other kinds are exponentiated log-posteriors.
    """
    if kind != "probs":
        return np.exp(as_logprobs(scores, kind, name))
    arr = _as_float_matrix(scores, name)
    if arr.size and not (arr.min() >= 0 and arr.max() <= 1):  # NaN fails both comparisons
        if np.isnan(arr).any():
            raise CalibInputError(f"{name} contains NaN; remove or repair those samples")
        raise not_probabilities(arr, name)
    sums = row_sums(arr)
    if max(sums.max() - 1.0, 1.0 - sums.min()) > 1e-12:  # two reductions, no temporary
        _check_row_sums(sums, name, kind)
        return np.where((np.abs(sums - 1.0) > 1e-12)[:, None], arr / sums[:, None], arr)
    return _read_only(arr)


def _read_only(arr: np.ndarray) -> np.ndarray:
    view = arr.view()  # no copy of the caller's array, and no way to write into it
    view.flags.writeable = False
    return view


def top_label(probs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(confidence max_k q_k, prediction argmax_k q_k with ties to the lowest k) of each row; the
    confidence is read at the prediction (one gather) instead of a second reduction over the rows."""
    prediction = probs.argmax(axis=1)
    if probs.flags.c_contiguous:
        confidence = probs.ravel()[np.arange(probs.shape[0]) * probs.shape[1] + prediction]
    else:
        confidence = np.take_along_axis(probs, prediction[:, None], axis=1)[:, 0]
    return confidence, prediction


def not_probabilities(arr: np.ndarray, name: str, columns=None) -> CalibInputError:
    """The error for probabilities outside [0, 1], with the fix that fits what the columns hold.

    When some columns lie in [0, 1] and others do not, the others are not class scores (an index, a
    feature): the fix is to leave them out, never to read the whole table as logits. Rows of numbers in
    [0, 100] that sum to 100 are percentages: the fix divides them by 100. Logits are suggested only for
    scores that can be logits (some negative).
    """
    columns = list(range(arr.shape[1])) if columns is None else list(columns)
    cells = (arr < 0) | (arr > 1)  # NaN is not counted: it has its own error
    outside = cells.any(axis=0)
    lo, hi = float(np.nanmin(arr)), float(np.nanmax(arr))
    # Stray cells: in a few rows only. Percentages, logits and a feature column reach most rows.
    if outside.any() and cells.any(axis=1).mean() < 0.5:
        rows, cols = np.nonzero(cells)
        more = f" and {rows.size - 1} more" if rows.size > 1 else ""
        value = float(arr[rows[0], cols[0]])
        return CalibInputError(
            f"{name}: column {columns[cols[0]]!r} holds the score {value!r} at row {rows[0]} (counted from 0){more}, "
            "outside [0, 1]: a probability must lie in [0, 1]; correct the rows that hold such scores, or leave "
            "them out"
        )
    if 0 < outside.sum() < arr.shape[1]:
        odd = [c for c, o in zip(columns, outside, strict=True) if o]
        problem = f"{name}: columns {odd} hold values outside [0, 1] while the other columns are probabilities"
        return CalibInputError(
            f"{problem}; if they are not class scores, leave them out (class_columns= when loading a table, or "
            "id_column= for row ids)",
            cli_message=f"{problem}; if they are not class scores, choose the class columns with --class-columns "
            "(or name a column of row ids with --id-column)",
        )
    problem = f"{name} (kind='probs') must lie in [0, 1]; found values from {lo:.6g} to {hi:.6g}"
    cli_problem = problem.replace("(kind='probs')", "(--kind probs)")
    if arr.shape[1] == 1 and lo >= 0 and hi <= 100:  # one column (the positive class's): no rows to sum
        found = "; one column of scores from 0 to 100 reads as percentages"
        return CalibInputError(
            f"{problem}{found}, which scale='percent' divides by 100 (or divide the scores by 100)",
            cli_message=f"{cli_problem}{found}, which --scale percent divides by 100",
        )
    sums = row_sums(arr) if np.isfinite(arr).all() and arr.shape[1] > 1 else np.full(arr.shape[0], np.nan)
    if lo >= 0 and hi <= 100 and np.all(np.abs(sums - 100.0) <= 100 * ROUNDING_TOL):
        found = f"; every row sums to 100 ({sums.min():.6g} to {sums.max():.6g}): these are percentages"
        return CalibInputError(
            f"{problem}{found}, which scale='percent' divides by 100 (or divide the scores by 100)",
            cli_message=f"{cli_problem}{found}, which --scale percent divides by 100",
        )
    if lo >= 0:
        found = f"; its rows sum to {np.nanmin(sums):.6g} to {np.nanmax(sums):.6g}, not 1 (or 100, for percentages)"
        return CalibInputError(
            f"{problem}{found}: if they are counts or unnormalized scores, divide each row by its sum; if they "
            "are logits, say kind='logits'",
            cli_message=f"{cli_problem}{found}: if they are counts or unnormalized scores, divide each row by its "
            "sum; if they are logits, use --kind logits",
        )
    return CalibInputError(
        f"{problem}. If the scores are logits or log-probabilities, say kind='logits' or kind='logprobs'",
        cli_message=f"{cli_problem}. If the scores are logits or log-probabilities, use --kind logits or --kind "
        "logprobs",
    )


def _check_row_sums(sums: np.ndarray, name: str, kind: str) -> None:
    bad = np.flatnonzero(np.abs(sums - 1.0) > _ROW_SUM_TOL)
    if not bad.size:
        return
    low, high = float(sums.min()), float(sums.max())
    worst = max(high - 1.0, 1.0 - low)
    what = "probabilities" if kind == "probs" else "exponentiated log-probabilities"
    problem = (
        f"{name}: rows of {what} must sum to 1; {bad.size} rows sum to between {low:.6g} and {high:.6g} "
        f"(first: row {bad[0]}, {sums[bad[0]]:.6g})"
    )
    if worst <= ROUNDING_TOL:
        problem += f" (largest deviation {worst:.3g}, as rounding to a few decimals leaves)"
        raise CalibInputError(
            f"{problem}: divide each row by its sum (load_posteriors(..., renormalize=True) does it for a file)",
            cli_message=f"{problem}: --renormalize divides each row by its sum",
        )
    cause = "these are not probabilities over all the classes: is a class column missing or an extra one included?"
    raise CalibInputError(f"{problem}; {cause}", cli_message=f"{problem}; {cause} (see --class-columns)")


def renormalized(scores: np.ndarray, kind: str, name: str = "scores") -> tuple[np.ndarray, float]:
    """Rows of probabilities (or of exponentiated log-probabilities) rescaled to sum to 1, and the
    largest deviation of a row sum from 1 before; rows off by more than ``ROUNDING_TOL`` are refused.

    Examples
    --------
    >>> fixed, worst = renormalized(np.array([[0.333, 0.333, 0.333], [0.5, 0.5, 0.0]]), "probs")
    >>> fixed.sum(axis=1).tolist(), round(worst, 6)
    ([1.0, 1.0], 0.001)
    """
    if kind == "logits":
        return np.asarray(scores, dtype=np.float64), 0.0
    arr = _as_float_matrix(scores, name)
    if kind == "probs" and not (arr.min() >= 0 and arr.max() <= 1):
        raise not_probabilities(arr, name)
    sums = row_sums(arr) if kind == "probs" else exp_row_sums(arr)
    worst = float(max(sums.max() - 1.0, 1.0 - sums.min()))
    if worst > ROUNDING_TOL:
        _check_row_sums(sums, name, kind)
    if kind == "probs":
        return arr / sums[:, None], worst
    return arr - np.log(sums)[:, None], worst


def as_class_indices(labels, name: str = "labels") -> np.ndarray:
    """Return ``labels`` as a 1-D int64 vector (integers or integral floats; K is not checked here)."""
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise CalibInputError(f"{name} must be a 1-D vector of class indices; got shape {arr.shape}")
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise CalibInputError(f"{name} must hold integer class indices; got non-integer floats")
    elif arr.dtype.kind not in "iub":
        raise CalibInputError(f"{name} must hold integer class indices; got dtype {arr.dtype}")
    return arr.astype(np.int64, copy=False)  # int64 labels are not copied: callers never write into them


def as_labels(labels, n_samples: int, n_classes: int, name: str = "labels") -> np.ndarray:
    """Return ``labels`` as an int64 vector of length ``n_samples`` with values in [0, n_classes)."""
    arr = as_class_indices(labels, name)
    if arr.shape[0] != n_samples:
        raise CalibInputError(
            f"{name} has {arr.shape[0]} entries but the scores have {n_samples} rows; they must match"
        )
    if arr.size and (arr.min() < 0 or arr.max() >= n_classes):
        raise CalibInputError(
            f"{name} must lie in [0, {n_classes}) for {n_classes}-class scores; found {arr.min()}..{arr.max()}"
        )
    return arr


def check_inputs(
    scores, labels, kind: str, name: str = "scores", *, overwrite: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Validate a (scores, labels) pair; return (log-posteriors, int labels).

    The public functions that take posteriors and their labels take them as here; their docstrings
    refer to this one.

    Parameters
    ----------
    scores : array_like of shape (N, K)
        Posteriors of N samples over K >= 2 classes, of kind ``kind``.
    labels : array_like of shape (N,)
        The true class of each sample, integers in [0, K).
    kind : {"probs", "logprobs", "logits"}
        What ``scores`` hold; nothing is guessed from the values.
    name : str, default "scores"
        The name a refusal of ``scores`` gives them (e.g. the file they were read from).
    overwrite : bool, default False
        As for :func:`as_logprobs`.

    Returns
    -------
    (ndarray of shape (N, K), ndarray of shape (N,))
        The float64 log-posteriors and the integer labels.

    Examples
    --------
    >>> logp, y = check_inputs([[0.25, 0.75]], [1], "probs")
    >>> logp.round(4).tolist(), y.tolist()
    ([[-1.3863, -0.2877]], [1])
    """
    logp = as_logprobs(scores, kind, name, overwrite=overwrite)
    return logp, as_labels(labels, logp.shape[0], logp.shape[1])


def as_sample_weights(
    sample_weight, n_samples: int, name: str = "sample_weight", place=None, *, whole: bool = True
) -> np.ndarray | None:
    """Return ``sample_weight`` as a read-only float64 vector of ``n_samples`` weights, or None for None.

    A weight says how much a sample counts: a frequency (a deduplicated row's count), the inverse of the
    rate it was kept at (a negative kept 1 in 10 weighs 10), or a survey's design weight. Every weighted
    sum in ``calib`` is sum_i w_i v_i, so integer weights give what repeating each sample w_i times gives.
    A weight may be 0 (the sample is ignored); negative, NaN or infinite weights are refused, naming the
    first such sample, and so are weights that are all 0.

    Parameters
    ----------
    sample_weight : array_like of shape (N,) or None
        One number >= 0 per sample.
    n_samples : int
        N, the number of samples (rows of the scores).
    name : str, default "sample_weight"
        What a refusal calls them (e.g. ``"--weights column 'w'"``).
    place : callable, optional
        Maps a sample's index to where a user finds it (e.g. a file's line); default "index i".
    whole : bool, default True
        These are the weights of all the samples: refuse them when all are 0. False for a chunk of a data
        set read in parts, whose weights may all be 0 (the pass checks the total).

    Returns
    -------
    ndarray of shape (N,) or None

    Examples
    --------
    >>> as_sample_weights([1, 10, 0], 3).tolist()
    [1.0, 10.0, 0.0]
    >>> as_sample_weights([1.0, -2.0], 2)
    Traceback (most recent call last):
    ...
    calib.validation.CalibInputError: sample_weight must be >= 0; found -2 at index 1
    """
    if sample_weight is None:
        return None
    where = place or (lambda i: f"index {i}")
    arr = np.asarray(sample_weight)
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
        raise CalibInputError(f"{name} must be numbers (one weight >= 0 per sample); got values of type {arr.dtype}")
    arr = np.array(arr, dtype=np.float64)
    if arr.ndim != 1 or arr.shape[0] != n_samples:
        raise CalibInputError(
            f"{name} must be a 1-D array of one weight per sample, shape ({n_samples},); got shape {arr.shape}"
        )
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise CalibInputError(f"{name} must be finite; found {arr[i]} at {where(i)}")
    if (arr < 0).any():
        i = int(np.flatnonzero(arr < 0)[0])
        raise CalibInputError(f"{name} must be >= 0; found {arr[i]:g} at {where(i)}")
    if whole and n_samples and not arr.any():
        raise all_zero_weights(name)
    return _read_only(arr)


def all_zero_weights(name: str = "sample_weight", cli_name: str | None = None) -> CalibInputError:
    """The refusal of sample weights that are all 0 (of all the samples, however they were read), naming them
    ``name`` in Python's words and ``cli_name`` in the command's.

    Examples
    --------
    >>> str(all_zero_weights()).split(":")[0]
    'sample_weight are all 0'
    """
    problem = "are all 0: no sample counts; give at least one sample a positive weight"
    return CalibInputError(f"{name} {problem}", cli_message=f"{cli_name or name} {problem}")


def kish_effective_size(sample_weight) -> float:
    """Kish's effective sample size (sum w)^2 / sum w^2: the number of equally weighted samples whose mean
    is as precise as the weighted mean of these (Kish, 1965, Survey Sampling).

    Examples
    --------
    >>> kish_effective_size([1, 1, 1, 1]), kish_effective_size([1, 1, 1, 0])
    (4.0, 3.0)
    >>> round(kish_effective_size([1, 10]), 4)  # one sample weighing ten times another: 121 / 101
    1.198
    """
    w = np.asarray(sample_weight, dtype=np.float64)
    return effective_size(float(w.sum()), float(w @ w))


def effective_size(total: float, squares: float) -> float:
    """:func:`kish_effective_size` from the weights' sum ``total`` and the sum of their squares ``squares``
    (what a pass over chunks adds up).

    Examples
    --------
    >>> effective_size(11.0, 101.0) == kish_effective_size([1, 10])
    True
    """
    return total * total / squares


def as_priors(priors, n_classes: int, name: str = "priors") -> np.ndarray:
    """Return a probability vector of length ``n_classes``, strictly positive."""
    arr = np.asarray(priors, dtype=np.float64)
    if arr.shape != (n_classes,):
        raise CalibInputError(f"{name} must have one entry per class, shape ({n_classes},); got {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise CalibInputError(f"{name} must be finite and strictly positive; got {arr.tolist()}")
    if abs(arr.sum() - 1.0) > 1e-6:
        raise CalibInputError(f"{name} must sum to 1; got {arr.sum():.6g}")
    return arr


def class_counts(labels: np.ndarray, n_classes: int, need_all: bool = False, name: str = "labels") -> np.ndarray:
    """Per-class counts; with ``need_all`` every class must be present."""
    counts = np.bincount(labels, minlength=n_classes)
    if need_all and np.any(counts == 0):
        missing = np.flatnonzero(counts == 0).tolist()
        raise CalibInputError(
            f"{name} has no samples of classes {missing}; this needs every class present, or pass explicit priors"
        )
    return counts


def check_positive_int(value, name: str, minimum: int = 1) -> int:
    """Return ``value`` as an int >= ``minimum``."""
    return int(check(value, Integer(minimum=minimum), name))


# --- declarative rules: what an argument or a config value may be -----------------------------------------
# Each rule says what is wrong with a value (``problem``) or None; :func:`check` turns that into the
# CalibInputError of a public function, and the pipeline into the error of a config key
# (:mod:`pipeline.parameters`), so both say the same thing about the same value.


@dataclass(frozen=True)
class Integer:
    """An integer (not a bool) from ``minimum`` to ``maximum`` where given; ``zero``: 0 is allowed too, and
    means this (``n_boot=0``: no intervals).

    Examples
    --------
    >>> Integer(minimum=1).problem(0)
    'must be an integer >= 1; got 0'
    >>> Integer(2, 100, zero="no intervals").problem(1)
    'must be 0 (no intervals) or an integer from 2 to 100; got 1'
    """

    minimum: int | None = None
    maximum: int | None = None
    zero: str | None = None

    def words(self) -> str:
        """What the value must be, e.g. "an integer from 1 to 10000"."""
        low, high = self.minimum, self.maximum
        if low is not None and high is not None:
            text = f"an integer from {low} to {high}"
        else:
            text = "an integer" + (f" >= {low}" if low is not None else f" <= {high}" if high is not None else "")
        return text if self.zero is None else f"0 ({self.zero}) or {text}"

    def bounds(self) -> str:
        """The allowed range in short (a command's help), e.g. "1..10000"."""
        low, high = self.minimum, self.maximum
        span = f"{low}..{high}" if None not in (low, high) else f">= {low}" if low is not None else ""
        return span if self.zero is None else f"0: {self.zero}; else {span}"

    def problem(self, value) -> str | None:
        integral = not isinstance(value, bool) and isinstance(value, (int, np.integer))
        if integral and self.zero is not None and value == 0:
            return None
        low, high = self.minimum, self.maximum
        if integral and (low is None or value >= low) and (high is None or value <= high):
            return None
        return f"must be {self.words()}; got {value!r}"

    def invalid(self) -> Iterator:
        """Values this rule refuses: just outside each bound, a fraction, an integral float, a bool, a text."""
        if self.minimum is not None:
            yield -1 if self.zero is not None and self.minimum == 1 else self.minimum - 1
            if self.zero is not None and self.minimum > 1:
                yield -1
        if self.maximum is not None:
            yield self.maximum + 1
        yield 2.5
        yield float(self.minimum or 0) + 10.0
        yield True
        yield "3"


@dataclass(frozen=True)
class Number:
    """A finite real number (not a bool), above ``low`` and below ``high`` where given: open bounds, or
    closed ones (``closed=True``), or a closed lower and an open upper bound (``closed="low"``: [low, high)).

    Examples
    --------
    >>> Number(low=0).problem(-1.0)
    'must be a finite number > 0; got -1.0'
    >>> Number(low=0, high=1).problem(1)
    'must be a number strictly between 0 and 1; got 1'
    >>> Number(1e-5, 1, closed=True).problem(2.0)
    'must be a number from 1e-05 to 1; got 2.0'
    >>> Number(0, 0.5, closed="low").problem(0.5)
    'must be a number >= 0 and < 0.5; got 0.5'
    """

    low: float | None = None
    high: float | None = None
    closed: bool | str = False

    @property
    def _low_closed(self) -> bool:
        return self.closed is True or self.closed == "low"

    @property
    def _high_closed(self) -> bool:
        return self.closed is True

    def words(self) -> str:
        """What the value must be, e.g. "a number strictly between 0 and 1"."""
        if self.low is not None and self.high is not None:
            if self.closed == "low":
                return f"a number >= {self.low:g} and < {self.high:g}"
            between = "from {:g} to {:g}" if self.closed else "strictly between {:g} and {:g}"
            return "a number " + between.format(self.low, self.high)
        if self.low is None:
            return "a finite number"
        return f"a finite number {'>=' if self._low_closed else '>'} {self.low:g}"

    def bounds(self) -> str:
        """The allowed range in short (a command's help), e.g. "in (0, 1)"."""
        if self.low is None and self.high is None:
            return ""
        left, right = "[" if self._low_closed else "(", "]" if self._high_closed else ")"
        high = "inf" if self.high is None else f"{self.high:g}"
        return f"in {left}{self.low:g}, {high}{right if self.high is not None else ')'}"

    def problem(self, value) -> str | None:
        number = not isinstance(value, bool) and isinstance(value, (int, float, np.integer, np.floating))
        if number and np.isfinite(value):
            above = self.low is None or (value >= self.low if self._low_closed else value > self.low)
            if above and (self.high is None or (value <= self.high if self._high_closed else value < self.high)):
                return None
        return f"must be {self.words()}; got {value!r}"

    def invalid(self) -> Iterator:
        """Values this rule refuses: on an open bound or just outside a closed one, NaN, infinities, a bool, a
        text."""
        if self.low is not None:
            yield self.low - abs(self.low) / 2 - 1e-3 if self._low_closed else self.low
        if self.high is not None:
            yield self.high * 2 + 1 if self._high_closed else self.high
        yield from (float("nan"), float("inf"), float("-inf"), True, "0.5")


@dataclass(frozen=True)
class Choice:
    """One of the names ``names`` (a tuple, or a function returning them, for registries read when used);
    ``former``: (former name, name) pairs, former names still accepted for a release (:meth:`current` reads
    them as the new one with a FutureWarning) but not listed.

    Examples
    --------
    >>> Choice(("tt", "xv")).problem("tv")
    "must be one of tt, xv; got 'tv'"
    >>> Choice(("equal-width",), former=(("width", "equal-width"),)).problem("width") is None
    True
    """

    names: tuple | Callable[[], Iterable]
    former: tuple[tuple[str, str], ...] = ()

    def allowed(self) -> tuple:
        return tuple(self.names() if callable(self.names) else self.names)

    def words(self) -> str:
        return f"one of {', '.join(map(str, self.allowed()))}"

    def bounds(self) -> str:
        return ""  # a command lists the choices itself

    def problem(self, value) -> str | None:
        allowed = self.allowed()
        if isinstance(value, str | int) and not isinstance(value, bool) and (value in allowed or self._new(value)):
            return None
        return f"must be {self.words()}; got {value!r}"

    def _new(self, value) -> str | None:
        return dict(self.former).get(value) if isinstance(value, str) else None

    def current(self, value, name: str, stacklevel: int = 2):
        """``value`` (allowed), or the name a former name stands for, with a FutureWarning naming ``name``."""
        new = self._new(value)
        if new is None:
            return value
        warnings.warn(
            f"{name}={value!r} is the former name of {name}={new!r}; the former names go in the next release",
            FutureWarning,
            stacklevel=stacklevel + 1,
        )
        return new

    def invalid(self) -> Iterator:
        """Values this rule refuses: an unknown name, a known one in other letters, a bool."""
        yield "no-such-name"
        first = str(self.allowed()[0])
        if first.upper() != first and first.upper() not in self.allowed():
            yield first.upper()
        yield True


@dataclass(frozen=True)
class Boolean:
    """True or False (a numpy bool too; not 0 or 1).

    Examples
    --------
    >>> Boolean().problem(1)
    'must be True or False; got 1'
    """

    def words(self) -> str:
        return "True or False"

    def bounds(self) -> str:
        return ""

    def problem(self, value) -> str | None:
        return None if isinstance(value, bool | np.bool_) else f"must be {self.words()}; got {value!r}"

    def invalid(self) -> Iterator:
        """Values this rule refuses: a number, a text."""
        yield from (1, "yes")


@dataclass(frozen=True)
class Numbers:
    """A non-empty sequence (list, tuple or 1-D array) of numbers, each allowed by ``item``.

    Examples
    --------
    >>> Numbers(Number(0, closed=True)).problem([1.0, -1.0])
    'must be a non-empty sequence of finite numbers >= 0; got [1.0, -1.0]'
    """

    item: Number

    def words(self) -> str:
        return "a non-empty sequence of " + self.item.words().replace("a finite number", "finite numbers", 1).replace(
            "a number", "numbers", 1
        )

    def bounds(self) -> str:
        return ""

    def problem(self, value) -> str | None:
        ok = isinstance(value, list | tuple) or (isinstance(value, np.ndarray) and value.ndim == 1)
        if ok and len(value) and all(self.item.problem(v) is None for v in value):
            return None
        return f"must be {self.words()}; got {value!r}"

    def invalid(self) -> Iterator:
        """Values this rule refuses: an empty sequence, one with an invalid item, a number, a text."""
        yield ()
        yield [next(iter(self.item.invalid()))]
        yield 1.0
        yield "1.0"


# n_bins of every binned estimator and of an evaluation, declared once (BinnedCalibrationError, EvaluationSettings):
# more bins than this leave almost every bin of any data set empty or with one sample.
MAX_BINS = 10_000
N_BINS = Integer(1, MAX_BINS)
NBins = Annotated[int, N_BINS]
# Parameters that several objects share, declared once (the calibrators, EvaluationSettings).
NFolds = Annotated[int, Integer(minimum=2)]  # cross-validation folds
Seed = Annotated[int, Integer(0, 2**32 - 1)]  # the seed of numpy's RandomState
Flag = Annotated[bool, Boolean()]
NON_NEGATIVE = Number(0, closed=True)
NonNegative = Annotated[float, NON_NEGATIVE]


def check(value, rule: Integer | Number | Choice | Boolean | Numbers, name: str):
    """``value`` unchanged if ``rule`` allows it, else a CalibInputError naming ``name`` (and, for a choice,
    the closest allowed name).

    Examples
    --------
    >>> check(15, Integer(minimum=1), "n_bins")
    15
    >>> check("ece", Choice(("ECE", "NCE")), "metric")
    Traceback (most recent call last):
    ...
    calib.validation.CalibInputError: metric must be one of ECE, NCE; got 'ece'. Did you mean 'ECE'?
    """
    problem = rule.problem(value)
    if problem is None:
        return value
    if isinstance(rule, Choice):
        close = closest(value, rule.allowed())
        problem += f". Did you mean {close!r}?" if close is not None else ""
    raise CalibInputError(f"{name} {problem}")


def closest(value, allowed: Iterable):
    """The allowed name most like ``value`` (case aside), or None if none is close.

    Examples
    --------
    >>> closest("ece", ("ECE", "NCE")), closest("xyz", ("ECE",))
    ('ECE', None)
    """
    by_lower = {str(name).lower(): name for name in allowed}
    close = difflib.get_close_matches(str(value).lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[close[0]] if close else None
