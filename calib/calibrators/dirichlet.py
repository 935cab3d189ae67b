"""Dirichlet calibration, softmax(W ln s + b), with the ODIR penalty chosen by cross-validation.

Source: Kull et al. (2019), "Beyond temperature scaling: obtaining well-calibrated multiclass
probabilities with Dirichlet calibration" (NeurIPS), Sects. 3-5, and the survey of Silva Filho et al.
(2023), Sect. 5.4.4, eqs. 18-19 (printed with exp(-b_j - w_j^T ln s), the negative sign the survey
gives every scaling map from its eq. 12 on; here (W, b) -> (-W, -b), the same family). The map is a
multinomial logistic regression on the log-posteriors; the penalties, their scale and the choice of
their weight are :mod:`calib.calibrators.penalized`'s.
"""

from __future__ import annotations

import numpy as np

from calib.calibrators.penalized import PenalizedSoftmaxMap


class DirichletCalibrator(PenalizedSoftmaxMap):
    """Dirichlet calibration: g(s) = softmax(W ln s + b), W a full K x K matrix, b in R^K.

    A multinomial logistic regression on the log-posteriors (exact zeros smoothed,
    :mod:`calib.calibrators.zeros`); W = I, b = 0 is the identity map and the starting point of the
    fit. The K^2 + K parameters minimize the mean log-loss plus the ODIR (Off-Diagonal and Intercept
    Regularisation) penalty of Kull et al. (2019), Sect. 4,

        lambda / (K (K - 1)) * sum_{i != j} W_ij^2 + mu / K * sum_j b_j^2,

    which leaves the diagonal of W free; by default (lambda, mu) are chosen by 5-fold cross-validation
    of the log-loss over ``lambdas`` with mu = lambda, strongest first, as Kull et al. (2019) tune them
    (Sect. 5.1), and the map is refitted on all rows (:mod:`calib.calibrators.penalized`). With
    ``reg_lambda=0`` it is the unpenalized maximum-likelihood fit, whose loss is flat along W + 1 v^T
    and b + c 1 (the optimizer keeps the identity's component there) and which at many classes fits
    noise. The loss is convex and minimized in float64 and deterministically: damped Newton up to 400
    parameters (K <= 19), L-BFGS-B with the analytic gradient in whitened coordinates beyond; a fit from
    the identity that stops short is repeated on unit-spread features
    (:func:`calib.calibrators.softmax_regression.fit_softmax`), so scores of any scale reach the optimum.

    The authors' package dirichletcal (0.5.3) writes the penalty otherwise by default: the last row of
    W and b fixed at 0, each row measured relative to it, and lambda, mu not divided by K (K - 1) and
    K; ``reference_row=True, normalized=False`` is that form (checked against the package's fits in the
    test suite).

    Source: Kull et al. (2019), Sects. 3-5; Silva Filho et al. (2023), Sect. 5.4.4, eqs. 18-19.

    Sample weights: ``fit(scores, labels, kind=..., sample_weight=w)`` takes one weight >= 0 per row (default
    None: equal weights). The fit then minimizes the weighted mean of the log-loss (the penalty unchanged, so
    integer weights weigh it as repeated rows do; a cross-validated penalty weighs its fold fits and held-out
    losses too), sum_i w_i loss_i / sum_i w_i, so integer weights fit what repeating each row w_i times fits;
    rows of weight 0 are dropped (:meth:`Calibrator.fit`).

    Parameters
    ----------
    reg_lambda : float or "cv", default "cv"
        lambda >= 0, the weight of the off-diagonal penalty; "cv" chooses (lambda, mu) by cross-validation.
    reg_mu : float or None, default None
        mu >= 0, the weight of the intercept penalty (with ``reg_lambda="cv"``, fixed while lambda is
        chosen); None uses mu = lambda.
    penalty : {"odir", "l2"}, default "odir"
        "l2" shrinks all of W toward the identity instead (:mod:`calib.calibrators.penalized`).
    lambdas, mus, n_folds, seed, patience, reference_row, normalized
        The grid of ``reg_lambda="cv"``, its folds, when its walk stops, and the penalty's parametrisation
        and scale, as for :class:`calib.calibrators.penalized.PenalizedSoftmaxMap`.

    Attributes
    ----------
    coef_ : ndarray of shape (K, K)
        W.
    intercept_ : ndarray of shape (K,)
        b.
    features_ : str
        "log_posteriors".
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
    >>> draw = miscalibrated_logits(60, 3)  # model logits twice the true ones: over-confident
    >>> scores, labels = draw.model_logits, draw.labels
    >>> model = DirichletCalibrator(reg_lambda=0.1).fit(scores, labels, kind="logits")
    >>> round(float(model.coef_[0, 0]), 3), model.reg_mu_
    (0.457, 0.1)
    """

    def _features_fitted(self, on_logits: bool) -> str:
        return "log_posteriors"

    def _features(self, x: np.ndarray, features: str) -> np.ndarray:
        return x
