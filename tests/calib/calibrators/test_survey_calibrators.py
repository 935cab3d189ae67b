"""Tests of the survey's post-hoc calibrators (Silva Filho et al. 2023, Sect. 5; note 001 §7, §11-12).

Platt (eq. 8), beta (eq. 10, Kull et al. 2017), vector / matrix scaling (eqs. 14, 16, Guo et al.
2017), Dirichlet with ODIR (eq. 18, Kull et al. 2019), one-vs-rest, plus properties of the existing
temperature scaling and isotonic calibrators that the survey states.

Sampling tolerances are five standard errors from the Fisher information at the true
parameters (computed in each test), so a correct fit fails with probability well below 1e-5.
"""

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit, log_expit, log_softmax, logit
from sklearn.base import clone
from sklearn.metrics import roc_auc_score

from calib.calibrators import (
    AffineCalibrator,
    BetaCalibrator,
    DirichletCalibrator,
    HistogramBinning,
    IsotonicCalibrator,
    MatrixScaling,
    OneVsRest,
    PlattCalibrator,
    TemperatureScaling,
    VectorScaling,
)
from calib.calibrators.platt import platt_targets, softplus_pair
from calib.calibrators.scaling import _AffineObjective
from calib.calibrators.softmax_regression import WhitenedWeights
from calib.validation import CalibInputError

# Minimizers compared with other points of their family: exact in theory, float rounding of a
# mean of N <= 20000 log-losses of order 1 (and of the optimizers' last step) stays below this.
OPT_TOL = 1e-9


def _draw_labels(rng, p):
    """One categorical draw per row of the probability matrix p."""
    return np.minimum((rng.random(p.shape[0])[:, None] > np.cumsum(p, axis=1)).sum(axis=1), p.shape[1] - 1)


def _ce(logp, y):
    return -float(np.mean(logp[np.arange(y.size), y]))


def _fisher_se(x, p):
    """Standard errors of a logistic regression on features x at true probabilities p."""
    info = (x * (p * (1 - p))[:, None]).T @ x
    return np.sqrt(np.diag(np.linalg.inv(info)))


def _central_grad(f, theta, h=1e-6):
    return np.array([(f(theta + h * e) - f(theta - h * e)) / (2 * h) for e in np.eye(theta.size)])


def _binary_from_log_odds(t):
    return np.column_stack([log_expit(-t), log_expit(t)])


# ---------------------------------------------------------------------------------------------
# Platt scaling


def _platt_data(n=20_000, seed=1):
    """Log-odds t ~ N(0, 1.5^2) and labels from sigmoid(2 t - 0.5)."""
    rng = np.random.default_rng(seed)
    t = 1.5 * rng.normal(size=n)
    y = (rng.random(n) < expit(2.0 * t - 0.5)).astype(int)
    return t, y


def test_platt_recovers_a_known_sigmoid():
    t, y = _platt_data()
    model = PlattCalibrator().fit(_binary_from_log_odds(t), y, kind="logprobs")
    se = _fisher_se(np.column_stack([t, np.ones_like(t)]), expit(2.0 * t - 0.5))  # about (0.035, 0.024)
    assert model.converged_
    assert abs(model.coef_ - 2.0) < 5 * se[0]
    assert abs(model.intercept_ + 0.5) < 5 * se[1]
    out = model.predict_proba(_binary_from_log_odds(t), kind="logprobs")
    np.testing.assert_allclose(out[:, 1], expit(model.coef_ * t + model.intercept_), rtol=1e-12)


def test_platt_smoothed_targets_pull_slightly_toward_one_half():
    t, y = _platt_data()
    x = _binary_from_log_odds(t)
    plain = PlattCalibrator().fit(x, y, kind="logprobs")
    smooth = PlattCalibrator(smooth_targets=True).fit(x, y, kind="logprobs")
    # Targets 1 - 1/(N+ + 2) and 1/(N- + 2) are closer to 1/2, so the slope shrinks, by O(1/N).
    assert 0 < plain.coef_ - smooth.coef_ < 0.01
    # The smoothed fit is the cross-entropy minimizer against Platt's targets: check by an
    # independent optimizer on that loss.
    targets = platt_targets(y)

    def loss(theta):
        u = theta[0] * t + theta[1]
        return -np.mean(targets * log_expit(u) + (1 - targets) * log_expit(-u))

    ref = minimize(loss, np.zeros(2), method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-14})
    np.testing.assert_allclose([smooth.coef_, smooth.intercept_], ref.x, atol=1e-6)


