"""Scaling calibrators on scores of any scale (issue 51, item 3): no fixed floor of the log-posteriors,
fits that reach the optimum on logits of thousands of nats, and fits that stop short say so."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax

import calib.calibrators.softmax_regression as softmax_regression
from calib.calibrators import (
    AffineCalibrator,
    DirichletCalibrator,
    MatrixScaling,
    TemperatureScaling,
    VectorScaling,
    load_calibrator,
    save_calibrator,
)
from calib.calibrators.line_search import GRADIENT_TOL
from calib.calibrators.zeros import unseen_zero_logs
from calib.validation import CalibInputWarning


def _large_logits(scale: float = 3000.0, n: int = 600, k: int = 3, seed: int = 51):
    """Labels drawn from softmax of Gaussian logits; scores = scale * logits."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k))
    labels = (logits + rng.gumbel(size=(n, k))).argmax(axis=1)
    return scale * logits, labels


def _nll(logp: np.ndarray, labels: np.ndarray) -> float:
    return -float(np.mean(logp[np.arange(labels.size), labels]))


def test_temperature_scaling_reaches_an_independent_optimum_on_logits_times_3000():
    scores, labels = _large_logits()
    # Independent fit: scipy's bounded scalar search over log T on the NLL of softmax(scores / T).
    found = minimize_scalar(
        lambda log_t: _nll(log_softmax(scores / np.exp(log_t), axis=1), labels),
        bounds=(0.0, 15.0),
        method="bounded",
        options={"xatol": 1e-10},
    )
    reference = float(np.exp(found.x))
    assert 100 < reference < 1e5  # the optimum is far from the -700 floor's reach (T = 285 before)
    model = TemperatureScaling().fit(scores, labels, kind="logits")
    assert model.converged_ and model.gradient_norm_ <= GRADIENT_TOL
    assert abs(1 / model.scale_ - reference) <= 1e-3 * reference
    assert _nll(model.predict_log_proba(scores, kind="logits"), labels) <= found.fun + 1e-9


@pytest.mark.parametrize(
    "make",
    [
        VectorScaling,
        lambda: VectorScaling(features="clr"),
        lambda: VectorScaling(features="log_posteriors"),
        lambda: VectorScaling(features="last_class_ratios"),
        AffineCalibrator,
        MatrixScaling,
        lambda: MatrixScaling(features="last_class_ratios", reg_lambda=0),
        DirichletCalibrator,
        lambda: DirichletCalibrator(reg_lambda=0),
    ],
    ids=["vector", "vector clr", "dirichlet diagonal", "vector survey", "dp", "matrix", "matrix survey"]
    + ["dirichlet", "dirichlet unpenalized"],
)
def test_fits_on_logits_times_3000_converge_below_the_raw_loss(make):
    scores, labels = _large_logits()
    raw = _nll(log_softmax(scores, axis=1), labels)
    temperature = _nll(
        TemperatureScaling().fit(scores, labels, kind="logits").predict_log_proba(scores, kind="logits"), labels
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", CalibInputWarning)  # a fit that stops short would warn
        model = make().fit(scores, labels, kind="logits")
    calibrated = _nll(model.predict_log_proba(scores, kind="logits"), labels)
    assert model.converged_ and model.gradient_norm_ <= GRADIENT_TOL
    assert np.isfinite(calibrated) and calibrated < raw
    # Each of these maps contains temperature scaling (up to a reference-class reparametrisation), so at
    # its optimum the training loss is at most the temperature's; a penalty chosen by cross-validation may
    # hold it above (ODIR leaves the diagonal free, so not above the best map with a diagonal W).
    if getattr(model, "reg_lambda_", 0.0) == 0.0:
        assert calibrated <= temperature + 1e-9


def test_a_zero_met_only_at_prediction_ranks_below_every_positive_posterior_of_its_row():
    logp = np.array([[-np.inf, -5000.0, 0.0], [-np.inf, -1.0, np.log1p(-np.exp(-1.0))], [-3.0, -2.0, -0.5]])
    before = logp.copy()
    unseen_zero_logs(logp)
    assert np.all(np.isfinite(logp))
    assert logp[0, 0] == -10000.0 and logp[1, 0] == -700.0  # 2 x the row's smallest, at most -700
    assert np.array_equal(logp[2], before[2]) and np.array_equal(logp[:2, 1:], before[:2, 1:])


@pytest.mark.parametrize(
    "make",
    [
        TemperatureScaling,
        AffineCalibrator,
        lambda: VectorScaling(features="clr"),
        lambda: VectorScaling(features="log_posteriors"),
        DirichletCalibrator,
    ],
    ids=["temperature", "dp", "vector clr", "dirichlet diagonal", "dirichlet"],
)
def test_exact_zeros_at_prediction_give_finite_outputs_on_large_logits(make):
    scores, labels = _large_logits()
    model = make().fit(scores, labels, kind="logits")
    probs = np.array([[0.0, 0.3, 0.7], [0.5, 0.0, 0.5], [0.0, 0.0, 1.0]])
    with pytest.warns(CalibInputWarning, match="probabilities of exactly 0"):
        out = model.predict_log_proba(probs, kind="probs")
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(np.exp(out).sum(axis=1), 1.0, rtol=1e-12)


def test_finite_log_posteriors_below_minus_700_are_not_clipped():
    # Before, log-posteriors below -700 all counted as -700: these two rows gave the same output.
    scores, labels = _large_logits()
    model = TemperatureScaling().fit(scores, labels, kind="logits")
    rows = np.array([[0.0, -800.0, -6000.0], [0.0, -6000.0, -800.0]])
    out = model.predict_log_proba(rows, kind="logits")
    assert out[0, 1] > out[0, 2] and out[1, 2] > out[1, 1]
    np.testing.assert_allclose(out, log_softmax(model.scale_ * rows, axis=1), rtol=1e-12)


def _overconfident(n: int = 400, seed: int = 7):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, 3))
    labels = (logits + rng.gumbel(size=(n, 3))).argmax(axis=1)
    return 6.0 * logits, labels


