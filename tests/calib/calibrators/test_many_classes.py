"""Calibrators for many classes (issue 52): the literature's maps on logits as given, ODIR with the penalty of the
paper and of the authors' package, and the choice of the penalty by cross-validation.

- Guo et al. (2017)'s vector and matrix scaling on the logits z as given, softmax(w * z + b) and softmax(W z + b),
  against a plain scipy fit written here; on the log-posteriors of the same scores they are other maps.
- Dirichlet calibration with ODIR (Kull et al. (2019)) and the logit maps against the fits of the authors' package
  dirichletcal 0.5.3, stored as fixtures by benchmarks/write_dirichletcal_fixtures.py (the package needs jax and
  cannot be installed from its registry release; the script's docstring says how the fixtures were made).
- The objective with a reference row (``free_rows``) and the preconditioner of penalized L-BFGS fits
  (RowCurvature) against finite differences.
- The cross-validation of lambda against one done by hand, and its early stop.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from peer_fixtures import ROOT, _script, load_arrays, load_json
from scipy.optimize import minimize
from scipy.special import log_softmax, softmax

from calib.calibrators import (
    DirichletCalibrator,
    MatrixScaling,
    TemperatureScaling,
    VectorScaling,
    fold_ids,
)
from calib.calibrators.softmax_regression import RowCurvature, SoftmaxObjective
from calib.validation import CalibInputError


def _nll(logp: np.ndarray, labels: np.ndarray) -> float:
    return -float(np.mean(logp[np.arange(labels.size), labels]))


def _central_grad(f, theta: np.ndarray, h: float = 1e-6) -> np.ndarray:
    return np.array([(f(theta + h * e) - f(theta - h * e)) / (2 * h) for e in np.eye(theta.size)])


# ---------------------------------------------------------------------------------------------------------------
# 1. Guo et al. (2017)'s maps on the logits as given, against an independent scipy fit


def _offset_logits(k: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Over-confident logits (2.5 x those the labels are drawn from) plus a per-row offset c_i ~ N(0, 3^2): the
    offset leaves the posteriors as they are, so the raw logits differ from the log-posteriors."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) + np.eye(k)[rng.integers(0, k, size=n)]
    labels = (logits + rng.gumbel(size=(n, k))).argmax(axis=1)
    labels[:k] = np.arange(k)  # every class present
    return 2.5 * logits + rng.normal(scale=3.0, size=(n, 1)), labels


def _scipy_fit(z: np.ndarray, labels: np.ndarray, diagonal: bool) -> tuple[np.ndarray, np.ndarray, float]:
    """(W, b, mean log-loss) of softmax(W z + b) (W = diag(w) when ``diagonal``) minimizing the mean log-loss on
    ``z`` by scipy's L-BFGS-B with the analytic gradient, from W = I, b = 0. All K biases are free (softmax
    ignores their common shift: the predictions are unique all the same)."""
    n, k = z.shape
    onehot = np.eye(k)[labels]

    def unpack(p):
        return (np.diag(p[:k]), p[k:]) if diagonal else (p[: k * k].reshape(k, k), p[k * k :])

    def loss_grad(p):
        w, b = unpack(p)
        logp = log_softmax(z @ w.T + b, axis=1)
        resid = (np.exp(logp) - onehot) / n  # d loss / d logits
        grad_w = resid.T @ z
        return -float(np.sum(logp * onehot)) / n, np.concatenate(
            [np.diag(grad_w) if diagonal else grad_w.ravel(), resid.sum(axis=0)]
        )

    start = np.concatenate([np.ones(k) if diagonal else np.eye(k).ravel(), np.zeros(k)])
    options = {"maxiter": 100_000, "maxfun": 100_000, "ftol": 1e-16, "gtol": 1e-12, "maxcor": 50}
    found = minimize(loss_grad, start, jac=True, method="L-BFGS-B", options=options)
    assert np.max(np.abs(found.jac)) < 1e-8, found.message
    w, b = unpack(found.x)
    return w, b, float(found.fun)


@pytest.mark.parametrize("k", [3, 5])
@pytest.mark.parametrize("name", ["vector", "matrix"])
def test_guo_maps_on_logits_equal_an_independent_scipy_fit(name, k):
    z, labels = _offset_logits(k, 400, seed=k)
    held_out, _ = _offset_logits(k, 200, seed=100 + k)
    model = VectorScaling() if name == "vector" else MatrixScaling(reg_lambda=0)
    model.fit(z, labels, kind="logits")
    w, b, scipy_loss = _scipy_fit(z, labels, diagonal=name == "vector")
    assert model.features_ == "logits" and model.converged_
    # ours is at the optimum too: its training loss is no higher than scipy's
    assert _nll(model.predict_log_proba(z, kind="logits"), labels) <= scipy_loss + 1e-12
    difference = np.abs(model.predict_proba(held_out, kind="logits") - softmax(held_out @ w.T + b, axis=1))
    assert difference.max() < 1e-6  # measured: 1.8e-8 (vector, K = 3), at most 3e-9 for the others


@pytest.mark.parametrize("k", [3, 5])
def test_on_logits_the_maps_differ_from_those_on_the_log_posteriors_of_the_same_scores(k):
    """The point of the definition: logits z and their log-softmax give the same posteriors, but w * z + b is not a
    function of the posteriors, so the fits differ; given log-probabilities, vector scaling is the diagonal
    Dirichlet map (features "log_posteriors") and matrix scaling is Dirichlet calibration."""
    z, labels = _offset_logits(k, 400, seed=k)
    held_out, _ = _offset_logits(k, 200, seed=100 + k)
    logp, held_logp = log_softmax(z, axis=1), log_softmax(held_out, axis=1)
    for on_logits, on_logp, same_map in (
        (VectorScaling(), VectorScaling(), VectorScaling(features="log_posteriors")),
        (MatrixScaling(reg_lambda=0), MatrixScaling(reg_lambda=0), DirichletCalibrator(reg_lambda=0)),
    ):
        from_logits = on_logits.fit(z, labels, kind="logits").predict_proba(held_out, kind="logits")
        from_logp = on_logp.fit(logp, labels, kind="logprobs").predict_proba(held_logp, kind="logprobs")
        assert on_logp.features_ == "log_posteriors"
        assert np.abs(from_logits - from_logp).max() > 1e-3  # measured: 0.12 to 0.25
        same = same_map.fit(logp, labels, kind="logprobs").predict_proba(held_logp, kind="logprobs")
        np.testing.assert_allclose(from_logp, same, rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------------------------------------------
# 2. ODIR and the logit maps against the authors' package (dirichletcal 0.5.3, stored fixtures)

PEER = load_json("dirichletcal")
PEER_ARRAYS = load_arrays("dirichletcal")
RECIPES = _script(ROOT / "benchmarks" / "write_dirichletcal_fixtures.py")


def _peer_inputs(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(fit logits, fit labels, held-out logits, held-out labels) of the fixture's input ``name``, drawn again by
    the script's recipe and checked against the fingerprint it recorded. The CIFAR-10 input reads the real
    posteriors of ../shared/real_posteriors beside the repository, as the pipeline's tests do."""
    spec = PEER["inputs"][name]
    if spec["function"] == "synthetic_inputs":
        arrays = RECIPES.synthetic_inputs(**spec["arguments"])
    else:
        arguments = spec["arguments"]
        arrays = RECIPES.cifar10_inputs(ROOT / arguments["directory"], arguments["fit_rows"], arguments["test_rows"])
    for (logits, labels), part in ((arrays[:2], "fit"), (arrays[2:], "test")):
        drawn, recorded = RECIPES.fingerprint(logits, labels), spec[part]
        message = f"{name} {part}: not the inputs dirichletcal saw; see benchmarks/write_dirichletcal_fixtures.py"
        assert drawn["shape"] == recorded["shape"] and drawn["label_counts"] == recorded["label_counts"], message
        for sums in ("logit_column_sums", "probability_column_sums"):
            np.testing.assert_allclose(drawn[sums], recorded[sums], rtol=1e-12, err_msg=message)
    return arrays