def test_platt_separable_case_diverges_plainly_and_matches_hand_formula_when_smoothed():
    # Log-odds 0 (negative) and 1, 1 (positives): perfectly separable.
    scores = np.array([[0.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    y = np.array([0, 1, 1])
    np.testing.assert_allclose(platt_targets(y), [1 / 3, 3 / 4, 3 / 4])  # 1/(N- + 2), (N+ + 1)/(N+ + 2)
    plain = PlattCalibrator().fit(scores, y, kind="logits")
    assert plain.coef_ > 20  # the maximum-likelihood slope is infinite
    smooth = PlattCalibrator(smooth_targets=True).fit(scores, y, kind="logits")
    # Two distinct inputs, two parameters: sigmoid(b) = 1/3 and sigmoid(w + b) = 3/4 exactly,
    # so b = -ln 2 and w = ln 3 + ln 2 = ln 6.
    assert smooth.intercept_ == pytest.approx(-np.log(2.0), abs=1e-9)
    assert smooth.coef_ == pytest.approx(np.log(6.0), abs=1e-9)


def test_softplus_pair_has_the_bits_of_numpys_logaddexp():
    # The predictions and the smoothed-target loss rely on it: one logaddexp for both signs.
    rng = np.random.default_rng(0)
    tiny = np.finfo(float).tiny
    u = np.concatenate(
        [
            rng.normal(size=100_000) * 30,
            rng.normal(size=10_000) * 1e-8,
            [0.0, -0.0, tiny, -tiny, 5e-324, -5e-324, 1e-300, 36.7, -36.7, 709.0, -745.0, 1e308, -1e308],
            [np.inf, -np.inf],
        ]
    )
    plus, minus = softplus_pair(u)
    assert plus.view(np.int64).tolist() == np.logaddexp(0.0, u).view(np.int64).tolist()
    assert minus.view(np.int64).tolist() == np.logaddexp(0.0, -u).view(np.int64).tolist()


# ---------------------------------------------------------------------------------------------
# Beta calibration


def _calibrated_binary(n=20_000, seed=2):
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    return s, (rng.random(n) < s).astype(int)


def test_beta_abm_is_nearly_the_identity_on_calibrated_scores():
    s, y = _calibrated_binary()
    model = BetaCalibrator().fit(np.column_stack([1 - s, s]), y, kind="probs")
    x = np.column_stack([np.log(s), -np.log1p(-s), np.ones_like(s)])
    info_inv = np.linalg.inv((x * (s * (1 - s))[:, None]).T @ x)
    se = np.sqrt(np.diag(info_inv))  # about (0.025, 0.025, 0.04)
    assert abs(model.a_ - 1.0) < 5 * se[0]
    assert abs(model.b_ - 1.0) < 5 * se[1]
    assert abs(model.c_) < 5 * se[2]
    # Predictions: the fitted logit deviates from logit(s) by at most 5 standard errors of the
    # fitted linear predictor (delta method) anywhere on a grid of scores.
    grid = np.linspace(0.01, 0.99, 99)
    xg = np.column_stack([np.log(grid), -np.log1p(-grid), np.ones_like(grid)])
    se_u = np.sqrt(np.einsum("ij,jk,ik->i", xg, info_inv, xg))
    p = model.predict_proba(np.column_stack([1 - grid, grid]), kind="probs")[:, 1]
    assert np.all(np.abs(logit(p) - logit(grid)) < 5 * se_u)
    assert np.max(np.abs(p - grid)) < 0.02
    assert model.m_ == pytest.approx(0.5, abs=0.05)


def test_beta_variants_follow_their_definitions():
    s, y = _calibrated_binary(5000, seed=3)
    probs = np.column_stack([1 - s, s])
    grid = np.column_stack([[0.7, 0.5, 0.1], [0.3, 0.5, 0.9]])
    ab = BetaCalibrator("ab").fit(probs, y, kind="probs")
    # m = 1/2: c = b ln(1 - m) - a ln m = (a - b) ln 2, and s = 1/2 maps to 1/2.
    assert ab.m_ == 0.5
    assert ab.c_ == pytest.approx((ab.a_ - ab.b_) * np.log(2.0), rel=1e-12)
    assert ab.predict_proba(grid, kind="probs")[1, 1] == pytest.approx(0.5, abs=1e-12)

    def ab_loss(theta):  # betacal's "ab" model: logit = a ln(2 s) - b ln(2 (1 - s)), no free intercept
        u = theta[0] * np.log(2 * s) - theta[1] * np.log(2 * (1 - s))
        return -np.mean(y * log_expit(u) + (1 - y) * log_expit(-u))

    ref = minimize(ab_loss, np.ones(2), method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-14})
    np.testing.assert_allclose([ab.a_, ab.b_], ref.x, atol=1e-6)
    am = BetaCalibrator("am").fit(probs, y, kind="probs")
    # a = b: a slope on the log-odds plus an intercept, i.e. the Platt family on log-odds.
    platt = PlattCalibrator().fit(probs, y, kind="probs")
    assert am.a_ == am.b_
    assert am.a_ == pytest.approx(platt.coef_, abs=1e-9)
    assert am.c_ == pytest.approx(platt.intercept_, abs=1e-9)
    assert am.m_ == pytest.approx(1 / (1 + np.exp(am.c_ / am.a_)), rel=1e-12)
    # abm: s = m maps to 1/2.
    abm = BetaCalibrator("abm").fit(probs, y, kind="probs")
    m = abm.m_
    assert abm.predict_proba(np.array([[1 - m, m]]), kind="probs")[0, 1] == pytest.approx(0.5, abs=1e-9)


def test_beta_abm_enforces_nonnegative_shapes_at_the_constrained_optimum():
    # Positive rate rises to s = 1/2 then falls: the unconstrained fit has b < 0.
    rng = np.random.default_rng(4)
    s = rng.random(8000)
    y = (rng.random(s.size) < 0.3 + 0.4 * (s > 0.5) * (1 - s)).astype(int)
    probs = np.column_stack([1 - s, s])
    x = np.column_stack([np.log(s), -np.log1p(-s), np.ones_like(s)])

    def loss(theta):
        u = x @ theta
        return -np.mean(y * log_expit(u) + (1 - y) * log_expit(-u))

    def grad(theta):
        return x.T @ (expit(x @ theta) - y) / y.size

    free = minimize(loss, np.zeros(3), jac=grad, method="BFGS", options={"gtol": 1e-10})
    assert free.x[1] < 0  # the constraint is active
    bounded = minimize(
        loss, np.array([1.0, 1.0, 0.0]), jac=grad, method="L-BFGS-B", bounds=[(0, None), (0, None), (None, None)]
    )
    model = BetaCalibrator("abm").fit(probs, y, kind="probs")
    assert model.a_ >= 0 and model.b_ >= 0
    ours = loss(np.array([model.a_, model.b_, model.c_]))
    assert ours <= bounded.fun + OPT_TOL  # at least as good as an independent bounded solver
    assert ours == pytest.approx(bounded.fun, abs=1e-7)


# ---------------------------------------------------------------------------------------------
# Vector / matrix scaling and Dirichlet calibration

# A distortion with equal row sums (1.5): then the inverse map softmax(A^-1 ln q + b) is exactly
# in the Dirichlet and matrix-scaling families (the log-normalizer term A^-1 1 is uniform).
_A = np.array([[1.6, 0.2, -0.3], [0.1, 1.2, 0.2], [-0.2, 0.3, 1.4]])
_C = np.array([0.3, -0.2, 0.0])


def _distorted(n=20_000, seed=5):
    """True log-posteriors, the distorted log-scores softmax(A ln p + c) and labels drawn from p."""
    rng = np.random.default_rng(seed)
    true = log_softmax(1.5 * rng.normal(size=(n, 3)), axis=1)
    y = _draw_labels(rng, np.exp(true))
    return true, log_softmax(true @ _A.T + _C, axis=1), y


@pytest.mark.parametrize(
    "calibrator",
    [
        MatrixScaling(features="last_class_ratios", reg_lambda=0),
        MatrixScaling(reg_lambda=0),  # on the log-posteriors of logprobs: Dirichlet calibration
        DirichletCalibrator(reg_lambda=0),
        DirichletCalibrator(reg_lambda=0, reference_row=True),
    ],
    ids=["matrix survey", "matrix", "dirichlet", "dirichlet reference row"],
)
def test_matrix_scaling_and_dirichlet_undo_a_known_linear_distortion(calibrator):
    true, scores, y = _distorted()
    model = clone(calibrator).fit(scores, y, kind="logprobs")
    out = model.predict_log_proba(scores, kind="logprobs")
    assert model.converged_
    # The true posteriors are a member of the family, so the training maximum-likelihood fit
    # is at least as good as them; with 12 parameters it cannot be much better.
    assert _ce(out, y) <= _ce(true, y) + OPT_TOL
    assert _ce(out, y) > _ce(true, y) - 0.005
    assert _ce(out, y) < _ce(scores, y) - 0.05
    assert np.corrcoef(np.exp(out).ravel(), np.exp(true).ravel())[0, 1] > 0.99


def test_dirichlet_recovers_the_inverse_distortion_matrix():
    _, scores, y = _distorted()
    model = DirichletCalibrator(reg_lambda=0).fit(scores, y, kind="logprobs")
    # Identified up to W + 1 v^T: compare the differences of rows to the reference row.
    w_true = np.linalg.inv(_A)
    np.testing.assert_allclose(model.coef_ - model.coef_[-1], w_true - w_true[-1], atol=0.05)


def test_dirichlet_penalty_shrinks_off_diagonals_monotonically():
    _, scores, y = _distorted(5000)
    off = ~np.eye(3, dtype=bool)
    norms = []
    for lam in (0.0, 1.0, 10.0, 100.0, 1e4):
        coef = DirichletCalibrator(reg_lambda=lam).fit(scores, y, kind="logprobs").coef_
        norms.append(np.sum(coef[off] ** 2))
    # For min f + lam g, g at the optimum is non-increasing in lam (any minimizer at lam = 0).
    assert np.all(np.diff(norms) <= 1e-9)
    assert norms[-1] < 1e-3 * norms[0]


def test_dirichlet_objective_is_cross_entropy_plus_odir_penalty():
    _, scores, y = _distorted(500)
    rng = np.random.default_rng(6)
    w, b = rng.normal(size=(3, 3)), rng.normal(size=3)
    lam, mu = 0.7, 0.2
    problem = _dirichlet(3)._objective(scores, y, lam, mu)
    by_hand = _ce(log_softmax(scores @ w.T + b, axis=1), y)
    by_hand += lam / 6 * np.sum(w[~np.eye(3, dtype=bool)] ** 2) + mu / 3 * np.sum(b**2)
    assert problem.loss_grad(np.concatenate([w.ravel(), b]))[0] == pytest.approx(by_hand, rel=1e-12)
    # reg_mu=None ties mu to lambda.
    model = DirichletCalibrator(reg_lambda=0.3).fit(scores, y, kind="logprobs")
    assert model.reg_mu_ == 0.3


def _dirichlet(k: int, **params) -> DirichletCalibrator:
    """A DirichletCalibrator set for K classes, whose ``_objective`` (exposed for such checks) can be built."""
    model = DirichletCalibrator(**params)
    model.n_classes_ = k
    return model


def _problem(model, x: np.ndarray, y: np.ndarray, lam: float = 0.0, mu: float = 0.0):
    """The objective ``model`` minimizes on log-posteriors ``x`` for its form (``features``), with (lam, mu) for
    the penalized maps."""
    k = x.shape[1]
    if isinstance(model, VectorScaling):
        model = clone(model)
        model.features_ = "log_posteriors" if model.features == "logits" else model.features
        return model._objective(x, y)
    model = clone(model)
    model.n_classes_ = k
    features = model._features_fitted(on_logits=False)
    feats = model._features(x, features)
    return model._objective(feats[:, :-1] if features == "last_class_ratios" else feats, y, lam, mu)


FORMS = {
    "vector": VectorScaling(),
    "vector clr": VectorScaling(features="clr"),
    "vector survey": VectorScaling(features="last_class_ratios"),
    "matrix survey": MatrixScaling(features="last_class_ratios"),
    "dirichlet": DirichletCalibrator(),
    "dirichlet reference row": DirichletCalibrator(reference_row=True),
}


@pytest.mark.parametrize("name", list(FORMS))
def test_identity_start_reproduces_the_input(name):
    _, scores, y = _distorted(300)
    problem = _problem(FORMS[name], scores, y)
    assert problem.loss_grad(problem.start())[0] == pytest.approx(_ce(scores, y), rel=1e-12)


# (The cross-validation of the penalty is checked against a manual one in test_many_classes.py.)


def test_dirichlet_cv_full_grid_over_lambda_and_mu():
    _, scores, y = _distorted(1500, seed=8)
    model = DirichletCalibrator(lambdas=(0.01, 1.0), mus=(0.0, 10.0), n_folds=3, patience=None)
    model.fit(scores, y, kind="logprobs")
    assert model.cv_grid_.tolist() == [[0.01, 0.0], [0.01, 10.0], [1.0, 0.0], [1.0, 10.0]]
    assert model.cv_losses_.shape == (4,) and np.isfinite(model.cv_losses_).all()
    best = model.cv_grid_[np.argmin(model.cv_losses_)]
    assert (model.reg_lambda_, model.reg_mu_) == tuple(best)


def test_the_surveys_vector_scaling_with_two_classes_is_platt_scaling():
    t, y = _platt_data(5000, seed=9)
    x = _binary_from_log_odds(t)
    survey = VectorScaling(features="last_class_ratios")
    vector = survey.fit(x, y, kind="logprobs").predict_proba(x, kind="logprobs")
    platt = PlattCalibrator().fit(x, y, kind="logprobs").predict_proba(x, kind="logprobs")
    affine = AffineCalibrator().fit(x, y, kind="logprobs").predict_proba(x, kind="logprobs")
    np.testing.assert_allclose(vector, platt, atol=1e-8)
    np.testing.assert_allclose(vector, affine, atol=1e-8)


def test_vector_scaling_recovers_per_class_scales_and_biases():
    # Distort the reference log-ratios z of true posteriors by z' = d * z + e (class 3 is the
    # reference); vector scaling must find the inverse, w = 1/d and b = -e/d.
    rng = np.random.default_rng(10)
    true = log_softmax(1.5 * rng.normal(size=(20_000, 3)), axis=1)
    y = _draw_labels(rng, np.exp(true))
    d, e = np.array([2.0, 0.5, 1.0]), np.array([0.4, -0.3, 0.0])
    z = true - true[:, -1:]
    scores = log_softmax(d * z + e, axis=1)
    model = VectorScaling(features="last_class_ratios").fit(scores, y, kind="logprobs")
    problem = model._objective(scores, y)
    theta_true = np.concatenate([1 / d[:2], -e[:2] / d[:2]])
    se = np.sqrt(np.diag(np.linalg.inv(problem.hessian(theta_true))) / y.size)
    fitted = np.concatenate([model.coef_[:2], model.intercept_[:2]])
    assert np.all(np.abs(fitted - theta_true) < 5 * se)
    assert model.coef_[2] == 0 and model.intercept_[2] == 0
    out = model.predict_log_proba(scores, kind="logprobs")
    assert _ce(out, y) <= _ce(true, y) + OPT_TOL


def test_vector_scaling_with_two_classes_is_platt_scaling_on_the_log_odds():
    # Centred log-posteriors of K = 2 are (-t/2, t/2), t the log-odds: logit p_1 = (w_0 + w_1) t / 2 + b_1 - b_0,
    # Platt scaling on t (Platt (2000)), however the scores were distorted.
    t, y = _platt_data(5000, seed=9)
    x = _binary_from_log_odds(0.6 * t + 0.3 * np.abs(t))
    model = VectorScaling(features="clr").fit(x, y, kind="logprobs")
    platt = PlattCalibrator().fit(x, y, kind="logprobs").predict_proba(x, kind="logprobs")
    assert model.converged_ and model.features_ == "clr"
    np.testing.assert_allclose(model.predict_proba(x, kind="logprobs"), platt, atol=1e-8)


def test_vector_scaling_and_dirichlet_do_not_depend_on_the_order_of_the_classes():
    # ... but for the forms with a reference class: the survey's log-ratios to the last class, and ODIR on W with
    # its last row fixed at 0 (dirichletcal's default), whose penalty measures every row relative to that one.
    _, scores, y = _distorted(3000)
    order = np.array([2, 0, 1])
    position = np.argsort(order)  # class k of the scores is column position[k] of the reordered scores
    for model, invariant in (
        (VectorScaling(), True),
        (VectorScaling(features="clr"), True),
        (VectorScaling(features="last_class_ratios"), False),
        (DirichletCalibrator(reg_lambda=3.0), True),
        (DirichletCalibrator(reg_lambda=3.0, reference_row=True, normalized=False), False),
    ):
        direct = clone(model).fit(scores, y, kind="logprobs").predict_proba(scores, kind="logprobs")
        reordered = clone(model).fit(scores[:, order], position[y], kind="logprobs")
        moved = reordered.predict_proba(scores[:, order], kind="logprobs")[:, position]
        assert (np.abs(moved - direct).max() < 1e-9) == invariant


def test_matrix_scaling_ridge_pulls_toward_identity():
    _, scores, y = _distorted(3000)
    dist = []
    for reg in (0.0, 0.1, 1e4):  # the survey's matrix scaling with a ridge reg * ||W - I||^2 (format version 4's reg)
        model = MatrixScaling(features="last_class_ratios", reg_lambda=reg, reg_mu=0.0, penalty="l2", normalized=False)
        coef = model.fit(scores, y, kind="logprobs").coef_
        dist.append(np.sum((coef[:, :2] - np.eye(3)[:, :2]) ** 2))
    assert dist[0] >= dist[1] >= dist[2]
    assert dist[2] < 1e-4


# ---------------------------------------------------------------------------------------------
# Temperature scaling and isotonic (existing calibrators)


def test_temperature_scaling_keeps_accuracy_and_binary_auc_exactly():
    rng = np.random.default_rng(11)
    logits = 3.0 * rng.normal(size=(3000, 3))
    y = _draw_labels(rng, np.exp(log_softmax(logits / 3.0, axis=1)))  # over-confident scores
    out = TemperatureScaling().fit(logits, y, kind="logits").predict_proba(logits, kind="logits")
    np.testing.assert_array_equal(out.argmax(axis=1), logits.argmax(axis=1))
    t, yb = _platt_data(3000, seed=12)
    model = TemperatureScaling().fit(_binary_from_log_odds(t), yb, kind="logprobs")
    assert model.scale_ == pytest.approx(2.0, abs=0.3)  # not the identity
    out2 = model.predict_proba(_binary_from_log_odds(t), kind="logprobs")
    assert roc_auc_score(yb, out2[:, 1]) == roc_auc_score(yb, expit(t))


def test_temperature_does_not_preserve_one_vs_rest_ranking_for_three_classes():
    # softmax(a ln q)_0 = q_0^a / sum_k q_k^a. With a = 3: (0.5, 0.5, 0) -> 0.5 while
    # (0.4, 0.3, 0.3) -> 0.064 / 0.118 = 0.542: the class-0 order flips, so one-vs-rest AUC of
    # class 0 is not invariant for K >= 3 (only the argmax and, for K = 2, the AUC are).
    q = np.array([[0.5, 0.5, 1e-300], [0.4, 0.3, 0.3]])
    scaled = np.exp(log_softmax(3.0 * np.log(q), axis=1))
    assert q[0, 0] > q[1, 0]
    assert scaled[0, 0] == pytest.approx(0.5)
    assert scaled[1, 0] == pytest.approx(0.064 / 0.118)
    assert scaled[0, 0] < scaled[1, 0]


def test_isotonic_is_monotone_and_brier_optimal_on_its_training_data():
    rng = np.random.default_rng(13)
    s = rng.random(4000)
    y = (rng.random(s.size) < s**2).astype(int)  # over-estimated scores
    probs = np.column_stack([1 - s, s])
    order = np.argsort(s)

    def brier(p1):
        return float(np.mean((p1 - y) ** 2))

    iso = IsotonicCalibrator().fit(probs, y, kind="probs").predict_proba(probs, kind="probs")[:, 1]
    assert np.all(np.diff(iso[order]) >= 0)
    others = {"identity": s, "square": s**2, "sqrt": np.sqrt(s)}
    for name, model in {
        "platt": PlattCalibrator(),
        "beta": BetaCalibrator(),
        "temperature": TemperatureScaling(),
        "histogram": HistogramBinning(n_bins=10),
    }.items():
        others[name] = model.fit(probs, y, kind="probs").predict_proba(probs, kind="probs")[:, 1]
    for name, p1 in others.items():
        assert np.all(np.diff(p1[order]) >= -1e-12), name  # every competitor is a monotone map here
        assert brier(iso) <= brier(p1) + 1e-15, name


# ---------------------------------------------------------------------------------------------
# One-vs-rest


def test_one_vs_rest_isotonic_three_classes():
    _, scores, y = _distorted(3000, seed=14)
    model = OneVsRest(IsotonicCalibrator()).fit(scores, y, kind="logprobs")
    out = model.predict_proba(scores, kind="logprobs")
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)
    raw = model.predict_unnormalized_proba(scores, kind="logprobs")
    np.testing.assert_allclose(out, raw / raw.sum(axis=1, keepdims=True), atol=1e-12)
    s = np.exp(scores)
    for j in range(3):
        order = np.argsort(s[:, j])
        assert np.all(np.diff(raw[order, j]) >= -1e-12)
        # Class j's model is plain isotonic on (1 - s_j, s_j) against 1(y == j).
        binary = np.column_stack([np.log1p(-s[:, j]), scores[:, j]])
        ref = IsotonicCalibrator().fit(binary, (y == j).astype(int), kind="logprobs")
        np.testing.assert_allclose(raw[:, j], ref.predict_proba(binary, kind="logprobs")[:, 1], atol=1e-9)


def test_one_vs_rest_two_classes_is_the_plain_calibrator():
    t, y = _platt_data(2000, seed=15)
    x = _binary_from_log_odds(t)
    ovr = OneVsRest(IsotonicCalibrator()).fit(x, y, kind="logprobs")
    plain = IsotonicCalibrator().fit(x, y, kind="logprobs")
    assert ovr.estimators_[0] is None and ovr.estimators_[1] is not None
    np.testing.assert_allclose(
        ovr.predict_log_proba(x, kind="logprobs"), plain.predict_log_proba(x, kind="logprobs"), atol=1e-12
    )


def test_one_vs_rest_absent_class_is_zero_and_all_zero_rows_are_uniform():
    train = np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.7, 0.2, 0.1], [0.2, 0.7, 0.1]])
    y = np.array([0, 1, 0, 1])  # class 2 never occurs
    model = OneVsRest(IsotonicCalibrator(clip=0.0)).fit(train, y, kind="probs")
    assert model.estimators_[2] is None and model.constants_[2] == 0.0
    test = np.array([[0.8, 0.1, 0.1], [0.05, 0.05, 0.9]])
    out = model.predict_proba(test, kind="probs")
    np.testing.assert_allclose(out[0], [1.0, 0.0, 0.0])  # isotonic gives 1 for class 0, 0 for the rest
    np.testing.assert_allclose(out[1], [1 / 3, 1 / 3, 1 / 3])  # every class model outputs 0


