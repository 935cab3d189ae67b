"""Sample weights in every calibrator's fit (issue 56): integer weights fit what repeated rows fit, the
weighted isotonic and Platt fits are scikit-learn's, bad weights are refused naming them, and weights undo a
downsampling of the negatives."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from calib.calibrators import AffineCalibrator, OneVsRest, TemperatureScaling
from calib.calibrators.base import Calibrator
from calib.calibrators.folds import fold_ids
from calib.calibrators.histogram import HistogramBinning
from calib.calibrators.isotonic import IsotonicCalibrator
from calib.calibrators.persistence import load_calibrator, save_calibrator
from calib.calibrators.platt import PlattCalibrator, platt_targets
from calib.calibrators.protocols import calibrate, cross_validate, held_out
from calib.calibrators.registry import METHODS, make_calibrator
from calib.calibrators.selection import Comparison, compare_calibrators
from calib.validation import CalibInputError, CalibInputWarning

# matrix and dirichlet choose their penalty by cross-validation on folds of the rows, and repeated rows fall
# in other folds than their weighted originals, so the identity holds for a given penalty: they are checked
# at a fixed one (the cross-validated losses are weighted, tests below).
FIXED_PENALTY = {"matrix": {"reg_lambda": 1e-2}, "dirichlet": {"reg_lambda": 1e-2}}
# The largest difference of the predicted probabilities measured between a fit with integer weights and
# one on the repeated rows (seeded data below, both kinds): 2.4e-15 (dp), every other method 3.3e-16 or less;
# the iterative fits stop at float precision, so 1e-12 holds with room.
IDENTITY_TOL = 1e-12


def _logits(n_classes: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n_classes, n)
    return 2.5 * (rng.normal(size=(n, n_classes)) + 1.5 * np.eye(n_classes)[labels]), labels


def _quiet_fit(model, scores, labels, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibInputWarning)  # small-data warnings are not what is tested
        return model.fit(scores, labels, **kwargs)


@pytest.mark.parametrize("kind", ["logits", "probs"])
@pytest.mark.parametrize("name", sorted(METHODS))
def test_integer_weights_fit_what_repeated_rows_fit(name, kind):
    k = 2 if METHODS[name][0].binary_only else 3
    logits, labels = _logits(k, 300, seed=1)
    weights = np.random.default_rng(2).integers(0, 5, labels.size)  # 0 to 4, about a fifth 0
    assert (weights == 0).any() and (weights > 1).any()
    scores = logits if kind == "logits" else np.exp(logits - np.logaddexp.reduce(logits, axis=1, keepdims=True))
    test = _logits(k, 200, seed=3)[0]
    test = test if kind == "logits" else np.exp(test - np.logaddexp.reduce(test, axis=1, keepdims=True))
    params = FIXED_PENALTY.get(name, {})
    weighted = _quiet_fit(make_calibrator(name, **params), scores, labels, kind=kind, sample_weight=weights)
    repeated = _quiet_fit(
        make_calibrator(name, **params), np.repeat(scores, weights, axis=0), np.repeat(labels, weights), kind=kind
    )
    unweighted = _quiet_fit(make_calibrator(name, **params), scores, labels, kind=kind)
    got, want = weighted.predict_proba(test, kind=kind), repeated.predict_proba(test, kind=kind)
    np.testing.assert_allclose(got, want, rtol=0, atol=IDENTITY_TOL)
    assert weighted.n_fit_rows_ == np.count_nonzero(weights)
    if name != "mean_replacement":  # the weights must matter (MRR's one number may coincide on coarse data)
        assert np.max(np.abs(got - unweighted.predict_proba(test, kind=kind))) > 1e-6


def test_equal_weights_fit_exactly_the_unweighted_model():
    logits, labels = _logits(3, 200, seed=4)
    plain = make_calibrator("dirichlet", reg_lambda=1e-2).fit(logits, labels, kind="logits")
    equal = make_calibrator("dirichlet", reg_lambda=1e-2).fit(
        logits, labels, kind="logits", sample_weight=np.full(labels.size, 3.5)
    )
    np.testing.assert_array_equal(plain.coef_, equal.coef_)


def test_zero_weight_rows_change_nothing_even_the_zero_smoothing():
    probs = np.array([[0.0, 1.0], [0.3, 0.7], [0.8, 0.2], [0.6, 0.4], [0.1, 0.9], [0.01, 0.99]] * 5)
    labels = np.array([1, 0, 0, 1, 1, 0] * 5)
    weights = np.ones(labels.size)
    weights[5::6] = 0.0  # the rows holding the smallest positive probability, 0.01
    kept = weights > 0
    weighted = _quiet_fit(PlattCalibrator(), probs, labels, kind="probs", sample_weight=weights)
    dropped = _quiet_fit(PlattCalibrator(), probs[kept], labels[kept], kind="probs")
    assert weighted.zero_smoothing_ == dropped.zero_smoothing_ == pytest.approx(0.1)  # not 0.01
    assert (weighted.coef_, weighted.intercept_) == (dropped.coef_, dropped.intercept_)


def test_weighted_equal_mass_histogram_fits_what_repeated_rows_fit():
    logits, labels = _logits(2, 300, seed=6)
    weights = np.random.default_rng(7).integers(0, 5, labels.size)
    model = HistogramBinning(n_bins=7, strategy="equal-mass")
    weighted = _quiet_fit(model.clone(), logits, labels, kind="logits", sample_weight=weights)
    repeated = _quiet_fit(model.clone(), np.repeat(logits, weights, axis=0), np.repeat(labels, weights), kind="logits")
    np.testing.assert_array_equal(weighted.edges_, repeated.edges_)
    np.testing.assert_allclose(weighted.bin_values_, repeated.bin_values_, rtol=0, atol=1e-15)


def _binary_scores(n: int, seed: int):
    """Log-odds t, labels drawn from a miscalibrated sigmoid of t, real-valued weights, and the (N, 2) logits."""
    rng = np.random.default_rng(seed)
    t = 2.0 * rng.normal(size=n)
    labels = (rng.random(n) < 1.0 / (1.0 + np.exp(-0.6 * t - 0.3))).astype(np.int64)
    weights = rng.gamma(1.0, size=n)
    return t, labels, weights, np.column_stack([np.zeros(n), t])


def test_weighted_isotonic_is_scikit_learns():
    from sklearn.isotonic import IsotonicRegression

    t, labels, weights, scores = _binary_scores(400, seed=8)
    model = IsotonicCalibrator().fit(scores, labels, kind="logits", sample_weight=weights)
    reference = IsotonicRegression(out_of_bounds="clip").fit(t, labels, sample_weight=weights)
    grid = np.linspace(-8.0, 8.0, 1001)
    got = model.predict_proba(np.column_stack([np.zeros(grid.size), grid]), kind="logits")[:, 1]
    np.testing.assert_allclose(got, reference.predict(grid), rtol=0, atol=1e-10)


def _sklearn_logistic(t, labels, weights):
    """scikit-learn's unpenalized logistic regression (C = inf: its ``penalty=None``, deprecated in 1.8) by
    Newton-CG to a gradient of 1e-15."""
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=np.inf, solver="newton-cg", tol=1e-15, max_iter=10_000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a line search that cannot improve at float precision warns
        model.fit(t[:, None], labels, sample_weight=weights)
    return float(model.coef_[0, 0]), float(model.intercept_[0])


def test_weighted_platt_is_scikit_learns_logistic_regression():
    t, labels, weights, scores = _binary_scores(400, seed=9)
    model = PlattCalibrator().fit(scores, labels, kind="logits", sample_weight=weights)
    coef, intercept = _sklearn_logistic(t, labels, weights)
    np.testing.assert_allclose([model.coef_, model.intercept_], [coef, intercept], rtol=0, atol=1e-10)


def test_weighted_platt_with_smoothed_targets_is_scikit_learns_on_split_rows():
    """Platt's targets t_i in (0, 1): the cross-entropy w_i [t_i CE(1) + (1 - t_i) CE(0)] is that of two rows,
    labelled 1 with weight w_i t_i and 0 with weight w_i (1 - t_i); the targets from weighted class counts."""
    t, labels, weights, scores = _binary_scores(400, seed=10)
    model = PlattCalibrator(smooth_targets=True).fit(scores, labels, kind="logits", sample_weight=weights)
    targets = platt_targets(labels, weights)
    coef, intercept = _sklearn_logistic(
        np.concatenate([t, t]),
        np.concatenate([np.ones_like(labels), np.zeros_like(labels)]),
        np.concatenate([weights * targets, weights * (1.0 - targets)]),
    )
    np.testing.assert_allclose([model.coef_, model.intercept_], [coef, intercept], rtol=0, atol=1e-10)


@pytest.mark.parametrize(
    "weights",
    [
        pytest.param(lambda n: np.r_[-1.0, np.ones(n - 1)], id="negative"),
        pytest.param(lambda n: np.r_[np.nan, np.ones(n - 1)], id="nan"),
        pytest.param(lambda n: np.r_[np.inf, np.ones(n - 1)], id="inf"),
        pytest.param(lambda n: np.ones(n - 1), id="wrong-length"),
        pytest.param(lambda n: np.zeros(n), id="all-zero"),
        pytest.param(lambda n: np.array(["a"] * n), id="strings"),
        pytest.param(lambda n: np.ones((n, 1)), id="2-d"),
    ],
)
@pytest.mark.parametrize("name", sorted(METHODS))
def test_bad_sample_weight_is_one_error_naming_it(name, weights):
    k = 2 if METHODS[name][0].binary_only else 3
    logits, labels = _logits(k, 40, seed=11)
    with pytest.raises(CalibInputError, match="sample_weight"):
        make_calibrator(name).fit(logits, labels, kind="logits", sample_weight=weights(labels.size))


def test_weights_undo_a_downsampling_of_the_negatives():
    """All positives and 1 in 10 negatives, each negative weighing 10: the weighted temperature is the full
    data's, and the unweighted one, fitted to rows with 3.7 times the positive rate, is not."""
    rng = np.random.default_rng(12)
    n = 20_000
    labels = (rng.random(n) < 0.1).astype(np.int64)
    logits = 3.0 * (rng.normal(size=(n, 2)) + 2.0 * np.eye(2)[labels] - np.array([0.0, 1.5]))
    full = TemperatureScaling().fit(logits, labels, kind="logits").scale_
    kept = (labels == 1) | (rng.random(n) < 0.1)
    weights = np.where(labels[kept] == 1, 1.0, 10.0)
    weighted = TemperatureScaling().fit(logits[kept], labels[kept], kind="logits", sample_weight=weights).scale_
    unweighted = TemperatureScaling().fit(logits[kept], labels[kept], kind="logits").scale_
    assert abs(weighted / full - 1.0) < 0.02  # measured 0.3 %
    assert abs(unweighted / full - 1.0) > 0.2  # measured 45 %


