"""Sample weights from a user's files (calib.data.weights, issue 56): a table's column of weights and a weights
file read whole and in chunks give the same weights row for row, the column is never a class column, and each
bad weight is one line naming the column (or file) and the row as the user finds it."""

from __future__ import annotations

import pickle
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import calib.data.chunks
from calib.data.alignment import rows_in_order
from calib.data.chunks import npy_chunks, table_chunks
from calib.data.real import load_npy_pair, load_posteriors, load_table, read_posterior_set, save_posterior_set
from calib.data.table_options import TableOptions
from calib.data.weights import WeightsFile
from calib.validation import CalibInputError, CalibInputWarning

N = 250


def _frame(seed: int = 0) -> pd.DataFrame:
    """Three classes by name, text labels, and a column of weights: whole numbers and fractions, some 0."""
    rng = np.random.default_rng(seed)
    q = rng.dirichlet([1.0, 1.0, 1.0], N)
    y = np.minimum((rng.random(N)[:, None] >= np.cumsum(q, axis=1)).sum(axis=1), 2)
    weights = rng.choice([0.0, 1.0, 2.0, 10.0, 0.25], N)
    return pd.DataFrame({"cat": q[:, 0], "dog": q[:, 1], "eel": q[:, 2], "w": weights,
                         "label": np.array(["cat", "dog", "eel"])[y]})  # fmt: skip


def _write(frame: pd.DataFrame, path) -> None:
    if path.suffix == ".csv":
        frame.to_csv(path, index=False)
    else:
        frame.to_parquet(path, row_group_size=60)  # several row groups: several partitions


