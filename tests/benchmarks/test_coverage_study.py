"""The coverage study's CI version (benchmarks/coverage.py --quick): every interval calib prints covers the
known truth in three cells at n = 1000 (calibrated with two classes and the calibrator gain, over-confident
with three classes in equal-mass bins, calibrated with ten classes), and the README shows the full study's
tables."""

from __future__ import annotations

from pathlib import Path

from benchmarks.coverage import LEVEL, checked, failures, quick_grid, run_study

ROOT = Path(__file__).resolve().parents[2]


def test_every_printed_interval_covers_its_truth_in_the_quick_study():
    study = run_study(quick_grid())
    assert failures(study) == []
    names = {name for cell in study["cells"] for name, _ in checked(cell)}
    assert names >= {"accuracy", "NCE", "ECD", "ECE top-label", "ECE class-wise", "smooth ECE",
                     "squared ECE top-label (debiased)", "squared MMCE (unbiased)", "gain temperature"}  # fmt: skip


def test_a_cell_below_its_level_by_more_than_three_monte_carlo_sd_fails():
    # what the former two-sided basic interval of a calibrated model's ECE gave: 0.62 over 200 data sets
    low = {"reported": True, "printed": True, "interval": True, "coverage": 0.62, "sd": (0.62 * 0.38 / 200) ** 0.5}
    near = low | {"coverage": LEVEL - 0.02, "sd": 0.015}
    study = {"cells": [{"cell": "calibrated", "metrics": {"ECE top-label": low, "accuracy": near}}]}
    assert failures(study) == ["calibrated: ECE top-label covers 0.620 (sd 0.034)"]


def test_the_readme_shows_the_full_studys_tables():
    tables = (ROOT / "benchmarks" / "coverage.md").read_text().strip()
    assert tables and tables in (ROOT / "README.md").read_text()
