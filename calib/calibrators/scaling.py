"""Scaling calibrators on log-posteriors: affine / DP and temperature scaling.

Source: Ferrer & Ramos (2024), eq. 23: s = softmax(alpha log q + beta), alpha > 0 a
scalar and beta a K-vector (the direction-preserving "DP" transform of Brümmer & van Leeuwen (2006);
Platt scaling for K = 2). beta = 0 gives temperature scaling (Guo et al. (2017); footnote 7).
Parameters minimize the (optionally prior-weighted, eq. 36) cross-entropy in float64. The loss is
convex in (alpha, beta) (log-sum-exp of a linear map), so a damped Newton method with the exact
Hessian reaches the optimum in a few iterations; beta_0 is fixed at 0 (softmax ignores a common
shift). Exact zero probabilities are treated as :mod:`calib.calibrators.zeros` describes; every finite
log-posterior is used as it is (no floor), so the fit works on scores of any scale.

Conditioning: the fit works on the log-posteriors divided by their spread s (the root-mean-square
of the row-centred log-posteriors, log q_k - mean_j log q_j) and starts at alpha' = 1 on them, the
temperature that gives the scores unit spread; the scale found is folded back, alpha = alpha' / s.
Newton's method is invariant under that reparametrisation (Boyd & Vandenberghe (2004), Sect. 9.5.1), and
because the start moves with the scores too, scores multiplied by any c > 0 give the same iterates
up to rounding: the calibrated posteriors do not depend on the scale of the logits
(log-softmax(c z) = c z - a row constant, so alpha log q is exactly equivariant).
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
from scipy.linalg.blas import dsyrk

from calib._internal.rows import log_softmax_rows
from calib._internal.threads import one_blas_thread
from calib.calibrators.base import Calibrator, FittedField, weighted_mean_weights
from calib.calibrators.line_search import armijo_step, converged_when_stalled, report_convergence
from calib.validation import CalibInputError, Flag, Integer, as_priors, class_counts

# The fits keep the scale alpha' of the unit-spread log-posteriors at or above this (alpha >= MIN_SCALE / s).
MIN_SCALE = 1e-6
# A scale within rounding of MIN_SCALE counts as at the bound.
_AT_BOUND = MIN_SCALE * (1 + 1e-9)
# The range of scales a saved model may hold (a file outside it is damaged or edited). The fits reach
# scales outside it only on scores whose spread exceeds ~1e6 nats (or is below ~1e-6): those fit and
# predict, but are refused by save_calibrator.
SAVED_SCALES = (1e-6, 1e6)
# The most Newton iterations of a fit.
MaxIter = Annotated[int, Integer(minimum=1)]


class AffineCalibrator(Calibrator):
    """Affine (DP) calibration of log-posteriors: s = softmax(alpha log q + beta).

    alpha > 0 is a scalar and beta a K-vector whose first entry is fixed at 0 (softmax ignores a
    common shift): the direction-preserving ("DP") transform of Brümmer & van Leeuwen (2006), and
    Platt scaling on the log-odds for K = 2. ``bias=False`` fixes beta = 0, which is temperature
    scaling (:class:`TemperatureScaling`). The parameters minimize the mean cross-entropy of the
    calibrated posteriors (each class h weighted by P_h / N_h when ``priors`` are given) in float64; with
    ``fit(..., sample_weight=w)`` the weighted mean sum_i w_i CE_i / sum_i w_i, and N_h the total weight of
    class h.
    The loss is convex in (alpha, beta) (log-sum-exp of a linear map), so a damped Newton method with
    the exact Hessian reaches the optimum in a few iterations, on the log-posteriors divided by their
    spread s (module docstring) from alpha = 1 / s, with alpha kept above 1e-6 / s; so the calibrated
    posteriors do not depend on the scale of the logits. Training scores with exact zeros are smoothed
    at their resolution (:mod:`calib.calibrators.zeros`), so one zero on a true class cannot drive the
    fit; finite log-posteriors are used unclipped, at any scale. Each
    Newton iteration costs O(N K^2) time (O(N K) without bias), and a fit holds no second N x K
    matrix. ``fit(scores, labels, kind=...)`` learns the map; ``predict_proba`` and
    ``predict_log_proba`` apply it.

    Source: Ferrer & Ramos (2024), eq. 23 (the map), eq. 36 (prior-weighted cross-entropy) and
    footnote 7; Brümmer & van Leeuwen (2006) (DP calibration); Guo et al. (2017) (beta = 0).

    Sample weights: ``fit(scores, labels, kind=..., sample_weight=w)`` takes one weight >= 0 per row (default
    None: equal weights). The fit then minimizes the weighted mean of the (prior-weighted) cross-entropy, sum_i
    w_i loss_i / sum_i w_i, so integer weights fit what repeating each row w_i times fits; rows of weight 0 are
    dropped (:meth:`Calibrator.fit`).

    Parameters
    ----------
    bias : bool, default True
        Fit beta; False fixes beta = 0 (temperature scaling).
    priors : array_like of shape (K,), optional
        Class priors P (finite, strictly positive, summing to 1) for the training cross-entropy;
        every class must then occur in the training labels. Default None: each sample weighs 1/N.
    max_iter : int, default 100
        The most Newton iterations (>= 1).

    Attributes
    ----------
    scale_ : float
        alpha.
    bias_ : ndarray of shape (K,)
        beta, with beta_0 = 0 (all zeros when ``bias=False``).
    converged_ : bool
        Whether Newton's method met its stopping rule within ``max_iter`` iterations with a gradient
        norm at most :data:`calib.calibrators.line_search.GRADIENT_TOL`; False comes with a
        CalibInputWarning from ``fit``.
    gradient_norm_ : float
        The largest gradient entry at the fitted parameters, in the unit-spread coordinates
        (:mod:`calib.calibrators.line_search`); NaN in a model file written before it was recorded.
    zero_smoothing_ : float
        eps of the zero treatment (:mod:`calib.calibrators.zeros`); 0 when the training scores had no zeros.
    zero_loss_share_ : float
        The share of the calibrated training loss from samples whose true class had probability 0.
    n_classes_ : int
        K, the number of classes seen by ``fit``.

    Raises
    ------
    CalibInputError
        From ``fit``, for invalid scores, labels or priors, or when the fit diverges (check the
        scores for extreme values).

    Examples
    --------
    >>> from calib.data.miscalibrated_logits import miscalibrated_logits
    >>> draw = miscalibrated_logits(60, 3)  # model logits twice the true ones: over-confident
    >>> scores, labels = draw.model_logits, draw.labels
    >>> model = AffineCalibrator().fit(scores, labels, kind="logits")
    >>> round(model.scale_, 4), model.converged_  # the truth: alpha = 1/2
    (0.6713, True)
    """

    log_scale = True

    def __init__(self, bias: Flag = True, priors=None, max_iter: MaxIter = 100):
        self.bias = bias
        self.priors = priors
        self.max_iter = max_iter

    def _fit(self, logp: np.ndarray, labels: np.ndarray, sample_weight: np.ndarray | None = None) -> None:
        k = logp.shape[1]
        if self.priors is None:
            weights = weighted_mean_weights(sample_weight, labels.size)
        else:
            counts = class_counts(labels, k, need_all=True)
            if sample_weight is not None:  # N_h becomes class h's total weight (as repeating rows counts it)
                counts = np.bincount(labels, weights=sample_weight, minlength=k)
            weights = (as_priors(self.priors, k) / counts)[labels]
            if sample_weight is not None:
                weights *= sample_weight
        problem = _AffineObjective(logp, labels, weights, self.bias)
        with one_blas_thread():  # the same bits whatever the machine's thread count
            theta, stopped = _newton(problem, max_iter=self.max_iter)
            gradient = problem.derivatives(theta)[1] if np.all(np.isfinite(theta)) else np.array([np.nan])
        if not np.all(np.isfinite(theta)) or not np.all(np.isfinite(gradient)):
            raise CalibInputError("affine calibration diverged: check the scores for extreme values")
        if theta[0] <= _AT_BOUND and gradient[0] > 0:  # at the bound, pushed against it: a constrained optimum
            gradient[0] = 0.0
        self.gradient_norm_ = float(np.max(np.abs(gradient)))
        self.converged_ = report_convergence(type(self).__name__, stopped, self.gradient_norm_)
        self.scale_ = float(theta[0] / problem.spread)
        self.bias_ = np.concatenate([[0.0], theta[1:]]) if self.bias else np.zeros(k)

    def _n_parameters(self) -> int:
        """alpha, and with ``bias`` the K - 1 free entries of beta (beta_0 = 0)."""
        return 1 + (self.n_classes_ - 1 if self.bias else 0)

    def _fitted_fields(self) -> dict[str, FittedField]:
        return {
            "scale_": FittedField("float", low=SAVED_SCALES[0], high=SAVED_SCALES[1]),
            "bias_": FittedField("array", (self.n_classes_,)),
            "converged_": FittedField("bool"),
            "gradient_norm_": FittedField("float", low=0.0, finite=False),
        }

    def _transform(self, logp: np.ndarray) -> np.ndarray:
        """In ``logp``'s own memory (see :mod:`calib.calibrators.base`)."""
        z = logp
        z *= self.scale_
        z += self.bias_
        return log_softmax_rows(z, overwrite=True)


