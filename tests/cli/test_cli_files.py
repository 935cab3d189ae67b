"""The ``calib`` command on the files practitioners really have, as a subprocess, checked against scikit-learn.

Each file shape is written the way pandas, scikit-learn or a training script writes it; the numbers
the command prints are compared with sklearn.metrics on the same data, and every malformed input must
end with exit status 1, one line on stderr, no traceback and no file half-written.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import entropy
from sklearn.metrics import accuracy_score, log_loss
from support import run_calib

ROOT = Path(__file__).resolve().parents[2]
K = 4


def _model(n: int = 600, k: int = K, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    logits = 2.5 * rng.normal(size=(n, k))
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    labels = np.minimum((rng.random(n)[:, None] > np.cumsum(probs, axis=1)).sum(axis=1), k - 1)
    return probs, labels


def _metrics(done: subprocess.CompletedProcess) -> dict:
    assert done.returncode == 0, done.stderr
    return {m["metric"]: m["value"] for m in json.loads(done.stdout)["metrics"]}


def _expected(probs: np.ndarray, labels: np.ndarray) -> dict:
    """Accuracy and NCE from scikit-learn: NCE = log loss / entropy of the label frequencies."""
    priors = np.bincount(labels, minlength=probs.shape[1]) / labels.size
    return {
        "accuracy": accuracy_score(labels, probs.argmax(axis=1)),
        "NCE": log_loss(labels, probs, labels=np.arange(probs.shape[1])) / entropy(priors),
    }


def _assert_metrics(done, probs, labels):
    got = _metrics(done)
    for name, value in _expected(probs, labels).items():
        assert got[name] == pytest.approx(value, rel=1e-12, abs=1e-15), name


def _one_error_line(done: subprocess.CompletedProcess, command: str = "evaluate", status: int = 1) -> str:
    """The single stderr line of a refused input (notes may precede it), no traceback, nothing on stdout;
    exit status 1 (bad input) or, for a command line that cannot be run, 2."""
    assert done.returncode == status, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and done.stdout == ""
    errors = [line for line in done.stderr.splitlines() if not line.startswith("calib: note:")]
    assert len(errors) == 1 and errors[0].startswith(f"calib {command}: error: "), done.stderr
    return errors[0]


def _frame(probs, labels, columns=None) -> pd.DataFrame:
    columns = columns or [f"class_{k}" for k in range(probs.shape[1])]
    return pd.DataFrame(probs, columns=columns).assign(label=labels)


# ---------------------------------------------------------------------------------------------- file shapes


def test_to_csv_with_its_default_index_column(tmp_path):
    probs, labels = _model()
    _frame(probs, labels).to_csv(tmp_path / "scores.csv")  # pandas' default: the index as a first column
    done = run_calib("evaluate", "scores.csv", "--json", "--quiet", "--n-boot", "0", cwd=tmp_path)
    _assert_metrics(done, probs, labels)
    assert "unnamed first column (the index DataFrame.to_csv writes by default) is kept as the rows' ids" in done.stderr
    assert json.loads(done.stdout)["n_classes"] == K


def test_an_extra_feature_column_is_left_out_with_a_note_and_class_columns_select_the_scores(tmp_path):
    probs, labels = _model()
    _frame(probs, labels).assign(age=np.linspace(18, 90, labels.size)).to_csv(tmp_path / "s.csv", index=False)
    done = run_calib("evaluate", "s.csv", "--json", "--quiet", "--n-boot", "0", cwd=tmp_path)
    assert "left out the numeric columns ['age'] (not numbered like the class columns" in done.stderr
    assert any("['age']" in note for note in json.loads(done.stdout)["notes"])  # said in the JSON too
    _assert_metrics(done, probs, labels)
    done = run_calib(
        "evaluate", "s.csv", "--class-columns", "class_*", "--json", "--quiet", "--n-boot", "0", cwd=tmp_path
    )
    _assert_metrics(done, probs, labels)


def test_a_stray_cell_outside_0_1_is_named_by_column_and_row_and_leaving_its_row_out_runs(tmp_path):
    probs, labels = _model()
    frame = _frame(probs, labels)
    column = frame.columns[1]
    frame.loc[7, column] = -0.01  # one broken cell, not a column of other data
    frame.to_csv(tmp_path / "s.csv", index=False)
    line = _one_error_line(run_calib("evaluate", "s.csv", "--quiet", cwd=tmp_path))
    assert f"column '{column}' holds the score -0.01 at row 7" in line and "--class-columns" not in line
    frame.drop(index=7).to_csv(tmp_path / "fixed.csv", index=False)
    done = run_calib("evaluate", "fixed.csv", "--json", "--quiet", "--n-boot", "0", cwd=tmp_path)
    keep = np.arange(labels.size) != 7
    _assert_metrics(done, probs[keep], labels[keep])


def test_a_header_that_names_a_column_twice_is_refused_and_renaming_it_runs(tmp_path):
    probs, labels = _model()
    frame = _frame(probs, labels)
    names = list(frame.columns)
    frame.to_csv(tmp_path / "s.csv", index=False, header=[names[0], names[0], *names[2:]])
    line = _one_error_line(run_calib("evaluate", "s.csv", "--quiet", cwd=tmp_path))
    assert f"names '{names[0]}' more than once; give each column its own name" in line
    frame.to_csv(tmp_path / "fixed.csv", index=False)
    _assert_metrics(
        run_calib("evaluate", "fixed.csv", "--json", "--quiet", "--n-boot", "0", cwd=tmp_path), probs, labels
    )


def test_rounded_probabilities_are_renormalized_on_request_never_read_as_logits(tmp_path):
    probs, labels = _model()
    _frame(probs.round(3), labels).to_csv(tmp_path / "s.csv", index=False)
    line = _one_error_line(run_calib("evaluate", "s.csv", "--quiet", cwd=tmp_path))
    assert "--renormalize" in line and "logits" not in line and "largest deviation" in line
    done = run_calib("evaluate", "s.csv", "--renormalize", "--json", "--quiet", "--n-boot", "0", cwd=tmp_path)
    rounded = probs.round(3)
    _assert_metrics(done, rounded / rounded.sum(axis=1, keepdims=True), labels)
    assert "renormalized rows off 1 by up to" in done.stderr


def test_a_zero_probability_on_a_true_label_is_an_infinite_log_loss_not_a_crash(tmp_path):
    probs, labels = _model()
    probs[0] = np.eye(K)[(labels[0] + 1) % K]  # a hard, wrong prediction
    _frame(probs, labels).to_csv(tmp_path / "s.csv", index=False)
    done = run_calib("evaluate", "s.csv", "--json", "--quiet", "--n-boot", "20", cwd=tmp_path)
    document = json.loads(done.stdout)  # strict JSON: json.loads would reject a bare NaN or Infinity
    metrics = {m["metric"]: m for m in document["metrics"]}
    assert metrics["NCE"]["value"] == "inf" and metrics["ECD"]["value"] == "inf"
    assert metrics["accuracy"]["value"] == pytest.approx(accuracy_score(labels, probs.argmax(axis=1)))
    assert isinstance(metrics["NBS"]["value"], float) and isinstance(metrics["ECE top-label"]["low"], float)
    assert document["calibrator_gains"]["score"] == "Brier"  # the evidence falls back to the Brier score
    text = run_calib("evaluate", "s.csv", "--quiet", "--n-boot", "0", cwd=tmp_path)
    assert text.returncode == 0 and "inf" in text.stdout
    compared = run_calib("compare", "s.csv", "s.csv", "--quiet", "--n-boot", "10", cwd=tmp_path)
    assert compared.returncode == 0 and "undefined: infinite for both" in compared.stdout


def test_a_binary_problem_stored_as_one_positive_class_column(tmp_path):
    probs, labels = _model(k=2)
    pd.DataFrame({"p_default": probs[:, 1], "y": np.where(labels == 1, "default", "paid")}).to_csv(
        tmp_path / "s.csv", index=False
    )
    line = _one_error_line(run_calib("evaluate", "s.csv", "--labels", "y", "--quiet", cwd=tmp_path))
    assert "--positive-label" in line
    done = run_calib(
        "evaluate", "s.csv", "--labels", "y", "--positive-label", "default", "--json", "--quiet", "--n-boot", "0",
        cwd=tmp_path,
    )  # fmt: skip
    _assert_metrics(done, probs, labels)


def test_one_logit_column(tmp_path):
    probs, labels = _model(k=2)
    logit = np.log(probs[:, 1]) - np.log(probs[:, 0])
    pd.DataFrame({"logit": logit, "label": labels}).to_csv(tmp_path / "s.csv", index=False)
    done = run_calib(
        "evaluate", "s.csv", "--kind", "logits", "--positive-label", "1", "--json", "--quiet", "--n-boot", "0",
        cwd=tmp_path,
    )  # fmt: skip
    got, expected = _metrics(done), _expected(probs, labels)
    assert got["NCE"] == pytest.approx(expected["NCE"], rel=1e-9)


def test_one_based_labels_and_labels_that_are_not_column_names(tmp_path):
    probs, labels = _model()
    _frame(probs, labels + 1).to_csv(tmp_path / "one.csv", index=False)
    line = _one_error_line(run_calib("evaluate", "one.csv", "--quiet", cwd=tmp_path))
    assert "--label-values 1-based" in line and "label_values" not in line
    done = run_calib(
        "evaluate", "one.csv", "--label-values", "1-based", "--json", "--quiet", "--n-boot", "0", cwd=tmp_path
    )
    _assert_metrics(done, probs, labels)
    names = np.array(["cat", "dog", "owl", "fox"])
    _frame(probs, names[labels], columns=["p_cat", "p_dog", "p_owl", "p_fox"]).to_csv(tmp_path / "n.csv", index=False)
    line = _one_error_line(run_calib("evaluate", "n.csv", "--quiet", cwd=tmp_path))
    assert "--label-values LABEL=COLUMN" in line
    done = run_calib(
        "evaluate", "n.csv", "--label-values", "cat=p_cat", "dog=p_dog", "owl=p_owl", "fox=p_fox", "--json",
        "--quiet", "--n-boot", "0", cwd=tmp_path,
    )  # fmt: skip
    _assert_metrics(done, probs, labels)


def test_string_labels_that_are_the_column_names_and_parquet(tmp_path):
    probs, labels = _model()
    names = ["cat", "dog", "owl", "fox"]
    frame = _frame(probs, np.array(names)[labels], columns=names)
    frame.to_parquet(tmp_path / "s.parquet")
    done = run_calib("evaluate", "s.parquet", "--json", "--quiet", "--n-boot", "0", cwd=tmp_path)
    _assert_metrics(done, probs, labels)


# ---------------------------------------------------------------------------------------------- malformed input

MALFORMED = {
    "empty file": lambda p: p.write_text(""),
    "header only": lambda p: p.write_text("a,b,label\n"),
    "not UTF-8": lambda p: p.write_bytes(b"a,b,label\n0.5,0.5,1\n\xe9\xff,1,0\n"),
    "not a table": lambda p: p.write_bytes(b"\x00\x01\x02PK\x03\x04" * 20),
    "one row with a text score": lambda p: p.write_text("a,b,label\nhigh,0.5,1\n0.2,0.8,0\n"),
}


@pytest.mark.parametrize("fault", sorted(MALFORMED))
def test_a_malformed_table_gives_one_line(tmp_path, fault):
    MALFORMED[fault](tmp_path / "s.csv")
    line = _one_error_line(run_calib("evaluate", "s.csv", "--out", "report", "--quiet", cwd=tmp_path))
    assert "s.csv" in line
    assert not (tmp_path / "report").exists()  # nor an empty folder of the failed run's own


def test_a_truncated_or_foreign_npz_and_a_folder_given_as_a_file(tmp_path):
    probs, labels = _model()
    np.savez(tmp_path / "good.npz", scores=probs, labels=labels)
    data = (tmp_path / "good.npz").read_bytes()
    (tmp_path / "cut.npz").write_bytes(data[: len(data) // 2])
    assert "cut.npz" in _one_error_line(run_calib("evaluate", "cut.npz", "--quiet", cwd=tmp_path))
    np.save(tmp_path / "array.npy", probs)
    (tmp_path / "array.npz").write_bytes((tmp_path / "array.npy").read_bytes())
    assert "array.npz" in _one_error_line(run_calib("evaluate", "array.npz", "--quiet", cwd=tmp_path))
    (tmp_path / "folder.csv").mkdir()
    assert "is a folder" in _one_error_line(run_calib("evaluate", "folder.csv", "--quiet", cwd=tmp_path))
    assert "does not exist" in _one_error_line(run_calib("evaluate", "nowhere.csv", "--quiet", cwd=tmp_path))


def test_output_paths_are_checked_before_any_work(tmp_path):
    probs, labels = _model()
    _frame(probs, labels).to_csv(tmp_path / "s.csv", index=False)
    (tmp_path / "taken").write_text("keep me")
    line = _one_error_line(run_calib("evaluate", "s.csv", "--out", "taken", "--quiet", cwd=tmp_path))
    assert "is a file" in line and (tmp_path / "taken").read_text() == "keep me"
    line = _one_error_line(run_calib("evaluate", "s.csv", "--out", "taken/inside", "--quiet", cwd=tmp_path))
    assert "cannot be created" in line
    (tmp_path / "model.json").mkdir()
    args = ("--method", "dp", "--train", "s.csv", "--apply", "s.csv", "--out", "c.npz", "--quiet")
    line = _one_error_line(run_calib("calibrate", *args, "--save-model", "model.json", cwd=tmp_path), "calibrate")
    assert "is a folder" in line and not (tmp_path / "c.npz").exists()
    line = _one_error_line(
        run_calib("calibrate", *args[:-3], "--out", "nowhere/c.npz", "--quiet", cwd=tmp_path), "calibrate"
    )
    assert "does not exist" in line


def test_more_folds_than_fit_samples_can_hold_are_refused_naming_both_options(tmp_path):
    # A rule across two settings (the rule of each alone: tests/cli/test_setting_options.py)
    probs, labels = _model()
    _frame(probs, labels).to_csv(tmp_path / "s.csv", index=False)
    line = _one_error_line(run_calib("evaluate", "s.csv", "--folds", "1000000", "--quiet", cwd=tmp_path), status=2)
    assert (
        "1000000 folds need at least 2000000 samples to fit on; --fit-samples is 1000000: "
        "ask for fewer --folds or more --fit-samples"
    ) in line


def test_more_folds_than_the_largest_class_are_refused_and_the_advised_folds_run(tmp_path):
    probs, labels = _model()
    _frame(probs, labels).to_csv(tmp_path / "s.csv", index=False)
    largest = int(np.bincount(labels).max())
    line = _one_error_line(run_calib("evaluate", "s.csv", "--folds", str(largest + 1), "--quiet", cwd=tmp_path))
    assert f"Ask for fewer folds (--folds {largest})" in line
    done = run_calib("evaluate", "s.csv", "--folds", str(largest), "--calibrators", "temperature", "--json", "--quiet",
                     "--n-boot", "0", cwd=tmp_path)  # fmt: skip
    _assert_metrics(done, probs, labels)


def test_compare_needs_two_files_and_version(tmp_path):
    probs, labels = _model()
    _frame(probs, labels).to_csv(tmp_path / "s.csv", index=False)
    done = run_calib("compare", "s.csv", "--quiet", cwd=tmp_path)
    assert "at least two files" in _one_error_line(done, "compare", status=2)
    done = run_calib("--version", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("calib ")


# ---------------------------------------------------------------------------------------------- models and advice


def test_a_crafted_pickle_is_refused_without_being_loaded(tmp_path):
    probs, labels = _model()
    _frame(probs, labels).to_csv(tmp_path / "s.csv", index=False)
    marker = tmp_path / "pwned"

    class Payload:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    (tmp_path / "model.json").write_bytes(pickle.dumps(Payload()))
    (tmp_path / "model.pkl").write_bytes(pickle.dumps(Payload()))
    for name in ("model.json", "model.pkl"):
        line = _one_error_line(
            run_calib("calibrate", "--model", name, "--apply", "s.csv", "--out", "c.npz", "--quiet", cwd=tmp_path),
            "calibrate",
        )
        assert "never loads pickles" in line or "not a calibrator" in line
    assert not marker.exists() and not (tmp_path / "c.npz").exists()


def test_a_saved_calibrator_applies_to_unlabelled_scores(tmp_path):
    probs, labels = _model(seed=1)
    sharp = probs**3 / (probs**3).sum(axis=1, keepdims=True)  # over-confident
    _frame(sharp, labels).to_csv(tmp_path / "train.csv", index=False)
    test_probs, _ = _model(seed=2)
    test_sharp = test_probs**3 / (test_probs**3).sum(axis=1, keepdims=True)
    pd.DataFrame(test_sharp, columns=[f"class_{k}" for k in range(K)]).to_csv(tmp_path / "new.csv", index=False)
    fit = run_calib(
        "calibrate", "--method", "temperature", "--train", "train.csv", "--apply", "train.csv", "--out", "t.npz",
        "--save-model", "ts.json", "--quiet", cwd=tmp_path,
    )  # fmt: skip
    assert fit.returncode == 0, fit.stderr
    assert json.loads((tmp_path / "ts.json").read_text())["method"] == "temperature"
    done = run_calib("calibrate", "--model", "ts.json", "--apply", "new.csv", "--out", "new.npz", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with np.load(tmp_path / "new.npz") as saved:
        assert "labels" not in saved.files and saved["scores"].shape == test_sharp.shape
        entropy_after = -np.sum(np.exp(saved["scores"]) * saved["scores"], axis=1).mean()
    assert entropy_after > -np.sum(test_sharp * np.log(test_sharp), axis=1).mean()  # softer than before


def test_no_calibrator_is_recommended_for_noise(tmp_path):
    probs, labels = _model(n=5000, seed=4)  # labels drawn from the probabilities: calibrated
    _frame(probs, labels).to_csv(tmp_path / "s.csv", index=False)
    document = json.loads(run_calib("evaluate", "s.csv", "--json", "--quiet", cwd=tmp_path).stdout)
    assert document["recommended"].startswith("none: no calibrator lowers the log loss beyond noise")
    gains = {g["calibrator"]: g for g in document["calibrator_gains"]["gains"]}
    assert all(g["low"] <= 0 for g in gains.values())
    over = probs**2 / (probs**2).sum(axis=1, keepdims=True)
    _frame(over, labels).to_csv(tmp_path / "over.csv", index=False)
    document = json.loads(run_calib("evaluate", "over.csv", "--json", "--quiet", cwd=tmp_path).stdout)
    chosen = document["recommended"]
    assert not chosen.startswith("none")
    assert {g["calibrator"]: g for g in document["calibrator_gains"]["gains"]}[chosen]["low"] > 0


def test_a_small_or_incomplete_training_set_is_noted(tmp_path):
    probs, labels = _model(n=40)
    keep = labels != 3
    _frame(probs[keep], labels[keep]).to_csv(tmp_path / "train.csv", index=False)
    done = run_calib(
        "calibrate", "--method", "dp", "--train", "train.csv", "--apply", "train.csv", "--out", "c.npz", "--quiet",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "no sample of class class_3:" in done.stderr and "noisy" in done.stderr


def test_the_figure_shows_the_positive_class_for_two_classes_and_the_top_label_beside_for_more(tmp_path):
    from calib.cli_report import reliability_panels
    from calib.evaluation.engine import evaluate

    probs, labels = _model(k=2)
    (panel,) = reliability_panels(evaluate(probs, labels, kind="probs", n_boot=0, calibrators=()), ("no", "yes"))
    (bins,) = panel.bins
    assert panel.axis == "P(class yes)" and panel.metric == "ECE positive class" and bins.counts.sum() == labels.size
    occupied = bins.counts > 0
    ids = np.minimum((probs[:, 1] * 15 - 1e-12).astype(int), 14)  # (k/15, (k+1)/15], away from the edges here
    np.testing.assert_allclose(bins.frequency[occupied], np.bincount(ids, labels, 15)[occupied] / bins.counts[occupied])
    probs, labels = _model()
    panels = reliability_panels(evaluate(probs, labels, kind="probs", n_boot=0, calibrators=()))
    assert [p.metric for p in panels] == ["ECE top-label", "ECE class-wise"]  # the summary's names
    assert panels[0].bins[0].counts.sum() == labels.size and len(panels[1].bins) == K
    assert all(b.counts.sum() == labels.size for b in panels[1].bins)
    _frame(probs, labels).to_csv(tmp_path / "s.csv", index=False)
    done = run_calib("evaluate", "s.csv", "--out", "report", "--n-boot", "0", "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for name in ("reliability.png", "reliability.pdf", "metrics.json", "metrics.csv"):
        assert (tmp_path / "report" / name).stat().st_size > 0


def _bad_files(tmp_path: Path) -> dict[str, Path]:
    """Files that each need a different fix, written as users write them."""
    probs, labels = _model()
    files = {}

    def put(name, frame):
        files[name] = tmp_path / name
        frame.to_csv(files[name], index=False)

    put("rounded.csv", _frame(probs.round(3), labels))
    put("one_column.csv", pd.DataFrame({"p": probs[:, 0], "label": labels}))
    put("one_based.csv", _frame(probs, labels + 1))
    put("no_label.csv", _frame(probs, labels).rename(columns={"label": "target"}))
    put("log_values.csv", _frame(np.log(probs), labels))
    put("unknown_names.csv", _frame(probs, np.array(list("abcd"))[labels]))
    put("numbered.csv", _frame(probs, labels, columns=["1", "2", "3", "4"]))
    files["keys.npz"] = tmp_path / "keys.npz"
    np.savez(files["keys.npz"], probs=probs, y=labels)
    return files


def test_every_fix_is_said_in_the_words_of_the_interface_that_shows_it(tmp_path):
    """The command names flags, never Python arguments; Python names arguments, never flags."""
    from calib.data.real import load_posteriors
    from calib.validation import CalibInputError, CalibInputWarning

    python_words = re.compile(r"\b(kind|label_values|class_columns|label_column|positive_label|renormalize|"
                              r"scores_key|labels_key)=")  # fmt: skip
    for name, path in _bad_files(tmp_path).items():
        line = _one_error_line(run_calib("evaluate", path.name, "--quiet", cwd=tmp_path))
        assert not python_words.search(line), (name, line)
        with pytest.raises(CalibInputError) as caught:
            load_posteriors(path, kind="probs").logprobs()
        assert " --" not in str(caught.value), (name, str(caught.value))
        assert "--" in caught.value.cli_message or caught.value.cli_message == str(caught.value), name
    # Notes too: a feature column left out says how to keep it, each in its interface's words.
    _frame(*_model()).assign(age=np.arange(_model()[1].size)).to_csv(tmp_path / "feature.csv", index=False)
    note = run_calib("evaluate", "feature.csv", "--quiet", "--n-boot", "0", cwd=tmp_path).stderr
    assert "--class-columns" in note and not python_words.search(note), note
    with pytest.warns(CalibInputWarning, match="class_columns=") as caught:
        load_posteriors(tmp_path / "feature.csv", kind="probs")
    assert all(" --" not in str(w.message) for w in caught)
