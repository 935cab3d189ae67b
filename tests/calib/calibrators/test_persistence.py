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
from scipy.special import log_softmax

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
from calib.calibrators.registry import make_calibrator
from calib.validation import CalibInputError

# (method, K, constructor parameters): K = 3 and K = 2 for the multiclass methods, plus non-default
# parameters that change the saved state (priors, penalties, bins and their policies).
MULTICLASS = ("dp", "temperature", "vector", "vector_clr", "dirichlet_diagonal", "vector_log_ratios", "matrix")
CASES = [
    *((method, k, {}) for method in (*MULTICLASS, "matrix_log_ratios", "dirichlet") for k in (3, 2)),
    ("dp", 3, {"priors": [0.2, 0.3, 0.5]}),
    ("temperature", 3, {"priors": [0.5, 0.25, 0.25], "max_iter": 50}),
    ("matrix", 3, {"reg_lambda": 0.1, "penalty": "l2"}),
    ("matrix_log_ratios", 3, {"reg_lambda": 0.1}),
    ("dirichlet", 3, {"reg_lambda": 0.01, "reg_mu": 0.1}),
    ("dirichlet", 3, {"reg_lambda": 0.01, "reference_row": True, "normalized": False}),
    ("dirichlet", 3, {"lambdas": [1.0, 0.1], "mus": [0.0, 1.0], "n_folds": 3, "seed": 2, "patience": None}),
    *(("beta", 2, {"parameters": variant}) for variant in ("abm", "ab", "am")),
    ("isotonic", 2, {}),
    ("isotonic", 2, {"clip": 1e-6}),
    ("histogram", 2, {}),
    ("histogram", 2, {"n_bins": 200, "closed": "left"}),  # empty bins: bin value 0 / 0 = NaN, saved as "nan"
    ("histogram", 2, {"n_bins": 7, "strategy": "equal-mass", "empty_bin": "prior"}),
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
    return make_calibrator(method, **init).fit(logits, _labels(logits, seed + 1), kind="logits")


def _as_written(params: dict) -> dict:
    """Parameters as a file holds them: JSON has no tuples, so a tuple (the default grid of lambdas) is a list."""
    return {name: list(value) if isinstance(value, tuple) else value for name, value in params.items()}


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
    assert _as_written(loaded.get_params()) == _as_written(model.get_params()) and loaded.n_classes_ == k
    for name, value in model._fitted_state().items():
        restored = loaded._fitted_state()[name]
        if isinstance(value, np.ndarray):
            assert _same_values(restored, value), name
        else:
            assert type(restored) is type(value) and repr(restored) == repr(value), name  # NaN too
    logits, logprobs = _new_scores(k)
    for scores, kind in ((logits, "logits"), (logprobs, "logprobs")):
        if kind != "logits" and model._fitted_on_logits():  # a map of the logits as given takes nothing else
            for either in (model, loaded):
                with pytest.raises(CalibInputError, match="kind='logits', not kind='logprobs'"):
                    either.predict_log_proba(scores, kind=kind)
            continue
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
    assert document["format"] == "calib-calibrator" and document["format_version"] == 5
    assert document["calib_version"] == version("calib-repro")
    assert document["method"] == method and document["class"] == type(model).__name__
    assert document["init"] == _as_written(model.get_params(deep=False)) and document["n_classes"] == k
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
    model = _fitted("vector_log_ratios", 3, {})
    document = _as_version_4(json.loads(_saved_text(model, "vector_log_ratios", tmp_path)))
    assert document["init"].pop("last_class_reference") is True
    (tmp_path / "old.json").write_text(json.dumps(document), encoding="utf-8")
    loaded, method = load_calibrator(tmp_path / "old.json")
    assert method == "vector_log_ratios"
    assert loaded.features == loaded.features_ == "last_class_ratios"
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
    listed = method.help.split(": ", 1)[1].split(";", 1)[0]  # (what follows a ";" is not a file's method)
    assert set(listed.split(", ")) == set(METHODS)


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
    ("newer version", "dp", 3, _set("format_version", 6), "upgrade calib"),
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
    ("bad clip", "isotonic", 2, _set("init", "clip", "small"), "init: clip must be a number >= 0 and < 0.5"),
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
    ],
    ids=["unknown method", "other class", "not fitted", "numpy scalar", "array parameter"],
)
def test_saving_refuses_what_a_file_cannot_hold(tmp_path, model, method, fragment):
    with pytest.raises(CalibInputError) as refused:
        save_calibrator(model, tmp_path / "model.json", method=method)
    assert fragment in str(refused.value)
    assert list(tmp_path.iterdir()) == []


