"""Tests of pipeline.references' ``sd_factor`` tolerance rule: k times our own sd (column "<column> sd")."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from pipeline.references import compare, tolerance_for

PUBLISHED = """\
bin,a ECD,a ECE,b ECD
1,1.0000,0.2000,0.5000
2,-0.5000,0.1000,0.2500
"""


def _experiment(tmp_path, tolerances, **extra):
    (tmp_path / "t.csv").write_text(PUBLISHED)
    reference = {"file": "t.csv", "layout": "wide", "row": "bin", "tolerances": tolerances, **extra}
    return OmegaConf.create({"paper": "p004", "artifact": "table1", "reference": reference})


def _values(cells: dict) -> pd.DataFrame:
    lines = [
        {"row": r, "column": c, "x": np.nan, "value": v, "ci_low": np.nan, "ci_high": np.nan}
        for (r, c), v in cells.items()
    ]
    return pd.DataFrame(lines)


def _lines(frame: pd.DataFrame) -> dict:
    return {(r.row, r.column): r for r in frame.itertuples(index=False)}


OURS = {
    # ours - published = +0.05 with sd 0.02: inside 3 sd (0.06).
    ("1", "a ECD"): 1.05,
    ("1", "a ECD sd"): 0.02,
    # ours - published = -0.07 with sd 0.02: outside 3 sd.
    ("2", "a ECD"): -0.57,
    ("2", "a ECD sd"): 0.02,
    # 0.21 vs 0.20 with sd 0.001: outside 3 sd (0.003) though small in absolute terms.
    ("1", "a ECE"): 0.21,
    ("1", "a ECE sd"): 0.001,
    # 0.1 vs 0.1 + 0.03 with sd 0.01: exactly on the edge (|diff| = 3 sd) passes.
    ("2", "a ECE"): 0.13,
    ("2", "a ECE sd"): 0.01,
    ("1", "b ECD"): 0.9,
    ("2", "b ECD"): 0.25,
}


def test_sd_factor_passes_within_and_fails_outside(tmp_path):
    exp = _experiment(tmp_path, [{"sd_factor": 3}])
    frame = compare(exp, _values(OURS | {("1", "b ECD sd"): 0.2, ("2", "b ECD sd"): 0.0}), tmp_path)
    lines = _lines(frame)
    # Only the published cells are compared: the "<column> sd" values are ours alone.
    assert len(frame) == 6
    assert not any(c.endswith(" sd") for c in frame.column)
    line = lines[("1", "a ECD")]
    assert line.tolerance == pytest.approx(0.06, abs=1e-15)  # 3 * 0.02
    assert line.difference == pytest.approx(0.05, abs=1e-12)
    assert line.status == "pass"
    line = lines[("2", "a ECD")]
    assert line.tolerance == pytest.approx(0.06, abs=1e-15)
    assert line.status == "fail"
    assert lines[("1", "a ECE")].tolerance == pytest.approx(0.003, abs=1e-15)
    assert lines[("1", "a ECE")].status == "fail"
    assert lines[("2", "a ECE")].status == "pass"  # |diff| = k sd, up to float rounding
    # 0.9 vs 0.5 with sd 0.2: |diff| = 0.4 <= 0.6 passes; an sd of 0 demands equality.
    assert lines[("1", "b ECD")].status == "pass"
    assert lines[("2", "b ECD")].tolerance == 0.0
    assert lines[("2", "b ECD")].status == "pass"


def test_sd_factor_scales_with_k(tmp_path):
    # Same cell, same sd: k = 2 fails (0.05 > 0.04), k = 3 passes (0.05 <= 0.06).
    values = _values(OURS | {("1", "b ECD sd"): 1.0, ("2", "b ECD sd"): 1.0})
    for k, status in ((2, "fail"), (3, "pass"), (2.5, "pass")):
        frame = compare(_experiment(tmp_path, [{"sd_factor": k}]), values, tmp_path)
        line = _lines(frame)[("1", "a ECD")]
        assert line.tolerance == pytest.approx(k * 0.02, abs=1e-15)
        assert line.status == status


def test_missing_sd_raises_naming_the_cell(tmp_path):
    exp = _experiment(tmp_path, [{"sd_factor": 3}])
    # "b ECD" has no "b ECD sd" entry in OURS.
    with pytest.raises(ValueError, match=r"\(1, b ECD\).*'b ECD sd'"):
        compare(exp, _values(OURS), tmp_path)


def test_non_finite_sd_raises(tmp_path):
    exp = _experiment(tmp_path, [{"column": "b*", "sd_factor": 3}, {"tol": None}])
    with pytest.raises(ValueError, match=r"\(2, b ECD\)"):
        compare(exp, _values(OURS | {("1", "b ECD sd"): 0.1, ("2", "b ECD sd"): np.nan}), tmp_path)


def test_tolerance_for_without_our_values_raises(tmp_path):
    ref = _experiment(tmp_path, [{"sd_factor": 3}]).reference
    with pytest.raises(ValueError, match="a ECD sd"):
        tolerance_for(ref, "1", "a ECD")
    ours = _values(OURS).set_index(["row", "column"]).value
    assert tolerance_for(ref, "1", "a ECD", ours) == pytest.approx(0.06, abs=1e-15)


def test_rules_are_first_match(tmp_path):
    exp = _experiment(tmp_path, [{"column": "a*", "sd_factor": 3}, {"tol": None}])
    # No sd for "b ECD" is needed: its cells fall through to the catch-all.
    frame = compare(exp, _values(OURS), tmp_path)
    lines = _lines(frame)
    for row in ("1", "2"):
        line = lines[(row, "b ECD")]
        assert line.status == "reported"
        assert line.tolerance is None or np.isnan(line.tolerance)
    assert lines[("1", "b ECD")].difference == pytest.approx(0.4, abs=1e-12)
    assert lines[("1", "a ECD")].status == "pass"
    assert lines[("2", "a ECD")].status == "fail"
    # The order matters: the catch-all first swallows every cell.
    frame = compare(_experiment(tmp_path, [{"tol": None}, {"column": "a*", "sd_factor": 3}]), _values(OURS), tmp_path)
    assert set(frame.status) == {"reported"}


def test_sd_factor_with_row_pattern(tmp_path):
    # A rule restricted to row 1 with a fixed tolerance after it for the rest.
    exp = _experiment(tmp_path, [{"row": "1", "sd_factor": 3}, {"tol": 0.1}])
    frame = compare(exp, _values(OURS | {("1", "b ECD sd"): 0.2}), tmp_path)
    lines = _lines(frame)
    assert lines[("1", "a ECD")].tolerance == pytest.approx(0.06, abs=1e-15)
    assert lines[("2", "a ECD")].tolerance == pytest.approx(0.1)
    assert lines[("2", "a ECD")].status == "pass"  # |diff| 0.07 <= 0.1
    assert lines[("2", "a ECE")].status == "pass"  # |diff| 0.03 <= 0.1


def test_sd_factor_on_a_percent_column(tmp_path):
    # The paper prints "a ECE" in percent: ours 0.21 is compared as 21.0 against the published 20.0. Our sd
    # 0.01 is 1.0 in percent, so 3 sd = 3.0 percentage points and |21 - 20| = 1 passes (the sd is scaled
    # like the value; in fraction units the tolerance would be 0.03 and the cell would fail).
    (tmp_path / "t.csv").write_text("bin,a ECE\n1,20.0\n")
    reference = {"file": "t.csv", "layout": "wide", "row": "bin", "percent_columns": ["a ECE"]}
    exp = OmegaConf.create(
        {"paper": "p004", "artifact": "t", "reference": reference | {"tolerances": [{"sd_factor": 3}]}}
    )
    frame = compare(exp, _values({("1", "a ECE"): 0.21, ("1", "a ECE sd"): 0.01}), tmp_path)
    line = frame.iloc[0]
    assert line.ours == pytest.approx(21.0)
    assert line.tolerance == pytest.approx(3.0)
    assert line.status == "pass"