# ---------------------------------------------------------------------------------------------
# Analytic gradients against central finite differences


def _objectives():
    t, y = _platt_data(400, seed=16)
    x2 = _binary_from_log_odds(t)
    _, x3, y3 = _distorted(400, seed=17)
    return {
        "platt": PlattCalibrator()._objective(x2, y.astype(float)),
        "platt-smooth": PlattCalibrator()._objective(x2, platt_targets(y)),
        "beta-abm": BetaCalibrator("abm")._objective(x2, y.astype(float)),
        "beta-ab": BetaCalibrator("ab")._objective(x2, y.astype(float)),
        "beta-am": BetaCalibrator("am")._objective(x2, y.astype(float)),
        "vector": _problem(VectorScaling(), x3, y3),
        "vector clr": _problem(VectorScaling(features="clr"), x3, y3),
        "vector survey": _problem(VectorScaling(features="last_class_ratios"), x3, y3),
        "matrix": _problem(MatrixScaling(features="last_class_ratios", penalty="l2", normalized=False), x3, y3, 0.3),
        "matrix l2": _problem(MatrixScaling(penalty="l2"), x3, y3, 0.3, 0.1),
        "dirichlet": _problem(DirichletCalibrator(), x3, y3, 0.5, 0.2),
        "dirichlet reference row": _problem(DirichletCalibrator(reference_row=True), x3, y3, 0.5, 0.2),
    }


