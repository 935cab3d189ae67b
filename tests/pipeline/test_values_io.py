"""Values CSVs read back as they were written: numbers as floats, the odd word as text, at any size."""

from __future__ import annotations

import csv

import numpy as np

from pipeline.io import read_values, values_frame, write_csv


def test_a_word_among_many_numbers_leaves_every_number_a_float(tmp_path):
    # Large enough that pandas, typing a file chunk by chunk, would read the chunk holding the word as text.
    numbers = np.random.default_rng(0).random(300_000)
    records = [{"row": "raw", "column": "curve", "x": i, "value": v} for i, v in enumerate(numbers)]
    records.insert(200_000, {"row": "raw", "column": "band method", "value": "asymptotic"})
    path = write_csv(tmp_path / "v_values.csv", values_frame(records))
    values = read_values(path)
    words = values.column == "band method"
    assert values.value[words].tolist() == ["asymptotic"]
    floats = values.value[~words]
    assert all(isinstance(v, float) for v in floats)
    with open(path, newline="") as handle:  # the numbers as the file writes them, read by another reader
        written = [float(r["value"]) for r in csv.DictReader(handle) if r["column"] != "band method"]
    np.testing.assert_array_equal(floats.astype(float).to_numpy(), written)


def test_numbers_only_stay_a_float_column_and_rows_named_by_numbers_stay_text(tmp_path):
    records = [{"row": 7, "column": 1, "value": 0.5}, {"row": "a", "column": "b", "value": np.nan}]
    values = read_values(write_csv(tmp_path / "v_values.csv", values_frame(records)))
    assert values.value.dtype == np.float64 and np.isnan(values.value[1]) and values.value[0] == 0.5
    assert values.row.tolist() == ["7", "a"] and values.column.tolist() == ["1", "b"]
