"""Scaling calibrators on log-posteriors: affine / DP and temperature scaling.

Source: Ferrer & Ramos (2024), paper 000, eq. 23: s = softmax(alpha log q + beta), alpha > 0 a
scalar and beta a K-vector (the direction-preserving "DP" transform of Brümmer & van Leeuwen 2006;
Platt scaling for K = 2). beta = 0 gives temperature scaling (Guo et al. 2017; footnote 7).
Parameters minimize the (optionally prior-weighted, eq. 36) cross-entropy in float64. The loss is
convex in (alpha, beta) (log-sum-exp of a linear map), so a damped Newton method with the exact
Hessian reaches the optimum in a few iterations; beta_0 is fixed at 0 (softmax ignores a common
shift) and alpha is kept above 1e-6.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg.blas import dsyrk

from calib.calibrators.base import Calibrator
from calib.calibrators.blas_threads import one_blas_thread
from calib.calibrators.line_search import armijo_step
from calib.rows import log_softmax_rows
from calib.validation import CalibInputError, as_priors, class_counts

# Log-probabilities below this are treated as this value while fitting, so that a posterior of
# exactly 0 (log = -inf) keeps the gradient finite; exp(-700) is ~1e-304.
LOG_FLOOR = -700.0


class AffineCalibrator(Calibrator):
    """DP / affine calibration, softmax(alpha log q + beta) (eq. 23). ``bias=False``: temperature scaling.

    ``priors``: if given, the training cross-entropy weights class h by P_h / N_h (eq. 36).
    """

    def __init__(self, bias: bool = True, priors=None, max_iter: int = 100):
        self.bias = bias
        self.priors = priors
        self.max_iter = max_iter

    def _fit(self, logp: np.ndarray, labels: np.ndarray) -> None:
        k = logp.shape[1]
        n = labels.size
        if self.priors is None:
            weights = np.full(n, 1.0 / n)
        else:
            counts = class_counts(labels, k, need_all=True)
            weights = (as_priors(self.priors, k) / counts)[labels]
        problem = _AffineObjective(np.maximum(logp.T, LOG_FLOOR, order="C"), labels, weights, self.bias)
        with one_blas_thread():  # thin products: threads cost more than they save
            theta, self.converged_ = _newton(problem, max_iter=self.max_iter)
        if not np.all(np.isfinite(theta)):
            raise CalibInputError("affine calibration diverged: check the scores for extreme values")
        self.scale_ = float(theta[0])
        self.bias_ = np.concatenate([[0.0], theta[1:]]) if self.bias else np.zeros(k)

    def _transform(self, logp: np.ndarray) -> np.ndarray:
        z = np.maximum(logp, LOG_FLOOR)
        z *= self.scale_
        z += self.bias_
        return log_softmax_rows(z, overwrite=True)


class TemperatureScaling(AffineCalibrator):
    """Temperature scaling: softmax(alpha log q), eq. 23 with beta = 0; keeps every argmax."""

    def __init__(self, priors=None, max_iter: int = 100):
        super().__init__(bias=False, priors=priors, max_iter=max_iter)


MIN_SCALE = 1e-6


class _AffineObjective:
    """Weighted CE of softmax(alpha x + [0, beta_1..]) with its gradient and Hessian in (alpha, beta_1..).

    Works on x_c = x - max_k x_k (sample by sample), which changes neither the loss nor its
    derivatives, stored transposed as a (K, N) matrix: the sums over classes add K contiguous rows
    and the biases broadcast along N, where numpy's per-sample loops over K entries cost more than
    the arithmetic (the fit at 5·10⁴ x 10 took 0.033 s in (N, K) layout, 0.027 s so). It also works
    on e = exp(alpha x_c + beta - max(beta)) in a preallocated (K, N) buffer: every exponent is
    at most 0 and the per-sample sums s are at least exp(min(beta) - max(beta)), so nothing overflows and,
    while the biases span less than 500, no such sum underflows (beyond that, each sample's exact maximum
    is subtracted). The derivatives are weighted sums over e with sample weights w / s, so the
    probabilities e / s are never formed; ``loss`` keeps e and s of the point it evaluated, which the
    line search accepts, so ``derivatives`` there needs no second exponential.
    """

    def __init__(self, x: np.ndarray, labels: np.ndarray, weights: np.ndarray, bias: bool):
        """``x``: the log-posteriors transposed, (K, N) C-ordered, a fresh array the objective takes over."""
        self.labels, self.weights, self.bias = labels, weights, bias
        self.n_params = x.shape[0] if bias else 1
        self.x = x  # taken over: centred in place
        x -= x.max(axis=0)
        self.x_true = self.x[labels, np.arange(labels.size)]
        self.class_weights = np.bincount(labels, weights=weights, minlength=x.shape[0])
        self.exp_logits = np.empty_like(x)
        self.work = np.empty_like(x)
        self._evaluated = None

    def start(self) -> np.ndarray:
        return np.concatenate([[1.0], np.zeros(self.n_params - 1)])

    def _biases(self, theta: np.ndarray) -> np.ndarray:
        return np.concatenate([[0.0], theta[1:]]) if self.bias else np.zeros(self.x.shape[0])

    def loss(self, theta: np.ndarray) -> float:
        scale, biases = theta[0], self._biases(theta)
        e = np.multiply(self.x, scale, out=self.exp_logits)
        if not self.bias:
            shift = np.zeros(1)
        elif biases.max() - biases.min() < 500.0:
            e += (biases - biases.max())[:, None]
            shift = np.full(1, biases.max())
        else:  # exp(-500) is far from underflow; beyond, shift each sample by its exact maximum
            e += biases[:, None]
            shift = e.max(axis=0)
            e -= shift
        np.exp(e, out=e)
        self.sums = e.sum(axis=0)
        value = float(np.dot(self.weights, shift + np.log(self.sums) - scale * self.x_true - biases[self.labels]))
        self._evaluated = (theta.copy(), value)
        return value

    def derivatives(self, theta: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        if self._evaluated is None or not np.array_equal(self._evaluated[0], theta):
            self.loss(theta)
        loss = self._evaluated[1]
        w, x, e = self.weights, self.x, self.exp_logits
        row_weights = w / self.sums  # p = e / s
        ex = np.multiply(e, x, out=self.work)
        mean_x = ex.sum(axis=0) / self.sums  # E_p[x] per sample
        grad = [float(np.dot(w, mean_x - self.x_true))]
        h_aa = float(np.dot(row_weights, np.einsum("kn,kn->n", ex, x)) - np.dot(w, mean_x**2))
        if not self.bias:
            return loss, np.array(grad), np.array([[h_aa]])
        # sum_i w_i p_i and sum_i w_i E_p[x] p_i
        wp, wp_mean = (e @ np.column_stack([row_weights, row_weights * mean_x])).T
        grad.extend((wp - self.class_weights)[1:])
        h_ab = (ex @ row_weights - wp_mean)[1:]
        scaled = np.multiply(e, np.sqrt(w) / self.sums, out=self.work)
        gram = dsyrk(1.0, scaled.T, trans=1)  # sum_i w_i p_i p_i^T (upper triangle)
        h_bb = np.diag(wp) - (np.triu(gram) + np.triu(gram, 1).T)
        hess = np.empty((self.n_params, self.n_params))
        hess[0, 0], hess[0, 1:], hess[1:, 0], hess[1:, 1:] = h_aa, h_ab, h_ab, h_bb[1:, 1:]
        return loss, np.array(grad), hess


def _newton_step(grad: np.ndarray, hess: np.ndarray, free: np.ndarray) -> np.ndarray:
    """Newton step over the ``free`` parameters (a tiny ridge keeps a flat direction solvable)."""
    step = np.zeros_like(grad)
    if free.any():
        h = hess[np.ix_(free, free)]
        ridge = 1e-12 * max(np.trace(h) / h.shape[0], 1e-300)
        step[free] = -np.linalg.solve(h + ridge * np.eye(h.shape[0]), grad[free])
    return step


# A full Newton step from a decrement below this ends the fit: the iterations converge quadratically
# (measured: next decrement about 0.5 x decrement^2, e.g. 1.4e-9 -> 1.1e-18 at K = 10 and 100), so
# the next decrement would be ~1e-17, below the 2e-14 stopping threshold; checking it would cost
# one more evaluation of the derivatives.
_LAST_STEP_DECREMENT = 1e-8


def _newton(problem: _AffineObjective, max_iter: int, tol: float = 1e-14) -> tuple[np.ndarray, bool]:
    """Damped Newton with backtracking (Armijo); stops when half the Newton decrement is below ``tol``,
    or after a full step taken at a decrement below _LAST_STEP_DECREMENT.

    The scale is kept at or above MIN_SCALE: at that bound with the gradient pushing down, only
    the biases move (a projected Newton step).
    """
    theta = problem.start()
    for _ in range(max_iter):
        loss, grad, hess = problem.derivatives(theta)
        free = np.ones(theta.size, dtype=bool)
        if theta[0] <= MIN_SCALE and grad[0] > 0:
            free[0] = False
        step = _newton_step(grad, hess, free)
        t = 1.0
        if theta[0] + step[0] < MIN_SCALE:
            t = (theta[0] - MIN_SCALE) / -step[0]
            if t < 1e-12:  # already at the bound: move the biases only
                free[0], t = False, 1.0
                step = _newton_step(grad, hess, free)
        decrement = -float(grad @ step)
        if not decrement > 2 * tol:
            return theta, True
        accepted = armijo_step(problem.loss, theta, step, loss, decrement, t)
        if accepted is None:
            return theta, True  # no decrease possible at float precision: at the optimum
        theta, t = accepted
        if t * step[0] < 0 and theta[0] < MIN_SCALE:
            theta[0] = MIN_SCALE
        elif t == 1.0 and decrement < _LAST_STEP_DECREMENT:
            return theta, True
    return theta, False
