"""calib.evaluation.partitioned: a Parquet data set evaluated partition by partition, each partition's state
computed on its own and the states merged, equals the single out-of-core pass (evaluate_chunks) on the data
set; without a scheduler nothing imports Dask. The same on real Dask clusters: tests/dask/."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from prediction_logs import assert_same, write_log

import calib.evaluation.partitioned as partitioned
from calib.cli import main
from calib.data.chunks import table_chunks
from calib.data.table_options import TableOptions
from calib.evaluation.engine import evaluate, evaluate_chunks
from calib.evaluation.partitioned import evaluate_partitioned
from calib.evaluation.router import evaluate_dataset
from calib.validation import CalibInputError, MissingFileError


@pytest.mark.parametrize(
    ("k", "options"),
    [
        (2, {"n_boot": 30, "sample_limit": 5_000, "fit_samples": 4_000, "binning": "equal-mass"}),
        (3, {"n_boot": 20, "calibrators": ("temperature",)}),
        # rows after the first 4096 resampled in 64 buckets, partitions starting inside blocks
        (3, {"n_boot": 20, "resample_buckets": 64, "calibrators": ()}),
        (2, {"n_boot": 30, "resample_buckets": 64, "binning": "equal-mass", "calibrators": ()}),
    ],
)
def test_partitions_merged_equal_the_single_out_of_core_pass(tmp_path, monkeypatch, k, options):
    folder = write_log(tmp_path / "log", k=k)
    monkeypatch.setattr(partitioned, "PARTITION_ROWS", 3_000)  # 4 partitions of each file (5 row groups)
    table = table_chunks(folder, TableOptions(kind="probs", format="parquet", group_column="segment"))
    assert [p.n_rows for p in table.partitions(3_000)] == [1_700, 1_700, 1_700, 2_900] * 3
    whole = evaluate_chunks(table.chunks, n_classes=k, grouped=True, **options)
    cut = evaluate_partitioned(table, grouped=True, **options)
    assert_same(cut, whole)
    # the subsample (the smooth ECE and CORP rows) is the same rows, in order (the scores read from chunks cut
    # elsewhere may differ in the last bit)
    np.testing.assert_allclose(cut.lens[0], whole.lens[0], rtol=1e-15)
    np.testing.assert_array_equal(cut.lens[1], whole.lens[1])


@pytest.mark.parametrize("binning", ["equal-width", "equal-mass"])
def test_weighted_partitions_and_chunks_equal_the_weighted_evaluation_in_memory(tmp_path, monkeypatch, binning):
    folder = write_log(tmp_path / "log", k=3, weights=True)
    monkeypatch.setattr(partitioned, "PARTITION_ROWS", 3_000)
    options = {"n_boot": 20, "resample_buckets": 64, "binning": binning, "calibrators": ("temperature",),
               "sample_limit": 5_000, "fit_samples": 4_000}  # fmt: skip
    table = table_chunks(folder, TableOptions(kind="probs", format="parquet", group_column="segment",
                                              weight_column="weight"))  # fmt: skip
    frame = pd.concat([pd.read_parquet(path) for path in sorted(folder.glob("*.parquet"))], ignore_index=True)
    probs = frame[[f"class_{i}" for i in range(3)]].to_numpy()
    labels = frame["label"].str.removeprefix("class_").astype(int).to_numpy()
    here = evaluate(probs, labels, kind="probs", groups=frame["segment"].to_numpy(),
                    sample_weight=frame["weight"].to_numpy(), **options)  # fmt: skip
    assert_same(evaluate_chunks(table.chunks, n_classes=3, grouped=True, **options), here)
    assert_same(evaluate_partitioned(table, grouped=True, **options), here)
    assert here.weighting.total == pytest.approx(frame["weight"].sum(), rel=1e-12)


def test_a_key_bound_that_falls_short_is_noticed_and_the_partitions_read_again_without_one(tmp_path, monkeypatch):
    folder = write_log(tmp_path / "log")
    monkeypatch.setattr(partitioned, "PARTITION_ROWS", 3_000)
    calls = []
    monkeypatch.setattr(partitioned, "key_bound", lambda limit, n: calls.append(limit) or (0.01 if limit else 0.0))
    options = {"n_boot": 10, "sample_limit": 5_000, "fit_samples": 2_000, "binning": "equal-mass"}
    table = table_chunks(folder, TableOptions(kind="probs", format="parquet"))
    whole = evaluate_chunks(table.chunks, n_classes=2, **options)
    assert_same(evaluate_partitioned(table, **options), whole)
    assert calls  # the bound was asked for, and its short subsamples were not used


def test_evaluate_dataset_without_a_scheduler_is_the_out_of_core_evaluation(tmp_path):
    folder = write_log(tmp_path / "log", n=6_000)
    summary = evaluate_dataset(folder, kind="probs", group_column="segment", n_boot=10, calibrators=())
    table = table_chunks(folder, TableOptions(kind="probs", format="parquet", group_column="segment"))
    assert_same(summary, evaluate_chunks(table.chunks, n_classes=2, grouped=True, n_boot=10, calibrators=()), 0)


def test_evaluate_dataset_takes_the_table_options_as_an_object_or_as_keywords_not_both(tmp_path):
    folder = write_log(tmp_path / "log", n=3_000)
    options = TableOptions(kind="probs", group_column="segment")
    given = evaluate_dataset(folder, options, n_boot=0, calibrators=())
    assert_same(given, evaluate_dataset(folder, kind="probs", group_column="segment", n_boot=0, calibrators=()), 0)
    with pytest.raises(CalibInputError, match=r"^group_column: give the table's options once"):
        evaluate_dataset(folder, options, group_column="segment", n_boot=0)


def test_a_partition_without_labels_is_named_by_its_file_and_row(tmp_path, monkeypatch):
    folder = write_log(tmp_path / "log", n=6_000)
    frame = pd.read_parquet(folder / "part-01.parquet")
    frame.loc[1_234, "label"] = None
    frame.to_parquet(folder / "part-01.parquet", index=False, row_group_size=1_700)
    with pytest.raises(CalibInputError, match=r"part-01\.parquet: labels are missing \(first at row 1234 "):
        table_chunks(folder, TableOptions(kind="probs", format="parquet"), map_reduce=partitioned.in_process)


def test_the_errors_of_a_partition_survive_pickling_whole():
    # (raised on a worker, an error reaches the client by pickle)
    error = pickle.loads(pickle.dumps(MissingFileError("give path=", cli_message="give --path")))
    assert isinstance(error, MissingFileError) and str(error) == "give path=" and error.cli_message == "give --path"


def test_without_a_scheduler_the_command_never_imports_dask(tmp_path):
    folder = write_log(tmp_path / "log", n=3_000)
    script = (
        "import sys; from calib.cli import main; "
        f"code = main(['evaluate', {str(folder)!r}, '--kind', 'probs', '--quiet', '--n-boot', '5']); "
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed', 'dask_jobqueue')); "
        "print(code, loaded)"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert run.stdout.split("\n")[-2] == "0 []", run.stdout + run.stderr


def test_a_scheduler_is_for_parquet_data_sets(tmp_path, capsys):
    path = tmp_path / "scores.csv"
    pd.DataFrame({"0": [0.2, 0.7], "1": [0.8, 0.3], "label": [1, 0]}).to_csv(path, index=False)
    assert main(["evaluate", str(path), "--scheduler", "tcp://127.0.0.1:8786", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--scheduler: FILE" in err and "is not a Parquet file or folder" in err
    assert err.count("\n") == 1
