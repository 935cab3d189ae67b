"""A new user's second trial of what labels and columns mean (issue 51), each case on files written as
scikit-learn, pandas, R and spreadsheets write them, checked against an independent computation: a
wrong answer with exit 0 became a right answer or one refusal whose advice, followed, gives the right
numbers."""

from __future__ import annotations

import contextlib
import io
import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest

from calib import evaluate
from calib.cli import main
from calib.validation import CalibInputError, CalibInputWarning


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(a) for a in args])
    return status, out.getvalue(), err.getvalue()


def _metrics(*args) -> dict:
    status, out, err = _cli("evaluate", *args, "--json", "--quiet", "--n-boot", "0", "--calibrators", "none")
    assert status == 0, err
    return json.loads(out)


def _truth(probs: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """Accuracy and NCE (log loss over the entropy of the label frequencies), by hand."""
    freq = np.bincount(labels, minlength=probs.shape[1]) / labels.size
    entropy = -np.sum(freq[freq > 0] * np.log(freq[freq > 0]))
    log_loss = -np.mean(np.log(probs[np.arange(labels.size), labels]))
    return float(np.mean(probs.argmax(1) == labels)), float(log_loss / entropy)


def _check(document: dict, probs, labels) -> None:
    got = {m["metric"]: m["value"] for m in document["metrics"]}
    accuracy, nce = _truth(probs, labels)
    assert got["accuracy"] == pytest.approx(accuracy, abs=1e-12) and got["NCE"] == pytest.approx(nce, rel=1e-9)


def _binary(n=300, seed=0):
    rng = np.random.default_rng(seed)
    p1 = rng.uniform(0.02, 0.98, n)
    labels = (rng.random(n) < p1 ** 0.7).astype(int)
    return np.column_stack([1 - p1, p1]), labels


def _logits(n=300, k=4, seed=1):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2
    labels = (z + rng.gumbel(size=z.shape)).argmax(1)
    probs = np.exp(z - z.max(1, keepdims=True))
    return z, probs / probs.sum(1, keepdims=True), labels


def test_a_fold_or_a_named_index_beside_logits_is_never_a_class(tmp_path):
    z, probs, labels = _logits()
    names = ["cat", "dog", "emu", "fox"]
    frame = pd.DataFrame(z, columns=names).assign(fold=np.arange(labels.size) % 5, label=labels)
    frame.to_csv(tmp_path / "fold.csv", index=False)
    status, _, err = _cli("evaluate", tmp_path / "fold.csv", "--kind", "logits", "--quiet")
    assert status == 1 and "['fold'] hold whole numbers only" in err
    advice = re.search(r"--class-columns ([\w ]+);", err)[1].split()
    assert advice == names
    _check(_metrics(tmp_path / "fold.csv", "--kind", "logits", "--class-columns", *advice), probs, labels)
    indexed = pd.DataFrame(z[:, :2], columns=["neg", "pos"]).assign(label=(labels % 2))
    indexed.index.name = "id"  # to_csv writes a named index as a column like any other
    indexed.to_csv(tmp_path / "indexed.csv")
    status, _, err = _cli("evaluate", tmp_path / "indexed.csv", "--kind", "logits", "--quiet")
    assert status == 1 and "--class-columns neg pos" in err and "--id-column" in err
    two = np.exp(z[:, :2] - np.logaddexp(z[:, 0], z[:, 1])[:, None])
    _check(_metrics(tmp_path / "indexed.csv", "--kind", "logits", "--id-column", "id"), two, labels % 2)


def test_a_positive_label_that_names_nothing_is_refused(tmp_path):
    probs, labels = _binary()
    pd.DataFrame({"yes": probs[:, 1], "no": probs[:, 0], "label": np.array(["no", "yes"])[labels]}).to_csv(
        tmp_path / "s.csv", index=False
    )
    for flag in ("Yes", "banana", "7"):
        status, _, err = _cli("evaluate", tmp_path / "s.csv", "--positive-label", flag, "--quiet")
        assert status == 1 and "names no class column (yes, no)" in err, err
    document = _metrics(tmp_path / "s.csv", "--positive-label", "no")
    assert document["positive_class"] == "no"
    _check(document, probs[:, ::-1], 1 - labels)


def test_compare_paired_by_id_refuses_files_whose_labels_differ(tmp_path):
    probs, labels = _binary()
    frame = pd.DataFrame({"id": np.arange(labels.size), "neg": probs[:, 0], "pos": probs[:, 1], "label": labels})
    frame.to_csv(tmp_path / "a.csv", index=False)
    other = frame.sample(frac=1, random_state=0).assign(label=lambda f: np.roll(f.label.to_numpy(), 1))
    other.to_csv(tmp_path / "b.csv", index=False)
    status, _, err = _cli("compare", tmp_path / "a.csv", tmp_path / "b.csv", "--id-column", "id", "--quiet")
    assert status == 1 and "paired by id differ" in err
    frame.sample(frac=1, random_state=0).to_csv(tmp_path / "c.csv", index=False)  # the same rows, shuffled
    status, out, err = _cli("compare", tmp_path / "a.csv", tmp_path / "c.csv", "--id-column", "id", "--n-boot", "0",
                            "--quiet")  # fmt: skip
    assert status == 0, err


def test_scikit_learns_classes_as_column_names(tmp_path):
    probs, labels = _binary()
    signs = np.array([-1, 1])[labels]  # classes_ == [-1, 1]
    pd.DataFrame(probs, columns=["-1", "1"]).assign(y=signs).to_csv(tmp_path / "signs.csv", index=False)
    document = _metrics(tmp_path / "signs.csv", "--labels", "y")
    assert document["classes"] == ["-1", "1"] and document["positive_class"] == "1"
    _check(document, probs, labels)
    booleans = pd.DataFrame(probs, columns=[False, True])  # classes_ == [False, True] in Python
    summary = evaluate(booleans, labels.astype(bool), kind="probs", n_boot=0, calibrators=())
    assert summary.class_names == ("False", "True") and summary.positive_class == "True"
    assert summary.metrics["accuracy"].value == pytest.approx(_truth(probs, labels)[0], abs=1e-12)
    pd.DataFrame(probs, columns=["False", "True"]).assign(label=labels).to_csv(tmp_path / "tf.csv", index=False)
    _check(_metrics(tmp_path / "tf.csv"), probs, labels)  # 0 / 1 against false / true: by meaning, either order
    reversed_columns = pd.DataFrame(probs[:, ::-1], columns=["True", "False"]).assign(label=labels)
    reversed_columns.to_csv(tmp_path / "ft.csv", index=False)
    _check(_metrics(tmp_path / "ft.csv"), probs, labels)


def test_spaces_after_commas_and_quoted_decimal_commas(tmp_path):
    probs, labels = _binary()
    names = np.array(["no", "yes"])
    rows = zip(probs.tolist(), names[labels], strict=True)
    lines = ["no, yes, label"] + [f"{a!r}, {b!r}, {name}" for (a, b), name in rows]
    (tmp_path / "spaced.csv").write_text("\n".join(lines) + "\n")
    document = _metrics(tmp_path / "spaced.csv")
    assert document["positive_class"] == "yes"
    _check(document, probs, labels)
    frame = pd.DataFrame({"no": probs[:, 0].round(6), "yes": probs[:, 1].round(6), "label": labels})
    text = frame.to_csv(index=False, decimal=",", quoting=1)  # "0,65" in quotes, commas between cells
    (tmp_path / "quoted.csv").write_text(text)
    status, _, err = _cli("evaluate", tmp_path / "quoted.csv", "--quiet")
    assert status == 1 and "--decimal ," in err
    _check(_metrics(tmp_path / "quoted.csv", "--decimal", ","), frame[["no", "yes"]].to_numpy(), labels)


def test_a_labels_file_that_is_not_npy_is_named_as_such(tmp_path):
    probs, labels = _binary()
    np.save(tmp_path / "scores.npy", probs)
    np.savetxt(tmp_path / "labels.txt", labels, fmt="%d")
    status, _, err = _cli("evaluate", tmp_path / "scores.npy", "--labels-file", tmp_path / "labels.txt", "--quiet")
    assert status == 1 and "is not a .npy file" in err and "Python objects" not in err
    np.save(tmp_path / "labels.npy", np.loadtxt(tmp_path / "labels.txt").astype(int))  # the advised numpy.save
    _check(_metrics(tmp_path / "scores.npy", "--labels-file", tmp_path / "labels.npy"), probs, labels)


def test_python_gets_the_notes_the_positive_class_and_table_options_that_work():
    z, probs, labels = _logits(k=3)
    frame = pd.DataFrame(probs, columns=["emu", "cat", "dog"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibInputWarning)
        positional = evaluate(frame, labels, kind="probs", n_boot=0, calibrators=())
    assert "0: emu, 1: cat, 2: dog" in positional.notes[0]
    mapped = evaluate(frame, np.array(["emu", "cat", "dog"])[labels], kind="probs", n_boot=0, calibrators=())
    assert mapped.metrics["NCE"].value == pytest.approx(positional.metrics["NCE"].value, rel=1e-12)
    with pytest.raises(CalibInputError, match=r"\['fold'\] hold whole numbers only"):  # positions miss a column
        evaluate(frame.assign(fold=1), labels, kind="probs")
    advised = evaluate(frame.assign(fold=1), labels, kind="probs", class_columns=["emu", "cat", "dog"], n_boot=0,
                       calibrators=())  # fmt: skip
    assert advised.metrics["NCE"].value == pytest.approx(positional.metrics["NCE"].value, rel=1e-12)
    with pytest.raises(CalibInputError, match="positive_label: for the columns of a table"):
        evaluate(probs[:, :2] / probs[:, :2].sum(1, keepdims=True), labels % 2, kind="probs", positive_label="1")