def _converged(fit: dict) -> bool:
    """Their Newton fit stopped at the optimum: on its gradient rule (sum |g| < 1e-8), or on its objective rule
    with a gradient as small (the two 'ftol' stops have max |g| 4e-9 and 2e-9)."""
    return fit["termination"] in ("gtol", "ftol") and fit["gradient_max_abs"] < 1e-7


# Their fit -> ours. Their full_l2 fits (FullDirichletCalibrator(reg_lambda=l) with reg_mu None: a plain L2 penalty
# of every weight toward 0, the diagonal of W and the biases included) are left out: calib has no such penalty (its
# "l2" pulls W toward the identity, the map that leaves the scores as they are).
def _ours(fit: dict):
    """Our calibrator for their fit, and the kind of scores both are given."""
    key, arguments = fit["fit"], fit["arguments"]
    if key.startswith("full_odir"):
        lam, mu = arguments["reg_lambda"], arguments["reg_mu"]
        if arguments.get("ref_row", True):  # their default: ref_row=True, reg_norm=False
            return DirichletCalibrator(reg_lambda=lam, reg_mu=mu, reference_row=True, normalized=False), "probs"
        assert arguments == {"reg_lambda": lam, "reg_mu": mu, "ref_row": False, "reg_norm": True}
        return DirichletCalibrator(reg_lambda=lam, reg_mu=mu), "probs"  # the paper's form, our default
    return {
        "vector_scaling": VectorScaling(),
        "matrix_scaling": MatrixScaling(reg_lambda=0),
        "temperature_scaling": TemperatureScaling(),
    }[key], "logits"