def test_each_cross_validated_fold_fits_its_training_rows_weights():
    logits, labels = _logits(3, 240, seed=13)
    weights = np.random.default_rng(14).integers(0, 5, labels.size)
    folds = fold_ids(labels, n_folds=3, seed=0)
    got = cross_validate(TemperatureScaling(), logits, labels, kind="logits", folds=folds, sample_weight=weights)
    for fold in range(3):
        test, train = folds == fold, folds != fold
        repeated = TemperatureScaling().fit(
            np.repeat(logits[train], weights[train], axis=0), np.repeat(labels[train], weights[train]), kind="logits"
        )
        np.testing.assert_allclose(got[test], repeated.predict_log_proba(logits[test], kind="logits"), atol=1e-12)
    plain = cross_validate(TemperatureScaling(), logits, labels, kind="logits", folds=folds)
    assert np.max(np.abs(got - plain)) > 1e-6


def test_train_on_test_and_held_out_fit_with_the_weights():
    logits, labels = _logits(3, 150, seed=15)
    weights = np.random.default_rng(16).integers(0, 5, labels.size)
    model = TemperatureScaling().fit(logits, labels, kind="logits", sample_weight=weights)
    want = model.predict_log_proba(logits, kind="logits")
    tt = calibrate(TemperatureScaling(), logits, labels, kind="logits", protocol="tt", sample_weight=weights)
    np.testing.assert_allclose(tt, want, rtol=0, atol=1e-12)  # tt fits the log-posteriors: rounding apart
    ho = held_out(TemperatureScaling(), logits, labels, logits, kind="logits", sample_weight=weights)
    np.testing.assert_array_equal(ho, want)


