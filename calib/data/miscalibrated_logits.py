"""Synthetic "miscalibrated logits" with a known truth, for the recalibration protocol of
"Reassessing calibration" (n.d.).

Source: our own generator, not an experiment of "Reassessing calibration" (n.d.), which has no synthetic
data; it runs that paper's recalibration protocol (Sect. 3) where the truth is known. Draw true logits
z, labels from softmax(z), and show a model the logits scale * z (+ noise). scale > 1 makes the model
over-confident and scale < 1 under-confident; with no noise, temperature scaling (softmax(alpha log q),
:class:`calib.calibrators.TemperatureScaling`) recovers the truth at alpha = 1/scale.

Generative model, for i = 1..N (K classes, one seeded ``numpy.random.Generator``):
1. a latent class c_i ~ Uniform{0, ..., K-1} (the class structure);
2. true logits z_i = margin * e_{c_i} + logit_sd * eps_i, eps_i ~ N(0, I_K);
3. true posteriors softmax(z_i); the label y_i ~ Categorical(softmax(z_i)) (inverse CDF of one
   uniform draw);
4. model logits scale * z_i + noise_sd * xi_i, xi_i ~ N(0, I_K).
The draws happen in this order and xi is always drawn, so for a given seed, N and K the truth
(z, labels) does not depend on ``scale`` or ``noise_sd``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import log_softmax

from calib.validation import CalibInputError, check_positive_int


@dataclass(frozen=True)
class MiscalibratedLogits:
    """One draw: ``true_logits`` z and ``true_probs`` softmax(z) (N, K), ``labels`` (N,) drawn from
    ``true_probs``, ``model_logits`` scale * z + noise_sd * xi (N, K), ``latent_classes`` c (N,)."""

    true_logits: np.ndarray
    true_probs: np.ndarray
    labels: np.ndarray
    model_logits: np.ndarray
    latent_classes: np.ndarray
    scale: float
    noise_sd: float


def miscalibrated_logits(
    n_samples: int,
    n_classes: int,
    *,
    scale: float = 2.0,
    noise_sd: float = 0.0,
    logit_sd: float = 1.0,
    margin: float = 3.0,
    seed: int | None = 0,
) -> MiscalibratedLogits:
    """Draw N samples of the model in the module docstring (true logits, labels, model logits)."""
    n = check_positive_int(n_samples, "n_samples")
    k = check_positive_int(n_classes, "n_classes", minimum=2)
    for name, value, low in (("scale", scale, 0.0), ("noise_sd", noise_sd, None), ("logit_sd", logit_sd, None)):
        if not np.isfinite(value) or value < 0 or (low is not None and value <= low):
            bound = "> 0" if low is not None else ">= 0"
            raise CalibInputError(f"{name} must be finite and {bound}; got {value!r}")
    if not np.isfinite(margin):
        raise CalibInputError(f"margin must be finite; got {margin!r}")
    rng = np.random.default_rng(seed)
    latent = rng.integers(0, k, size=n)
    z = logit_sd * rng.standard_normal((n, k))
    z[np.arange(n), latent] += margin
    probs = np.exp(log_softmax(z, axis=1))
    u = rng.random(n)
    labels = np.minimum((u[:, None] >= np.cumsum(probs, axis=1)).sum(axis=1), k - 1)
    xi = rng.standard_normal((n, k))
    model = scale * z + noise_sd * xi
    return MiscalibratedLogits(z, probs, labels.astype(np.int64), model, latent, float(scale), float(noise_sd))