COMPARED = [fit for fit in PEER["fits"] if not fit["fit"].startswith("full_l2")]
# (the unpenalized matrix scaling of the CIFAR-10 logits is near-flat: its own test below)
AGREEING = [fit for fit in COMPARED if (fit["input"], fit["fit"]) != ("cifar10_resnet20", "matrix_scaling")]


def test_the_peer_fits_compared_all_converged():
    assert len(COMPARED) == 21 and all(_converged(fit) for fit in COMPARED)


def _fitted_on(fit: dict, model, kind: str):
    fit_logits, fit_labels, test_logits, _ = _peer_inputs(fit["input"])
    as_given = RECIPES.probabilities if kind == "probs" else np.asarray
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the many-parameters note of K = 10 on 600 rows)
        model.fit(as_given(fit_logits), fit_labels, kind=kind)
    return model, model.predict_proba(as_given(test_logits), kind=kind)


@pytest.mark.parametrize("fit", AGREEING, ids=[f"{fit['input']}-{fit['fit']}" for fit in AGREEING])
def test_odir_and_the_logit_maps_equal_dirichletcal_on_held_out_rows(fit):
    model, ours = _fitted_on(fit, *_ours(fit))
    theirs = PEER_ARRAYS[f"{fit['input']}__{fit['fit']}__proba"]
    assert model.converged_
    # measured: at most 1.8e-8 (synthetic K = 10, ODIR at 0.1), 5e-9 for the logit maps
    assert np.abs(ours - theirs).max() < 1e-6


def test_the_papers_odir_and_dirichletcals_default_differ():
    """Why reference_row and normalized exist: with dirichletcal's defaults (last row of W and b fixed at 0, each
    row penalized relative to it, lambda and mu not divided by K (K - 1) and K) a fit differs from the paper's
    ODIR at the same (lambda, mu); unpenalized, the two forms are the same map."""
    fits = {fit["fit"]: fit for fit in PEER["fits"] if fit["input"] == "synthetic_k10"}
    default, paper = fits["full_odir_1e-2_1e-2"], fits["full_odir_1e-2_1e-2_noref_norm"]
    theirs_default = PEER_ARRAYS[f"synthetic_k10__{default['fit']}__proba"]
    theirs_paper = PEER_ARRAYS[f"synthetic_k10__{paper['fit']}__proba"]
    _, ours_paper = _fitted_on(paper, DirichletCalibrator(reg_lambda=1e-2, reg_mu=1e-2), "probs")
    np.testing.assert_allclose(ours_paper, theirs_paper, rtol=0, atol=1e-6)
    assert np.abs(ours_paper - theirs_default).max() > 1e-3  # measured: 0.26
    assert np.abs(theirs_paper - theirs_default).max() > 1e-3
    _, unpenalized = _fitted_on(paper, DirichletCalibrator(reg_lambda=0), "probs")
    _, with_reference = _fitted_on(paper, DirichletCalibrator(reg_lambda=0, reference_row=True), "probs")
    np.testing.assert_allclose(unpenalized, with_reference, rtol=0, atol=1e-9)


