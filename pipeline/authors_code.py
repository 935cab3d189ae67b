"""The calibration code of Ferrer & Ramos (2024) as its authors ran it, redone in numpy to test causes of deviations.

The authors computed their tables with psrcal 1.0 (``AffineCal``,
``HistogramBinningCal``, ``losses.ECE`` / ``ECEbin``) driven by expected_cost
(``calibration_with_crossval``): log-posteriors cast to float32, the affine map trained by
``scipy.optimize.minimize(method="L-BFGS-B", options={"maxiter": 100, "maxls": 40})`` from the
identity, with PyTorch's type promotion (a 0-dimensional float64 temperature times float32 scores
stays float32; a float64 bias vector makes the affine map float64). Our own fits go to the exact
optimum in float64, so a cell computed both ways shows how much the upstream arithmetic moves it:
the pipeline writes these reruns as ``"<column> [upstream]"`` companions, and the report accepts a
miss as a deviation only if the rerun lands on the published number (``check: {rerun: upstream}``).

This module emulates; it is not the authors' code (PyTorch's float32 gradients round differently
from numpy's, so L-BFGS paths differ in the last digits). Used only to check deviation causes.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp

from calib.calibrators.base import Calibrator

# psrcal's lbfgs(obj, 100) and train_obj_scipy_lbfgs's options.
MAX_ITERATIONS, MAX_LINE_SEARCH = 100, 40


def _float32_logprobs(scores: np.ndarray) -> np.ndarray:
    """Log-posteriors normalized in float32, as expected_cost's calibrate_scores leaves them."""
    z = np.asarray(scores, dtype=np.float32)
    with np.errstate(invalid="ignore"):  # a row of -inf and 0 stays as it is
        return (z - logsumexp(z, axis=1, keepdims=True)).astype(np.float32)


class UpstreamAffine(Calibrator):
    """psrcal's ``AffineCalLogLoss`` (``bias=True``: scale and bias, "D") or temperature scaling ("T").

    Minimizes the mean cross-entropy of ``log_softmax(t * x + b)`` over float32 scores ``x`` with
    L-BFGS-B (at most 100 iterations, 40 line-search steps, scipy's default tolerances) from
    ``t = 1, b = 0``; the loss is float32 without a bias and float64 with one, as PyTorch promotes.
    Output log-posteriors are float32 values (returned as float64).

    Parameters
    ----------
    bias : bool
        Fit a class-wise bias as well as the scale (the paper's "D"); False gives temperature scaling ("T").

    Examples
    --------
    >>> import numpy as np
    >>> logp = np.log([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]])
    >>> model = UpstreamAffine(bias=False).fit(logp, [0, 1, 1, 1], kind="logprobs")
    >>> bool(model.params_[0] > 0)
    True
    """

    def __init__(self, bias: bool = True):
        self.bias = bias

    def _map(self, params: np.ndarray, x: np.ndarray) -> np.ndarray:
        """t * x + b in float64, or t * x in float32 (the fit's loss computes the same products in place)."""
        if self.bias:
            return params[0] * x.astype(np.float64) + params[1:]
        return np.float32(params[0]) * x

    def _fit(self, logp: np.ndarray, labels: np.ndarray) -> None:
        x = np.where(np.isneginf(logp), np.finfo(np.float32).min, logp).astype(np.float32)
        n, k = x.shape
        # The loss is evaluated hundreds of times: the float64 copy of the scores (what PyTorch's promotion
        # computes in each call), the positions of the labels' entries and the (n, k) work arrays are made
        # once, so no evaluation allocates (a fresh large array costs its page faults every time). The
        # arithmetic is the same, operation by operation, as allocating each intermediate anew.
        scores = x.astype(np.float64) if self.bias else x
        at_labels = np.arange(n) * k + labels
        z, residual = np.empty(scores.shape, scores.dtype), np.empty(scores.shape, scores.dtype)

        def loss_and_gradient(params: np.ndarray) -> tuple[float, np.ndarray]:
            if self.bias:
                np.multiply(params[0], scores, out=z)
                np.add(z, params[1:], out=z)
            else:
                np.multiply(np.float32(params[0]), scores, out=z)
            np.subtract(z, z.max(axis=1, keepdims=True), out=z)
            np.exp(z, out=residual)
            sums = residual.sum(axis=1, keepdims=True)
            loss = np.mean(np.log(sums[:, 0]) - z.ravel()[at_labels])
            np.divide(residual, sums, out=residual)
            residual.ravel()[at_labels] -= 1
            np.divide(residual, n, out=residual)
            np.multiply(residual, scores, out=z)  # z is spent: it holds the products now
            gradient = [np.sum(z, dtype=residual.dtype)]
            if self.bias:
                gradient += list(residual.sum(axis=0))
            return float(loss), np.asarray(gradient, dtype=np.float64)

        start = np.concatenate([[1.0], np.zeros(k if self.bias else 0)])
        result = minimize(
            loss_and_gradient,
            start,
            method="L-BFGS-B",
            jac=True,
            options={"maxiter": MAX_ITERATIONS, "maxls": MAX_LINE_SEARCH},
        )
        self.params_ = result.x

    def _transform(self, logp: np.ndarray) -> np.ndarray:
        x = np.where(np.isneginf(logp), np.finfo(np.float32).min, logp).astype(np.float32)
        return _float32_logprobs(self._map(self.params_, x)).astype(np.float64)


