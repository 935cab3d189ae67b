"""Dirichlet calibration with ODIR regularisation, and its cross-validated tuning.

Source: Kull et al. (2019), "Beyond temperature scaling: obtaining well-calibrated multiclass
probabilities with Dirichlet calibration" (NeurIPS), and the survey of Silva Filho et al. (2023),
Sect. 5.4.4, eqs. 18-19. The map is a multinomial logistic regression on the log-posteriors,

    g(s) = softmax(W ln s + b),   W full K x K, b in R^K,

i.e. survey eq. 18 with the sign reparametrisation (W, b) -> (-W, -b) (the survey prints eq. 18
with exp(-b_j - w_j^T ln s), the negative sign it gives every scaling map from eq. 12 on);
exact zeros in s are treated as :mod:`calib.calibrators.zeros` describes, and finite ln s are used as
they are, at any scale. W = I, b = 0 is the identity map and is the starting point of the fit; a fit
from it that stops short (on scores of a large scale the identity is saturated) is repeated on
unit-spread features (:func:`calib.calibrators.matrix_scaling.fit_softmax`).

ODIR (Off-Diagonal and Intercept Regularisation) of Kull et al. (2019) adds to the mean log-loss
(eq. 19) the penalty below; the survey names ODIR without a formula, and this one, with its
normalising constants, is that of the authors' reference code (dirichletcal)

    lambda / (K (K - 1)) * sum_{i != j} W_ij^2 + mu / K * sum_j b_j^2,

leaving the diagonal of W free. Fits use scipy's L-BFGS-B on the analytic gradient (float64,
deterministic). Without regularisation the loss is flat along W + 1 v^T and b + c 1 (the
predictions do not change); the optimizer keeps the identity's component along those directions.
"""

from __future__ import annotations

import numpy as np

from calib._internal.rows import log_softmax_rows
from calib.calibrators.base import Calibrator, FittedField
from calib.calibrators.folds import fold_ids
from calib.calibrators.line_search import GRADIENT_TOL
from calib.calibrators.matrix_scaling import (
    SoftmaxObjective,
    check_nonnegative,
    feature_spread,
    fit_softmax,
    gradient_norm,
    minimize_objective,
)
from calib.validation import CalibInputError, check_positive_int

DEFAULT_LAMBDAS = (1e-3, 1e-2, 1e-1, 1.0, 10.0)


