"""Tables as spreadsheets export them, read by the ``calib`` command as a new user runs it (issue 51).

Each file is written the way Excel, pandas or an R export writes it: a first line ``sep=;`` that names
the separator, trailing separators that leave empty unnamed columns, an ``.xlsx`` workbook. The command's
numbers on it must be those of the same data written as a clean CSV; an error must name the file and
give a fix that works when followed. Also: messages name the file they are about (never an empty name).
"""

from __future__ import annotations

import gzip
import json
import re
import sys
import tomllib
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import calib.cli
import calib.data.chunks
from calib.data.formats import file_format, read_text_table
from calib.data.real import load_posteriors, load_table
from calib.data.table_options import TableOptions
from calib.validation import CalibInputError, CalibInputWarning

ROOT = Path(__file__).resolve().parents[2]
CLASSES = ["cat", "dog", "owl"]


def _frame(n: int = 300, seed: int = 0) -> pd.DataFrame:
    """Three classes' probabilities in thousandths (numbers a spreadsheet stores exactly: a workbook keeps
    15 significant digits) and text labels drawn from them."""
    rng = np.random.default_rng(seed)
    probs = (1 + np.array([rng.multinomial(997, p) for p in rng.dirichlet([2.0, 1.0, 1.0], size=n)])) / 1000
    cdf = np.cumsum(probs, axis=1)
    labels = np.minimum((rng.random(n)[:, None] >= cdf).sum(axis=1), 2)
    frame = pd.DataFrame(probs, columns=CLASSES)
    frame["label"] = np.array(CLASSES)[labels]
    return frame


def _run(path, *options: str, capsys) -> tuple[int, dict | None, str]:
    """``calib evaluate PATH --json`` in this process: (exit status, the JSON document or None, stderr)."""
    code = calib.cli.main(["evaluate", str(path), "--json", "--quiet", "--n-boot", "0", *options])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if code == 0 else None), out.err


def _same_numbers(got: dict, clean: dict) -> None:
    """Everything the command reports but the file's name equals the clean CSV's report."""
    assert {k: v for k, v in got.items() if k != "file"} == {k: v for k, v in clean.items() if k != "file"}


def _clean(frame: pd.DataFrame, tmp_path: Path, capsys) -> dict:
    path = tmp_path / "clean.csv"
    frame.to_csv(path, index=False)
    code, document, err = _run(path, capsys=capsys)
    assert code == 0, err
    return document


def _error(err: str) -> str:
    """The command's error line (notes may precede it)."""
    lines = [line for line in err.splitlines() if line.startswith("calib evaluate: error: ")]
    assert len(lines) == 1, err
    return lines[0]


# --- 1. Excel-style CSV: a "sep=" first line, trailing empty columns ---------------------------------------


@pytest.mark.parametrize("sep", [",", ";", "\t", "|"])
def test_a_sep_line_names_the_separator_and_is_skipped(sep, tmp_path, capsys):
    frame = _frame()
    clean = _clean(frame, tmp_path, capsys)
    path = tmp_path / "excel.csv"
    path.write_text(f"sep={sep}\n" + frame.to_csv(index=False, sep=sep), encoding="utf-8")
    code, document, err = _run(path, capsys=capsys)
    assert code == 0, err
    _same_numbers(document, clean)
    assert document["classes"] == CLASSES


def test_a_sep_line_with_decimal_commas_is_read_with_the_advised_option(tmp_path, capsys):
    """A European Excel: "sep=;" and decimal commas. Without --decimal the error advises it; with it the
    numbers are the clean CSV's."""
    frame = _frame()
    clean = _clean(frame, tmp_path, capsys)
    path = tmp_path / "european.csv"
    path.write_text("sep=;\n" + frame.to_csv(index=False, sep=";", decimal=","), encoding="utf-8")
    code, _, err = _run(path, capsys=capsys)
    line = _error(err)
    assert code == 1 and "european.csv" in line and "decimal comma" in line and "--decimal ," in line
    code, document, err = _run(path, "--decimal", ",", capsys=capsys)
    assert code == 0, err
    _same_numbers(document, clean)


