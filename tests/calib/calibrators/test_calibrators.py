"""Tests of calib.calibrators: affine / temperature scaling (eq. 23), PAV (Sec. 2.4.2), histogram binning."""

import numpy as np
import pytest
from scipy.special import log_softmax

from calib.calibrators import AffineCalibrator, HistogramBinning, IsotonicCalibrator, TemperatureScaling
from calib.data.synthetic import gaussian_posteriors
from calib.scoring.scores import brier, cross_entropy
from calib.validation import CalibInputError

# Comparisons of a minimizer with other points of its family: the optimum is exact in theory, and
# 1e-12 covers float rounding of a mean of N <= 20000 log-losses of order 1.
OPT_TOL = 1e-12


def _ce_by_hand(x, y, scale, bias):
    """CE of softmax(scale * x + bias), eq. 8."""
    logs = log_softmax(scale * x + bias, axis=1)
    return -np.mean(logs[np.arange(y.size), y])


def _affine_data(n, seed=0):
    """Log-posteriors x and labels drawn from softmax(2 x + b), b = [0, 0.5, -0.7]."""
    rng = np.random.default_rng(seed)
    x = log_softmax(1.5 * rng.normal(size=(n, 3)), axis=1)
    b = np.array([0.0, 0.5, -0.7])
    p = np.exp(log_softmax(2.0 * x + b, axis=1))
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    return x, y, b


def _binary_system(n=2000):
    """A miscalibrated binary system (over-confident, App. C mcs) and its labels."""
    data = gaussian_posteriors(n_classes=2, n_samples=n, prior1=0.7, variance=0.2, scale=3.0, seed=0)
    return data.systems["mcs"], data.labels


def test_temperature_scaling_keeps_every_argmax():
    rng = np.random.default_rng(0)
    logits = 3.0 * rng.normal(size=(500, 4))
    y = rng.integers(0, 4, size=500)
    model = TemperatureScaling().fit(logits, y, kind="logits")
    out = model.predict_log_proba(logits, kind="logits")
    assert model.scale_ != pytest.approx(1.0, abs=0.05)  # the transform is not the identity
    np.testing.assert_array_equal(out.argmax(axis=1), logits.argmax(axis=1))
    np.testing.assert_array_equal(model.bias_, np.zeros(4))


def test_affine_calibrator_recovers_scale_and_bias():
    x, y, b = _affine_data(20_000)
    model = AffineCalibrator().fit(x, y, kind="logprobs")
    # Fisher-information standard errors at N = 20000 are 0.023 (scale) and <= 0.030 (bias differences);
    # 0.15 is five standard errors.
    assert model.scale_ == pytest.approx(2.0, abs=0.15)
    np.testing.assert_allclose(model.bias_ - model.bias_[0], b - b[0], rtol=0, atol=0.15)


def test_affine_output_is_softmax_of_scaled_and_shifted_input():
    x, y, _ = _affine_data(500)
    model = AffineCalibrator().fit(x, y, kind="logprobs")
    out = model.predict_log_proba(x, kind="logprobs")
    # eq. 23: differences of log-posteriors are scale * differences of inputs plus bias differences
    expected = model.scale_ * (x[:, 1:] - x[:, :1]) + (model.bias_[1:] - model.bias_[0])
    np.testing.assert_allclose(out[:, 1:] - out[:, :1], expected, rtol=1e-12, atol=1e-12)


def test_affine_training_ce_is_below_identity_and_temperature():
    x, y, _ = _affine_data(2000)
    affine = AffineCalibrator().fit(x, y, kind="logprobs")
    temp = TemperatureScaling().fit(x, y, kind="logprobs")
    ce_affine = cross_entropy(affine.predict_log_proba(x, kind="logprobs"), y, kind="logprobs")
    ce_temp = cross_entropy(temp.predict_log_proba(x, kind="logprobs"), y, kind="logprobs")
    ce_identity = cross_entropy(x, y, kind="logprobs")
    # affine minimizes over a superset of {temperature scaling} which contains the identity
    assert ce_affine <= ce_temp + OPT_TOL
    assert ce_temp <= ce_identity + OPT_TOL
    assert ce_affine < ce_temp  # the data have a bias, so the inequalities are strict here


