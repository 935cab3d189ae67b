"""The full linear softmax maps, softmax(W x + b), with a quadratic penalty whose weight is given or chosen
by cross-validation: the common part of matrix scaling (:class:`calib.calibrators.matrix_scaling.MatrixScaling`,
x the logits) and Dirichlet calibration (:class:`calib.calibrators.dirichlet.DirichletCalibrator`, x the
log-posteriors).

Penalties (``penalty``), with W of shape (K, d) and the weights lambda, mu >= 0:

- ``"odir"``, Off-Diagonal and Intercept Regularisation (Kull et al. (2019), Sect. 4, "ODIR"):
  lambda / (K (K - 1)) sum_{i != j} W_ij^2 + mu / K sum_j b_j^2. The diagonal of W is free, so a
  strong penalty leaves one weight per class on its own feature (vector scaling without biases).
- ``"l2"``: lambda / (K d) sum_ij (W - I)_ij^2 + mu / K sum_j b_j^2, a ridge toward the identity map
  (the uncalibrated scores), diagonal included; a strong penalty leaves the scores as they are.

``normalized=False`` drops the divisions by K (K - 1), K d and K. ``reference_row=True`` fixes the last
row of W and the last bias at 0 and penalizes the other rows as they are; with ``normalized=False``
that is the default of the authors' package dirichletcal (0.5.3, ``ref_row=True, reg_norm=False``),
whose penalty therefore depends on which class comes last (each row is measured relative to it). The
paper's formula, above, is the default here: it leaves the predictions and the penalty unchanged
when the classes are permuted.

Choice by cross-validation (``reg_lambda="cv"``): the grid ``lambdas`` (with ``mus``, or with mu fixed at
``reg_mu`` when it is given, or mu = lambda when both are None) is scored by the mean held-out log-loss
over stratified, shuffled, seeded folds (:func:`calib.calibrators.folds.fold_ids`), as Kull et al. (2019)
tune the ODIR weights (their Sect. 5.1: by cross-validated log-loss). Within each fold the grid is fitted
in the order given, each fit starting from the previous one's solution, so a grid from the strongest
penalty to the weakest walks a regularization path whose fits are each a small step. The walk stops once
``patience`` grid points in a row have a mean held-out loss above the best so far (None: the whole grid): past the
minimum of a path the loss only grows as the penalty weakens, and the weakest penalties are the
slowest fits (measured on a CIFAR-100 network, 5000 rows: 0.5 s a fold at lambda = 1e5, no
convergence in 5000 iterations at lambda = 1). The lowest mean wins (ties: the first in grid order)
and the map is refitted on all rows with it. The grid and its losses are kept (``cv_grid_``,
``cv_losses_``, NaN where the walk stopped before).
"""

from __future__ import annotations

import warnings
from typing import Annotated, Any, Literal

import numpy as np

from calib._internal.rows import log_softmax_rows
from calib.calibrators.base import Calibrator, FittedField
from calib.calibrators.folds import fold_ids, usable_folds
from calib.calibrators.softmax_regression import SoftmaxObjective, fit_softmax, minimize_objective
from calib.validation import (
    NON_NEGATIVE,
    CalibInputError,
    CalibInputWarning,
    Choice,
    Flag,
    Integer,
    NFolds,
    NonNegative,
    Numbers,
    Seed,
)

PENALTIES = ("odir", "l2")
# The parameters of every penalized map, declared once (this class, MatrixScaling and DirichletCalibrator).
RegLambda = NonNegative | Literal["cv"]  # a weight, or "cv": chosen by cross-validation
Penalty = Annotated[str, Choice(PENALTIES)]
Grid = Annotated[Any, Numbers(NON_NEGATIVE)]  # penalty weights, a non-empty sequence
Patience = Annotated[int, Integer(minimum=1)] | None
# The default grid of lambda (mu = lambda), strongest first: the normalized penalties weigh each entry of W
# by about lambda / K^2, and the weights that help grow with K (chosen by the cross-validation: 1 to 10 on
# CIFAR-10 networks, 100 to 1e6 on CIFAR-100 ones, 5000 calibration rows; README, "Many classes"), so the grid
# spans nine decades.
DEFAULT_LAMBDAS = (1e7, 1e6, 1e5, 1e4, 1e3, 1e2, 1e1, 1.0, 1e-1, 1e-2)
DEFAULT_FOLDS = 5


