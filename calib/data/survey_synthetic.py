"""The survey's synthetic data: Silva Filho et al. (2023), Sects. 5.2 and 5.4, Figs. 11-20.

Binary: Y ~ Bernoulli(0.5) and a hidden H ~ Bernoulli(0.5); X | Y, H is Gaussian with (mean,
variance) (-4, 960) and (64, 1280) for the positive class Y = 1, (4, 980) and (-72, 1024) for the
other. The second parameter is a variance, not a standard deviation: with variances the pseudo-model
scores stay near [0.1, 0.9], as the survey describes them (Sect. 5.2), while standard deviations that
large would push them to 0 and 1. Three classes: Y uniform on three classes, the first two as above and
X | Y = 3 ~ N(0, 8). Labels follow this library's convention:
in the binary set index 1 is the survey's positive class Y = 1 (its posterior increases with x);
in the 3-class set index j is the survey's class j + 1.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, logsumexp
from scipy.stats import norm

from calib.validation import CalibInputError, check_positive_int

# (mean, variance) of the two mixture components of each class, positive class first.
POSITIVE = ((-4.0, 960.0), (64.0, 1280.0))
NEGATIVE = ((4.0, 980.0), (-72.0, 1024.0))
THIRD = ((0.0, 8.0),)
UNDER_SLOPE, OVER_SLOPE = 0.01, 0.05  # the pseudo-models sigmoid(a x)


def _log_density(x: np.ndarray, components) -> np.ndarray:
    """log of the equal-weight mixture density of ``components`` at ``x``."""
    logs = [norm.logpdf(x, loc=m, scale=np.sqrt(v)) for m, v in components]
    return logsumexp(np.stack(logs), axis=0) - np.log(len(components))


def class_log_densities(x, n_classes: int = 2) -> np.ndarray:
    """log p(x | class), shape (N, K), columns in label order (binary: negative, positive)."""
    x = np.asarray(x, dtype=np.float64)
    if n_classes == 2:
        return np.column_stack([_log_density(x, NEGATIVE), _log_density(x, POSITIVE)])
    if n_classes == 3:
        return np.column_stack([_log_density(x, POSITIVE), _log_density(x, NEGATIVE), _log_density(x, THIRD)])
    raise CalibInputError(f"n_classes must be 2 or 3 (the survey's two settings); got {n_classes}")


def bayes_log_posteriors(x, n_classes: int = 2) -> np.ndarray:
    """log P(class | x) with equal priors: the Bayes-optimal (perfectly calibrated) posteriors."""
    logd = class_log_densities(x, n_classes)
    return logd - logsumexp(logd, axis=1, keepdims=True)


def sample(n_samples: int, n_classes: int = 2, *, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Draw (x, labels): equal class priors, each class an equal mixture of its components."""
    n = check_positive_int(n_samples, "n_samples")
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n_classes, size=n)
    by_class = {2: (NEGATIVE, POSITIVE), 3: (POSITIVE, NEGATIVE, THIRD)}
    if n_classes not in by_class:
        raise CalibInputError(f"n_classes must be 2 or 3 (the survey's two settings); got {n_classes}")
    comps = by_class[n_classes]
    which = rng.integers(0, 2, size=n)
    means = np.array([[c[min(h, len(c) - 1)][0] for h in (0, 1)] for c in comps])
    variances = np.array([[c[min(h, len(c) - 1)][1] for h in (0, 1)] for c in comps])
    x = rng.normal(means[labels, which], np.sqrt(variances[labels, which]))
    return x, labels


def pseudo_model(x, slope: float) -> np.ndarray:
    """Binary posteriors [1 - s, s] of the logistic pseudo-model s = sigmoid(slope x) (Sect. 5.2)."""
    s = expit(slope * np.asarray(x, dtype=np.float64))
    return np.column_stack([1.0 - s, s])


def true_calibration_map(s, slope: float) -> np.ndarray:
    """E[Y = positive | s] for the pseudo-model with ``slope``: the Bayes posterior at x = logit(s) / slope."""
    s = np.clip(np.asarray(s, dtype=np.float64), 1e-15, 1 - 1e-15)
    x = np.log(s / (1.0 - s)) / slope
    return np.exp(bayes_log_posteriors(x, 2)[:, 1])
