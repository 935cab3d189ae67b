"""calib.summary: the batched metrics (full sample and bootstrap resamples) equal the library's metric
functions applied to each resample one by one (:func:`reference_metrics`)."""

from __future__ import annotations

import numpy as np
import pytest

import calib._internal.rows
import calib.resampling.bootstrap
import calib.summary
from calib.calibration_errors.binned import BinnedCalibrationError
from calib.calibration_errors.corp import corp_decomposition
from calib.calibration_errors.entropic import ecd
from calib.calibration_errors.smoothing import smooth_ece_top_label
from calib.resampling.bootstrap import bootstrap_indices, resample_counts
from calib.scoring.decisions import normalized_risk, zero_one_costs
from calib.scoring.scores import brier, cross_entropy
from calib.summary import ECE_BINS, Resampler, evaluate, point_metrics, resampled_metrics
from calib.validation import CalibInputError, check_inputs


def reference_metrics(logp, labels, costs, priors=None) -> dict[str, float]:
    """The summary's metrics computed one by one by the library's metric functions, each of which
    validates its input and sums in its own way: the independent reference of the Resampler's sums."""
    out = {
        "accuracy": float(np.mean(logp.argmax(axis=1) == labels)),
        "NCE": cross_entropy(logp, labels, kind="logprobs", priors=priors, normalize=True),
        "NBS": brier(logp, labels, kind="logprobs", scaling="mean", priors=priors, normalize=True),
    }
    out |= {f"NRisk {n}": normalized_risk(logp, labels, c, kind="logprobs", priors=priors) for n, c in costs.items()}
    out["ECE top-label"] = BinnedCalibrationError("top_label", n_bins=ECE_BINS)(logp, labels, kind="logprobs")
    if logp.shape[1] == 2:
        out["ECE positive class"] = BinnedCalibrationError("binary", n_bins=ECE_BINS)(logp, labels, kind="logprobs")
    else:
        out["ECE class-wise"] = BinnedCalibrationError("classwise", n_bins=ECE_BINS)(logp, labels, kind="logprobs")
    out["smooth ECE"] = smooth_ece_top_label(logp, labels, kind="logprobs")
    out["ECD"] = ecd(logp, labels, kind="logprobs")
    return out


@pytest.mark.parametrize(("k", "priors"), [(2, None), (4, None), (4, [0.1, 0.2, 0.3, 0.4])])
def test_resampled_metrics_equal_the_metric_functions_per_resample(k, priors):
    rng = np.random.default_rng(k)
    logp, y = check_inputs(2.0 * rng.normal(size=(300, k)), rng.integers(0, k, 300), "logits")
    costs = {"0-1": zero_one_costs(k), "skewed": np.abs(rng.normal(size=(k, k))) * (1 - np.eye(k))}
    priors = None if priors is None else np.array(priors)
    rows = bootstrap_indices(300, n_boot=7, seed=1)
    batch = resampled_metrics(logp, y, costs, priors, rows)
    loop = [reference_metrics(logp[r], y[r], costs, priors) for r in rows]
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
    monkeypatch.setattr(calib._internal.rows, "_CHUNK_CELLS", 9 * 50)  # chunks of 50 samples for 9 resamples
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
    loop = [reference_metrics(logp[r], y[r], costs, priors) for r in rows]
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
    assert lines[0] == "DP (affine): 5-fold cross-validated fit"
    assert "cross-validated fits 15/15" in lines[-4]
    assert lines[-3] == "metrics on the full data and 10 bootstrap resamples"
    assert "bootstrap 10/10" in lines[-2]
    assert lines[-1] == "CORP decomposition and MCB test (10 resamples)"


@pytest.mark.parametrize(("k", "priors"), [(2, None), (3, [0.2, 0.3, 0.5])])
def test_point_metrics_equal_the_metric_functions_and_evaluates_values(k, priors):
    rng = np.random.default_rng(10 + k)
    logp, y = check_inputs(1.5 * rng.normal(size=(500, k)), rng.integers(0, k, 500), "logits")
    costs = {"0-1": zero_one_costs(k)}
    priors = None if priors is None else np.array(priors)
    expected = reference_metrics(logp, y, costs, priors)
    point = point_metrics(logp, y, costs, priors)
    assert list(point) == list(expected)
    # the same sums added in another order (count products vs the functions' own means): rounding only
    np.testing.assert_allclose(list(point.values()), list(expected.values()), rtol=1e-13, atol=1e-15)
    summary = evaluate(logp, y, kind="logprobs", priors=priors, n_boot=5, seed=2)
    for name, value in expected.items():
        np.testing.assert_allclose(summary.metrics[name].value, value, rtol=1e-13, atol=1e-15, err_msg=name)


def test_a_single_class_is_named_before_any_metric():
    logp, y = check_inputs(np.zeros((6, 2)), np.ones(6, dtype=int), "logits")
    with pytest.raises(CalibInputError, match="labels hold a single class"):
        point_metrics(logp, y, {"0-1": zero_one_costs(2)})


def test_calibrators_on_a_subset_are_the_evaluation_of_that_subset():
    rng = np.random.default_rng(21)
    logp, y = check_inputs(2.0 * rng.normal(size=(900, 3)), rng.integers(0, 3, 900), "logits")
    capped = evaluate(logp, y, kind="logprobs", n_boot=30, seed=4, fit_samples=400)
    subset = calib.summary._fit_subset(900, 400, 4)
    assert subset.size == 400 and np.all(np.diff(subset) > 0) and capped.fit_samples == 400
    alone = evaluate(logp[subset], y[subset], kind="logprobs", n_boot=30, seed=4, fit_samples=None)
    for name, m in capped.metrics.items():
        if name.startswith("RCL"):
            np.testing.assert_allclose(m.value, alone.metrics[name].value, rtol=1e-12, err_msg=name)
    # The subset's own paired bootstrap with the same seed: the same resamples, whose means come from a
    # product with the gains alone instead of beside the other per-sample values (rounding only).
    for name, g in capped.gains.items():
        np.testing.assert_allclose([g.value, g.low, g.high], [*vars(alone.gains[name]).values()], rtol=1e-12)
    everything = evaluate(logp, y, kind="logprobs", n_boot=30, seed=4, fit_samples=None)
    assert everything.fit_samples == 900
    assert {k: v for k, v in capped.metrics.items() if not k.startswith("RCL")} == {
        k: v for k, v in everything.metrics.items() if not k.startswith("RCL")
    }


@pytest.mark.parametrize("k", [2, 4])
def test_evaluate_decomposes_the_scores_of_its_binary_view(k):
    rng = np.random.default_rng(k)
    logp, y = check_inputs(rng.normal(size=(600, k)) * 2, rng.integers(0, k, 600), "logits")
    corp = evaluate(logp, y, kind="logprobs", n_boot=20).corp
    probs = np.exp(logp)
    if k == 2:
        x, outcome = probs[:, 1], y == 1
    else:
        x, outcome = probs.max(axis=1), probs.argmax(axis=1) == y
    for score in ("brier", "log"):
        d = corp_decomposition(x, outcome, score=score)
        # the same function of the same floats (exp of the validated log-posteriors): rounding only
        assert (corp.scores[score].mcb, corp.scores[score].dsc) == pytest.approx((d.mcb, d.dsc), rel=1e-12)
        assert 0 < corp.scores[score].p_value <= 1
    assert corp.lens == ("positive class" if k == 2 else "top label") and corp.resamples == 20