def test_a_tuple_parameter_is_written_as_a_list(tmp_path):
    model = _fit2(AffineCalibrator(priors=(0.4, 0.6)))
    path = tmp_path / "model.json"
    save_calibrator(model, path, method="dp")
    assert json.loads(path.read_text())["init"]["priors"] == [0.4, 0.6]
    loaded, _ = load_calibrator(path)
    logits = _logits(2, 50, 7, 2.0)
    assert _same_bits(loaded.predict_log_proba(logits, kind="logits"), model.predict_log_proba(logits, kind="logits"))


# --- files of format version 4 (before the maps on logits as given) ----------------------------------------

# What version 4 files held beyond the version 5 ones: the constructor parameters of the classes then
# (git show e8838a2:calib/calibrators/matrix_scaling.py, dirichlet.py): VectorScaling(last_class_reference),
# MatrixScaling(reg), DirichletCalibrator(reg_lambda, reg_mu); and their fitted attributes: vector scaling's
# were today's, matrix scaling had no features_ and no record of its penalty, Dirichlet kept reg_mu_ only.
_NOT_IN_VERSION_4 = {
    "vector": (),
    "matrix": ("features_", "reg_lambda_", "reg_mu_", "cv_grid_", "cv_losses_"),
    "dirichlet": ("features_", "reg_lambda_", "cv_grid_", "cv_losses_"),
}


def _as_version_4(document: dict) -> dict:
    """A version 5 file of a map version 4 could hold, as version 4 wrote it: method, class, constructor
    parameters and fitted attributes of the classes of then, and no cross-validation record."""
    document = json.loads(json.dumps(document))
    init, method = document["init"], document["method"]
    if method in ("vector_clr", "dirichlet_diagonal", "vector_log_ratios"):
        old_method, old_init = "vector", {"last_class_reference": init["features"] == "last_class_ratios"}
    elif method == "matrix_log_ratios":
        # version 4's matrix scaling: reg * ||W - I||^2 over the K x (K - 1) weights, no penalty on b
        assert (init["penalty"], init["normalized"], init["reg_mu"], init["reference_row"]) == ("l2", False, 0.0, False)
        old_method, old_init = "matrix", {"reg": init["reg_lambda"]}
    else:
        assert method == "dirichlet" and init["penalty"] == "odir" and not init["reference_row"] and init["normalized"]
        old_method, old_init = "dirichlet", {"reg_lambda": init["reg_lambda"], "reg_mu": init["reg_mu"]}
    document.pop("cross_validation")
    for name in _NOT_IN_VERSION_4[old_method]:
        del document["fitted"][name]
    return document | {"format_version": 4, "method": old_method, "init": old_init}


def _array(document: dict, name: str) -> np.ndarray:
    field = document["fitted"][name]
    return np.array(field["data"], dtype=np.float64).reshape(field["shape"])


def _version_4_map(document: dict, logp: np.ndarray) -> np.ndarray:
    """The calibrated log-posteriors a version 4 file's numbers stand for, by the definitions of version 4
    (written out here, not read from calib): vector scaling on centred log-posteriors (features_ "clr") or on
    log-ratios to the last class ("last_class_ratios"), matrix scaling on those log-ratios, Dirichlet
    calibration on the log-posteriors."""
    w, b = _array(document, "coef_"), _array(document, "intercept_")
    method = document["method"]
    if method == "vector":
        features = document["fitted"]["features_"]
        z = logp - (logp.mean(axis=1, keepdims=True) if features == "clr" else logp[:, -1:])
        return log_softmax(w * z + b, axis=1)
    z = logp - logp[:, -1:] if method == "matrix" else logp
    return log_softmax(z @ w.T + b, axis=1)