@pytest.mark.parametrize(
    "method, make",
    [
        ("temperature", lambda: TemperatureScaling(max_iter=1)),
        ("dp", lambda: AffineCalibrator(max_iter=1)),
        ("vector", VectorScaling),
        ("matrix", MatrixScaling),
        ("dirichlet", DirichletCalibrator),
    ],
)
def test_a_fit_that_stops_short_says_so(tmp_path, monkeypatch, method, make):
    # one Newton iteration for vector / matrix / Dirichlet
    monkeypatch.setattr(softmax_regression, "NEWTON_MAX_ITER", 1)
    scores, labels = _overconfident()
    model = make()
    with pytest.warns(CalibInputWarning) as caught:
        model.fit(scores, labels, kind="logits")
    message = " ".join(str(w.message) for w in caught)
    assert type(model).__name__ in message and f"gradient norm {model.gradient_norm_:.3g}" in message
    assert model.converged_ is False and model.gradient_norm_ > GRADIENT_TOL
    path = tmp_path / "model.json"
    save_calibrator(model, path, method=method)
    fitted = json.loads(path.read_text(encoding="utf-8"))["fitted"]
    assert fitted["converged_"] is False and fitted["gradient_norm_"] == model.gradient_norm_
    loaded, _ = load_calibrator(path)
    assert loaded.converged_ is False and loaded.gradient_norm_ == model.gradient_norm_


@pytest.mark.parametrize("make", [TemperatureScaling, AffineCalibrator, VectorScaling, MatrixScaling])
def test_a_converged_fit_records_a_gradient_within_the_tolerance(make):
    scores, labels = _overconfident()
    model = make().fit(scores, labels, kind="logits")
    assert model.converged_ and 0 <= model.gradient_norm_ <= GRADIENT_TOL


def _as_version_2(document: dict) -> dict:
    """A version 5 file as format version 2 wrote it: no gradient norm, no features_, no size of the fit, no
    cross-validation record; vector scaling under the method "vector" with its one parameter of then,
    last_class_reference (the survey's map, or else the map on the uncentred log-posteriors)."""
    document = json.loads(json.dumps(document))
    document["format_version"] = 2
    del document["cross_validation"]
    for name in ("gradient_norm_", "n_parameters_", "n_fit_rows_"):
        document["fitted"].pop(name)
    features = document["fitted"].pop("features_", None)
    if document["method"] in ("dirichlet_diagonal", "vector_log_ratios"):
        document["method"] = "vector"
        document["init"] = {"last_class_reference": features == "last_class_ratios"}
    return document


def test_a_version_2_vector_file_keeps_its_map_on_the_uncentred_log_posteriors(tmp_path):
    # The former default: softmax(w * log q + b). Its file must still mean that map, not the centred one.
    scores, labels = _overconfident()
    model = VectorScaling(features="log_posteriors").fit(scores, labels, kind="logits")
    path = tmp_path / "new.json"
    save_calibrator(model, path, method="dirichlet_diagonal")
    document = _as_version_2(json.loads(path.read_text(encoding="utf-8")))
    assert document["init"] == {"last_class_reference": False}
    w, b = np.array([0.3, 0.5, 0.9]), np.array([0.2, -0.1, 0.0])
    document["fitted"]["coef_"]["data"], document["fitted"]["intercept_"]["data"] = w.tolist(), b.tolist()
    old = tmp_path / "old.json"
    old.write_text(json.dumps(document), encoding="utf-8")
    loaded, _ = load_calibrator(old)
    assert loaded.features_ == "log_posteriors" and np.isnan(loaded.gradient_norm_)
    logp = log_softmax(scores, axis=1)
    expected = log_softmax(w * logp + b, axis=1)
    np.testing.assert_allclose(loaded.predict_log_proba(scores, kind="logits"), expected, rtol=1e-13, atol=1e-13)
    assert not np.allclose(expected, log_softmax(w * (logp - logp.mean(axis=1, keepdims=True)) + b, axis=1))


@pytest.mark.parametrize(
    "method, make",
    [("vector_log_ratios", lambda: VectorScaling(features="last_class_ratios")), ("dp", AffineCalibrator)],
)
def test_a_version_2_file_loads_and_predicts_the_same_bits(tmp_path, method, make):
    scores, labels = _overconfident()
    model = make().fit(scores, labels, kind="logits")
    path = tmp_path / "new.json"
    save_calibrator(model, path, method=method)
    old = tmp_path / "old.json"
    old.write_text(json.dumps(_as_version_2(json.loads(path.read_text(encoding="utf-8")))), encoding="utf-8")
    loaded, _ = load_calibrator(old)
    assert np.isnan(loaded.gradient_norm_)
    assert np.array_equal(
        loaded.predict_log_proba(scores, kind="logits"), model.predict_log_proba(scores, kind="logits")
    )
