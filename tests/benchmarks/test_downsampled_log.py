"""The downsampled click log (benchmarks/downsampled_log.py) in small: from a log of 2e5 rows with every click
kept and one in ten non-clicks kept at weight 10, the weighted ECE, NBS, NCE and fitted temperature recover the
full log's values within their bootstrap intervals, and the unweighted ones do not; the README shows the full
study's table."""

from __future__ import annotations

from pathlib import Path

from benchmarks.downsampled_log import study

ROOT = Path(__file__).resolve().parents[2]


def test_the_weights_recover_the_full_logs_values_and_their_absence_does_not():
    result = study(n_rows=200_000, n_boot=100)
    for name, truth in result["full"].items():
        weighted, unweighted = result["downsampled"]["weighted"][name], result["downsampled"]["unweighted"][name]
        assert weighted["holds"], (name, truth, weighted)
        assert not unweighted["holds"], (name, truth, unweighted)


def test_the_readme_shows_the_full_studys_table():
    table = (ROOT / "benchmarks" / "downsampled_log.md").read_text().strip()
    assert table and table in (ROOT / "README.md").read_text()
