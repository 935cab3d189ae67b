"""calib.data.chunks: a table (Parquet file or folder, CSV) or an .npy pair read in chunks is the set the
whole-file loaders read (classes, labels, scores, groups), a bad row is named by its row in the file,
and the command evaluates a file read in chunks as it evaluates it whole."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

import calib.data.chunks
from calib.data.chunks import npy_chunks, table_chunks
from calib.data.real import load_npy_pair, load_table
from calib.data.table_options import TableOptions
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


def _written(frame, layout: str, folder):
    """``frame`` as the file (or folder) of ``layout``, and the format to read it as."""
    if layout == "parquet":
        frame.to_parquet(folder / "t.parquet")
        return folder / "t.parquet", "parquet"
    if layout == "folder":  # three files, named so that their order is the rows' order
        (folder / "parts").mkdir()
        for i, rows in enumerate(np.array_split(np.arange(len(frame)), 3)):
            frame.iloc[rows].to_parquet(folder / "parts" / f"part-{i:03d}.parquet")
        return folder / "parts", "parquet"
    frame.to_csv(folder / "t.csv", index=frame.index.name is None and frame.index[1] != 1)
    return folder / "t.csv", "csv"


@pytest.mark.parametrize("layout", ["parquet", "folder", "csv"])
@pytest.mark.parametrize("case", ["names", "numbered", "indices", "one column", "rounded"])
def test_chunks_put_together_are_the_set_the_whole_file_loader_reads(case, layout, tmp_path, monkeypatch):
    monkeypatch.setattr(calib.data.chunks, "CHUNK_ROWS", 700)  # several chunks
    frame, options = _tables(np.random.default_rng(3))[case]
    path, fmt = _written(frame, layout, tmp_path)
    options = TableOptions(**{"kind": "probs", **options})
    whole_path = path
    if layout == "folder":  # the reference: the same table as one file
        frame.to_parquet(tmp_path / "whole.parquet")
        whole_path = tmp_path / "whole.parquet"
    with warnings.catch_warnings(record=True) as whole_notes:
        warnings.simplefilter("always", CalibInputWarning)
        whole = load_table(whole_path, options)
    with warnings.catch_warnings(record=True) as chunk_notes:
        warnings.simplefilter("always", CalibInputWarning)
        table = table_chunks(path, replace(options, format=fmt))
        parts = list(table.chunks())
    said = [str(w.message).replace(str(whole_path), str(path)) for w in whole_notes]
    assert [str(w.message) for w in chunk_notes] == said
    assert table.class_names == whole.class_names and table.n_samples in (whole.n_samples, None)
    assert len(parts) >= -(-whole.n_samples // 700)
    np.testing.assert_array_equal(np.concatenate([p[1] for p in parts]), whole.labels)
    expected, _ = check_inputs(whole.scores, whole.labels, whole.kind)
    np.testing.assert_array_equal(np.concatenate([p[0] for p in parts]), expected)
    if whole.groups is not None:
        np.testing.assert_array_equal(np.concatenate([p[2] for p in parts]), whole.groups)


# Files a user exports, each with the TableOptions that read it: both faces of the reader must agree.
def _exports(rng, n=1_500):
    p = rng.dirichlet(np.ones(3), size=n)
    y = np.array([rng.choice(3, p=row) for row in p])
    percent = np.round(p * 100, 1)
    return {
        "semicolon, decimal comma, percentages, 1-based": (
            pd.DataFrame({"p_1": percent[:, 0], "p_2": percent[:, 1], "p_3": percent[:, 2], "klasse": y + 1}),
            {"sep": ";", "decimal": ","},
            TableOptions(
                kind="probs",
                label_column="klasse",
                label_values="1-based",
                scale="percent",
                sep=";",
                decimal=",",
                renormalize=True,
                format="csv",
            ),
        ),
        "ids, groups, a label mapping": (
            pd.DataFrame(
                {
                    "id": [f"r{i}" for i in range(n)],
                    "a": p[:, 0],
                    "b": p[:, 1],
                    "c": p[:, 2],
                    "site": np.where(y == 0, "north", "south"),
                    "y": np.array(["x", "y", "z"])[y],
                }
            ),
            {},
            TableOptions(
                kind="probs",
                label_column="y",
                label_values={"x": "a", "y": "b", "z": "c"},
                id_column="id",
                group_column="site",
                format="csv",
            ),
        ),
        "one logit column, a positive label": (
            pd.DataFrame({"logit": np.log(p[:, 1] / p[:, 0]), "outcome": np.where(y == 1, "yes", "no")}),
            {"sep": "\t"},
            TableOptions(kind="logits", label_column="outcome", positive_label="yes", format="tsv"),
        ),
    }


@pytest.mark.parametrize("case", ["semicolon, decimal comma, percentages, 1-based", "ids, groups, a label mapping",
                                  "one logit column, a positive label"])  # fmt: skip
def test_the_whole_and_chunked_faces_read_one_table_options_alike(case, tmp_path, monkeypatch):
    monkeypatch.setattr(calib.data.chunks, "CHUNK_ROWS", 400)  # several chunks
    frame, written, options = _exports(np.random.default_rng(11))[case]
    path = tmp_path / "export.txt"  # the format said by the options
    frame.to_csv(path, index=False, **written)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always", CalibInputWarning)
        whole = load_table(path, options)
        table = table_chunks(path, options)
        parts = list(table.chunks())
    assert (table.class_names, table.given_order) == (whole.class_names, whole.given_order)
    assert [str(note) for note in table.notes] == [str(note) for note in whole.notes]
    np.testing.assert_array_equal(np.concatenate([part[0] for part in parts]), whole.logprobs())
    np.testing.assert_array_equal(np.concatenate([part[1] for part in parts]), whole.labels)
    if options.group_column is not None:
        np.testing.assert_array_equal(np.concatenate([part[2] for part in parts]), whole.groups)


def test_npy_chunks_are_the_pair_load_npy_pair_reads(tmp_path, monkeypatch):
    monkeypatch.setattr(calib.data.chunks, "CHUNK_ROWS", 300)
    rng = np.random.default_rng(2)
    q = rng.dirichlet([1.0] * 5, 1000).astype(np.float32)
    np.save(tmp_path / "s.npy", q)
    np.save(tmp_path / "y.npy", rng.integers(0, 5, 1000))
    whole = load_npy_pair(tmp_path / "s.npy", tmp_path / "y.npy", kind="probs", renormalize=True)
    pieces = npy_chunks(tmp_path / "s.npy", tmp_path / "y.npy", kind="probs", renormalize=True)
    parts = list(pieces.chunks())
    assert len(parts) == 4 and pieces.n_classes == 5
    np.testing.assert_array_equal(
        np.concatenate([p[0] for p in parts]), check_inputs(whole.scores, whole.labels, "probs")[0]
    )
    np.testing.assert_array_equal(np.concatenate([p[1] for p in parts]), whole.labels)


def test_a_missing_label_and_a_bad_row_are_named_by_their_row_in_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr(calib.data.chunks, "CHUNK_ROWS", 100)
    monkeypatch.setattr(calib.data.chunks, "HEAD_ROWS", 100)  # the bad cells lie beyond the first rows
    rng = np.random.default_rng(0)
    p = rng.uniform(0.1, 0.9, 1000)
    frame = pd.DataFrame({"a": 1 - p, "b": p, "label": rng.integers(0, 2, 1000).astype(float)})
    frame.loc[734, "label"] = np.nan
    frame.to_parquet(tmp_path / "missing.parquet")
    frame.to_csv(tmp_path / "missing.csv", index=False)
    with pytest.raises(CalibInputError, match="first at row 734"):
        table_chunks(tmp_path / "missing.parquet", TableOptions(kind="probs", format="parquet", label_values="index"))
    with pytest.raises(CalibInputError, match="first at line 736"):
        table_chunks(tmp_path / "missing.csv", TableOptions(kind="probs", format="csv", label_values="index"))
    frame.loc[734, "label"] = 1.0
    frame.loc[512, "a"] = 0.7  # a row summing to 1.6 in the sixth chunk
    frame.to_parquet(tmp_path / "bad.parquet")
    table = table_chunks(tmp_path / "bad.parquet", TableOptions(kind="probs", format="parquet", label_values="index"))
    with pytest.raises(
        CalibInputError, match=r"row 500 \(counting from 0\) to row 599 .*row 12.*counted from the first"
    ):
        list(table.chunks())
    frame["a"] = frame["a"].astype(object)
    frame.loc[512, "a"] = "oops"  # text in a score column beyond the first rows
    frame.to_csv(tmp_path / "text.csv", index=False)
    table = table_chunks(tmp_path / "text.csv", TableOptions(kind="probs", format="csv", label_values="index"))
    with pytest.raises(CalibInputError, match="a score cell in rows 500 to 599 is not a number"):
        list(table.chunks())
    frame.loc[512, "a"] = "n/a"  # read as missing, as pandas reads the whole file
    frame.to_csv(tmp_path / "text.csv", index=False)
    table = table_chunks(tmp_path / "text.csv", TableOptions(kind="probs", format="csv", label_values="index"))
    with pytest.raises(CalibInputError, match=r"line 502 to line 601: scores contains NaN \(first rows: \[12\]\)"):
        list(table.chunks())


@pytest.mark.parametrize("layout", ["parquet", "csv"])
def test_the_command_evaluates_a_file_read_in_chunks_as_it_evaluates_it_whole(layout, tmp_path, monkeypatch, capsys):
    import json

    import calib.cli

    frame, _ = _tables(np.random.default_rng(5))["names"]
    path, _ = _written(frame, layout, tmp_path)
    args = ["evaluate", str(path), "--json", "--quiet", "--n-boot", "20", "--calibrators", "temperature",
            "--groups", "site", "--sample-limit", "500"]  # fmt: skip
    assert calib.cli.main(args) == 0
    whole = json.loads(capsys.readouterr().out)
    monkeypatch.setattr(calib.cli, "CHUNKED_FILE_BYTES", 0)
    monkeypatch.setattr(calib.data.chunks, "CHUNK_ROWS", 256)
    assert calib.cli.main(args) == 0
    chunked = json.loads(capsys.readouterr().out)
    subsample = "smooth ECE, squared MMCE (unbiased), CORP: on a seeded random 500 of the 3000 samples"
    assert chunked["notes"] == whole["notes"] == [subsample]
    assert chunked == whole