@pytest.mark.parametrize("name", list(_objectives()))
def test_analytic_gradient_matches_finite_differences(name):
    problem = _objectives()[name]
    rng = np.random.default_rng(18)
    start = problem.start() if hasattr(problem, "start") else np.zeros(problem.x.shape[1])
    theta = start + 0.3 * rng.normal(size=start.size)
    grad = problem.loss_grad(theta)[1]
    numeric = _central_grad(lambda th: problem.loss_grad(th)[0], theta)
    assert np.linalg.norm(grad - numeric) < 1e-5 * np.linalg.norm(grad)


@pytest.mark.parametrize("name", list(_objectives()))
def test_analytic_hessian_matches_finite_differences(name):
    # The Newton solvers use the exact Hessian; check it against differences of the gradient.
    problem = _objectives()[name]
    rng = np.random.default_rng(19)
    start = problem.start() if hasattr(problem, "start") else np.zeros(problem.x.shape[1])
    theta = start + 0.3 * rng.normal(size=start.size)
    hess = problem.hessian(theta) if hasattr(problem, "hessian") else problem.derivatives(theta)[2]
    numeric = np.array([_central_grad(lambda th, i=i: problem.loss_grad(th)[1][i], theta) for i in range(theta.size)])
    assert np.linalg.norm(hess - numeric) < 1e-5 * np.linalg.norm(hess)


