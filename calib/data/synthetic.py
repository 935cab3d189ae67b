"""Synthetic Gaussian posteriors: the calibrated system and its miscalibrated versions.

Source: Ferrer & Ramos (2024), App. C. K classes; class H1 (index 0) has prior P1 and
the others (1 - P1)/(K - 1). Features of class i are N(mu_i, variance I_K) with mu_i = sqrt(0.5) e_i
(means at unit distance). The exact likelihoods give four systems:
- ``cal``: posteriors with the data priors (perfectly calibrated);
- ``mcp``: posteriors with mismatched priors, 0.1/(K-1) everywhere but ``mismatch_prior`` (0.9) on
  the last class;
- ``mcs``: log_softmax(scale * cal) (over-confident for scale > 1, under-confident below 1);
- ``mcps``: log_softmax(scale * mcp).

Two RNG modes. ``rng="default"``: ``numpy.random.default_rng(seed)``, class counts rounded to the
nearest integer (App. C, step 2) by largest remainders, so they add up to N.
``rng="paper"``: replays the authors' stream exactly (legacy ``RandomState(seed)``, counts
``int(P_i N)`` truncated, so N may lose a sample; scipy multivariate-normal draws class by class).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.special import log_softmax

from calib.validation import CalibInputError, Choice, check, check_positive_int

RNG_MODES = ("default", "paper")
SYSTEMS = ("cal", "mcp", "mcs", "mcps")


@dataclass(frozen=True)
class SyntheticSet:
    """Labels, the log-posteriors of each system (name -> (N, K) array) and, in paper mode, the
    legacy RNG as the draw left it (the authors' later steps continue that stream)."""

    labels: np.ndarray
    systems: dict[str, np.ndarray] = field(default_factory=dict)
    legacy_rng: np.random.RandomState | None = None


def class_priors(n_classes: int, prior1: float) -> np.ndarray:
    """[P1, (1 - P1)/(K - 1), ...] (App. C, step 1)."""
    if not 0 < prior1 < 1:
        raise CalibInputError(f"prior1 must be in (0, 1); got {prior1!r}")
    return np.array([prior1] + [(1 - prior1) / (n_classes - 1)] * (n_classes - 1))


def mismatched_priors(n_classes: int, mismatch_prior: float) -> np.ndarray:
    """[(1 - P)/(K - 1), ..., P] with P = ``mismatch_prior`` on the last class (App. C, step 5)."""
    if not 0 < mismatch_prior < 1:
        raise CalibInputError(f"mismatch_prior must be in (0, 1); got {mismatch_prior!r}")
    return np.array([(1 - mismatch_prior) / (n_classes - 1)] * (n_classes - 1) + [mismatch_prior])


def class_sizes(priors: np.ndarray, n_samples: int, rng_mode: str) -> np.ndarray:
    """Samples per class: truncated ``int(P_i N)`` (paper) or rounded, summing to N (default)."""
    if rng_mode == "paper":
        return np.array([int(p * n_samples) for p in priors])
    exact = priors * n_samples
    sizes = np.floor(exact).astype(np.int64)
    remainder = np.argsort(-(exact - sizes), kind="stable")[: n_samples - sizes.sum()]
    sizes[remainder] += 1  # largest remainders: the nearest integers that still add up to N
    return sizes


def _features(sizes: np.ndarray, variance: float, seed: int, legacy: np.random.RandomState | None) -> np.ndarray:
    k = sizes.size
    means = np.sqrt(0.5) * np.eye(k)
    if legacy is not None:
        # The draws of scipy.stats.multivariate_normal.rvs(mean, cov, size, random_state=legacy) (the authors'
        # call), which hands the same arguments to the generator's own method.
        draws = [
            np.reshape(legacy.multivariate_normal(means[i], variance * np.eye(k), size=int(m)), (m, k))
            for i, m in enumerate(sizes)
            if m > 0
        ]
        return np.concatenate(draws)
    rng = np.random.default_rng(seed)
    return np.repeat(means, sizes, axis=0) + np.sqrt(variance) * rng.standard_normal((int(sizes.sum()), k))


def gaussian_log_likelihoods(x: np.ndarray, variance: float) -> np.ndarray:
    """log N(x; sqrt(0.5) e_k, variance I) for each class k (App. C, step 4), shape (N, K)."""
    k = x.shape[1]
    sq_dist = np.sum(x**2, axis=1, keepdims=True) - np.sqrt(2.0) * x + 0.5
    return -0.5 * k * np.log(2 * np.pi * variance) - sq_dist / (2 * variance)


def gaussian_posteriors(
    *,
    n_classes: int,
    n_samples: int,
    prior1: float,
    variance: float,
    scale: float = 5.0,
    mismatch_prior: float = 0.9,
    seed: int,
    rng: str = "default",
) -> SyntheticSet:
    """The cal / mcp / mcs / mcps systems of App. C on one draw of Gaussian features."""
    k = check_positive_int(n_classes, "n_classes", minimum=2)
    n = check_positive_int(n_samples, "n_samples")
    check(rng, Choice(RNG_MODES), "rng")
    if not variance > 0 or not np.isfinite(variance):
        raise CalibInputError(f"variance must be a positive number; got {variance!r}")
    if not scale > 0 or not np.isfinite(scale):
        raise CalibInputError(f"scale must be a positive number; got {scale!r}")
    priors = class_priors(k, prior1)
    sizes = class_sizes(priors, n, rng)
    labels = np.repeat(np.arange(k), sizes)
    legacy = np.random.RandomState(seed) if rng == "paper" else None
    llk = gaussian_log_likelihoods(_features(sizes, variance, seed, legacy), variance)
    cal = log_softmax(llk + np.log(priors), axis=1)
    mcp = log_softmax(llk + np.log(mismatched_priors(k, mismatch_prior)), axis=1)
    systems = {
        "cal": cal,
        "mcp": mcp,
        "mcs": log_softmax(scale * cal, axis=1),
        "mcps": log_softmax(scale * mcp, axis=1),
    }
    return SyntheticSet(labels=labels, systems=systems, legacy_rng=legacy)