def test_unpenalized_matrix_scaling_of_cifar10_logits_stops_on_a_near_flat_valley_of_the_optimum():
    """The CIFAR-10 logits were centred by their provider: their row sums are -2.85e-4 +- 5.7e-5 (float32
    rounding), so the unpenalized loss is nearly flat along W + c 1^T. dirichletcal's Newton step (a pseudo-inverse
    of the Hessian without a cut-off) follows those directions to weights of 2.7e4, fitting the rounding; ours drops
    Hessian eigendirections below 1e-12 of the largest, and stops with max |gradient| 3e-9 at a training loss
    1.4e-3 above theirs, its held-out predictions up to 0.18 away from theirs (and a lower held-out log-loss).
    Newton with the whole spectrum, from our fit, lands on theirs: the two minimize the same function."""
    (fit,) = [f for f in PEER["fits"] if (f["input"], f["fit"]) == ("cifar10_resnet20", "matrix_scaling")]
    model, ours = _fitted_on(fit, MatrixScaling(reg_lambda=0), "logits")
    fit_logits, fit_labels, test_logits, test_labels = _peer_inputs(fit["input"])
    k = fit_logits.shape[1]
    weights = PEER_ARRAYS[f"{fit['input']}__matrix_scaling__weights"]
    problem = model._objective(fit_logits, fit_labels, 0.0, 0.0)

    def theta(w, b):
        return np.concatenate([w.ravel(), b])

    theirs_loss = problem.loss_grad(theta(weights[:, :k], weights[:, k]))[0]
    assert theirs_loss == pytest.approx(fit["log_loss_fit"], abs=1e-12)  # the same objective as theirs
    ours_theta = theta(model.coef_, model.intercept_)
    ours_loss = problem.loss_grad(ours_theta)[0]
    assert model.converged_ and theirs_loss - 1e-12 <= ours_loss < theirs_loss + 2e-3
    refined = ours_theta
    for _ in range(10):  # (measured: 4 steps)
        loss, grad = problem.loss_grad(refined)
        values, vectors = np.linalg.eigh(problem.hessian(refined))
        kept = values > 1e-15 * values[-1]  # (the exactly flat directions, W + 1 v^T and b + c 1, are at 1e-16)
        step = -(vectors[:, kept] / values[kept]) @ (vectors[:, kept].T @ grad)
        if -grad @ step < 1e-20:
            break
        size = 1.0
        while problem.loss_grad(refined + size * step)[0] > loss and size > 1e-10:
            size /= 2
        refined = refined + size * step
    refined_proba = softmax(test_logits @ problem.weights(refined).T + problem.biases(refined), axis=1)
    theirs = PEER_ARRAYS[f"{fit['input']}__matrix_scaling__proba"]
    assert np.abs(refined_proba - theirs).max() < 1e-6  # measured: 3e-9
    assert _nll(np.log(ours), test_labels) < _nll(np.log(theirs), test_labels)  # measured: 0.219 and 0.225


# ---------------------------------------------------------------------------------------------------------------
# 3. The objective with fixed rows of W, and RowCurvature's coordinates


# (K, d, free rows of W, free biases): the reference row of ODIR on K features (dirichletcal's form), the same on
# the K - 1 log-ratios to the last class, and every row fitted.
LAYOUTS = {
    "reference row": (4, 4, np.arange(4) < 3, np.arange(4) < 3),
    "reference row, log-ratios": (4, 3, np.arange(4) < 3, np.arange(4) < 3),
    "every row": (4, 4, None, None),
}