@pytest.mark.parametrize("bias, priors", [(True, None), (False, None), (True, [0.2, 0.3, 0.5])])
def test_affine_derivatives_match_the_direct_loss_and_finite_differences(bias, priors):
    _, logp, y = _distorted(400, seed=22)
    k = logp.shape[1]
    counts = np.bincount(y, minlength=k)
    weights = np.full(y.size, 1.0 / y.size) if priors is None else (np.asarray(priors) / counts)[y]
    problem = _AffineObjective(logp.copy(), y, weights, bias)  # taken over
    rng = np.random.default_rng(23)
    for spread in (1.0, 600.0):  # biases spanning more than 500 take the exact per-sample shift
        theta = problem.start() + 0.3 * rng.normal(size=problem.n_params)
        theta[1:] *= spread
        scale = theta[0] / problem.spread  # the objective's alpha multiplies the log-posteriors over their spread
        direct = -np.dot(weights, log_softmax(scale * logp + problem._biases(theta), axis=1)[np.arange(y.size), y])
        loss, grad, hess = problem.derivatives(theta)
        assert loss == pytest.approx(direct, rel=1e-12)
        numeric = _central_grad(problem.loss, theta)
        assert np.linalg.norm(grad - numeric) < 1e-5 * np.linalg.norm(grad)
        if spread == 1.0:  # at a 600 spread one class takes all the mass and the Hessian is ~0
            numeric_hess = np.array(
                [_central_grad(lambda th, i=i: problem.derivatives(th)[1][i], theta) for i in range(theta.size)]
            )
            assert np.linalg.norm(hess - numeric_hess) < 1e-5 * np.linalg.norm(hess)