def _version_4_gradient(document: dict, logp: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The gradient, in (W, b), of the objective version 4 minimized, at the file's map: the mean log-loss plus
    reg * sum (W[:, :K-1] - I)^2 (matrix scaling) or lambda / (K (K - 1)) sum_{i != j} W_ij^2 + mu / K sum b^2
    (Dirichlet, mu = lambda when null), over the parameters the fit set (no last column of W for matrix
    scaling on log-ratios, no b_K for it either)."""
    w, b = _array(document, "coef_"), _array(document, "intercept_")
    k = w.shape[0]
    z = logp - logp[:, -1:] if document["method"] == "matrix" else logp
    resid = np.exp(log_softmax(z @ w.T + b, axis=1)) - np.eye(k)[labels]
    grad_w, grad_b = resid.T @ z / labels.size, resid.mean(axis=0)
    init = document["init"]
    if document["method"] == "matrix":
        grad_w += 2 * init["reg"] * (w - np.eye(k))
        return np.concatenate([grad_w[:, :-1].ravel(), grad_b[:-1]])
    lam = init["reg_lambda"]
    mu = lam if init["reg_mu"] is None else init["reg_mu"]
    grad_w += 2 * lam / (k * (k - 1)) * w * (1 - np.eye(k))
    grad_b += 2 * mu / k * b
    return np.concatenate([grad_w.ravel(), grad_b])


# (the method that reads the version 4 file, the version 5 parameters of the same map)
VERSION_4_CASES = {
    "vector clr": ("vector_clr", {"features": "clr"}),
    "vector survey": ("vector_log_ratios", {"features": "last_class_ratios"}),
    "matrix reg=0.1": (
        "matrix_log_ratios",
        {"features": "last_class_ratios", "reg_lambda": 0.1, "reg_mu": 0.0, "penalty": "l2", "normalized": False},
    ),
    "dirichlet": ("dirichlet", {"reg_lambda": 0.01, "reg_mu": 0.1}),
    "dirichlet mu=lambda": ("dirichlet", {"reg_lambda": 0.3, "reg_mu": None}),
    "dirichlet unpenalized": ("dirichlet", {"reg_lambda": 0.0, "reg_mu": None}),  # version 4's default
}


@pytest.mark.parametrize(("method", "params"), VERSION_4_CASES.values(), ids=VERSION_4_CASES)
def test_a_version_4_file_loads_as_the_method_of_its_map_and_predicts_that_map(tmp_path, method, params):
    k = 4
    logits = _logits(k, 300, 0, 2.0)
    labels = _labels(logits, 1)
    model = make_calibrator(method, **params).fit(logits, labels, kind="logits")
    document = _as_version_4(json.loads(_saved_text(model, method, tmp_path)))
    path = tmp_path / "v4.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    logp = log_softmax(logits, axis=1)
    if document["method"] != "vector":  # the file's map is the optimum of the objective version 4 minimized
        assert np.max(np.abs(_version_4_gradient(document, logp, labels))) < 1e-8
    loaded, loaded_method = load_calibrator(path)
    assert loaded_method == method and type(loaded) is type(model)
    assert _as_written(loaded.get_params()) == _as_written(make_calibrator(method, **params).get_params())
    assert (loaded.n_parameters_, loaded.n_fit_rows_) == (model.n_parameters_, 300)
    if hasattr(model, "reg_lambda_"):  # the penalty is recorded as given, not cross-validated
        assert (loaded.reg_lambda_, loaded.reg_mu_) == (model.reg_lambda_, model.reg_mu_)
        assert loaded.cv_grid_.tolist() == [[model.reg_lambda_, model.reg_mu_]] and np.isnan(loaded.cv_losses_).all()
    new_logits, new_logprobs = _new_scores(k)
    new_logprobs = new_logprobs[3:]  # (rows without exact zeros: the map of the file's numbers alone)
    for scores, kind in ((new_logits, "logits"), (new_logprobs, "logprobs"), (np.exp(new_logprobs), "probs")):
        ours = loaded.predict_log_proba(scores, kind=kind)
        assert _same_bits(ours, model.predict_log_proba(scores, kind=kind))
        by_hand = _version_4_map(document, log_softmax(np.log(scores) if kind == "probs" else scores, axis=1))
        np.testing.assert_allclose(ours, by_hand, rtol=1e-12, atol=1e-12)
    # saved again, it is a version 5 file of the method its map is
    again = json.loads(_saved_text(loaded, loaded_method, tmp_path))
    assert (again["format_version"], again["method"]) == (5, method)


def test_a_version_4_file_of_another_form_is_refused(tmp_path):
    model = _fitted("vector_clr", 3, {})
    document = _as_version_4(json.loads(_saved_text(model, "vector_clr", tmp_path)))
    document["init"]["features"] = "clr"  # a parameter version 4 never wrote
    path = tmp_path / "v4.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(CalibInputError, match="init keys"):
        load_calibrator(path)


@pytest.mark.parametrize("method", ["vector", "matrix"])
def test_a_map_of_logits_as_given_keeps_refusing_other_kinds_after_loading(tmp_path, method):
    model = _fitted(method, 3, {"reg_lambda": 0.1} if method == "matrix" else {})
    assert model.features_ == "logits"
    path = tmp_path / "model.json"
    save_calibrator(model, path, method=method, kind="logits")
    loaded, _ = load_calibrator(path)
    assert loaded.features_ == "logits"
    logits = _new_scores(3)[0]
    assert _same_bits(loaded.predict_log_proba(logits, kind="logits"), model.predict_log_proba(logits, kind="logits"))
    probs = np.exp(log_softmax(logits, axis=1))
    with pytest.raises(CalibInputError, match="fitted on logits as given.*kind='logits', not kind='probs'"):
        loaded.predict_proba(probs, kind="probs")
