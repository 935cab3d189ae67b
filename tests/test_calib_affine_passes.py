"""The compiled loops of the affine / temperature calibrators against the numpy code they stand in for.

Inputs of COMPILED_MIN_VALUES entries on take calib.calibrators.affine_passes; the tests lower that
threshold so both paths see the same inputs. The transposition and the affine map must match numpy
bit for bit (the same operations on the same numbers); the sums over samples are reassociated to
vectorize, so they match to rounding: 1e-12 relative, above the N eps = 7e-13 by which reordering a
sum of N = 3000 terms can move it.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy.special import log_softmax

from calib.calibrators import affine_passes, scaling
from calib.calibrators.scaling import LOG_FLOOR, AffineCalibrator, TemperatureScaling, _AffineObjective


def _problem(n=3000, k=4, seed=0):
    """Overconfident log-posteriors with a few exact zeros (-inf) and values below the floor."""
    rng = np.random.default_rng(seed)
    logp = log_softmax(3.0 * rng.normal(size=(n, k)), axis=1)
    logp[rng.random((n, k)) < 0.01] = -np.inf
    logp[rng.random((n, k)) < 0.01] = -800.0
    logp = np.maximum(logp, -1e300)  # a row may not be -inf everywhere
    labels = rng.integers(0, k, n)
    return log_softmax(logp, axis=1), labels


def test_transpose_and_affine_rows_match_numpy_bit_for_bit():
    logp, labels = _problem()
    outputs = []
    for transpose, affine in (
        (scaling.numpy_floored_centred_transpose, scaling.numpy_affine_rows),
        (affine_passes.floored_centred_transpose, affine_passes.affine_rows),
    ):
        x, x_true = np.empty(logp.shape[::-1]), np.empty(logp.shape[0])
        transpose(logp, LOG_FLOOR, labels, x, x_true)
        e = np.empty_like(x)
        affine(x, 0.73, np.array([0.0, -0.2, 1.7, -3.1]), e)
        outputs.append((x, x_true, e))
    for ours, reference in zip(outputs[1], outputs[0], strict=True):
        np.testing.assert_array_equal(ours, reference)
    x, x_true, _ = outputs[0]
    assert np.all(x.max(axis=0) == 0)
    np.testing.assert_array_equal(x_true, x[labels, np.arange(labels.size)])


@pytest.mark.parametrize("with_classes", [True, False])
def test_derivative_sums_match_numpy(with_classes):
    logp, labels = _problem(seed=1)
    rng = np.random.default_rng(2)
    weights = rng.random(labels.size) / labels.size
    x = np.ascontiguousarray(np.maximum(logp, LOG_FLOOR).T)
    x -= x.max(axis=0)
    e = np.exp(0.8 * x + rng.normal(size=(x.shape[0], 1)))
    sums = e.sum(axis=0)
    results, scaled = [], []
    for sums_of in (scaling.numpy_derivative_sums, affine_passes.derivative_sums):
        work = e.copy()
        results.append(sums_of(x, work, sums, weights, np.sqrt(weights), with_classes, np.empty((3, sums.size))))
        scaled.append(work)
    for ours, reference in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(ours, reference, rtol=1e-12, atol=0)
    np.testing.assert_allclose(scaled[1], scaled[0], rtol=1e-15, atol=0)
    expected = e * np.sqrt(weights) / sums if with_classes else e
    np.testing.assert_allclose(scaled[1], expected, rtol=1e-15, atol=0)


@pytest.mark.parametrize("bias, priors", [(True, None), (False, None), (True, [0.1, 0.2, 0.3, 0.4])])
def test_compiled_objective_matches_numpy_and_the_direct_loss(monkeypatch, bias, priors):
    logp, labels = _problem(seed=3)
    counts = np.bincount(labels, minlength=4)
    weights = np.full(labels.size, 1.0 / labels.size) if priors is None else (np.asarray(priors) / counts)[labels]
    rng = np.random.default_rng(4)
    for spread in (1.0, 600.0):  # biases spanning more than 500 take the exact per-sample shift
        theta = np.r_[0.7, rng.normal(size=3) * spread] if bias else np.array([0.7])
        outputs = []
        for threshold in (np.inf, 0):
            monkeypatch.setattr(scaling, "COMPILED_MIN_VALUES", threshold)
            outputs.append(_AffineObjective(logp.copy(), labels, weights, bias).derivatives(theta))
        biases = np.r_[0.0, theta[1:]] if bias else 0.0
        floored = np.maximum(logp, LOG_FLOOR)
        direct = -np.dot(weights, log_softmax(theta[0] * floored + biases, axis=1)[np.arange(labels.size), labels])
        assert outputs[1][0] == pytest.approx(direct, rel=1e-12)
        (loss, grad, hess), (numpy_loss, numpy_grad, numpy_hess) = outputs
        assert loss == pytest.approx(numpy_loss, rel=1e-12)
        np.testing.assert_allclose(grad, numpy_grad, rtol=1e-12, atol=1e-15)
        # Near one-hot rows the bias block is p - p^2 with p ~ 1: terms of size 1 cancel to ~0.
        np.testing.assert_allclose(hess, numpy_hess, rtol=1e-12, atol=1e-12)


def test_compiled_transform_matches_numpy_across_blocks(monkeypatch):
    logp, labels = _problem(n=25_000, k=3, seed=5)  # 75,000 entries: 3 blocks of the reused buffer
    model = AffineCalibrator().fit(logp, labels, kind="logprobs")
    model.scale_, model.bias_ = 0.6, np.array([0.0, 0.4, -1.2])
    numpy_path = model.predict_log_proba(logp, kind="logprobs")
    monkeypatch.setattr(scaling, "COMPILED_MIN_VALUES", 0)
    compiled_path = model.predict_log_proba(logp, kind="logprobs")
    # Entries reach -420 (0.6 x the floor), whose ulp is 5.7e-14: 1e-13 allows the row sums' other order.
    np.testing.assert_allclose(compiled_path, numpy_path, rtol=1e-14, atol=1e-13)
    direct = log_softmax(0.6 * np.maximum(logp, LOG_FLOOR) + model.bias_, axis=1)
    np.testing.assert_allclose(compiled_path, direct, rtol=1e-14, atol=1e-13)


@pytest.mark.parametrize("make", [AffineCalibrator, TemperatureScaling])
def test_compiled_fit_reaches_the_numpy_optimum(monkeypatch, make):
    logp, labels = _problem(seed=6)
    reference = make().fit(logp, labels, kind="logprobs")
    monkeypatch.setattr(scaling, "COMPILED_MIN_VALUES", 0)
    model = make().fit(logp, labels, kind="logprobs")
    assert model.converged_
    # Both stop after quadratic convergence (decrement < 1e-8, next ~1e-17); 1e-9 is far above the
    # differences measured (0 and 6e-16) yet below any real change of optimum.
    assert model.scale_ == pytest.approx(reference.scale_, rel=1e-9)
    np.testing.assert_allclose(model.bias_, reference.bias_, rtol=0, atol=1e-9)


def test_a_small_fit_does_not_load_numba():
    code = (
        "import sys, numpy as np; from calib.calibrators import AffineCalibrator; "
        "p = np.log(np.full((100, 4), 0.25)); y = np.arange(100) % 4; "
        "AffineCalibrator().fit(p, y, kind='logprobs').predict_proba(p, kind='logprobs'); "
        "print('numba' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
