"""Softmax regression for the calibration maps: the penalized mean log-loss of softmax(W x + b) with its
exact gradient and Hessian, and the deterministic solvers that minimize it (damped Newton up to
NEWTON_MAX_PARAMS parameters, scipy's L-BFGS-B beyond), shared by vector and matrix scaling
(:mod:`calib.calibrators.matrix_scaling`) and Dirichlet calibration (:mod:`calib.calibrators.dirichlet`).

Scale (:func:`fit_softmax`): on scores of a large scale (logits of thousands of nats) the identity
map is saturated, every posterior one-hot, and Newton's method cannot leave it. A fit from the
identity that stops short is therefore repeated on the features divided by their root-mean-square s,
from the identity of those unit-spread features (weights 1 / s on the raw features), and the weights
found are folded back (w = w' / s; a quadratic penalty on w is the same penalty on w' / s): the
loss is the same function of the map, only the coordinates and the start change. Fits that converge
from the identity are unchanged by this (bit for bit).

scipy.optimize is imported inside the functions that use it: a command or job that never calls them starts
without loading it.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.linalg.blas import dsyrk

from calib._internal.rows import log_softmax_rows
from calib._internal.threads import one_blas_thread
from calib.calibrators.line_search import GRADIENT_TOL, armijo_step, converged_when_stalled, report_convergence
from calib.calibrators.warm_start import WARM_START_TOL, warm_start_rows
from calib.validation import CalibInputError, CalibInputWarning


def feature_spread(x: np.ndarray) -> float:
    """The root-mean-square of the features ``x`` (1 when it is 0 or not finite)."""
    spread = float(np.sqrt(np.einsum("ij,ij->", x, x) / x.size))
    return spread if spread > 0 and np.isfinite(spread) else 1.0


def rescaled(problem: SoftmaxObjective, spread: float) -> SoftmaxObjective:
    """The same objective on the features x / ``spread``, its weights w' = ``spread`` w: a penalty
    p (w - t)^2 becomes (p / spread^2) (w' - spread t)^2; biases are unchanged. (The start is the
    caller's: ``weight_start`` is kept as it is, the identity of the unit-spread features.)"""
    options = dict(problem._options)
    for name, power in (("weight_penalty", -2), ("weight_target", 1)):
        if options[name] is not None:
            options[name] = np.asarray(options[name], dtype=np.float64) * spread**power
    weights = problem.sample_weight
    return SoftmaxObjective(problem.x / spread, problem.labels, problem.k, sample_weight=weights, **options)


def fit_softmax(problem: SoftmaxObjective, calibrator: str, *, identity_first: bool) -> tuple[np.ndarray, bool, float]:
    """Minimize ``problem``; returns (theta, converged, gradient norm) with theta in its coordinates.

    ``identity_first``: from ``problem.start()`` (the identity map) with :func:`minimize_objective`;
    if that stops short (its own rule unmet, or a gradient norm above GRADIENT_TOL), again on the
    features divided by their RMS s (:func:`rescaled`) from weights 1 / s (the unit-spread identity),
    keeping whichever fit has the lower loss. Otherwise (the default vector scaling) only the latter,
    whose result is then the same for features multiplied by any c > 0. The gradient norm is that of
    :mod:`calib.calibrators.line_search` (the weights' gradient divided by s); a fit that has not converged
    warns (:func:`calib.calibrators.line_search.report_convergence`).
    """
    spread = feature_spread(problem.x)
    if identity_first:
        theta, stopped = minimize_objective(problem, problem.start())
        norm = gradient_norm(problem, theta, spread)
        if stopped and norm <= GRADIENT_TOL:
            return theta, _converged(problem, theta, calibrator, stopped, norm), norm
        fallback = _fit_rescaled(problem, spread)
        if fallback[1] or problem.loss_grad(fallback[0])[0] < problem.loss_grad(theta)[0]:
            theta, stopped = fallback
    else:
        theta, stopped = _fit_rescaled(problem, spread)
    norm = gradient_norm(problem, theta, spread)
    return theta, _converged(problem, theta, calibrator, stopped, norm), norm


def _converged(problem: SoftmaxObjective, theta: np.ndarray, calibrator: str, stopped: bool, norm: float) -> bool:
    """``converged_``: :func:`calib.calibrators.line_search.report_convergence`, unless the loss has no
    minimum. A convex loss with a minimum at theta cannot fall along the ray to 2 theta (the map with
    its logits doubled); on rows that the map separates it does, ever closer to 0 as the weights grow,
    and an optimizer stops with a tiny gradient at an arbitrary point of that ray (measured: unpenalized
    matrix scaling of a CIFAR-100 network, 10100 parameters on 5000 rows, stopped with gradient 8e-10
    and a test log-loss of 498 nats). Such a fit warns once, and converged_ is False."""
    loss = problem.loss_grad(theta)[0]
    with np.errstate(over="ignore"):
        doubled = problem.loss_grad(2.0 * theta)[0]
    if doubled < loss * (1.0 - 1e-9) or loss == 0.0:  # relative: on separated rows the loss itself is tiny
        warnings.warn(
            CalibInputWarning(
                f"{calibrator}: the log-loss has no minimum on these calibration rows: doubling the fitted map's "
                f"logits lowers it ({loss:.3g} -> {doubled:.3g}), as when the map separates the rows' classes, so "
                "the weights grow without bound and the calibrated probabilities tend to 0 and 1; converged_ is "
                "False. Use a calibrator with fewer parameters (TemperatureScaling) or a penalty (MatrixScaling "
                "and DirichletCalibrator with reg_lambda > 0, or their default 'cv'), or more calibration rows",
                cli_message=f"{calibrator}: the log-loss has no minimum on these calibration rows (doubling the "
                f"fitted map's logits lowers it, {loss:.3g} -> {doubled:.3g}: the map separates the rows' classes), "
                "so its weights grow without bound and its probabilities tend to 0 and 1; use --method temperature, "
                "or --method matrix or dirichlet with their default penalty, or more calibration rows",
            ),
            stacklevel=4,
        )
        return False
    return report_convergence(calibrator, stopped, norm)


def _fit_rescaled(problem: SoftmaxObjective, spread: float) -> tuple[np.ndarray, bool]:
    """(theta, stopped) of :func:`minimize_objective` on the unit-spread features from their identity."""
    scaled = rescaled(problem, spread)
    theta, stopped = minimize_objective(scaled, scaled.start())
    theta = theta.copy()
    theta[: problem.n_w] /= spread
    return theta, stopped


def gradient_norm(problem: SoftmaxObjective, theta: np.ndarray, spread: float) -> float:
    """max |gradient| at ``theta``, the weights' entries divided by ``spread``: the gradient with
    respect to w' = ``spread`` w, the weights of the unit-spread features."""
    grad = problem.loss_grad(theta)[1].copy()
    grad[: problem.n_w] /= spread
    return float(np.max(np.abs(grad)))


class SoftmaxObjective:
    """Mean cross-entropy of softmax(x W^T + b) plus a quadratic penalty, with its analytic gradient.

    x: features (N, d), d <= K. ``diagonal``: W is diagonal, logit j = w_j x_j + b_j (classes j >= d
    get no weight term). ``free_bias``: which b_j are fitted (the others stay 0); ``free_rows``: which
    rows of a full W are fitted (the others stay 0, e.g. a reference class's). Penalty:
    sum(weight_penalty * (W - weight_target)^2) + sum(bias_penalty * b^2), over the fitted entries;
    ``weight_penalty``, ``weight_target`` and ``weight_start`` have the shape of the whole W. The
    parameter vector is the fitted rows of W (row-major, or its diagonal) followed by the free biases.

    L = -sum_i v_i log softmax(u_i)_{y_i} + penalty, v_i = 1 / N, or with ``sample_weight`` w_i / sum_j w_j
    (the weighted mean, so integer weights give the loss of each row repeated w_i times, penalty included);
    dL/du_i = v_i (softmax(u_i) - onehot(y_i)) = R_i, so dL/dW = R^T x (or the column sums of R * x for
    diagonal W) and dL/db = column sums of R.
    """

    def __init__(
        self,
        x: np.ndarray,
        labels: np.ndarray,
        n_classes: int,
        *,
        diagonal: bool = False,
        free_bias: np.ndarray | None = None,
        weight_penalty: np.ndarray | None = None,
        weight_target: np.ndarray | None = None,
        bias_penalty: np.ndarray | None = None,
        weight_start: np.ndarray | None = None,
        free_rows: np.ndarray | None = None,
        sample_weight: np.ndarray | None = None,
    ):
        self.x = np.ascontiguousarray(x, dtype=np.float64)
        self.sample_weight = sample_weight
        # Each row's share of the mean, a column to scale residuals by; None: 1 / N, kept as the plain mean so
        # that unweighted fits keep their bits.
        self.shares = None if sample_weight is None else (sample_weight / sample_weight.sum())[:, None]
        self.labels = labels
        self.k = n_classes
        self.n, self.d = self.x.shape
        self.diagonal = diagonal
        self.free_rows = np.ones(self.k, dtype=bool) if free_rows is None else np.asarray(free_rows, dtype=bool)
        self.all_rows = diagonal or bool(self.free_rows.all())
        whole = (self.d,) if diagonal else (self.k, self.d)
        self.w_shape = whole if self.all_rows else (int(self.free_rows.sum()), self.d)
        self.n_w = int(np.prod(self.w_shape))
        self.free_bias = np.ones(self.k, dtype=bool) if free_bias is None else np.asarray(free_bias, dtype=bool)
        self.weight_penalty = None if weight_penalty is None else self._fitted_rows(weight_penalty, whole)
        self.weight_target = (
            np.zeros(self.w_shape) if weight_target is None else self._fitted_rows(weight_target, whole)
        )
        self.bias_penalty = None if bias_penalty is None else np.asarray(bias_penalty, dtype=np.float64)
        self.weight_start = np.ones(self.w_shape) if weight_start is None else self._fitted_rows(weight_start, whole)
        self.rows = np.arange(self.n)
        self._buffer = np.empty((self.n, self.k))  # logits, then log-softmax, then residuals: reused by every call
        self._last = None
        self._options = {
            "diagonal": diagonal,
            "free_bias": free_bias,
            "weight_penalty": weight_penalty,
            "weight_target": weight_target,
            "bias_penalty": bias_penalty,
            "weight_start": weight_start,
            "free_rows": free_rows,
        }

    def _fitted_rows(self, values, whole: tuple[int, ...]) -> np.ndarray:
        """``values`` (a scalar or an array of the whole W's shape) on the fitted entries of W."""
        arr = np.broadcast_to(np.asarray(values, dtype=np.float64), whole)
        return arr if self.all_rows else arr[self.free_rows]

    def restricted(self, rows: slice) -> SoftmaxObjective:
        """The same objective (mean log-loss, weighted when it is, and penalty) on a subset of the rows."""
        weights = None if self.sample_weight is None else self.sample_weight[rows]
        return SoftmaxObjective(self.x[rows], self.labels[rows], self.k, sample_weight=weights, **self._options)

    def start(self) -> np.ndarray:
        return np.concatenate([np.asarray(self.weight_start, dtype=np.float64).ravel(), np.zeros(self.free_bias.sum())])

    def weights(self, theta: np.ndarray) -> np.ndarray:
        """W (its diagonal when ``diagonal``), the rows not fitted at 0."""
        return self.whole_weights(theta[: self.n_w].reshape(self.w_shape))

    def whole_weights(self, fitted: np.ndarray) -> np.ndarray:
        """The whole W from its fitted rows (``fitted`` itself when every row is fitted)."""
        if self.all_rows:
            return fitted
        whole = np.zeros((self.k, self.d))
        whole[self.free_rows] = fitted
        return whole

    def biases(self, theta: np.ndarray) -> np.ndarray:
        b = np.zeros(self.k)
        b[self.free_bias] = theta[self.n_w :]
        return b

    def logits(self, theta: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        w = self.weights(theta)
        u = np.empty((self.n, self.k)) if out is None else out
        if self.diagonal:
            u[:, self.d :] = 0.0
            np.multiply(self.x, w, out=u[:, : self.d])
        else:
            np.matmul(self.x, w.T, out=u)
        u += self.biases(theta)
        return u

    def loss_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """Loss and gradient at ``theta``; the last point's are kept, since a Newton iteration asks
        again for the point its line search accepted."""
        if self._last is not None and np.array_equal(self._last[0], theta):
            return self._last[1], self._last[2].copy()
        loss, grad = self._loss_grad(theta)
        self._last = (theta.copy(), loss, grad.copy())
        return loss, grad

    def _loss_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[: self.n_w].reshape(self.w_shape), self.biases(theta)
        logs = log_softmax_rows(self.logits(theta, out=self._buffer), overwrite=True)
        true_logs = logs[self.rows, self.labels]
        loss = -float(np.mean(true_logs) if self.shares is None else np.dot(self.shares[:, 0], true_logs))
        resid = np.exp(logs, out=logs)  # dL/du / v_i = softmax - onehot
        resid[self.rows, self.labels] -= 1.0
        if self.shares is not None:
            resid *= self.shares
        grad_w = np.einsum("ij,ij->j", resid[:, : self.d], self.x) if self.diagonal else resid.T @ self.x
        if not self.all_rows:
            grad_w = grad_w[self.free_rows]
        if self.shares is None:
            grad_w /= self.n
            grad_b = np.einsum("ij->j", resid) / self.n
        else:
            grad_b = np.einsum("ij->j", resid)
        with np.errstate(over="ignore"):  # a trial step far out: an infinite loss makes the line search back off
            if self.weight_penalty is not None:
                diff = w - self.weight_target
                loss += float(np.sum(self.weight_penalty * diff**2))
                grad_w = grad_w + 2.0 * self.weight_penalty * diff
            if self.bias_penalty is not None:
                loss += float(np.sum(self.bias_penalty * b**2))
                grad_b = grad_b + 2.0 * self.bias_penalty * b
        return loss, np.concatenate([grad_w.ravel(), grad_b[self.free_bias]])

    def _class_features(self, rows: slice) -> np.ndarray:
        """Per-class features F of the "extended" parametrisation u_ij = theta_j . F_ij for ``rows``,
        shape (n, 1 or K, m). Full W: F_ij = [x_i, 1] for every class (m = d + 1). Diagonal W:
        F_ij = [x_ij, 1] (m = 2), with x_ij = 0 for classes j >= d (their weight is not a parameter).
        """
        x = self.x[rows]
        if not self.diagonal:
            return np.concatenate([x, np.ones((x.shape[0], 1))], axis=1)[:, None, :]
        feats = np.zeros((x.shape[0], self.k, 2))
        feats[:, : self.d, 0] = x
        feats[:, :, 1] = 1.0
        return feats

    def _extended_index(self) -> np.ndarray:
        """Position in the extended parameter vector (class-major, F's columns within) of each entry of theta."""
        classes = np.arange(self.k)
        if self.diagonal:
            m = 2
            w_idx = classes[: self.d] * m
        else:
            m = self.d + 1
            w_idx = (classes[self.free_rows][:, None] * m + np.arange(self.d)[None, :]).ravel()
        b_idx = classes * m + (m - 1)
        return np.concatenate([w_idx, b_idx[self.free_bias]])

    def hessian(self, theta: np.ndarray, chunk: int = 4096) -> np.ndarray:
        """Exact Hessian: sum_i v_i J_i^T (diag p_i - p_i p_i^T) J_i plus the penalty's 2 * weights (v_i = 1 / N,
        or each row's share of the weighted mean).

        In the extended parametrisation J_i^T diag(p_i) J_i is block diagonal (one m x m block per
        class) and J_i^T p_i p_i^T J_i = a_i a_i^T with a_i = (p_ij F_ij)_j; rows are taken in chunks
        whose buffers are reused, and sum_i a_i a_i^T accumulates in place by BLAS syrk.
        """
        m = 2 if self.diagonal else self.d + 1
        size = self.k * m
        h_ext = np.zeros((size, size), order="F")
        blocks = np.zeros((self.k, m, m))
        u = self.logits(theta, out=self._buffer)
        outer = np.empty((min(chunk, self.n), self.k, m))
        for lo in range(0, self.n, chunk):
            rows = slice(lo, min(lo + chunk, self.n))
            p = log_softmax_rows(u[rows], overwrite=True)
            np.exp(p, out=p)
            f = self._class_features(rows)
            a = np.multiply(p[:, :, None], f, out=outer[: p.shape[0]])
            if self.shares is not None:  # v_i a_i a_i^T = (sqrt(v_i) a_i)(sqrt(v_i) a_i)^T; v_i p_i in the blocks
                share = self.shares[rows]
                a *= np.sqrt(share)[:, :, None]
                p *= share
            h_ext = dsyrk(-1.0, a.reshape(p.shape[0], size).T, beta=1.0, c=h_ext, trans=0, overwrite_c=True)
            if self.diagonal:
                blocks += np.einsum("ij,ija,ijb->jab", p, f, f)
            else:
                shared = f[:, 0, :]
                blocks += (p.T @ (shared[:, :, None] * shared[:, None, :]).reshape(p.shape[0], m * m)).reshape(
                    self.k, m, m
                )
        for j in range(self.k):
            h_ext[j * m : (j + 1) * m, j * m : (j + 1) * m] += blocks[j]
        h_ext = np.triu(h_ext) + np.triu(h_ext, 1).T
        idx = self._extended_index()
        hess = h_ext[np.ix_(idx, idx)]
        if self.shares is None:
            hess /= self.n
        diag = np.zeros(theta.size)
        if self.weight_penalty is not None:
            diag[: self.n_w] += 2.0 * np.broadcast_to(self.weight_penalty, self.w_shape).ravel()
        if self.bias_penalty is not None:
            diag[self.n_w :] += 2.0 * self.bias_penalty[self.free_bias]
        hess[np.diag_indices_from(hess)] += diag
        return hess


# Problems with at most this many parameters are solved by Newton's method with the exact Hessian
# (e.g. Dirichlet calibration up to K = 19); larger ones by L-BFGS-B.
NEWTON_MAX_PARAMS = 400


def minimize_objective(problem: SoftmaxObjective, start: np.ndarray) -> tuple[np.ndarray, bool]:
    """Minimize a convex SoftmaxObjective from ``start``; returns (theta, converged). Deterministic.

    Up to NEWTON_MAX_PARAMS parameters: damped Newton, stopping when half the Newton decrement is
    below 1e-15. When :func:`warm_start_rows` gives a subset, Newton first solves the problem on it
    (to WARM_START_TOL), then iterates on all rows from that subset's Hessian refined by BFGS; else
    it uses the exact Hessian throughout (the subset's start leaves few full iterations, each cheaper
    than an exact Hessian over all rows). Beyond: scipy's L-BFGS-B on the analytic gradient.
    """
    start = np.asarray(start, dtype=np.float64)
    # One BLAS thread: the same bits whatever the machine's thread count (calib._internal.threads).
    with one_blas_thread():
        if start.size > NEWTON_MAX_PARAMS:
            theta, converged = _lbfgs(problem, start)
        elif (rows := warm_start_rows(problem.labels, problem.k, start.size)) is None:
            theta, converged = _newton(problem, start)
        else:
            subset = problem.restricted(rows)
            theta, _ = _newton(subset, start, tol=WARM_START_TOL)
            theta, converged = _newton(problem, theta, curvature=subset)
    if not np.all(np.isfinite(theta)):
        raise CalibInputError("the calibration fit diverged: check the scores for extreme values")
    return theta, converged


# The most Newton iterations of a softmax-regression fit (a module constant, so that tests can lower it).
NEWTON_MAX_ITER = 100


def _newton(
    problem: SoftmaxObjective,
    theta: np.ndarray,
    max_iter: int | None = None,
    tol: float = 1e-15,
    curvature: SoftmaxObjective | None = None,
):
    """Damped Newton on ``problem`` from ``theta``; steps use the pseudo-inverse of the Hessian over
    its non-flat eigendirections, so directions that leave the predictions unchanged are never moved along.

    With ``curvature`` (the same objective on a subset of the rows) the steps start from the inverse
    of that subset's Hessian at ``theta``, computed once, and refine it by BFGS updates from the
    gradients seen (Nocedal & Wright (2006), eq. 6.17): one gradient per iteration instead of an exact
    Hessian (measured at 5·10⁴ x 10: the gradient shrinks about 10-fold per iteration). Should the
    decrement shrink less than 4-fold in an iteration, the exact Hessian, recomputed at every
    iterate, takes over. The step that meets the decrement test is still taken, without a line search (as
    in :func:`calib.calibrators.scaling._newton`): the test leaves the parameters ~sqrt(decrement) from the
    optimum, the step far less in the quadratic or superlinear phase (Nocedal & Wright (2006), Theorems 3.5
    and 6.6). Measured on vector, matrix and Dirichlet scaling of 2e4 rows with integer weights against the
    same rows repeated (the one fitted by exact Newton, the other from the warm start): predictions 2e-8
    apart without that step, 3e-10 with it.
    """
    theta = theta.copy()
    max_iter = NEWTON_MAX_ITER if max_iter is None else max_iter
    inverse = None if curvature is None else _pseudo_inverse(curvature.hessian(theta))
    previous, last = np.inf, None
    for _ in range(max_iter):
        loss, grad = problem.loss_grad(theta)
        if inverse is not None and last is not None:
            inverse = _bfgs_update(inverse, theta - last[0], grad - last[1])
        step = -(inverse if inverse is not None else _pseudo_inverse(problem.hessian(theta))) @ grad
        decrement = -float(grad @ step)
        if not decrement > 2 * tol:  # the step is still taken (see the docstring)
            return (theta + step if np.all(np.isfinite(step)) else theta), True
        if decrement > previous / 4:
            inverse = None
        previous, last = decrement, (theta, grad)
        accepted = armijo_step(lambda th: problem.loss_grad(th)[0], theta, step, loss, decrement)
        if accepted is None:  # no decrease possible at float precision
            return theta, converged_when_stalled(decrement, loss)
        theta = accepted[0]
    return theta, False


def _pseudo_inverse(hessian: np.ndarray) -> np.ndarray:
    """Inverse over the eigendirections with eigenvalue above 1e-12 of the largest (0 on the rest)."""
    evals, evecs = np.linalg.eigh(hessian)
    keep = evals > 1e-12 * max(evals[-1], 1e-300)
    return (evecs[:, keep] / evals[keep]) @ evecs[:, keep].T


def _bfgs_update(inverse: np.ndarray, s: np.ndarray, y: np.ndarray) -> np.ndarray:
    """BFGS update of an inverse Hessian for the step ``s`` and gradient change ``y`` (unchanged if
    s . y <= 0, which a convex loss gives only at float noise)."""
    sy = float(s @ y)
    if not sy > 0:
        return inverse
    hy = inverse @ y
    rho = 1.0 / sy
    return inverse + (rho * rho * float(y @ hy) + rho) * np.outer(s, s) - rho * (np.outer(hy, s) + np.outer(s, hy))


def _lbfgs(problem: SoftmaxObjective, theta: np.ndarray, max_iter: int = 5000):
    """scipy's L-BFGS-B from ``theta``; a full weight matrix is searched in whitened coordinates
    (:class:`WhitenedWeights`)."""
    if problem.diagonal:
        coordinates = None
    elif problem.weight_penalty is None:
        coordinates = WhitenedWeights(problem)
    else:
        coordinates = RowCurvature(problem, theta)
    objective = problem.loss_grad if coordinates is None else coordinates.loss_grad
    start = theta if coordinates is None else coordinates.to_search(theta)
    from scipy.optimize import minimize

    result = minimize(
        objective,
        start,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": max_iter, "maxfun": 2 * max_iter, "ftol": 1e-14, "gtol": 1e-9, "maxcor": 20},
    )
    # A line search that ends without decrease at a point of tiny gradient is at the optimum too.
    converged = bool(result.success) or float(np.max(np.abs(result.jac), initial=0.0)) < 1e-7
    return (result.x if coordinates is None else coordinates.to_theta(result.x)), converged


class WhitenedWeights:
    """Search coordinates in which the features are centred and decorrelated: W = V M and
    b_j = c_j - (W mu)_j for the free biases, with mu the feature mean and M = C^(-1/2) the inverse
    square root of the feature covariance C (eigenvalues floored at 1e-12 of the largest).

    The loss is the same function of (W, b); only the coordinates L-BFGS moves in change. The
    features of matrix scaling, log-ratios to one reference class, are strongly correlated, and
    in their raw coordinates L-BFGS needs many more iterations. For a penalized objective
    :class:`RowCurvature` is used instead.
    """

    def __init__(self, problem: SoftmaxObjective):
        self.problem = problem
        # Unweighted moments even for a weighted problem: they only choose the coordinates, not the optimum.
        self.mean = np.einsum("ij->j", problem.x) / problem.n
        centred = problem.x - self.mean
        evals, evecs = np.linalg.eigh(centred.T @ centred / problem.n)
        evals = np.maximum(evals, 1e-12 * max(evals[-1], 1e-300))
        self.whiten = (evecs / np.sqrt(evals)) @ evecs.T  # C^(-1/2)
        self.unwhiten = (evecs * np.sqrt(evals)) @ evecs.T  # C^(1/2)

    def _split(self, vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n_w = self.problem.n_w
        return vector[:n_w].reshape(self.problem.w_shape), vector[n_w:]

    def _shift(self, w: np.ndarray) -> np.ndarray:
        """(W mu) at the free biases, W the whole matrix of the fitted rows ``w``."""
        return (self.problem.whole_weights(w) @ self.mean)[self.problem.free_bias]

    def to_theta(self, phi: np.ndarray) -> np.ndarray:
        v, c = self._split(phi)
        w = v @ self.whiten
        return np.concatenate([w.ravel(), c - self._shift(w)])

    def to_search(self, theta: np.ndarray) -> np.ndarray:
        w, b = self._split(theta)
        return np.concatenate([(w @ self.unwhiten).ravel(), b + self._shift(w)])

    def loss_grad(self, phi: np.ndarray) -> tuple[float, np.ndarray]:
        """Loss and gradient in the search coordinates (chain rule through to_theta)."""
        loss, grad = self.problem.loss_grad(self.to_theta(phi))
        grad_w, grad_b = self._split(grad)
        total_w = self.problem.whole_weights(grad_w).copy()
        total_w[self.problem.free_bias] -= np.outer(grad_b, self.mean)
        if not self.problem.all_rows:
            total_w = total_w[self.problem.free_rows]
        return loss, np.concatenate([(total_w @ self.whiten).ravel(), grad_b])


# RowCurvature estimates each row's curvature on at most this many rows (strided): a preconditioner
# needs its shape, not its last digits.
CURVATURE_ROWS = 2000


class RowCurvature:
    """Search coordinates for a penalized full W in which each row's curvature is about the identity:
    the fitted row j of [W | b] (b_j where it is free) is v_j M_j, M_j = H_j^(-1/2), with H_j the
    Hessian of the loss in that row alone at the start: (1/n) sum_i p_ij (1 - p_ij) x~_i x~_i^T
    (x~ = [x, 1], on at most CURVATURE_ROWS strided rows) plus twice the row's penalty weights
    (eigenvalues floored at 1e-10 of the largest).

    The loss is the same function of (W, b); only the coordinates L-BFGS moves in change. A
    block-diagonal preconditioner of the multinomial Hessian (the coupling between rows, -p_ij p_ik,
    is left out): whitening the features alone (:class:`WhitenedWeights`) scales a penalty by the
    inverse feature covariance, whose condition number reaches 1e12 on the log-posteriors of 100
    classes; measured on a CIFAR-100 network (5000 rows, ODIR, lambda = 1e4), L-BFGS then stopped
    unconverged after 5000 iterations, and here converges in 61.
    """

    def __init__(self, problem: SoftmaxObjective, theta: np.ndarray):
        self.problem = problem
        k, d = problem.k, problem.d
        self.rows = np.flatnonzero(problem.free_rows) if not problem.all_rows else np.arange(k)
        self.has_bias = problem.free_bias[self.rows]
        # Unweighted rows even for a weighted problem: the preconditioner's shape, not the optimum, depends on them.
        step = max(1, problem.n // CURVATURE_ROWS)
        sample = slice(0, problem.n, step)
        probs = np.exp(log_softmax_rows(problem.logits(theta)[sample]))
        x1 = np.concatenate([problem.x[sample], np.ones((probs.shape[0], 1))], axis=1)
        penalty = (
            np.zeros((k, d))
            if problem.weight_penalty is None
            else problem.whole_weights(np.broadcast_to(problem.weight_penalty, problem.w_shape))
        )
        bias_penalty = np.zeros(k) if problem.bias_penalty is None else problem.bias_penalty
        size = d + 1
        self.forward = np.zeros((self.rows.size, size, size))  # M_j
        self.backward = np.zeros((self.rows.size, size, size))  # M_j^(-1)
        for r, j in enumerate(self.rows):
            width = size if self.has_bias[r] else d
            block = x1[:, :width]
            hessian = (block * (probs[:, j] * (1.0 - probs[:, j]))[:, None]).T @ block / probs.shape[0]
            hessian[np.arange(d), np.arange(d)] += 2.0 * penalty[j]
            if self.has_bias[r]:
                hessian[d, d] += 2.0 * bias_penalty[j]
            evals, evecs = np.linalg.eigh(hessian)
            evals = np.maximum(evals, 1e-10 * max(evals[-1], 1e-300))
            self.forward[r, :width, :width] = (evecs / np.sqrt(evals)) @ evecs.T
            self.backward[r, :width, :width] = (evecs * np.sqrt(evals)) @ evecs.T

    def _rows(self, theta: np.ndarray) -> np.ndarray:
        """[W | b] of the fitted rows from ``theta`` (0 where a bias is not free)."""
        problem = self.problem
        w = theta[: problem.n_w].reshape(-1, problem.d)
        b = problem.biases(theta)[self.rows]
        return np.concatenate([w, b[:, None]], axis=1)

    def _theta(self, rows: np.ndarray) -> np.ndarray:
        problem = self.problem
        biases = np.zeros(problem.k)
        biases[self.rows] = rows[:, -1]
        return np.concatenate([rows[:, :-1].ravel(), biases[problem.free_bias]])

    def to_theta(self, phi: np.ndarray) -> np.ndarray:
        return self._theta(np.einsum("ja,jab->jb", phi.reshape(self.rows.size, -1), self.forward))

    def to_search(self, theta: np.ndarray) -> np.ndarray:
        return np.einsum("ja,jab->jb", self._rows(theta), self.backward).ravel()

    def loss_grad(self, phi: np.ndarray) -> tuple[float, np.ndarray]:
        """Loss and gradient in the search coordinates (chain rule through to_theta: M_j is symmetric)."""
        loss, grad = self.problem.loss_grad(self.to_theta(phi))
        return loss, np.einsum("jb,jab->ja", self._rows(grad), self.forward).ravel()
