"""Tests of calib.calibrators.persistence: every ``calib calibrate`` method saved as plain JSON and loaded
back predicting bit for bit the same; pickles, above all crafted ones, and damaged files refused with one
CalibInputError naming the file."""

from __future__ import annotations

import doctest
import json
import os
import pickle
import shlex
from importlib.metadata import version

import numpy as np
import pytest

from calib.calibrators import (
    AffineCalibrator,
    BetaCalibrator,
    DirichletCalibrator,
    TemperatureScaling,
    load_calibrator,
    persistence,
    save_calibrator,
)
from calib.calibrators.persistence import METHODS
from calib.validation import CalibInputError

# (method, K, constructor parameters): K = 3 and K = 2 for the multiclass methods, plus non-default
# parameters that change the saved state (priors, penalties, bins and their policies).
CASES = [
    *((method, k, {}) for method in ("dp", "temperature", "vector", "matrix", "dirichlet") for k in (3, 2)),
    ("vector", 3, {"last_class_reference": True}),
    ("dp", 3, {"priors": [0.2, 0.3, 0.5]}),
    ("temperature", 3, {"priors": [0.5, 0.25, 0.25], "max_iter": 50}),
    ("matrix", 3, {"reg": 0.1}),
    ("dirichlet", 3, {"reg_lambda": 0.01, "reg_mu": 0.1}),
    *(("beta", 2, {"parameters": variant}) for variant in ("abm", "ab", "am")),
    ("isotonic", 2, {}),
    ("isotonic", 2, {"clip": 1e-6}),
    ("histogram", 2, {}),
    ("histogram", 2, {"n_bins": 200, "closed": "left"}),  # empty bins: bin value 0 / 0 = NaN, saved as "nan"
    ("histogram", 2, {"n_bins": 7, "strategy": "mass", "empty_bin": "prior"}),
    ("histogram", 2, {"n_bins": 200, "empty_bin": "zero"}),
]


def _case_id(case) -> str:
    method, k, init = case
    return f"{method}-K{k}" + "".join(f"-{name}={value}" for name, value in init.items())


def _logits(k: int, n: int, seed: int, spread: float) -> np.ndarray:
    return spread * np.random.default_rng(seed).normal(size=(n, k))


def _labels(logits: np.ndarray, seed: int) -> np.ndarray:
    """Labels drawn from softmax(logits / 2): the scores are informative but over-confident."""
    z = logits / 2
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    u = np.random.default_rng(seed).uniform(size=(logits.shape[0], 1))
    return np.minimum((u > np.cumsum(p, axis=1)).sum(axis=1), logits.shape[1] - 1)


def _fitted(method: str, k: int, init: dict, seed: int = 0):
    logits = _logits(k, 300, seed, 2.0)
    return METHODS[method](**init).fit(logits, _labels(logits, seed + 1), kind="logits")


def _new_scores(k: int) -> tuple[np.ndarray, np.ndarray]:
    """Logits beyond the training range, and log-probabilities with exact zeros (log 0 = -inf)."""
    logits = _logits(k, 200, 99, 6.0)
    logprobs = np.log(np.random.default_rng(98).dirichlet(np.full(k, 0.5), size=50))
    logprobs[:3] = -np.inf
    logprobs[np.arange(3), np.arange(3) % k] = 0.0
    return logits, logprobs


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _same_values(a: np.ndarray, b: np.ndarray) -> bool:
    """Same bits but for NaN's sign and payload, which JSON's "nan" does not keep (0 / 0 gives -NaN on x86)."""
    if a.dtype.kind == "f":
        a, b = np.where(np.isnan(a), np.nan, a), np.where(np.isnan(b), np.nan, b)
    return _same_bits(a, b)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_a_saved_calibrator_loads_back_predicting_the_same_bits(tmp_path, case):
    method, k, init = case
    model = _fitted(method, k, init)
    path = tmp_path / "model.json"
    save_calibrator(model, path, method=method)
    loaded, loaded_method = load_calibrator(path)
    assert loaded_method == method and type(loaded) is type(model)
    assert loaded.get_params() == model.get_params() and loaded.n_classes_ == k
    for name, value in model._fitted_state().items():
        restored = loaded._fitted_state()[name]
        if isinstance(value, np.ndarray):
            assert _same_values(restored, value), name
        else:
            assert type(restored) is type(value) and repr(restored) == repr(value), name  # NaN too
    logits, logprobs = _new_scores(k)
    for scores, kind in ((logits, "logits"), (logprobs, "logprobs")):
        assert _same_bits(loaded.predict_log_proba(scores, kind=kind), model.predict_log_proba(scores, kind=kind))
    again = tmp_path / "again.json"
    save_calibrator(loaded, again, method=method)
    assert again.read_bytes() == path.read_bytes()


