"""Crossed segments and the search for the worst one (calib.evaluation.segments, calib.evaluation.subgroups):
the segments of several columns, the search's p-value against an independent recomputation from the same drawn
outcomes, its uniformity on calibrated forecasts, a miscalibration only a crossing shows found and named, the
minimum segment size (Kish's effective size with weights), and the same answer in memory, in chunks and in
partitions."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from prediction_logs import assert_same, write_log
from scipy.special import expit
from scipy.stats import kstest

import calib.evaluation.partitioned as partitioned
from benchmarks.subgroup_tests import CROSSING, MARGINS, interaction
from calib.cli import main
from calib.data.chunks import table_chunks
from calib.data.table_options import TableOptions
from calib.evaluation.cox_test import KEYS, cox_statistic, cox_terms
from calib.evaluation.engine import evaluate, evaluate_chunks
from calib.evaluation.lens import lens_forecast_log_odds, lens_forecasts
from calib.evaluation.metrics import Batch
from calib.evaluation.partitioned import evaluate_partitioned
from calib.evaluation.segments import null_residuals
from calib.validation import CalibInputError

FAST = {"n_boot": 0, "calibrators": ()}


def _calibrated(n: int, seed: int, columns=((5,), (4,))):
    rng = np.random.default_rng(seed)
    p = expit(rng.normal(0, 1.3, n))
    y = (rng.random(n) < p).astype(int)
    groups = np.column_stack([rng.integers(0, c[0], n) for c in columns])
    return np.column_stack([1 - p, p]), y, groups


def _interaction(n: int, seed: int):
    """The benchmark's miscalibration that only a crossing shows (benchmarks/subgroup_tests.interaction)."""
    p, y, groups = interaction(n, seed)
    return np.column_stack([1 - p, p]), y, groups


def test_every_value_and_crossing_is_a_segment_named_by_its_columns():
    probs, y, groups = _calibrated(4_000, 0, ((2,), (3,)))
    s = evaluate(probs, y, kind="probs", groups=groups, group_column=("A", "B"), **FAST)
    names = [row.group for row in s.groups]
    assert names[:5] == ["A=0", "A=1", "B=0", "B=1", "B=2"]
    assert names[5:] == [f"A={a} & B={b}" for a in range(2) for b in range(3)]
    cells = pd.Series(1, index=pd.MultiIndex.from_arrays(groups.T)).groupby(level=[0, 1]).size()
    assert [row.n for row in s.groups[5:]] == cells.tolist()
    assert s.group_column == "A, B"
    alone = evaluate(probs, y, kind="probs", groups=groups, group_column=("A", "B"), segment_depth=1, **FAST)
    assert [row.group for row in alone.groups] == names[:5]


def test_the_search_p_value_is_the_share_of_draws_whose_largest_statistic_reaches_the_observed_one():
    probs, y, groups = _calibrated(6_000, 1)
    draws = 59
    s = evaluate(probs, y, kind="probs", groups=groups, group_column=("A", "B"), search_draws=draws, **FAST)
    # the same outcome draws (one block: block 0 from row 0), every statistic recomputed from its outcomes
    batch = Batch(np.log(probs), y)
    p, _ = lens_forecasts(batch)
    x = lens_forecast_log_odds(batch)
    drawn = null_residuals(s.settings.seed, 0, 0, p, None, draws) + p[:, None]
    segments = [groups[:, 0] == v for v in range(5)] + [groups[:, 1] == v for v in range(4)]
    segments += [(groups[:, 0] == a) & (groups[:, 1] == b) for a in range(5) for b in range(4)]
    segments = [rows for rows in segments if rows.any()]

    def statistic(outcomes, rows):
        terms = cox_terms(p[rows], outcomes[rows], x[rows])
        return cox_statistic(*(float(terms[key].values.sum()) for key in KEYS))[0]

    observed = max(statistic(y.astype(float), rows) for rows in segments)
    maxima = np.array([max(statistic(drawn[:, b], rows) for rows in segments) for b in range(draws)])
    search = s.multicalibration
    assert search.statistic == pytest.approx(observed, rel=1e-9)
    assert search.p_value == (1 + np.count_nonzero(maxima >= observed)) / (1 + draws)
    assert search.critical == pytest.approx(np.quantile(maxima, 0.95), rel=1e-9)
    assert search.searched == len(segments) and search.draws == draws


def test_the_search_p_value_is_uniform_on_calibrated_forecasts():
    p_values = []
    for seed in range(80):
        probs, y, groups = _calibrated(2_000, 100 + seed)
        s = evaluate(probs, y, kind="probs", groups=groups, group_column=("A", "B"), min_segment=30,
                     search_draws=99, seed=seed, **FAST)  # fmt: skip
        p_values.append(s.multicalibration.p_value)
    assert kstest(p_values, "uniform").pvalue > 0.01
    assert np.mean(np.array(p_values) < 0.05) <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 80)