def test_affine_fit_is_first_order_optimal():
    x, y, _ = _affine_data(2000)
    model = AffineCalibrator().fit(x, y, kind="logprobs")
    assert model.converged_
    best = _ce_by_hand(x, y, model.scale_, model.bias_)
    assert best == pytest.approx(
        cross_entropy(model.predict_log_proba(x, kind="logprobs"), y, kind="logprobs"), rel=OPT_TOL
    )
    # Every +-1e-4 step in one parameter raises the CE (by ~1e-9 at a minimum, far above float noise ~1e-16).
    for delta in (-1e-4, 1e-4):
        assert _ce_by_hand(x, y, model.scale_ + delta, model.bias_) > best
        for k in range(3):
            bias = model.bias_.copy()
            bias[k] += delta
            assert _ce_by_hand(x, y, model.scale_, bias) > best


def test_temperature_fit_is_first_order_optimal():
    x, y, _ = _affine_data(2000)
    model = TemperatureScaling().fit(x, y, kind="logprobs")
    best = _ce_by_hand(x, y, model.scale_, 0.0)
    for delta in (-1e-4, 1e-4):
        assert _ce_by_hand(x, y, model.scale_ + delta, 0.0) > best


def test_prior_weighted_affine_fit_minimizes_the_weighted_ce():
    x, y, _ = _affine_data(2000)
    priors = np.array([0.2, 0.3, 0.5])
    model = AffineCalibrator(priors=priors).fit(x, y, kind="logprobs")

    def weighted(scale, bias):
        return cross_entropy(scale * x + bias, y, kind="logits", priors=priors)

    best = weighted(model.scale_, model.bias_)
    for delta in (-1e-4, 1e-4):
        assert weighted(model.scale_ + delta, model.bias_) > best
        for k in range(3):
            bias = model.bias_.copy()
            bias[k] += delta
            assert weighted(model.scale_, bias) > best


def _by_rank(q1, values):
    """Monotone non-decreasing map of q1: the sorted values assigned by rank of q1."""
    out = np.empty_like(q1)
    out[np.argsort(q1, kind="stable")] = np.sort(values)
    return out


def test_pav_beats_every_other_monotone_map_on_its_training_data():
    x, y = _binary_system()
    q1 = np.exp(x[:, 1])
    assert np.unique(q1).size == q1.size  # no ties: any rank assignment is a function of q1

    def scores_of(p1):
        logp = np.log(np.column_stack([1 - p1, p1]))
        return cross_entropy(logp, y, kind="logprobs"), brier(logp, y, kind="logprobs", scaling="mean")

    pav = IsotonicCalibrator().fit(x, y, kind="logprobs").predict_log_proba(x, kind="logprobs")
    ce_pav, bs_pav = cross_entropy(pav, y, kind="logprobs"), brier(pav, y, kind="logprobs", scaling="mean")

    hist = HistogramBinning(n_bins=5).fit(x, y, kind="logprobs")
    assert np.all(np.diff(hist.bin_values_) >= 0)  # precondition: on these data the histogram map is monotone
    competitors = {
        "histogram": hist.predict_log_proba(x, kind="logprobs"),
        "affine": AffineCalibrator().fit(x, y, kind="logprobs").predict_log_proba(x, kind="logprobs"),
        "identity": x,
    }
    for name, logp in competitors.items():
        assert ce_pav <= cross_entropy(logp, y, kind="logprobs") + OPT_TOL, name
        assert bs_pav <= brier(logp, y, kind="logprobs", scaling="mean") + OPT_TOL, name
    rng = np.random.default_rng(0)
    for trial in range(50):
        ce, bs = scores_of(_by_rank(q1, rng.uniform(0.001, 0.999, size=q1.size)))
        assert ce_pav <= ce + OPT_TOL, trial
        assert bs_pav <= bs + OPT_TOL, trial
    # and strictly better than the raw, miscalibrated system
    assert ce_pav < cross_entropy(x, y, kind="logprobs") - 0.1


def test_pav_output_is_monotone_in_q1():
    x, y = _binary_system(500)
    model = IsotonicCalibrator().fit(x, y, kind="logprobs")
    p1 = np.linspace(0.0, 1.0, 2001)
    out = model.predict_proba(np.column_stack([1 - p1, p1]), kind="probs")[:, 1]
    assert np.all(np.diff(out) >= 0)
    assert out[0] < out[-1]


