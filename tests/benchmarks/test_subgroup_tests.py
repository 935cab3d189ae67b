"""The subgroups' flags (benchmarks/subgroup_tests.py) in small: a segment forecast 0.2 below its truth near p = 0.5
is flagged, where Spiegelhalter's z is blind, and so is an over-confident one; calibrated data of 100 groups
flag nothing."""

from __future__ import annotations

from benchmarks.subgroup_tests import CELLS, PLANTED, replicate


def test_a_segment_off_near_one_half_is_flagged_by_the_test_and_missed_by_spiegelhalters_z():
    cell = CELLS["near one half"] | {"rows": 200_000}  # 4000 planted rows
    for seed in range(3):
        flags = replicate(cell, seed)
        assert flags["flagged"] == [PLANTED]
        assert PLANTED not in flags["z flagged"]


def test_an_over_confident_segment_is_flagged_and_calibrated_groups_are_not():
    assert replicate(CELLS["over-confident"] | {"rows": 200_000}, 0)["flagged"] == [PLANTED]
    assert replicate(CELLS["calibrated, 100 groups"], 0)["flagged"] == []


def test_the_readme_shows_the_full_studys_table():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    table = (root / "benchmarks" / "subgroup_tests.md").read_text().strip()
    assert table and table in (root / "README.md").read_text()


def test_the_search_names_a_crossing_and_the_readme_shows_what_segments_cost(monkeypatch):
    from pathlib import Path

    from benchmarks import segment_cost
    from benchmarks.subgroup_tests import CROSSING

    found = replicate(CELLS["crossing only"] | {"rows": 40_000}, 0)
    assert found["searched"] == CROSSING and found["search p"] < 0.05
    monkeypatch.setattr(segment_cost, "ROWS", 5_000)
    wall, cpu = segment_cost.timed(columns=2, search_draws=19)
    assert wall > 0 and cpu > 0
    root = Path(__file__).resolve().parents[2]
    table = (root / "benchmarks" / "segment_cost.md").read_text().strip()
    assert table and table in (root / "README.md").read_text()