def test_sep_option_wins_over_the_sep_line_which_is_still_skipped(tmp_path, capsys):
    frame = _frame()
    clean = _clean(frame, tmp_path, capsys)
    path = tmp_path / "relabelled.csv"  # the line says ';' but the columns are separated by tabs
    path.write_text("sep=;\n" + frame.to_csv(index=False, sep="\t"), encoding="utf-8")
    code, document, err = _run(path, "--sep", "\t", capsys=capsys)
    assert code == 0, err
    _same_numbers(document, clean)


def test_a_compressed_csv_with_a_sep_line_is_read(tmp_path, capsys):
    frame = _frame()
    clean = _clean(frame, tmp_path, capsys)
    path = tmp_path / "excel.csv.gz"
    path.write_bytes(gzip.compress(("sep=;\n" + frame.to_csv(index=False, sep=";")).encode()))
    code, document, err = _run(path, capsys=capsys)
    assert code == 0, err
    _same_numbers(document, clean)


def test_trailing_empty_columns_are_dropped_with_a_note_naming_them(tmp_path, capsys):
    """Excel saves a sheet whose formatting reaches two columns past the data as "a,b,c,label,," on every
    line; pandas calls those columns 'Unnamed: 4' and 'Unnamed: 5'."""
    frame = _frame()
    clean = _clean(frame, tmp_path, capsys)
    path = tmp_path / "trailing.csv"
    lines = frame.to_csv(index=False).splitlines()
    path.write_text("".join(line + ",,\n" for line in lines), encoding="utf-8")
    code, document, err = _run(path, capsys=capsys)
    assert code == 0, err
    _same_numbers(document, clean)
    notes = [line for line in err.splitlines() if "dropped" in line]
    assert len(notes) == 1 and "trailing.csv" in notes[0]
    assert "'Unnamed: 4'" in notes[0] and "'Unnamed: 5'" in notes[0]


def test_trailing_empty_columns_with_a_header_only_ending_in_commas(tmp_path):
    """The header ends in ",," but the rows do not (an R export of a sheet): the empty columns are dropped
    from the Python loader's table too, with a CalibInputWarning naming the file."""
    frame = _frame(50)
    path = tmp_path / "r_export.csv"
    text = frame.to_csv(index=False).splitlines()
    path.write_text("\n".join([text[0] + ",,", *text[1:]]) + "\n", encoding="utf-8")
    with pytest.warns(CalibInputWarning, match=r"r_export\.csv: dropped 2 empty columns"):
        pset = load_table(path, TableOptions(kind="probs"))
    np.testing.assert_array_equal(pset.scores, frame[CLASSES].to_numpy())
    assert pset.class_names == tuple(CLASSES)


def test_an_unnamed_column_with_values_is_not_dropped(tmp_path):
    """Only empty columns go: an unnamed column holding numbers is a column of the table (here refused as
    a score column among probabilities is, or read), never dropped silently."""
    frame = _frame(30)
    path = tmp_path / "extra.csv"
    text = frame.to_csv(index=False).splitlines()
    path.write_text("\n".join([text[0] + ",", *(line + ",7" for line in text[1:])]) + "\n", encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibInputWarning)
        table = read_text_table(path, "csv")
    assert list(table.columns) == [*CLASSES, "label", "Unnamed: 4"]


def test_a_sep_line_in_a_file_read_in_chunks(tmp_path, monkeypatch, capsys):
    """The chunked reader (a file larger than CHUNKED_FILE_BYTES) honours the line as the whole-file one does,
    and counts it in the line numbers of its errors."""
    frame = _frame(1000)
    path = tmp_path / "big.csv"
    path.write_text("sep=;\n" + frame.to_csv(index=False, sep=";"), encoding="utf-8")
    code, whole, err = _run(path, "--n-boot", "20", capsys=capsys)
    assert code == 0, err
    monkeypatch.setattr(calib.cli, "CHUNKED_FILE_BYTES", 0)
    monkeypatch.setattr(calib.data.chunks, "CHUNK_ROWS", 128)
    code, chunked, err = _run(path, "--n-boot", "20", capsys=capsys)
    assert code == 0, err
    assert chunked == whole
    broken = frame.copy()
    broken.loc[700, "dog"] = 0.9  # a row summing to more than 1, in the chunk of rows 640 to 767
    path.write_text("sep=;\n" + broken.to_csv(index=False, sep=";"), encoding="utf-8")
    code, _, err = _run(path, capsys=capsys)
    assert code == 1 and "big.csv, line 643 to line 770: " in _error(err)  # the header is line 2, row 0 line 3


