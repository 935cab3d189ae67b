"""The bucketed bootstrap's study (benchmarks/bucket_bootstrap.py) in small: on data sets of the coverage
study, the bucketed intervals (64 buckets after the first 4096 rows) are as wide as the per-row ones on the
same data, overall and in a subgroup; and the README shows the full study's table."""

from __future__ import annotations

from pathlib import Path

from benchmarks.bucket_bootstrap import replicate, summarize
from benchmarks.coverage import Cell, cell_truths, truths_for

ROOT = Path(__file__).resolve().parents[2]


def test_bucketed_intervals_are_as_wide_as_the_per_row_ones_on_the_same_data():
    cell = Cell("over-confident", 2, 10_000, "equal-width", 12)
    reps = [replicate((cell, r)) for r in range(cell.reps)]
    metrics = summarize(cell, reps, cell_truths(cell, truths_for([cell], 1)))
    for name in ("accuracy", "NCE", "NBS", "ECD", "accuracy (group 0)", "NCE (group 0)"):
        ratio, sd = metrics[name]["width ratio"], metrics[name]["width ratio sd"]
        assert abs(ratio - 1) < max(4 * sd, 0.05), (name, ratio, sd)


def test_the_readme_shows_the_full_studys_table():
    table = (ROOT / "benchmarks" / "bucket_bootstrap.md").read_text().strip()
    assert table and table in (ROOT / "README.md").read_text()
