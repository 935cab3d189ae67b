"""Kernel estimators of calibration: Nadaraya-Watson regression, KDE, SmoothECE, calibration-sharpness diagrams.

Sources:

- "Reassessing calibration" (n.d.), "Reassessing how to compare and improve the calibration of machine
  learning models". Nadaraya-Watson regression, eq. 4.8, with the ``y_i`` that
  the printed equation drops from its numerator: m_sigma(x) = sum_i K_sigma(x - x_i) y_i / sum_i
  K_sigma(x - x_i), K_sigma(u) = K(u / sigma) / sigma. Gaussian kernel with sigma the standard
  deviation (default 0.05); Epanechnikov K(u) = 3 (1 - u^2) / 4 on |u| <= 1. The pointwise sharpness
  gap, eq. 4.7, and its NW estimate (App. D): rho(p) = NW_loss(p) - d(m(p), p), with d the squared
  error for the Brier score. The calibration-sharpness diagram (Sec. 4.2, App. D): curve m(p) on a
  uniform grid, band of length p_hat(p) rho(p) centred on it, bottom clipped at 0, and the plug-in
  calibration error averaged over 10 draws of 5000 evaluation points (the authors' code).
- Błasiok & Nakkiran (2023), "Smooth ECE: Principled reliability diagrams via kernel smoothing".
  smECE_sigma = integral over [0, 1] of |r_sigma(t)| dt, where r_sigma(t) = (1/n) sum_i
  K~_sigma(t, f_i) (f_i - y_i) smooths the residuals with the Gaussian kernel reflected at 0 and 1,
  and SmoothECE is smECE at the fixed point sigma* = smECE_{sigma*}, found by bisection. The
  ``"relplot"`` discretization below reproduces the reference package ``relplot`` 1.0.3 (see
  :func:`smooth_ece`).

The kernel density p_hat(x) = (1/n) sum_i K_sigma(x - x_i) is the NW denominator divided by n, so it
integrates to 1 over the real line and p_hat * NW_y integrates to mean(y).

Two ways to evaluate kernel sums, picked by ``method``:

- ``"exact"``: the sums themselves, in blocks of evaluation points (memory O(block * n)).
- ``"grid"``: the data are linearly binned onto a uniform grid of G nodes covering [0, 1] and the
  data (spacing h), convolved with the kernel sampled at the nodes by FFT
  and linearly interpolated to the evaluation points. Linear binning keeps each sample's mass and
  centre of mass, so binning plus interpolation err by about (h / sigma)^2 / 4 times the kernel peak
  K_sigma(0) at most (second differences of a smooth kernel). The Epanechnikov kernel has kinks at
  |u| = sigma, where the error is first order in h / sigma. Default grids: at least 2^12 + 1 nodes
  and h <= sigma / 128 (Gaussian) or sigma / 1024 (Epanechnikov), i.e. 4097 and 32769 nodes on
  [0, 1] at sigma = 0.05. Measured against the exact sums (n = 20000, sigma in [0.01, 0.1]): density
  within ~1e-6 K_sigma(0) and NW within ~3e-6 for the Gaussian, ~5e-6 for the Epanechnikov kernel.
- ``"auto"`` (default): exact when n * n_eval <= 2^24, else grid.

Where the density is negligible, p_hat(x) < 1e-10 K_sigma(0) (for the Gaussian that is farther than
about 6.8 sigma from all data, or a little closer to a few isolated points of a large sample), NW
returns NaN instead of a 0/0 and no floating-point warning is raised; the KDE returns 0 there. Just
above that floor the grid NW also carries FFT round-off, up to ~1e-5 where p_hat < 1e-9 K_sigma(0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import numpy as np
from scipy import fft, sparse

from calib._internal.rows import float_chunks
from calib.validation import (
    CalibInputError,
    Choice,
    as_labels,
    as_probs,
    as_sample_weights,
    as_vector,
    check,
    check_positive_int,
)

KERNELS = ("gaussian", "epanechnikov")
METHODS = ("auto", "exact", "grid")
SMECE_DISCRETIZATIONS = ("relplot", "fine")
SUBSAMPLE_MODES = ("eval_points", "data")

# NW is undefined (NaN) where the density falls below this fraction of the kernel peak K_sigma(0).
_DENSITY_FLOOR = 1e-10
# "auto" uses exact sums up to this many (data, evaluation point) pairs.
_EXACT_MAX_PAIRS = 2**24
# Kernel matrices in the exact method hold at most this many entries per block (16 MiB).
_BLOCK_ENTRIES = 2**21
# The sampled Gaussian is cut at this many standard deviations (exp(-8.5^2 / 2) ~ 2e-16).
_GAUSS_CUT = 8.5
# Grid defaults: h <= sigma / 128 (sigma / 1024 for the kinked Epanechnikov) and at least 2^12 intervals.
_GRID_PER_SIGMA = {"gaussian": 128, "epanechnikov": 1024}
# ... but at most 2^22 intervals (32 MiB per column); finer only for bandwidths below ~3e-5.
_GRID_MAX_LOG2 = 22
_GRID_MIN_LOG2 = 12
# SmoothECE constants of the reference package relplot of Błasiok & Nakkiran (2023): the smallest bandwidth of
# the search (eps), the density offset in its normalization, the 10 bisection steps and mesh sizes.
_SMECE_EPS = 1e-3
_RELPLOT_DENSITY_OFFSET = 1e-4
_RELPLOT_REFINE = 10
_RELPLOT_MIN_MESH = 200
_RELPLOT_MIN_BINS = 2000
# The "fine" SmoothECE discretization: h <= sigma / 128 (>= 2^12 intervals) and 40 bisection steps.
_FINE_BISECTIONS = 40
# A fixed SmoothECE bandwidth below this would need grids of millions of nodes (relplot: 10 / sigma).
_SMECE_MIN_BANDWIDTH = 1e-5


# ----------------------------------------------------------------------------------------------
# validation


def _paired(x, y, x_name: str, y_name: str, *, unit: bool = False) -> tuple[np.ndarray, np.ndarray]:
    xa = as_vector(x, x_name, unit=unit)
    ya = as_vector(y, y_name, unit=unit)
    if xa.size != ya.size:
        raise CalibInputError(f"{x_name} has {xa.size} entries but {y_name} has {ya.size}; they must match")
    return xa, ya


def _eval_points(x_eval, name: str = "x_eval") -> tuple[np.ndarray, tuple[int, ...]]:
    try:
        arr = np.asarray(x_eval, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise CalibInputError(f"{name} must be numeric; got {type(x_eval).__name__}") from exc
    if not np.all(np.isfinite(arr)):
        raise CalibInputError(f"{name} must be finite")
    return arr.ravel(), arr.shape


def _check_bandwidth(bandwidth) -> float:
    try:
        value = float(bandwidth)
    except (TypeError, ValueError) as exc:
        raise CalibInputError(f"bandwidth must be a positive number; got {bandwidth!r}") from exc
    if not (math.isfinite(value) and value > 0):
        raise CalibInputError(f"bandwidth must be a positive finite number; got {bandwidth!r}")
    return value


# ----------------------------------------------------------------------------------------------
# kernels and kernel sums


def _kernel_peak(bandwidth: float, kernel: str) -> float:
    """K_sigma(0) of the normalized kernel."""
    return 1.0 / (bandwidth * math.sqrt(2.0 * math.pi)) if kernel == "gaussian" else 0.75 / bandwidth


def _kernel_profile(u: np.ndarray, bandwidth: float, kernel: str) -> np.ndarray:
    """K(u / sigma) / K(0), overwriting the float array ``u``.

    The Gaussian exponent is floored at -700 (exp(-700) ~ 1e-304 is still a normal number): values
    are unchanged at any precision that matters and numpy avoids its slow subnormal path.
    """
    u /= bandwidth
    u *= u
    if kernel == "gaussian":
        u *= -0.5
        np.maximum(u, -700.0, out=u)
        return np.exp(u, out=u)
    np.subtract(1.0, u, out=u)
    return np.maximum(u, 0.0, out=u)


def _kernel_values(u: np.ndarray, bandwidth: float, kernel: str) -> np.ndarray:
    """K_sigma(u), normalized to integrate to 1."""
    return _kernel_profile(np.array(u, dtype=np.float64), bandwidth, kernel) * _kernel_peak(bandwidth, kernel)


def _exact_sums(x: np.ndarray, columns: list, x_eval: np.ndarray, bandwidth: float, kernel: str) -> np.ndarray:
    """(1/n) sum_i K_sigma(x_eval - x_i) w_i for each weight column w (None: all ones), in blocks."""
    weights = np.column_stack([np.ones(x.size) if w is None else w for w in columns])
    out = np.empty((x_eval.size, len(columns)))
    block = max(1, _BLOCK_ENTRIES // x.size)
    for start in range(0, x_eval.size, block):
        stop = min(start + block, x_eval.size)
        k = _kernel_profile(x_eval[start:stop, None] - x[None, :], bandwidth, kernel)
        out[start:stop] = k @ weights
    return out * (_kernel_peak(bandwidth, kernel) / x.size)


def _binning_positions(x: np.ndarray, lo: float, hi: float, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """For linear binning onto ``nodes`` uniform nodes of [lo, hi]: each sample's left node j and its
    fraction a of the way to node j + 1."""
    pos = (x - lo) * ((nodes - 1) / (hi - lo))
    left = pos.astype(np.int64)
    np.minimum(left, nodes - 2, out=left)
    return left, np.subtract(pos, left, out=pos)


def _linear_binning(x: np.ndarray, columns: list, lo: float, hi: float, nodes: int) -> np.ndarray:
    """Linear binning onto ``nodes`` uniform nodes of [lo, hi], one output column per weight column.

    A sample at x between nodes j and j + 1 (fraction a of the way) gives (1 - a) w to node j and
    a w to node j + 1, keeping its weight and its centre of mass. A column None stands for weights 1.
    """
    left, frac = _binning_positions(x, lo, hi, nodes)
    out = np.empty((nodes, len(columns)))
    for j, w in enumerate(columns):
        right = frac if w is None else w * frac
        stay = 1.0 - frac if w is None else w - right
        out[:, j] = np.bincount(left, weights=stay, minlength=nodes)
        out[1:, j] += np.bincount(left, weights=right, minlength=nodes)[: nodes - 1]
    return out


def _convolve_nodes(values: np.ndarray, taps: np.ndarray, *, mode: str) -> np.ndarray:
    """Each column of ``values`` (axis 0: grid nodes) convolved with ``taps`` by FFT, cut as ``mode``
    ("same": centred on ``values``; "valid": where the taps lie wholly inside; needs len(taps) <= nodes).

    The same arithmetic as ``scipy.signal.fftconvolve(values, taps[:, None, ...], mode, axes=0)``
    (transform length ``scipy.fft.next_fast_len`` of the full length, centred cut), so the same bits,
    without loading ``scipy.signal``, which a command would otherwise import for this alone.
    """
    full = values.shape[0] + taps.size - 1
    length = fft.next_fast_len(full, real=True)
    # workers: the columns' transforms are independent and each is computed the same way on any thread.
    spectrum = fft.rfft(values, n=length, axis=0, workers=-1)
    spectrum *= fft.rfft(taps, n=length).reshape((-1,) + (1,) * (values.ndim - 1))
    convolved = fft.irfft(spectrum, n=length, axis=0, workers=-1)[:full]
    kept = values.shape[0] if mode == "same" else values.shape[0] - taps.size + 1
    start = (full - kept) // 2
    return convolved[start : start + kept].copy()


def default_grid_points(bandwidth: float, span: float = 1.0, kernel: str = "gaussian") -> int:
    """Default grid nodes over ``span``: at least 2^12 + 1, spacing <= bandwidth / 128 (/ 1024 Epanechnikov)."""
    needed = _GRID_PER_SIGMA[kernel] * span / bandwidth
    return 2 ** min(_GRID_MAX_LOG2, max(_GRID_MIN_LOG2, math.ceil(math.log2(needed)))) + 1


def _grid_sums(
    x: np.ndarray, columns: list, x_eval: np.ndarray, bandwidth: float, kernel: str, grid_points: int | None
) -> np.ndarray:
    """Approximate :func:`_exact_sums`: linear binning, FFT convolution, linear interpolation."""
    lo, hi = min(0.0, float(x.min())), max(1.0, float(x.max()))
    nodes = default_grid_points(bandwidth, hi - lo, kernel) if grid_points is None else grid_points
    step = (hi - lo) / (nodes - 1)
    binned = _linear_binning(x, columns, lo, hi, nodes)
    reach = _GAUSS_CUT * bandwidth if kernel == "gaussian" else bandwidth
    pad = math.ceil(reach / step)
    taps = _kernel_values(np.arange(-pad, pad + 1) * step, bandwidth, kernel)
    padded = np.pad(binned, ((pad, pad), (0, 0)))
    smoothed = _convolve_nodes(padded, taps, mode="same") / x.size
    positions = lo + (np.arange(padded.shape[0]) - pad) * step
    out = np.empty((x_eval.size, len(columns)))
    for col in range(len(columns)):
        out[:, col] = np.interp(x_eval, positions, smoothed[:, col], left=0.0, right=0.0)
    return out


def _kernel_sums(x, columns, x_eval, bandwidth, kernel, method, grid_points) -> np.ndarray:
    if method == "auto":
        method = "exact" if x.size * x_eval.size <= _EXACT_MAX_PAIRS else "grid"
    if method == "exact":
        return _exact_sums(x, columns, x_eval, bandwidth, kernel)
    return _grid_sums(x, columns, x_eval, bandwidth, kernel, grid_points)


def _common_options(bandwidth, kernel, method, grid_points) -> tuple[float, str, str, int | None]:
    bandwidth = _check_bandwidth(bandwidth)
    check(kernel, Choice(KERNELS), "kernel")
    check(method, Choice(METHODS), "method")
    if grid_points is not None:
        grid_points = check_positive_int(grid_points, "grid_points", minimum=3)
    return bandwidth, kernel, method, grid_points


def _density_and_means(x, targets: list, x_eval, bandwidth, kernel, method, grid_points, weights=None):
    """KDE at ``x_eval`` (0 below the floor) and the NW means of each target vector (NaN there), each sample
    weighing ``weights`` (None: 1 each; the density is then the weighted one, of mean weight 1)."""
    if weights is None:
        sums = _kernel_sums(x, [None, *targets], x_eval, bandwidth, kernel, method, grid_points)
    else:
        columns = [weights, *(weights * t for t in targets)]
        sums = _kernel_sums(x, columns, x_eval, bandwidth, kernel, method, grid_points) / weights.mean()
    density = sums[:, 0]
    defined = density >= _DENSITY_FLOOR * _kernel_peak(bandwidth, kernel)
    means = np.full((x_eval.size, len(targets)), np.nan)
    np.divide(sums[:, 1:], density[:, None], out=means, where=defined[:, None])
    return np.where(defined, density, 0.0), means


def kde(x_data, x_eval, *, bandwidth=0.05, kernel: str = "gaussian", method: str = "auto", grid_points=None):
    """Kernel density estimate p_hat(x) = (1/n) sum_i K_sigma(x - x_i) at ``x_eval`` (same shape).

    ``kernel`` is ``"gaussian"`` (``bandwidth`` = standard deviation) or ``"epanechnikov"`` (support
    |u| <= bandwidth); the estimate integrates to 1 over the real line (no boundary correction).
    ``method`` and ``grid_points`` choose exact or FFT-grid sums (module docstring). Both return 0
    where the density is below 1e-10 K_sigma(0), so the grid method never returns a negative value.
    """
    bandwidth, kernel, method, grid_points = _common_options(bandwidth, kernel, method, grid_points)
    x = as_vector(x_data, "x_data")
    points, shape = _eval_points(x_eval)
    density, _ = _density_and_means(x, [], points, bandwidth, kernel, method, grid_points)
    return density.reshape(shape)


def nadaraya_watson(
    x_data,
    y_data,
    x_eval,
    *,
    bandwidth=0.05,
    kernel: str = "gaussian",
    method: str = "auto",
    grid_points=None,
    sample_weight=None,
):
    """Nadaraya-Watson regression of ``y_data`` on ``x_data`` at ``x_eval`` ("Reassessing calibration"
    (n.d.), eq. 4.8, with y_i).

    m(x) = sum_i K_sigma(x - x_i) y_i / sum_i K_sigma(x - x_i); NaN where the density p_hat(x) is below
    1e-10 K_sigma(0). With ``sample_weight`` (one weight >= 0 per sample), m(x) = sum_i w_i K_sigma(x - x_i)
    y_i / sum_i w_i K_sigma(x - x_i), the density weighted alike (Nadaraya (1964), Watson (1964)). Options as
    in :func:`kde`. Returns an array of ``x_eval``'s shape.
    """
    bandwidth, kernel, method, grid_points = _common_options(bandwidth, kernel, method, grid_points)
    x, y = _paired(x_data, y_data, "x_data", "y_data")
    w = as_sample_weights(sample_weight, x.size)
    points, shape = _eval_points(x_eval)
    _, means = _density_and_means(x, [y], points, bandwidth, kernel, method, grid_points, w)
    return means[:, 0].reshape(shape)


# ----------------------------------------------------------------------------------------------
# SmoothECE


class _BinningCache:
    """Linear binning of weight columns onto uniform grids of [0, 1], kept per node count; ``total`` is the
    samples' total weight (their number when unweighted)."""

    def __init__(self, confidence: np.ndarray, columns: list, total: float):
        self.confidence = confidence
        self.columns = columns
        self.total = total
        self.grids: dict[int, np.ndarray] = {}

    def binned(self, nodes: int) -> np.ndarray:
        if nodes not in self.grids:
            self.grids[nodes] = _linear_binning(self.confidence, self.columns, 0.0, 1.0, nodes)
        return self.grids[nodes]


