"""Bootstrap percentile confidence intervals.

Source: paper 000, App. E (Efron & Tibshirani 1993): draw B resamples of size N with replacement,
compute the metric on each, and take the alpha/2 and 1 - alpha/2 percentiles. A metric that trains
a calibrator (tt or xv) must refit it on every resample; for xv the statistic receives the
original sample ids (``groups``) so duplicates of one sample stay in one fold.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from calib.validation import CalibInputError, check_positive_int


@dataclass(frozen=True)
class BootstrapResult:
    """The full-data estimate, the percentile interval and the B resampled values (per output)."""

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray
    values: np.ndarray


def bootstrap_indices(n_samples: int, *, n_boot: int, seed) -> np.ndarray:
    """A (B, N) matrix of resample indices, drawn at once from ``numpy.random.default_rng(seed)``."""
    n = check_positive_int(n_samples, "n_samples")
    b = check_positive_int(n_boot, "n_boot")
    return np.random.default_rng(seed).integers(0, n, size=(b, n))


def percentile_interval(values, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The (alpha/2, 1 - alpha/2) percentiles of ``values`` along axis 0."""
    if not 0 < alpha < 1:
        raise CalibInputError(f"alpha must be in (0, 1), e.g. 0.05 for a 95% interval; got {alpha!r}")
    low, high = np.percentile(np.asarray(values, dtype=np.float64), [50 * alpha, 100 - 50 * alpha], axis=0)
    return low, high


def bootstrap(
    statistic: Callable[..., float | np.ndarray], *arrays, n_boot: int, seed, alpha: float = 0.05
) -> BootstrapResult:
    """Percentile CI of ``statistic(*resampled_arrays, groups=ids)`` over ``n_boot`` resamples.

    ``arrays`` share their first dimension N; ``groups`` holds the original sample ids of the
    resample (0..N-1 for the full data). The statistic may return a vector of metrics.
    """
    if not arrays:
        raise CalibInputError("bootstrap needs at least one data array to resample")
    n = len(arrays[0])
    if any(len(a) != n for a in arrays):
        raise CalibInputError("all arrays passed to bootstrap must have the same number of samples (rows)")
    full_ids = np.arange(n)
    estimate = np.atleast_1d(np.asarray(statistic(*arrays, groups=full_ids), dtype=np.float64))
    indices = bootstrap_indices(n, n_boot=n_boot, seed=seed)
    values = np.stack(
        [
            np.atleast_1d(np.asarray(statistic(*(a[ids] for a in arrays), groups=ids), dtype=np.float64))
            for ids in indices
        ]
    )
    low, high = percentile_interval(values, alpha)
    return BootstrapResult(estimate, low, high, values)
