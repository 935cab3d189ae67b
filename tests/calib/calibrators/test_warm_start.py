"""Warm starts of the Newton fits on a strided subset (calib.calibrators.warm_start).

The subset only chooses where the full iterations begin and the curvature they start from: with and
without it a fit must reach the same optimum of the full problem (same training loss to float
precision, same predictions to the accuracy the stopping rule guarantees), at sizes where the warm
start is taken.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import log_softmax

from calib.calibrators import (
    DirichletCalibrator,
    MatrixScaling,
    VectorScaling,
    warm_start,
)
from calib.calibrators.matrix_scaling import reference_log_ratios
from calib.calibrators.softmax_regression import SoftmaxObjective, _newton
from calib.calibrators.warm_start import WARM_START_ROWS, warm_start_rows
from calib.scoring.scores import cross_entropy

N = 6 * WARM_START_ROWS  # stride 6: the warm start is taken


def miscalibrated(n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Log-posteriors 1.8x too confident with a class bias, and labels drawn from the true posteriors."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=(n, k)) + np.linspace(0.0, 0.6, k)
    labels = (np.cumsum(np.exp(log_softmax(truth, axis=1)), axis=1) < rng.random((n, 1))).sum(axis=1)
    return log_softmax(1.8 * truth - np.linspace(0.0, 0.6, k), axis=1), np.minimum(labels, k - 1)


def test_the_subset_is_every_stride_th_row_with_every_class():
    labels = np.arange(N) % 7
    rows = warm_start_rows(labels, 7, n_params=10)
    assert rows == slice(0, None, 6)
    assert set(labels[rows]) == set(range(7))


def test_no_subset_for_small_data_or_when_it_would_miss_a_class():
    assert warm_start_rows(np.zeros(4 * WARM_START_ROWS - 1, dtype=int), 2, n_params=10) is None
    assert warm_start_rows(np.zeros(N, dtype=int), 2, n_params=N // 100) is None  # 40 rows per parameter
    periodic = np.arange(N) % 6  # every 6th row is class 0: the subset would hold class 0 only
    assert warm_start_rows(periodic, 6, n_params=10) is None


@pytest.mark.parametrize(
    "make, k",
    [
        (lambda: VectorScaling(features="clr"), 5),
        (lambda: VectorScaling(features="log_posteriors"), 5),
        (lambda: MatrixScaling(features="last_class_ratios", reg_lambda=0), 5),
        (lambda: DirichletCalibrator(reg_lambda=0), 4),
        (lambda: DirichletCalibrator(reg_lambda=0.1), 4),
        (lambda: DirichletCalibrator(reg_lambda=0.1, reference_row=True, normalized=False), 4),
    ],
    ids=["vector clr", "dirichlet diagonal", "matrix survey", "dirichlet", "odir", "odir reference row"],
)
def test_warm_and_cold_fits_reach_the_same_optimum(monkeypatch, make, k):
    logp, labels = miscalibrated(N, k)
    warm = make().fit(logp, labels, kind="logprobs")
    monkeypatch.setattr(warm_start, "MIN_STRIDE", 10**9)  # no subset: the plain Newton fit
    cold = make().fit(logp, labels, kind="logprobs")
    assert warm.converged_ and cold.converged_
    warm_logp = warm.predict_log_proba(logp, kind="logprobs")
    cold_logp = cold.predict_log_proba(logp, kind="logprobs")
    # Both stop at a Newton decrement below 2e-15: the objectives they minimize agree to ~1e-15 and the
    # log-posteriors to ~sqrt(decrement / curvature), far inside 1e-6. (With a penalty the log-loss alone is
    # not stationary at the optimum, and agrees only to about the parameters' 1e-8.)
    assert _objective(warm, logp, labels) == pytest.approx(_objective(cold, logp, labels), abs=1e-13)
    assert np.max(np.abs(warm_logp - cold_logp)) < 1e-6


def _objective(model, logp: np.ndarray, labels: np.ndarray) -> float:
    """The objective the fit minimized at its fitted map: the mean log-loss plus the penalty, if any."""
    if not getattr(model, "reg_lambda_", 0.0):
        return cross_entropy(model.predict_log_proba(logp, kind="logprobs"), labels, kind="logprobs")
    problem = model._objective(logp, labels, model.reg_lambda_, model.reg_mu_)
    rows = problem.free_rows if not problem.all_rows else slice(None)
    return problem.loss_grad(np.concatenate([model.coef_[rows].ravel(), model.intercept_[problem.free_bias]]))[0]


def test_a_poor_starting_curvature_still_reaches_the_optimum():
    """A 25-row subset's Hessian is a poor model of 24576 rows': the decrement stops shrinking fast and
    the exact Hessian takes over, so the fit ends at the same optimum as plain Newton."""
    logp, labels = miscalibrated(N, 5)
    # the survey's matrix scaling: softmax(W z + b) on the log-ratios z to the last class, W[:, K] and b_K fixed at 0
    free_bias = np.arange(5) < 4
    identity = np.eye(5)[:, :-1]
    problem = SoftmaxObjective(
        reference_log_ratios(logp)[:, :-1], labels, 5, free_bias=free_bias, weight_start=identity
    )
    exact, converged = _newton(problem, problem.start())
    assert converged
    exact_hessians = []
    exact_hessian = problem.hessian
    problem.hessian = lambda th: exact_hessians.append(1) or exact_hessian(th)
    theta, converged = _newton(problem, problem.start(), curvature=problem.restricted(slice(0, None, 1000)))
    assert converged
    assert exact_hessians  # the exact Hessian took over
    assert problem.loss_grad(theta)[0] == pytest.approx(problem.loss_grad(exact)[0], abs=1e-13)