def _penalized_problem(layout: str, n: int = 60, seed: int = 0) -> tuple[SoftmaxObjective, dict]:
    k, d, free_rows, free_bias = LAYOUTS[layout]
    rng = np.random.default_rng(seed)
    parts = {
        "x": 2.0 * rng.normal(size=(n, d)),
        "labels": rng.integers(0, k, size=n),
        "weight_penalty": rng.uniform(0.1, 1.0, size=(k, d)),
        "weight_target": rng.normal(size=(k, d)),
        "bias_penalty": rng.uniform(0.1, 1.0, size=k),
    }
    problem = SoftmaxObjective(
        parts["x"],
        parts["labels"],
        k,
        free_rows=free_rows,
        free_bias=free_bias,
        weight_penalty=parts["weight_penalty"],
        weight_target=parts["weight_target"],
        bias_penalty=parts["bias_penalty"],
    )
    rows = np.ones(k, dtype=bool) if free_rows is None else free_rows
    return problem, parts | {"rows": rows, "biases": np.ones(k, dtype=bool) if free_bias is None else free_bias}


def _random_theta(problem: SoftmaxObjective, seed: int) -> np.ndarray:
    return 0.5 * np.random.default_rng(seed).normal(size=problem.start().size)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_the_objective_with_fixed_rows_is_the_penalized_log_loss_of_its_map(layout):
    problem, parts = _penalized_problem(layout)
    theta = _random_theta(problem, 1)
    k, d = problem.k, problem.d
    rows, biases = parts["rows"], parts["biases"]
    w = np.zeros((k, d))  # the rows not fitted stay 0
    w[rows] = theta[: rows.sum() * d].reshape(-1, d)
    b = np.zeros(k)
    b[biases] = theta[rows.sum() * d :]
    by_hand = _nll(log_softmax(parts["x"] @ w.T + b, axis=1), parts["labels"])
    by_hand += np.sum((parts["weight_penalty"] * (w - parts["weight_target"]) ** 2)[rows])  # fitted rows only
    by_hand += np.sum(parts["bias_penalty"] * b**2)
    assert problem.loss_grad(theta)[0] == pytest.approx(by_hand, rel=1e-13)
    np.testing.assert_array_equal(problem.weights(theta), w)
    np.testing.assert_array_equal(problem.biases(theta), b)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_the_gradient_and_hessian_with_fixed_rows_equal_central_differences(layout):
    problem, _ = _penalized_problem(layout)
    theta = _random_theta(problem, 2)
    grad = problem.loss_grad(theta)[1]
    numeric = _central_grad(lambda th: problem.loss_grad(th)[0], theta)
    assert np.linalg.norm(grad - numeric) < 1e-7 * np.linalg.norm(grad)
    hessian = problem.hessian(theta)
    numeric_hessian = np.array(
        [_central_grad(lambda th, i=i: problem.loss_grad(th)[1][i], theta) for i in range(theta.size)]
    )
    assert np.linalg.norm(hessian - numeric_hessian) < 1e-7 * np.linalg.norm(hessian)
    np.testing.assert_array_equal(hessian, hessian.T)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_row_curvature_maps_back_exactly_and_carries_the_gradient_by_the_chain_rule(layout):
    problem, _ = _penalized_problem(layout, n=300)
    coordinates = RowCurvature(problem, _random_theta(problem, 3))
    theta = _random_theta(problem, 4)
    phi = coordinates.to_search(theta)
    assert phi.size == theta.size
    np.testing.assert_allclose(coordinates.to_theta(phi), theta, rtol=0, atol=1e-12)
    loss, grad = coordinates.loss_grad(phi)
    assert loss == problem.loss_grad(coordinates.to_theta(phi))[0]
    numeric = _central_grad(lambda p: coordinates.loss_grad(p)[0], phi)
    assert np.linalg.norm(grad - numeric) < 1e-7 * np.linalg.norm(grad)


# ---------------------------------------------------------------------------------------------------------------
# 4. The choice of lambda by cross-validation