def test_a_sep_line_in_a_pipe(tmp_path, capsys):
    """A pipe is read as a stream: the line is found there too."""
    import os
    import threading

    frame = _frame()
    clean = _clean(frame, tmp_path, capsys)
    fifo = tmp_path / "stream.csv"
    os.mkfifo(fifo)

    def feed():
        with open(fifo, "w", encoding="utf-8") as pipe:
            pipe.write("sep=;\n" + frame.to_csv(index=False, sep=";"))

    writer = threading.Thread(target=feed)
    writer.start()
    code, document, err = _run(fifo, capsys=capsys)
    writer.join(timeout=30)
    assert code == 0, err
    _same_numbers(document, clean)


# --- 2. Excel workbooks --------------------------------------------------------------------------------------


def test_an_xlsx_workbook_is_read_as_its_csv(tmp_path, capsys):
    frame = _frame()
    clean = _clean(frame, tmp_path, capsys)
    path = tmp_path / "scores.xlsx"
    frame.to_excel(path, index=False)
    assert file_format(path) == "excel"
    code, document, err = _run(path, capsys=capsys)
    assert code == 0, err
    _same_numbers(document, clean)
    renamed = tmp_path / "scores_without_suffix"  # a workbook named without its suffix: --format excel
    path.rename(renamed)
    code, document, err = _run(renamed, "--format", "excel", capsys=capsys)
    assert code == 0, err
    _same_numbers(document, clean)


def test_the_first_sheet_of_several_is_read_with_a_note(tmp_path, capsys):
    frame = _frame()
    clean = _clean(frame, tmp_path, capsys)
    path = tmp_path / "book.xlsx"
    with pd.ExcelWriter(path) as book:
        frame.to_excel(book, sheet_name="test set", index=False)
        frame.iloc[:10].to_excel(book, sheet_name="notes", index=False)
    code, document, err = _run(path, capsys=capsys)
    assert code == 0, err
    _same_numbers(document, clean)
    assert "book.xlsx: read its first sheet, 'test set', of 2" in err


def test_without_openpyxl_the_error_says_how_to_read_the_workbook_and_its_fix_works(tmp_path, capsys, monkeypatch):
    frame = _frame()
    clean = _clean(frame, tmp_path, capsys)
    path = tmp_path / "scores.xlsx"
    path.write_bytes(b"PK\x03\x04 not read: openpyxl is missing")
    monkeypatch.setitem(sys.modules, "openpyxl", None)  # import openpyxl raises ImportError
    code, _, err = _run(path, capsys=capsys)
    line = _error(err)
    assert code == 1 and "scores.xlsx" in line and "openpyxl" in line and "save the sheet as CSV" in line
    # The install advice is the project's own extra, which holds openpyxl (and the test extra has it too).
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    required = re.search(r"pip install '([^']+)'", line).group(1)
    assert required in extras["excel"] and required in extras["test"]
    # Saving as CSV (what Excel's "CSV UTF-8" writes: a byte-order mark, then the table) reads the same numbers.
    saved = tmp_path / "scores.csv"
    saved.write_bytes(b"\xef\xbb\xbf" + frame.to_csv(index=False).encode())
    code, document, err = _run(saved, capsys=capsys)
    assert code == 0, err
    _same_numbers(document, clean)


def test_a_damaged_workbook_and_old_formats_are_refused_with_a_fix(tmp_path, capsys):
    damaged = tmp_path / "damaged.xlsx"
    damaged.write_text("a,b,label\n0.2,0.8,1\n")
    code, _, err = _run(damaged, capsys=capsys)
    assert code == 1 and "damaged.xlsx is not a readable Excel workbook" in _error(err)
    old = tmp_path / "old.xls"
    old.write_bytes(b"\xd0\xcf\x11\xe0")
    code, _, err = _run(old, capsys=capsys)
    line = _error(err)
    assert code == 1 and "old.xls" in line and ".xlsx" in line and "CSV" in line


