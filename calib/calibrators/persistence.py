"""Saving a fitted calibrator as a JSON file of plain numbers, and loading it back without running code.

A pickled model runs code as it is read, before anything can check what it is; a calibrator file
holds only JSON values. It is one object (UTF-8, sorted keys, indent 1) with

- ``format`` ("calib-calibrator"), ``format_version`` (5) and ``calib_version`` (the calib-repro
  release that wrote it: a file from a newer release is read with a warning);
- ``method``: the ``calib calibrate --method`` name, and ``class``: the class it stands for;
- ``init``: the constructor parameters (``get_params()``): numbers, strings, booleans, null, lists;
- ``n_classes``: K, ``class_names``: the K class names in the order of the model's classes (null
  when the training scores had none), so that scores whose columns come in another order are matched
  to the classes by name; ``kind``: what the training scores were ("probs", "logprobs", "logits",
  or null);
- ``fitted``: every attribute the fit set, as the class declares them in ``_fitted_fields``
  (:mod:`calib.calibrators.base`): floats, integers and booleans as JSON values, strings, and arrays as
  ``{"data": nested lists, "dtype": "float64" or "int64", "shape": [...]}``, each checked against its
  declared type, shape and range (a scale is positive, a probability lies in [0, 1], bin edges increase);
  among them the size of the fit, ``n_parameters_`` (the parameters fitted, which must be the count of
  the fitted state) and ``n_fit_rows_`` (the calibration rows), so that a model with more than one
  parameter per :data:`calib.calibrators.base.ROWS_PER_PARAMETER` rows says so in its file too.

Files of format version 1 (no class names, no kind, no zero treatment) are still read: their
calibrators never smoothed zeros (``zero_smoothing_`` = 0). Files of versions 1 and 2 predate the
recorded gradient norm (``gradient_norm_``, read as NaN: not recorded) and the centred vector scaling:
a vector-scaling file of those versions without ``last_class_reference`` holds the map on the
uncentred log-posteriors, softmax(w ⊙ ln s + b), and is read as that (``features_`` =
"log_posteriors"); one with it, the survey's (``features_`` = "last_class_ratios"). Version 3 files
hold ``features_`` themselves. Files of versions 1 to 3 predate the size of the fit: ``n_parameters_`` is
counted from their fitted state, and ``n_fit_rows_`` is 0 (not recorded). A vector-scaling file without the
``last_class_reference`` parameter was written when the survey's definition (log-ratios to the last
class) was the only one, and is read as such. Files of versions 1 to 4 predate the maps of Guo et al. (2017) on
logits as given (version 5): their vector scaling is read as the method its ``features_`` names
("vector_clr", "dirichlet_diagonal" or "vector_log_ratios"), their matrix scaling (the survey's, on log-ratios to
the last class, with a ridge ``reg`` toward the identity) as "matrix_log_ratios" with that ridge
(``penalty="l2", normalized=False``), and their Dirichlet calibrator with the penalty it was fitted with (given,
not cross-validated). A file larger than MAX_FILE_BYTES is
refused before it is parsed.

Floats are written as their ``repr`` (as :mod:`json` does), which reads back as the same float64,
so a loaded calibrator predicts bit for bit what the saved one did. Plain JSON has no NaN or
infinity: they are the strings "nan", "inf" and "-inf", allowed only in the attributes where
fitting itself can give them.

Loading never unpickles and never imports or calls anything the file names: ``method`` selects a
class from the fixed table :data:`METHODS`, and the file is checked in full (format, method and
class, parameter names, every fitted attribute with its shape, and finiteness) before that class
is built. Every problem is one :class:`calib.validation.CalibInputError` naming the file.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections import Counter
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

import numpy as np

from calib._internal.files import atomic_write
from calib._internal.json_values import json_float
from calib.calibrators.base import SIZE_FIELDS, Calibrator, FittedField
from calib.calibrators.registry import CALIBRATORS, SAVABLE
from calib.calibrators.registry import METHODS as METHOD_PARAMS
from calib.validation import KINDS, CalibInputError, CalibInputWarning

FORMAT = "calib-calibrator"
FORMAT_VERSION = 5
# The largest model file read: a matrix or Dirichlet calibrator of 1500 classes (2.25 million floats)
# takes about 50 MB. Parsing JSON takes about ten times a file's size in memory.
MAX_FILE_BYTES = 64 * 2**20

# The calibrators a file may hold, by their registry names (calib.calibrators.registry).
METHODS: dict[str, type[Calibrator]] = {name: CALIBRATORS[name] for name in SAVABLE}

_KEYS = {
    1: ("calib_version", "class", "fitted", "format", "format_version", "init", "method", "n_classes"),
    2: ("calib_version", "class", "class_names", "fitted", "format", "format_version", "init", "kind", "method")
    + ("n_classes",),
}
_KEYS[3] = _KEYS[4] = _KEYS[2]
_KEYS[5] = (*_KEYS[2], "cross_validation")
_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_DTYPES = {"float64": np.float64, "int64": np.int64}
_INT64 = np.iinfo(np.int64)
_MAX_FLOAT = int(np.finfo(np.float64).max)  # float() of a larger JSON integer overflows
_NEVER_PICKLES = "calib never loads pickles, which can run code; refit and save with --save-model MODEL.json"
_REFIT = "refit the calibrator and save it again with --save-model MODEL.json"


@dataclass(frozen=True)
class SavedCalibrator:
    """A calibrator read from a file (:func:`read_calibrator`): the fitted ``model``, its ``method``
    name, the ``class_names`` of its classes in order (None if the file has none), the ``kind`` of
    its training scores (None if unknown) and the ``calib_version`` that wrote it."""

    model: Calibrator
    method: str
    class_names: tuple[str, ...] | None
    kind: str | None
    calib_version: str
    cross_validation: dict | None = None


def save_calibrator(
    model: Calibrator,
    path: str | Path,
    *,
    method: str,
    class_names: list[str] | tuple[str, ...] | None = None,
    kind: str | None = None,
    cross_validation: dict | None = None,
) -> None:
    """Write a fitted calibrator to a JSON file that holds numbers only (see the module docstring).

    The file is one JSON object: the format and its version, the calib release, the method name and
    class, the constructor parameters (``get_params()``), K, the class names and the kind of the
    training scores, and every fitted attribute the class declares, floats written as their ``repr``
    so that they read back as the same float64 (NaN and infinities as the strings "nan", "inf",
    "-inf"). O(size of the fitted attributes) time.

    Source: the file format is calib's own, with no published counterpart; the calibrators such a
    file holds are those of Ferrer & Ramos (2024), eq. 23 ("dp", "temperature"), Guo et al. (2017)
    ("vector", "matrix"), Kull et al. (2019) ("dirichlet"), Kull et al. (2017) ("beta"), Ayer et al.
    (1955) ("isotonic") and Zadrozny & Elkan (2001) ("histogram").

    Parameters
    ----------
    model : Calibrator
        A fitted calibrator of exactly the class of ``method`` (e.g. ``TemperatureScaling`` for
        "temperature"), whose parameters are numbers, strings, booleans, None or lists of them.
    path : str or Path
        The file to write, ending in ``.json``. It is written atomically: a failed write leaves
        the previous file, if any.
    method : str
        The ``calib calibrate --method`` name of the calibrator: one of :data:`METHODS`.
    class_names : sequence of str, optional
        The names of the model's K classes, in the order of its columns: a file applied later is
        matched to them by name (``calib calibrate --model``).
    kind : {"probs", "logprobs", "logits"}, optional
        What the training scores were, for the record.
    cross_validation : dict, optional
        The record of a cross-validated comparison of the calibrator with the raw scores and other
        calibrators (:meth:`calib.calibrators.selection.Comparison.as_record`): plain JSON values, kept
        as they are and shown by ``calib calibrate --model``.

    Returns
    -------
    None

    Raises
    ------
    CalibInputError
        For a path not ending in ``.json``, an unknown method, a model of another class or not
        fitted, a parameter that JSON cannot hold, K class names that are not distinct strings, or a
        fitted attribute outside its declared range.

    Examples
    --------
    >>> import json, tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> from calib.calibrators import TemperatureScaling, save_calibrator
    >>> rng = np.random.default_rng(0)
    >>> logits, labels = rng.normal(size=(100, 3)), rng.integers(0, 3, size=100)
    >>> model = TemperatureScaling().fit(logits, labels, kind="logits")
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = Path(folder.name) / "temperature.json"
    >>> save_calibrator(model, path, method="temperature")
    >>> saved = json.loads(path.read_text(encoding="utf-8"))
    >>> saved["class"], saved["n_classes"]
    ('TemperatureScaling', 3)
    >>> sorted(saved["fitted"])  # doctest: +NORMALIZE_WHITESPACE
    ['bias_', 'converged_', 'gradient_norm_', 'n_fit_rows_', 'n_parameters_', 'scale_', 'zero_loss_share_',
     'zero_smoothing_']
    >>> saved["fitted"]["scale_"] == model.scale_, saved["fitted"]["n_parameters_"], saved["fitted"]["n_fit_rows_"]
    (True, 1, 100)
    >>> folder.cleanup()
    """
    if Path(path).suffix.lower() != ".json":
        raise CalibInputError(f"path {path}: a calibrator is saved as JSON; give a file name ending in .json")
    if not isinstance(method, str) or method not in METHODS:
        raise CalibInputError(
            f"method must be one of {sorted(METHODS)} (calib calibrate --method); got {_short(method)}"
        )
    cls = METHODS[method]
    if type(model) is not cls:
        raise CalibInputError(f"model is a {type(model).__name__}, but method {method!r} saves a {cls.__name__}")
    _check_method_params(method, model.get_params(deep=False), "model")
    if cross_validation is not None and not _is_plain_record(cross_validation):
        raise CalibInputError("cross_validation must be a JSON object of plain values (numbers, strings, lists)")
    if not hasattr(model, "n_classes_"):
        raise CalibInputError(f"model ({cls.__name__}) is not fitted yet: call fit(scores, labels, kind=...) first")
    names = _checked_class_names(class_names, model.n_classes_)
    if kind is not None and kind not in KINDS:
        raise CalibInputError(f"kind must be one of {KINDS} or None; got {_short(kind)}")
    init = model.get_params(deep=False)
    for name, value in init.items():
        if not _is_plain(value):
            raise CalibInputError(
                f"model parameter {name}={_short(value)} cannot be saved: parameters must be numbers, strings, "
                "booleans, None or lists of them (give arrays and tuples as lists)"
            )
    try:
        fields = model._saved_fields()
        state = model._fitted_state()
        fitted = {name: _encode(state[name], field, name) for name, field in fields.items()}
    except CalibInputError as exc:
        raise CalibInputError(f"model ({cls.__name__}) cannot be saved: {exc}") from exc
    document = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "calib_version": version("calib-repro"),
        "method": method,
        "class": cls.__name__,
        "init": init,
        "n_classes": int(model.n_classes_),
        "class_names": None if names is None else list(names),
        "kind": kind,
        "fitted": fitted,
        "cross_validation": cross_validation,
    }
    # allow_nan=False: the file stays plain JSON (non-finite values are strings by now).
    text = json.dumps(document, sort_keys=True, indent=1, allow_nan=False, ensure_ascii=False) + "\n"
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def load_calibrator(path: str | Path) -> tuple[Calibrator, str]:
    """Read a calibrator written by :func:`save_calibrator` (``calib calibrate --save-model``).

    The file is read as text and never unpickled: a pickle (or anything else that is not such a
    JSON file) is refused before any of it is interpreted. The whole file is checked before the
    calibrator is built, so a damaged or hand-edited file gives one error, never a half-built model.
    :func:`read_calibrator` gives the class names and training kind the file records as well.

    Source: the file format is calib's own, with no published counterpart; the calibrators such a
    file holds are those of Ferrer & Ramos (2024), eq. 23 ("dp", "temperature"), Guo et al. (2017)
    ("vector", "matrix"), Kull et al. (2019) ("dirichlet"), Kull et al. (2017) ("beta"), Ayer et al.
    (1955) ("isotonic") and Zadrozny & Elkan (2001) ("histogram").

    Parameters
    ----------
    path : str or Path
        A ``.json`` file written by :func:`save_calibrator`.

    Returns
    -------
    model : Calibrator
        The fitted calibrator, predicting bit for bit what the saved one did.
    method : str
        Its ``calib calibrate --method`` name.

    Raises
    ------
    CalibInputError
        Naming the file, for a missing, unreadable or too large file, a pickle, text that is not such
        a JSON object, or any field that does not match what the method's class declares.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> from calib.calibrators import BetaCalibrator, load_calibrator, save_calibrator
    >>> rng = np.random.default_rng(0)
    >>> p1 = rng.uniform(0.01, 0.99, size=200)
    >>> probs, labels = np.column_stack([1 - p1, p1]), (rng.uniform(size=200) < p1).astype(int)
    >>> model = BetaCalibrator().fit(probs, labels, kind="probs")
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = Path(folder.name) / "beta.json"
    >>> save_calibrator(model, path, method="beta")
    >>> loaded, method = load_calibrator(path)
    >>> method, np.array_equal(loaded.predict_proba(probs, kind="probs"), model.predict_proba(probs, kind="probs"))
    ('beta', True)
    >>> load_calibrator(Path(folder.name) / "model.pkl")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calib.validation.CalibInputError: .../model.pkl: calib reads calibrators from .json files ...
    >>> folder.cleanup()
    """
    saved = read_calibrator(path)
    return saved.model, saved.method


def read_calibrator(path: str | Path) -> SavedCalibrator:
    """Read a calibrator file as :func:`load_calibrator` does, with what it records besides the model.

    Parameters
    ----------
    path : str or Path
        A ``.json`` file written by :func:`save_calibrator`.

    Returns
    -------
    SavedCalibrator
        The model, its method name, its class names (None in a file without them), the kind of its
        training scores (None if unrecorded) and the calib version that wrote the file. A file from a
        newer calib release than this one gives a :class:`calib.validation.CalibInputWarning`.

    Raises
    ------
    CalibInputError
        As :func:`load_calibrator`.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import numpy as np
    >>> from calib.calibrators import TemperatureScaling, save_calibrator
    >>> rng = np.random.default_rng(0)
    >>> logits, labels = rng.normal(size=(100, 3)), rng.integers(0, 3, size=100)
    >>> model = TemperatureScaling().fit(logits, labels, kind="logits")
    >>> folder = tempfile.TemporaryDirectory()
    >>> path = Path(folder.name) / "t.json"
    >>> save_calibrator(model, path, method="temperature", class_names=["cat", "dog", "fox"], kind="logits")
    >>> saved = read_calibrator(path)
    >>> saved.method, saved.class_names, saved.kind
    ('temperature', ('cat', 'dog', 'fox'), 'logits')
    >>> folder.cleanup()
    """
    if Path(path).suffix.lower() != ".json":
        raise CalibInputError(
            f"{path}: calib reads calibrators from .json files written by `calib calibrate --save-model`; "
            + _NEVER_PICKLES
        )
    document = _parse(_read(path), path)
    try:
        saved = _build(document)
    except CalibInputError as exc:
        raise CalibInputError(f"{path}: {exc}; {_REFIT}") from exc
    if _newer(saved.calib_version, version("calib-repro")):
        warnings.warn(
            f"{path} was written by calib {saved.calib_version}, newer than this calib {version('calib-repro')}: "
            "it was read with this release's rules; upgrade calib if its predictions look wrong",
            CalibInputWarning,
            stacklevel=2,
        )
    return saved


def _newer(written: str, running: str) -> bool:
    """Whether release ``written`` is newer than ``running`` (dotted numbers; anything after them ignored)."""

    def numbers(text: str) -> tuple[int, ...]:
        match = re.match(r"\d+(?:\.\d+)*", text)
        return tuple(int(part) for part in match.group().split(".")) if match else ()

    return numbers(written) > numbers(running)


def _read(path: str | Path) -> bytes:
    """The file's bytes, refusing one larger than MAX_FILE_BYTES before reading it whole."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError as exc:
        raise CalibInputError(f"{path}: no such file") from exc
    except IsADirectoryError as exc:
        raise CalibInputError(f"{path}: is a directory, not a calibrator file") from exc
    except OSError as exc:
        raise CalibInputError(f"{path}: cannot be read ({exc.strerror})") from exc
    if len(raw) > MAX_FILE_BYTES:
        raise CalibInputError(
            f"{path} is larger than {MAX_FILE_BYTES // 2**20} MiB, more than any calibrator file calib writes "
            f"(a {MAX_FILE_BYTES // 2**20} MiB file holds a matrix calibrator of about 1500 classes): "
            "it is not a calibrator file; " + _REFIT
        )
    return raw


