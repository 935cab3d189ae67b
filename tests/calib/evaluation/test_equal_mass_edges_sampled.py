"""Equal-mass edges of an evaluation: with every sample in the ``sample_limit`` subsample they are the
library's :func:`~calib.calibration_errors.binning.equal_mass_edges` of all samples (the ECE is
``BinnedCalibrationError(strategy="equal-mass")``'s) and nothing is noted; above it, the Python summary, the
JSON and the text output note the subsample and the bound on the edges, in memory, in chunks and by
partitions."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from support import run_calib

from calib.calibration_errors.binned import BinnedCalibrationError
from calib.data.chunks import table_chunks
from calib.data.table_options import TableOptions
from calib.evaluation.data_pass import edge_note
from calib.evaluation.engine import evaluate, evaluate_chunks
from calib.evaluation.partitioned import evaluate_partitioned

QUICK = {"binning": "equal-mass", "n_boot": 0, "calibrators": ()}
NOTE_START = "equal-mass bins: edges from a seeded random 1000 of the 5000 samples (sample_limit); "


def _rounded(n: int = 5000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two-class posteriors whose positive score is rounded to 2 decimals (ties at every boundary)."""
    rng = np.random.default_rng(seed)
    p = np.round(rng.beta(5, 2, n), 2)
    return np.column_stack([1 - p, p]), (rng.random(n) < p).astype(np.int64)


def _edge_notes(notes) -> list[str]:
    return [note for note in notes if note.startswith("equal-mass bins:")]


def test_with_every_sample_the_edges_are_the_librarys_and_nothing_is_noted():
    probs, y = _rounded()
    summary = evaluate(probs, y, kind="probs", **QUICK)  # sample_limit 10^6 holds the 5000 samples
    expected = BinnedCalibrationError("binary", n_bins=15, strategy="equal-mass")(probs, y, kind="probs")
    assert abs(summary.metrics["ECE positive class"].value - expected) <= 1e-12
    assert not _edge_notes(summary.notes)
    chunks = evaluate_chunks(lambda: ((probs[i : i + 700], y[i : i + 700], None) for i in range(0, 5000, 700)),
                             n_classes=2, kind="probs", **QUICK)  # fmt: skip
    assert abs(chunks.metrics["ECE positive class"].value - expected) <= 1e-12
    assert not _edge_notes(chunks.notes)


def test_the_note_gives_the_dkw_bound_rounded_up():
    note = edge_note(1000, 5000)
    eps = math.sqrt(math.log(2 / 0.001) / 2000)  # 0.06164...
    assert note.startswith(NOTE_START)
    assert "within ±0.062 of its share of the subsample" in note and eps <= 0.062
    assert "with probability 0.999" in note and "Massart's constant" in note
    assert "±0.0020 " in edge_note(1_000_000, 2_500_000)  # 0.001946, rounded up


def test_above_the_sample_limit_the_summary_notes_the_subsample_in_memory_in_chunks_and_by_partitions(tmp_path):
    probs, y = _rounded()
    options = {**QUICK, "sample_limit": 1000}
    whole = evaluate(probs, y, kind="probs", **options)
    assert _edge_notes(whole.notes) == [edge_note(1000, 5000)]
    chunks = evaluate_chunks(lambda: ((probs[i : i + 700], y[i : i + 700], None) for i in range(0, 5000, 700)),
                             n_classes=2, kind="probs", **options)  # fmt: skip
    assert _edge_notes(chunks.notes) == [edge_note(1000, 5000)]
    path = tmp_path / "log.parquet"
    pd.DataFrame({"0": probs[:, 0], "1": probs[:, 1], "label": y}).to_parquet(path, row_group_size=900)
    parts = evaluate_partitioned(table_chunks(path, TableOptions(kind="probs")), **options)
    assert _edge_notes(parts.notes) == [edge_note(1000, 5000)]
    # the same subsample's edges each way
    assert parts.metrics["ECE positive class"].value == pytest.approx(whole.metrics["ECE positive class"].value,
                                                                      abs=1e-12)  # fmt: skip


def test_the_command_prints_the_note_in_its_text_and_json(tmp_path):
    probs, y = _rounded()
    path = tmp_path / "rounded.csv"
    pd.DataFrame({"p0": probs[:, 0], "p1": probs[:, 1], "y": y}).to_csv(path, index=False)
    command = ("evaluate", str(path), "--kind", "probs", "--labels", "y", "--binning", "equal-mass",
               "--n-boot", "0", "--calibrators", "none", "--quiet")  # fmt: skip
    text = run_calib(*command, "--sample-limit", "1000", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert f"  note: {edge_note(1000, 5000)}" in text.stdout.splitlines()
    document = run_calib(*command, "--sample-limit", "1000", "--json", cwd=tmp_path)
    assert document.returncode == 0, document.stderr
    assert _edge_notes(json.loads(document.stdout)["notes"]) == [edge_note(1000, 5000)]
    every = run_calib(*command, "--json", cwd=tmp_path)  # the default limit holds every sample
    assert every.returncode == 0, every.stderr
    assert not _edge_notes(json.loads(every.stdout)["notes"])
