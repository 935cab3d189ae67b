"""A table of one score column (the positive class's) in percent: refused with the advice to say
--scale percent, which then reads it as the same probabilities divided by 100, whole or in chunks."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from calib.cli import main


def test_one_percent_column_is_refused_with_advice_that_runs_and_reads_the_divided_scores(tmp_path, capsys):
    rng = np.random.default_rng(0)
    p = rng.uniform(0.01, 0.99, 500)
    y = (rng.random(500) < p).astype(int)
    pd.DataFrame({"pct": 100 * p, "label": y}).to_csv(tmp_path / "pct.csv", index=False)
    pd.DataFrame({"p": p, "label": y}).to_csv(tmp_path / "unit.csv", index=False)
    quick = ["--positive-label", "1", "--n-boot", "0", "--calibrators", "none", "--json", "--quiet"]
    assert main(["evaluate", str(tmp_path / "pct.csv"), *quick]) == 1
    error = capsys.readouterr().err
    assert "reads as percentages, which --scale percent divides by 100" in error and "Traceback" not in error
    assert main(["evaluate", str(tmp_path / "pct.csv"), "--scale", "percent", *quick]) == 0
    percent = {m["metric"]: m["value"] for m in json.loads(capsys.readouterr().out)["metrics"]}
    assert main(["evaluate", str(tmp_path / "unit.csv"), *quick]) == 0
    unit = {m["metric"]: m["value"] for m in json.loads(capsys.readouterr().out)["metrics"]}
    assert percent.keys() == unit.keys()
    for name, value in unit.items():
        assert np.isclose(percent[name], value, rtol=1e-12, atol=1e-15), name