def _parse(raw: bytes, path: str | Path) -> object:
    """The JSON value in ``raw``; anything else, a pickle first of all, is refused without being interpreted."""
    # Pickles of protocol 2 to 5 open with the PROTO opcode 0x80 and the protocol number.
    if len(raw) >= 2 and raw[0] == 0x80 and 2 <= raw[1] <= 5:
        raise CalibInputError(
            f"{path} is a pickle, not a calibrator file written by `calib calibrate --save-model`: {_NEVER_PICKLES}"
        )
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant, object_pairs_hook=_unique_keys)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise CalibInputError(
            f"{path} is not a calibrator file written by `calib calibrate --save-model` "
            f"(not UTF-8 JSON: {exc}): {_NEVER_PICKLES}"
        ) from exc


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not plain JSON")


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object as a dict; a repeated key (which json would resolve silently) is an error."""
    document = dict(pairs)
    if len(document) != len(pairs):
        repeated = sorted(key for key, count in Counter(key for key, _ in pairs).items() if count > 1)
        raise ValueError(f"repeated keys in one object: {repeated}")
    return document


def _build(document: object) -> SavedCalibrator:
    """The calibrator a parsed file describes, after checking all of it (CalibInputError without the path)."""
    if not isinstance(document, dict):
        raise CalibInputError(f"holds a JSON {type(document).__name__}, not a calibrator object")
    if document.get("format") != FORMAT:
        raise CalibInputError(f"format is {_short(document.get('format'))}, not {FORMAT!r}")
    file_version = document.get("format_version")
    is_int = isinstance(file_version, int) and not isinstance(file_version, bool)
    if not is_int or file_version not in _KEYS:
        newer = is_int and file_version > FORMAT_VERSION
        hint = f" (written by calib {_short(document.get('calib_version'))}; upgrade calib to read it)" if newer else ""
        raise CalibInputError(
            f"format_version is {_short(file_version)}; this calib reads versions {sorted(_KEYS)}{hint}"
        )
    _check_keys(set(document), set(_KEYS[file_version]), "keys")
    if not isinstance(document["calib_version"], str):
        raise CalibInputError(f"calib_version must be a string; got {_short(document['calib_version'])}")
    method = document["method"]
    if file_version < 5 and method in ("vector", "matrix", "dirichlet"):
        document = _before_version_5(document)
        method = document["method"]
    if not isinstance(method, str) or method not in METHODS:
        raise CalibInputError(f"unknown method {_short(method)}; known: {sorted(METHODS)}")
    cls = METHODS[method]
    if document["class"] != cls.__name__:
        raise CalibInputError(f"class {_short(document['class'])} does not match method {method!r}, a {cls.__name__}")
    init = document["init"]
    if not isinstance(init, dict):
        raise CalibInputError(f"init must be an object of {cls.__name__}'s parameters; got {_short(init)}")
    _check_keys(set(init), set(cls().get_params(deep=False)), f"init keys ({cls.__name__}'s parameters)")
    _check_method_params(method, init, "init")
    record = document.get("cross_validation")
    if record is not None and not _is_plain_record(record):
        raise CalibInputError("cross_validation must be null or an object of plain values")
    for name, value in init.items():
        if not _is_plain(value):
            raise CalibInputError(f"init.{name} must be a number, string, boolean, null or a list; got {_short(value)}")
    k = document["n_classes"]
    if isinstance(k, bool) or not isinstance(k, int) or k < 2 or (cls.binary_only and k != 2):
        needed = "2 (the calibrator is binary only)" if cls.binary_only else "an integer >= 2"
        raise CalibInputError(f"n_classes must be {needed}; got {_short(k)}")
    names = _checked_class_names(document.get("class_names"), k, "class_names")
    kind = document.get("kind")
    if kind is not None and kind not in KINDS:
        raise CalibInputError(f"kind must be one of {KINDS} or null; got {_short(kind)}")
    fitted = document["fitted"]
    if not isinstance(fitted, dict):
        raise CalibInputError(f"fitted must be an object of fitted attributes; got {_short(fitted)}")
    model = cls(**init)  # stores the parameters, nothing else (scikit-learn convention)
    model.n_classes_ = k
    try:
        fields = model._saved_fields()
    except CalibInputError as exc:
        raise CalibInputError(f"init: {exc}") from exc
    if file_version == 1 and model.log_scale:  # written before the zero treatment: zeros were never smoothed
        fitted = fitted | {"zero_smoothing_": 0.0, "zero_loss_share_": 0.0}
    if file_version < 3:
        fitted = fitted | _before_version_3(method, init, fields, fitted)
    if file_version < 4:  # the size of the fit was not recorded: counted from the state below, rows unknown
        fields = {name: field for name, field in fields.items() if name not in SIZE_FIELDS}
    _check_keys(set(fitted), set(fields), f"fitted attributes of {cls.__name__}")
    state = {name: _decode(fitted[name], field, f"fitted.{name}") for name, field in fields.items()}
    size = {name: state.pop(name, 0) for name in SIZE_FIELDS}
    try:
        model._restore_fitted_state(state)
    except CalibInputError as exc:
        raise CalibInputError(f"fitted: {exc}") from exc
    counted = model._n_parameters()
    if file_version >= 4 and size["n_parameters_"] != counted:
        raise CalibInputError(
            f"fitted.n_parameters_ is {size['n_parameters_']}, but the fitted attributes hold {counted} parameters"
        )
    model.n_parameters_, model.n_fit_rows_ = counted, size["n_fit_rows_"]
    return SavedCalibrator(model, method, names, kind, document["calib_version"], record)


def _before_version_3(method: str, init: dict, fields: dict[str, FittedField], fitted: dict) -> dict[str, object]:
    """The attribute a file of format version 1 or 2 lacks: no gradient norm was recorded (NaN). (Their
    vector scaling's ``features_`` is :func:`_before_version_5`'s.) Attributes the file holds are not
    replaced (a version 2 file that holds them is refused as an unexpected key by the check that follows)."""
    added: dict[str, object] = {}
    if "gradient_norm_" in fields and "gradient_norm_" not in fitted:
        added["gradient_norm_"] = "nan"
    return added


def _before_version_5(document: dict) -> dict:
    """A file of format version 1 to 4 as version 5 writes the same map: its method named for its features,
    the parameters of today's classes for the penalty it was fitted with, and the fitted attributes that
    record the penalty. A file whose parts are not as those versions wrote them is returned unchanged, to be
    refused by the checks that follow."""
    init, fitted, method = document.get("init"), document.get("fitted"), document["method"]
    if not isinstance(init, dict) or not isinstance(fitted, dict):
        return document
    if method == "vector":
        reference = init.get("last_class_reference", True) is True  # absent: the survey's was the only one
        features = fitted.get("features_")
        if document.get("format_version") in (1, 2):
            features = "last_class_ratios" if reference else "log_posteriors"
            fitted = fitted | {"features_": features}
        renamed = {
            "clr": "vector_clr",
            "log_posteriors": "dirichlet_diagonal",
            "last_class_ratios": "vector_log_ratios",
        }
        if features not in renamed or set(init) - {"last_class_reference"}:
            return document
        return document | {"method": renamed[features], "init": {"features": features}, "fitted": fitted}
    if method == "matrix":
        if set(init) != {"reg"}:
            return document
        penalty = {"features": "last_class_ratios", "reg_lambda": init["reg"], "reg_mu": 0.0, "penalty": "l2"}
        new_init = _default_init("matrix_log_ratios") | penalty | {"normalized": False}
        record = {"features_": "last_class_ratios"} | _given_penalty(init["reg"], 0.0)
        return document | {"method": "matrix_log_ratios", "init": new_init, "fitted": fitted | record}
    if set(init) != {"reg_lambda", "reg_mu"}:
        return document
    new_init = _default_init("dirichlet") | init
    record = {"features_": "log_posteriors"} | _given_penalty(init["reg_lambda"], fitted.get("reg_mu_"))
    return document | {"init": new_init, "fitted": fitted | record}


def _default_init(method: str) -> dict[str, object]:
    """The constructor parameters of ``method`` as a file writes them (tuples as lists)."""
    params = CALIBRATORS[method]().get_params(deep=False)
    return {name: list(value) if isinstance(value, tuple) else value for name, value in params.items()}


def _given_penalty(lam: object, mu: object) -> dict[str, object]:
    """The fitted attributes of a penalty that was given, not cross-validated."""
    return {
        "reg_lambda_": lam,
        "reg_mu_": mu,
        "cv_grid_": {"data": [[lam, mu]], "dtype": "float64", "shape": [1, 2]},
        "cv_losses_": {"data": ["nan"], "dtype": "float64", "shape": [1]},
    }


def _checked_class_names(names: object, k: int, what: str = "class_names") -> tuple[str, ...] | None:
    """``names`` as a tuple of K distinct strings, or None; anything else is a CalibInputError."""
    if names is None:
        return None
    if isinstance(names, str) or not isinstance(names, list | tuple) or not all(isinstance(n, str) for n in names):
        raise CalibInputError(f"{what} must be a list of {k} strings or null; got {_short(names)}")
    if len(names) != k or len(set(names)) != k:
        raise CalibInputError(f"{what} must hold {k} distinct names, one per class; got {_short(list(names))}")
    return tuple(names)


def _check_keys(found: set[str], expected: set[str], what: str) -> None:
    missing, extra = sorted(expected - found), sorted(found - expected)
    if missing or extra:
        parts = [f"missing {missing}"] * bool(missing) + [f"unexpected {extra}"] * bool(extra)
        raise CalibInputError(f"{what}: {', '.join(parts)}")


def _check_method_params(method: str, params: dict, what: str) -> None:
    """Refuse parameters that make the class another method than ``method``: the features its map acts on
    (e.g. a VectorScaling with features="clr" saved as "vector", which names the map on logits as given).
    Other parameters a method sets are defaults (the survey's matrix scaling is unpenalized by default)."""
    cls, method_params = METHOD_PARAMS[method]
    defaults = cls().get_params(deep=False)
    if "features" not in defaults:
        return
    expected, given = method_params.get("features", defaults["features"]), params.get("features")
    if given != expected:
        others = [
            m for m, (c, p) in METHOD_PARAMS.items() if c is cls and p.get("features", defaults["features"]) == given
        ]
        hint = f"; that is method {others[0]!r}" if others else ""
        raise CalibInputError(
            f"{what} has features={_short(given)}, but method {method!r} has features={expected!r}{hint}"
        )


def _is_plain_record(record: object) -> bool:
    """Whether ``record`` is a dict of str keys whose values are plain (:func:`_is_plain`) or such dicts."""
    if not isinstance(record, dict):
        return False
    return all(
        isinstance(key, str) and (_is_plain_record(value) if isinstance(value, dict) else _is_plain(value))
        for key, value in record.items()
    )


def _is_plain(value: object) -> bool:
    """Whether ``value`` is None, a bool, int, str or finite float, or a list of such (nested): a JSON
    value that reads back as itself. Iterative, so a deeply nested list cannot exhaust the stack."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list | tuple):  # a tuple is written as a list
            stack.extend(item)
        elif not (item is None or isinstance(item, (int, str)) or (isinstance(item, float) and math.isfinite(item))):
            return False  # (a bool is an int)
    return True


def _encode(value: object, field: FittedField, name: str) -> object:
    """The JSON form of a fitted attribute, after checking it against its declared ``field``."""
    if field.kind == "float":
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (float, np.floating)):
            raise CalibInputError(f"{name} must be a float; got {value!r}")
        value = float(value)
    elif field.kind == "int":
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise CalibInputError(f"{name} must be an integer; got {value!r}")
        value = int(value)
    elif field.kind == "bool":
        if not isinstance(value, (bool, np.bool_)):
            raise CalibInputError(f"{name} must be a boolean; got {value!r}")
        value = bool(value)
    elif field.kind == "array" and not isinstance(value, np.ndarray):
        raise CalibInputError(f"{name} must be a numpy array; got {type(value).__name__}")
    _check_value(value, field, name)
    if field.kind == "float":
        return json_float(value)
    if field.kind == "array":
        data = value.tolist()  # Python floats and ints, which json writes exactly
        if value.dtype == np.float64 and not np.all(np.isfinite(value)):
            data = _map_leaves(data, json_float)
        return {"data": data, "dtype": field.dtype, "shape": list(value.shape)}
    return value


def _decode(data: object, field: FittedField, name: str) -> object:
    """A fitted attribute from its JSON form, checked against its declared ``field``."""
    if field.kind == "float":
        value = _float_from_json(data, name)
    elif field.kind == "int":
        if isinstance(data, bool) or not isinstance(data, int) or not _INT64.min <= data <= _INT64.max:
            raise CalibInputError(f"{name} must be a 64-bit integer; got {_short(data)}")
        value = data
    elif field.kind == "bool":
        if not isinstance(data, bool):
            raise CalibInputError(f"{name} must be true or false; got {_short(data)}")
        value = data
    elif field.kind == "str":
        if not isinstance(data, str):
            raise CalibInputError(f"{name} must be a string; got {_short(data)}")
        value = data
    else:
        value = _array_from_json(data, field, name)
    _check_value(value, field, name)
    return value


def _array_from_json(data: object, field: FittedField, name: str) -> np.ndarray:
    if not isinstance(data, dict) or set(data) != {"data", "dtype", "shape"}:
        raise CalibInputError(f"{name} must be an object with keys data, dtype and shape; got {_short(data)}")
    if data["dtype"] != field.dtype:
        raise CalibInputError(f"{name} has dtype {_short(data['dtype'])}, expected {field.dtype!r}")
    shape = data["shape"]
    if (
        not isinstance(shape, list)
        or len(shape) != len(field.shape)
        or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in shape)
        or any(want is not None and n != want for n, want in zip(shape, field.shape, strict=True))
    ):
        raise CalibInputError(f"{name} has shape {_short(shape)}, expected {_shape_text(field.shape)}")
    flat = _flatten(data["data"], shape, name)
    if field.dtype == "int64":
        if not all(isinstance(x, int) and not isinstance(x, bool) and _INT64.min <= x <= _INT64.max for x in flat):
            raise CalibInputError(f"{name} must hold 64-bit integers")
        values = flat
    else:
        values = [_float_from_json(x, name) for x in flat]
    return np.array(values, dtype=_DTYPES[field.dtype]).reshape(shape)


def _flatten(data: object, shape: list[int], name: str) -> list[object]:
    """The entries of nested lists ``data`` in row-major order, checking that they have ``shape``."""
    level = [data]
    for depth, n in enumerate(shape):
        if not all(isinstance(item, list) and len(item) == n for item in level):
            raise CalibInputError(f"{name}: data does not have the shape {shape} given (at depth {depth})")
        level = [x for item in level for x in item]
    return level


def _check_value(value: object, field: FittedField, name: str) -> None:
    """Checks shared by saving and loading: a str's choices, an array's dtype and shape, finiteness, range."""
    if field.kind == "str":
        if not isinstance(value, str) or (field.choices and value not in field.choices):
            raise CalibInputError(f"{name} must be one of {field.choices}; got {_short(value)}")
        return
    if field.kind == "array":
        if value.dtype != _DTYPES[field.dtype]:
            raise CalibInputError(f"{name} has dtype {value.dtype}, expected {field.dtype}")
        if value.ndim != len(field.shape) or any(
            (want is None and n < 1) or (want is not None and n != want)
            for n, want in zip(value.shape, field.shape, strict=True)
        ):
            raise CalibInputError(f"{name} has shape {list(value.shape)}, expected {_shape_text(field.shape)}")
    if field.kind in ("float", "array") and field.finite and not np.all(np.isfinite(value)):
        raise CalibInputError(f"{name} must be finite (no NaN or infinity)")
    if field.kind in ("float", "int", "array"):
        _check_range(np.asarray(value), field, name)


def _check_range(value: np.ndarray, field: FittedField, name: str) -> None:
    """The declared range of a number or array (NaN, where allowed, is outside every range check)."""
    defined = value[~np.isnan(value)] if value.dtype.kind == "f" else value.ravel()
    low = -math.inf if field.low is None else field.low
    high = math.inf if field.high is None else field.high
    if defined.size and (defined.min() < low or defined.max() > high):
        bounds = f"[{_short(field.low)}, {_short(field.high)}]" if field.high is not None else f">= {field.low}"
        found = float(defined.min() if defined.min() < low else defined.max())
        raise CalibInputError(f"{name} must lie in {bounds}; found {found:.6g}")
    if field.increasing and np.any(np.diff(value) < 0):
        raise CalibInputError(f"{name} must be non-decreasing")


def _float_from_json(data: object, name: str) -> float:
    if isinstance(data, str) and data in _NON_FINITE:
        return _NON_FINITE[data]
    too_large = isinstance(data, int) and abs(data) > _MAX_FLOAT
    if isinstance(data, bool) or not isinstance(data, (int, float)) or too_large:
        raise CalibInputError(f'{name} must hold float64 numbers (or "nan", "inf", "-inf"); got {_short(data)}')
    return float(data)


def _map_leaves(data: list, function) -> list:
    return [_map_leaves(x, function) if isinstance(x, list) else function(x) for x in data]


def _shape_text(shape: tuple[int | None, ...]) -> str:
    return "[" + ", ".join("any length" if n is None else str(n) for n in shape) + "]"


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