@pytest.mark.parametrize(
    "make",
    [
        lambda: DirichletCalibrator(reg_lambda=0.1),  # penalized: RowCurvature's coordinates
        lambda: DirichletCalibrator(reg_lambda=0.1, reference_row=True, normalized=False),
        lambda: MatrixScaling(features="last_class_ratios", reg_lambda=0),  # unpenalized: WhitenedWeights'
        lambda: VectorScaling(features="clr"),
        VectorScaling,
    ],
    ids=["odir", "odir reference row", "matrix survey", "vector clr", "dirichlet diagonal"],
)
def test_lbfgs_path_for_many_parameters_agrees_with_newton(monkeypatch, make):
    import calib.calibrators.softmax_regression as ms

    _, scores, y = _distorted(2000, seed=20)
    newton = make().fit(scores, y, kind="logprobs")
    # force scipy's L-BFGS-B (in preconditioned coordinates for a full W)
    monkeypatch.setattr(ms, "NEWTON_MAX_PARAMS", 0)
    lbfgs = make().fit(scores, y, kind="logprobs")
    assert lbfgs.converged_
    np.testing.assert_allclose(
        lbfgs.predict_proba(scores, kind="logprobs"), newton.predict_proba(scores, kind="logprobs"), atol=1e-6
    )