def _chunked(path, options, **keywords) -> tuple:
    """Every chunk of the table put together: (labels, weights or None)."""
    chunks = list(table_chunks(path, options, **keywords).chunks())
    weights = [chunk[3] for chunk in chunks]
    together = None if weights[0] is None else np.concatenate(weights)
    return np.concatenate([chunk[1] for chunk in chunks]), together


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 32 rows, so the tables below are read in several."""
    monkeypatch.setattr(calib.data.chunks, "CHUNK_ROWS", 32)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_weights_column_read_whole_and_in_chunks_gives_the_same_weights(tmp_path, small_chunks, suffix):
    frame = _frame()
    path = tmp_path / f"scores{suffix}"
    _write(frame, path)
    options = TableOptions(kind="probs", weight_column="w")
    with warnings.catch_warnings():
        warnings.simplefilter("error", CalibInputWarning)  # the weights are not a column left out with a note
        whole = load_table(path, options)
        labels, weights = _chunked(path, options)
    assert whole.class_names == ("cat", "dog", "eel")  # the weights are not a class
    assert np.array_equal(whole.weights, frame["w"].to_numpy())
    assert np.array_equal(weights, whole.weights)
    assert np.array_equal(labels, whole.labels)


def test_the_partitions_of_a_parquet_folder_carry_their_rows_weights(tmp_path, small_chunks):
    frame = _frame(1)
    folder = tmp_path / "parts"
    folder.mkdir()
    _write(frame[:140], folder / "a.parquet")
    _write(frame[140:], folder / "b.parquet")
    np.save(tmp_path / "w.npy", frame["w"].to_numpy())
    for keywords in ({"options": TableOptions(kind="probs", weight_column="w")},
                     {"options": TableOptions(kind="probs", class_columns=["cat", "dog", "eel"]),
                      "weights_file": tmp_path / "w.npy"}):  # fmt: skip
        table = table_chunks(folder, keywords.pop("options"), **keywords)
        parts = table.partitions(100)
        assert len(parts) > 2
        weights = np.concatenate([chunk[3] for part in parts for chunk in table.read(part)])
        assert np.array_equal(weights, frame["w"].to_numpy())


def test_the_weights_column_is_not_read_as_a_class_column(tmp_path):
    frame = pd.DataFrame({"c0": [0.8, 0.3, 0.6], "c1": [0.2, 0.7, 0.4], "w": [1.0, 2.0, 3.0], "label": [0, 1, 0]})
    path = tmp_path / "s.csv"
    frame.to_csv(path, index=False)
    pset = load_table(path, TableOptions(kind="probs", weight_column="w"))
    assert pset.class_names == ("c0", "c1")
    assert pset.weights.tolist() == [1.0, 2.0, 3.0]
    # numbered like the classes, "2" would be a class of its own without --weights
    frame.rename(columns={"w": "c2"}).to_csv(path, index=False)
    pset = load_table(path, TableOptions(kind="probs", weight_column="c2", label_values="index"))
    assert pset.class_names == ("c0", "c1")


def test_a_table_of_scores_to_calibrate_may_lack_the_weights_column(tmp_path):
    path = tmp_path / "apply.csv"
    _frame().drop(columns=["w", "label"]).to_csv(path, index=False)
    options = TableOptions(kind="probs", weight_column="w")
    assert load_table(path, options, require_labels=False, require_weights=False).weights is None
    with pytest.raises(CalibInputError, match="has no column 'w'"):
        load_table(path, options, require_labels=False)


BAD = {
    "negative": (-2.0, "must be >= 0; found -2 at {row}"),
    "missing": (None, "are missing at {row}"),
    "nan": (float("nan"), "are missing at {row}"),  # pandas reads NaN as a missing cell
    "infinite": (float("inf"), "must be finite; found inf at {row}"),
    "text": ("many", "hold 'many' at {row}, not a number"),
}


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize("how", ["whole", "chunks"])
@pytest.mark.parametrize("bad", sorted(BAD))
def test_each_bad_weight_is_one_line_naming_the_column_and_the_row(tmp_path, small_chunks, suffix, how, bad):
    value, says = BAD[bad]
    if suffix == ".parquet" and bad == "text":  # a Parquet column holds one type: text weights are all text
        value, says = "many", "hold 'many' at {row}, not a number"
    frame = _frame()
    frame["w"] = frame["w"].astype(object)
    frame.loc[77, "w"] = value
    if suffix == ".parquet" and bad == "text":
        frame["w"] = frame["w"].astype(str)
        frame.loc[:76, "w"] = "1"
    path = tmp_path / f"scores{suffix}"
    _write(frame, path)
    options = TableOptions(kind="probs", weight_column="w")
    with pytest.raises(CalibInputError) as error:
        load_table(path, options) if how == "whole" else _chunked(path, options)
    row = "line 79" if suffix == ".csv" else "row 77 (counting from 0)"
    for message in (str(error.value), error.value.cli_message):
        assert "\n" not in message
        assert message.startswith(f"{path}: the weights of ")
        assert says.format(row=row) in message
    assert "column 'w' (weight_column=)" in str(error.value)
    assert "--weights w " in error.value.cli_message


@pytest.mark.parametrize("how", ["whole", "chunks"])
def test_weights_all_zero_are_refused_but_a_chunk_may_be_all_zero(tmp_path, small_chunks, how):
    frame = _frame()
    path = tmp_path / "scores.csv"
    frame.assign(w=0.0).to_csv(path, index=False)
    options = TableOptions(kind="probs", weight_column="w")
    with pytest.raises(CalibInputError, match=r"the weights of column 'w' \(weight_column=\) are all 0"):
        load_table(path, options) if how == "whole" else _chunked(path, options)
    frame.assign(w=np.r_[np.zeros(N - 1), 3.0]).to_csv(path, index=False)  # every chunk but the last all 0
    weights = load_table(path, options).weights if how == "whole" else _chunked(path, options)[1]
    assert weights.sum() == 3.0


def test_weights_given_as_a_column_and_as_a_file_are_refused(tmp_path):
    path = tmp_path / "scores.csv"
    _frame().to_csv(path, index=False)
    np.save(tmp_path / "w.npy", np.ones(N))
    options = TableOptions(kind="probs", weight_column="w")
    for read in (load_table, table_chunks):
        with pytest.raises(CalibInputError) as error:
            read(path, options, weights_file=tmp_path / "w.npy")
        assert "both give the rows' weights; give one" in str(error.value)
        assert error.value.cli_message.startswith("--weights w and --weights-file ")


def test_a_weights_column_of_an_archive_is_refused_with_the_fix(tmp_path):
    np.savez(tmp_path / "s.npz", scores=np.array([[0.2, 0.8]]), labels=np.array([1]))
    with pytest.raises(CalibInputError) as error:
        load_posteriors(tmp_path / "s.npz", kind="probs", weight_column="w")
    assert error.value.cli_message.endswith("give the weights with --weights-file WEIGHTS.npy")


WEIGHTS = np.array([1.0, 10.0, 0.0, 2.5, 3.0])


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("w.npy", None),
        ("w.csv", "weight\n1\n10\n0\n2.5\n3\n"),  # a header
        ("w.txt", "1\n10\n0\n2.5\n3\n\n"),  # no header, a blank line at the end
        ("w.tsv", "w\r\n1.0\r\n1e1\r\n0\r\n2.5\r\n3\r\n"),  # Windows line ends, a number as 1e1
    ],
)
def test_a_weights_file_is_a_npy_vector_or_one_number_per_line(tmp_path, name, text):
    path = tmp_path / name
    np.save(path, WEIGHTS) if text is None else path.write_text(text, newline="")
    assert WeightsFile(path, 5).rows(0, 5).tolist() == WEIGHTS.tolist()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("w\n1\n-1\n2\n", "must be >= 0; found -1 at line 3"),
        ("1\nabc\n2\n", "hold 'abc' at line 2, not a number"),
        ("1\n\n2\n", "hold '' at line 2, not a number"),
        ("1\ninf\n2\n", "must be finite; found inf at line 2"),
        ("1,2\n3,4\n5,6\n", "have 2 cells in a line; give one weight per line"),
        ("0\n0\n0\n", "are all 0"),
    ],
)
def test_a_bad_weights_file_is_one_line_naming_the_file_and_the_line(tmp_path, text, says):
    path = tmp_path / "w.csv"
    path.write_text(text)
    with pytest.raises(CalibInputError) as error:
        WeightsFile(path, 3)
    assert error.value.cli_message == f"the weights of --weights-file {path} {error.value.cli_message.split(' ', 5)[5]}"
    assert says in error.value.cli_message
    assert "\n" not in str(error.value)


def test_a_weights_file_of_another_length_is_refused_naming_both_counts(tmp_path, small_chunks):
    frame = _frame()
    table = tmp_path / "scores.csv"
    frame.to_csv(table, index=False)
    np.save(tmp_path / "short.npy", np.ones(N - 1))
    (tmp_path / "long.txt").write_text("1\n" * (N + 1))
    options = TableOptions(kind="probs", class_columns=["cat", "dog", "eel"])
    told = {"short.npy": rf"are {N - 1} for (more|{N}) rows", "long.txt": rf"are {N + 1} for {N} rows"}
    for weights in told:
        for how in ("whole", "chunks"):
            with pytest.raises(CalibInputError) as error:
                if how == "whole":
                    load_table(table, options, weights_file=tmp_path / weights)
                else:
                    _chunked(table, options, weights_file=tmp_path / weights)
            assert re.search(told[weights], error.value.cli_message), error.value.cli_message
            assert "give one weight per row, in their order" in error.value.cli_message


def test_a_weights_file_read_whole_and_in_chunks_gives_the_same_weights(tmp_path, small_chunks):
    frame = _frame()
    options = TableOptions(kind="probs", class_columns=["cat", "dog", "eel"])
    table = tmp_path / "scores.csv"
    frame.to_csv(table, index=False)
    np.save(tmp_path / "w.npy", frame["w"].to_numpy())
    np.savetxt(tmp_path / "w.txt", frame["w"].to_numpy(), header="weight", comments="")
    for name in ("w.npy", "w.txt"):
        whole = load_table(table, options, weights_file=tmp_path / name).weights
        assert np.array_equal(whole, frame["w"].to_numpy())
        assert np.array_equal(_chunked(table, options, weights_file=tmp_path / name)[1], whole)
    scores, labels = tmp_path / "s.npy", tmp_path / "y.npy"
    np.save(scores, frame[["cat", "dog", "eel"]].to_numpy())
    np.save(labels, np.arange(N) % 3)
    pair = load_npy_pair(scores, labels, kind="probs", weights_file=tmp_path / "w.npy")
    pieces = npy_chunks(scores, labels, kind="probs", weights_file=tmp_path / "w.txt")
    assert np.array_equal(np.concatenate([chunk[3] for chunk in pieces.chunks()]), pair.weights)
    assert np.array_equal(pair.weights, frame["w"].to_numpy())


def test_a_saved_set_keeps_its_weights_and_rows_paired_by_id_keep_theirs(tmp_path):
    path = tmp_path / "s.csv"
    frame = _frame().assign(id=np.arange(N))
    frame.to_csv(path, index=False)
    pset = load_table(path, TableOptions(kind="probs", weight_column="w", id_column="id"))
    save_posterior_set(tmp_path / "set.npz", pset)
    assert np.array_equal(read_posterior_set(tmp_path / "set.npz").weights, pset.weights)
    plain = load_table(path, TableOptions(kind="probs", class_columns=["cat", "dog", "eel"]))
    save_posterior_set(tmp_path / "plain.npz", plain)
    assert read_posterior_set(tmp_path / "plain.npz").weights is None
    reordered = rows_in_order(pset, pset.ids[::-1], where="b", reference="a")
    assert np.array_equal(reordered.weights, pset.weights[::-1])


def test_a_npy_weights_file_travels_to_a_worker_as_its_path_not_its_weights(tmp_path):
    weights = np.arange(1.0, 10**5 + 1)
    np.save(tmp_path / "w.npy", weights)
    sent = pickle.dumps(WeightsFile(tmp_path / "w.npy", weights.size))
    assert len(sent) < weights.nbytes / 100
    assert pickle.loads(sent).rows(5, 8).tolist() == [6.0, 7.0, 8.0]
