"""The 1-D Gaussian mixture and its logistic models (Vaicenavicius et al. (2019), Sect. 5.1, App. C.1).

Y in {-1, +1} with P(Y = -1) = P(Y = 1) = 1/2 and X | Y ~ N(Y, 1), so P(Y = -1 | X = x) =
sigma(-2x). A model predicts g_1(x) = sigma(beta0 + beta1 x) for class -1 (column 0, label 0) and
1 - g_1 for class +1 (column 1, label 1). The paper's models: perfect (0, -2), constant (0, 0) and
uncalibrated (1, 1), whose expected miscalibration is eta_TV ~ 0.56 (0.56375 by quadrature).

The calibration function on column 0 is r_1(mu) = sigma(-2x) at x = (logit mu - beta0) / beta1
(the constant model has one prediction, sigma(beta0), and r_1 = 1/2 there). Expected
miscalibration (eq. 5) and the fixed-partition limit of Theorem 2, sum_i P(cell i) d(E[r | cell],
E[g | cell]), are integrals over the mixture density, computed by adaptive quadrature.

SciPy's quadrature and root finding are imported inside the functions that use them: a command or job that never
calls them starts without loading them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit, logit

from calib.calibration_errors.miscalibration import distance
from calib.validation import Choice, check, check_positive_int

MODELS = {"perfect": (0.0, -2.0), "constant": (0.0, 0.0), "uncalibrated": (1.0, 1.0)}
# The mixture density is below 1e-20 outside this interval.
_SUPPORT = (-11.0, 11.0)


def _unit_normal_pdf(x, mean: float) -> np.ndarray:
    """N(x; mean, 1) = exp(-(x - mean)^2 / 2) / sqrt(2 pi), in the order scipy.stats.norm.pdf evaluates it."""
    z = np.asarray(x, dtype=np.float64) - mean
    return np.exp(-(z**2) / 2.0) / np.sqrt(2 * np.pi)


def density(x) -> np.ndarray:
    """The mixture density 1/2 N(x; -1, 1) + 1/2 N(x; 1, 1)."""
    return 0.5 * (_unit_normal_pdf(x, -1.0) + _unit_normal_pdf(x, 1.0))


def true_posterior(x) -> np.ndarray:
    """P(Y = -1 | X = x) = sigma(-2x)."""
    return expit(-2.0 * np.asarray(x, dtype=np.float64))


def _binary_distance(gap: float, name: str) -> float:
    """d((r, 1 - r), (g, 1 - g)) for r - g = ``gap``."""
    return float(distance(np.array([gap, -gap]), np.zeros(2), name))


@dataclass(frozen=True)
class LogisticModel:
    """g_1(x) = sigma(beta0 + beta1 x), the probability of class -1."""

    beta0: float
    beta1: float

    @classmethod
    def named(cls, name: str) -> LogisticModel:
        check(name, Choice(tuple(sorted(MODELS))), "model")
        return cls(*MODELS[name])

    def predictions(self, x) -> np.ndarray:
        """(N, 2) predictions (g_1, 1 - g_1) at inputs ``x``."""
        g1 = expit(self.beta0 + self.beta1 * np.asarray(x, dtype=np.float64))
        return np.column_stack([g1, 1.0 - g1])

    def calibration_function(self, mu) -> np.ndarray:
        """r_1(mu) = P(Y = -1 | g_1(X) = mu) for predictions ``mu`` the model makes."""
        mu = np.asarray(mu, dtype=np.float64)
        if self.beta1 == 0.0:
            return np.full(mu.shape, 0.5)
        return true_posterior((logit(mu) - self.beta0) / self.beta1)

    def _integral(self, f, lo, hi) -> float:
        # scipy.integrate and scipy.optimize are imported where used: drawing samples needs neither, and
        # the jobs that only resample tables should not pay for importing them.
        from scipy.integrate import quad

        return quad(lambda x: density(x) * f(x), lo, hi, limit=200, epsabs=1e-13, epsrel=1e-12)[0]

    def _gap(self, x) -> float:
        return float(true_posterior(x) - expit(self.beta0 + self.beta1 * x))

    def expected_miscalibration(self, name: str = "tv") -> float:
        """eta_d = E[d(r(g(X)), g(X))] (eq. 5); for two classes d depends only on r_1 - g_1."""
        if self.beta1 == 0.0:
            return _binary_distance(0.5 - expit(self.beta0), name)
        lo, hi = _SUPPORT
        cuts = [lo, *self._gap_roots(), hi]
        pieces = zip(cuts[:-1], cuts[1:], strict=True)
        return sum(self._integral(lambda x: _binary_distance(self._gap(x), name), a, b) for a, b in pieces)

    def _gap_roots(self) -> list[float]:
        from scipy.optimize import brentq

        grid = np.linspace(*_SUPPORT, 4001)
        gaps = np.array([self._gap(x) for x in grid])
        changes = np.flatnonzero(np.sign(gaps[:-1]) * np.sign(gaps[1:]) < 0)
        return [brentq(self._gap, grid[i], grid[i + 1], xtol=1e-14) for i in changes]

    def fixed_partition_limit(self, n_bins: int, name: str = "tv") -> float:
        """lim_n eta_hat_d for M equal bins [k/M, (k+1)/M) on g_1 (Theorem 2, the proof's Jensen bound)."""
        m = check_positive_int(n_bins, "n_bins")
        if self.beta1 == 0.0:
            return self.expected_miscalibration(name)
        edges_x = (logit(np.arange(1, m) / m) - self.beta0) / self.beta1
        cuts = np.sort(np.concatenate([[_SUPPORT[0]], np.clip(edges_x, *_SUPPORT), [_SUPPORT[1]]]))
        total = 0.0
        for a, b in zip(cuts[:-1], cuts[1:], strict=True):
            if b <= a:
                continue
            mass = self._integral(lambda x: 1.0, a, b)
            mean_gap = self._integral(self._gap, a, b) / mass if mass > 0 else 0.0
            total += mass * _binary_distance(mean_gap, name)
        return total


def sample(model: LogisticModel, n_samples: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(predictions (N, 2), labels) for N draws: label 0 is class -1, label 1 is class +1."""
    n = check_positive_int(n_samples, "n_samples")
    labels = rng.integers(0, 2, size=n)
    x = rng.normal(2.0 * labels - 1.0, 1.0)
    return model.predictions(x), labels