class TemperatureScaling(AffineCalibrator):
    """Temperature scaling of log-posteriors: s = softmax(alpha log q), one scalar alpha > 0.

    The affine map of :class:`AffineCalibrator` with beta = 0; the temperature is T = 1 / alpha.
    Scaling every log-posterior by the same positive factor keeps every argmax, so accuracy does not
    change. alpha minimizes the mean cross-entropy of the calibrated posteriors (each class h weighted by
    P_h / N_h when ``priors`` are given; with ``fit(..., sample_weight=w)`` the weighted mean
    sum_i w_i CE_i / sum_i w_i, N_h the total weight of class h) by damped Newton on the unit-spread log-posteriors (see
    :class:`AffineCalibrator`); exact zeros are smoothed
    (:mod:`calib.calibrators.zeros`). O(N K) time per Newton iteration.

    Source: Guo et al. (2017); Ferrer & Ramos (2024), eq. 23 with beta = 0 (footnote 7), eq. 36 for
    the prior weights.

    Sample weights: ``fit(scores, labels, kind=..., sample_weight=w)`` takes one weight >= 0 per row (default
    None: equal weights). The fit then minimizes the weighted mean of the (prior-weighted) cross-entropy, sum_i
    w_i loss_i / sum_i w_i, so integer weights fit what repeating each row w_i times fits; rows of weight 0 are
    dropped (:meth:`Calibrator.fit`).

    Parameters
    ----------
    priors, max_iter
        The class priors that weigh the training cross-entropy (default None: each sample weighs 1/N)
        and the most Newton iterations (default 100), as for :class:`AffineCalibrator`.

    Attributes
    ----------
    scale_ : float
        alpha (1 / temperature).
    bias_ : ndarray of shape (K,)
        Zeros (no bias).
    converged_, gradient_norm_ : bool, float
        As for :class:`AffineCalibrator`.
    zero_smoothing_, zero_loss_share_ : float
        The zero treatment, as for :class:`AffineCalibrator`.
    n_classes_ : int
        K, the number of classes seen by ``fit``.

    Raises
    ------
    CalibInputError
        From ``fit``, for invalid scores, labels or priors, or when the fit diverges.

    Examples
    --------
    >>> from calib.data.miscalibrated_logits import miscalibrated_logits
    >>> draw = miscalibrated_logits(60, 3)  # model logits twice the true ones: over-confident
    >>> scores, labels = draw.model_logits, draw.labels
    >>> model = TemperatureScaling().fit(scores, labels, kind="logits")
    >>> round(model.scale_, 4)  # the truth: alpha = 1/2
    0.612
    >>> bool((model.predict_proba(scores, kind="logits").argmax(axis=1) == scores.argmax(axis=1)).all())
    True

    Integer weights fit what repeating each row that many times fits:

    >>> import numpy as np
    >>> weights = np.arange(60) % 3  # 0, 1, 2, ...: a third of the rows dropped, a third doubled
    >>> weighted = TemperatureScaling().fit(scores, labels, kind="logits", sample_weight=weights)
    >>> rows, classes = np.repeat(scores, weights, axis=0), np.repeat(labels, weights)
    >>> repeated = TemperatureScaling().fit(rows, classes, kind="logits")
    >>> bool(abs(weighted.scale_ - repeated.scale_) < 1e-12)
    True
    """

    def __init__(self, priors=None, max_iter: MaxIter = 100):
        super().__init__(bias=False, priors=priors, max_iter=max_iter)