def test_pav_clipping_keeps_log_posteriors_finite_at_both_ends():
    # The module promises outputs in [clip, 1 - clip] "so log-posteriors stay finite". Training blocks
    # with all-negative and all-positive labels give PAV values 0 and 1; both ends must be clipped.
    q1 = np.array([0.1, 0.2, 0.5, 0.8, 0.9])
    y = np.array([0, 0, 1, 1, 1])
    model = IsotonicCalibrator().fit(np.column_stack([1 - q1, q1]), y, kind="probs")
    out = model.predict_log_proba(np.array([[0.95, 0.05], [0.05, 0.95]]), kind="probs")
    assert np.all(np.isfinite(out)), out
    # and a class-0 test sample in the top block then has a finite CE
    assert np.isfinite(cross_entropy(out, [1, 0], kind="logprobs"))


def test_pav_on_a_hand_example():
    # PAV of labels [0, 1, 0, 1, 1] sorted by score: pool (1, 0) -> 1/2, so [0, 1/2, 1/2, 1, 1]
    q1 = np.array([0.1, 0.3, 0.4, 0.6, 0.9])
    y = np.array([0, 1, 0, 1, 1])
    model = IsotonicCalibrator().fit(np.column_stack([1 - q1, q1]), y, kind="probs")
    out = model.predict_proba(np.column_stack([1 - q1, q1]), kind="probs")[:, 1]
    np.testing.assert_allclose(out, [1e-30, 0.5, 0.5, 1.0, 1.0], rtol=1e-12, atol=0)


# Histogram binning: training q1 in bins 1, 2 and 4 of 5 (bins (0, .2], (.2, .4], ..., (.8, 1]); bin 3 is empty.
H_Q1 = np.array([0.1, 0.15, 0.05, 0.12, 0.3, 0.35, 0.9, 0.95, 0.85])
H_Y = np.array([0, 0, 1, 0, 1, 1, 1, 0, 1])


def _hist(empty_bin):
    return HistogramBinning(n_bins=5, empty_bin=empty_bin).fit(np.column_stack([1 - H_Q1, H_Q1]), H_Y, kind="probs")


def test_histogram_binning_reproduces_bin_label_means():
    model = _hist("identity")
    out = model.predict_proba(np.column_stack([1 - H_Q1, H_Q1]), kind="probs")[:, 1]
    # closed form: bin 1 has labels 0, 0, 1, 0 -> 1/4; bin 2 has 1, 1 -> 1; bin 5 has 1, 0, 1 -> 2/3
    np.testing.assert_allclose(out, [0.25] * 4 + [1.0] * 2 + [2 / 3] * 3, rtol=1e-15, atol=0)
    np.testing.assert_array_equal(model.counts_, [4, 2, 0, 0, 3])


def test_histogram_empty_bin_policies():
    test_q = np.array([[0.5, 0.5], [0.3, 0.7]])  # q1 = 0.5 and 0.7: bin 3 and bin 4, both empty in training
    zero = _hist("zero").predict_log_proba(test_q, kind="probs")
    assert np.all(np.isneginf(zero[:, 1]))
    np.testing.assert_array_equal(zero[:, 0], 0.0)
    identity = _hist("identity").predict_proba(test_q, kind="probs")
    np.testing.assert_allclose(identity, test_q, rtol=1e-15)
    prior = _hist("prior").predict_proba(test_q, kind="probs")
    np.testing.assert_allclose(prior[:, 1], 5 / 9, rtol=1e-15)  # 5 positives among 9 training samples


def test_histogram_edge_rule_is_used():
    # q1 = 0.4 is on the edge between bins 2 and 3: (0.2, 0.4] with closed="right", [0.4, 0.6) with "left"
    q1 = np.array([0.4, 0.4, 0.1])
    y = np.array([1, 1, 0])
    q = np.column_stack([1 - q1, q1])
    right = HistogramBinning(n_bins=5, closed="right").fit(q, y, kind="probs")
    left = HistogramBinning(n_bins=5, closed="left").fit(q, y, kind="probs")
    np.testing.assert_array_equal(right.counts_, [1, 2, 0, 0, 0])
    np.testing.assert_array_equal(left.counts_, [1, 0, 2, 0, 0])


