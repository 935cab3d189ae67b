"""calib.summary: the batched bootstrap metrics equal point_metrics on every resample."""

from __future__ import annotations

import numpy as np
import pytest

import calib.bootstrap
import calib.summary
from calib.bootstrap import bootstrap_indices, resample_counts
from calib.decisions import zero_one_costs
from calib.summary import Resampler, evaluate, point_metrics, resampled_metrics
from calib.validation import CalibInputError, check_inputs


@pytest.mark.parametrize(("k", "priors"), [(2, None), (4, None), (4, [0.1, 0.2, 0.3, 0.4])])
def test_resampled_metrics_equal_point_metrics_per_resample(k, priors):
    rng = np.random.default_rng(k)
    logp, y = check_inputs(2.0 * rng.normal(size=(300, k)), rng.integers(0, k, 300), "logits")
    costs = {"0-1": zero_one_costs(k), "skewed": np.abs(rng.normal(size=(k, k))) * (1 - np.eye(k))}
    priors = None if priors is None else np.array(priors)
    rows = bootstrap_indices(300, n_boot=7, seed=1)
    batch = resampled_metrics(logp, y, costs, priors, rows)
    loop = [point_metrics(logp[r], y[r], costs, priors) for r in rows]
    assert list(batch) == list(loop[0])  # same metrics, same order
    for name, values in batch.items():
        # class and bin sums are added in another order than the loop's means: float rounding only
        np.testing.assert_allclose(values, [m[name] for m in loop], rtol=1e-14, atol=1e-15, err_msg=name)


def test_a_resample_without_a_class_is_a_clear_error_under_priors():
    logp, y = check_inputs(np.zeros((5, 3)), np.array([0, 1, 1, 1, 2]), "logits")
    rows = np.array([[1, 1, 2, 3, 4]])  # class 0 drawn zero times
    with pytest.raises(CalibInputError, match="lacks a class"):
        resampled_metrics(logp, y, {"0-1": zero_one_costs(3)}, np.full(3, 1 / 3), rows)


@pytest.mark.parametrize("priors", [None, [0.3, 0.3, 0.4]])
def test_resampler_over_chunks_with_infinities_and_extra_means_equals_the_loop(priors, monkeypatch):
    monkeypatch.setattr(calib.bootstrap, "_CHUNK_CELLS", 9 * 50)  # chunks of 50 samples for 9 resamples
    rng = np.random.default_rng(8)
    probs = rng.dirichlet([1.0, 1.0, 1.0], size=400)
    y = rng.integers(0, 3, 400)
    probs[7], y[7] = [0.2, 0.8, 0.0], 2  # a zero probability on the true label: an infinite log loss
    # and ECD in the resamples that draw sample 7
    logp, y = check_inputs(probs, y, "probs")
    costs = {"0-1": zero_one_costs(3), "abstain": zero_one_costs(3, abstention=0.2)}
    priors = None if priors is None else np.array(priors)
    gain = rng.normal(size=400)
    gain[5], gain[6] = -np.inf, np.inf
    extra = {"gain": gain, "other": rng.normal(size=400)}
    rows = bootstrap_indices(400, n_boot=9, seed=5)
    metrics, means = Resampler(logp, y, costs, priors, means=extra)(resample_counts(rows, 400))
    loop = [point_metrics(logp[r], y[r], costs, priors) for r in rows]
    assert list(metrics) == list(loop[0])
    assert np.isinf(metrics["NCE"]).any() and np.isfinite(metrics["NCE"]).any()
    for name, values in metrics.items():
        np.testing.assert_allclose(values, [m[name] for m in loop], rtol=1e-13, atol=1e-15, err_msg=name)
    with np.errstate(invalid="ignore"):
        expected = np.array([[v[r].mean() for v in extra.values()] for r in rows])
    np.testing.assert_allclose(means, expected, rtol=1e-13)


def test_long_phases_report_progress_with_the_time_left(monkeypatch):
    now = iter([0.0, 1.0, 3.0, 3.5, 10.0])  # start, then after each step
    monkeypatch.setattr(calib.summary.time, "perf_counter", lambda: next(now))
    lines = []
    phase = calib.summary._Phase("bootstrap", 8, lines.append)
    for steps in (1, 2, 1, 4):
        phase.advance(steps)
    # 1 s after the start nothing yet (lines at most every 2 s); then the rate so far gives the time left
    assert lines == ["bootstrap 3/8 (3 s, about 5 s left)", "bootstrap 8/8 (10.0 s)"]


def test_evaluate_reports_its_phases():
    rng = np.random.default_rng(0)
    logp, y = check_inputs(rng.normal(size=(200, 3)), rng.integers(0, 3, 200), "logits")
    lines = []
    evaluate(logp, y, kind="logprobs", n_boot=10, progress=lines.append)
    assert lines[0] == "metrics on the full data"
    assert "cross-validated fits 15/15" in lines[-2] and "bootstrap 10/10" in lines[-1]
