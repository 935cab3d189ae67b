"""The ``calib`` command on files written the way practitioners write them: scikit-learn ``predict_proba``
exported with pandas, pivots, random forests, k-NN, rounded and percentage outputs, other separators and
formats, hand-edited model files. Every number is checked against scikit-learn or numpy computed here,
and every refusal's advice is followed to check that it works.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import threading
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from scipy.stats import bootstrap, entropy
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import load_iris, make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier
from support import run_calib

from calib.resampling.bootstrap import basic_interval


def _json(done) -> dict:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _metrics(done) -> dict[str, dict]:
    return {m["metric"]: m for m in _json(done)["metrics"]}


def _error(done, status: int = 1) -> str:
    """The one error line of a refused command (notes may precede it), exit ``status``, no traceback."""
    assert done.returncode == status, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and done.stdout == ""
    errors = [line for line in done.stderr.splitlines() if re.match(r"calib \w+: error: ", line)]
    assert len(errors) == 1, done.stderr
    return errors[0]


def _advised(message: str, flag: str) -> list[str]:
    """The command-line words the message advises for ``flag`` (e.g. ["--sep", ";"]), read as a shell
    reads them: a quoted value ('...' or $'...'), or a word up to a space (a closing comma or parenthesis
    is the sentence's, not the value's, unless it is the whole value: "--decimal ,")."""
    match = re.search(re.escape(flag) + r"(?: (\$'[^']*'|'[^']*'|[^\s)]+))?", message)
    assert match, (flag, message)
    value = match.group(1)
    if not value or value.startswith("-"):
        return [flag]
    if value.startswith("$'"):  # bash's ANSI-C quoting
        return [flag, value[2:-1].encode().decode("unicode_escape")]
    word = shlex.split(value)[0]
    return [flag, word.rstrip(",;") if len(word) > 1 else word]


def _sklearn_numbers(probs: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """Accuracy and NCE (log loss over the entropy of the label frequencies) by scikit-learn and scipy."""
    priors = np.bincount(labels, minlength=probs.shape[1]) / labels.size
    return {
        "accuracy": accuracy_score(labels, probs.argmax(axis=1)),
        "NCE": log_loss(labels, probs, labels=np.arange(probs.shape[1])) / entropy(priors),
    }


def _assert_numbers(done, probs, labels, rel=1e-9):
    got = _metrics(done)
    for name, value in _sklearn_numbers(probs, labels).items():
        assert got[name]["value"] == pytest.approx(value, rel=rel), name


def _iris(tmp_path: Path):
    """A logistic regression on iris: calibration and test splits with the class names as labels."""
    data = load_iris()
    x_train, x_rest, y_train, y_rest = train_test_split(data.data, data.target, test_size=0.6, random_state=0)
    x_cal, x_test, y_cal, y_test = train_test_split(x_rest, y_rest, test_size=0.5, random_state=1)
    model = LogisticRegression(max_iter=1000).fit(x_train, y_train)
    names = list(data.target_names)
    for split, x, y in (("cal", x_cal, y_cal), ("test", x_test, y_test)):
        frame = pd.DataFrame(model.predict_proba(x), columns=names).assign(label=np.array(names)[y])
        frame.to_csv(tmp_path / f"{split}.csv", index=False)
    return model.predict_proba(x_test), y_test, names


# ---------------------------------------------------------------------------------------------- classes by name


def test_a_saved_calibrator_is_applied_to_columns_by_name_whatever_their_order(tmp_path):
    probs, labels, names = _iris(tmp_path)
    test = pd.read_csv(tmp_path / "test.csv")
    test[["label", "virginica", "setosa", "versicolor"]].to_csv(tmp_path / "shuffled.csv", index=False)
    fit = ["calibrate", "--method", "temperature", "--train", "cal.csv", "--quiet"]
    done = run_calib(*fit, "--apply", "test.csv", "--out", "a.npz", "--save-model", "t.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    model = json.loads((tmp_path / "t.json").read_text())
    assert model["class_names"] == names and model["kind"] == "probs"
    done = run_calib("calibrate", "--model", "t.json", "--apply", "shuffled.csv", "--out", "b.npz", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    with np.load(tmp_path / "a.npz") as a, np.load(tmp_path / "b.npz") as b:
        assert a["class_names"].tolist() == b["class_names"].tolist() == names
        np.testing.assert_array_equal(a["scores"], b["scores"])
        np.testing.assert_array_equal(a["labels"], b["labels"])
        # temperature scaling keeps each row's argmax: the calibrated file's accuracy is the model's
        assert accuracy_score(labels, b["scores"].argmax(axis=1)) == accuracy_score(labels, probs.argmax(axis=1))
    evaluated = _metrics(run_calib("evaluate", "b.npz", "--json", "--quiet", "--n-boot", "0", cwd=tmp_path))
    assert evaluated["accuracy"]["value"] == pytest.approx(accuracy_score(labels, probs.argmax(axis=1)))
    # a file whose classes are not the model's is refused, naming both
    test.drop(columns="label").rename(columns={"virginica": "virginia"}).to_csv(tmp_path / "typo.csv", index=False)
    done = run_calib("calibrate", "--model", "t.json", "--apply", "typo.csv", "--out", "c.npz", cwd=tmp_path)
    assert "missing ['virginica']" in _error(done) and not (tmp_path / "c.npz").exists()
    # so is one with a class fewer or more, naming them
    fewer = test[["versicolor", "virginica"]]
    fewer.div(fewer.sum(axis=1), axis=0).to_csv(tmp_path / "fewer.csv", index=False)
    test.assign(rosa=0.0).drop(columns="label").to_csv(tmp_path / "more.csv", index=False)
    for file, named in (("fewer.csv", "missing ['setosa']"), ("more.csv", "unexpected ['rosa']")):
        done = run_calib("calibrate", "--model", "t.json", "--apply", file, "--out", "c.npz", cwd=tmp_path)
        assert named in _error(done) and not (tmp_path / "c.npz").exists()


def test_class_columns_keep_the_order_given(tmp_path):
    rng = np.random.default_rng(0)
    p_yes = rng.uniform(size=500)
    labels = (rng.random(500) < p_yes**1.5).astype(int)
    pd.DataFrame({"yes": p_yes, "no": 1 - p_yes, "label": labels}).to_csv(tmp_path / "s.csv", index=False)
    document = _json(
        run_calib(
            "evaluate",
            "s.csv",
            "--class-columns",
            "no",
            "yes",
            "--label-values",
            "index",
            "--json",
            "--quiet",
            "--n-boot",
            "0",
            cwd=tmp_path,
        )  # fmt: skip
    )
    assert document["classes"] == ["no", "yes"]
    (panel,) = document["reliability"]
    assert panel["axis"] == "P(class yes)"  # the positive class is the second one given
    counts = np.histogram(p_yes, bins=15, range=(0, 1))[0]  # no score sits on an edge here
    assert panel["bins"][0]["counts"] == counts.tolist()
    probs = np.column_stack([1 - p_yes, p_yes])
    assert {m["metric"]: m["value"] for m in document["metrics"]}["NCE"] == pytest.approx(
        _sklearn_numbers(probs, labels)["NCE"], rel=1e-9
    )


def _twelve_classes(tmp_path: Path):
    x, y = make_classification(n_samples=2400, n_features=20, n_informative=12, n_classes=12, random_state=0)
    x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.5, random_state=0)
    probs = LogisticRegression(max_iter=2000).fit(x_train, y_train).predict_proba(x_test)
    return probs, y_test


def test_a_pivot_with_columns_in_lexicographic_order_is_read_by_class_number(tmp_path):
    probs, labels = _twelve_classes(tmp_path)
    long = pd.DataFrame(
        {"sample": np.repeat(np.arange(labels.size), 12), "cls": np.tile([f"c{k}" for k in range(12)], labels.size)}
    ).assign(prob=probs.ravel())
    wide = long.pivot(index="sample", columns="cls", values="prob")  # columns c0, c1, c10, c11, c2, ...
    assert list(wide.columns[:4]) == ["c0", "c1", "c10", "c11"]
    wide.assign(label=labels).to_csv(tmp_path / "pivot.csv", index=False)
    done = run_calib("evaluate", "pivot.csv", "--json", "--quiet", "--n-boot", "0", cwd=tmp_path)
    _assert_numbers(done, probs, labels)
    assert _json(done)["classes"] == [f"c{k}" for k in range(12)]
    # the same with the index written (the "sample" column) and as a JSON-style export: same numbers
    wide.assign(label=labels).to_csv(tmp_path / "indexed.csv")
    done = run_calib("evaluate", "indexed.csv", "--id-column", "sample", "--json", "--quiet", "--n-boot", "0",
                     cwd=tmp_path)  # fmt: skip
    _assert_numbers(done, probs, labels)


def test_compare_matches_classes_by_name(tmp_path):
    probs, labels, names = _iris(tmp_path)
    test = pd.read_csv(tmp_path / "test.csv")
    test[["versicolor", "label", "setosa", "virginica"]].to_csv(tmp_path / "moved.csv", index=False)
    done = run_calib("compare", "test.csv", "moved.csv", "--names", "A", "B", "--n-boot", "20", "--quiet",
                     cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if "B - A: NCE" in x)
    assert float(re.findall(r"[+-]\d+\.\d+", line)[0]) == 0.0


# ---------------------------------------------------------------------------------------------- exact zeros


def _forest_knn_rounded(tmp_path: Path) -> dict[str, tuple]:
    """Outputs with exact zeros, on calibration and test splits: a random forest, a k-NN and a logistic
    regression rounded to 2 decimals."""
    x, y = make_classification(n_samples=4000, n_features=20, n_informative=8, random_state=0)
    x_train, x_rest, y_train, y_rest = train_test_split(x, y, test_size=0.5, random_state=0)
    x_cal, x_test, y_cal, y_test = train_test_split(x_rest, y_rest, test_size=0.5, random_state=0)
    models = {
        "forest": RandomForestClassifier(100, random_state=0),
        "knn": KNeighborsClassifier(10),
        "rounded": LogisticRegression(max_iter=1000),
    }
    out = {}
    for name, model in models.items():
        model.fit(x_train, y_train)
        for split, xs, ys in (("cal", x_cal, y_cal), ("test", x_test, y_test)):
            probs = model.predict_proba(xs).round(2) if name == "rounded" else model.predict_proba(xs)
            pd.DataFrame(probs, columns=["no", "yes"]).assign(label=ys).to_csv(tmp_path / f"{name}_{split}.csv")
        out[name] = (model, x_cal, y_cal, x_test, y_test)
    return out


def _brier(probs: np.ndarray, labels: np.ndarray) -> float:
    return float(np.mean(np.sum((probs - np.eye(probs.shape[1])[labels]) ** 2, axis=1)))


@pytest.mark.parametrize("method", ["temperature", "dp"])
def test_scaling_outputs_with_exact_zeros_never_harms_the_brier_score(tmp_path, method):
    for name, (model, x_cal, y_cal, x_test, y_test) in _forest_knn_rounded(tmp_path).items():
        raw = pd.read_csv(tmp_path / f"{name}_test.csv", index_col=0)[["no", "yes"]].to_numpy()
        assert (raw == 0).any()
        files = ["--train", f"{name}_cal.csv", "--apply", f"{name}_test.csv", "--out", f"{name}.npz"]
        done = run_calib("calibrate", "--method", method, *files, "--save-model", f"{name}.json", cwd=tmp_path)
        assert done.returncode == 0 and "smoothed at the scores' resolution" in done.stderr, done.stderr
        with np.load(tmp_path / f"{name}.npz") as saved:
            calibrated = np.exp(saved["scores"])
        fitted = json.loads((tmp_path / f"{name}.json").read_text())["fitted"]
        assert fitted["converged_"] is True and fitted["zero_smoothing_"] > 0
        # scikit-learn's sigmoid calibration (Platt on the probability) of the same model on the same split
        sigmoid = CalibratedClassifierCV(model, method="sigmoid", cv=2).fit(x_cal, y_cal)
        reference = _brier(sigmoid.predict_proba(x_test), y_test)
        # before: a forest's Brier score went from 0.058 to 0.18; now at most 2 % above the raw scores'
        assert _brier(calibrated, y_test) <= min(1.02 * _brier(raw, y_test), reference + 0.01), name
        raw_log_loss = log_loss(y_test, np.clip(raw, 1e-15, 1))  # infinite without the clip, for a true-class zero
        true_zero = (raw[np.arange(y_test.size), y_test] == 0).any()
        assert log_loss(y_test, calibrated) < (raw_log_loss if true_zero else 1.02 * raw_log_loss), name
        evaluated = _metrics(run_calib("evaluate", f"{name}_test.csv", "--json", "--quiet", "--n-boot", "0",
                                       cwd=tmp_path))  # fmt: skip
        # cross-validated on the test split (before: RCL-BS -2.1, "scaling is harmful"): the forest's and the
        # k-NN's Brier score goes down, the rounded (calibrated) model's stays within 1 %
        floor = 0.0 if name in ("forest", "knn") else -0.01
        assert min(evaluated[f"RCL-BS {c}"]["value"] for c in ("DP (affine)", "temperature")) > floor, name


def test_zeros_that_dominate_a_fit_are_said_on_stderr_and_in_the_model_file(tmp_path):
    x, y = make_classification(n_samples=1200, n_features=10, flip_y=0.2, random_state=1)
    x_train, x_cal, y_train, y_cal = train_test_split(x, y, test_size=0.5, random_state=0)
    probs = KNeighborsClassifier(1).fit(x_train, y_train).predict_proba(x_cal)  # all 0 / 1
    pd.DataFrame(probs, columns=["a", "b"]).assign(label=y_cal).to_csv(tmp_path / "one_nn.csv", index=False)
    done = run_calib("calibrate", "--method", "temperature", "--train", "one_nn.csv", "--apply", "one_nn.csv",
                     "--out", "o.npz", "--save-model", "o.json", "--quiet", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0 and "the fit is driven by them" in done.stderr
    fitted = json.loads((tmp_path / "o.json").read_text())["fitted"]
    assert fitted["zero_loss_share_"] >= 0.5 and fitted["zero_smoothing_"] == 1.0
    with np.load(tmp_path / "o.npz") as saved:
        p_right = np.exp(saved["scores"])[np.arange(y_cal.size), y_cal]
    # one calibrated value for right and one for wrong answers: the fit learns the 1-NN's accuracy
    accuracy = np.mean(probs.argmax(axis=1) == y_cal)
    assert np.mean(p_right[probs.argmax(axis=1) == y_cal]) == pytest.approx(accuracy, abs=1e-6)


# ---------------------------------------------------------------------------------------------- memory


def _peak_kib(tmp_path: Path, *args: str) -> int:
    """The peak resident memory (KiB) of one ``calib`` run, in a process of its own."""
    script = (
        "import resource, sys\nfrom calib.cli import main\nstatus = main(sys.argv[1:])\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\nsys.exit(status)"
    )
    done = run_calib_script(script, *args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return int(done.stderr.strip().splitlines()[-1])


def run_calib_script(script: str, *args: str, cwd: Path):
    import subprocess
    import sys

    from support import ROOT

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", script, *args], cwd=cwd, capture_output=True, text=True, env=env)


def test_the_bootstraps_memory_does_not_grow_with_the_resamples(tmp_path):
    rng = np.random.default_rng(0)
    p1 = rng.uniform(size=300)
    labels = (rng.random(300) < p1).astype(int)
    pd.DataFrame({"no": 1 - p1, "yes": p1, "label": labels}).to_csv(tmp_path / "s.csv", index=False)
    small, large = (_peak_kib(tmp_path, "evaluate", "s.csv", "--quiet", "--n-boot", b) for b in ("500", "5000"))
    # before: about 0.3 MB more per resample (1.3 GB more here); now the resamples are reduced in blocks
    assert large - small < 60_000, (small, large)


# ---------------------------------------------------------------------------------------------- advice that holds


def test_percentages_are_recognised_and_the_advice_reads_them(tmp_path):
    probs, labels, names = _iris(tmp_path)
    pd.DataFrame(100 * probs, columns=names).assign(label=np.array(names)[labels]).to_csv(
        tmp_path / "percent.csv", index=False
    )
    line = _error(run_calib("evaluate", "percent.csv", "--quiet", cwd=tmp_path))
    assert "percentages" in line and "--kind logits" not in line
    done = run_calib("evaluate", "percent.csv", *_advised(line, "--scale"), "--json", "--quiet", "--n-boot", "0",
                     cwd=tmp_path)  # fmt: skip
    _assert_numbers(done, probs, labels)


def test_percentages_of_many_classes_are_percentages_not_stray_cells(tmp_path):
    # 100 classes: every column lies mostly below 1 %, yet almost every row holds a value above 1.
    rng = np.random.default_rng(3)
    logits = 3 * rng.normal(size=(500, 100))
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    labels = (logits + rng.gumbel(size=logits.shape)).argmax(axis=1)
    assert ((100 * probs) > 1).mean(axis=0).max() < 0.5
    pd.DataFrame(100 * probs, columns=[f"c{k}" for k in range(100)]).assign(label=labels).to_csv(
        tmp_path / "percent.csv", index=False
    )
    line = _error(run_calib("evaluate", "percent.csv", "--quiet", cwd=tmp_path))
    assert "these are percentages" in line and "holds the score" not in line
    done = run_calib("evaluate", "percent.csv", *_advised(line, "--scale"), "--json", "--quiet",
                     "--n-boot", "0", "--calibrators", "none", cwd=tmp_path)  # fmt: skip
    _assert_numbers(done, probs, labels)


def test_labels_minus_one_and_plus_one_get_advice_that_works(tmp_path):
    rng = np.random.default_rng(2)
    p1 = rng.uniform(size=400)
    labels = (rng.random(400) < p1).astype(int)
    pd.DataFrame({"neg": 1 - p1, "pos": p1, "label": 2 * labels - 1}).to_csv(tmp_path / "svm.csv", index=False)
    line = _error(run_calib("evaluate", "svm.csv", "--quiet", cwd=tmp_path))
    assert "[-1, 1]" in line
    advice = re.search(r"--label-values=\S+", line)[0]  # by name: each label's column
    assert advice == "--label-values=-1=neg,1=pos", line
    done = run_calib("evaluate", "svm.csv", advice, "--json", "--quiet", "--n-boot", "0", cwd=tmp_path)
    _assert_numbers(done, np.column_stack([1 - p1, p1]), labels)
    # the positive label alone names no column, and neither do the labels: refused with the same mapping
    line = _error(run_calib("evaluate", "svm.csv", "--positive-label", "1", "--quiet", cwd=tmp_path))
    assert "--label-values=-1=neg,1=pos" in line
    done = run_calib("evaluate", "svm.csv", advice, "--positive-label", "1", "--json", "--quiet", "--n-boot", "0",
                     cwd=tmp_path)  # fmt: skip
    _assert_numbers(done, np.column_stack([1 - p1, p1]), labels)
    assert json.loads(done.stdout)["positive_class"] == "pos"


def test_a_missing_label_is_named_by_its_line(tmp_path):
    probs, labels, names = _iris(tmp_path)
    frame = pd.read_csv(tmp_path / "test.csv")
    frame.loc[7, "label"] = np.nan
    frame.to_csv(tmp_path / "gap.csv", index=False)
    line = _error(run_calib("evaluate", "gap.csv", "--quiet", cwd=tmp_path))
    assert "line 9" in line and "drop the rows without a label" in line
    frame.dropna(subset=["label"]).to_csv(tmp_path / "fixed.csv", index=False)
    keep = np.arange(labels.size) != 7
    _assert_numbers(run_calib("evaluate", "fixed.csv", "--json", "--quiet", "--n-boot", "0", cwd=tmp_path),
                    probs[keep], labels[keep])  # fmt: skip


def test_an_unlabelled_archive_gets_advice_that_works(tmp_path):
    probs, labels, _ = _iris(tmp_path)
    np.savez(tmp_path / "scores.npz", scores=probs)
    np.save(tmp_path / "labels.npy", labels)
    line = _error(run_calib("evaluate", "scores.npz", "--quiet", cwd=tmp_path))
    assert "--labels-file" in line
    done = run_calib("evaluate", "scores.npz", "--labels-file", "labels.npy", "--kind", "probs", "--json", "--quiet",
                     "--n-boot", "0", cwd=tmp_path)  # fmt: skip
    _assert_numbers(done, probs, labels)


def test_an_archive_says_its_kind_or_is_read_as_the_command_line_says(tmp_path):
    probs, labels, _ = _iris(tmp_path)
    np.savez(tmp_path / "plain.npz", scores=probs, labels=labels)  # no kind array: --kind's default, probs
    _assert_numbers(run_calib("evaluate", "plain.npz", "--json", "--quiet", "--n-boot", "0", cwd=tmp_path),
                    probs, labels)  # fmt: skip
    np.savez(tmp_path / "logits.npz", scores=np.log(probs) + 3.0, labels=labels)
    _assert_numbers(run_calib("evaluate", "logits.npz", "--kind", "logits", "--json", "--quiet", "--n-boot", "0",
                              cwd=tmp_path), probs, labels)  # fmt: skip
    np.savez(tmp_path / "said.npz", scores=np.log(probs), labels=labels, kind=np.array("logprobs"))
    _assert_numbers(run_calib("evaluate", "said.npz", "--json", "--quiet", "--n-boot", "0", cwd=tmp_path),
                    probs, labels)  # fmt: skip
    line = _error(run_calib("evaluate", "said.npz", "--kind", "probs", "--quiet", cwd=tmp_path))
    assert "holds logprobs (its kind array)" in line and "drop --kind" in line


def test_multiclass_isotonic_and_beta_name_the_methods_that_work(tmp_path):
    _iris(tmp_path)
    for method in ("isotonic", "beta", "histogram"):
        line = _error(run_calib("calibrate", "--method", method, "--train", "cal.csv", "--apply", "test.csv",
                                "--out", "x.npz", "--quiet", cwd=tmp_path))  # fmt: skip
        assert "for more classes use --method auto, temperature" in line
    assert run_calib("calibrate", "--method", "temperature", "--train", "cal.csv", "--apply", "test.csv", "--out",
                     "x.npz", "--quiet", cwd=tmp_path).returncode == 0  # fmt: skip


def test_notes_name_classes_without_numpy_reprs(tmp_path):
    probs, labels = _twelve_classes(tmp_path)
    keep = labels != 9
    pd.DataFrame(probs[keep], columns=[str(k) for k in range(12)]).assign(label=labels[keep]).to_csv(
        tmp_path / "train.csv", index=False
    )
    done = run_calib("calibrate", "--method", "dp", "--train", "train.csv", "--apply", "train.csv", "--out", "o.npz",
                     "--quiet", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0 and "no sample of class 9:" in done.stderr and "np." not in done.stderr


# ---------------------------------------------------------------------------------------------- formats


def test_compressed_tab_separated_and_arrow_exports_read_alike(tmp_path):
    probs, labels, names = _iris(tmp_path)
    frame = pd.read_csv(tmp_path / "test.csv")
    frame.to_csv(tmp_path / "s.csv.gz", index=False)
    frame.to_csv(tmp_path / "s.tsv", sep="\t", index=False)
    frame.to_csv(tmp_path / "s.tsv.bz2", sep="\t", index=False)
    frame.to_feather(tmp_path / "s.feather")
    frame.to_feather(tmp_path / "s.arrow")
    for name in ("s.csv.gz", "s.tsv", "s.tsv.bz2", "s.feather", "s.arrow"):
        _assert_numbers(run_calib("evaluate", name, "--json", "--quiet", "--n-boot", "0", cwd=tmp_path),
                        probs, labels)  # fmt: skip


def test_other_separators_and_decimal_commas_get_the_options_that_read_them(tmp_path):
    probs, labels, names = _iris(tmp_path)
    frame = pd.read_csv(tmp_path / "test.csv")
    frame.to_csv(tmp_path / "tabs.csv", sep="\t", index=False)  # a TSV named .csv
    frame.to_csv(tmp_path / "european.csv", sep=";", decimal=",", index=False)
    line = _error(run_calib("evaluate", "tabs.csv", "--quiet", cwd=tmp_path))
    assert _advised(line, "--sep") == ["--sep", "\t"]
    _assert_numbers(run_calib("evaluate", "tabs.csv", *_advised(line, "--sep"), "--json", "--quiet", "--n-boot",
                              "0", cwd=tmp_path), probs, labels)  # fmt: skip
    line = _error(run_calib("evaluate", "european.csv", "--quiet", cwd=tmp_path))
    sep = _advised(line, "--sep")
    assert sep == ["--sep", ";"]
    line = _error(run_calib("evaluate", "european.csv", *sep, "--quiet", cwd=tmp_path))
    assert "decimal comma" in line
    done = run_calib("evaluate", "european.csv", *sep, *_advised(line, "--decimal"), "--json", "--quiet",
                     "--n-boot", "0", cwd=tmp_path)  # fmt: skip
    _assert_numbers(done, probs, labels, rel=1e-12)


def test_a_named_pipe_is_read_as_a_stream(tmp_path):
    probs, labels, _ = _iris(tmp_path)
    text = (tmp_path / "test.csv").read_text()
    fifo = tmp_path / "stream.csv"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "w") as pipe:
            pipe.write(text)

    writer = threading.Thread(target=feed)
    writer.start()
    done = run_calib("evaluate", "stream.csv", "--json", "--quiet", "--n-boot", "0", cwd=tmp_path)
    writer.join(timeout=30)
    _assert_numbers(done, probs, labels)


# ---------------------------------------------------------------------------------------------- model files


def _saved_model(tmp_path: Path) -> dict:
    _iris(tmp_path)
    done = run_calib("calibrate", "--method", "temperature", "--train", "cal.csv", "--apply", "test.csv", "--out",
                     "a.npz", "--save-model", "t.json", "--quiet", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads((tmp_path / "t.json").read_text())


@pytest.mark.parametrize(("scale", "found"), [(-0.5, "found -0.5"), (1e308, "found 1e+308")])
def test_a_hand_edited_scale_outside_its_range_is_refused(tmp_path, scale, found):
    model = _saved_model(tmp_path)
    model["fitted"]["scale_"] = scale
    (tmp_path / "edited.json").write_text(json.dumps(model))
    done = run_calib("calibrate", "--model", "edited.json", "--apply", "test.csv", "--out", "b.npz", cwd=tmp_path)
    line = _error(done)
    assert "fitted.scale_ must lie in [1e-06, 1000000.0]" in line and found in line
    assert not (tmp_path / "b.npz").exists()


def test_a_huge_model_file_is_refused_before_it_is_parsed(tmp_path):
    _saved_model(tmp_path)
    with open(tmp_path / "huge.json", "wb") as handle:  # 70 MB of one JSON list, written sparse
        handle.write(b"[" + b"0," * 10)
        handle.seek(70 * 2**20)
        handle.write(b"0]")
    done = run_calib("calibrate", "--model", "huge.json", "--apply", "test.csv", "--out", "b.npz", cwd=tmp_path)
    assert "larger than 64 MiB" in _error(done)


def test_a_model_from_a_newer_release_is_read_with_a_note(tmp_path):
    model = _saved_model(tmp_path)
    model["calib_version"] = "99.0"
    (tmp_path / "newer.json").write_text(json.dumps(model))
    done = run_calib("calibrate", "--model", "newer.json", "--apply", "test.csv", "--out", "b.npz", cwd=tmp_path)
    assert done.returncode == 0 and "written by calib 99.0, newer than this calib" in done.stderr


def test_an_output_that_is_an_input_is_refused_and_the_input_kept(tmp_path):
    _saved_model(tmp_path)
    before = (tmp_path / "a.npz").read_bytes()
    done = run_calib("calibrate", "--model", "t.json", "--apply", "a.npz", "--out", "a.npz", cwd=tmp_path)
    assert "--out a.npz is also --apply a.npz" in _error(done, status=2)
    assert (tmp_path / "a.npz").read_bytes() == before
    before = (tmp_path / "t.json").read_bytes()
    done = run_calib("calibrate", "--method", "dp", "--train", "cal.csv", "--apply", "test.csv", "--out", "c.npz",
                     "--save-model", "cal.csv", cwd=tmp_path)  # fmt: skip
    assert _error(done, status=2) and (tmp_path / "t.json").read_bytes() == before
    done = run_calib("evaluate", "report/metrics.csv", "--out", "report", cwd=tmp_path)
    assert done.returncode in (1, 2)


# ---------------------------------------------------------------------------------------------- compare by id


def test_compare_pairs_rows_by_id_and_refuses_rows_in_another_order(tmp_path):
    probs, labels, names = _iris(tmp_path)
    frame = pd.read_csv(tmp_path / "test.csv")
    frame.index = [f"s{i}" for i in range(labels.size)]
    frame.to_csv(tmp_path / "a.csv")  # the ids as pandas' index
    rng = np.random.default_rng(0)
    order = np.arange(labels.size)
    for label in np.unique(labels):  # rows shuffled within each label: the label sequences still agree
        where = np.flatnonzero(labels == label)
        order[where] = rng.permutation(where)
    frame.iloc[order].to_csv(tmp_path / "b.csv")
    done = run_calib("compare", "a.csv", "b.csv", "--n-boot", "50", "--quiet", cwd=tmp_path)
    line = _error(done)
    assert "--id-column" in line
    done = run_calib("compare", "a.csv", "b.csv", "--id-column", "Unnamed: 0", "--names", "A", "B", "--n-boot",
                     "50", "--quiet", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if "B - A: NCE" in x)
    diff, low, high = (float(v) for v in re.findall(r"[+-]\d+\.\d+", line))
    assert diff == low == high == 0.0  # the same system, paired sample by sample
    frame.iloc[:-1].to_csv(tmp_path / "short.csv")
    done = run_calib("compare", "a.csv", "short.csv", "--id-column", "Unnamed: 0", "--quiet", cwd=tmp_path)
    assert "do not hold the same ids" in _error(done)


# ---------------------------------------------------------------------------------------------- intervals, figures


def test_every_interval_holds_its_estimate_or_says_why(tmp_path):
    rng = np.random.default_rng(5)
    p1 = rng.uniform(0.05, 0.95, size=600)
    labels = (rng.random(600) < p1).astype(int)  # calibrated: the ECEs are small and biased upward
    pd.DataFrame({"no": 1 - p1, "yes": p1, "label": labels}).to_csv(tmp_path / "s.csv", index=False)
    document = _json(run_calib("evaluate", "s.csv", "--json", "--quiet", "--n-boot", "400", cwd=tmp_path))
    assert document["interval"].startswith("95 % from 400 Poisson resamples")
    methods = {m["metric"]: m["interval"] for m in document["metrics"]}
    basic = {name for name, method in methods.items() if method == "basic"}
    assert basic == {"accuracy", "NCE", "NBS", "NRisk 0-1", "ECD"}
    errors = [m for m in document["metrics"] if m["interval"] == "upper bound"]
    assert {m["metric"] for m in errors} >= {"ECE positive class", "smooth ECE", "squared MMCE (unbiased)"}
    assert all(m["low"] == 0.0 and m["high"] > 0 and m["estimand"] for m in errors)
    with_interval = [m for m in document["metrics"] if m["interval"]]  # the calibrators' RCLs have none
    assert all(m["low"] == "nan" for m in document["metrics"] if not m["interval"])
    outside = [m["metric"] for m in with_interval if not m["low"] <= m["value"] <= m["high"]]
    # only unbiased estimates of errors that are 0 here fall outside, below 0, and one note names them
    below = [n for n in document["interval_notes"] if "below 0" in n]
    assert all(name.endswith(("(debiased)", "(unbiased)")) and name in below[0] for name in outside)
    text = run_calib("evaluate", "s.csv", "--quiet", "--n-boot", "400", cwd=tmp_path).stdout
    assert "<= " in text and "(upper bound)" in text


def test_the_basic_interval_is_scipys_on_the_same_resamples():
    rng = np.random.default_rng(1)
    for draws, estimate in ((rng.gamma(2, size=999), 1.3), (rng.normal(size=400), -0.2)):
        expected = bootstrap(
            (np.array([estimate, estimate]),),
            np.mean,
            n_resamples=0,
            bootstrap_result=SimpleNamespace(bootstrap_distribution=draws),
            method="basic",
        ).confidence_interval
        linear = basic_interval(draws, estimate, 0.05, positions="linear")  # scipy reads numpy's percentiles
        assert linear == pytest.approx((expected.low, expected.high), rel=1e-12)


def test_the_basic_interval_reads_davison_and_hinkleys_order_statistics():
    # with B = 199 resamples, the 2.5 and 97.5 percentiles are the (B + 1) p = 5th and 195th ordered values
    draws = np.random.default_rng(2).normal(size=199)
    ordered = np.sort(draws)
    assert basic_interval(draws, 0.3, 0.05) == pytest.approx((0.6 - ordered[194], 0.6 - ordered[4]), rel=1e-15)


def test_the_figures_print_the_summarys_numbers_and_nothing_covers_the_corp_curve(tmp_path, monkeypatch):
    from calib.cli_report import corp_figure
    from calib.evaluation.engine import evaluate

    probs, labels, names = _iris(tmp_path)
    done = run_calib("evaluate", "test.csv", "--json", "--quiet", "--n-boot", "0", "--out", "report", cwd=tmp_path)
    document = _json(done)
    metrics = {m["metric"]: m["value"] for m in document["metrics"]}
    assert [p["metric"] for p in document["reliability"]] == ["ECE top-label", "ECE class-wise"]
    text = run_calib("evaluate", "test.csv", "--quiet", "--n-boot", "0", cwd=tmp_path).stdout
    for panel in document["reliability"]:
        assert re.search(rf"{panel['metric']} +{metrics[panel['metric']]:9.4f}", text)
    assert sum(panel["bins"][0]["counts"]) == labels.size
    # the CORP figure: the diagram holds the curve, the band and the diagonal only
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    summary = evaluate(probs, labels, kind="probs", n_boot=0)
    confidence, outcome = probs.max(axis=1), probs.argmax(axis=1) == labels
    opened = []
    monkeypatch.setattr(pyplot, "close", opened.append)  # keep the figure to look at it
    corp_figure(tmp_path / "corp", confidence, outcome, summary.corp, axis="confidence", seed=0)
    ax = opened[0].axes[0]
    assert len(ax.child_axes) == len(ax.texts) == 0 and ax.get_legend() is None