def test_the_cross_validated_penalty_weighs_fits_and_held_out_losses():
    """One grid point: its cross-validated loss is the weighted mean held-out log-loss of the weighted fold fits,
    as cross_validate computes them on the same folds."""
    logits, labels = _logits(3, 240, seed=17)
    weights = np.random.default_rng(18).gamma(1.0, size=labels.size)
    model = make_calibrator("dirichlet", lambdas=[0.1], n_folds=3, seed=0)
    model.fit(logits, labels, kind="logits", sample_weight=weights)
    held = cross_validate(
        make_calibrator("dirichlet", reg_lambda=0.1),
        logits,
        labels,
        kind="logits",
        folds=fold_ids(labels, n_folds=3, seed=0),
        sample_weight=weights,
    )
    losses = -held[np.arange(labels.size), labels]
    assert model.cv_losses_[0] == pytest.approx(np.dot(weights, losses) / weights.sum(), rel=1e-10)
    assert abs(model.cv_losses_[0] - losses.mean()) > 1e-6


def test_compare_calibrators_weighs_the_held_out_losses():
    logits, labels = _logits(3, 240, seed=19)
    weights = np.random.default_rng(20).gamma(1.0, size=labels.size)
    result = compare_calibrators(["temperature"], logits, labels, kind="logits", sample_weight=weights)
    held = cross_validate(
        TemperatureScaling(),
        logits,
        labels,
        kind="logits",
        folds=fold_ids(labels, n_folds=5, seed=0),
        sample_weight=weights,
    )
    want = -np.dot(weights, held[np.arange(labels.size), labels]) / weights.sum()
    assert result.losses["temperature"] == pytest.approx(want, rel=1e-12)
    raw = -np.dot(weights, (logits - np.logaddexp.reduce(logits, axis=1, keepdims=True))[np.arange(240), labels])
    assert result.losses["raw"] == pytest.approx(raw / weights.sum(), rel=1e-12)