@pytest.mark.parametrize("calibrator", [HistogramBinning(), IsotonicCalibrator()], ids=["histogram", "isotonic"])
def test_binary_only_calibrators_reject_three_classes(calibrator):
    q = np.full((6, 3), 1 / 3)
    with pytest.raises(CalibInputError, match="scores need K = 2"):
        calibrator.fit(q, [0, 1, 2, 0, 1, 2], kind="probs")


@pytest.mark.parametrize(
    "calibrator",
    [AffineCalibrator(), TemperatureScaling(), HistogramBinning(), IsotonicCalibrator()],
    ids=["affine", "temperature", "histogram", "isotonic"],
)
def test_predict_before_fit_raises(calibrator):
    with pytest.raises(CalibInputError, match="not fitted"):
        calibrator.predict_proba([[0.5, 0.5]], kind="probs")


def test_class_count_mismatch_raises():
    x, y, _ = _affine_data(100)
    model = AffineCalibrator().fit(x, y, kind="logprobs")
    with pytest.raises(CalibInputError, match="scores have 4 classes"):
        model.predict_log_proba(np.full((2, 4), np.log(0.25)), kind="logprobs")
    binary = IsotonicCalibrator().fit([[0.4, 0.6], [0.7, 0.3]], [1, 0], kind="probs")
    with pytest.raises(CalibInputError, match="scores have 3 classes"):
        binary.predict_proba(np.full((2, 3), 1 / 3), kind="probs")


def test_priors_that_do_not_fit_the_classes_are_rejected():
    # (the declared parameters' invalid values: test_parameters.py)
    q = np.array([[0.4, 0.6], [0.7, 0.3]])
    with pytest.raises(CalibInputError, match="priors"):
        AffineCalibrator(priors=[0.5, 0.6]).fit(q, [1, 0], kind="probs")


@pytest.mark.parametrize("kind", ["probs", "logprobs", "logits"])
@pytest.mark.parametrize("make", [AffineCalibrator, TemperatureScaling, HistogramBinning, IsotonicCalibrator])
def test_fit_and_predict_leave_the_callers_scores_alone(make, kind):
    # _fit and _transform may overwrite what they receive; that must always be calib's own copy.
    rng = np.random.default_rng(3)
    logp = log_softmax(rng.normal(size=(500, 2)) * 2.0, axis=1)
    scores = {"probs": np.exp(logp), "logprobs": logp, "logits": logp + 4.0}[kind]
    before = scores.copy()
    labels = rng.integers(0, 2, 500)
    make().fit(scores, labels, kind=kind).predict_proba(scores, kind=kind)
    np.testing.assert_array_equal(scores, before)


@pytest.mark.parametrize("scores", ["continuous", "rounded", "closer_than_1e-15", "one_ulp_apart"])
def test_isotonic_fit_and_map_are_scikit_learns_to_the_last_bit(scores):
    """Independent implementation: scikit-learn's IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip"),
    including its pooling of scores less than 1e-15 above a pool's first score."""
    from sklearn.isotonic import IsotonicRegression

    from calib.calibrators.isotonic import interpolate, isotonic_thresholds

    rng = np.random.default_rng(7)
    x = {
        "continuous": rng.normal(size=3000),
        "rounded": np.round(rng.normal(size=3000), 2),
        "closer_than_1e-15": rng.normal(size=3000) * 1e-14,
        "one_ulp_apart": 1.0 + rng.integers(0, 20, 3000) * np.finfo(float).eps,
    }[scores]
    y = (rng.random(x.size) < 1 / (1 + np.exp(-x / x.std()))).astype(np.float64)
    theirs = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(x, y)
    thresholds = isotonic_thresholds(x, y)
    np.testing.assert_array_equal(thresholds[0], theirs.X_thresholds_)
    np.testing.assert_array_equal(thresholds[1], theirs.y_thresholds_)
    new = np.concatenate([x, rng.normal(size=100) * 3 * x.std() + x.mean(), np.nextafter(x, np.inf)])
    np.testing.assert_array_equal(interpolate(*thresholds, new), theirs.predict(new))