# --- 3. Messages name the file ------------------------------------------------------------------------------


def test_npy_files_in_the_working_folder_are_named_in_errors(tmp_path, monkeypatch, capsys):
    """The scores of ``calib evaluate scores.npy`` run in their folder: the set's default name (the folder of
    the file as given) is empty, and errors said "scores of : rows ...". They name the files now."""
    monkeypatch.chdir(tmp_path)
    probs = _frame(40)[CLASSES].to_numpy().copy()
    labels = np.arange(40) % 3
    np.save("labels.npy", labels + 3)  # labels 3..5 for three classes
    np.save("scores.npy", probs)
    code, _, err = _run("scores.npy", "--labels-file", "labels.npy", capsys=capsys)
    line = _error(err)
    assert code == 1 and "labels file labels.npy must lie in [0, 3)" in line
    np.save("labels.npy", labels)
    bad = probs.copy()
    bad[4] *= 0.5
    np.save("scores.npy", bad)
    code, _, err = _run("scores.npy", "--labels-file", "labels.npy", capsys=capsys)
    line = _error(err)
    assert code == 1 and "scores of scores.npy: rows of probabilities must sum to 1" in line and "row 4" in line
    logits = np.log(probs)
    logits[7, 1] = np.inf
    np.save("scores.npy", logits)
    code, _, err = _run("scores.npy", "--labels-file", "labels.npy", "--kind", "logits", capsys=capsys)
    assert code == 1 and "scores of scores.npy contains +inf" in _error(err)
    for text in (line, err):
        assert not re.search(r"\bof\s*:|\bof  ", text), text


@pytest.mark.parametrize(
    ("spoil", "words"),
    [
        (lambda p: p.__setitem__((2, 0), np.nan), "NaN"),
        (lambda p: p.__setitem__((2, 0), 1.5), "1.5"),
        (lambda p: p.__setitem__((2, 0), 0.1), "sum to 1"),
    ],
)
def test_every_loader_names_the_file_of_a_bad_score(spoil, words, tmp_path):
    frame = _frame(30)
    probs = frame[CLASSES].to_numpy().copy()
    spoil(probs)
    labels = np.arange(30) % 3
    np.save(tmp_path / "scores.npy", probs)
    np.save(tmp_path / "labels.npy", labels)
    np.savez(tmp_path / "set.npz", scores=probs, labels=labels)
    table = pd.DataFrame(probs, columns=CLASSES).assign(label=frame["label"])
    table.to_csv(tmp_path / "table.csv", index=False)
    table.to_parquet(tmp_path / "table.parquet", index=False)
    for name, options in [("scores.npy", {"labels": tmp_path / "labels.npy"}), ("set.npz", {}),
                          ("table.csv", {}), ("table.parquet", {})]:  # fmt: skip
        with pytest.raises(CalibInputError) as info:
            load_posteriors(tmp_path / name, kind="probs", **options).logprobs()
        assert str(tmp_path / name) in str(info.value) and words in str(info.value), (name, str(info.value))


def test_the_python_api_names_its_arguments(tmp_path):
    """calib.evaluate on arrays and a DataFrame: the messages name the argument ("scores", "labels")."""
    import calib

    frame = _frame(30)
    probs = frame[CLASSES].to_numpy().copy()
    probs[3, 1] = np.nan
    indices = frame["label"].map(CLASSES.index).to_numpy()
    for scores, labels in ((probs, indices), (pd.DataFrame(probs, columns=CLASSES), frame["label"])):
        with pytest.raises(CalibInputError, match=r"^scores contains NaN \(first rows: \[3\]\)"):
            calib.evaluate(scores, labels, kind="probs", n_boot=0)
    with pytest.raises(CalibInputError, match=r"^labels has 29 entries but the scores have 30 rows"):
        calib.evaluate(frame[CLASSES].to_numpy(), np.zeros(29, dtype=int), kind="probs", n_boot=0)