def test_the_weighted_standard_error_is_the_unweighted_one_for_equal_weights_and_ignores_zero_weights():
    rng = np.random.default_rng(21)
    rows = {"a": rng.normal(size=50), "b": rng.normal(size=50)}
    plain = Comparison({}, 5, 0, rows).standard_error("a", "b")
    equal = Comparison({}, 5, 0, rows, weights=np.full(50, 2.5)).standard_error("a", "b")
    assert equal == pytest.approx(plain, rel=1e-12)
    weights = rng.gamma(1.0, size=50)
    weights[:10] = 0.0
    with_zeros = Comparison({}, 5, 0, rows, weights=weights).standard_error("a", "b")
    kept = {name: values[10:] for name, values in rows.items()}
    assert with_zeros == pytest.approx(Comparison({}, 5, 0, kept, weights=weights[10:]).standard_error("a", "b"))
    assert with_zeros != pytest.approx(Comparison({}, 5, 0, kept).standard_error("a", "b"))


class _Unweighted(Calibrator):
    """A calibrator whose ``_fit`` takes no weights (as a replica of an author's unweighted code)."""

    def _fit(self, logp, labels):
        self.mean_ = float(np.mean(labels))

    def _transform(self, logp):
        return logp


def test_a_calibrator_without_weights_fits_unweighted_and_refuses_unequal_weights():
    logits, labels = _logits(2, 20, seed=22)
    assert _Unweighted().fit(logits, labels, kind="logits", sample_weight=np.full(20, 2.0)).mean_ == labels.mean()
    with pytest.raises(CalibInputError, match="sample_weight: _Unweighted fits without sample weights"):
        _Unweighted().fit(logits, labels, kind="logits", sample_weight=np.arange(20))


def test_a_weighted_fit_saves_and_loads_as_an_unweighted_one(tmp_path):
    logits, labels = _logits(3, 200, seed=23)
    weights = np.random.default_rng(24).integers(0, 5, labels.size)
    model = make_calibrator("temperature").fit(logits, labels, kind="logits", sample_weight=weights)
    save_calibrator(model, tmp_path / "model.json", method="temperature")
    loaded, _ = load_calibrator(tmp_path / "model.json")
    plain = make_calibrator("temperature").fit(logits, labels, kind="logits")
    assert set(loaded._fitted_state()) == set(plain._fitted_state())  # no weights among the saved fields
    np.testing.assert_array_equal(
        loaded.predict_proba(logits, kind="logits"), model.predict_proba(logits, kind="logits")
    )