class _AffineObjective:
    """Weighted CE of softmax(alpha x + [0, beta_1..]) with its gradient and Hessian in (alpha, beta_1..).

    Works on x_c = (x - max_k x_k) / s (sample by sample; s the spread of the module docstring, so
    alpha here is alpha' = s alpha), which changes neither the loss nor the Newton iterates, stored
    transposed as a (K, N) matrix so that sums over classes add K contiguous rows and the biases
    broadcast along N. It also works on e = exp(alpha x_c + beta - max(beta)) in a (K, N) buffer (the
    input's memory, so a fit holds no second N x K matrix): every exponent is at most 0 and the
    per-sample sums S_i are at least exp(min(beta) - max(beta)), so nothing overflows and,
    while the biases span less than 500, no such sum underflows (beyond that, each sample's exact maximum
    is subtracted). The derivatives are weighted sums over e with sample weights w / S, so the
    probabilities e / S are never formed; ``loss`` keeps e and S of the point it evaluated, which the
    line search accepts, so ``derivatives`` there needs no second exponential. ``derivatives`` then
    overwrites e with the rows of its Gram matrix.
    """

    def __init__(self, logp: np.ndarray, labels: np.ndarray, weights: np.ndarray, bias: bool):
        """``logp``: (N, K) log-posteriors, a fresh array taken over: its memory holds e."""
        n, k = logp.shape
        self.weights, self.bias = weights, bias
        self.n_params = k if bias else 1
        self.x, self.x_true = np.empty((k, n)), np.empty(n)
        self.spread = _centred_transpose(logp, labels, self.x, self.x_true)
        self.class_weights = np.bincount(labels, weights=weights, minlength=k)
        self.weighted_x_true = float(np.dot(weights, self.x_true))
        self.root_weights = np.sqrt(weights)
        self.exp_logits = logp.reshape(k, n)  # a view of logp's memory, read in full above
        self.sums, self.work = np.empty(n), np.empty((3, n))  # reused by every evaluation
        self._evaluated = None

    def start(self) -> np.ndarray:
        return np.concatenate([[1.0], np.zeros(self.n_params - 1)])

    def _biases(self, theta: np.ndarray) -> np.ndarray:
        return np.concatenate([[0.0], theta[1:]]) if self.bias else np.zeros(self.x.shape[0])

    def loss(self, theta: np.ndarray) -> float:
        """sum_i w_i (log sum_k e_ki + shift_i - alpha x_true_i - beta_{y_i}); the label terms are
        w . x_true and the class weights . beta."""
        scale, biases = theta[0], self._biases(theta)
        e = self.exp_logits
        if biases.max() - biases.min() < 500.0:
            _affine_rows(self.x, scale, biases - biases.max(), e)
            shift = biases.max() * self.class_weights.sum()
        else:  # exp(-500) is far from underflow; beyond, shift each sample by its exact maximum
            _affine_rows(self.x, scale, biases, e)
            shifts = e.max(axis=0)
            e -= shifts
            shift = np.dot(self.weights, shifts)
        np.exp(e, out=e)
        np.sum(e, axis=0, out=self.sums)
        value = np.dot(self.weights, np.log(self.sums, out=self.work[0])) + shift - scale * self.weighted_x_true
        value = float(value - np.dot(self.class_weights, biases))
        self._evaluated = (theta.copy(), value)
        return value

    def derivatives(self, theta: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        if self._evaluated is None or not np.array_equal(self._evaluated[0], theta):
            self.loss(theta)
        loss = self._evaluated[1]
        e = self.exp_logits
        mean_term, h_aa, wp, wp_mean, wpx = _derivative_sums(
            self.x, e, self.sums, self.weights, self.root_weights, self.bias, self.work
        )
        grad = [mean_term - self.weighted_x_true]
        if not self.bias:
            return loss, np.array(grad), np.array([[h_aa]])
        self._evaluated = None  # e now holds sqrt(w_i) p_ki, no longer the exponentials of theta
        grad.extend((wp - self.class_weights)[1:])
        h_ab = (wpx - wp_mean)[1:]
        gram = dsyrk(1.0, e.T, trans=1)  # sum_i w_i p_i p_i^T (upper triangle)
        h_bb = np.diag(wp) - (np.triu(gram) + np.triu(gram, 1).T)
        hess = np.empty((self.n_params, self.n_params))
        hess[0, 0], hess[0, 1:], hess[1:, 0], hess[1:, 1:] = h_aa, h_ab, h_ab, h_bb[1:, 1:]
        return loss, np.array(grad), hess


def _centred_transpose(logp, labels, x, x_true) -> float:
    """x[k, i] = (logp[i, k] - max_j logp[i, j]) / s (the (K, N) layout) and x_true[i] = x[labels[i], i];
    returns s, the root-mean-square of the row-centred log-posteriors logp[i, k] - mean_j logp[i, j]
    (1 when that is 0: scores without spread)."""
    np.copyto(x, logp.T)
    x -= x.max(axis=0)
    row_means = x.mean(axis=0)
    variance = np.einsum("kn,kn->", x, x) / x.size - float(np.dot(row_means, row_means)) / row_means.size
    spread = float(np.sqrt(variance)) if variance > 0 and np.isfinite(variance) else 1.0
    x /= spread
    x_true[:] = x[labels, np.arange(labels.size)]
    return spread


def _affine_rows(x, scale, offsets, out) -> None:
    """out[k, i] = scale x[k, i] + offsets[k]."""
    np.multiply(x, scale, out=out)
    out += offsets[:, None]


def _derivative_sums(x, e, sums, weights, root_weights, with_classes, work):
    """Sums over samples for the derivatives, with p_ki = e_ki / s_i and E_i the mean under p_i:
    (sum_i w_i E_i[x], sum_i w_i Var_i[x], and per class k: sum_i w_i p_ki, sum_i w_i E_i[x] p_ki,
    sum_i w_i p_ki x_ki). With ``with_classes``, ``e`` is then overwritten by sqrt(w_i) p_ki (for the
    Gram matrix sum_i w_i p_i p_i^T); without, the per-class sums are zeros. ``work``: (3, N) scratch."""
    ex = e * x
    mean = np.divide(ex.sum(axis=0), sums, out=work[0])
    row_weights = np.divide(weights, sums, out=work[1])
    mean_term = float(np.dot(weights, mean))
    curvature = float(np.dot(row_weights, np.einsum("kn,kn->n", ex, x)) - np.dot(weights, mean**2))
    if not with_classes:
        zeros = np.zeros(x.shape[0])
        return mean_term, curvature, zeros, zeros, zeros
    class_p, class_mean = (e @ np.column_stack([row_weights, row_weights * mean])).T
    class_x = ex @ row_weights
    e *= np.divide(root_weights, sums, out=work[2])
    return mean_term, curvature, class_p, class_mean, class_x


def _newton_step(grad: np.ndarray, hess: np.ndarray, free: np.ndarray) -> np.ndarray:
    """Newton step over the ``free`` parameters (a tiny ridge keeps a flat direction solvable)."""
    step = np.zeros_like(grad)
    if free.any():
        h = hess[np.ix_(free, free)]
        ridge = 1e-12 * max(np.trace(h) / h.shape[0], 1e-300)
        step[free] = -np.linalg.solve(h + ridge * np.eye(h.shape[0]), grad[free])
    return step


def _newton(problem: _AffineObjective, max_iter: int, tol: float = 1e-14) -> tuple[np.ndarray, bool]:
    """Damped Newton with backtracking (Armijo); stops when half the Newton decrement is below ``tol``
    (converged; that last Newton step is taken without a line search: it changes the loss by less than
    its rounding, and in the quadratic phase (Nocedal & Wright (2006), Theorem 3.5) it leaves the
    parameters ~decrement away from the optimum, where the test itself leaves ~sqrt(decrement)), when
    the line search finds no decrease (converged if :func:`converged_when_stalled`), or after ``max_iter``.

    The scale is kept at or above MIN_SCALE: at that bound with the gradient pushing down, only
    the biases move (a projected Newton step).
    """
    theta = problem.start()
    for _ in range(max_iter):
        loss, grad, hess = problem.derivatives(theta)
        free = np.ones(theta.size, dtype=bool)
        if theta[0] <= _AT_BOUND and grad[0] > 0:
            free[0] = False
        step = _newton_step(grad, hess, free)
        t = 1.0
        if theta[0] + step[0] < MIN_SCALE:
            t = (theta[0] - MIN_SCALE) / -step[0]
            if t < 1e-12:  # already at the bound: move the biases only
                free[0], t = False, 1.0
                step = _newton_step(grad, hess, free)
        decrement = -float(grad @ step)
        if not decrement > 2 * tol:  # the last step (a change of the loss below its rounding) is still taken
            if np.all(np.isfinite(step)):
                theta = theta + t * step
                theta[0] = max(theta[0], MIN_SCALE)
            return theta, True
        accepted = armijo_step(problem.loss, theta, step, loss, decrement, t)
        if accepted is None:  # no decrease possible at float precision
            return theta, converged_when_stalled(decrement, loss)
        theta, t = accepted
        if t * step[0] < 0 and theta[0] < MIN_SCALE:
            theta[0] = MIN_SCALE
    return theta, False