def test_a_miscalibration_only_the_crossing_shows_is_found_and_named_as_that_crossing():
    used = 0
    for seed in range(6):
        probs, y, groups = _interaction(40_000, seed)
        s = evaluate(probs, y, kind="probs", groups=groups, group_column=("A", "B"), **FAST)
        by_name = {row.group: row for row in s.groups}
        if min(by_name[margin].p_value for margin in MARGINS) < 0.05:
            continue  # a column alone showed something by chance (5 % each): not the case asked about
        used += 1
        assert s.multicalibration.segment == CROSSING, seed
        assert s.multicalibration.p_value < 0.05, seed
        assert by_name[CROSSING].flagged and s.multicalibration.n == by_name[CROSSING].n
    assert used >= 3


def test_segments_below_the_minimum_are_reported_but_neither_tested_nor_searched():
    probs, y, groups = _calibrated(3_000, 2, ((2,), (40,)))
    s = evaluate(probs, y, kind="probs", groups=groups, group_column=("A", "B"), **FAST)  # min_segment 100
    small = [row for row in s.groups if row.n < 100]
    assert small and all(not row.tested and np.isnan(row.p_value) and not row.flagged for row in small)
    assert all(row.tested for row in s.groups if row.n >= 100)
    assert s.multicalibration.too_small == len(small)
    assert s.multicalibration.searched == sum(row.n >= 100 for row in s.groups)
    # with weights the size is Kish's effective size: a few heavy rows leave too few effective rows
    weights = np.ones(y.size)
    weights[groups[:, 0] == 0] = np.where(np.arange((groups[:, 0] == 0).sum()) < 3, 1e6, 1.0)
    w = evaluate(probs, y, kind="probs", groups=groups, group_column=("A", "B"), sample_weight=weights, **FAST)
    assert not next(row for row in w.groups if row.group == "A=0").tested
    assert next(row for row in w.groups if row.group == "A=1").tested


def test_no_segment_large_enough_leaves_no_search():
    probs, y, groups = _calibrated(300, 4)
    s = evaluate(probs, y, kind="probs", groups=groups, group_column=("A", "B"), min_segment=1000, **FAST)
    assert s.multicalibration is None and not any(row.tested for row in s.groups)


def test_crossed_segments_are_the_same_in_memory_in_chunks_and_in_partitions(tmp_path, monkeypatch):
    folder = write_log(tmp_path / "log", k=3, weights=True, channel=True)
    monkeypatch.setattr(partitioned, "PARTITION_ROWS", 3_000)
    options = {"n_boot": 20, "resample_buckets": 64, "calibrators": (), "min_segment": 50}
    columns = ("segment", "channel")
    table = table_chunks(folder, TableOptions(kind="probs", format="parquet", group_column=columns,
                                              weight_column="weight"))  # fmt: skip
    frame = pd.concat([pd.read_parquet(path) for path in sorted(folder.glob("*.parquet"))], ignore_index=True)
    probs = frame[[f"class_{i}" for i in range(3)]].to_numpy()
    labels = frame["label"].str.removeprefix("class_").astype(int).to_numpy()
    here = evaluate(probs, labels, kind="probs", groups=frame[list(columns)], sample_weight=frame["weight"].to_numpy(),
                    **options)  # fmt: skip
    assert len(here.groups) == 3 + 2 + 6 and here.multicalibration is not None
    assert_same(evaluate_chunks(table.chunks, n_classes=3, grouped=True, group_column=columns, **options), here)
    assert_same(evaluate_partitioned(table, grouped=True, group_column=columns, **options), here)


def test_the_command_crosses_its_group_columns_and_reports_the_search(tmp_path, capsys):
    probs, y, groups = _interaction(20_000, 5)
    frame = pd.DataFrame(probs, columns=["no", "yes"]).assign(label=np.array(["no", "yes"])[y], A=groups[:, 0],
                                                              B=groups[:, 1])  # fmt: skip
    frame.to_csv(tmp_path / "s.csv", index=False)
    out = tmp_path / "out"
    assert main(["evaluate", str(tmp_path / "s.csv"), "--groups", "A", "B", "--n-boot", "0", "--calibrators",
                 "none", "--json", "--out", str(out), "--quiet"]) == 0  # fmt: skip
    document = json.loads(capsys.readouterr().out)
    search = document["multicalibration"]
    assert {"segment", "n", "error", "p_value"} <= search.keys()
    assert search["segment"] == CROSSING and search["p_value"] < 0.05
    assert [row["group"] for row in document["groups"]["rows"]][4] == CROSSING
    assert {"segments.png", "segments.pdf", "groups.csv"} <= {p.name for p in out.iterdir()}
    table = pd.read_csv(out / "groups.csv", keep_default_na=False)
    assert table["tested"].all()
    assert table[["group: A", "group: B"]].iloc[4].tolist() == ["a1", "b1"]  # the crossing's values, column by column
    assert table[["group: A", "group: B"]].iloc[0].tolist() == ["a1", ""]  # A=a1 alone: no value of B
    assert document["groups"]["rows"][4]["values"] == {"A": "a1", "B": "b1"}
    assert main(["evaluate", str(tmp_path / "s.csv"), "--groups", "A", "B", "--n-boot", "0", "--calibrators",
                 "none", "--quiet"]) == 0  # fmt: skip
    text = capsys.readouterr().out
    assert "worst segment (multicalibration): 8 segments of at least 100 rows searched" in text
    assert CROSSING in text and "what to do" in text


