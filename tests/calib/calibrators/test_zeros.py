"""The zero treatment of the calibrators on log-posteriors (calib.calibrators.zeros): Laplace's rule at the
scores' resolution, carried by the fitted model, and the note when zeros still drive a fit."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from calib.calibrators import (
    AffineCalibrator,
    BetaCalibrator,
    DirichletCalibrator,
    MatrixScaling,
    PlattCalibrator,
    TemperatureScaling,
    VectorScaling,
    load_calibrator,
    save_calibrator,
)
from calib.calibrators.line_search import converged_when_stalled
from calib.calibrators.registry import CALIBRATORS
from calib.calibrators.zeros import smooth_zeros, zero_smoothing
from calib.validation import CalibInputWarning

LOG_SCALE = [AffineCalibrator, TemperatureScaling, VectorScaling, MatrixScaling, DirichletCalibrator]


def _votes(n: int, k: int, trees: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Vote fractions v / T of T trees over K classes (many exact zeros), and labels."""
    rng = np.random.default_rng(seed)
    strength = rng.dirichlet(np.full(k, 0.3), size=n)
    votes = np.stack([rng.multinomial(trees, p) for p in strength])
    labels = np.array([rng.choice(k, p=p) for p in strength])
    return votes / trees, labels


def test_smoothing_is_laplaces_rule_of_succession_at_the_vote_resolution():
    probs, _ = _votes(200, 4, trees=25, seed=0)
    with np.errstate(divide="ignore"):
        logp = np.log(probs)
    eps = zero_smoothing(logp)
    assert eps == pytest.approx(1 / 25)  # the smallest positive vote fraction
    votes = np.rint(probs * 25)
    np.testing.assert_allclose(np.exp(smooth_zeros(logp, eps)), (votes + 1) / (25 + 4), rtol=1e-12)


@pytest.mark.parametrize("cls", LOG_SCALE)
def test_a_fit_on_votes_carries_its_smoothing_into_prediction_and_the_model_file(tmp_path, cls):
    probs, labels = _votes(600, 3, trees=20, seed=1)
    model = cls().fit(probs, labels, kind="probs")
    assert model.zero_smoothing_ == pytest.approx(0.05) and 0 < model.zero_loss_share_ < 1
    predicted = model.predict_proba(probs, kind="probs")
    assert np.isfinite(np.log(predicted)).all()
    # the same as a fit on the Laplace-smoothed votes, which hold no zero (nothing more smoothed)
    smoothed = (probs + 0.05) / (1 + 3 * 0.05)
    plain = cls().fit(smoothed, labels, kind="probs")
    assert plain.zero_smoothing_ == 0.0
    np.testing.assert_allclose(plain.predict_proba(smoothed, kind="probs"), predicted, rtol=1e-9)
    method = {AffineCalibrator: "dp", TemperatureScaling: "temperature", VectorScaling: "vector"}.get(cls)
    method = method or {MatrixScaling: "matrix", DirichletCalibrator: "dirichlet"}[cls]
    save_calibrator(model, tmp_path / "m.json", method=method)
    loaded, _ = load_calibrator(tmp_path / "m.json")
    np.testing.assert_array_equal(loaded.predict_proba(probs, kind="probs"), predicted)


def test_scores_without_zeros_are_not_smoothed():
    rng = np.random.default_rng(2)
    probs = rng.dirichlet(np.ones(3), size=300)
    labels = rng.integers(0, 3, size=300)
    model = TemperatureScaling().fit(probs, labels, kind="probs")
    assert model.zero_smoothing_ == 0.0 and model.zero_loss_share_ == 0.0


@pytest.mark.parametrize("cls", [PlattCalibrator, BetaCalibrator])
def test_binary_calibrators_on_log_odds_smooth_too(cls):
    probs, labels = _votes(400, 2, trees=10, seed=3)
    model = cls().fit(probs, labels, kind="probs")
    assert model.zero_smoothing_ == pytest.approx(0.1)
    assert np.isfinite(np.log(model.predict_proba(probs, kind="probs"))).all()


def test_platt_on_the_raw_score_takes_zeros_as_they_are():
    probs, labels = _votes(400, 2, trees=10, seed=3)
    model = PlattCalibrator(feature="score").fit(probs, labels, kind="probs")
    assert not model.log_scale and not hasattr(model, "zero_smoothing_")


def test_zeros_that_drive_the_fit_warn():
    rng = np.random.default_rng(4)
    right = rng.random(500) < 0.75
    labels = rng.integers(0, 2, size=500)
    predicted = np.where(right, labels, 1 - labels)
    probs = np.eye(2)[predicted]  # one-hot outputs: every mistake is a zero on the true class
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = TemperatureScaling().fit(probs, labels, kind="probs")
    assert model.zero_loss_share_ >= 0.5
    assert [w.category for w in caught] == [CalibInputWarning] and "driven by them" in str(caught[0].message)
    # the calibrated probability of the predicted class is the accuracy (the fit's only freedom)
    p_predicted = model.predict_proba(probs, kind="probs")[np.arange(500), predicted]
    assert p_predicted == pytest.approx(np.full(500, right.mean()), abs=1e-8)


def test_a_version_1_model_file_is_read_without_smoothing(tmp_path):
    rng = np.random.default_rng(5)
    probs = rng.dirichlet(np.ones(3), size=200)
    labels = rng.integers(0, 3, size=200)
    model = TemperatureScaling().fit(probs, labels, kind="probs")
    save_calibrator(model, tmp_path / "t.json", method="temperature")
    document = json.loads((tmp_path / "t.json").read_text())
    for key in ("class_names", "kind", "cross_validation"):
        del document[key]
    for key in ("zero_smoothing_", "zero_loss_share_", "n_parameters_", "n_fit_rows_"):
        del document["fitted"][key]
    document["format_version"] = 1
    (tmp_path / "v1.json").write_text(json.dumps(document))
    loaded, method = load_calibrator(tmp_path / "v1.json")
    assert method == "temperature" and loaded.zero_smoothing_ == 0.0
    np.testing.assert_array_equal(loaded.predict_proba(probs, kind="probs"), model.predict_proba(probs, kind="probs"))


def test_a_stalled_line_search_counts_as_converged_only_near_the_optimum():
    assert converged_when_stalled(1e-12, 0.7) and converged_when_stalled(5e-9, 100.0)
    assert not converged_when_stalled(1e-6, 0.7) and not converged_when_stalled(1e-7, 10.0)


@pytest.mark.parametrize("method", ["vector", "matrix", "dirichlet", "dp"])
def test_zeros_met_only_at_prediction_are_warned_of_and_the_advised_fit_smooths_them(method):
    rng = np.random.default_rng(4)
    without = rng.dirichlet(np.ones(3), size=400)
    labels = np.array([rng.choice(3, p=p) for p in without])
    votes = np.round(without * 10) / 10  # ten-vote fractions of the same classifier: exact zeros
    votes /= votes.sum(axis=1, keepdims=True)
    assert (votes == 0).any()
    model = CALIBRATORS[method]().fit(without, labels, kind="probs")
    with pytest.warns(CalibInputWarning, match=r"probabilities of exactly 0 and \w+ was fitted on scores without any"):
        model.predict_proba(votes, kind="probs")
    advised = CALIBRATORS[method]().fit(votes, labels, kind="probs")  # the same classifier's scores, zeros included
    with warnings.catch_warnings():
        warnings.simplefilter("error", CalibInputWarning)
        calibrated = advised.predict_proba(votes, kind="probs")
    assert advised.zero_smoothing_ > 0 and np.all(calibrated > 0)
