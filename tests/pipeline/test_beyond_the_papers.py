"""The dimitriadis2021 kinds (CORP beyond the papers) on synthetic binary systems: the tables hold the
library's numbers, the ranks order them, and the figure and tables are written."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

import pipeline.papers.dimitriadis2021 as beyond
from calib.calibration_errors.binned import BinnedCalibrationError
from calib.calibration_errors.corp import corp_decomposition
from calib.data.real import PosteriorSet
from pipeline.config import compose
from pipeline.io import values_frame
from pipeline.root import typed_root
from pipeline.sources import RealSystem

SETS = {"sharp": 3.0, "soft": 0.5, "fair": 1.0}


class FakeSources:
    """Binary systems whose P(class 1) is the true probability raised to a power (1: calibrated)."""

    def real(self, name):
        rng = np.random.default_rng(len(name))
        truth = rng.uniform(size=600)
        labels = (rng.random(600) < truth).astype(int)
        p1 = np.clip(truth ** SETS[name], 1e-6, 1 - 1e-6)
        return PosteriorSet(name, np.column_stack([1 - p1, p1]), labels, "probs")


def _experiment(name: str):
    """The experiment's parameters with the fake systems (and 49 resamples where it resamples)."""
    params = typed_root(*compose([f"experiment={name}"])).experiment
    systems = [RealSystem(label=label, set=label) for label in SETS]
    changes = {"systems": systems} if hasattr(params, "systems") else {"system": systems[1]}
    if hasattr(params, "n_resamples"):
        changes["n_resamples"] = 49
    return dataclasses.replace(params, **changes)


def test_decompositions_are_the_librarys_and_the_table_is_written(tmp_path):
    exp = _experiment("dimitriadis2021_decompositions")
    values = values_frame(beyond.decompositions(exp, FakeSources()))
    raw = FakeSources().real("soft")
    d = corp_decomposition(raw.scores[:, 1], raw.labels, score="log")
    mine = values[values.row == "soft | raw"].set_index("column").value.astype(float)
    # the raw variant is exp(log p) of the set's probabilities: a few ulps from them
    assert (mine["LS mcb"], mine["LS dsc"], mine["LS unc"]) == pytest.approx((d.mcb, d.dsc, d.unc), rel=1e-12)
    assert mine["BS p_value"] == 1 / 50  # x^0.5 is far from calibrated
    paths = beyond.render_decompositions(exp, values, tmp_path / "decompositions")
    table = pd.read_csv(paths[0])
    assert list(table.columns[:4]) == ["system", "posteriors", "BS", "BS MCB"] and len(table) == 6


def test_rankings_order_the_systems_and_give_kendalls_tau(tmp_path):
    exp = _experiment("dimitriadis2021_rankings")
    values = values_frame(beyond.rankings(exp, FakeSources()))
    wide = values[~values.row.str.startswith("Kendall")].pivot(index="row", columns="column", values="value")
    wide = wide.astype(float)
    assert sorted(wide["rank ECE"]) == list(range(1, 7))
    assert np.all(np.diff(wide.sort_values("rank MCB").MCB) >= 0)
    assert np.all(np.diff(wide.sort_values("rank DSC").DSC) <= 0)
    tau = values[values.row == "Kendall tau (ECE rank, MCB rank)"].value.astype(float).iloc[0]
    assert tau == pytest.approx(kendalltau(wide["rank ECE"], wide["rank MCB"]).statistic)
    raw = FakeSources().real("sharp")
    ece = BinnedCalibrationError("binary", 15)(raw.scores, raw.labels, kind="probs")
    assert wide.loc["sharp | raw", "ECE"] == pytest.approx(ece, rel=1e-12)
    assert [p.suffix for p in beyond.render_rankings(exp, values, tmp_path / "rankings")] == [".csv", ".md", ".tex"]


def test_the_diagrams_figure_is_drawn(tmp_path, monkeypatch):
    exp = _experiment("dimitriadis2021_corp_pneum_resnet_50")
    values = values_frame(beyond.corp_diagrams(exp, FakeSources()))
    assert set(values.row) == {"raw", "DP-xv"}
    drawn = {}
    monkeypatch.setattr(beyond, "save_figure", lambda fig, stem: drawn.setdefault("fig", fig) and [stem])
    beyond.render_corp_diagrams(exp, values, tmp_path / "corp")
    corp_raw, corp_dp, murphy = drawn["fig"].axes[:3]
    for ax in (corp_raw, corp_dp):  # the PAV step curve and the diagonal; the band; the inset histogram
        assert len(ax.lines) == 2 and len(ax.collections) == 1 and len(ax.child_axes) == 1
        assert ax.get_title().split(":")[0] in ("raw", "DP-xv")
    assert len(murphy.lines) == 4  # raw and CORP-recalibrated, for both variants