def test_a_missing_group_column_and_too_many_segments_are_refused_by_name(tmp_path, capsys):
    probs, y, groups = _calibrated(3_000, 6, ((40,), (40,)))
    with pytest.raises(CalibInputError, match="segment_depth=1"):
        evaluate(probs, y, kind="probs", groups=groups, group_column=("A", "B"), **FAST)
    alone = evaluate(probs, y, kind="probs", groups=groups, group_column=("A", "B"), segment_depth=1, **FAST)
    assert len(alone.groups) == 80  # the advice runs
    with pytest.raises(CalibInputError, match="name each of the 2 group columns once"):
        evaluate(probs, y, kind="probs", groups=groups, group_column=("A", "A"), **FAST)
    pd.DataFrame(probs, columns=["no", "yes"]).assign(label=y, A=groups[:, 0]).to_csv(tmp_path / "s.csv", index=False)
    assert main(["evaluate", str(tmp_path / "s.csv"), "--groups", "A", "site", "--quiet"]) == 1
    assert "has no column 'site' (--groups)" in capsys.readouterr().err


def test_a_group_column_named_twice_or_the_label_column_is_refused_and_the_advice_runs(tmp_path, capsys):
    probs, y, groups = _calibrated(1_000, 7)
    frame = pd.DataFrame(probs, columns=["no", "yes"]).assign(label=np.array(["no", "yes"])[y], A=groups[:, 0])
    frame.to_csv(tmp_path / "s.csv", index=False)
    quick = ["--n-boot", "0", "--calibrators", "none", "--quiet"]
    assert main(["evaluate", str(tmp_path / "s.csv"), "--groups", "A", "A", *quick]) == 1
    assert "--groups names A more than once; name each group column once" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path / "s.csv"), "--groups", "A", "label", *quick]) == 1
    assert "--groups label is the label column" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path / "s.csv"), "--groups", "A", *quick]) == 0
    assert "worst segment (multicalibration): 5 segments" in capsys.readouterr().out


def test_certain_forecasts_are_searched_when_one_was_wrong_and_said_untestable_when_all_were_right():
    rng = np.random.default_rng(8)
    n = 2_000
    p = rng.uniform(0.05, 0.95, n)
    y = (rng.random(n) < p).astype(int)
    segment = np.where(np.arange(n) < 300, "certain", "other").astype(object)
    p[:300] = rng.random(300) < 0.5  # forecasts of exactly 0 or 1, each right
    y[:300] = p[:300]
    s = evaluate(np.column_stack([1 - p, p]), y, kind="probs", groups=segment, **FAST)
    certain = s.groups[0]
    assert not certain.tested and certain.untested.startswith("no information") and np.isnan(certain.p_value)
    assert (s.multicalibration.searched, s.multicalibration.untestable, s.multicalibration.too_small) == (1, 1, 0)
    y[0] = 1 - y[0]  # one certain forecast wrong: infinitely strong evidence, and the search finds it
    s = evaluate(np.column_stack([1 - p, p]), y, kind="probs", groups=segment, **FAST)
    assert s.groups[0].tested and s.groups[0].flagged and s.groups[0].statistic == np.inf
    assert s.multicalibration.segment == "certain" and s.multicalibration.searched == 2
    assert s.multicalibration.p_value == 1 / (1 + s.multicalibration.draws)


def test_groups_with_pandas_missing_values_or_mixed_kinds_are_read_as_the_files_read_them():
    probs, y, _ = _calibrated(1_000, 9)
    site = pd.array(np.where(np.arange(1_000) % 2, "north", "south"), dtype="string")
    site[7] = pd.NA
    with pytest.raises(CalibInputError, match="1 samples have no group .* first at row 7"):
        evaluate(probs, y, kind="probs", groups=pd.DataFrame({"site": site}), **FAST)
    mixed = np.array([12, "A1"] * 500, dtype=object)  # a hand-typed column: numbers and codes
    s = evaluate(probs, y, kind="probs", groups=mixed, **FAST)
    assert [row.group for row in s.groups] == ["12", "A1"]