def _overconfident(k: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Logits twice those the labels are drawn from."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k))
    labels = (logits + rng.gumbel(size=(n, k))).argmax(axis=1)
    return 2.0 * logits, labels


def _mixed(k: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Logits z of the labels' softmax, seen through A z with A = 2 I + N(0, 0.5^2) entries: a map with off-diagonal
    terms to undo, so the best penalty is neither the strongest nor the weakest."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k))
    labels = (logits + rng.gumbel(size=(n, k))).argmax(axis=1)
    return logits @ (2.0 * np.eye(k) + 0.5 * rng.normal(size=(k, k))).T, labels


def _manual_cv(make, scores, labels, kind: str, grid, n_folds: int, seed: int) -> np.ndarray:
    """The mean held-out log-loss of each (lambda, mu) of ``grid``: a fresh fit per fold, from the identity."""
    folds = fold_ids(labels, n_folds=n_folds, seed=seed)
    losses = []
    for lam, mu in grid:
        held = np.empty(scores.shape)
        for fold in np.unique(folds):
            test = folds == fold
            model = make(reg_lambda=lam, reg_mu=mu).fit(scores[~test], labels[~test], kind=kind)
            held[test] = model.predict_log_proba(scores[test], kind=kind)
        losses.append(_nll(held, labels))
    return np.array(losses)


@pytest.mark.parametrize(
    ("make", "kind"),
    [(DirichletCalibrator, "logprobs"), (MatrixScaling, "logits")],
    ids=["dirichlet", "matrix on logits"],
)
def test_cross_validated_losses_equal_a_manual_cross_validation(make, kind):
    scores, labels = _mixed(4, 600, seed=0)
    if kind == "logprobs":
        scores = log_softmax(scores, axis=1)
    lambdas = (1e2, 1.0, 1e-2, 1e-4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (unpenalized-like fits of 20 parameters on 400 rows)
        model = make(lambdas=lambdas, patience=None, n_folds=3, seed=1).fit(scores, labels, kind=kind)
        grid = [(lam, lam) for lam in lambdas]
        manual = _manual_cv(make, scores, labels, kind, grid, n_folds=3, seed=1)
    assert model.cv_grid_.tolist() == [list(point) for point in grid]
    # warm starts along the grid change only the path to each optimum
    np.testing.assert_allclose(model.cv_losses_, manual, rtol=0, atol=1e-6)  # measured: below 1e-9
    best = int(np.argmin(manual))
    assert 0 < best < len(grid) - 1  # the data need some of the off-diagonal terms, not all
    assert (model.reg_lambda_, model.reg_mu_) == grid[best]
    refit = make(reg_lambda=grid[best][0]).fit(scores, labels, kind=kind)
    np.testing.assert_array_equal(model.coef_, refit.coef_)
    np.testing.assert_array_equal(model.intercept_, refit.intercept_)


def test_a_given_mu_is_kept_while_lambda_is_chosen():
    scores, labels = _overconfident(3, 300, seed=8)
    model = DirichletCalibrator(reg_mu=0.5, lambdas=(10.0, 0.1), patience=None, n_folds=3).fit(
        scores, labels, kind="logits"
    )
    assert model.cv_grid_.tolist() == [[10.0, 0.5], [0.1, 0.5]] and model.reg_mu_ == 0.5
    manual = _manual_cv(DirichletCalibrator, scores, labels, "logits", [(10.0, 0.5), (0.1, 0.5)], 3, 0)
    np.testing.assert_allclose(model.cv_losses_, manual, rtol=0, atol=1e-6)
    with pytest.raises(CalibInputError, match="reg_mu .* or mus"):
        DirichletCalibrator(reg_mu=0.5, mus=(0.1, 1.0)).fit(scores, labels, kind="logits")


def test_a_given_penalty_records_one_grid_point_and_no_loss():
    scores, labels = _overconfident(3, 300, seed=8)
    model = DirichletCalibrator(reg_lambda=0.3).fit(scores, labels, kind="logits")
    assert model.cv_grid_.tolist() == [[0.3, 0.3]] and np.isnan(model.cv_losses_).all() and model.cv_losses_.size == 1


def _first_stop(losses: np.ndarray, patience: int) -> int:
    """The grid point after which a walk with ``patience`` stops: the first where the last ``patience`` points
    are each above the lowest loss before them."""
    rises = 0
    for g in range(1, losses.size):
        rises = rises + 1 if losses[g] > losses[:g].min() else 0
        if rises >= patience:
            return g
    return losses.size - 1


@pytest.mark.parametrize("patience", [1, 2])
def test_the_walk_along_the_grid_stops_after_patience_rises(patience):
    # the held-out loss falls to lambda = 1 (measured), then rises as weaker penalties fit noise
    scores, labels = _mixed(4, 600, seed=0)
    lambdas = (1e3, 1e2, 1e1, 1.0, 1e-1, 1e-2, 1e-3, 1e-4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = DirichletCalibrator(lambdas=lambdas, patience=None, n_folds=3, seed=1).fit(
            scores, labels, kind="logits"
        )
        stopped = DirichletCalibrator(lambdas=lambdas, patience=patience, n_folds=3, seed=1)
        stopped.fit(scores, labels, kind="logits")
    stop = _first_stop(whole.cv_losses_, patience)
    assert stop == 3 + patience < len(lambdas) - 1  # the walk stops early, patience points past the minimum
    assert np.all(np.diff(whole.cv_losses_[:4]) < 0) and np.all(whole.cv_losses_[4:] > whole.cv_losses_[3])
    np.testing.assert_array_equal(stopped.cv_losses_[: stop + 1], whole.cv_losses_[: stop + 1])  # the same walk
    assert np.isnan(stopped.cv_losses_[stop + 1 :]).all()
    best = int(np.nanargmin(stopped.cv_losses_))
    assert stopped.reg_lambda_ == lambdas[best] == whole.reg_lambda_
    assert stopped.cv_losses_[best] == np.nanmin(whole.cv_losses_)


# ---------------------------------------------------------------------------------------------------------------
# 6. A map of the logits as given takes logits only


@pytest.mark.parametrize("make", [VectorScaling, lambda: MatrixScaling(reg_lambda=0.1)], ids=["vector", "matrix"])
def test_a_map_fitted_on_logits_refuses_other_kinds_naming_kind_logits(make):
    logits, labels = _overconfident(3, 200, seed=10)
    model = make().fit(logits, labels, kind="logits")
    assert model.features_ == "logits"
    probs = softmax(logits, axis=1)
    for scores, kind in ((probs, "probs"), (np.log(probs), "logprobs")):
        with pytest.raises(CalibInputError) as refused:
            model.predict_proba(scores, kind=kind)
        message = str(refused.value)
        assert "fitted on logits as given" in message and f"kind='logits', not kind={kind!r}" in message
        assert "--kind logits" in refused.value.cli_message
    # the posteriors alone do not determine the map's output: logits shifted per row calibrate differently
    shifted = logits + np.random.default_rng(11).normal(scale=3.0, size=(200, 1))
    assert np.abs(model.predict_proba(shifted, kind="logits") - model.predict_proba(logits, kind="logits")).max() > 1e-3


def test_a_map_of_the_logits_refuses_minus_infinity_and_other_maps_take_any_kind():
    logits, labels = _overconfident(3, 200, seed=12)
    with_zero = logits.copy()
    with_zero[0, 1] = -np.inf
    with pytest.raises(CalibInputError, match="-inf logits .* kind='logprobs'"):
        VectorScaling().fit(with_zero, labels, kind="logits")
    # Dirichlet calibration maps the log-posteriors: fitted on logits, it takes probabilities of the same scores
    model = DirichletCalibrator(reg_lambda=0.1).fit(logits, labels, kind="logits")
    assert model.features_ == "log_posteriors"
    np.testing.assert_allclose(
        model.predict_proba(softmax(logits, axis=1), kind="probs"),
        model.predict_proba(logits, kind="logits"),
        rtol=0,
        atol=1e-12,
    )
