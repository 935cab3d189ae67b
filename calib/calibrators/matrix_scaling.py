"""Vector and matrix scaling on reference-class log-ratios (vector scaling by default on centred log-posteriors).

Source: Guo et al. (2017), "On calibration of modern neural networks" (vector and matrix
scaling), as written in the survey of Silva Filho et al. (2023), Sects. 5.4.2-5.4.3, eqs. 14-17,
with the sign reparametrisation softmax(+w z + b) instead of the printed exp(-w z - b) (the survey's
eq. 12 writes temperature scaling as exp(-z_j / t), which contradicts its statement that t = 1 is the
usual softmax; eqs. 14-19 keep the same sign, harmless there). For a generic probabilistic
classifier the survey's logits are the log-ratios to the last class (survey Sect. 5.4.1):

    z_j = ln(s_j / s_K),   so z_K = 0,

computed from the log-posteriors (exact zeros treated as :mod:`calib.calibrators.zeros` describes;
finite values used as they are, at any scale). Because z_K = 0, the weight that
multiplies z_K has no effect; it is fixed at 0 (last entry of ``coef_`` for vector scaling, last
column of ``coef_`` for matrix scaling). Softmax ignores a common shift of the logits, so the
bias of the reference class is fixed at 0 as well.

Both fits minimize the mean log-loss (eqs. 15, 17), plus an optional ridge term for matrix
scaling, in float64 and deterministically, starting at the identity map (w = 1 or W = I, b = 0),
which reproduces the input posteriors. The loss is convex (log-sum-exp of a linear map): up to
NEWTON_MAX_PARAMS parameters it is minimized by damped Newton (on many rows warm-started from a
strided subset, :mod:`calib.calibrators.warm_start`), beyond that by scipy's L-BFGS-B with the
analytic gradient.

Scale (:func:`fit_softmax`): on scores of a large scale (logits of thousands of nats) the identity
map is saturated, every posterior one-hot, and Newton's method cannot leave it. A fit from the
identity that stops short is therefore repeated on the features divided by their root-mean-square s,
from the identity of those unit-spread features (weights 1 / s on the raw features), and the weights
found are folded back (w = w' / s; a quadratic penalty on w is the same penalty on w' / s): the
loss is the same function of the map, only the coordinates and the start change. Vector scaling on
centred log-posteriors (the default) always fits that way, so its result does not depend on the
scale of the logits. Fits that converge from the identity are unchanged by this (bit for bit).

This module also holds the softmax-regression objective shared with
:mod:`calib.calibrators.dirichlet`.

scipy.optimize is imported inside the functions that use it: a command or job that never calls them starts
without loading it.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg.blas import dsyrk

from calib._internal.rows import log_softmax_rows
from calib.calibrators.base import Calibrator, FittedField
from calib.calibrators.blas_threads import one_blas_thread
from calib.calibrators.line_search import GRADIENT_TOL, armijo_step, converged_when_stalled, report_convergence
from calib.calibrators.warm_start import WARM_START_TOL, warm_start_rows
from calib.validation import CalibInputError


class VectorScaling(Calibrator):
    """Vector scaling: g(s) = softmax(w ⊙ z + b) on the centred log-posteriors z (or the survey's ln(s_j / s_K)).

    Default: z_k = ln s_k - (1/K) sum_j ln s_j, the centred log-ratio (clr) of the posteriors, which
    for a network's logits l equals l_k - mean_j l_j (log-softmax only subtracts a row constant). So
    this is vector scaling of Guo et al. (2017) (logits -> w ⊙ l + b, one weight and one bias per
    class) applied to row-centred logits, and Dirichlet calibration (Kull et al. (2019),
    softmax(W ln s + b)) with W = diag(w) - (1/K) w 1^T. b_K = 0 (softmax ignores a common shift), so
    K weights and K - 1 biases, 2K - 1 parameters, are fitted. Properties: the same result whether
    the scores are given as probs, logprobs or logits (z is the same); permuting the classes permutes
    the calibrated posteriors and changes nothing else; and multiplying the logits by any c > 0 leaves
    the calibrated posteriors unchanged, since z scales by c and w by 1 / c (the fit works on z divided
    by its root-mean-square, from the weights 1 on it, :func:`fit_softmax`). Exact zeros are treated as
    :mod:`calib.calibrators.zeros` describes. For K = 2: logit p_1 = (w_0 + w_1) t / 2 - b_0 with t =
    ln(s_1 / s_0), i.e. Platt scaling on the log-odds.

    (Before calib 0.x, the default was softmax(w ⊙ ln s + b) on the uncentred log-posteriors: not
    equivariant under scaling of the logits, since w_k times the row's log-normaliser differs per
    class. Model files of that map still load and apply it; their ``features_`` is "log_posteriors".)

    ``last_class_reference=True`` is the survey's definition instead: the logits of a generic
    probabilistic classifier are the log-ratios to the last class, so z_K = 0, w_K has no effect and
    is fixed at 0, and 2 (K - 1) parameters are fitted. The last class is then special: reordering the
    classes changes the fit. For K = 2 it is exactly Platt scaling on the log-odds:
    p_1 = sigmoid(w_0 t - b_0) with t = ln(s_1 / s_0).

    Either way the parameters minimize the mean log-loss, which is convex, in float64 and
    deterministically: by damped Newton (on many rows warm-started from a strided subset) up to 400
    parameters, by L-BFGS-B beyond. The survey's variant starts from the identity map (w = 1, b = 0)
    and refits on unit-spread features only when that stops short (:func:`fit_softmax`). Per-class
    weights can change the argmax, so unlike temperature scaling vector scaling does not preserve
    accuracy in general.

    Source: Guo et al. (2017), Sect. 4.2 (vector scaling on logits, here row-centred: the centred
    log-ratio of compositional data analysis); Kull et al. (2019), Sect. 3 (Dirichlet calibration, softmax(W ln q + b));
    Silva Filho et al. (2023), Sects. 5.4.1-5.4.2, eqs. 14-15, with the sign reparametrisation
    softmax(+w z + b) of the printed exp(-w z - b) (``last_class_reference=True``).

    Parameters
    ----------
    last_class_reference : bool, default False
        Fit on the log-ratios to the last class (the survey's definition), which depends on which
        class comes last; the default fits on the centred log-posteriors, which does not.

    Attributes
    ----------
    coef_ : ndarray of shape (K,)
        w (with ``last_class_reference``, w_K = 0 is fixed since z_K = 0).
    intercept_ : ndarray of shape (K,)
        b; b_K = 0 is fixed.
    features_ : str
        What w multiplies: "clr" (centred log-posteriors, the default), "last_class_ratios" (the
        survey's) or "log_posteriors" (a model file written before the centred default).
    converged_ : bool
        Whether the optimizer met its stopping rule with a gradient norm at most
        :data:`calib.calibrators.line_search.GRADIENT_TOL`; False comes with a CalibInputWarning.
    gradient_norm_ : float
        The largest gradient entry at the fitted parameters, for unit-spread features
        (:mod:`calib.calibrators.line_search`); NaN in a model file written before it was recorded.
    n_classes_ : int
        K, the number of classes seen by ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> logits = rng.normal(size=(60, 3))
    >>> labels = (logits + rng.gumbel(size=(60, 3))).argmax(axis=1)  # labels drawn from softmax(logits)
    >>> scores = 2 * logits  # over-confident scores: twice the calibrated logits
    >>> model = VectorScaling().fit(scores, labels, kind="logits")
    >>> [round(w, 4) for w in model.coef_.tolist()]
    [0.5036, 0.5625, 0.5844]
    >>> again = VectorScaling().fit(1000 * scores, labels, kind="logits")  # the same map on logits x 1000
    >>> bool(np.allclose(again.coef_ * 1000, model.coef_, rtol=1e-9))
    True
    >>> survey = VectorScaling(last_class_reference=True).fit(scores, labels, kind="logits")
    >>> [round(w, 4) for w in survey.coef_.tolist()]
    [0.5209, 0.5901, 0.0]
    """

    log_scale = True

    def __init__(self, last_class_reference: bool = False):
        self.last_class_reference = last_class_reference

    def _fit(self, logp: np.ndarray, labels: np.ndarray) -> None:
        problem = self._objective(logp, labels)
        reference = self._reference()
        theta, self.converged_, self.gradient_norm_ = fit_softmax(
            problem, type(self).__name__, identity_first=reference
        )
        weights = problem.weights(theta)
        self.coef_ = np.append(weights, 0.0) if reference else weights.copy()
        self.intercept_ = problem.biases(theta)
        self.features_ = "last_class_ratios" if reference else "clr"

    def _reference(self) -> bool:
        if not isinstance(self.last_class_reference, bool | np.bool_):
            raise CalibInputError(f"last_class_reference must be True or False; got {self.last_class_reference!r}")
        return bool(self.last_class_reference)

    def _objective(self, logp: np.ndarray, labels: np.ndarray) -> SoftmaxObjective:
        """The training objective; parameters (w, b_1..b_{K-1}), w of the K - 1 first classes with
        ``last_class_reference`` (exposed for gradient checks)."""
        k = logp.shape[1]
        features = reference_log_ratios(logp)[:, :-1] if self._reference() else centred_log_ratios(logp)
        return SoftmaxObjective(features, labels, k, diagonal=True, free_bias=np.arange(k) < k - 1)

    def _transform(self, logp: np.ndarray) -> np.ndarray:
        if self.features_ == "last_class_ratios":
            features = reference_log_ratios(logp)
        elif self.features_ == "clr":
            features = centred_log_ratios(logp)
        else:  # "log_posteriors": a model file of the former default
            features = logp
        return log_softmax_rows(self.coef_ * features + self.intercept_, overwrite=True)

    def _n_parameters(self) -> int:
        """K weights and K - 1 biases (2K - 1); 2 (K - 1) on the survey's log-ratios, where w_K is fixed."""
        k = self.n_classes_
        return 2 * (k - 1) if self.features_ == "last_class_ratios" else 2 * k - 1

    def _fitted_fields(self) -> dict[str, FittedField]:
        k = self.n_classes_
        choices = ("last_class_ratios",) if self._reference() else ("clr", "log_posteriors")
        return {
            "coef_": FittedField("array", (k,)),
            "intercept_": FittedField("array", (k,)),
            "features_": FittedField("str", choices=choices),
            "converged_": FittedField("bool"),
            "gradient_norm_": FittedField("float", low=0.0, finite=False),
        }


class MatrixScaling(Calibrator):
    """Matrix scaling: g(s) = softmax(W z + b) on the log-ratios z_j = ln(s_j / s_K).

    A full linear map of the log-ratios to the last class (z_K = 0, from log-posteriors whose exact
    zeros are smoothed, :mod:`calib.calibrators.zeros`): the last column of W multiplies z_K = 0 and
    is fixed at 0, and b_K = 0. The K^2 - 1 parameters minimize the mean log-loss plus ``reg * ||W -
    I||_F^2`` (summed over the K x (K - 1) free entries), a convex objective, in float64 and
    deterministically from the identity map (W = I, b = 0): by damped Newton up to 400 parameters,
    by scipy's L-BFGS-B with the analytic gradient beyond. Without ``reg``, adding one row vector to
    every row of W leaves the predictions unchanged; the optimizer then keeps the component it
    started with (that of the identity). A fit from the identity that stops short is repeated on
    unit-spread features (:func:`fit_softmax`), so scores of any scale reach the optimum.

    Source: Guo et al. (2017); Silva Filho et al. (2023), Sects. 5.4.1 and 5.4.3, eqs. 16-17, with the
    sign reparametrisation softmax(+W z + b) of the printed exp(-W z - b).

    Parameters
    ----------
    reg : float, default 0.0
        Ridge weight (>= 0) that shrinks W toward the identity; the default 0 is the plain
        maximum-likelihood fit of the survey.

    Attributes
    ----------
    coef_ : ndarray of shape (K, K)
        W, last column fixed at 0 since z_K = 0.
    intercept_ : ndarray of shape (K,)
        b; b_K = 0 is fixed.
    converged_, gradient_norm_ : bool, float
        As for :class:`VectorScaling`.
    n_classes_ : int
        K, the number of classes seen by ``fit``.

    Raises
    ------
    CalibInputError
        From ``fit``, for invalid scores or labels, or a ``reg`` that is not a finite number >= 0.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> logits = rng.normal(size=(60, 3))
    >>> labels = (logits + rng.gumbel(size=(60, 3))).argmax(axis=1)  # labels drawn from softmax(logits)
    >>> scores = 2 * logits  # over-confident scores: twice the calibrated logits
    >>> model = MatrixScaling(reg=0.1).fit(scores, labels, kind="logits")
    >>> round(float(model.coef_[0, 0]), 4), round(float(model.coef_[1, 1]), 4)
    (0.7686, 0.8013)
    """

    log_scale = True

    def __init__(self, reg: float = 0.0):
        self.reg = reg

    def _fit(self, logp: np.ndarray, labels: np.ndarray) -> None:
        reg = check_nonnegative(self.reg, "reg")
        problem = self._objective(logp, labels, reg)
        theta, self.converged_, self.gradient_norm_ = fit_softmax(problem, type(self).__name__, identity_first=True)
        k = logp.shape[1]
        self.coef_ = np.zeros((k, k))
        self.coef_[:, :-1] = problem.weights(theta)
        self.intercept_ = problem.biases(theta)

    def _objective(self, logp: np.ndarray, labels: np.ndarray, reg: float = 0.0) -> SoftmaxObjective:
        """The training objective; parameters (W[:, :K-1] row-major, b_1..b_{K-1}) (exposed for gradient checks)."""
        k = logp.shape[1]
        target = np.eye(k)[:, :-1]
        return SoftmaxObjective(
            reference_log_ratios(logp)[:, :-1],
            labels,
            k,
            free_bias=np.arange(k) < k - 1,
            weight_penalty=np.full((k, k - 1), float(reg)) if reg > 0 else None,  # 0 * inf at a far trial step
            weight_target=target,
            weight_start=target,
        )

    fewer_parameters = "a ridge penalty toward the identity, MatrixScaling(reg=...) with reg > 0"

    def _n_parameters(self) -> int:
        """The K (K - 1) free entries of W and the K - 1 free biases: K^2 - 1."""
        return self.n_classes_**2 - 1

    def _transform(self, logp: np.ndarray) -> np.ndarray:
        return log_softmax_rows(reference_log_ratios(logp) @ self.coef_.T + self.intercept_, overwrite=True)

    def _fitted_fields(self) -> dict[str, FittedField]:
        k = self.n_classes_
        return {
            "coef_": FittedField("array", (k, k)),
            "intercept_": FittedField("array", (k,)),
            "converged_": FittedField("bool"),
            "gradient_norm_": FittedField("float", low=0.0, finite=False),
        }


def reference_log_ratios(logp: np.ndarray) -> np.ndarray:
    """z_j = log s_j - log s_K (Silva Filho et al. (2023), Sect. 5.4.1), from finite log-posteriors."""
    return logp - logp[:, -1:]


def centred_log_ratios(logp: np.ndarray) -> np.ndarray:
    """z_j = log s_j - (1/K) sum_k log s_k, the centred log-ratio (clr) transform of compositional data
    analysis; for log-posteriors log-softmax(l) of logits l it equals l_j - mean_k l_k."""
    return logp - logp.mean(axis=1, keepdims=True)


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
    return SoftmaxObjective(problem.x / spread, problem.labels, problem.k, **options)


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
            return theta, report_convergence(calibrator, stopped, norm), norm
        fallback = _fit_rescaled(problem, spread)
        if fallback[1] or problem.loss_grad(fallback[0])[0] < problem.loss_grad(theta)[0]:
            theta, stopped = fallback
    else:
        theta, stopped = _fit_rescaled(problem, spread)
    norm = gradient_norm(problem, theta, spread)
    return theta, report_convergence(calibrator, stopped, norm), norm


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


def check_nonnegative(value, name: str) -> float:
    """Return ``value`` as a finite float >= 0."""
    try:
        out = float(value)
    except (TypeError, ValueError) as exc:
        raise CalibInputError(f"{name} must be a finite number >= 0; got {value!r}") from exc
    if isinstance(value, bool) or not np.isfinite(out) or out < 0:
        raise CalibInputError(f"{name} must be a finite number >= 0; got {value!r}")
    return out


class SoftmaxObjective:
    """Mean cross-entropy of softmax(x W^T + b) plus a quadratic penalty, with its analytic gradient.

    x: features (N, d), d <= K. ``diagonal``: W is diagonal, logit j = w_j x_j + b_j (classes j >= d
    get no weight term). ``free_bias``: which b_j are fitted (the others stay 0). Penalty:
    sum(weight_penalty * (W - weight_target)^2) + sum(bias_penalty * b^2). The parameter vector is
    W (row-major, or its diagonal) followed by the free biases.

    L = -(1/N) sum_i log softmax(u_i)_{y_i} + penalty;  dL/du = (softmax(u) - onehot(y)) / N, so
    dL/dW = R^T x (or the column sums of R * x for diagonal W) and dL/db = column sums of R.
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
    ):
        self.x = np.ascontiguousarray(x, dtype=np.float64)
        self.labels = labels
        self.k = n_classes
        self.n, self.d = self.x.shape
        self.diagonal = diagonal
        self.w_shape = (self.d,) if diagonal else (self.k, self.d)
        self.n_w = int(np.prod(self.w_shape))
        self.free_bias = np.ones(self.k, dtype=bool) if free_bias is None else np.asarray(free_bias, dtype=bool)
        self.weight_penalty = None if weight_penalty is None else np.asarray(weight_penalty, dtype=np.float64)
        self.weight_target = np.zeros(self.w_shape) if weight_target is None else weight_target
        self.bias_penalty = None if bias_penalty is None else np.asarray(bias_penalty, dtype=np.float64)
        self.weight_start = np.ones(self.w_shape) if weight_start is None else weight_start
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
        }

    def restricted(self, rows: slice) -> SoftmaxObjective:
        """The same objective (mean log-loss and penalty) on a subset of the rows."""
        return SoftmaxObjective(self.x[rows], self.labels[rows], self.k, **self._options)

    def start(self) -> np.ndarray:
        return np.concatenate([np.asarray(self.weight_start, dtype=np.float64).ravel(), np.zeros(self.free_bias.sum())])

    def weights(self, theta: np.ndarray) -> np.ndarray:
        return theta[: self.n_w].reshape(self.w_shape)

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
        w, b = self.weights(theta), self.biases(theta)
        logs = log_softmax_rows(self.logits(theta, out=self._buffer), overwrite=True)
        loss = -float(np.mean(logs[self.rows, self.labels]))
        resid = np.exp(logs, out=logs)  # N (dL/du) = softmax - onehot
        resid[self.rows, self.labels] -= 1.0
        grad_w = np.einsum("ij,ij->j", resid[:, : self.d], self.x) if self.diagonal else resid.T @ self.x
        grad_w /= self.n
        grad_b = np.einsum("ij->j", resid) / self.n
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
            w_idx = (classes[:, None] * m + np.arange(self.d)[None, :]).ravel()
        b_idx = classes * m + (m - 1)
        return np.concatenate([w_idx, b_idx[self.free_bias]])

    def hessian(self, theta: np.ndarray, chunk: int = 4096) -> np.ndarray:
        """Exact Hessian: (1/N) sum_i J_i^T (diag p_i - p_i p_i^T) J_i plus the penalty's 2 * weights.

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
        hess = h_ext[np.ix_(idx, idx)] / self.n
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
    # One BLAS thread: the same bits whatever the machine's thread count (calib.calibrators.blas_threads).
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
    iterate, takes over.
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
        if not decrement > 2 * tol:
            return theta, True
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
    coordinates = None if problem.diagonal else WhitenedWeights(problem)
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
    in their raw coordinates L-BFGS needs many more iterations.
    """

    def __init__(self, problem: SoftmaxObjective):
        self.problem = problem
        self.mean = np.einsum("ij->j", problem.x) / problem.n
        centred = problem.x - self.mean
        evals, evecs = np.linalg.eigh(centred.T @ centred / problem.n)
        evals = np.maximum(evals, 1e-12 * max(evals[-1], 1e-300))
        self.whiten = (evecs / np.sqrt(evals)) @ evecs.T  # C^(-1/2)
        self.unwhiten = (evecs * np.sqrt(evals)) @ evecs.T  # C^(1/2)

    def _split(self, vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n_w = self.problem.n_w
        return vector[:n_w].reshape(self.problem.w_shape), vector[n_w:]

    def to_theta(self, phi: np.ndarray) -> np.ndarray:
        v, c = self._split(phi)
        w = v @ self.whiten
        return np.concatenate([w.ravel(), c - (w @ self.mean)[self.problem.free_bias]])

    def to_search(self, theta: np.ndarray) -> np.ndarray:
        w, b = self._split(theta)
        return np.concatenate([(w @ self.unwhiten).ravel(), b + (w @ self.mean)[self.problem.free_bias]])

    def loss_grad(self, phi: np.ndarray) -> tuple[float, np.ndarray]:
        """Loss and gradient in the search coordinates (chain rule through to_theta)."""
        loss, grad = self.problem.loss_grad(self.to_theta(phi))
        grad_w, grad_b = self._split(grad)
        total_w = grad_w.copy()
        total_w[self.problem.free_bias] -= np.outer(grad_b, self.mean)
        return loss, np.concatenate([(total_w @ self.whiten).ravel(), grad_b])