class DirichletCalibrator(Calibrator):
    """Dirichlet calibration: g(s) = softmax(W ln s + b), with optional ODIR regularisation.

    A multinomial logistic regression on the log-posteriors (exact zeros smoothed,
    :mod:`calib.calibrators.zeros`), W a full K x K matrix and b in R^K; W = I, b = 0 is the identity map and the
    starting point of the fit. The K^2 + K parameters minimize the mean log-loss plus the ODIR
    (Off-Diagonal and Intercept Regularisation) penalty

        lambda / (K (K - 1)) * sum_{i != j} W_ij^2 + mu / K * sum_j b_j^2,

    which leaves the diagonal of W free, in float64 and deterministically (the solver of
    :class:`MatrixScaling`: damped Newton up to 400 parameters, L-BFGS-B with the analytic gradient
    beyond). Without regularisation the loss is flat along W + 1 v^T and b + c 1 (the predictions do
    not change); the optimizer keeps the identity's component along those directions. A fit from the
    identity that stops short is repeated on unit-spread features from their identity
    (:func:`calib.calibrators.matrix_scaling.fit_softmax`), so scores of any scale reach the optimum.

    Source: Kull et al. (2019); Silva Filho et al. (2023), Sect. 5.4.4, eqs. 18-19, with the sign
    reparametrisation (W, b) -> (-W, -b) of the printed eq. 18. The survey names ODIR without a
    formula; the penalty above, with its normalising constants, is that of the authors' reference
    code (dirichletcal).

    Parameters
    ----------
    reg_lambda : float, default 0.0
        lambda >= 0, the weight of the off-diagonal penalty.
    reg_mu : float or None, default None
        mu >= 0, the weight of the intercept penalty; None uses mu = lambda. The defaults (0, None)
        give the unregularised maximum-likelihood fit.

    Attributes
    ----------
    coef_ : ndarray of shape (K, K)
        W.
    intercept_ : ndarray of shape (K,)
        b.
    reg_mu_ : float
        The mu used.
    converged_ : bool
        Whether the optimizer met its stopping rule with a gradient norm at most
        :data:`calib.calibrators.line_search.GRADIENT_TOL`; False comes with a CalibInputWarning.
    gradient_norm_ : float
        The largest gradient entry at the fitted parameters, for unit-spread features
        (:mod:`calib.calibrators.line_search`); NaN in a model file written before it was recorded.
    n_classes_ : int
        K, the number of classes seen by ``fit``.

    Raises
    ------
    CalibInputError
        From ``fit``, for invalid scores or labels, or an invalid ``reg_lambda`` or ``reg_mu``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> logits = rng.normal(size=(60, 3))
    >>> labels = (logits + rng.gumbel(size=(60, 3))).argmax(axis=1)  # labels drawn from softmax(logits)
    >>> scores = 2 * logits  # over-confident scores: twice the calibrated logits
    >>> model = DirichletCalibrator(reg_lambda=0.1).fit(scores, labels, kind="logits")
    >>> round(float(model.coef_[0, 0]), 3), model.reg_mu_
    (0.54, 0.1)
    """

    log_scale = True

    def __init__(self, reg_lambda: float = 0.0, reg_mu: float | None = None):
        self.reg_lambda = reg_lambda
        self.reg_mu = reg_mu

    def _fit(self, logp: np.ndarray, labels: np.ndarray) -> None:
        lam, mu = _check_odir(self.reg_lambda, self.reg_mu)
        self.reg_mu_ = mu
        self._fit_from(logp, labels, lam, mu, start=None)

    def _fit_from(self, logp: np.ndarray, labels: np.ndarray, lam: float, mu: float, start) -> np.ndarray:
        """Fit with validated (lambda, mu) from ``start`` (None: the identity); returns theta."""
        problem = self._objective(logp, labels, lam, mu)
        if start is None:
            theta, self.converged_, self.gradient_norm_ = fit_softmax(problem, type(self).__name__, identity_first=True)
        else:  # a warm start within cross-validation (no warning: the refit on all data reports)
            theta, stopped = minimize_objective(problem, start)
            self.gradient_norm_ = gradient_norm(problem, theta, feature_spread(problem.x))
            self.converged_ = bool(stopped and self.gradient_norm_ <= GRADIENT_TOL)
        self.coef_ = problem.weights(theta).copy()
        self.intercept_ = problem.biases(theta)
        return theta

    def _objective(self, logp: np.ndarray, labels: np.ndarray, lam: float = 0.0, mu: float = 0.0) -> SoftmaxObjective:
        """The ODIR training objective; parameters (W row-major, b) (exposed for gradient checks)."""
        k = logp.shape[1]
        off_diagonal = 1.0 - np.eye(k)
        return SoftmaxObjective(
            logp,
            labels,
            k,
            weight_penalty=(lam / (k * (k - 1))) * off_diagonal if lam > 0 else None,
            bias_penalty=np.full(k, mu / k) if mu > 0 else None,
            weight_start=np.eye(k),
        )

    fewer_parameters = (
        "the ODIR penalty, DirichletCalibrator(reg_lambda=..., reg_mu=...), or DirichletCalibratorCV to choose it"
    )

    def _n_parameters(self) -> int:
        """W and b, K^2 + K (the loss is flat along K + 1 of those directions without a penalty)."""
        return self.n_classes_ * (self.n_classes_ + 1)

    def _transform(self, logp: np.ndarray) -> np.ndarray:
        return log_softmax_rows(logp @ self.coef_.T + self.intercept_, overwrite=True)

    def _fitted_fields(self) -> dict[str, FittedField]:
        k = self.n_classes_
        return {
            "coef_": FittedField("array", (k, k)),
            "intercept_": FittedField("array", (k,)),
            "reg_mu_": FittedField("float", low=0.0),
            "converged_": FittedField("bool"),
            "gradient_norm_": FittedField("float", low=0.0, finite=False),
        }