@pytest.mark.parametrize("name", ["matrix", "dirichlet"])
def test_whitened_coordinates_map_back_exactly_and_carry_the_gradient(name):
    problem = _objectives()[name]
    coordinates = WhitenedWeights(problem)
    theta = problem.start() + 0.3 * np.random.default_rng(21).normal(size=problem.start().size)
    phi = coordinates.to_search(theta)
    np.testing.assert_allclose(coordinates.to_theta(phi), theta, rtol=0, atol=1e-12)
    loss, grad = coordinates.loss_grad(phi)
    assert loss == pytest.approx(problem.loss_grad(theta)[0], rel=1e-14)
    numeric = _central_grad(lambda p: coordinates.loss_grad(p)[0], phi)
    assert np.linalg.norm(grad - numeric) < 1e-5 * np.linalg.norm(grad)


# ---------------------------------------------------------------------------------------------
# Arguments


def test_binary_only_calibrators_reject_three_classes():
    _, scores, y = _distorted(50)
    for model in (PlattCalibrator(), BetaCalibrator()):
        with pytest.raises(CalibInputError, match="binary only"):
            model.fit(scores, y, kind="logprobs")


def test_clone_keeps_parameters():
    for model in (
        PlattCalibrator(smooth_targets=True),
        BetaCalibrator("am"),
        VectorScaling(),
        VectorScaling(features="clr"),
        MatrixScaling(reg_lambda=0.5, penalty="l2"),
        MatrixScaling(features="last_class_ratios", reg_lambda=0),
        DirichletCalibrator(reg_lambda=0.1, reg_mu=0.2),
        DirichletCalibrator(lambdas=(0.1, 1.0), mus=(0.5,), n_folds=3, seed=4, patience=None),
        DirichletCalibrator(reference_row=True, normalized=False),
        OneVsRest(BetaCalibrator("ab")),
    ):
        copy = clone(model)
        assert copy is not model
        assert copy.get_params().keys() == model.get_params().keys()
        assert repr(copy) == repr(model)


