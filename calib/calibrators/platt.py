"""Platt scaling (logistic calibration) of the binary log-odds.

Source: Platt (2000), "Probabilistic outputs for support vector machines", and the survey of
Silva Filho et al. (2023), Sect. 5.3.3, eqs. 8-9 (eq. 9 read as the negative log-likelihood: as
printed, the indicator sum sits inside the logarithm, a slip eqs. 11, 13, 15, 17 and 19 repeat). The
feature is the log-odds t = log q_1 - log q_0 of the input posteriors (a logistic map assumes a
feature on the whole real line, so the survey, Sect. 5.3.3, transforms probabilities by the logit
first), so the identity map is w = 1, b = 0.

``feature="score"`` uses the raw positive-class probability s = q_1 as the feature instead, which
is eq. 8 read literally (the survey's Fig. 15: a sigmoid in s cannot undo over-confidence).

The fit minimizes a mean binary cross-entropy (with sample weights, the weighted mean), which is convex
in (w, b); it is solved with a damped Newton method using the exact Hessian (two parameters), in float64
and deterministically.
The same small logistic-regression solver is reused by :mod:`calib.calibrators.beta`.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np

from calib.calibrators.base import Calibrator
from calib.calibrators.line_search import armijo_step, converged_when_stalled
from calib.validation import Choice, Flag

PLATT_FEATURES = ("log_odds", "score")


class PlattCalibrator(Calibrator):
    """Platt scaling (logistic calibration) of a binary posterior: p_1 = sigmoid(w t + b).

    The feature t is the log-odds log q_1 - log q_0 of the input posteriors, with exact zeros
    treated as :mod:`calib.calibrators.zeros` describes (smoothed, or given a finite log-posterior when
    met only at prediction), so t is finite even when a posterior is exactly 0 or 1, and is used
    unclipped at any scale; w = 1, b = 0 is the identity. (w, b) minimize a mean binary cross-entropy
    (``fit(..., sample_weight=w)``: the weighted mean sum_i w_i CE_i / sum_i w_i, so integer weights fit what
    repeating rows fits), convex in (w, b), by damped Newton with the exact Hessian (two parameters), in
    float64 and deterministically: O(N) time per iteration. Binary only (K = 2).

    Source: Platt (2000); Silva Filho et al. (2023), Sect. 5.3.3, eqs. 8-9 (eq. 9 read as the
    negative log-likelihood).

    Sample weights: ``fit(scores, labels, kind=..., sample_weight=w)`` takes one weight >= 0 per row (default
    None: equal weights). The fit then minimizes the weighted mean of the cross-entropy (a weighted logistic
    regression; smoothed targets count the classes' weights), sum_i w_i loss_i / sum_i w_i, so integer weights
    fit what repeating each row w_i times fits; rows of weight 0 are dropped (:meth:`Calibrator.fit`).

    Parameters
    ----------
    smooth_targets : bool, default False
        False: (w, b) minimize the mean log-loss against the 0/1 labels. On linearly separable data
        that optimum is at infinity; the Newton iterations then stop once the loss no longer
        decreases measurably, leaving a very large |w| (a nearly hard step). True: the regularized
        targets of Platt (2000) replace the labels, t_+ = (N_+ + 1) / (N_+ + 2) for positives and
        t_- = 1 / (N_- + 2) for negatives, and (w, b) minimize the mean cross-entropy against them;
        the optimum is then always finite.
    feature : {"log_odds", "score"}, default "log_odds"
        "log_odds": t as above. "score": t = q_1, the raw positive-class probability, which is the
        survey's eq. 8 read literally (its Fig. 15: a sigmoid in s cannot undo over-confidence).

    Attributes
    ----------
    coef_ : float
        w.
    intercept_ : float
        b.
    converged_ : bool
        Whether Newton's method met its stopping rule.
    n_classes_ : int
        2.

    Raises
    ------
    CalibInputError
        From ``fit``, for invalid scores or labels, scores with K != 2 columns, a non-boolean
        ``smooth_targets`` or an unknown ``feature``.

    Examples
    --------
    >>> scores = [[0.9, 0.1], [0.2, 0.8], [0.95, 0.05], [0.1, 0.9], [0.7, 0.3], [0.4, 0.6], [0.85, 0.15], [0.3, 0.7]]
    >>> labels = [0, 1, 1, 1, 0, 0, 0, 1]
    >>> model = PlattCalibrator().fit(scores, labels, kind="probs")
    >>> round(model.coef_, 4), round(model.intercept_, 4)
    (0.5485, 0.1947)
    >>> round(PlattCalibrator(smooth_targets=True).fit(scores, labels, kind="probs").coef_, 4)
    0.3432
    """

    binary_only = True

    @property
    def log_scale(self) -> bool:
        """The log-odds feature reads log-posteriors (exact zeros smoothed); the "score" feature does not."""
        return self.feature == "log_odds"

    def __init__(self, smooth_targets: Flag = False, feature: Annotated[str, Choice(PLATT_FEATURES)] = "log_odds"):
        self.smooth_targets = smooth_targets
        self.feature = feature

    def _feature(self, logp: np.ndarray) -> np.ndarray:
        if self.feature == "log_odds":
            return log_odds(logp)
        return np.exp(logp[:, 1])

    def _fit(self, logp: np.ndarray, labels: np.ndarray, sample_weight: np.ndarray | None = None) -> None:
        targets = platt_targets(labels, sample_weight) if self.smooth_targets else labels.astype(np.float64)
        problem = self._objective(logp, targets, sample_weight)
        theta, self.converged_ = fit_logistic(problem)
        self.coef_, self.intercept_ = float(theta[0]), float(theta[1])

    def _objective(
        self, logp: np.ndarray, targets: np.ndarray, sample_weight: np.ndarray | None = None
    ) -> LogisticObjective:
        """The training objective on features [t, 1] (exposed for gradient checks)."""
        features = np.column_stack([self._feature(logp), np.ones(logp.shape[0])])
        return LogisticObjective(features, targets, sample_weight)

    def _n_parameters(self) -> int:
        """The slope and the intercept."""
        return 2

    def _transform(self, logp: np.ndarray) -> np.ndarray:
        return binary_log_sigmoid(self.coef_ * self._feature(logp) + self.intercept_)


def platt_targets(labels: np.ndarray, sample_weight: np.ndarray | None = None) -> np.ndarray:
    """The smoothed targets of Platt (2000): (N_+ + 1)/(N_+ + 2) for positives, 1/(N_- + 2) for negatives;
    with ``sample_weight``, N_+ and N_- are the total weights of the positives and negatives (what repeating
    each row w_i times counts)."""
    positive = labels == 1
    if sample_weight is None:
        n_pos = int(positive.sum())
        n_neg = labels.size - n_pos
    else:
        n_pos = float(sample_weight[positive].sum())
        n_neg = float(sample_weight[~positive].sum())
    return np.where(positive, (n_pos + 1.0) / (n_pos + 2.0), 1.0 / (n_neg + 2.0))


def log_odds(logp: np.ndarray) -> np.ndarray:
    """log q_1 - log q_0 of finite log-posteriors (zeros treated by :mod:`calib.calibrators.zeros`)."""
    return logp[:, 1] - logp[:, 0]


def binary_log_sigmoid(u: np.ndarray) -> np.ndarray:
    """Log-posteriors [log(1 - sigmoid(u)), log sigmoid(u)], accurate for any finite u."""
    softplus_u, softplus_minus_u = softplus_pair(u)
    return np.column_stack([-softplus_u, -softplus_minus_u])


def softplus_pair(u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(log(1 + e^u), log(1 + e^-u)), the same bits as np.logaddexp(0, u) and np.logaddexp(0, -u).

    Both share the term log(1 + e^-|u|): softplus(v) = max(v, 0) + log(1 + e^-|v|), which is how
    numpy's logaddexp evaluates it (its exp and log1p inside), so one logaddexp serves both signs
    and the predicted log-posteriors have the bits of the two logaddexp calls they replace.

    Parameters
    ----------
    u : ndarray of float64

    Examples
    --------
    >>> [float(v[0]) for v in softplus_pair(np.array([0.0]))]
    [0.6931471805599453, 0.6931471805599453]
    """
    shared = np.logaddexp(0.0, -np.abs(u))
    return np.maximum(u, 0.0) + shared, np.maximum(-u, 0.0) + shared


class LogisticObjective:
    """Mean binary cross-entropy of sigmoid(x @ theta) against targets y in [0, 1], or with ``sample_weight``
    its weighted mean.

    L(theta) = sum_i v_i [ y_i softplus(-u_i) + (1 - y_i) softplus(u_i) ],  u = x @ theta,
    v_i = 1 / N (or w_i / sum_j w_j), with gradient x^T diag(v) (sigmoid(u) - y) and Hessian
    x^T diag(v sigmoid(u) sigmoid(-u)) x.
    Everything comes from one exponential per sample, e_i = exp(-|u_i|): softplus(+-u) = max(+-u, 0)
    + log1p(e), sigmoid(|u|) = 1 / (1 + e) and sigmoid(-|u|) = e / (1 + e). Neither form subtracts
    nearly equal numbers, so the loss stays accurate near 0 and sigmoid(u) - y has no cancellation
    when y is 0 or 1. (u, e) of the last point evaluated are kept: Newton's derivatives at the point
    its line search accepted reuse them.
    """

    def __init__(self, x: np.ndarray, targets: np.ndarray, sample_weight: np.ndarray | None = None):
        self.x = np.asfortranarray(x, dtype=np.float64)  # column-major: x^T v reads each feature contiguously
        self.targets = np.asarray(targets, dtype=np.float64)
        self.n = self.x.shape[0]
        # Each row's share of the mean; None: 1 / N, kept as the plain mean so unweighted fits keep their bits.
        self.shares = None if sample_weight is None else sample_weight / sample_weight.sum()
        positive = self.targets == 1.0
        self._labels = positive if np.all(positive | (self.targets == 0.0)) else None
        self._last: tuple[np.ndarray, np.ndarray, np.ndarray, float] | None = None

    def _at(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """(theta, u, e, loss) at ``theta``, computed once per point."""
        if self._last is not None and np.array_equal(self._last[0], theta):
            return self._last
        u = self.x @ theta
        e = np.exp(-np.abs(u))
        shared = np.log1p(e)
        if self._labels is not None:  # each term is softplus(-u) (y = 1) or softplus(u) (y = 0)
            terms = np.maximum(np.where(self._labels, -u, u), 0.0) + shared
        else:
            y = self.targets
            terms = y * np.maximum(-u, 0.0) + (1.0 - y) * np.maximum(u, 0.0) + shared
        loss = float(np.mean(terms) if self.shares is None else np.dot(self.shares, terms))
        self._last = (np.array(theta, dtype=np.float64), u, e, loss)
        return self._last

    def loss(self, theta: np.ndarray) -> float:
        return self._at(theta)[3]

    def loss_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        loss, grad, _ = self.derivatives(theta, hessian=False)
        return loss, grad

    def derivatives(self, theta: np.ndarray, hessian: bool = True):
        _, u, e, loss = self._at(theta)
        big = 1.0 / (1.0 + e)  # sigmoid(|u|)
        small = e * big  # sigmoid(-|u|)
        positive_u = u >= 0
        if self._labels is not None:
            # sigmoid(u) - y: sigmoid(u) for y = 0, -sigmoid(-u) for y = 1; each is big or small by the sign of u
            magnitude = np.where(positive_u != self._labels, big, small)
            resid = np.where(self._labels, -magnitude, magnitude)
        else:
            y = self.targets
            resid = (1.0 - y) * np.where(positive_u, big, small) - y * np.where(positive_u, small, big)
        grad = self.x.T @ resid / self.n if self.shares is None else self.x.T @ (resid * self.shares)
        if not hessian:
            return loss, grad, None
        if self.shares is None:
            return loss, grad, self.x.T @ (self.x * (big * small)[:, None]) / self.n
        return loss, grad, self.x.T @ (self.x * (self.shares * big * small)[:, None])


def fit_logistic(
    problem: LogisticObjective, start: np.ndarray | None = None, max_iter: int = 200, tol: float = 1e-15
) -> tuple[np.ndarray, bool]:
    """Minimize a LogisticObjective by damped Newton with Armijo backtracking (start: zeros).

    Stops when half the Newton decrement is below ``tol`` or no decrease is possible at float
    precision; a tiny ridge keeps a singular Hessian (collinear features, saturation) solvable. The
    Newton step that meets the decrement test is still taken, without a line search (as in
    :func:`calib.calibrators.scaling._newton`): the test leaves the parameters ~sqrt(decrement) from the
    optimum (measured: 1e-8 on 400 rows, where scikit-learn's Newton solvers agree to 1e-16), the step, in
    the quadratic phase (Nocedal & Wright (2006), Theorem 3.5), ~decrement.
    Returns (theta, converged): converged when the decrement test was met, or when the line search
    stalled with :func:`calib.calibrators.line_search.converged_when_stalled`; False after ``max_iter``.
    """
    theta = np.zeros(problem.x.shape[1]) if start is None else np.asarray(start, dtype=np.float64).copy()
    for _ in range(max_iter):
        loss, grad, hess = problem.derivatives(theta)
        ridge = 1e-12 * max(np.trace(hess) / hess.shape[0], 1e-300)
        try:
            step = -np.linalg.solve(hess + ridge * np.eye(hess.shape[0]), grad)
        except np.linalg.LinAlgError:
            step = -grad
        decrement = -float(grad @ step)
        if not decrement > 2 * tol:
            return (theta + step if np.all(np.isfinite(step)) else theta), True
        accepted = armijo_step(problem.loss, theta, step, loss, decrement)
        if accepted is None:  # no decrease possible at float precision
            return theta, converged_when_stalled(decrement, loss)
        theta = accepted[0]
    return theta, False