def float32_bins(p: np.ndarray, n_bins: int) -> np.ndarray:
    """psrcal's bins of float32 scores: (low, high] on float32 ``linspace`` edges; -1 for a score of 0.

    Examples
    --------
    >>> float32_bins(np.array([0.0, 0.05, 0.1, 1.0]), 10).tolist()
    [-1, 0, 0, 9]
    """
    edges = np.linspace(0, 1, n_bins + 1).astype(np.float32)
    p32 = np.asarray(p, dtype=np.float32)
    bins = np.searchsorted(edges, p32, side="left") - 1  # (edges[b], edges[b + 1]] holds bin b
    return np.where(p32 > 0, np.minimum(bins, n_bins - 1), -1)


class UpstreamHistogramBinning(Calibrator):
    """psrcal's ``HistogramBinningCal``: the mean label of each float32 bin (low, high], 0 for an empty bin.

    A test score of exactly 0, or one in a bin empty in training, gets probability 0 (log 0 = -inf),
    which is how the paper's Table 2 gets its ``inf`` cross-entropies.

    Parameters
    ----------
    n_bins : int
        Equal-width bins on the positive-class probability.

    Examples
    --------
    >>> import numpy as np
    >>> logp = np.log([[0.9, 0.1], [0.85, 0.15], [0.2, 0.8], [0.3, 0.7]])
    >>> model = UpstreamHistogramBinning(n_bins=2).fit(logp, [0, 1, 1, 1], kind="logprobs")
    >>> np.exp(model.predict_log_proba(logp, kind="logprobs")[:, 1]).round(6).tolist()  # float32 arithmetic
    [0.5, 0.5, 1.0, 1.0]
    """

    binary_only = True

    def __init__(self, n_bins: int = 15):
        self.n_bins = n_bins

    def _fit(self, logp: np.ndarray, labels: np.ndarray) -> None:
        bins = float32_bins(np.exp(logp[:, 1].astype(np.float32)), self.n_bins)
        kept = bins >= 0
        counts = np.bincount(bins[kept], minlength=self.n_bins)
        positives = np.bincount(bins[kept], weights=labels[kept], minlength=self.n_bins)
        with np.errstate(invalid="ignore"):
            self.bin_means_ = np.where(counts > 0, positives / np.maximum(counts, 1), 0.0)

    def _transform(self, logp: np.ndarray) -> np.ndarray:
        bins = float32_bins(np.exp(logp[:, 1].astype(np.float32)), self.n_bins)
        p1 = np.where(bins >= 0, self.bin_means_[np.maximum(bins, 0)], 0.0).astype(np.float32)
        with np.errstate(divide="ignore"):
            out = np.log(np.column_stack([np.float32(1) - p1, p1]))
        return _float32_logprobs(out).astype(np.float64)


def upstream_ece(logp: np.ndarray, labels: np.ndarray, *, n_bins: int, binary: bool) -> float:
    """psrcal's ``ECE`` (top-label) or ``ECEbin`` (positive class): float32 bins, a score of 0 in no bin.

    ECE = sum over bins of n_b |mean score - mean outcome| / N, where N counts every sample, binned or
    not (Guo et al. (2017), eq. 3, with psrcal's binning).

    Examples
    --------
    >>> import numpy as np
    >>> logp = np.log(np.array([[1.0, 1e-300], [0.5, 0.5]]))
    >>> round(upstream_ece(logp, np.array([1, 1]), n_bins=10, binary=True), 6)
    0.25
    """
    p = np.exp(np.asarray(logp, dtype=np.float32))
    labels = np.asarray(labels)
    if binary:
        score, outcome = p[:, 1], (labels == 1).astype(np.float64)
    else:
        score, outcome = p.max(axis=1), (p.argmax(axis=1) == labels).astype(np.float64)
    bins = float32_bins(score, n_bins)
    kept = bins >= 0
    score_sums = np.bincount(bins[kept], weights=score[kept].astype(np.float64), minlength=n_bins)
    outcome_sums = np.bincount(bins[kept], weights=outcome[kept], minlength=n_bins)
    return float(np.sum(np.abs(score_sums - outcome_sums)) / labels.size)
