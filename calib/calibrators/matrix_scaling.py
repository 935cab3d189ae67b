"""Vector and matrix scaling: softmax(w ⊙ z + b) and softmax(W z + b) on the logits z (Guo et al. (2017)),
and the forms of the same maps on other features of the scores.

Guo et al. (2017), Sect. 4.2, define both on a network's logits z, as given. Those are not a function
of the posteriors: logits z and z + c(x) 1 give the same posteriors, and vector scaling maps them
differently (w ⊙ c 1 is not a multiple of 1 unless every w_k is equal). So given logits
(``kind="logits"``) the maps act on them as they are (``features_ = "logits"``), and a fitted map must
then be applied to logits too. Given probabilities or log-probabilities, the only logits there are
the log-posteriors ln s (the logits whose log-sum-exp is 0), and the maps act on them
(``features_ = "log_posteriors"``): vector scaling is then Dirichlet calibration with a diagonal
matrix, and matrix scaling is Dirichlet calibration (Kull et al. (2019), Sect. 3).

The other features, each a named choice (``features=``):

- ``"log_posteriors"``: ln s whatever the scores' kind (the diagonal Dirichlet map of Kull et al. (2019)
  for vector scaling; Dirichlet calibration itself, :class:`calib.calibrators.dirichlet.DirichletCalibrator`,
  for the matrix);
- ``"clr"`` (vector scaling only): ln s_k - mean_j ln s_j, the centred log-ratio, which for logits
  equals z_k - mean_j z_j: the same map whatever the kind, and equivariant under scaling of the logits;
- ``"last_class_ratios"``: z_j = ln(s_j / s_K), the survey's logits of a generic probabilistic
  classifier (Silva Filho et al. (2023), Sect. 5.4.1, eqs. 14-17), whose last class is special.

The survey prints the maps as exp(-w z - b) (its eq. 12 writes temperature scaling as exp(-z_j / t),
which contradicts its statement that t = 1 is the usual softmax); here they are softmax(+w z + b), the
same family. Fits minimize the mean log-loss (plus matrix scaling's penalty) in float64 and
deterministically with the solvers of :mod:`calib.calibrators.softmax_regression`.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np

from calib._internal.rows import log_softmax_rows
from calib.calibrators.base import Calibrator, FittedField
from calib.calibrators.penalized import (
    DEFAULT_FOLDS,
    DEFAULT_LAMBDAS,
    Grid,
    Patience,
    PenalizedSoftmaxMap,
    Penalty,
    RegLambda,
)
from calib.calibrators.softmax_regression import SoftmaxObjective, fit_softmax
from calib.validation import Choice, Flag, NFolds, NonNegative, Seed

# What vector scaling's weights multiply, and matrix scaling's matrix (module docstring).
VECTOR_FEATURES = ("logits", "log_posteriors", "clr", "last_class_ratios")
MATRIX_FEATURES = ("logits", "last_class_ratios")


class VectorScaling(Calibrator):
    """Vector scaling: g(z) = softmax(w ⊙ z + b), one weight and one bias per class, on the logits z.

    With ``features="logits"`` (the default) z are the logits as given when ``kind="logits"`` (Guo
    et al. (2017)'s vector scaling; apply the fitted map to logits), and the log-posteriors ln s
    otherwise (then the map is Kull et al. (2019)'s Dirichlet calibration with a diagonal matrix). The
    other ``features`` (module docstring): ``"log_posteriors"`` always ln s; ``"clr"`` the centred
    log-posteriors ln s_k - mean_j ln s_j (the same map whatever the kind, and for logits multiplied
    by any c > 0 the same calibrated posteriors); ``"last_class_ratios"`` the survey's ln(s_j / s_K),
    where w_K multiplies z_K = 0 and is fixed at 0, and the last class is special.

    b_K = 0 (softmax ignores a common shift), so K weights and K - 1 biases, 2K - 1 parameters
    (2 (K - 1) on the survey's log-ratios). For K = 2 on the survey's log-ratios it is exactly Platt
    scaling on the log-odds. The parameters minimize the mean log-loss, a convex function, in float64
    and deterministically: damped Newton from the identity map (w = 1, b = 0), refitted on unit-spread
    features if that stops short (:func:`calib.calibrators.softmax_regression.fit_softmax`; ``"clr"``
    always fits that way, for its equivariance). Per-class weights can change the argmax, so unlike
    temperature scaling vector scaling does not preserve accuracy in general. Exact zeros in the
    posteriors are treated as :mod:`calib.calibrators.zeros` describes.

    Source: Guo et al. (2017), Sect. 4.2 (vector scaling on logits); Kull et al. (2019), Sect. 3
    (Dirichlet calibration, softmax(W ln s + b), here with W diagonal); Silva Filho et al. (2023),
    Sects. 5.4.1-5.4.2, eqs. 14-15 (``"last_class_ratios"``), with the sign reparametrisation
    softmax(+w z + b) of the printed exp(-w z - b).

    Sample weights: ``fit(scores, labels, kind=..., sample_weight=w)`` takes one weight >= 0 per row (default
    None: equal weights). The fit then minimizes the weighted mean of the log-loss, sum_i w_i loss_i / sum_i
    w_i, so integer weights fit what repeating each row w_i times fits; rows of weight 0 are dropped
    (:meth:`Calibrator.fit`).

    Parameters
    ----------
    features : {"logits", "log_posteriors", "clr", "last_class_ratios"}, default "logits"
        What w multiplies (above).

    Attributes
    ----------
    coef_ : ndarray of shape (K,)
        w (on the survey's log-ratios, w_K = 0 is fixed since z_K = 0).
    intercept_ : ndarray of shape (K,)
        b; b_K = 0 is fixed.
    features_ : str
        What w multiplied in the fit: "logits" (as given: predictions need kind="logits"),
        "log_posteriors", "clr" or "last_class_ratios".
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
    >>> from calib.data.miscalibrated_logits import miscalibrated_logits
    >>> draw = miscalibrated_logits(60, 3)  # model logits twice the true ones: over-confident
    >>> scores, labels = draw.model_logits, draw.labels
    >>> model = VectorScaling().fit(scores, labels, kind="logits")
    >>> [round(w, 4) for w in model.coef_.tolist()], model.features_
    ([0.5219, 0.6488, 0.9618], 'logits')
    >>> centred = VectorScaling(features="clr").fit(scores, labels, kind="logits")
    >>> again = VectorScaling(features="clr").fit(1000 * scores, labels, kind="logits")  # logits x 1000
    >>> bool(np.allclose(again.coef_ * 1000, centred.coef_, rtol=1e-9))
    True
    """

    log_scale = True
    FEATURES = VECTOR_FEATURES

    def __init__(self, features: Annotated[str, Choice(VECTOR_FEATURES)] = "logits"):
        self.features = features

    def fits_logits(self) -> bool:
        return self.features == "logits"

    def _fitted_on_logits(self) -> bool:
        return getattr(self, "features_", None) == "logits"

    def _fit(self, logp: np.ndarray, labels: np.ndarray, sample_weight: np.ndarray | None = None) -> None:
        self._fit_on(logp, labels, "log_posteriors" if self.features == "logits" else self.features, sample_weight)

    def _fit_logits(self, logits: np.ndarray, labels: np.ndarray, sample_weight: np.ndarray | None = None) -> None:
        self._fit_on(logits, labels, "logits", sample_weight)

    def _fit_on(self, x: np.ndarray, labels: np.ndarray, features: str, sample_weight: np.ndarray | None) -> None:
        self.features_ = features
        problem = self._objective(x, labels, sample_weight)
        theta, self.converged_, self.gradient_norm_ = fit_softmax(
            problem, type(self).__name__, identity_first=features != "clr"
        )
        weights = problem.weights(theta)
        self.coef_ = np.append(weights, 0.0) if features == "last_class_ratios" else weights.copy()
        self.intercept_ = problem.biases(theta)

    def _objective(
        self, x: np.ndarray, labels: np.ndarray, sample_weight: np.ndarray | None = None
    ) -> SoftmaxObjective:
        """The training objective on the features of ``x`` (``features_`` set); parameters (w, b_1..b_{K-1}),
        w of the K - 1 first classes on the survey's log-ratios (exposed for gradient checks)."""
        k = x.shape[1]
        features = _vector_features(x, self.features_)
        if self.features_ == "last_class_ratios":
            features = features[:, :-1]
        return SoftmaxObjective(
            features, labels, k, diagonal=True, free_bias=np.arange(k) < k - 1, sample_weight=sample_weight
        )

    def _transform(self, x: np.ndarray) -> np.ndarray:
        return log_softmax_rows(self.coef_ * _vector_features(x, self.features_) + self.intercept_, overwrite=True)

    def _n_parameters(self) -> int:
        """K weights and K - 1 biases (2K - 1); 2 (K - 1) on the survey's log-ratios, where w_K is fixed."""
        k = self.n_classes_
        return 2 * (k - 1) if self.features_ == "last_class_ratios" else 2 * k - 1

    def _fitted_fields(self) -> dict[str, FittedField]:
        k = self.n_classes_
        choices = ("logits", "log_posteriors") if self.features == "logits" else (self.features,)
        return {
            "coef_": FittedField("array", (k,)),
            "intercept_": FittedField("array", (k,)),
            "features_": FittedField("str", choices=choices),
            "converged_": FittedField("bool"),
            "gradient_norm_": FittedField("float", low=0.0, finite=False),
        }


def _vector_features(x: np.ndarray, features: str) -> np.ndarray:
    """What vector scaling's w multiplies, from logits as given ("logits") or log-posteriors (the others)."""
    if features == "clr":
        return centred_log_ratios(x)
    if features == "last_class_ratios":
        return reference_log_ratios(x)
    return x


class MatrixScaling(PenalizedSoftmaxMap):
    """Matrix scaling: g(z) = softmax(W z + b), W a full K x K matrix, on the logits z.

    With ``features="logits"`` (the default) z are the logits as given when ``kind="logits"`` (Guo
    et al. (2017)'s matrix scaling; apply the fitted map to logits), and the log-posteriors ln s
    otherwise, where the map is Dirichlet calibration (Kull et al. (2019), Sect. 3). With
    ``features="last_class_ratios"``, z_j = ln(s_j / s_K) as in the survey of Silva Filho et al. (2023),
    eqs. 16-17: the last column of W multiplies z_K = 0 and is fixed at 0, and b_K = 0.

    K^2 + K parameters (K^2 - 1 on the survey's log-ratios) fit noise unless the calibration rows are
    many (Kull et al. (2019), Sect. 5; at K = 100, 10100 parameters): the default chooses the weight of
    the ODIR penalty lambda / (K (K - 1)) sum_{i != j} W_ij^2 + mu / K sum_j b_j^2 (Kull et al. (2019)'s
    "MS-ODIR") by 5-fold cross-validation of the log-loss, over ``lambdas`` (mu = lambda) from the
    strongest; :mod:`calib.calibrators.penalized` gives the penalties and the procedure.
    ``reg_lambda=0`` is the unpenalized fit of Guo et al. (2017). The loss is convex; it is minimized
    in float64 and deterministically from the identity map (W = I, b = 0): by damped Newton up to 400
    parameters, by L-BFGS-B in whitened coordinates beyond
    (:mod:`calib.calibrators.softmax_regression`). Exact zeros in the posteriors are treated as
    :mod:`calib.calibrators.zeros` describes.

    Source: Guo et al. (2017), Sect. 4.2 (the map); Kull et al. (2019), Sects. 3-5 (the ODIR penalty
    and its choice by cross-validated log-loss); Silva Filho et al. (2023), Sects. 5.4.1 and 5.4.3,
    eqs. 16-17 (``"last_class_ratios"``), with the sign reparametrisation softmax(+W z + b) of the
    printed exp(-W z - b).

    Sample weights: ``fit(scores, labels, kind=..., sample_weight=w)`` takes one weight >= 0 per row (default
    None: equal weights). The fit then minimizes the weighted mean of the log-loss (the penalty unchanged; a
    cross-validated penalty weighs its fold fits and held-out losses too), sum_i w_i loss_i / sum_i w_i, so
    integer weights fit what repeating each row w_i times fits; rows of weight 0 are dropped
    (:meth:`Calibrator.fit`).

    Parameters
    ----------
    features : {"logits", "last_class_ratios"}, default "logits"
        What W multiplies (above).
    reg_lambda : float or "cv", default "cv"
        lambda >= 0, the weight of the penalty on W; "cv" chooses (lambda, mu) by cross-validation.
    reg_mu : float or None, default None
        mu >= 0, the weight of the penalty on b (with ``reg_lambda="cv"``, fixed while lambda is chosen);
        None: mu = lambda.
    penalty : {"odir", "l2"}, default "odir"
        ODIR leaves the diagonal of W free; "l2" shrinks all of W toward the identity.
    lambdas, mus, n_folds, seed, patience, reference_row, normalized
        The grid of ``reg_lambda="cv"``, its folds, when its walk stops, and the penalty's parametrisation
        and scale, as for :class:`calib.calibrators.penalized.PenalizedSoftmaxMap`.

    Attributes
    ----------
    coef_ : ndarray of shape (K, K)
        W (last column 0 on the survey's log-ratios).
    intercept_ : ndarray of shape (K,)
        b.
    features_ : str
        "logits" (as given: predictions need kind="logits"), "log_posteriors" or "last_class_ratios".
    reg_lambda_, reg_mu_, cv_grid_, cv_losses_, converged_, gradient_norm_, n_classes_
        The penalty weights used, the grid and each point's held-out log-loss, whether the fit converged,
        its gradient norm and K, as for :class:`calib.calibrators.penalized.PenalizedSoftmaxMap`.

    Raises
    ------
    CalibInputError
        From ``fit``, for invalid scores or labels, or an invalid parameter.

    Examples
    --------
    >>> from calib.data.miscalibrated_logits import miscalibrated_logits
    >>> draw = miscalibrated_logits(300, 3)  # model logits twice the true ones: over-confident
    >>> model = MatrixScaling().fit(draw.model_logits, draw.labels, kind="logits")
    >>> model.reg_lambda_, round(float(model.coef_[0, 0]), 3)  # the truth: W = I / 2
    (1.0, 0.502)
    """

    def __init__(
        self,
        features: Annotated[str, Choice(MATRIX_FEATURES)] = "logits",
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
        self.features = features
        super().__init__(
            reg_lambda=reg_lambda,
            reg_mu=reg_mu,
            penalty=penalty,
            lambdas=lambdas,
            mus=mus,
            n_folds=n_folds,
            seed=seed,
            patience=patience,
            reference_row=reference_row,
            normalized=normalized,
        )

    def fits_logits(self) -> bool:
        return self.features == "logits"

    def _features_fitted(self, on_logits: bool) -> str:
        if self.features == "last_class_ratios":
            return self.features
        return "logits" if on_logits else "log_posteriors"

    def _features(self, x: np.ndarray, features: str) -> np.ndarray:
        return reference_log_ratios(x) if features == "last_class_ratios" else x


def reference_log_ratios(logp: np.ndarray) -> np.ndarray:
    """z_j = log s_j - log s_K (Silva Filho et al. (2023), Sect. 5.4.1), from finite log-posteriors."""
    return logp - logp[:, -1:]


def centred_log_ratios(logp: np.ndarray) -> np.ndarray:
    """z_j = log s_j - (1/K) sum_k log s_k, the centred log-ratio (clr) transform of compositional data
    analysis; for log-posteriors log-softmax(l) of logits l it equals l_j - mean_k l_k."""
    return logp - logp.mean(axis=1, keepdims=True)
