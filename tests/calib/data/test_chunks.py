"""calib.data.chunks: a Parquet table read in chunks is the set load_table reads whole (classes, labels,
scores, groups), and a bad row is named by its row in the table."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import calib.data.chunks
from calib.data.chunks import parquet_chunks
from calib.data.real import load_table
from calib.validation import CalibInputError, CalibInputWarning, check_inputs


def _tables(rng):
    n = 3000
    q = rng.dirichlet([0.8, 0.8, 0.8], n)
    y = np.array([rng.choice(3, p=r) for r in q])
    p = rng.uniform(0.01, 0.99, n)
    yb = (rng.random(n) < p).astype(int)
    site = rng.choice(["north", "south"], n)
    return {
        # text labels naming columns given out of order
        "names": (
            pd.DataFrame(
                {
                    "dog": q[:, 1],
                    "cat": q[:, 0],
                    "eel": q[:, 2],
                    "label": np.array(["cat", "dog", "eel"])[y],
                    "site": site,
                }
            ),
            {"group_column": "site"},
        ),  # fmt: skip
        # numbered columns in lexicographic order, labels the numbers they carry
        "numbered": (
            pd.DataFrame({"c10": q[:, 0], "c2": q[:, 1], "c1": q[:, 2], "label": np.array([10, 2, 1])[y]}),
            {},
        ),
        # indices onto named columns (a positional note), an id column left out
        "indices": (
            pd.DataFrame({"id": np.arange(n), "a": q[:, 0], "b": q[:, 1], "c": q[:, 2], "label": y}),
            {"id_column": "id"},
        ),  # fmt: skip
        # one column: the positive class's logit, labels yes/no
        "one column": (
            pd.DataFrame({"logit": np.log(p / (1 - p)), "label": np.where(yb == 1, "yes", "no")}),
            {"positive_label": "yes", "kind": "logits"},
        ),  # fmt: skip
        # rounded probabilities renormalized, the pandas index stored
        "rounded": (
            pd.DataFrame(
                {"x": q[:, 0].round(3), "y": q[:, 1].round(3), "z": q[:, 2].round(3), "label": y},
                index=np.arange(n) * 7,
            ),
            {"renormalize": True},
        ),  # fmt: skip
    }


@pytest.mark.parametrize("case", ["names", "numbered", "indices", "one column", "rounded"])
def test_chunks_put_together_are_the_set_load_table_reads(case, tmp_path, monkeypatch):
    monkeypatch.setattr(calib.data.chunks, "CHUNK_ROWS", 700)  # several chunks
    frame, options = _tables(np.random.default_rng(3))[case]
    path = tmp_path / "t.parquet"
    frame.to_parquet(path)
    options = {"kind": "probs", **options}
    with warnings.catch_warnings(record=True) as whole_notes:
        warnings.simplefilter("always", CalibInputWarning)
        whole = load_table(path, **options)
    with warnings.catch_warnings(record=True) as chunk_notes:
        warnings.simplefilter("always", CalibInputWarning)
        table = parquet_chunks(path, **options)
        parts = list(table.chunks())
    assert [str(w.message) for w in chunk_notes] == [str(w.message) for w in whole_notes]
    assert table.class_names == whole.class_names and table.n_samples == whole.n_samples
    assert len(parts) == -(-whole.n_samples // 700)
    np.testing.assert_array_equal(np.concatenate([p[1] for p in parts]), whole.labels)
    expected, _ = check_inputs(whole.scores, whole.labels, whole.kind)
    np.testing.assert_array_equal(np.concatenate([p[0] for p in parts]), expected)
    if whole.groups is not None:
        np.testing.assert_array_equal(np.concatenate([p[2] for p in parts]), whole.groups)


def test_a_missing_label_and_a_bad_row_are_named_by_their_row_in_the_table(tmp_path, monkeypatch):
    monkeypatch.setattr(calib.data.chunks, "CHUNK_ROWS", 100)
    rng = np.random.default_rng(0)
    p = rng.uniform(0.1, 0.9, 1000)
    frame = pd.DataFrame({"a": 1 - p, "b": p, "label": rng.integers(0, 2, 1000).astype(float)})
    frame.loc[734, "label"] = np.nan
    frame.to_parquet(tmp_path / "missing.parquet")
    with pytest.raises(CalibInputError, match="first at row 734"):
        parquet_chunks(tmp_path / "missing.parquet", kind="probs", label_values="index")
    frame.loc[734, "label"] = 1.0
    frame.loc[512, "a"] = 0.7  # a row summing to 1.6 in the sixth chunk
    frame.to_parquet(tmp_path / "bad.parquet")
    table = parquet_chunks(tmp_path / "bad.parquet", kind="probs", label_values="index")
    with pytest.raises(CalibInputError, match=r"rows 500 to 599 \(rows named below count from 500\).*row 12"):
        list(table.chunks())


def test_the_command_reads_a_large_parquet_file_in_chunks_with_the_same_sums(tmp_path):
    import json
    import subprocess
    import sys

    frame, _ = _tables(np.random.default_rng(5))["names"]
    frame.to_parquet(tmp_path / "t.parquet")
    base = [sys.executable, "-m", "calib.cli", "evaluate", "t.parquet", "--json", "--quiet", "--bootstrap", "20",
            "--calibrators", "temperature", "--groups", "site"]  # fmt: skip
    runs = [
        subprocess.run(base + extra, cwd=tmp_path, capture_output=True, text=True)
        for extra in ([], ["--sample-limit", "500"])
    ]
    whole, chunked = (json.loads(r.stdout) for r in runs)
    assert chunked["notes"] == ["smooth ECE and CORP: on a seeded random 500 of the 3000 samples"]
    for a, b in zip(whole["metrics"], chunked["metrics"], strict=True):
        if a["metric"] != "smooth ECE":
            assert a == b
    assert whole["groups"]["rows"][0]["metrics"] == chunked["groups"]["rows"][0]["metrics"]