def _strict_json(text: str):
    def refuse(name):
        raise AssertionError(f"{name} is not plain JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_the_file_is_plain_json_with_sorted_keys_indent_1(tmp_path, case):
    method, k, init = case
    model = _fitted(method, k, init)
    path = tmp_path / "model.json"
    save_calibrator(model, path, method=method)
    text = path.read_bytes().decode("utf-8")
    document = _strict_json(text)
    assert text == json.dumps(document, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    assert document["format"] == "calib-calibrator" and document["format_version"] == 4
    assert document["calib_version"] == version("calib-repro")
    assert document["method"] == method and document["class"] == type(model).__name__
    assert document["init"] == model.get_params(deep=False) and document["n_classes"] == k
    assert set(document["fitted"]) == set(model._saved_fields())
    assert document["class_names"] is None and document["kind"] is None


def test_the_layout_of_a_dp_file(tmp_path):
    model = _fitted("dp", 2, {})
    document = _strict_json(_saved_text(model, "dp", tmp_path))
    assert document["init"] == {"bias": True, "max_iter": 100, "priors": None}
    assert document["fitted"] == {
        "bias_": {"data": [0.0, model.bias_[1]], "dtype": "float64", "shape": [2]},
        "converged_": True,
        "gradient_norm_": model.gradient_norm_,
        "n_fit_rows_": 300,
        "n_parameters_": 2,
        "scale_": model.scale_,
        "zero_loss_share_": 0.0,
        "zero_smoothing_": 0.0,
    }


def test_a_vector_scaling_file_written_before_its_parameter_is_read_as_the_surveys(tmp_path):
    # Files of earlier releases have no init key last_class_reference: their only vector scaling was the survey's.
    model = _fitted("vector", 3, {"last_class_reference": True})
    document = json.loads(_saved_text(model, "vector", tmp_path))
    assert document["init"].pop("last_class_reference") is True
    (tmp_path / "old.json").write_text(json.dumps(document), encoding="utf-8")
    loaded, method = load_calibrator(tmp_path / "old.json")
    assert method == "vector"
    assert loaded.last_class_reference is True
    logits = _new_scores(3)[0]
    np.testing.assert_array_equal(
        loaded.predict_log_proba(logits, kind="logits"), model.predict_log_proba(logits, kind="logits")
    )


def _saved_text(model, method: str, folder) -> str:
    path = folder / f"{method}.json"
    save_calibrator(model, path, method=method)
    return path.read_text(encoding="utf-8")


def test_non_finite_fitted_values_are_strings_where_fitting_gives_them(tmp_path):
    histogram = _fitted("histogram", 2, {"n_bins": 200})
    assert np.isnan(histogram.bin_values_).any()
    assert '"nan"' in _saved_text(histogram, "histogram", tmp_path)
    # Labels that fall as the score rises: a, b >= 0 forces a = b = 0, and no score maps to 1/2.
    p1 = np.random.default_rng(3).uniform(0.01, 0.99, size=300)
    labels = (np.random.default_rng(4).uniform(size=300) > p1).astype(int)
    beta = BetaCalibrator().fit(np.column_stack([1 - p1, p1]), labels, kind="probs")
    assert beta.a_ == beta.b_ == 0.0 and np.isnan(beta.m_)
    path = tmp_path / "beta.json"
    save_calibrator(beta, path, method="beta")
    assert _strict_json(path.read_text())["fitted"]["m_"] == "nan"
    assert np.isnan(load_calibrator(path)[0].m_)


def test_the_command_line_offers_every_method_of_the_table():
    from calib.cli import build_parser

    calibrate = build_parser()._subparsers._group_actions[0].choices["calibrate"]
    (method,) = [a for a in calibrate._actions if a.dest == "method"]
    assert set(method.help.split(": ", 1)[1].split(", ")) == set(METHODS)


def test_the_docstring_examples_run():
    result = doctest.testmod(persistence, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# --- pickles -----------------------------------------------------------------------------------


class _WritesMarker:
    """Unpickling this runs a shell command that creates ``marker``, as a crafted model file could."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {shlex.quote(str(self.marker))}",))


def _forbid_unpickling(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("load_calibrator unpickled the file")

    for name in ("load", "loads", "Unpickler"):
        monkeypatch.setattr(pickle, name, forbidden)


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
@pytest.mark.parametrize("name", ["model.json", "model.pkl"])
def test_a_crafted_pickle_given_as_a_model_is_refused_without_being_loaded(tmp_path, monkeypatch, protocol, name):
    marker = tmp_path / "marker"
    crafted = pickle.dumps(_WritesMarker(marker), protocol=protocol)
    pickle.loads(crafted)  # the control: unpickling this file does run the command
    assert marker.exists()
    marker.unlink()
    path = tmp_path / name
    path.write_bytes(crafted)
    _forbid_unpickling(monkeypatch)
    with pytest.raises(CalibInputError, match="never loads pickles") as refused:
        load_calibrator(path)
    assert str(path) in str(refused.value) and "--save-model MODEL.json" in str(refused.value)
    assert not marker.exists()


def test_a_model_pickled_by_the_old_command_line_is_refused_as_a_pickle(tmp_path, monkeypatch):
    path = tmp_path / "ts.json"
    model = _fitted("temperature", 3, {})
    path.write_bytes(pickle.dumps({"format": "calib-calibrator-1", "method": "temperature", "model": model}))
    _forbid_unpickling(monkeypatch)
    with pytest.raises(CalibInputError, match=f"{path} is a pickle, not a calibrator file.*never loads pickles"):
        load_calibrator(path)


# --- damaged and hand-edited files ----------------------------------------------------------------


def _edited(tmp_path, method: str, k: int, edit):
    """A file saved for (method, k) with ``edit`` applied to its JSON document."""
    path = tmp_path / "edited.json"
    save_calibrator(_fitted(method, k, {}), path, method=method)
    document = json.loads(path.read_text())
    edit(document)
    path.write_text(json.dumps(document))
    return path


def _set(*keys_and_value):
    *keys, value = keys_and_value

    def edit(document):
        for key in keys[:-1]:
            document = document[key]
        document[keys[-1]] = value

    return edit


def _delete(*keys):
    def edit(document):
        for key in keys[:-1]:
            document = document[key]
        del document[keys[-1]]

    return edit


# (id, method, K, edit of the document, fragment of the message)
EDITS = [
    ("another object", "dp", 3, lambda d: d.clear() or d.update({"0": 1}), "format is None"),
    ("format", "dp", 3, _set("format", "calib-model"), "format is 'calib-model'"),
    ("newer version", "dp", 3, _set("format_version", 5), "upgrade calib"),
    ("version as bool", "dp", 3, _set("format_version", True), "format_version is True"),
    ("version as float", "dp", 3, _set("format_version", 1.0), "format_version is 1.0"),
    ("extra key", "dp", 3, _set("comment", "hi"), "unexpected ['comment']"),
    ("unknown method", "dp", 3, _set("method", "platt"), "unknown method 'platt'"),
    ("wrong class", "dp", 3, _set("class", "TemperatureScaling"), "does not match method 'dp'"),
    ("extra init key", "dp", 3, _set("init", "seed", 0), "unexpected ['seed']"),
    ("missing init key", "dp", 3, _delete("init", "priors"), "missing ['priors']"),
    ("init value an object", "dp", 3, _set("init", "priors", {"a": 1}), "init.priors must be"),
    ("K against binary only", "beta", 2, _set("n_classes", 3), "binary only"),
    ("K as a float", "dp", 3, _set("n_classes", 3.0), "n_classes must be an integer"),
    ("K against shapes", "dp", 3, _set("n_classes", 2), "bias_ has shape [3], expected [2]"),
    ("missing attribute", "dirichlet", 3, _delete("fitted", "intercept_"), "missing ['intercept_']"),
    ("extra attribute", "dirichlet", 3, _set("fitted", "coef", 1.0), "unexpected ['coef']"),
    (
        "wrong shape",
        "dirichlet",
        3,
        _set("fitted", "coef_", "shape", [3, 2]),
        "coef_ has shape [3, 2], expected [3, 3]",
    ),
    (
        "data against shape",
        "matrix",
        3,
        lambda d: d["fitted"]["coef_"]["data"][1].pop(),
        "coef_: data does not have the shape [3, 3]",
    ),
    ("flat data", "vector", 3, _set("fitted", "coef_", "data", [[1.0, 2.0, 0.0]]), "data does not have the shape"),
    ("array as a list", "vector", 3, _set("fitted", "coef_", [1.0, 2.0, 0.0]), "must be an object with keys"),
    ("wrong dtype", "histogram", 2, _set("fitted", "counts_", "dtype", "float64"), "dtype 'float64', expected 'int64'"),
    ("float counts", "histogram", 2, lambda d: d["fitted"]["counts_"]["data"].__setitem__(0, 1.5), "64-bit integers"),
    ("infinite scale", "dp", 3, _set("fitted", "scale_", "inf"), "scale_ must be finite"),
    ("NaN in an array", "dirichlet", 3, lambda d: d["fitted"]["intercept_"]["data"].__setitem__(0, "nan"), "finite"),
    ("overflowing literal", "beta", 2, _set("fitted", "a_", 10**400), "must hold float64 numbers"),
    ("bool as a number", "dp", 3, _set("fitted", "scale_", True), "must hold float64 numbers"),
    ("number as a bool", "dp", 3, _set("fitted", "converged_", 1), "converged_ must be true or false"),
    ("string not a choice", "histogram", 2, _set("fitted", "closed_", "middle"), "closed_ must be one of"),
    ("bad n_bins", "histogram", 2, _set("init", "n_bins", "15"), "init: n_bins must be an integer"),
    ("bad policy", "histogram", 2, _set("init", "empty_bin", "nearest"), "init: empty_bin must be one of"),
    ("bad clip", "isotonic", 2, _set("init", "clip", "small"), "init: clip must be in [0, 0.5)"),
    (
        "thresholds out of order",
        "isotonic",
        2,
        lambda d: d["fitted"]["X_thresholds_"]["data"].reverse(),
        "X_thresholds_ increasing",
    ),
    (
        "thresholds of different lengths",
        "isotonic",
        2,
        lambda d: d["fitted"]["y_thresholds_"].update(data=[0.5], shape=[1]),
        "one length",
    ),
    ("empty thresholds", "isotonic", 2, _set("fitted", "y_thresholds_", "shape", [0]), "expected [any length]"),
]


@pytest.mark.parametrize(("method", "k", "edit", "fragment"), [e[1:] for e in EDITS], ids=[e[0] for e in EDITS])
def test_a_hand_edited_file_gives_one_error_naming_the_file(tmp_path, method, k, edit, fragment):
    path = _edited(tmp_path, method, k, edit)
    with pytest.raises(CalibInputError) as refused:
        load_calibrator(path)
    message = str(refused.value)
    assert message.startswith(f"{path}: ") and fragment in message and "save it again" in message


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"format": "calib-calibrator", "format_vers', "not UTF-8 JSON"),  # truncated
        ("", "not UTF-8 JSON"),
        ('{"scale_": NaN}', "NaN is not plain JSON"),
        ('{"a": 1, "a": 2}', "repeated keys in one object: ['a']"),
        ("[" * 100_000, "not UTF-8 JSON"),
        ("[1, 2]", "holds a JSON list"),
    ],
    ids=["truncated", "empty", "NaN token", "repeated key", "deeply nested", "a list"],
)
def test_a_file_that_is_not_a_calibrator_object_is_refused(tmp_path, text, fragment):
    path = tmp_path / "model.json"
    path.write_text(text)
    with pytest.raises(CalibInputError) as refused:
        load_calibrator(path)
    assert str(path) in str(refused.value) and fragment in str(refused.value)


def test_a_truncated_saved_file_is_refused(tmp_path):
    path = tmp_path / "model.json"
    save_calibrator(_fitted("dirichlet", 3, {}), path, method="dirichlet")
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(CalibInputError, match=f"{path} is not a calibrator file .*not UTF-8 JSON"):
        load_calibrator(path)


def test_bytes_that_are_not_utf8_are_refused(tmp_path):
    path = tmp_path / "model.json"
    path.write_bytes(b'{"format": "\xff"}')
    with pytest.raises(CalibInputError, match=f"{path} is not a calibrator file .*never loads pickles"):
        load_calibrator(path)


def test_a_missing_file_a_folder_and_a_wrong_extension_are_refused(tmp_path):
    with pytest.raises(CalibInputError, match=f"{tmp_path / 'nowhere.json'}: no such file"):
        load_calibrator(tmp_path / "nowhere.json")
    (tmp_path / "folder.json").mkdir()
    with pytest.raises(CalibInputError, match="folder.json: is a directory"):
        load_calibrator(tmp_path / "folder.json")
    path = tmp_path / "model.txt"
    path.write_text("{}")
    with pytest.raises(CalibInputError, match=f"{path}: calib reads calibrators from .json files"):
        load_calibrator(path)


# --- saving --------------------------------------------------------------------------------------


def test_saving_needs_a_json_path_and_writes_nothing_else(tmp_path):
    model = _fitted("dp", 3, {})
    with pytest.raises(CalibInputError, match=r"path .*model\.pkl: .*ending in \.json"):
        save_calibrator(model, tmp_path / "model.pkl", method="dp")
    assert list(tmp_path.iterdir()) == []


def _fit2(model):
    logits = _logits(2, 200, 5, 2.0)
    return model.fit(logits, _labels(logits, 6), kind="logits")


@pytest.mark.parametrize(
    ("model", "method", "fragment"),
    [
        (_fit2(AffineCalibrator()), "platt", "method must be one of"),
        (_fit2(TemperatureScaling()), "dp", "model is a TemperatureScaling, but method 'dp' saves a AffineCalibrator"),
        (AffineCalibrator(), "dp", "not fitted yet"),
        (_fit2(DirichletCalibrator(reg_lambda=np.float32(0.1))), "dirichlet", "parameter reg_lambda=np.float32(0.1)"),
        (_fit2(AffineCalibrator(priors=np.array([0.4, 0.6]))), "dp", "give arrays and tuples as lists"),
        (_fit2(AffineCalibrator(priors=(0.4, 0.6))), "dp", "parameter priors=(0.4, 0.6)"),
    ],
    ids=["unknown method", "other class", "not fitted", "numpy scalar", "array parameter", "tuple parameter"],
)
def test_saving_refuses_what_a_file_cannot_hold(tmp_path, model, method, fragment):
    with pytest.raises(CalibInputError) as refused:
        save_calibrator(model, tmp_path / "model.json", method=method)
    assert fragment in str(refused.value)
    assert list(tmp_path.iterdir()) == []
