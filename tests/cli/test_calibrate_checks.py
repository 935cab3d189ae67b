"""`calib calibrate` on many-parameter maps: the fit report, the check against the raw scores and temperature
scaling, --method auto, the penalty options, and maps of logits as given (issue 52)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from scipy.special import log_softmax

from calib.calibrators import TemperatureScaling, load_calibrator
from calib.calibrators.folds import fold_ids
from calib.calibrators.registry import make_calibrator
from calib.calibrators.selection import compare_calibrators
from calib.validation import CalibInputWarning
from tests.support import draw_labels, run_calib

K = 6


def _logits(n: int, seed: int, scale: float = 3.0) -> tuple[np.ndarray, np.ndarray]:
    """Over-confident logits (``scale`` times calibrated ones, each row shifted by its own constant) and labels
    drawn from the calibrated posteriors."""
    rng = np.random.default_rng(seed)
    calibrated = rng.normal(size=(n, K)) + 1.5 * np.eye(K)[rng.integers(0, K, n)]
    labels = draw_labels(np.exp(log_softmax(calibrated, axis=1)), rng)
    return scale * calibrated + rng.normal(size=(n, 1)), labels


@pytest.fixture
def files(tmp_path):
    for name, (n, seed) in {"cal": (400, 1), "test": (300, 2)}.items():
        z, y = _logits(n, seed)
        np.savez(tmp_path / f"{name}.npz", scores=z, labels=y, kind=np.array("logits"))
    return tmp_path


def _calibrate(folder, *args):
    done = run_calib("calibrate", "--train", "cal.npz", "--apply", "test.npz", "--out", "out.npz", *args, cwd=folder)
    assert done.returncode == 0, done.stderr
    return done


def test_the_fit_report_holds_the_size_convergence_penalty_and_the_cross_validated_check(files):
    done = _calibrate(files, "--method", "dirichlet", "--json", "--save-model", "model.json")
    report = json.loads(done.stdout)
    assert report["method"] == "dirichlet" and report["n_parameters"] == K * (K + 1) and report["n_fit_rows"] == 400
    assert report["converged"] is True and report["gradient_norm"] <= 1e-6
    penalty = report["penalty"]
    assert penalty["chosen_by_cross_validation"] and penalty["form"] == "odir"
    assert [penalty["lambda"], penalty["mu"]] in penalty["grid"]
    record = report["cross_validation"]
    assert set(record["log_loss"]) == {"raw", "temperature", "dirichlet"} and record["n_folds"] == 5
    # The check is an independent cross-validation on the same folds: recomputed here from the library.
    train = np.load(files / "cal.npz")
    again = compare_calibrators(["dirichlet", "temperature"], train["scores"], train["labels"], kind="logits")
    assert record["log_loss"] == pytest.approx(again.losses, rel=1e-12)
    # The model file keeps the same record, and the text on stderr says it.
    saved = json.loads((files / "model.json").read_text())
    assert saved["cross_validation"] == record
    assert "5-fold cross-validated log-loss" in done.stderr and "converged" in done.stderr


def test_a_method_worse_than_temperature_on_held_out_folds_says_so(tmp_path):
    # 60 rows of 6 classes: unpenalized Dirichlet calibration (42 parameters) fits noise.
    z, y = _logits(60, 5, scale=1.0)
    np.savez(tmp_path / "cal.npz", scores=z, labels=y, kind=np.array("logits"))
    np.savez(tmp_path / "test.npz", scores=z, labels=y, kind=np.array("logits"))
    done = _calibrate(tmp_path, "--method", "dirichlet", "--reg-lambda", "0", "--json")
    record = json.loads(done.stdout)["cross_validation"]["log_loss"]
    assert record["dirichlet"] > record["temperature"]
    assert "dirichlet is worse than" in done.stderr and "--method auto" in done.stderr


def test_auto_keeps_temperature_unless_beaten_significantly_and_reports_the_table(tmp_path):
    files = tmp_path
    shift = np.array([2.0, -1.0, 0.0, 0.5, -2.0, 1.0])  # a bias per class, which temperature scaling cannot undo
    for name, (n, seed) in {"cal": (600, 3), "test": (100, 4)}.items():
        z, y = _logits(n, seed)
        np.savez(files / f"{name}.npz", scores=z + shift, labels=y, kind=np.array("logits"))
    done = _calibrate(files, "--method", "auto", "--json", "--save-model", "model.json")
    report = json.loads(done.stdout)
    record = report["cross_validation"]
    losses = record["log_loss"]
    order = ["temperature", "dp", "vector", "matrix", "dirichlet"]  # simplest first
    assert set(losses) == {"raw", *order}
    # The rule, recomputed here from per-row held-out losses on the same folds: a candidate competes when its
    # paired gain over temperature has z >= 1.645; the choice is the simplest competitor within one standard
    # error of the lowest competitor.
    train = np.load(files / "cal.npz")
    y = train["labels"]
    folds = fold_ids(y, n_folds=5, seed=0)
    held = {}
    for name in order:
        rows = np.empty(y.size)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CalibInputWarning)
            for fold in range(5):
                test = folds == fold
                model = make_calibrator(name).fit(train["scores"][~test], y[~test], kind="logits")
                logp = model.predict_log_proba(train["scores"][test], kind="logits")
                rows[test] = -logp[np.arange(test.sum()), y[test]]
        held[name] = rows
        assert rows.mean() == pytest.approx(losses[name], rel=1e-9)

    def se(a, b):
        return np.std(held[a] - held[b], ddof=1) / np.sqrt(y.size)

    competing = ["temperature"] + [
        name for name in order[1:] if held["temperature"].mean() - held[name].mean() >= 1.6449 * se("temperature", name)
    ]
    assert len(competing) > 1  # over-confident logits: temperature is beaten here, so the second step is tested
    lowest = min(competing, key=lambda name: held[name].mean())
    within = [name for name in competing if held[name].mean() - held[lowest].mean() <= se(name, lowest)]
    assert record["lowest"] == lowest
    assert report["method"] == record["chosen"] == within[0]
    assert losses[within[0]] <= losses["temperature"]
    _, method = load_calibrator(files / "model.json")
    assert method == within[0]
    assert "<- chosen" in done.stderr


def test_auto_keeps_temperature_when_nothing_beats_it_beyond_noise(tmp_path):
    # Calibrated logits up to a temperature: temperature scaling is the true model, so nothing beats it beyond noise.
    z, y = _logits(400, 11, scale=2.0)
    np.savez(tmp_path / "cal.npz", scores=z - z.mean(axis=1, keepdims=True), labels=y, kind=np.array("logits"))
    np.savez(tmp_path / "test.npz", scores=z, labels=y, kind=np.array("logits"))
    report = json.loads(_calibrate(tmp_path, "--method", "auto", "--json").stdout)
    assert report["method"] == "temperature"


def test_vector_scaling_of_logits_as_given_needs_logits_to_apply(files):
    _calibrate(files, "--method", "vector", "--save-model", "model.json")
    test = np.load(files / "test.npz")
    probs = np.exp(log_softmax(test["scores"], axis=1))
    np.savez(files / "probs.npz", scores=probs, labels=test["labels"], kind=np.array("probs"))
    done = run_calib("calibrate", "--model", "model.json", "--apply", "probs.npz", "--out", "x.npz", cwd=files)
    assert done.returncode == 1
    assert "fitted on logits as given" in done.stderr and "--kind logits" in done.stderr
    assert not (files / "x.npz").exists()
    # The advice works: the same rows given as logits are calibrated as the model in Python does.
    done = run_calib("calibrate", "--model", "model.json", "--apply", "test.npz", "--out", "y.npz", cwd=files)
    assert done.returncode == 0, done.stderr
    model, _ = load_calibrator(files / "model.json")
    expected = model.predict_log_proba(test["scores"], kind="logits")
    np.testing.assert_allclose(np.load(files / "y.npz")["scores"], expected, rtol=0, atol=1e-12)


def test_penalty_options_reach_the_map_and_are_refused_where_they_mean_nothing(files):
    done = _calibrate(files, "--method", "matrix", "--reg-lambda", "0.5", "--reg-mu", "2", "--penalty", "l2", "--json")
    penalty = json.loads(done.stdout)["penalty"]
    assert (penalty["lambda"], penalty["mu"], penalty["form"], penalty["chosen_by_cross_validation"]) == (
        0.5,
        2.0,
        "l2",
        False,
    )
    train = np.load(files / "cal.npz")
    with pytest.warns(CalibInputWarning, match="MatrixScaling fitted 42 parameters on 400"):  # the command notes it too
        expected = make_calibrator("matrix", reg_lambda=0.5, reg_mu=2.0, penalty="l2").fit(
            train["scores"], train["labels"], kind="logits"
        )
    test = np.load(files / "test.npz")
    np.testing.assert_allclose(
        np.load(files / "out.npz")["scores"], expected.predict_log_proba(test["scores"], kind="logits"), atol=1e-12
    )
    for args, message in [
        (("--method", "temperature", "--reg-lambda", "1"), "--reg-lambda set the penalty of --method"),
        (("--method", "auto", "--penalty", "l2"), "--penalty set the penalty of --method"),
        (("--method", "dirichlet", "--reg-lambda", "much"), "--reg-lambda must be a finite number >= 0 or cv; got"),
        (("--method", "dirichlet", "--reg-lambda", "-1"), "--reg-lambda must be a finite number >= 0 or cv; got"),
        (("--method", "matrix", "--reg-lambda", "nan"), "--reg-lambda must be a finite number >= 0 or cv; got"),
        (("--method", "temperature", "--folds", "1"), "--folds must be an integer >= 2"),
        (("--method", "temperature", "--seed", "-1"), "--seed must be an integer from 0 to 4294967295"),
        (("--method", "dirichlet", "--reg-mu", "cv"), "--reg-mu must be a number >= 0"),
    ]:
        done = run_calib("calibrate", "--train", "cal.npz", "--apply", "test.npz", "--out", "z.npz", *args, cwd=files)
        assert done.returncode == 2 and message in done.stderr, done.stderr
        assert not (files / "z.npz").exists()


def test_a_separable_unpenalized_fit_is_not_called_converged(tmp_path):
    # 30 rows, 6 classes, 42 parameters: the unpenalized map separates the rows and its loss has no minimum.
    z, y = _logits(30, 7, scale=1.0)
    np.savez(tmp_path / "cal.npz", scores=z, labels=y, kind=np.array("logits"))
    np.savez(tmp_path / "test.npz", scores=z, labels=y, kind=np.array("logits"))
    done = _calibrate(tmp_path, "--method", "matrix", "--reg-lambda", "0", "--json")
    report = json.loads(done.stdout)
    assert report["converged"] is False
    assert "has no minimum" in done.stderr and "NOT converged" in done.stderr
    assert TemperatureScaling().fit(z, y, kind="logits").converged_


def test_evaluate_refuses_the_maps_of_logits_as_given_and_the_named_equivalent_runs(files):
    done = run_calib("evaluate", "cal.npz", "--calibrators", "vector", "--n-boot", "0", "--json", cwd=files)
    assert done.returncode == 1 and "ask for dirichlet_diagonal" in done.stderr and "--method vector" in done.stderr
    done = run_calib(
        "evaluate", "cal.npz", "--calibrators", "dirichlet_diagonal", "--n-boot", "0", "--json", cwd=files
    )
    assert done.returncode == 0, done.stderr
    gains = json.loads(done.stdout)["calibrator_gains"]["gains"]
    assert [gain["calibrator"] for gain in gains] == ["dirichlet_diagonal"]


def test_labels_file_labels_the_training_file_only(tmp_path):
    z, y = _logits(300, 21)
    np.save(tmp_path / "cal.npy", z[:150])
    np.save(tmp_path / "cal_labels.npy", y[:150])
    np.save(tmp_path / "apply.npy", z[150:])
    done = run_calib(
        "calibrate", "--method", "temperature", "--kind", "logits", "--train", "cal.npy", "--labels-file",
        "cal_labels.npy", "--apply", "apply.npy", "--out", "out.npz", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    written = np.load(tmp_path / "out.npz")
    assert "labels" not in written.files  # the training labels are not written beside other rows' scores
    model = TemperatureScaling().fit(z[:150], y[:150], kind="logits")
    np.testing.assert_allclose(written["scores"], model.predict_log_proba(z[150:], kind="logits"), atol=1e-12)


def test_binary_methods_without_a_gradient_norm_get_a_report(tmp_path):
    rng = np.random.default_rng(3)
    p1 = rng.uniform(0.02, 0.98, 300)
    y = (rng.random(300) < p1**1.5).astype(int)
    np.savez(tmp_path / "cal.npz", scores=np.column_stack([1 - p1, p1]), labels=y, kind=np.array("probs"))
    done = run_calib(
        "calibrate", "--method", "beta", "--train", "cal.npz", "--apply", "cal.npz", "--out", "o.npz", "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["method"] == "beta" and report["n_parameters"] == 3
