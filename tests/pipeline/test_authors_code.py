"""pipeline.authors_code (the paper-000 authors' psrcal computations redone in numpy) against psrcal itself.

The psrcal outputs are stored fixtures (tests/fixtures/peers/psrcal.json, written by
benchmarks/write_psrcal_fixtures.py with the psrcal and torch versions recorded there).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.write_psrcal_fixtures import case_inputs
from calib.calibration_errors.binned import BinnedCalibrationError
from calib.calibrators import AffineCalibrator, TemperatureScaling
from calib.scoring.scores import cross_entropy
from pipeline.authors_code import UpstreamAffine, UpstreamHistogramBinning, float32_bins, upstream_ece

FIXTURE = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "peers" / "psrcal.json").read_text())
CASES = FIXTURE["cases"]
PEER = f"psrcal {FIXTURE['version']} (torch {FIXTURE['torch']})"


def _inputs(case):
    return case_inputs(case["seed"], case["n"], case["k"], case["scale"])


def _loss(params: np.ndarray, logp: np.ndarray, labels: np.ndarray, bias: bool) -> float:
    z = params[0] * logp + (params[1:] if bias else 0.0)
    z = z - z.max(axis=1, keepdims=True)
    return float(np.mean(np.log(np.exp(z).sum(axis=1)) - z[np.arange(labels.size), labels]))


def _stopping_noise(params, logp, labels, bias: bool) -> np.ndarray:
    """How far from each other two L-BFGS-B stops may land, per parameter: 2 sqrt(2 r L / L_jj).

    L-BFGS-B stops once the loss changes by less than r L (scipy's ftol, 2.2e-9), and a float32 loss
    (temperature scaling in psrcal) is only known to r = 2^-23; a parameter moved by d from the optimum
    raises the loss by L_jj d^2 / 2, so either stop is within sqrt(2 r L / L_jj) of it.
    """
    relative = 2.0**-23 if not bias else 2.2e-9
    loss, step = _loss(params, logp, labels, bias), 1e-4
    curvature = []
    for j in range(params.size):
        e = np.zeros(params.size)
        e[j] = step
        plus, minus = _loss(params + e, logp, labels, bias), _loss(params - e, logp, labels, bias)
        curvature.append((plus - 2 * loss + minus) / step**2)
    return 2 * np.sqrt(2 * relative * loss / np.asarray(curvature))


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"K={c['k']}")
@pytest.mark.parametrize(("name", "bias"), [("affine", True), ("temperature", False)])
def test_lbfgs_fit_lands_where_psrcal_does(case, name, bias):
    # float32 gradients round differently in numpy and torch, so the L-BFGS paths differ: the stops
    # agree up to the stopping noise of the loss (_stopping_noise).
    logp, labels = _inputs(case)
    model = UpstreamAffine(bias=bias).fit(logp.astype(np.float64), labels, kind="logprobs")
    expected = np.asarray(case[name]["params"])
    noise = _stopping_noise(expected, logp.astype(np.float64), labels, bias)
    assert np.all(np.abs(model.params_ - expected) <= noise), (model.params_, expected, noise, PEER)


@pytest.mark.parametrize(("bias", "exact"), [(True, AffineCalibrator), (False, TemperatureScaling)])
def test_lbfgs_fit_is_near_but_not_at_the_exact_optimum(bias, exact):
    logp, labels = case_inputs(2, 2000, 10, 0.7)
    logp = logp.astype(np.float64)
    upstream = UpstreamAffine(bias=bias).fit(logp, labels, kind="logprobs").predict_log_proba(logp, kind="logprobs")
    ours = exact().fit(logp, labels, kind="logprobs").predict_log_proba(logp, kind="logprobs")
    loss_upstream = cross_entropy(upstream, labels, kind="logprobs")
    loss_ours = cross_entropy(ours, labels, kind="logprobs")
    # ours is the exact optimum (up to the float32 rounding of the upstream output, 2^-24 relative),
    # and L-BFGS stops close to it
    assert loss_ours <= loss_upstream * (1 + 2.0**-24)
    assert loss_upstream - loss_ours < 1e-6


def test_ece_matches_psrcal():
    for case in CASES:
        logp, labels = _inputs(case)
        got = upstream_ece(logp, labels, n_bins=15, binary=False)
        assert 100 * got == pytest.approx(case["ece_top_label"], abs=1e-5), PEER
        if case["k"] == 2:
            got = upstream_ece(logp, labels, n_bins=15, binary=True)
            assert 100 * got == pytest.approx(case["ece_binary"], abs=1e-5), PEER


def test_histogram_binning_matches_psrcal():
    case = next(c for c in CASES if c["k"] == 2)
    logp, labels = _inputs(case)
    model = UpstreamHistogramBinning(n_bins=10).fit(logp.astype(np.float64), labels, kind="logprobs")
    p1 = np.exp(model.predict_log_proba(logp.astype(np.float64), kind="logprobs")[:, 1])
    np.testing.assert_allclose(p1, case["histogram_p1"], atol=1e-6, err_msg=PEER)


def test_float32_bins_leave_zero_out_and_put_edges_in_the_lower_bin():
    assert float32_bins(np.array([0.0, 1e-30, 0.1, 0.1000001, 0.6, 1.0]), 10).tolist() == [-1, 0, 0, 1, 5, 9]


def test_upstream_ece_is_the_binned_ece_away_from_edges_and_zeros():
    rng = np.random.default_rng(3)
    p1 = rng.uniform(0.01, 0.99, 5000)
    labels = (rng.random(5000) < p1).astype(int)
    logp = np.log(np.column_stack([1 - p1, p1]))
    ours = BinnedCalibrationError("binary", n_bins=15)(logp, labels, kind="logprobs")
    assert upstream_ece(logp, labels, n_bins=15, binary=True) == pytest.approx(ours, abs=1e-6)  # float32 scores


def test_upstream_ece_counts_a_zero_score_in_n_but_in_no_bin():
    logp = np.log(np.array([[1.0, 1e-300], [0.5, 0.5]]))
    assert upstream_ece(logp, np.array([1, 1]), n_bins=10, binary=True) == pytest.approx(0.25)  # |0.5 - 1| / 2
    assert BinnedCalibrationError("binary", n_bins=10)(logp, [1, 1], kind="logprobs") == pytest.approx(
        0.75
    )  # ours bins p = 0 too
