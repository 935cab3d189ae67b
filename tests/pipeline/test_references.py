"""Tests of pipeline.references: reading published tables, derived tolerances, statuses and checked causes."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from pipeline.claims import CLAIM_COLUMNS, claims_table
from pipeline.companions import monte_carlo_records
from pipeline.config_blocks import Reference
from pipeline.io import values_path
from pipeline.kinds import Parameters
from pipeline.parameters import typed
from pipeline.references import (
    EXACT_TOLERANCE,
    K_SD,
    REPORT_COLUMNS,
    compare,
    consults_other_experiments,
    half_unit,
    published_cells,
    tolerance_for,
)
from pipeline.root import root_of
from pipeline.statuses import STATUSES
from pipeline.steps.report import comparisons, misses, summary

REFERENCES = Path(__file__).resolve().parents[2] / "configs" / "reference"


def _parameters(name: str) -> Parameters:
    """The typed parameters of a configured experiment, as the workflow composes and types them."""
    return root_of([f"experiment={name}"]).experiment


def _reference(**block) -> Reference:
    """A reference block as its config would declare it (rules as mappings), typed; ``file`` and ``layout``
    default to a wide ``t.csv``."""
    return typed(Reference, {"file": "t.csv", "layout": "wide", **block}, "reference")


def _write(tmp_path, name: str, text: str):
    (tmp_path / name).write_text(text)
    return tmp_path


def _cells(frame: pd.DataFrame) -> dict:
    return {(r.row, r.column): r.published for r in frame.itertuples(index=False)}


# ---------------------------------------------------------------------------------------------- half_unit


@pytest.mark.parametrize(
    ("printed", "expected"),
    [("0.60", 0.005), ("0.6", 0.05), ("75", 0.5), ("-3", 0.5), ("1.000", 0.0005), ("4.995", 0.0005),
     ("0.0003", 0.00005), ("-0.0006", 0.00005), ("10.00", 0.005), ("nan", 0.0), ("inf", 0.0), ("-inf", 0.0)],
)  # fmt: skip
def test_half_unit_of_the_printed_digit(printed, expected):
    assert half_unit(printed) == pytest.approx(expected, rel=1e-12, abs=0)


# ---------------------------------------------------------------------------------------------- published_cells

WIDE = """\
system,posteriors,NCE,ECE,RCL
S1 big,raw,0.512,12.50,nan
S1 big,cal,0.300,,inf
10,raw,,3.0,-inf
"""


def test_wide_layout_keeps_the_printed_text(tmp_path):
    ref = _reference(row=["system", "posteriors"], skip_values=[""])
    frame = published_cells(ref, _write(tmp_path, "t.csv", WIDE))
    assert list(frame.columns) == ["row", "column", "published", "printed"]
    assert set(frame.row) == {"S1 big raw", "S1 big cal", "10 raw"}  # a numeric-looking key stays text
    printed = {(r.row, r.column): r.printed for r in frame.itertuples(index=False)}
    assert printed[("S1 big raw", "ECE")] == "12.50" and printed[("10 raw", "ECE")] == "3.0"
    cells = _cells(frame)
    assert cells[("S1 big raw", "ECE")] == pytest.approx(12.5)
    assert ("S1 big cal", "ECE") not in cells and ("10 raw", "NCE") not in cells  # placeholders dropped
    assert math.isnan(cells[("S1 big raw", "RCL")]) and cells[("S1 big cal", "RCL")] == math.inf
    assert cells[("10 raw", "RCL")] == -math.inf
    assert len(frame) == 7


LONG = """\
reference,system,N,percent
true,cal,200,-3
true,mcs,2000,5
affcalxv,cal,200,12
affcalxv,mcs,2000,-
"""


def test_long_layout_with_a_column_template(tmp_path):
    ref = _reference(layout="long", row="reference", column="{system} N={N}", value="percent", skip_values=["-"])
    frame = published_cells(ref, _write(tmp_path, "t.csv", LONG))
    assert frame.row.tolist() == ["true", "true", "affcalxv"]
    assert frame.column.tolist() == ["cal N=200", "mcs N=2000", "cal N=200"]
    assert frame.published.tolist() == [-3, 5, 12]


def test_missing_reference_file(tmp_path):
    ref = _reference(file="absent.csv", row="system")
    with pytest.raises(FileNotFoundError, match=r"absent\.csv"):
        published_cells(ref, tmp_path)


# ---------------------------------------------------------------------------------------------- tolerance_for


def _ours(cells: dict) -> pd.Series:
    return pd.Series(cells, dtype=float)


def test_tolerance_is_half_a_unit_of_the_printed_digit():
    ref = _reference(percent_columns=["ECE"])
    tol = tolerance_for(ref, "a", "NCE", "0.512", _ours({}))
    assert tol.value == pytest.approx(0.0005) and "'0.512'" in tol.basis
    assert tolerance_for(ref, "a", "ECE", "12.5", _ours({})).value == pytest.approx(0.05)


def test_decimals_rule_and_exact_rule():
    ref = _reference(decimals=[{"column": "NCE", "decimals": 3}], exact=[{"row": "perfect"}])
    assert tolerance_for(ref, "a", "NCE", "0.5", _ours({})).value == pytest.approx(0.0005)
    exact = tolerance_for(ref, "perfect", "eta", "0", _ours({}))
    assert exact.value == EXACT_TOLERANCE and "exactly" in exact.basis


def test_monte_carlo_cells_add_k_sd_in_printed_units():
    ref = _reference(percent_columns=["ECE"])
    ours = _ours({("a", "ECE [sd]"): 0.002, ("a", "NCE [sd]"): 0.01})
    assert tolerance_for(ref, "a", "ECE", "1.2", ours).value == pytest.approx(0.05 + K_SD * 0.2)
    tol = tolerance_for(ref, "a", "NCE", "0.50", ours)
    assert tol.value == pytest.approx(0.005 + K_SD * 0.01) and "sd over seeds" in tol.basis


def test_input_rounding_widens_the_tolerance():
    ref = _reference(percent_columns=["*"])
    tol = tolerance_for(ref, "MRR", "NLL", "144.66", _ours({("MRR", "NLL [input rounding]"): 0.0004}))
    assert tol.value == pytest.approx(0.005 + 0.04) and "inputs' rounding" in tol.basis


# ---------------------------------------------------------------------------------------------- compare

PUBLISHED = """\
system,posteriors,NCE,NRisk,ECE
A,raw,0.500,0.500,12.3
A,calh,0.400,,
B,raw,inf,nan,
C,raw,nan,,
D,raw,0.700,,
SITW x,raw,0.900,0.800,
E,raw,0.500,inf,1.0
"""

OURS = {
    ("A raw", "NCE"): 0.5004,  # within 0.0005
    ("A raw", "NRisk"): 0.502,  # outside 0.0005
    ("A raw", "ECE"): 0.1231,  # 12.31 % against 12.3, tolerance 0.05
    ("A calh", "NCE"): 0.45,
    ("B raw", "NCE"): math.inf,
    ("B raw", "NRisk"): math.nan,
    ("C raw", "NCE"): 0.3,
    # ("D raw", "NCE"): none of ours
    ("SITW x raw", "NCE"): 0.9,
    ("E raw", "NCE"): 0.5005,  # exactly at the tolerance
    ("E raw", "NRisk"): 1e300,  # published inf, ours finite
    ("E raw", "ECE"): math.inf,  # published finite, ours inf
    ("Z raw", "NCE"): 0.1,  # no published cell: not in the report
}


def _experiment(artifact: str = "table9", **reference) -> Parameters:
    """The typed parameters of an experiment of a paper p000 with a reference block (``reference`` keys
    replace the block's)."""
    block = {
        "row": ["system", "posteriors"],
        "skip_values": [""],
        "percent_columns": ["ECE*"],
        "cells": [
            {"row": "SITW*", "status": "not-reproducible", "cause": "scores missing upstream"},
            {"row": "A calh", "status": "informational", "cause": "another network"},
        ],
    }
    block.update(reference)
    return Parameters(paper="p000", kind="table", artifact=artifact, reference=_reference(**block))


def _values(ours: dict) -> pd.DataFrame:
    lines = [{"row": r, "column": c, "x": np.nan, "value": v} for (r, c), v in ours.items()]
    # curve points (x not NaN) are not table cells and must be ignored
    lines.append({"row": "A raw", "column": "NCE", "x": 0.5, "value": 99.0})
    return pd.DataFrame(lines)


@pytest.fixture
def report(tmp_path):
    _write(tmp_path, "t.csv", PUBLISHED)
    frame = compare(_experiment(), _values(OURS), tmp_path)
    return frame, {(r.row, r.column): r for r in frame.itertuples(index=False)}


def test_compare_report_shape(report):
    frame, lines = report
    assert list(frame.columns) == REPORT_COLUMNS
    assert set(frame.status) <= set(STATUSES)
    assert len(frame) == 13  # one line per published cell, none for our extra values
    assert ("Z raw", "NCE") not in lines and ("A calh", "NRisk") not in lines


def test_compare_within_and_outside_the_derived_tolerance(report):
    _, lines = report
    inside = lines[("A raw", "NCE")]
    assert inside.status == "pass" and inside.ours == pytest.approx(0.5004)  # the curve point was not used
    assert inside.tolerance == pytest.approx(0.0005) and "half a unit" in inside.tolerance_basis
    outside = lines[("A raw", "NRisk")]
    assert outside.status == "fail" and outside.cause == "no verified cause"
    assert outside.difference == pytest.approx(0.002)
    assert lines[("E raw", "NCE")].status == "pass"  # |difference| == tolerance passes
    percent = lines[("A raw", "ECE")]
    assert percent.ours == pytest.approx(12.31) and percent.tolerance == pytest.approx(0.05)
    assert percent.status == "pass"


def test_compare_non_finite_published_values(report):
    _, lines = report
    assert lines[("B raw", "NCE")].status == "pass"  # inf vs inf
    assert lines[("B raw", "NRisk")].status == "pass"  # nan vs nan
    assert lines[("C raw", "NCE")].status == "fail"  # nan vs 0.3
    assert lines[("E raw", "NRisk")].status == "fail"  # inf vs a finite number
    assert lines[("E raw", "ECE")].status == "fail"  # finite vs inf


def test_compare_declared_cells_keep_ours_and_say_why(report):
    _, lines = report
    other = lines[("A calh", "NCE")]
    assert other.status == "informational" and other.ours == pytest.approx(0.45)
    assert other.cause == "another network (outside tolerance)"
    for column in ("NCE", "NRisk"):
        line = lines[("SITW x raw", column)]
        assert line.status == "not-reproducible" and line.cause == "scores missing upstream"


def test_compare_published_cell_without_ours_fails(report):
    _, lines = report
    line = lines[("D raw", "NCE")]
    assert line.status == "fail" and math.isnan(line.ours) and "no value" in line.cause


def test_an_artifact_not_built_here_is_not_run_here(tmp_path):
    _write(tmp_path, "t.csv", PUBLISHED)
    frame = compare(_experiment(), None, tmp_path, missing="the real sets are not in the mirror")
    assert set(frame.status) == {"not-run-here", "not-reproducible", "informational"}
    assert (frame[frame.status == "not-run-here"].cause == "the real sets are not in the mirror").all()


# ---------------------------------------------------------------------------------------------- deviations

DEVIATING = "system,posteriors,NCE,ECE\nA,raw,0.500,12.3\n"


def _deviation(tmp_path, check, ours: dict, cause="a cause"):
    _write(tmp_path, "t.csv", DEVIATING)
    exp = _experiment(cells=[], deviations=[{"column": "NCE", "cause": cause, "check": check}])
    return {r.column: r for r in compare(exp, _values(ours), tmp_path, {}).itertuples(index=False)}


def test_rerun_check_holds_only_when_the_rerun_lands_on_the_published_number(tmp_path):
    held = _deviation(tmp_path, {"rerun": "upstream"}, {("A raw", "NCE"): 0.51, ("A raw", "NCE [upstream]"): 0.5003})
    assert held["NCE"].status == "deviation"
    assert held["NCE"].cause.startswith("a cause: the upstream rerun gives 0.5003")
    missed = _deviation(tmp_path, {"rerun": "upstream"}, {("A raw", "NCE"): 0.51, ("A raw", "NCE [upstream]"): 0.507})
    assert missed["NCE"].status == "fail" and missed["NCE"].cause.startswith("declared cause not confirmed")
    absent = _deviation(tmp_path, {"rerun": "upstream"}, {("A raw", "NCE"): 0.51})
    assert absent["NCE"].status == "fail"


def test_rerun_check_of_a_monte_carlo_rerun_uses_its_own_spread(tmp_path):
    ours = {("A raw", "NCE"): 0.51, ("A raw", "NCE [upstream]"): 0.503, ("A raw", "NCE [upstream] [sd]"): 0.001}
    assert _deviation(tmp_path, {"rerun": "upstream"}, ours)["NCE"].status == "deviation"  # 0.003 <= 0.0005 + 3e-3
    ours[("A raw", "NCE [upstream] [sd]")] = 0.0005
    assert _deviation(tmp_path, {"rerun": "upstream"}, ours)["NCE"].status == "fail"


def test_difference_check_is_the_rounded_parts_subtracted(tmp_path):
    # printed 0.500 = round(0.9124, 3) - round(0.4119, 3) = 0.912 - 0.412, though ours is 0.5005 (0.501 rounded)
    check = {"difference": {"total": "total", "minus": "part"}}
    parts = {("A raw", "total"): 0.9124, ("A raw", "part"): 0.4119}
    held = _deviation(tmp_path, check, {("A raw", "NCE"): 0.5007, **parts})["NCE"]
    assert held.status == "deviation" and "0.912 - 0.412 = 0.500" in held.cause
    parts[("A raw", "part")] = 0.4109  # 0.912 - 0.411 = 0.501
    assert _deviation(tmp_path, check, {("A raw", "NCE"): 0.5007, **parts})["NCE"].status == "fail"


def test_recorded_check_reads_the_authors_code_rerun_beside_the_published_file(tmp_path):
    _write(tmp_path, "rerun.csv", "system,posteriors,NCE\nA,raw,0.50021\n")
    held = _deviation(tmp_path, {"recorded": "rerun.csv"}, {("A raw", "NCE"): 0.51})["NCE"]
    assert held.status == "deviation" and held.cause.endswith("their code gave 0.50021 (rerun.csv)")
    _write(tmp_path, "rerun.csv", "system,posteriors,NCE\nA,raw,0.5007\n")  # beyond half a unit of 0.500
    assert _deviation(tmp_path, {"recorded": "rerun.csv"}, {("A raw", "NCE"): 0.51})["NCE"].status == "fail"
    _write(tmp_path, "rerun.csv", "system,posteriors,ECE\nA,raw,12.3\n")
    missing = _deviation(tmp_path, {"recorded": "rerun.csv"}, {("A raw", "NCE"): 0.51})["NCE"]
    assert missing.status == "fail" and "has no value for this cell" in missing.cause


def test_a_reading_fitted_to_the_same_cells_is_no_evidence(tmp_path):
    """Issue 40: a cause is checked only by a reading whose constants were not fitted to the cells it explains."""
    _write(tmp_path, "t.csv", DEVIATING)
    for fitted, expected in ((None, "deviation"), ("its constants were chosen to match this table", "fail")):
        verdicts: dict = {}
        second = {"reading": "second", "reading_cause": "another generator"} | ({"fitted": fitted} if fitted else {})
        other = _experiment("table9b", cells=[], **second)
        compare(other, _values({("A raw", "NCE"): 0.5002}), tmp_path, verdicts)
        exp = _experiment(cells=[], deviations=[{"cause": "the generator", "check": {"reading": "p000_table9b"}}])
        line = compare(exp, _values({("A raw", "NCE"): 0.9}), tmp_path, verdicts).set_index("column").loc["NCE"]
        assert line.status == expected
        assert (fitted in line.cause and "no evidence of a cause" in line.cause) if fitted else True


def test_a_tolerance_as_large_as_the_published_value_has_no_power(tmp_path):
    """Issue 40: a cell whose tolerance is at least the published value is informational, not a pass."""
    _write(tmp_path, "t.csv", "system,posteriors,NCE,ECE\nA,raw,0.0050,0.00\n")
    exp = _experiment(cells=[])
    ours = {("A raw", "NCE"): 0.004, ("A raw", "NCE [sd]"): 0.002, ("A raw", "ECE"): 0.00001}  # ECE in percent
    lines = compare(exp, _values(ours), tmp_path, {}).set_index("column")
    assert lines.loc["NCE"].status == "informational" and lines.loc["NCE"].cause.startswith("no power: the tolerance")
    assert lines.loc["ECE"].status == "pass"  # a printed 0 is a test: ours must be below half its digit
    ours[("A raw", "NCE [sd]")] = 0.0001  # 0.00005 + 3e-4 < 0.005: a test again
    assert compare(exp, _values(ours), tmp_path, {}).set_index("column").loc["NCE"].status == "fail"


def test_a_repeated_printed_number_and_an_unprinted_one_are_not_counted(tmp_path):
    """Issue 40: a number the paper prints twice is counted once; a number it does not print is not counted."""
    _write(tmp_path, "t.csv", DEVIATING)
    exp = _experiment(
        cells=[],
        repeats=[{"column": "NCE", "of": "p000_table1 A / NCE"}],
        not_printed=[{"column": "ECE", "source": "a rerun of the authors' code"}],
    )
    frame = compare(exp, _values({("A raw", "NCE"): 0.5, ("A raw", "ECE"): 12.3}), tmp_path, {})
    lines = frame.set_index("column")
    assert lines.loc["NCE"].reading == "repeat of p000_table1 A / NCE" and lines.loc["NCE"].status == "informational"
    assert lines.loc["NCE"].cause == "repeats the number printed at p000_table1 A / NCE (counted there); pass"
    assert lines.loc["ECE"].reading == "not printed" and "a rerun of the authors' code" in lines.loc["ECE"].cause
    assert summary(frame, ["p000"]).set_index("paper").loc["p000", "published"] == 0


def test_reading_check_consults_the_other_reading(tmp_path):
    _write(tmp_path, "t.csv", DEVIATING)
    verdicts: dict = {}
    other = _experiment("table9b", cells=[], reading="second", reading_cause="the other generator")
    second = compare(other, _values({("A raw", "NCE"): 0.5002}), tmp_path, verdicts)
    assert set(second.status) == {"informational"}  # a second reading is never a verdict
    assert second[second.column == "NCE"].cause.item() == "second reading: the other generator; pass"
    assert second[second.column == "ECE"].cause.item().startswith("second reading: the other generator; fail")
    exp = _experiment(cells=[], deviations=[{"cause": "the text's generator", "check": {"reading": "p000_table9b"}}])
    primary = compare(exp, _values({("A raw", "NCE"): 0.9}), tmp_path, verdicts)
    assert primary[primary.column == "NCE"].status.item() == "deviation"
    assert primary[primary.column == "ECE"].status.item() == "fail"


def test_the_report_resolves_a_reading_check_on_an_experiment_compared_after_it(tmp_path):
    _write(tmp_path, "t.csv", DEVIATING)
    primary = _experiment(
        cells=[], deviations=[{"cause": "the text's generator", "check": {"reading": "p000_table9b"}}]
    )
    other = _experiment("table9b", cells=[], reading="second", reading_cause="the other generator")
    cfg = OmegaConf.create({"paths": {"results": str(tmp_path), "references": str(tmp_path)}})
    loaded = {
        "p000_table9": (_values({("A raw", "NCE"): 0.9}), ""),
        "p000_table9b": (_values({("A raw", "NCE"): 0.5002}), ""),
    }
    frame = comparisons(cfg, [primary, other], loaded)  # the primary reading first: its check looks ahead
    mine = frame[frame.artifact == "table9"]
    assert mine[mine.column == "NCE"].status.item() == "deviation"
    assert "p000_table9b gives 0.5002, within its tolerance" in mine[mine.column == "NCE"].cause.item()
    assert list(frame.artifact.drop_duplicates()) == ["table9", "table9b"]  # in the experiments' order


def test_second_readings_are_listed_beside_the_primary_cell(tmp_path):
    _write(tmp_path, "t.csv", DEVIATING)
    rule = {"column": "*", "ours": "{column} exact", "cause": "exact arithmetic"}
    exp = _experiment(cells=[], second_readings=[rule])
    ours = {("A raw", "NCE"): 0.5, ("A raw", "NCE exact"): 0.5012, ("A raw", "ECE"): 0.123}
    frame = compare(exp, _values(ours), tmp_path)
    assert frame.reading.tolist() == ["primary", "NCE exact", "primary"]  # ECE has no exact value: no line
    second = frame.iloc[1]
    assert second.status == "informational" and second.cause == "second reading: exact arithmetic (outside tolerance)"


# ---------------------------------------------------------------------------------------------- Monte-Carlo cells


def test_monte_carlo_records_and_non_finite_outcomes(tmp_path):
    records = {r["column"]: r["value"] for r in monte_carlo_records("A raw", "NCE", [0.4, 0.6, math.inf, 0.5])}
    assert records == {"NCE": 0.5, "NCE [sd]": pytest.approx(0.1), "NCE [share inf]": 0.25, "NCE [share nan]": 0.0}
    assert monte_carlo_records("a", "b", [math.nan, math.nan])[0]["value"] != monte_carlo_records("a", "b", [1])[0]
    _write(tmp_path, "t.csv", "system,posteriors,NCE,ECE\nA,raw,inf,nan\n")
    ours = {(r["row"], r["column"]): r["value"] for r in monte_carlo_records("A raw", "NCE", [0.4, 0.6, math.inf])}
    ours |= {(r["row"], r["column"]): r["value"] for r in monte_carlo_records("A raw", "ECE", [0.4, 0.6, 0.5])}
    frame = compare(_experiment(cells=[]), _values(ours), tmp_path)
    assert frame.status.tolist() == ["pass", "fail"]  # one seed drew inf; no seed drew nan


# ---------------------------------------------------------------------------------------------- summaries


def test_summary_counts_each_published_number_once(tmp_path):
    _write(tmp_path, "t.csv", PUBLISHED)
    frame = compare(_experiment(second_readings=[{"ours": "{column}", "cause": "same"}]), _values(OURS), tmp_path)
    assert (frame.reading != "primary").sum() > 0
    counts = summary(frame, ["p000", "p001"]).set_index("paper")
    assert counts.loc["p000", "published"] == 13 and counts.loc["p001", "published"] == 0
    assert counts.loc["p000", list(STATUSES)].sum() == 13
    assert set(misses(frame).status) == {"fail"}


# ---------------------------------------------------------------------------------------------- typed configs


def test_a_configured_experiment_is_compared_from_its_typed_parameters(tmp_path):
    exp = _parameters("ferrer2024_table2")
    ref = exp.reference
    assert isinstance(ref, Reference) and all(not isinstance(rule.check, str) for rule in ref.deviations)
    cells = published_cells(ref, REFERENCES)
    assert len(cells) > 0 and not cells.duplicated(["row", "column"]).any()
    frame = compare(exp, None, REFERENCES, missing="not built in this test")
    assert len(frame) >= len(cells) and set(frame.paper) == {"ferrer2024"} and set(frame.artifact) == {"table2"}
    assert not consults_other_experiments(exp)
    assert consults_other_experiments(_parameters("ecd2025_table1_logit"))  # a `reading` check on ecd2025_table1


def test_an_experiment_without_a_reference_block_consults_no_other():
    assert not consults_other_experiments(Parameters(paper="p000", kind="figure", artifact="fig1"))


# ---------------------------------------------------------------------------------------------- claims


def test_claims_are_checked_on_the_typed_experiments_whose_values_were_built(tmp_path):
    fig17, fig18 = _parameters("silvafilho2023_fig17"), _parameters("silvafilho2023_fig18")
    cells = {"NLL raw": 0.5, "NLL calibrated": 0.4, "accuracy raw": 0.9, "accuracy calibrated": 0.9}
    values = pd.DataFrame({"row": "all", "column": list(cells), "x": np.nan, "value": list(cells.values())})
    path = values_path(tmp_path, fig17)
    path.parent.mkdir(parents=True)
    values.to_csv(path, index=False)  # fig18's values are not built: its claims are left out
    table = claims_table(tmp_path, [fig17, fig18])
    assert list(table.columns) == CLAIM_COLUMNS
    assert set(table.artifact) == {"fig17"} and set(table.holds) == {"yes"}
    assert set(table.claim) == {"the multiclass calibrator improves the MLP's log-loss",
                                "temperature scaling keeps the accuracy"}  # fmt: skip
