"""The size of a fit (calib.calibrators.base): every calibrator counts the parameters it fitted (``n_parameters_``)
on its rows (``n_fit_rows_``), warns when that is more than one parameter per ROWS_PER_PARAMETER rows, and a saved
model keeps both."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from calib.calibrators import (
    AffineCalibrator,
    BetaCalibrator,
    DirichletCalibrator,
    HistogramBinning,
    IsotonicCalibrator,
    MatrixScaling,
    MeanReplacement,
    OneVsAllHistogramBinning,
    OneVsRest,
    PlattCalibrator,
    TemperatureScaling,
    VectorScaling,
    load_calibrator,
    save_calibrator,
)
from calib.calibrators.base import ROWS_PER_PARAMETER
from calib.validation import CalibInputError, CalibInputWarning

SIZE_NOTE = "calibration rows, more than one per"


def _data(k: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Over-confident logits (twice those the labels are drawn from), every class present."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k))
    labels = (logits + rng.gumbel(size=(n, k))).argmax(axis=1)
    labels[:k] = np.arange(k)
    return 2 * logits, labels


def _fit_quietly(model, scores, labels):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.fit(scores, labels, kind="logits")
    return model, [w for w in caught if issubclass(w.category, CalibInputWarning) and SIZE_NOTE in str(w.message)]


@pytest.mark.parametrize("k", [2, 3, 5])
def test_the_scaling_calibrators_count_the_free_parameters_of_their_maps(k):
    scores, labels = _data(k, 400)
    expected = {
        TemperatureScaling(): 1,
        AffineCalibrator(): k,  # alpha and K - 1 biases
        VectorScaling(): 2 * k - 1,  # on the logits as given
        VectorScaling(features="clr"): 2 * k - 1,
        VectorScaling(features="last_class_ratios"): 2 * (k - 1),
        MatrixScaling(): k * k + k,  # on the logits as given
        MatrixScaling(features="last_class_ratios", reg_lambda=0): k * k - 1,
        DirichletCalibrator(): k * k + k,
        DirichletCalibrator(reference_row=True, normalized=False): k * k - 1,  # dirichletcal's form: last row 0
        MeanReplacement(): 1,
    }
    logp = scores - np.logaddexp.reduce(scores, axis=1, keepdims=True)
    for model, count in expected.items():
        model, _ = _fit_quietly(model, scores, labels)
        assert (model.n_parameters_, model.n_fit_rows_) == (count, 400), model
        if isinstance(model, VectorScaling):  # the softmax maps: the length of the optimizer's parameter vector
            assert model._objective(scores if model.features_ == "logits" else logp, labels).start().size == count
        elif hasattr(model, "_objective"):
            feats = model._features(scores if model.features_ == "logits" else logp, model.features_)
            if model.features_ == "last_class_ratios":  # z_K = 0 is left out of the fit
                feats = feats[:, :-1]
            problem = model._objective(feats, labels, model.reg_lambda_, model.reg_mu_)
            assert problem.start().size == count, model


def test_the_binary_calibrators_count_their_parameters_bins_and_pieces():
    from sklearn.isotonic import IsotonicRegression

    scores, labels = _data(2, 500, seed=3)
    for model, count in ((PlattCalibrator(), 2), (BetaCalibrator(), 3), (BetaCalibrator("ab"), 2)):
        assert _fit_quietly(model, scores, labels)[0].n_parameters_ == count
    assert _fit_quietly(BetaCalibrator("am"), scores, labels)[0].n_parameters_ == 2
    # isotonic: one per constant piece, the distinct fitted values of scikit-learn's regression on the log-odds
    isotonic = _fit_quietly(IsotonicCalibrator(), scores, labels)[0]
    t = scores[:, 1] - scores[:, 0]
    pieces = np.unique(IsotonicRegression(y_min=0, y_max=1).fit(t, labels).predict(t)).size
    assert isotonic.n_parameters_ == pieces and 3 < pieces < 500
    # histogram: one per occupied bin, counted here with np.digitize on the right-closed edges k / M
    p1 = 1 / (1 + np.exp(-t))
    for n_bins in (5, 40, 400):
        occupied = np.unique(np.clip(np.digitize(p1, np.arange(n_bins + 1) / n_bins, right=True) - 1, 0, None)).size
        model = _fit_quietly(HistogramBinning(n_bins=n_bins), scores, labels)[0]
        assert model.n_parameters_ == occupied
    assert occupied < 400  # some of the 400 bins are empty, and not counted


def test_nested_fits_count_inside_and_warn_once_outside():
    scores, labels = _data(4, 60, seed=1)
    model, size_notes = _fit_quietly(OneVsRest(HistogramBinning(n_bins=30)), scores, labels)
    inner = [m.n_parameters_ for m in model.estimators_]
    assert model.n_parameters_ == sum(inner) > 6 and all(m.n_fit_rows_ == 60 for m in model.estimators_)
    assert len(size_notes) == 1 and str(size_notes[0].message).startswith("OneVsRest fitted")
    # the cross-validation's fold fits (2 x 3 of them) count inside, and only the refit on all rows warns
    cv, size_notes = _fit_quietly(DirichletCalibrator(lambdas=(0.01, 1.0), n_folds=3, patience=None), scores, labels)
    assert cv.n_parameters_ == 20 and np.isfinite(cv.cv_losses_).all() and cv.cv_losses_.size == 2
    assert len(size_notes) == 1 and str(size_notes[0].message).startswith("DirichletCalibrator fitted 20 parameters")
    assert OneVsAllHistogramBinning(n_bins=5).fit(scores, labels, kind="logits").n_parameters_ <= 4 * 5


def test_the_warning_comes_past_one_parameter_per_ten_rows_and_names_what_has_fewer():
    assert ROWS_PER_PARAMETER == 10
    k = 3  # Dirichlet: 12 parameters, so 120 rows are enough and 119 are not
    scores, labels = _data(k, 120, seed=2)
    assert _fit_quietly(DirichletCalibrator(), scores, labels)[1] == []
    _, size_notes = _fit_quietly(DirichletCalibrator(), scores[:119], labels[:119])
    (note,) = size_notes
    message, cli = str(note.message), note.message.cli_message
    assert message.startswith("DirichletCalibrator fitted 12 parameters on 119 calibration rows, more than one per 10")
    assert "TemperatureScaling (1 parameter) or AffineCalibrator (3 parameters)" in message
    assert "a larger penalty (reg_lambda=..., or a grid of larger lambdas for reg_lambda='cv')" in message
    assert "more calibration rows" in message
    assert cli.startswith("--method dirichlet fitted 12 parameters on 119 calibration rows")
    assert "--method temperature (1 parameter) or --method dp (3 parameters)" in cli
    assert note.filename == __file__  # said at the caller's fit
    # a calibrator offers only what has fewer parameters than itself, and what it has of its own
    _, (dp_note,) = _fit_quietly(AffineCalibrator(), scores[:29], labels[:29])
    assert "TemperatureScaling (1 parameter); or more" in str(dp_note.message)
    assert "AffineCalibrator (" not in str(dp_note.message).split("use", 1)[1]
    _, (t_note,) = _fit_quietly(TemperatureScaling(), scores[:9], labels[:9])
    assert str(t_note.message).endswith("check it on held-out data, or use more calibration rows")
    _, (h_note,) = _fit_quietly(HistogramBinning(n_bins=15), *_data(2, 100, seed=5))
    assert "fewer bins, HistogramBinning(n_bins=...)" in str(h_note.message)


def test_the_warning_changes_no_numbers():
    scores, labels = _data(5, 100, seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quiet = DirichletCalibrator().fit(scores, labels, kind="logits")
    loud, size_notes = _fit_quietly(DirichletCalibrator(), scores, labels)
    assert len(size_notes) == 1
    assert np.array_equal(quiet.coef_, loud.coef_) and np.array_equal(quiet.intercept_, loud.intercept_)


def test_a_saved_model_records_the_size_of_its_fit(tmp_path):
    scores, labels = _data(4, 150, seed=6)
    model, size_notes = _fit_quietly(DirichletCalibrator(), scores, labels)
    assert len(size_notes) == 1
    path = tmp_path / "model.json"
    save_calibrator(model, path, method="dirichlet")
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["format_version"] == 5
    assert (document["fitted"]["n_parameters_"], document["fitted"]["n_fit_rows_"]) == (20, 150)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # loading does not refit, so it does not warn again
        loaded, _ = load_calibrator(path)
    assert (loaded.n_parameters_, loaded.n_fit_rows_) == (20, 150)
    # a file of format version 3 predates the fields: the count comes from its state, the rows are unknown (0)
    old = json.loads(json.dumps(document))
    old["format_version"] = 3
    del old["fitted"]["n_parameters_"], old["fitted"]["n_fit_rows_"]
    # ... and the Dirichlet calibrator of those versions: a given penalty, no record of its choice
    del old["cross_validation"]
    old["init"] = {"reg_lambda": model.reg_lambda_, "reg_mu": model.reg_mu_}
    for name in ("features_", "reg_lambda_", "cv_grid_", "cv_losses_"):
        del old["fitted"][name]
    (tmp_path / "v3.json").write_text(json.dumps(old), encoding="utf-8")
    loaded, _ = load_calibrator(tmp_path / "v3.json")
    assert (loaded.n_parameters_, loaded.n_fit_rows_) == (20, 0)
    same = loaded.predict_proba(scores, kind="logits") == model.predict_proba(scores, kind="logits")
    assert same.all()
    # ... and a version 4 file must hold them
    (tmp_path / "v4.json").write_text(json.dumps(old | {"format_version": 4}), encoding="utf-8")
    with pytest.raises(CalibInputError, match=r"missing \['n_fit_rows_', 'n_parameters_'\]"):
        load_calibrator(tmp_path / "v4.json")


@pytest.mark.parametrize(
    ("name", "value", "fragment"),
    [
        ("n_parameters_", 12, "fitted.n_parameters_ is 12, but the fitted attributes hold 20 parameters"),
        ("n_parameters_", 20.0, "fitted.n_parameters_ must be a 64-bit integer; got 20.0"),
        ("n_fit_rows_", True, "fitted.n_fit_rows_ must be a 64-bit integer; got True"),
        ("n_fit_rows_", -1, "fitted.n_fit_rows_ must lie in >= 0"),
    ],
)
def test_an_edited_size_is_refused(tmp_path, name, value, fragment):
    model, _ = _fit_quietly(DirichletCalibrator(), *_data(4, 300, seed=7))
    path = tmp_path / "model.json"
    save_calibrator(model, path, method="dirichlet")
    document = json.loads(path.read_text(encoding="utf-8"))
    document["fitted"][name] = value
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(CalibInputError) as refused:
        load_calibrator(path)
    assert fragment in str(refused.value)


def test_the_command_line_prints_the_note(tmp_path, capsys):
    from calib.cli import main

    scores, labels = _data(10, 200, seed=8)
    table = tmp_path / "t.csv"
    header = ",".join([*(f"c{j}" for j in range(10)), "label"])
    rows = [",".join([*(repr(float(v)) for v in row), str(y)]) for row, y in zip(scores, labels, strict=True)]
    table.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    out, model = tmp_path / "o.csv", tmp_path / "m.json"
    args = ["calibrate", "--kind", "logits", "--train", str(table), "--apply", str(table), "--out", str(out)]
    assert main([*args, "--method", "dirichlet", "--save-model", str(model)]) == 0
    err = capsys.readouterr().err
    assert "note: --method dirichlet fitted 110 parameters on 200 calibration rows" in err
    assert "--method temperature (1 parameter) or --method dp (10 parameters)" in err
    assert json.loads(model.read_text())["fitted"]["n_parameters_"] == 110
    assert main([*args[:-1], str(tmp_path / "o2.csv"), "--method", "temperature"]) == 0
    assert SIZE_NOTE not in capsys.readouterr().err
