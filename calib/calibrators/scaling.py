"""Scaling calibrators on log-posteriors: affine / DP and temperature scaling.

Source: Ferrer & Ramos (2024), paper 000, eq. 23: s = softmax(alpha log q + beta), alpha > 0 a
scalar and beta a K-vector (the direction-preserving "DP" transform of Brümmer & van Leeuwen 2006;
Platt scaling for K = 2). beta = 0 gives temperature scaling (Guo et al. 2017; footnote 7).
Parameters minimize the (optionally prior-weighted, eq. 36) cross-entropy, in float64, with analytic
gradients and L-BFGS-B; alpha is kept above 1e-6.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from scipy.special import log_softmax

from calib.calibrators.base import Calibrator
from calib.validation import CalibInputError, as_priors, class_counts

# Log-probabilities below this are treated as this value while fitting, so that a posterior of
# exactly 0 (log = -inf) keeps the gradient finite; exp(-700) is ~1e-304.
LOG_FLOOR = -700.0


class AffineCalibrator(Calibrator):
    """DP / affine calibration, softmax(alpha log q + beta) (eq. 23). ``bias=False``: temperature scaling.

    ``priors``: if given, the training cross-entropy weights class h by P_h / N_h (eq. 36).
    """

    def __init__(self, bias: bool = True, priors=None, max_iter: int = 1000):
        self.bias = bias
        self.priors = priors
        self.max_iter = max_iter

    def _fit(self, logp: np.ndarray, labels: np.ndarray) -> None:
        k = logp.shape[1]
        x = np.maximum(logp, LOG_FLOOR)
        n = labels.size
        if self.priors is None:
            weights = np.full(n, 1.0 / n)
        else:
            counts = class_counts(labels, k, need_all=True)
            weights = (as_priors(self.priors, k) / counts)[labels]
        onehot = np.zeros_like(x)
        onehot[np.arange(n), labels] = 1.0
        n_bias = k if self.bias else 0

        def objective(theta):
            z = theta[0] * x + (theta[1:] if n_bias else 0.0)
            logs = log_softmax(z, axis=1)
            loss = -np.sum(weights * logs[np.arange(n), labels])
            dz = (np.exp(logs) - onehot) * weights[:, None]
            grad = np.empty_like(theta)
            grad[0] = np.sum(dz * x)
            if n_bias:
                grad[1:] = dz.sum(axis=0)
            return loss, grad

        theta0 = np.concatenate([[1.0], np.zeros(n_bias)])
        bounds = [(1e-6, None)] + [(None, None)] * n_bias
        result = minimize(
            objective,
            theta0,
            jac=True,
            method="L-BFGS-B",
            bounds=bounds,
            options={"maxiter": self.max_iter, "gtol": 1e-10, "ftol": 1e-15},
        )
        if not np.all(np.isfinite(result.x)):
            raise CalibInputError("affine calibration diverged: check the scores for extreme values")
        self.scale_ = float(result.x[0])
        self.bias_ = result.x[1:] if n_bias else np.zeros(k)
        self.converged_ = bool(result.success)

    def _transform(self, logp: np.ndarray) -> np.ndarray:
        return log_softmax(self.scale_ * np.maximum(logp, LOG_FLOOR) + self.bias_, axis=1)


class TemperatureScaling(AffineCalibrator):
    """Temperature scaling: softmax(alpha log q), eq. 23 with beta = 0; keeps every argmax."""

    def __init__(self, priors=None, max_iter: int = 1000):
        super().__init__(bias=False, priors=priors, max_iter=max_iter)
