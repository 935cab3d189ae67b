"""Compiled loops (numba) for the affine / temperature calibrators on large inputs.

The fit's derivatives and the transform are sums over classes per sample and sums over samples per
class. numpy makes one pass over the (K, N) matrices per product, sum and broadcast, about a dozen
per Newton iteration; these loops make two. Exponentials stay with numpy, whose vectorized ``exp``
is about 5 times faster than numba's. Used from :data:`calib.validation.COMPILED_MIN_VALUES`
entries on (see :mod:`calib.single_pass` for why not below) and imported only then; the numpy code
in :mod:`calib.calibrators.scaling` is the reference they are tested against. Sums over samples
may be reassociated (``fastmath``) so that they vectorize: they differ from numpy's by rounding only.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_REASSOCIATE = {"reassoc", "contract"}


@njit(cache=True, nogil=True, boundscheck=False)
def floored_centred_transpose(logp, floor, labels, x, x_true):
    """:func:`calib.calibrators.scaling.numpy_floored_centred_transpose` in one pass, with the same numbers."""
    for i in range(logp.shape[0]):
        top = -np.inf
        for k in range(logp.shape[1]):
            top = max(top, max(logp[i, k], floor))
        for k in range(logp.shape[1]):
            x[k, i] = max(logp[i, k], floor) - top
        x_true[i] = x[labels[i], i]


@njit(cache=True, nogil=True, boundscheck=False)
def affine_rows(x, scale, offsets, out):
    """out[k, i] = scale x[k, i] + offsets[k], rounded as numpy's multiply then add."""
    for k in range(x.shape[0]):
        xk, outk, offset = x[k], out[k], offsets[k]
        for i in range(x.shape[1]):
            outk[i] = scale * xk[i] + offset


@njit(cache=True, nogil=True, boundscheck=False, fastmath=_REASSOCIATE)
def derivative_sums(x, e, sums, weights, root_weights, with_classes, work):
    """The sums of :func:`calib.calibrators.scaling.numpy_derivative_sums`, in two passes over x and e;
    ``work``: a (3, N) buffer, reused across calls (fresh memory costs a page fault per 4 KiB)."""
    n_classes, n = x.shape
    moment_1, moment_2, gram_weights = work[0], work[1], work[2]
    moment_1[:] = 0.0
    moment_2[:] = 0.0
    for k in range(n_classes):
        xk, ek = x[k], e[k]
        for i in range(n):
            product = ek[i] * xk[i]
            moment_1[i] += product
            moment_2[i] += product * xk[i]
    row_weights, mean_weights = moment_1, moment_2  # overwritten sample by sample
    mean_term, curvature = 0.0, 0.0
    for i in range(n):
        inverse = 1.0 / sums[i]
        mean = moment_1[i] * inverse
        mean_term += weights[i] * mean
        curvature += weights[i] * (moment_2[i] * inverse - mean * mean)
        row_weights[i] = weights[i] * inverse
        mean_weights[i] = row_weights[i] * mean
        gram_weights[i] = root_weights[i] * inverse
    class_p, class_mean, class_x = np.zeros(n_classes), np.zeros(n_classes), np.zeros(n_classes)
    if with_classes:
        for k in range(n_classes):
            xk, ek = x[k], e[k]
            total_p, total_mean, total_x = 0.0, 0.0, 0.0
            for i in range(n):
                value = ek[i]
                total_p += row_weights[i] * value
                total_mean += mean_weights[i] * value
                total_x += row_weights[i] * value * xk[i]
                ek[i] = gram_weights[i] * value
            class_p[k], class_mean[k], class_x[k] = total_p, total_mean, total_x
    return mean_term, curvature, class_p, class_mean, class_x


@njit(cache=True, nogil=True, boundscheck=False)
def affine_centred(logp, floor, scale, bias, out):
    """out[i, k] = z_ik - max_j z_ij with z_ik = scale max(logp[i, k], floor) + bias[k]."""
    for i in range(logp.shape[0]):
        top = -np.inf
        for k in range(logp.shape[1]):
            value = scale * max(logp[i, k], floor) + bias[k]
            out[i, k] = value
            top = max(top, value)
        for k in range(logp.shape[1]):
            out[i, k] -= top


@njit(cache=True, nogil=True, boundscheck=False)
def subtract_log_row_sums(out, exps):
    """out[i, k] -= log(sum_j exps[i, j]), adding j in order."""
    for i in range(out.shape[0]):
        total = 0.0
        for k in range(out.shape[1]):
            total += exps[i, k]
        log_total = np.log(total)
        for k in range(out.shape[1]):
            out[i, k] -= log_total
