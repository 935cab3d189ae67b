"""``calib evaluate --out DIR``: the reliability panels' per-bin 95 % Clopper-Pearson intervals in metrics.json
(issue 57), checked against scipy's exact binomial interval and, with weights, Kish's effective size per bin."""

import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import beta, binomtest

import calib.cli

N = 600


def _evaluate(tmp_path, capsys, frame: pd.DataFrame, *options) -> dict:
    tmp_path.mkdir(exist_ok=True)
    frame.to_csv(tmp_path / "s.csv", index=False)
    code = calib.cli.main(["evaluate", str(tmp_path / "s.csv"), "--out", str(tmp_path / "out"), "--n-boot", "0",
                           "--quiet", *options])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / "out" / "reliability.png").stat().st_size > 0
    return json.loads((tmp_path / "out" / "metrics.json").read_text())


def _frame(classes: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(classes, 0.7), size=N)
    labels = (rng.random(N)[:, None] >= np.cumsum(probs, axis=1)).sum(axis=1).clip(max=classes - 1)
    frame = pd.DataFrame(probs, columns=[f"c{j}" for j in range(classes)])
    frame["label"] = labels
    frame["w"] = rng.lognormal(0.0, 1.0, size=N)
    return frame


@pytest.mark.parametrize("classes", [2, 3])
def test_every_panel_carries_scipys_exact_binomial_interval_per_bin(tmp_path, capsys, classes):
    document = _evaluate(tmp_path, capsys, _frame(classes).drop(columns="w"), "--labels", "label")
    assert len(document["reliability"]) == (1 if classes == 2 else 2)
    for panel in document["reliability"]:
        assert "Clopper-Pearson" in panel["frequency_interval"]
        for bins in panel["bins"]:
            assert "effective_size" not in bins
            for n, f, low, high in zip(bins["counts"], bins["frequency"], bins["frequency_low"],
                                       bins["frequency_high"], strict=True):  # fmt: skip
                if n == 0:
                    assert low == high == "nan"
                    continue
                expected = binomtest(round(f * n), n).proportion_ci(confidence_level=0.95, method="exact")
                assert low == pytest.approx(expected.low, abs=1e-12)
                assert high == pytest.approx(expected.high, abs=1e-12)


def test_weighted_panels_read_each_bins_kish_effective_size(tmp_path, capsys):
    frame = _frame(2, seed=1)
    document = _evaluate(tmp_path, capsys, frame, "--labels", "label", "--weights", "w")
    (panel,) = document["reliability"]
    (bins,) = panel["bins"]
    p, y, w = frame["c1"].to_numpy(), frame["label"].to_numpy(), frame["w"].to_numpy()
    ids = np.clip(np.searchsorted(np.arange(16) / 15, p, side="left") - 1, 0, 14)  # right-closed k / 15
    for b in range(15):
        inside = ids == b
        if not inside.any():
            assert bins["frequency_low"][b] == "nan"
            continue
        n_eff = w[inside].sum() ** 2 / (w[inside] ** 2).sum()
        k = np.average(y[inside], weights=w[inside]) * n_eff
        assert bins["effective_size"][b] == pytest.approx(n_eff, rel=1e-10)
        low = beta.ppf(0.025, k, n_eff - k + 1) if k > 0 else 0.0
        high = beta.ppf(0.975, k + 1, n_eff - k) if k < n_eff * (1 - 1e-12) else 1.0
        assert bins["frequency_low"][b] == pytest.approx(low, abs=1e-9)
        assert bins["frequency_high"][b] == pytest.approx(high, abs=1e-9)


def test_weights_of_another_scale_give_the_same_intervals(tmp_path, capsys):
    frame = _frame(3, seed=2)
    first = _evaluate(tmp_path / "a", capsys, frame, "--labels", "label", "--weights", "w")
    scaled = _evaluate(tmp_path / "b", capsys, frame.assign(w=frame["w"] * 1000), "--labels", "label", "--weights", "w")
    for one, other in zip(first["reliability"], scaled["reliability"], strict=True):
        for a, b in zip(one["bins"], other["bins"], strict=True):
            for key in ("frequency_low", "frequency_high", "effective_size"):
                x, y = np.array(a[key], dtype=float), np.array(b[key], dtype=float)
                np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12)
