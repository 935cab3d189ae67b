"""The answer does not depend on how the same data are written (issue: one decision of identity).

One data set (vote-fraction scores, so that ties between classes are common, as a random forest's are)
is written in many ways: its class columns in any order, named by numbers (0- or 1-based), by words,
or ``true`` / ``false``; its labels as integers, floats, text, categories or booleans; the positive
class of two given by name, by number, or not at all; as CSV, Parquet, Feather, a pandas DataFrame
or an Arrow table; read whole (the command, and ``load_posteriors`` as a workflow's own set is
read), in chunks, or by partitions as on a Dask cluster. Every way must give the metrics
of the canonical set (the classes in the order of their names, :func:`calib.data.classes.
canonical_order`) within 1e-12 (relative), or be refused with one line. The tolerance is for rounding
only: the command validates and takes logarithms in other steps than the in-memory reference (seen:
1.1e-16 in NCE); a class read in another order or position changes a metric by far more. ``calibrate``
must give the same calibrated probability to each named class, and ``compare`` of two layouts must find
them equal.
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import PROPERTY

from calib import evaluate
from calib.cli import main
from calib.data.chunks import table_chunks
from calib.data.real import load_posteriors
from calib.data.table_options import TableOptions
from calib.evaluation.engine import evaluate_chunks
from calib.evaluation.partitioned import evaluate_partitioned, in_process

QUICK = {"n_boot": 0, "calibrators": ()}
NAMES = ("cat", "dog", "emu", "fox")


@st.composite
def data_sets(draw):
    """(votes (N, K) summing to 1 per row, labels in [0, K)), each class labelled at least once."""
    k = draw(st.integers(2, 4))
    n = draw(st.integers(4 * k, 60))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    labels = np.concatenate([np.arange(k), rng.integers(0, k, n - k)])
    centres = np.eye(k)[labels] * 2 + 1
    votes = np.array([rng.multinomial(10, c / c.sum()) for c in centres]) / 10  # ties are common
    return votes, labels


@st.composite
def layouts(draw, k: int):
    """How a user wrote the set: class names, label encoding, column order, positive class."""
    schemes = ["numbers", "one-based", "words"] + (["booleans"] if k == 2 else [])
    scheme = draw(st.sampled_from(schemes))
    encodings = {
        "numbers": ["int", "float", "text", "category"],
        "one-based": ["int", "text"],
        "words": ["text", "category"],
        "booleans": ["bool", "text", "upper"],
    }[scheme]
    encoding = draw(st.sampled_from(encodings))
    order = draw(st.permutations(range(k)))
    label_at = draw(st.integers(0, k))
    positive = draw(st.sampled_from([None, "name", "number"])) if k == 2 else None
    if positive == "number" and scheme in ("words", "booleans"):
        positive = "name"
    positive_class = draw(st.integers(0, 1)) if positive else 1
    return scheme, encoding, list(order), label_at, positive, positive_class


def _names(scheme: str, k: int) -> list[str]:
    return {
        "numbers": [f"p{j}" for j in range(k)],
        "one-based": [f"prob_{j + 1}" for j in range(k)],
        "words": list(NAMES[:k]),
        "booleans": ["false", "true"],
    }[scheme]


def written(votes, labels, layout) -> tuple[pd.DataFrame, str | None]:
    """The set as a user's table (score columns in the drawn order, the label column among them) and the
    --positive-label to give."""
    scheme, encoding, order, label_at, positive, positive_class = layout
    k = votes.shape[1]
    names = _names(scheme, k)
    encode = {
        ("numbers", "int"): lambda: labels,
        ("numbers", "float"): lambda: labels.astype(float),
        ("numbers", "text"): lambda: labels.astype(str).astype(object),
        ("numbers", "category"): lambda: pd.Categorical(labels),
        ("one-based", "int"): lambda: labels + 1,
        ("one-based", "text"): lambda: (labels + 1).astype(str).astype(object),
        ("words", "text"): lambda: np.array(names, dtype=object)[labels],
        ("words", "category"): lambda: pd.Categorical(np.array(names, dtype=object)[labels]),
        ("booleans", "bool"): lambda: labels.astype(bool),
        ("booleans", "text"): lambda: np.array(["false", "true"], dtype=object)[labels],
        ("booleans", "upper"): lambda: np.array(["FALSE", "TRUE"], dtype=object)[labels],
    }
    values = encode[scheme, encoding]()
    columns = {names[j]: votes[:, j] for j in order}
    items = list(columns.items())
    items.insert(label_at, ("label", values))
    frame = pd.DataFrame(dict(items))
    flag = None
    if positive == "name":
        flag = names[positive_class]
    elif positive == "number":
        flag = str(positive_class + (1 if scheme == "one-based" else 0))
    return frame, flag


def reference(votes, labels, layout) -> dict:
    """The metrics of the canonical set: classes in the order of their names, the positive one second."""
    k = votes.shape[1]
    positive, positive_class = layout[4], layout[5]
    order = list(range(k))
    if k == 2 and positive:
        order = [1 - positive_class, positive_class]
    inverse = np.argsort(order)
    return _metrics(evaluate(votes[:, order], inverse[labels], kind="probs", **QUICK))


def _metrics(summary) -> dict:
    return {name: m.value for name, m in summary.metrics.items()}


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(args))
    return status, out.getvalue(), err.getvalue()


def _cli_metrics(path: Path, flag: str | None) -> dict:
    extra = ["--positive-label", flag] if flag else []
    status, out, err = _cli("evaluate", str(path), "--json", "--quiet", "--n-boot", "0", "--calibrators", "none",
                            *extra)  # fmt: skip
    assert status == 0, err
    return {m["metric"]: float(m["value"]) for m in json.loads(out)["metrics"]}  # strict JSON writes inf as "inf"


def _same(found: dict, expected: dict, where: str) -> None:
    assert found.keys() == expected.keys(), where
    for name, value in expected.items():  # inf where a true class had probability 0: equal too; 1e-12: docstring
        assert found[name] == value or found[name] == pytest.approx(value, rel=1e-12, abs=1e-15), (where, name)


@PROPERTY
@given(data=st.data(), data_set=data_sets())
def test_every_way_of_writing_a_set_gives_its_metrics(data, data_set):
    votes, labels = data_set
    layout = data.draw(layouts(votes.shape[1]))
    expected = reference(votes, labels, layout)
    frame, flag = written(votes, labels, layout)
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        files = {"csv": folder / "s.csv", "parquet": folder / "s.parquet", "feather": folder / "s.feather"}
        frame.to_csv(files["csv"], index=False)
        frame.to_parquet(files["parquet"], index=False)
        frame.reset_index(drop=True).to_feather(files["feather"])
        for fmt, path in files.items():
            _same(_cli_metrics(path, flag), expected, f"{fmt} {layout}")
        for fmt in ("csv", "parquet"):  # read in chunks, as a large file or a Parquet data set is
            table = table_chunks(files[fmt], TableOptions(kind="probs", format=fmt, positive_label=flag))
            chunked = evaluate_chunks(table.chunks, n_classes=table.n_classes, kind="logprobs", **QUICK)
            _same(_metrics(chunked), expected, f"{fmt} in chunks {layout}")
        # by partitions, as on a Dask cluster (here in this process), and as a workflow's own set is loaded
        table = table_chunks(files["parquet"], TableOptions(kind="probs", format="parquet", positive_label=flag),
                             map_reduce=in_process)  # fmt: skip
        _same(_metrics(evaluate_partitioned(table, **QUICK)), expected, f"partitions {layout}")
        own = load_posteriors(files["feather"], kind="probs", positive_label=flag)
        _same(_metrics(evaluate(own.logprobs(), own.labels, kind="logprobs", **QUICK)), expected, f"own {layout}")
    if flag is None:  # the Python API (which takes no positive label: the default is the later name)
        scores = frame.drop(columns="label")
        _same(_metrics(evaluate(scores, frame["label"], kind="probs", **QUICK)), expected, f"DataFrame {layout}")
        arrow = pa.Table.from_pandas(scores, preserve_index=False)
        _same(_metrics(evaluate(arrow, frame["label"], kind="probs", **QUICK)), expected, f"Arrow {layout}")


@settings(PROPERTY, max_examples=10)
@given(data=st.data(), data_set=data_sets())
def test_calibrate_gives_each_named_class_the_same_probability_in_any_layout(data, data_set):
    votes, labels = data_set
    k = votes.shape[1]
    first, second = (data.draw(layouts(k)) for _ in range(2))
    second = (first[0], second[1] if second[1] in _encodings_of(first[0]) else first[1], *second[2:])
    outputs = []
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        for i, layout in enumerate((first, second)):
            frame, _ = written(votes, labels, layout)
            frame.to_csv(folder / f"in{i}.csv", index=False)
            status, _, err = _cli("calibrate", "--method", "temperature", "--train", str(folder / f"in{i}.csv"),
                                  "--apply", str(folder / f"in{i}.csv"), "--out", str(folder / f"out{i}.csv"),
                                  "--quiet")  # fmt: skip
            assert status == 0, err
            outputs.append(pd.read_csv(folder / f"out{i}.csv"))
        names = _names(first[0], k)
        for name in names:
            # rounding only: each output passes through a CSV of 17 significant digits
            np.testing.assert_allclose(outputs[0][name], outputs[1][name], rtol=1e-12, atol=1e-15)
        status, out, err = _cli("compare", str(folder / "in0.csv"), str(folder / "in1.csv"), "--n-boot", "0",
                                "--quiet")  # fmt: skip
        assert status == 0, err  # the two layouts pair up: the same classes and the same label in every row


def _encodings_of(scheme: str) -> tuple[str, ...]:
    return {"numbers": ("int", "float", "text", "category"), "one-based": ("int", "text"),
            "words": ("text", "category"), "booleans": ("bool", "text", "upper")}[scheme]  # fmt: skip
