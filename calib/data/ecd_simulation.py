"""The simulated binary predictions of "An entropic metric" (2025), Sect. V-A, in two readings.

Both draw u ~ U(-a, a), log-odds t = w u (eqs. 16-17, w = 0.5), the true probability p = sigma(t)
(eq. 18) and the label y ~ Bernoulli(p) (eq. 19). The prediction differs:

- ``noise_space="logit"`` (the paper's text): p_hat = sigma(t + eps) with eps ~ N(0, sigma^2).
- ``noise_space="prob"`` (the reading that reproduces Table I): p_hat = clip(p + eps, delta,
  1 - delta), with eps ~ N(0, sigma^2) added to the probability and delta = 1e-5.

sigma = 0 gives calibrated predictions in both. The text's reading gives a weighted ECE near 0.010
and 0.080 at sigma = 0.5 and 2, far from Table I's 0.1702 and 0.4042; noise added to the probability
reproduces the table. The text lost the range of u; a = 10 (t in (-5, 5)) for the text's reading and a = 7.4
(t in (-3.7, 3.7)) for the table-matching one are reconstructions, set in the experiment configs.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from calib.validation import CalibInputError, Choice, check, check_positive_int

NOISE_SPACES = ("logit", "prob")


def simulate(
    n_samples: int,
    *,
    sigma: float,
    noise_space: str,
    half_width: float,
    weight: float = 0.5,
    clip: float = 1e-5,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """(p_hat, labels): N predicted probabilities of class 1 and their labels."""
    n = check_positive_int(n_samples, "n_samples")
    check(noise_space, Choice(NOISE_SPACES), "noise_space")
    if not sigma >= 0 or not half_width > 0 or not 0 < clip < 0.5:
        raise CalibInputError(f"need sigma >= 0, half_width > 0 and 0 < clip < 0.5; got {sigma}, {half_width}, {clip}")
    t = weight * rng.uniform(-half_width, half_width, size=n)
    p = expit(t)
    labels = (rng.random(n) < p).astype(np.int64)
    noise = sigma * rng.standard_normal(n)
    if noise_space == "logit":
        return expit(t + noise), labels
    return np.clip(p + noise, clip, 1.0 - clip), labels
