"""Prediction logs written as Parquet data sets, and the equality of two evaluations: shared by the
partitioned-evaluation tests (tests/calib/evaluation) and the Dask cluster tests (tests/dask, tests/slurm)."""

from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd
import pytest


def write_log(folder, n=24_000, k=2, seed=0, files=3, row_group=1_700, weights=False, channel=False):
    """A prediction log of ``n`` rows in ``files`` Parquet files of small row groups (many partitions whose
    rows start inside the engine's blocks), mildly miscalibrated, with a segment column, with ``weights`` a
    column "weight" of sample weights (real numbers, a tenth of them 0), and with ``channel`` a column
    "channel" of two values (to cross with the segments)."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 1.5, (n, k))
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    true = probs**1.3 / (probs**1.3).sum(axis=1, keepdims=True)
    labels = (rng.random(n)[:, None] > np.cumsum(true, axis=1)).sum(axis=1)
    frame = pd.DataFrame(probs, columns=[f"class_{i}" for i in range(k)])
    frame["label"] = np.array([f"class_{i}" for i in range(k)])[labels]
    frame["segment"] = rng.choice(["north", "south", "east"], n)
    if weights:
        frame["weight"] = rng.gamma(0.8, 2.0, n) * (rng.random(n) > 0.1)
    if channel:
        frame["channel"] = rng.choice(["web", "app"], n)
    folder.mkdir(exist_ok=True)
    for i, rows in enumerate(np.array_split(np.arange(n), files)):
        frame.iloc[rows].to_parquet(folder / f"part-{i:02d}.parquet", index=False, row_group_size=row_group)
    return folder


def assert_same(a, b, rtol=1e-12):
    """Every metric, interval, gain, group and count of two summaries equal to ``rtol``: the issue's 1e-12
    for the same sums added in another order (each addition rounds to 1.1e-16; a few thousand of them,
    each on values of one sign, stay far below it); p-values to 1e-9, as a normal tail amplifies its z's
    rounding by up to z^2."""
    assert a.n_samples == b.n_samples and a.metrics.keys() == b.metrics.keys()
    pairs = [(a.metrics, b.metrics), (a.gains, b.gains)]
    pairs += [(g.metrics, h.metrics) for g, h in zip(a.groups, b.groups, strict=True)]
    for left, right in pairs:
        assert left.keys() == right.keys()
        for name in left:
            l_metric, r_metric = left[name], right[name]
            assert (l_metric.method, l_metric.estimand) == (r_metric.method, r_metric.estimand), name
            for x, y in zip(_numbers(l_metric), _numbers(r_metric), strict=True):
                assert (math.isnan(x) and math.isnan(y)) or x == pytest.approx(y, rel=rtol, abs=1e-15), name
    assert a.recommended == b.recommended and a.notes == b.notes
    assert (a.weighting is None) == (b.weighting is None)
    if a.weighting is not None:
        assert a.weighting.total == pytest.approx(b.weighting.total, rel=rtol)
        assert a.weighting.effective_size == pytest.approx(b.weighting.effective_size, rel=rtol)
    assert [(g.group, g.n, g.flagged, g.tested) for g in a.groups] == [
        (g.group, g.n, g.flagged, g.tested) for g in b.groups
    ]
    for g, h in zip(a.groups, b.groups, strict=True):
        assert g.p_value == pytest.approx(h.p_value, rel=1e-9, nan_ok=True)
        assert g.statistic == pytest.approx(h.statistic, rel=1e-9, nan_ok=True)
        assert g.error == pytest.approx(h.error, rel=rtol, abs=1e-15, nan_ok=True)
    assert (a.multicalibration is None) == (b.multicalibration is None)
    if a.multicalibration is not None:
        m, o = a.multicalibration, b.multicalibration
        assert (m.segment, m.n, m.searched, m.too_small, m.draws, m.largest_error_segment, m.p_value) == (
            o.segment, o.n, o.searched, o.too_small, o.draws, o.largest_error_segment, o.p_value)  # fmt: skip
        assert (m.statistic, m.critical) == pytest.approx((o.statistic, o.critical), rel=1e-9)
        assert (m.error, m.largest_error) == pytest.approx((o.error, o.largest_error), rel=rtol, abs=1e-15)


def _numbers(metric) -> tuple[float, float, float]:
    return metric.value, metric.low, metric.high


def die(part) -> None:
    """A partition reader that ends its worker process at once (a worker killed by the system)."""
    os._exit(1)