class DirichletCalibratorCV(Calibrator):
    """Dirichlet calibration with (lambda, mu) chosen by stratified K-fold cross-validated log-loss.

    Source: Kull et al. (2019) tune the ODIR weights by cross-validation on log-loss (the survey gives no grid;
    the default one, powers of 10, is this library's choice). The grid
    is ``lambdas`` x ``mus``; ``mus=None`` ties mu = lambda (a one-dimensional grid). Folds come from
    :func:`calib.calibrators.protocols.fold_ids` (``n_folds``, ``seed``: shuffled and stratified by
    label). Each grid point is scored by the mean held-out log-loss over all samples; the lowest score
    wins (ties: the first in grid order), and the model is refitted on all data with it. Within a fold
    the grid is fitted in order, each fit starting from the previous solution (deterministic).

    Fitted attributes: ``reg_lambda_``, ``reg_mu_``, ``cv_scores_`` (dict (lambda, mu) -> mean
    held-out log-loss), ``calibrator_`` (the refitted :class:`DirichletCalibrator`), ``coef_``,
    ``intercept_``.
    """

    log_scale = True

    def __init__(self, lambdas=DEFAULT_LAMBDAS, mus=None, n_folds: int = 5, seed: int = 0):
        self.lambdas = lambdas
        self.mus = mus
        self.n_folds = n_folds
        self.seed = seed

    def _fit(self, logp: np.ndarray, labels: np.ndarray) -> None:
        grid = self._grid()
        folds = fold_ids(labels, n_folds=self.n_folds, seed=self.seed)
        totals = np.zeros(len(grid))
        for fold in np.unique(folds):
            test = folds == fold
            model = DirichletCalibrator()
            theta = None
            for g, (lam, mu) in enumerate(grid):
                theta = model._fit_from(logp[~test], labels[~test], lam, mu, start=theta)
                held = model._transform(logp[test])
                totals[g] -= held[np.arange(held.shape[0]), labels[test]].sum()
        scores = totals / labels.size
        self.cv_scores_ = {pair: float(score) for pair, score in zip(grid, scores, strict=True)}
        self.reg_lambda_, self.reg_mu_ = grid[int(np.argmin(scores))]
        self.calibrator_ = DirichletCalibrator(self.reg_lambda_, self.reg_mu_).fit(logp, labels, kind="logprobs")
        self.coef_, self.intercept_ = self.calibrator_.coef_, self.calibrator_.intercept_

    def _grid(self) -> list[tuple[float, float]]:
        check_positive_int(self.n_folds, "n_folds", minimum=2)
        lambdas = _check_grid(self.lambdas, "lambdas")
        if self.mus is None:
            return [(lam, lam) for lam in lambdas]
        return [(lam, mu) for lam in lambdas for mu in _check_grid(self.mus, "mus")]

    fewer_parameters = "a grid of larger penalties (lambdas=..., mus=...)"

    def _n_parameters(self) -> int:
        """Those of the refitted :class:`DirichletCalibrator` (the penalties chosen by cross-validation aside)."""
        return self.calibrator_.n_parameters_

    def _transform(self, logp: np.ndarray) -> np.ndarray:
        return self.calibrator_._transform(logp)


def _check_odir(reg_lambda, reg_mu) -> tuple[float, float]:
    lam = check_nonnegative(reg_lambda, "reg_lambda")
    mu = lam if reg_mu is None else check_nonnegative(reg_mu, "reg_mu")
    return lam, mu


def _check_grid(values, name: str) -> list[float]:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise CalibInputError(f"{name} must be a non-empty sequence of finite numbers >= 0; got {values!r}") from exc
    if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise CalibInputError(f"{name} must be a non-empty sequence of finite numbers >= 0; got {values!r}")
    return [float(v) for v in arr]