def test_exact_zero_posteriors_keep_fits_finite():
    rng = np.random.default_rng(19)
    p = np.exp(log_softmax(4.0 * rng.normal(size=(600, 3)), axis=1))
    p[:50, 0] = 0.0
    p[:50] /= p[:50].sum(axis=1, keepdims=True)
    y = _draw_labels(rng, p)
    for model in (
        VectorScaling(),
        VectorScaling(features="clr"),
        MatrixScaling(),
        MatrixScaling(features="last_class_ratios", reg_lambda=0),
        DirichletCalibrator(reg_lambda=0.01),
    ):
        out = model.fit(p, y, kind="probs").predict_log_proba(p, kind="probs")
        assert np.all(np.isfinite(out)) and np.all(np.isfinite(model.coef_))
    pb = np.column_stack([p[:, 0], 1 - p[:, 0]])
    yb = (y == 1).astype(int)
    for model in (PlattCalibrator(), BetaCalibrator()):
        out = model.fit(pb, yb, kind="probs").predict_log_proba(pb, kind="probs")
        assert np.all(np.isfinite(out))


def test_platt_on_the_raw_score_is_a_sigmoid_in_s():
    # eq. 8 read literally: p1 = sigmoid(w s + b); labels drawn from sigmoid(4 s - 2) are recovered
    rng = np.random.default_rng(3)
    s = rng.random(20000)
    y = (rng.random(20000) < 1 / (1 + np.exp(-(4 * s - 2)))).astype(int)
    fitted = PlattCalibrator(feature="score").fit(np.column_stack([1 - s, s]), y, kind="probs")
    assert fitted.coef_ == pytest.approx(4, abs=0.3) and fitted.intercept_ == pytest.approx(-2, abs=0.2)


def test_logistic_objective_with_label_targets_is_the_weighted_sum_to_the_last_bit():
    """Identity behind the 0/1 shortcut: y softplus(-u) + (1 - y) softplus(u) is softplus(-u) or softplus(u)
    exactly, and (1 - y) sigmoid(u) - y sigmoid(-u) is sigmoid(u) or -sigmoid(-u); a cached point is reused only
    at the same point. Both agree with scipy's expit and numpy's logaddexp to rounding."""
    from calib.calibrators.platt import LogisticObjective

    rng = np.random.default_rng(3)
    x = np.column_stack([rng.normal(size=500) * 4, np.ones(500)])
    y = (rng.random(500) < 0.4).astype(np.float64)
    problem, weighted = LogisticObjective(x, y), LogisticObjective(x, y)
    weighted._labels = None  # the general path of soft targets, on the same 0/1 targets
    for theta in (np.array([0.7, -0.2]), np.array([-3.0, 1.5]), np.array([0.7, -0.2])):
        ours, grad, hess = problem.derivatives(theta)
        assert problem.loss(theta) == ours
        weighted_loss, weighted_grad, weighted_hess = weighted.derivatives(theta)
        assert ours == weighted_loss
        np.testing.assert_array_equal(grad, weighted_grad)
        np.testing.assert_array_equal(hess, weighted_hess)
        u = x @ theta
        loss = np.mean(y * np.logaddexp(0.0, -u) + (1.0 - y) * np.logaddexp(0.0, u))
        resid = (1.0 - y) * expit(u) - y * expit(-u)
        # Rounding only: the loss, a mean of positive terms, within a few ulps (eps = 2.2e-16); the gradient and
        # Hessian sum 500 products of signed terms, so 1e-14 leaves room for their cancellation.
        np.testing.assert_allclose(ours, loss, rtol=1e-15)
        np.testing.assert_allclose(grad, x.T @ resid / 500, rtol=1e-14)
        np.testing.assert_allclose(hess, (x * (expit(u) * expit(-u))[:, None]).T @ x / 500, rtol=1e-14)
