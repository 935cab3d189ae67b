"""Declared sweeps: the grid expands into points, each point is one job, and the aggregate collects them."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

from calib.data.synthetic import gaussian_posteriors
from calib.scoring.scores import cross_entropy
from pipeline.config_blocks import Plot, Sweep
from pipeline.sources import DataSources
from pipeline.sweeps import aggregate, load_sweep, point_experiment, point_path, points, run_point, sweep_names

ROOT = Path(__file__).resolve().parents[2]
SWEEP = Sweep(
    name="tiny",
    title="tiny",
    experiment={
        "kind": "synthetic_metrics",
        "generator": {"n_classes": 2, "n_samples": 300, "prior1": 0.5, "variance": 0.15, "scale": 2.0,
                      "mismatch_prior": 0.9, "rng": "default"},
        "systems": ["cal", "mcs"],
        "seed": 3,
    },
    grid={"generator.scale": [1.0, 4.0], "seed": [3, 4]},
    plot=Plot(y=["NCE"], log_x=True),
)  # fmt: skip


def test_grid_expands_first_key_slowest():
    assert points(SWEEP) == [
        {"generator.scale": 1.0, "seed": 3},
        {"generator.scale": 1.0, "seed": 4},
        {"generator.scale": 4.0, "seed": 3},
        {"generator.scale": 4.0, "seed": 4},
    ]


def test_a_point_overrides_nested_keys_and_leaves_the_rest():
    exp = point_experiment(SWEEP, 2)
    assert exp["generator"]["scale"] == 4.0 and exp["seed"] == 3 and exp["generator"]["prior1"] == 0.5
    assert SWEEP.experiment["generator"]["scale"] == 2.0  # the sweep itself is untouched


def test_point_values_are_the_generator_at_that_point(tmp_path):
    frame = run_point(SWEEP, 3, DataSources(tmp_path))
    assert set(frame["generator.scale"]) == {4.0} and set(frame["seed"]) == {4}
    data = gaussian_posteriors(n_classes=2, n_samples=300, prior1=0.5, variance=0.15, scale=4.0, seed=4)
    nce = cross_entropy(data.systems["mcs"], data.labels, kind="logprobs", normalize=True)
    ours = frame[(frame.row == "mcs") & (frame.column == "NCE")].value.iloc[0]
    assert ours == np.float64(nce)


def test_aggregate_collects_every_point_and_draws(tmp_path):
    for i in range(len(points(SWEEP))):
        path = point_path(tmp_path, "tiny", i)
        path.parent.mkdir(parents=True, exist_ok=True)
        run_point(SWEEP, i, DataSources(tmp_path)).to_csv(path, index=False)
    written = aggregate(SWEEP, tmp_path)
    assert [p.suffix for p in written] == [".csv", ".pdf", ".png"]
    table = pd.read_csv(written[0])
    assert len(table) == 4 * 2 * 3  # points x systems x metrics
    # scale 1 makes mcs equal to cal: the same NCE at every seed
    at_one = table[(table["generator.scale"] == 1.0) & (table.column == "NCE")]
    for seed, part in at_one.groupby("seed"):
        assert part.value.nunique() == 1, seed


def test_every_declared_sweep_expands_into_snakemake_jobs(tmp_path):
    expected = sum(len(points(load_sweep(name))) for name in sweep_names())
    cmd = ["snakemake", "-n", "sweeps", "--config", f"results={tmp_path}"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", done.stdout, flags=re.MULTILINE))
    assert int(counts["sweep_aggregate"]) == len(sweep_names()) >= 7
    assert int(counts["sweep_point"]) == expected >= 50


def test_ecd_temperature_sweep_point_matches_the_population_value(tmp_path):
    # notes/004 Sect. 3 item 4: E[ECD] = -0.1600 at T = 3 for t ~ U(-5, 5), 4 decimals from the notes' own
    # numerics (our quadrature gives -0.15995), so 1e-4; the Monte Carlo mean over 20 x 10,000 has sd about
    # 0.002, so 4 sd is 0.008.
    sweep = load_sweep("ecd_temperature")
    index = [p["temperature"] for p in points(sweep)].index(3.0)
    frame = run_point(sweep, index, DataSources(tmp_path)).set_index("row").value
    assert abs(frame["population (quadrature)"] - (-0.1600)) < 1e-4
    assert abs(frame["Monte Carlo"] - frame["population (quadrature)"]) < 0.008