class PenalizedSoftmaxMap(Calibrator):
    """softmax(W x + b) on features x of the scores, with a penalty of given or cross-validated weight.

    Subclasses say which features x are (``_features``) and what a fit on logits or on log-posteriors
    records as ``features_`` (``_features_fitted``); this class fits, cross-validates, predicts and saves.
    It holds the penalty's parameters, which every subclass has; a subclass with parameters of its own passes
    these on. ``reg_lambda``, ``reg_mu`` and ``penalty`` are documented in each subclass, in the terms of its
    W; the others, and what the choice of the weights records, here.

    Parameters
    ----------
    lambdas, mus : sequences of floats >= 0
        The grid of ``reg_lambda="cv"`` (``mus=None``: mu = lambda), fitted in the order given.
    n_folds, seed : int
        The folds of ``reg_lambda="cv"``.
    patience : int or None, default 2
        The walk along the grid stops after this many points in a row worse than the best (None: the
        whole grid).
    reference_row, normalized : bool, default False, True
        The penalty's parametrisation and scale (module docstring).

    Attributes
    ----------
    reg_lambda_, reg_mu_ : float
        The penalty weights used.
    cv_grid_, cv_losses_ : ndarray of shapes (G, 2) and (G,)
        The (lambda, mu) grid and each point's mean held-out log-loss (one point, loss NaN, when the
        weights were given).
    converged_, gradient_norm_ : bool, float
        As for :class:`calib.calibrators.matrix_scaling.VectorScaling`.
    n_classes_ : int
        K, the number of classes seen by ``fit``.
    """

    log_scale = True

    def __init__(
        self,
        reg_lambda: RegLambda = "cv",
        reg_mu: NonNegative | None = None,
        penalty: Penalty = "odir",
        lambdas: Grid = DEFAULT_LAMBDAS,
        mus: Grid | None = None,
        n_folds: NFolds = DEFAULT_FOLDS,
        seed: Seed = 0,
        patience: Patience = 2,
        reference_row: Flag = False,
        normalized: Flag = True,
    ):
        self.reg_lambda = reg_lambda
        self.reg_mu = reg_mu
        self.penalty = penalty
        self.lambdas = lambdas
        self.mus = mus
        self.n_folds = n_folds
        self.seed = seed
        self.patience = patience
        self.reference_row = reference_row
        self.normalized = normalized

    # -- what the subclasses define -----------------------------------------------------------------------------

    def _features(self, x: np.ndarray, features: str) -> np.ndarray:
        """The K features the map multiplies (``features_``), from log-posteriors or logits ``x``; of
        log-ratios to the last class the last is 0, and the fit leaves it out."""
        raise NotImplementedError

    def _features_fitted(self, on_logits: bool) -> str:
        """The ``features_`` of a fit on logits as given (``on_logits``) or on log-posteriors."""
        raise NotImplementedError

    # -- fitting ---------------------------------------------------------------------------------------------------

    def _fit(self, logp: np.ndarray, labels: np.ndarray, sample_weight: np.ndarray | None = None) -> None:
        self._fit_on(logp, labels, self._features_fitted(on_logits=False), sample_weight)

    def _fit_logits(self, logits: np.ndarray, labels: np.ndarray, sample_weight: np.ndarray | None = None) -> None:
        self._fit_on(logits, labels, self._features_fitted(on_logits=True), sample_weight)

    def _fit_on(self, x: np.ndarray, labels: np.ndarray, features: str, sample_weight: np.ndarray | None) -> None:
        self.features_ = features
        feats = self._features(x, features)
        if features == "last_class_ratios":  # z_K = 0 carries nothing to fit
            feats = feats[:, :-1]
        if _is_cv(self.reg_lambda):
            grid = self._grid()
            losses = self._cross_validated_losses(feats, labels, grid, sample_weight)
            lam, mu = grid[int(np.nanargmin(losses))]
            self.cv_grid_, self.cv_losses_ = np.array(grid, dtype=np.float64), losses
        else:
            lam, mu = self._given_penalty()
            self.cv_grid_, self.cv_losses_ = np.array([[lam, mu]]), np.array([np.nan])
        self.reg_lambda_, self.reg_mu_ = lam, mu
        problem = self._objective(feats, labels, lam, mu, sample_weight)
        theta, self.converged_, self.gradient_norm_ = fit_softmax(problem, type(self).__name__, identity_first=True)
        self._set_map(problem, theta)

    def _set_map(self, problem: SoftmaxObjective, theta: np.ndarray) -> None:
        k = self.n_classes_
        self.coef_ = np.zeros((k, k))
        self.coef_[:, : problem.d] = problem.weights(theta)
        self.intercept_ = problem.biases(theta)

    def _cross_validated_losses(
        self, feats: np.ndarray, labels: np.ndarray, grid, sample_weight: np.ndarray | None
    ) -> np.ndarray:
        """Mean held-out log-loss of each grid point (NaN past the point where the walk stopped), weighted by
        ``sample_weight`` when given (each fold's fit then weighted too); each fold walks the grid in order
        from warm starts. The folds are drawn on the rows, whatever their weights."""
        asked = int(self.n_folds)
        n_folds = usable_folds(labels, asked)
        if n_folds < 2:
            raise CalibInputError(
                f"labels: no class has 2 rows, and {type(self).__name__}(reg_lambda='cv') chooses the penalty by "
                "cross-validation, which needs one; give the penalty (e.g. reg_lambda=1.0)",
                cli_message=f"labels: no class of --train has 2 rows, and {type(self).__name__} chooses its penalty "
                "by cross-validation, which needs one; give it (--reg-lambda 1)",
            )
        if n_folds < asked:
            warnings.warn(
                CalibInputWarning(
                    f"{type(self).__name__}: the penalty is chosen by {n_folds}-fold cross-validation, not {asked}: "
                    f"the largest class has {n_folds} calibration rows"
                ),
                stacklevel=5,
            )
        folds = fold_ids(labels, n_folds=n_folds, seed=self.seed)
        patience = self.patience
        tests = [folds == fold for fold in np.unique(folds)]
        thetas: list[np.ndarray | None] = [None] * len(tests)
        losses = np.full(len(grid), np.nan)
        rises = 0
        for g, (lam, mu) in enumerate(grid):
            with warnings.catch_warnings():  # a fold's fit is not the model: the fit on all rows reports its own
                warnings.simplefilter("ignore", CalibInputWarning)
                total = self._held_out_total(feats, labels, tests, thetas, lam, mu, sample_weight)
            losses[g] = total / (labels.size if sample_weight is None else sample_weight.sum())
            rises = rises + 1 if g and losses[g] > np.nanmin(losses[:g]) else 0
            if patience is not None and rises >= patience:
                break
        return losses

    def _held_out_total(self, feats, labels, tests, thetas: list, lam: float, mu: float, sample_weight=None) -> float:
        """The held-out log-loss summed over the folds ``tests`` at (``lam``, ``mu``), each row's loss times its
        weight when ``sample_weight`` is given, each fold's fit (weighted too) starting from its previous
        solution in ``thetas`` (updated in place)."""
        total = 0.0
        for f, test in enumerate(tests):
            train_weight = None if sample_weight is None else sample_weight[~test]
            problem = self._objective(feats[~test], labels[~test], lam, mu, train_weight)
            if thetas[f] is None:
                thetas[f], _, _ = fit_softmax(problem, type(self).__name__, identity_first=True)
            else:
                thetas[f], _ = minimize_objective(problem, thetas[f])
            weights, biases = problem.weights(thetas[f]), problem.biases(thetas[f])
            held = log_softmax_rows(feats[test] @ weights.T + biases, overwrite=True)
            true_logs = held[np.arange(held.shape[0]), labels[test]]
            total -= true_logs.sum() if sample_weight is None else np.dot(sample_weight[test], true_logs)
        return total

    def _objective(
        self, feats: np.ndarray, labels: np.ndarray, lam: float, mu: float, sample_weight: np.ndarray | None = None
    ) -> SoftmaxObjective:
        """The penalized mean log-loss of softmax(W x + b) on ``feats``, the weighted mean with ``sample_weight``
        (the penalty unchanged, so integer weights weigh it as repeated rows do) (exposed for gradient checks)."""
        k, d = self.n_classes_, feats.shape[1]
        penalty, reference, normalized = self.penalty, bool(self.reference_row), bool(self.normalized)
        identity = np.eye(k)[:, :d]
        free_rows = np.arange(k) < k - 1 if reference else None
        free_bias = np.arange(k) < k - 1 if (reference or d < k) else None
        if penalty == "odir":
            weight_scale = lam / (k * (k - 1)) if normalized else lam
            weight_penalty = weight_scale * (1.0 - identity) if lam > 0 else None
            target = np.zeros((k, d))
        else:
            weight_scale = lam / (k * d) if normalized else lam
            weight_penalty = np.full((k, d), weight_scale) if lam > 0 else None
            target = identity
        bias_scale = mu / k if normalized else mu
        start = identity - identity[-1] if reference else identity
        return SoftmaxObjective(
            feats,
            labels,
            k,
            free_bias=free_bias,
            free_rows=free_rows,
            weight_penalty=weight_penalty,
            weight_target=target,
            bias_penalty=np.full(k, bias_scale) if mu > 0 else None,
            weight_start=start,
            sample_weight=sample_weight,
        )

    # -- parameters ------------------------------------------------------------------------------------------------

    def _check_params(self) -> None:
        """The declared parameters, and that a fixed mu (``reg_mu``) and a grid of mu (``mus``) are not both given
        for ``reg_lambda="cv"``."""
        super()._check_params()
        if _is_cv(self.reg_lambda) and self.reg_mu is not None and self.mus is not None:
            raise CalibInputError("give reg_mu (mu fixed) or mus (a grid of mu), not both")

    def _grid(self) -> list[tuple[float, float]]:
        lambdas = _floats(self.lambdas)
        if self.reg_mu is not None:  # mu given: fixed while lambda is chosen
            mu = float(self.reg_mu)
            return [(lam, mu) for lam in lambdas]
        if self.mus is None:
            return [(lam, lam) for lam in lambdas]
        return [(lam, mu) for lam in lambdas for mu in _floats(self.mus)]

    def _given_penalty(self) -> tuple[float, float]:
        lam = float(self.reg_lambda)
        mu = lam if self.reg_mu is None else float(self.reg_mu)
        return lam, mu

    # -- predicting and saving -------------------------------------------------------------------------------------

    def _fitted_on_logits(self) -> bool:
        return getattr(self, "features_", None) == "logits"

    def _transform(self, x: np.ndarray) -> np.ndarray:
        return log_softmax_rows(self._features(x, self.features_) @ self.coef_.T + self.intercept_, overwrite=True)

    def _n_parameters(self) -> int:
        """The fitted entries of W and the free biases: K^2 + K on K features (the loss is flat along K + 1
        of those directions without a penalty), K^2 - 1 with a reference row or on K - 1 log-ratios."""
        k = self.n_classes_
        d = k - 1 if self.features_ == "last_class_ratios" else k
        rows = k - 1 if self.reference_row else k
        biases = k - 1 if (self.reference_row or d < k) else k
        return rows * d + biases

    def _fitted_fields(self) -> dict[str, FittedField]:
        k = self.n_classes_
        return {
            "coef_": FittedField("array", (k, k)),
            "intercept_": FittedField("array", (k,)),
            "features_": FittedField("str", choices=tuple(dict.fromkeys(map(self._features_fitted, (True, False))))),
            "reg_lambda_": FittedField("float", low=0.0),
            "reg_mu_": FittedField("float", low=0.0),
            "cv_grid_": FittedField("array", (None, 2), low=0.0),
            "cv_losses_": FittedField("array", (None,), finite=False),
            "converged_": FittedField("bool"),
            "gradient_norm_": FittedField("float", low=0.0, finite=False),
        }

    fewer_parameters = "a larger penalty (reg_lambda=..., or a grid of larger lambdas for reg_lambda='cv')"


def _is_cv(value) -> bool:
    return isinstance(value, str) and value == "cv"


def _floats(values) -> list[float]:
    """A grid (checked: a non-empty sequence of numbers >= 0) as floats."""
    return [float(v) for v in np.asarray(values, dtype=np.float64)]