def _relplot_nodes(sigma: float) -> int:
    """The binning nodes of relplot's discretization at bandwidth ``sigma``."""
    return max(_RELPLOT_MIN_BINS, round(20.0 / sigma)) // 2 + 1


def _smece_relplot(cache: _BinningCache, sigma: float) -> float:
    """smECE_sigma discretized exactly as relplot 1.0.3 (``relplot.metrics.smECE_sigma``) does.

    - Residuals and ones are linearly binned onto B = max(2000, round(20 / sigma)) // 2 + 1 nodes of
      [0, 1].
    - They are convolved with the Gaussian density sampled at the B offsets linspace(0, 1, B) - 0.5
      (cut at |u| <= 1/2; a half-node shift when B is even), after mirroring the node values once
      about 0 and about 1 without repeating the end nodes (one reflection per side).
    - Both are interpolated linearly to the mesh linspace(0, 1, T), T = max(200, round(10 / sigma)).
    - smECE = sum_t |R(t)| / sum_t (D(t) + 1e-4), where R and D are the smoothed residual and count;
      sum_t D(t) is close to n (T - 1), so the offset changes the value by a relative ~1e-4 / n.
    """
    return float(_relplot_values(cache.binned(_relplot_nodes(sigma))[:, :, None], sigma)[0])