@pytest.mark.parametrize("name", ["vector", "matrix", "dirichlet"])
def test_integer_weights_fit_the_repeated_rows_past_the_warm_start(name):
    """On 2e4 rows the repeated rows (about 4e4) are fitted from the warm start of a strided subset, whose final
    steps use a BFGS-refined curvature, and the weighted rows by exact Newton: the two optimizers stop at
    different points near the optimum. Measured: 3.1e-10 apart at most (2e-8 before the last Newton step was
    taken); asserted 1e-9, the best these stopping rules reach, not 1e-12."""
    rng = np.random.default_rng(25)
    labels = rng.integers(0, 4, 20_000)
    logits = 2.5 * (rng.normal(size=(labels.size, 4)) + 1.5 * np.eye(4)[labels])
    weights = rng.integers(0, 5, labels.size)
    params = FIXED_PENALTY.get(name, {})
    weighted = make_calibrator(name, **params).fit(logits, labels, kind="logits", sample_weight=weights)
    repeated = make_calibrator(name, **params).fit(
        np.repeat(logits, weights, axis=0), np.repeat(labels, weights), kind="logits"
    )
    got, want = (model.predict_proba(logits[:500], kind="logits") for model in (weighted, repeated))
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: AffineCalibrator(priors=[0.5, 0.3, 0.2]), id="dp-with-priors"),
        pytest.param(lambda: OneVsRest(PlattCalibrator()), id="one-vs-rest-platt"),
        pytest.param(lambda: OneVsRest(IsotonicCalibrator()), id="one-vs-rest-isotonic"),
    ],
)
def test_integer_weights_fit_what_repeated_rows_fit_with_priors_and_one_vs_rest(make):
    """The prior-weighted cross-entropy's class counts N_h become class weights; one-vs-rest passes the weights
    to every binary fit."""
    logits, labels = _logits(3, 300, seed=26)
    weights = np.random.default_rng(27).integers(0, 5, labels.size)
    test = _logits(3, 200, seed=28)[0]
    weighted = _quiet_fit(make(), logits, labels, kind="logits", sample_weight=weights)
    repeated = _quiet_fit(make(), np.repeat(logits, weights, axis=0), np.repeat(labels, weights), kind="logits")
    unweighted = _quiet_fit(make(), logits, labels, kind="logits")
    got = weighted.predict_proba(test, kind="logits")
    np.testing.assert_allclose(got, repeated.predict_proba(test, kind="logits"), rtol=0, atol=IDENTITY_TOL)
    assert np.max(np.abs(got - unweighted.predict_proba(test, kind="logits"))) > 1e-6


def test_integer_weights_fit_the_repeated_rows_with_lbfgs():
    """Dirichlet calibration of 21 classes has 462 parameters, beyond Newton's 400: L-BFGS-B fits it, and stops
    on its gradient rule (gtol 1e-9) near, not at, the optimum. Measured: the weighted and the repeated rows'
    predictions 7.0e-8 apart; asserted 5e-7, the best that rule reaches (tightening it is not cheap)."""
    rng = np.random.default_rng(30)
    labels = rng.integers(0, 21, 4000)
    logits = 2.5 * (rng.normal(size=(labels.size, 21)) + 1.5 * np.eye(21)[labels])
    weights = rng.integers(0, 5, labels.size)
    weighted = _quiet_fit(
        make_calibrator("dirichlet", reg_lambda=1e-2), logits, labels, kind="logits", sample_weight=weights
    )
    repeated = _quiet_fit(
        make_calibrator("dirichlet", reg_lambda=1e-2),
        np.repeat(logits, weights, axis=0),
        np.repeat(labels, weights),
        kind="logits",
    )
    got, want = (model.predict_proba(logits[:500], kind="logits") for model in (weighted, repeated))
    np.testing.assert_allclose(got, want, rtol=0, atol=5e-7)