def _relplot_values(binned: np.ndarray, sigma: float) -> np.ndarray:
    """:func:`_smece_relplot` of each of b binned problems at once: ``binned`` (nodes, 2, b) holds each
    problem's binned residuals and counts; one FFT convolution smooths them all."""
    nodes = binned.shape[0]
    mesh = np.linspace(0.0, 1.0, max(_RELPLOT_MIN_MESH, round(10.0 / sigma)))
    taps = _kernel_values(np.linspace(0.0, 1.0, nodes) - 0.5, sigma, "gaussian")
    mirrored = np.pad(binned, ((nodes - 1, nodes - 1), (0, 0), (0, 0)), mode="reflect")
    full = _convolve_nodes(mirrored, taps, mode="valid")
    smoothed = full[nodes // 2 : nodes // 2 + nodes]
    node_x = np.linspace(0.0, 1.0, nodes)
    values = np.empty(binned.shape[2])
    for j in range(values.size):
        residual = np.interp(mesh, node_x, smoothed[:, 0, j])
        count = np.interp(mesh, node_x, smoothed[:, 1, j])
        values[j] = np.abs(residual).sum() / (count + _RELPLOT_DENSITY_OFFSET).sum()
    return values


def _smece_fine(cache: _BinningCache, sigma: float) -> float:
    """smECE_sigma = int_0^1 |(1/n) sum_i K~_sigma(t, f_i) r_i| dt with the fully reflected Gaussian.

    K~_sigma(t, f) = sum_k [phi_sigma(t - f - 2k) + phi_sigma(t + f - 2k)] is the density of the
    Gaussian noise folded back into [0, 1] by reflections. The binned residuals (2^p + 1 nodes,
    h = 2^-p <= sigma / 128, p >= 12) are extended evenly to the circle of length 2, smoothed there by
    the periodic Gaussian through its exact Fourier coefficients exp(-pi^2 sigma^2 k^2 / 2), and the
    absolute value is integrated by the trapezoid rule. Error: linear binning adds about h^2 / 6 to
    the kernel variance, a relative error near 1e-5 in smECE at most.
    """
    nodes = default_grid_points(sigma)
    step = 1.0 / (nodes - 1)
    binned = cache.binned(nodes)[:, 0]
    # Even extension to [-1, 1): the end nodes are their own mirror images, so they count twice.
    circle = np.concatenate([binned, binned[-2:0:-1]])
    circle[[0, nodes - 1]] *= 2.0
    freqs = np.arange(circle.size // 2 + 1)
    spectrum = np.exp(-0.5 * (math.pi * sigma * freqs) ** 2) / step
    smoothed = np.fft.irfft(np.fft.rfft(circle) * spectrum, n=circle.size)[:nodes]
    magnitude = np.abs(smoothed)
    integral = step * (magnitude.sum() - 0.5 * (magnitude[0] + magnitude[-1]))
    return float(integral / cache.total)


def _smece_search(evaluate, bisections: int) -> float:
    """The bandwidth of SmoothECE: bisection on [0, 1] for sigma = smECE_sigma, as relplot does.

    smECE_sigma does not increase with sigma (smoothing contracts the L1 norm), so sigma - smECE_sigma
    has one sign change. ``sigma`` counts as "too small" when sigma < eps = 0.001 or sigma <
    smECE_sigma; the upper end of the bracket (the smallest sigma found not too small) is returned.
    """
    if evaluate(1.0) > 1.0:
        return 1.0
    low, high = 0.0, 1.0
    for _ in range(bisections):
        mid = 0.5 * (low + high)
        if mid < _SMECE_EPS or mid < evaluate(mid):
            low = mid
        else:
            high = mid
    return high


def _smece_search_batch(evaluate, n_problems: int, bisections: int) -> np.ndarray:
    """:func:`_smece_search` for ``n_problems`` problems in lockstep, returning each one's smECE at its
    bandwidth (what :func:`smooth_ece` returns after the search).

    ``evaluate(sigma, which)`` gives smECE_sigma of the problems ``which`` (indices). Every step
    bisects all unfinished problems; those at the same midpoint are evaluated together (bisections
    from the same start share their first midpoints), and each problem's value at the upper end of
    its bracket is kept, so the final value needs no evaluation of its own.
    """
    everyone = np.arange(n_problems)
    value = evaluate(1.0, everyone)
    searching = ~(value > 1.0)
    low, high = np.zeros(n_problems), np.ones(n_problems)
    for _ in range(bisections):
        mid = 0.5 * (low + high)
        too_small = mid < _SMECE_EPS
        for sigma in np.unique(mid[searching & ~too_small]):
            which = everyone[searching & ~too_small & (mid == sigma)]
            at_mid = evaluate(float(sigma), which)
            below = sigma < at_mid
            too_small[which] = below
            value[which[~below]] = at_mid[~below]
        low = np.where(searching & too_small, mid, low)
        high = np.where(searching & ~too_small, mid, high)
    return value


class ResampledSmoothEce:
    """SmoothECE (relplot's discretization, bandwidth searched) of resamples of (confidence, correct).

    Linear binning is linear in per-sample weights: a resample that draws sample i c_i times bins
    c_i (f_i - y_i) and c_i at the two nodes around f_i with the same fractions as one draw. So each
    resample's binned residuals and counts on a grid are one sparse product of the samples' binning
    fractions with its counts, with no copy of the resampled data; the FFT smoothing of all
    resamples at one bandwidth is one convolution, and the bisections of all resamples run in
    lockstep (:func:`_smece_search_batch`). Values equal ``smooth_ece_top_label`` of each resample
    up to rounding (the binned sums are added in another order).

    With sample weights w, a resample weighs sample i c_i w_i (the weighted SmoothECE of :func:`smooth_ece`
    on the resample).

    Parameters
    ----------
    confidence : array of shape (N,)
        Confidences in [0, 1] (e.g. max_j q_j).
    correct : array of shape (N,)
        Outcomes (1 if the top label is right, else 0).
    bandwidth : float, optional
        A fixed sigma (as :func:`smooth_ece`'s ``bandwidth``); default None: each resample's fixed point.
    sample_weight : array of shape (N,), optional
        The samples' weights (:func:`calib.validation.as_sample_weights`); default None: 1 each.
    """

    def __init__(self, confidence: np.ndarray, correct: np.ndarray, bandwidth: float | None = None, sample_weight=None):
        self.confidence = confidence
        self.correct = correct  # the residuals are formed chunk by chunk: no third N-vector is kept
        self.bandwidth = bandwidth
        self.sample_weight = as_sample_weights(sample_weight, confidence.size)

    def __call__(self, counts: np.ndarray) -> np.ndarray:
        """SmoothECE of each resample counted by a column of ``counts`` (N, b), an array of sample counts
        (:func:`calib.resampling.bootstrap.resample_counts` or :func:`calib.resampling.bootstrap.counted_resamples`)."""
        binned: dict[int, np.ndarray] = {}

        def evaluate(sigma: float, which: np.ndarray) -> np.ndarray:
            nodes = _relplot_nodes(sigma)
            if nodes not in binned:
                binned[nodes] = self._binned(counts, nodes)
            return _relplot_values(binned[nodes][:, :, which], sigma)

        if self.bandwidth is not None:
            return evaluate(float(self.bandwidth), np.arange(counts.shape[1]))
        return _smece_search_batch(evaluate, counts.shape[1], _RELPLOT_REFINE)

    def _binned(self, counts: np.ndarray, nodes: int) -> np.ndarray:
        """(nodes, 2, b): each resample's linearly binned residuals and counts, chunk of samples by chunk."""
        out = np.zeros((2 * nodes, counts.shape[1]))
        for rows, weights in float_chunks(counts):
            if self.sample_weight is not None:
                weights = weights * self.sample_weight[rows, None]
            left, frac = _binning_positions(self.confidence[rows], 0.0, 1.0, nodes)
            n = frac.size
            # Column i of the (2 nodes, n) matrix: residual r_i weighted (1 - a, a) at nodes j, j + 1,
            # then 1 weighted the same way at nodes + j, nodes + j + 1.
            r = self.confidence[rows] - self.correct[rows]
            data = np.column_stack([r - r * frac, r * frac, 1.0 - frac, frac]).ravel()
            indices = (left[:, None] + [0, 1, nodes, nodes + 1]).ravel()
            matrix = sparse.csc_array((data, indices, np.arange(0, 4 * n + 1, 4)), shape=(2 * nodes, n))
            out += matrix @ weights
        return out.reshape(2, nodes, -1).transpose(1, 0, 2)


def smooth_ece(
    confidence,
    correct,
    *,
    bandwidth=None,
    discretization: str = "relplot",
    return_bandwidth: bool = False,
    sample_weight=None,
):
    """SmoothECE: the calibration error of a kernel-smoothed reliability diagram, without bins.

    smECE_sigma = int_0^1 |r_sigma(t)| dt, where r_sigma(t) = (1/n) sum_i K~_sigma(t, f_i) (f_i - y_i)
    smooths the residuals of the confidences f_i against the outcomes y_i with the Gaussian kernel of
    standard deviation sigma reflected at 0 and 1. SmoothECE takes sigma at the fixed point sigma* =
    smECE_{sigma*}, found by bisection on [0, 1] (a sigma below eps = 0.001 counts as too small).
    Cost: O(n) to bin the data onto a grid of O(1 / sigma) nodes (the binning is cached across the
    search), then one FFT convolution per bandwidth tried: 10 with "relplot", 40 with "fine".

    With sample weights w the empirical measure weighs sample i w_i / sum_j w_j: r_sigma(t) = sum_i w_i
    K~_sigma(t, f_i) (f_i - y_i) / sum_i w_i, the weighted kernel (Nadaraya-Watson) smoothing of the
    residuals, and relplot's smoothed density the weighted one; integer weights give what repeating
    sample i w_i times gives (relplot's density offset 1e-4 is absolute, so scaling every weight by a
    constant changes the "relplot" value by a relative ~1e-4 / sum w).

    Source: Błasiok & Nakkiran (2023) (the definition, the fixed-point bandwidth and the reference
    package ``relplot``); Nadaraya (1964) and Watson (1964) (the kernel regression, here weighted).

    Parameters
    ----------
    confidence : array_like of shape (n,)
        The predicted probabilities f_i in [0, 1] (e.g. top-label confidences); finite, non-empty.
    correct : array_like of shape (n,)
        The outcomes y_i, 0/1 (floats in [0, 1] are accepted); same length as ``confidence``.
    bandwidth : float, optional
        Default None: sigma is the fixed point sigma*. A number >= 1e-5 fixes sigma instead.
    discretization : {"relplot", "fine"}, default "relplot"
        "relplot": the discretization of the reference package ``relplot`` 1.0.3, so values match
        ``relplot.smECE`` / ``relplot.smECE_sigma`` (measured: within 1e-16): its grids of
        max(2000, round(20/sigma)) // 2 + 1 binning nodes and max(200, round(10/sigma)) mesh points,
        its kernel cut at |u| <= 1/2 with one reflection per side, its density offset 1e-4 in the
        normalization, and 10 bisection steps (so sigma* is a multiple of 1/1024, at least 2/1024).
        Computed here with bincount binning and FFT convolution.
        "fine": the definition itself on a finer grid: the fully reflected kernel, grid spacing
        h <= sigma / 128, trapezoid integration and 40 bisection steps; it matches brute-force
        quadrature of the definition to ~1e-6 relative. At a fixed sigma relplot's discretization
        differs from the definition by ~1e-3 relative (up to ~4e-3 measured) for data inside (0, 1),
        but samples exactly at 0 or 1 (e.g. saturated float32 softmax confidences) count about half,
        because its end nodes are not mirrored: 5-15% differences when such samples are common. Its
        kernel cut also lets its smECE_sigma grow slightly with sigma beyond ~0.2, which the
        definition forbids. With ``bandwidth=None`` relplot's coarse bandwidth (a multiple of
        1/1024, rounded up) adds a few % when sigma* is near 0.01.
    return_bandwidth : bool, default False
        Also return the sigma used.
    sample_weight : array_like of shape (n,), optional
        A weight >= 0 per sample (:func:`calib.validation.as_sample_weights`); default None: 1 each.

    Returns
    -------
    float or tuple of (float, float)
        The SmoothECE (a fraction), or ``(value, sigma)`` with ``return_bandwidth``.

    Raises
    ------
    CalibInputError
        For vectors that are empty, not 1-D, of different lengths, non-finite or outside [0, 1], an
        unknown ``discretization``, or a ``bandwidth`` that is not a finite number >= 1e-5.

    Examples
    --------
    >>> value, sigma = smooth_ece([0.2, 0.4, 0.6, 0.8, 0.9], [0, 1, 0, 1, 1], return_bandwidth=True)
    >>> round(value, 4), sigma * 1024
    (0.1247, 130.0)
    >>> round(smooth_ece([0.2, 0.4, 0.6, 0.8, 0.9], [0, 1, 0, 1, 1], bandwidth=0.1), 4)
    0.18
    """
    check(discretization, Choice(SMECE_DISCRETIZATIONS), "discretization")
    f, y = _paired(confidence, correct, "confidence", "correct", unit=True)
    w = as_sample_weights(sample_weight, f.size)
    residual = f - y if w is None else w * (f - y)
    total = f.size if w is None else float(w.sum())
    if discretization == "relplot":
        cache = _BinningCache(f, [residual, w], total)
        evaluate = partial(_smece_relplot, cache)
    else:
        cache = _BinningCache(f, [residual], total)
        evaluate = partial(_smece_fine, cache)
    if bandwidth is None:
        bisections = _RELPLOT_REFINE if discretization == "relplot" else _FINE_BISECTIONS
        sigma = _smece_search(evaluate, bisections)
    else:
        sigma = _check_bandwidth(bandwidth)
        if sigma < _SMECE_MIN_BANDWIDTH:
            raise CalibInputError(f"bandwidth must be >= {_SMECE_MIN_BANDWIDTH:g} for SmoothECE's grids; got {sigma!r}")
    value = evaluate(sigma)
    return (value, sigma) if return_bandwidth else value


def _top_label(scores, labels, kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    probs = as_probs(scores, kind)
    y = as_labels(labels, probs.shape[0], probs.shape[1])
    return probs, y, (probs.argmax(axis=1) == y).astype(np.float64)


def smooth_ece_top_label(
    scores, labels, *, kind: str, bandwidth=None, discretization: str = "relplot", sample_weight=None
) -> float:
    """SmoothECE of the top-label confidence of multiclass posteriors.

    The confidence max_j s_j of each sample is smoothed against whether its argmax (the first class on
    ties) is the true label, and smECE_sigma = int_0^1 |(1/n) sum_i K~_sigma(t, f_i) (f_i - y_i)| dt
    is taken at the fixed point sigma* = smECE_{sigma*} (or at ``bandwidth``), as in
    :func:`smooth_ece`. Cost: O(n K) for the confidences, then as :func:`smooth_ece`.

    Source: Błasiok & Nakkiran (2023), on the confidence-against-correctness view of the top-label
    ECE, Silva Filho et al. (2023), Def. 6.

    Parameters
    ----------
    scores, labels, kind
        Posteriors (n, K), K >= 2, of kind "probs", "logprobs" or "logits", and the true classes
        in [0, K), as :func:`calib.validation.check_inputs` takes them.
    bandwidth : float, optional
        Default None: the fixed point sigma*. A number >= 1e-5 fixes sigma.
    discretization : {"relplot", "fine"}, default "relplot"
        The discretization of ``relplot`` 1.0.3 or the finer one of the definition (see
        :func:`smooth_ece`).
    sample_weight : array of shape (n,), optional
        The samples' weights, as :func:`smooth_ece` takes them; default None: 1 each.

    Returns
    -------
    float
        The SmoothECE of the confidences, a fraction.

    Raises
    ------
    CalibInputError
        For invalid ``scores``, ``labels`` or ``kind``, an unknown ``discretization``, or a
        ``bandwidth`` that is not a finite number >= 1e-5.

    Examples
    --------
    >>> scores = [[0.7, 0.2, 0.1], [0.5, 0.3, 0.2], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6], [0.3, 0.3, 0.4]]
    >>> round(smooth_ece_top_label(scores, [0, 1, 1, 2, 0], kind="probs"), 4)
    0.1669
    """
    probs, _, correct = _top_label(scores, labels, kind)
    return smooth_ece(
        probs.max(axis=1), correct, bandwidth=bandwidth, discretization=discretization, sample_weight=sample_weight
    )


# ----------------------------------------------------------------------------------------------
# calibration-sharpness diagram


def brier_losses_sum(scores, labels, *, kind: str) -> np.ndarray:
    """Per-sample Brier losses sum_j (g_j - 1{j = y})^2, summed over classes ("Reassessing calibration"
    (n.d.), Sec. 5)."""
    probs = as_probs(scores, kind)
    y = as_labels(labels, probs.shape[0], probs.shape[1])
    diff = probs.copy()
    diff[np.arange(y.size), y] -= 1.0
    return np.einsum("ij,ij->i", diff, diff)


@dataclass(frozen=True)
class CalibrationSharpness:
    """Arrays and numbers of a calibration-sharpness diagram ("Reassessing calibration" (n.d.), Sec. 4.2 and App. D).

    On ``grid`` (uniform on [0, 1]): ``curve`` m(p), the NW regression of correctness on
    confidence; ``density`` p_hat(p), the KDE of the confidences (integrating to 1; normalize to max
    1 for display); ``loss_curve`` NW of the per-sample losses; ``rho`` = loss_curve - (curve - p)^2,
    the pointwise Brier sharpness gap (eq. 4.7); ``band_low`` = max(0, curve - density rho / 2) and
    ``band_high`` = curve + density rho / 2 (the band has zero width where the density is negligible).
    NaN marks grid points without data nearby. ``cal_values`` are the per-draw plug-in calibration
    errors mean((m(h) - h)^2); ``cal_mean`` and ``cal_std`` (ddof 1, 0 for a single draw) summarize
    them; ``total`` is the mean loss (d_TOT, the Brier score). Values are fractions, not x 100.
    """

    grid: np.ndarray
    curve: np.ndarray
    density: np.ndarray
    loss_curve: np.ndarray
    rho: np.ndarray
    band_low: np.ndarray
    band_high: np.ndarray
    cal_values: np.ndarray
    cal_mean: float
    cal_std: float
    total: float
    bandwidth: float
    kernel: str


def calibration_sharpness(
    confidence,
    correct,
    losses,
    *,
    bandwidth=0.05,
    kernel: str = "gaussian",
    grid_points: int = 5000,
    n_eval: int = 5000,
    n_repeats: int = 10,
    seed: int | None = 42,
    subsample: str = "eval_points",
    method: str = "auto",
) -> CalibrationSharpness:
    """The calibration-sharpness diagram of "Reassessing calibration" (n.d.) for the Brier score (Sec. 4.2, App. D).

    ``confidence`` h(x_i) in [0, 1], ``correct`` 1{y_i = c(x_i)} and ``losses`` the full multi-class
    divergences d(e_{y_i}, g(x_i)), e.g. :func:`brier_losses_sum`. Curves live on ``grid_points``
    uniform points of [0, 1] (the authors' code uses 5000).

    Calibration error (App. D; the authors' ``get_full_loss_and_cal``): each of ``n_repeats`` draws
    takes ``n_eval`` evaluation points h_i with replacement (``numpy.random.default_rng(seed)``),
    evaluates m there by NW over all n samples (``subsample="eval_points"``) or over the drawn
    samples only (``subsample="data"``, the other reading of the paper) and averages (m(h) - h)^2.
    When n <= n_eval there is a single draw: all samples, std 0 (as in the code).

    If the confidences are nearly constant (std < 1e-6, e.g. mean-replacement recalibration) the
    curve is replaced by the mean of its defined values (authors' code), so it spans the whole grid;
    rho and the band use that curve. (NW at the data points is then the mean of ``correct`` anyway.)
    """
    conf, hit = _paired(confidence, correct, "confidence", "correct", unit=True)
    loss = as_vector(losses, "losses")
    if loss.size != conf.size:
        raise CalibInputError(f"losses has {loss.size} entries but confidence has {conf.size}; they must match")
    bandwidth, kernel, method, _ = _common_options(bandwidth, kernel, method, None)
    grid_points = check_positive_int(grid_points, "grid_points", minimum=2)
    n_eval = check_positive_int(n_eval, "n_eval")
    n_repeats = check_positive_int(n_repeats, "n_repeats")
    check(subsample, Choice(SUBSAMPLE_MODES), "subsample")

    grid = np.linspace(0.0, 1.0, grid_points)
    density, means = _density_and_means(conf, [hit, loss], grid, bandwidth, kernel, method, None)
    curve, loss_curve = means[:, 0], means[:, 1]
    constant = conf.std() < 1e-6
    if constant and np.isfinite(curve).any():
        curve = np.full(grid_points, np.nanmean(curve))
    rho = loss_curve - (curve - grid) ** 2
    half = np.where(density > 0, density * rho / 2.0, 0.0)
    band_low = np.maximum(curve - half, 0.0)
    band_high = curve + half

    def nw_at(x_fit, y_fit, points):
        return _density_and_means(x_fit, [y_fit], points, bandwidth, kernel, method, None)[1][:, 0]

    n = conf.size
    if n <= n_eval:
        draws = np.arange(n)[None, :]
    else:
        draws = np.random.default_rng(seed).integers(0, n, size=(n_repeats, n_eval))
    if subsample == "eval_points" or draws.shape[0] == 1:
        points = conf[draws]
        fitted = nw_at(conf, hit, points.ravel()).reshape(points.shape)
    else:
        fitted = np.stack([nw_at(conf[d], hit[d], conf[d]) for d in draws])
        points = conf[draws]
    cal_values = np.mean((fitted - points) ** 2, axis=1)
    cal_std = float(np.std(cal_values, ddof=1)) if cal_values.size > 1 else 0.0
    return CalibrationSharpness(
        grid=grid,
        curve=curve,
        density=density,
        loss_curve=loss_curve,
        rho=rho,
        band_low=band_low,
        band_high=band_high,
        cal_values=cal_values,
        cal_mean=float(cal_values.mean()),
        cal_std=cal_std,
        total=float(loss.mean()),
        bandwidth=bandwidth,
        kernel=kernel,
    )


def calibration_sharpness_top_label(scores, labels, *, kind: str, **options) -> CalibrationSharpness:
    """:func:`calibration_sharpness` of max_j g_j, argmax (first on ties) correctness and summed Brier losses."""
    probs, y, correct = _top_label(scores, labels, kind)
    return calibration_sharpness(probs.max(axis=1), correct, brier_losses_sum(probs, y, kind="probs"), **options)
