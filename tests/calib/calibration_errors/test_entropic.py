"""Tests of calib.calibration_errors.entropic: the entropic calibration difference (ECD) of Sumler et al. (2025).

Golden values: the single-datum test vectors and the lower bound -0.2784645 at p* = 0.7821883 (notes/004
§1.5), the ResNet18 single-datum bins of Table II (notes/004 §2.3 item 1), the intro example (§3 item 11),
the Gaussian/NEES closed form (d/2)(1/k - 1) (§1.3) and the temperature-scaling population values (§3
items 3-4). Identities: ECD_i = NLL_i - H_i (eq. 12) against scipy's xlogy / multivariate_normal.
"""

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import expit, log_softmax, logit, softmax, xlogy
from scipy.stats import multivariate_normal

from calib.calibration_errors.entropic import ecd, ecd_terms, entropic_bins, gaussian_ecd, single_datum_bound
from calib.validation import CalibInputError

# Identities between two computations of the same float sums: rounding of O(N) terms of size <= ~10.
EXACT_TOL = 1e-12


def _binary(p):
    return np.column_stack([1.0 - np.asarray(p, dtype=float), np.asarray(p, dtype=float)])


def _f(p, y):
    """ECD of single data (p, y) through the library, probabilities in."""
    p = np.atleast_1d(np.asarray(p, dtype=float))
    y = np.broadcast_to(np.asarray(y), p.shape)
    return ecd_terms(_binary(p), y, kind="probs")


def _ecd_xlogy(probs, labels):
    """NLL_i - H_i written out independently: sum_c p_c log p_c - log p_y (eq. 12)."""
    probs = np.asarray(probs, dtype=float)
    return xlogy(probs, probs).sum(axis=1) - np.log(probs[np.arange(labels.size), labels])


# --- single-datum values ------------------------------------------------------------------------------------------

# notes/004 §1.5 table, printed to 6 decimals: a tolerance of 1e-6 covers the rounding (<= 5e-7).
SINGLE_DATUM = [
    (0.5, 0, 0.0),
    (0.5, 1, 0.0),
    (0.9, 1, -0.219722),
    (0.9, 0, 1.977502),
    (0.1, 1, 1.977502),
    (0.6, 1, -0.162186),
    (0.62, 1, -0.186028),
    (0.7868, 1, -0.278384),
    (0.55, 0, 0.110369),
    (1e-4, 1, 9.209319),
    (0.9999, 1, -0.000921),
    (1e-5, 1, 11.512800),
]


@pytest.mark.parametrize(("p", "y", "expected"), SINGLE_DATUM)
def test_single_datum_vectors(p, y, expected):
    assert _f(p, y)[0] == pytest.approx(expected, abs=1e-6)


def test_single_datum_vectors_vectorised():
    p, y, expected = (np.array(col) for col in zip(*SINGLE_DATUM, strict=True))
    # Same table as above, all rows at once (rows must not leak into each other); rounding of the table: 1e-6.
    assert_allclose(ecd_terms(_binary(p), y.astype(int), kind="probs"), expected, rtol=0, atol=1e-6)


def test_half_is_exactly_zero_for_both_labels():
    # f(0.5, y) = (0.5 - y) * log(1) = 0 with no rounding: log(0.5) - log(0.5) is exactly 0.
    assert np.all(_f([0.5, 0.5], [0, 1]) == 0.0)


# --- the lower bound ----------------------------------------------------------------------------------------------


def test_single_datum_bound_published_values():
    p_star, bound = single_datum_bound()
    # notes/004 §1.5: p* = 0.7821883, bound -0.2784645, printed to 7 decimals (rounding <= 5e-8 < 1e-7).
    assert p_star == pytest.approx(0.7821883, abs=1e-7)
    assert bound == pytest.approx(-0.2784645, abs=1e-7)
    # The paper's "approximately -0.2785" (4 decimals).
    assert round(bound, 4) == -0.2785
    # Closed form: p* solves p logit p = 1 and the bound is 1 - 1/p* (brentq's xtol is 1e-15).
    assert p_star * logit(p_star) == pytest.approx(1.0, abs=1e-12)
    assert bound == pytest.approx(1.0 - 1.0 / p_star, abs=1e-15)


@pytest.mark.parametrize("k", [3, 4, 10])
def test_the_single_datum_bound_of_k_classes_is_the_least_summand_of_many_random_predictions(k):
    p_star, bound = single_datum_bound(k)
    at_bound = np.array([[p_star, *np.full(k - 1, (1 - p_star) / (k - 1))]])
    assert ecd_terms(at_bound, np.array([0]), kind="probs")[0] == pytest.approx(bound, abs=1e-12)
    rng = np.random.default_rng(k)
    for alpha in (0.3, 1.0, 5.0):  # spread over the simplex, near its corners and near its centre
        probs = rng.dirichlet(np.full(k, alpha), size=200_000)
        terms = ecd_terms(probs, rng.integers(0, k, size=probs.shape[0]), kind="probs")
        assert terms.min() >= bound - 1e-12
    assert bound < single_datum_bound(k - 1)[1]  # more classes, lower bound


def test_single_datum_bound_is_the_grid_minimum_for_both_labels():
    p_star, bound = single_datum_bound()
    grid = np.linspace(1e-6, 1 - 1e-6, 1_000_001)  # spacing 1e-6
    f1 = _f(grid, 1)
    f0 = _f(grid, 0)
    # Nothing on the grid is below the bound (rounding of the terms: ~1e-16, allow 1e-12).
    assert f1.min() >= bound - 1e-12
    assert f0.min() >= bound - 1e-12
    # The grid minimum approaches the bound to second order in the spacing: f'' ~ 10 near p*, so the gap is
    # at most ~ 10 * (1e-6)^2 / 2 = 5e-12; 1e-10 leaves room.
    assert f1.min() == pytest.approx(bound, abs=1e-10)
    assert f0.min() == pytest.approx(bound, abs=1e-10)
    # ... and is attained at p* for y = 1, at the mirror 1 - p* for y = 0 (within two grid steps).
    assert grid[np.argmin(f1)] == pytest.approx(p_star, abs=2e-6)
    assert grid[np.argmin(f0)] == pytest.approx(1 - p_star, abs=2e-6)
    # The value at p* itself is the bound (the library's terms vs brentq's root; rounding only).
    assert _f(p_star, 1)[0] == pytest.approx(bound, abs=1e-12)
    assert _f(1 - p_star, 0)[0] == pytest.approx(bound, abs=1e-12)


def test_no_dataset_mean_is_below_the_bound():
    _, bound = single_datum_bound()
    rng = np.random.default_rng(0)
    worst = np.inf
    for _ in range(200):
        n = rng.integers(1, 50)
        # Concentrated near p* / 1 - p* with labels on the "correct" side: the hardest case for the bound.
        p = np.clip(rng.normal(rng.choice([0.78, 0.22]), 0.05, size=n), 1e-6, 1 - 1e-6)
        y = (p > 0.5).astype(int)
        worst = min(worst, ecd(_binary(p), y, kind="probs"))
    assert worst >= bound - 1e-12  # float rounding of a mean of terms of size 0.28
    assert worst < bound + 0.01  # the search came close, so the check had teeth


# --- identity with NLL - H ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("n_classes", [2, 3, 5])
def test_identity_nll_minus_entropy(n_classes):
    rng = np.random.default_rng(n_classes)
    probs = rng.dirichlet(np.full(n_classes, 0.7), size=3000)
    labels = rng.integers(0, n_classes, size=3000)
    got = ecd_terms(probs, labels, kind="probs")
    expected = _ecd_xlogy(probs, labels)
    # Relative rounding of a few log terms; atol 1e-13 for terms that cancel to ~0 (p near uniform), whose
    # absolute rounding is ~eps * |log p| ~ 1e-15.
    assert_allclose(got, expected, rtol=EXACT_TOL, atol=1e-13)
    assert ecd(probs, labels, kind="probs") == pytest.approx(expected.mean(), rel=EXACT_TOL, abs=1e-13)


@pytest.mark.parametrize("n_classes", [2, 3, 5])
def test_kinds_agree(n_classes):
    rng = np.random.default_rng(10 + n_classes)
    z = rng.normal(0, 3, size=(2000, n_classes))
    labels = rng.integers(0, n_classes, size=2000)
    by_logits = ecd_terms(z, labels, kind="logits")
    by_logprobs = ecd_terms(log_softmax(z, axis=1), labels, kind="logprobs")
    by_probs = ecd_terms(softmax(z, axis=1), labels, kind="probs")
    expected = _ecd_xlogy(softmax(z, axis=1), labels)
    # Same posteriors in three forms: they differ only by rounding of log/exp (relative ~1e-15, scaled by
    # |logit| <= ~20); atol 1e-12 for terms near zero.
    assert_allclose(by_logprobs, by_logits, rtol=EXACT_TOL, atol=1e-12)
    assert_allclose(by_probs, by_logits, rtol=EXACT_TOL, atol=1e-12)
    assert_allclose(by_logits, expected, rtol=EXACT_TOL, atol=1e-12)


def test_binary_closed_form_matches_general_form():
    # (p - y) logit p for K = 2 equals eq. 12 with the two-class entropy (notes/004 A20).
    rng = np.random.default_rng(7)
    p = rng.uniform(1e-6, 1 - 1e-6, size=5000)
    y = rng.integers(0, 2, size=5000)
    closed = (p - y) * logit(p)
    # Relative rounding of logit p; atol for p near 1/2 where both sides are ~0.
    assert_allclose(ecd_terms(_binary(p), y, kind="probs"), closed, rtol=1e-10, atol=1e-13)


# --- exact limits ---------------------------------------------------------------------------------------------------


def test_prediction_equal_to_label_is_exactly_zero_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        terms = ecd_terms(np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([1, 0]), kind="probs")
        general = ecd_terms(np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]), np.array([1, 0]), kind="probs")
        by_logprobs = ecd_terms(np.array([[-np.inf, 0.0], [0.0, -np.inf]]), np.array([1, 0]), kind="logprobs")
    assert np.all(terms == 0.0)
    assert np.all(general == 0.0)
    assert np.all(by_logprobs == 0.0)


def test_confident_wrong_prediction_is_plus_inf_not_nan():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        terms = ecd_terms(np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([0, 1]), kind="probs")
        general = ecd_terms(np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]), np.array([0, 1]), kind="probs")
    assert np.all(np.isposinf(terms))
    assert np.all(np.isposinf(general))
    assert np.isposinf(ecd(np.array([[0.0, 1.0], [0.5, 0.5]]), np.array([0, 1]), kind="probs"))


def test_extreme_logits_without_clipping():
    scores = np.array([[0.0, 1e4], [0.0, 1e4], [0.0, -1e4], [0.0, -1e4]])
    labels = np.array([1, 0, 0, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        terms = ecd_terms(scores, labels, kind="logits")
    assert np.all(np.isfinite(terms))
    # Correct and certain (p = 1 - e^-1e4): exactly 0 in floating point.
    assert terms[0] == 0.0
    assert terms[2] == 0.0
    # Wrong and certain: (p - y) logit p with p ~ 1 (or 0) and logit = +-1e4 -> 1e4 (e^-1e4 underflows).
    assert terms[1] == pytest.approx(1e4, rel=1e-12)
    assert terms[3] == pytest.approx(1e4, rel=1e-12)
    # A clip at 1e-5 would have capped these at 11.51; the logits carry the true size.
    assert terms.max() > 100


def test_large_but_representable_logits():
    # logit 30: p = sigmoid(30), 1 - p = e^-30 / (1 + e^-30); (p - y) logit p exactly, no clipping.
    t = np.array([30.0, 30.0, -30.0])
    y = np.array([1, 0, 0])
    terms = ecd_terms(np.column_stack([np.zeros(3), t]), y, kind="logits")
    # p - y written without cancellation: -(1 - p) = -sigmoid(-t) for y = 1, p = sigmoid(t) for y = 0.
    expected = np.where(y == 1, -expit(-t), expit(t)) * t
    assert_allclose(terms, expected, rtol=1e-12)  # rounding of log_softmax / exp at |t| = 30
    # The correct-side terms are tiny but negative and not lost to cancellation: -30 e^-30 (1 + O(e^-30)).
    assert terms[0] == pytest.approx(-30 * np.exp(-30.0), rel=1e-12)
    assert terms[2] == pytest.approx(-30 * np.exp(-30.0), rel=1e-12)


# --- symmetry and asymmetry -----------------------------------------------------------------------------------------


def test_label_symmetry():
    p = np.linspace(0.001, 0.999, 999)
    # f(p, 1) = f(1 - p, 0): mirror images; rounding of 1 - p and of the logs (~1e-15 relative).
    assert_allclose(_f(p, 1), _f(1 - p, 0), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize(("p", "ratio"), [(0.9, 9.0), (0.99, 99.0), (0.75, 3.0)])
def test_asymmetry_ratio(p, ratio):
    # f(1 - p, 1) / |f(p, 1)| = p / (1 - p) (notes/004 §3 item 8); rounding of 1 - p and of the logits.
    assert _f(1 - p, 1)[0] / abs(_f(p, 1)[0]) == pytest.approx(ratio, rel=1e-10)
    assert ratio == pytest.approx(p / (1 - p), rel=1e-12)


# --- zero under calibration -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dist", ["beta", "logistic"])
def test_zero_expectation_under_calibration(dist):
    rng = np.random.default_rng(42)
    n = 200_000
    p = rng.beta(0.5, 0.5, size=n) if dist == "beta" else expit(rng.uniform(-5, 5, size=n))
    p = np.clip(p, 1e-9, 1 - 1e-9)
    y = (rng.random(n) < p).astype(int)
    value = ecd(_binary(p), y, kind="probs")
    # Under calibration E[term | p] = 0 and Var[term | p] = p(1-p) logit(p)^2 (notes/004 §1.4, §3 item 2):
    # 4 SE makes a chance failure ~6e-5 per seed.
    se = np.sqrt(np.mean(p * (1 - p) * logit(p) ** 2) / n)
    assert abs(value) < 4 * se
    # Over-confident predictions from the same labels are detected (the check is not trivially loose).
    sharp = expit(2 * logit(p))
    assert ecd(_binary(sharp), y, kind="probs") > 10 * se


# --- bins -----------------------------------------------------------------------------------------------------------


def _miscalibrated(n=5000, seed=3):
    rng = np.random.default_rng(seed)
    t = rng.uniform(-4, 4, size=n)
    y = (rng.random(n) < expit(t)).astype(int)
    return expit(1.7 * t), y  # over-confident


@pytest.mark.parametrize("n_bins", [10, 15, 7])
def test_weighted_ecd_equals_overall_ecd(n_bins):
    p, y = _miscalibrated()
    table = entropic_bins(_binary(p), y, kind="probs", n_bins=n_bins)
    overall = ecd(_binary(p), y, kind="probs")
    assert overall > 0.05  # over-confident on purpose
    # Acceptance: weighted per-bin ECD equals overall ECD to machine precision (same sum regrouped).
    assert table.weighted("ecd") == pytest.approx(overall, abs=EXACT_TOL)
    assert table.counts.sum() == p.size
    assert table.counts.size == n_bins


def test_bin_statistics_by_definition():
    p, y = _miscalibrated(3000, seed=4)
    table = entropic_bins(_binary(p), y, kind="probs", n_bins=10)
    ids = np.minimum(np.floor(10 * p), 9).astype(int)  # [k/10, (k+1)/10), exact off the edges for random data
    terms = (p - y) * logit(p)
    for b in range(10):
        members = ids == b
        assert table.counts[b] == members.sum()
        if members.any():
            # Means of the same numbers: rounding only.
            assert table.mean_prediction[b] == pytest.approx(p[members].mean(), abs=EXACT_TOL)
            assert table.frequency[b] == pytest.approx(y[members].mean(), abs=EXACT_TOL)
            assert table.esce[b] == pytest.approx(y[members].mean() - p[members].mean(), abs=EXACT_TOL)
            # Library terms come from log-probs, these from logit(p): relative rounding ~1e-12 of terms <= 10.
            assert table.ecd[b] == pytest.approx(terms[members].mean(), abs=1e-10)
    assert_allclose(table.ece, np.abs(table.esce), rtol=0, atol=0)
    # ECE >= |ESCE| for the weighted sums (triangle inequality).
    assert table.weighted("ece") >= abs(table.weighted("esce"))
    # Weighted ESCE is mean(y) - mean(p) over all data.
    assert table.weighted("esce") == pytest.approx(y.mean() - p.mean(), abs=EXACT_TOL)


def test_resnet18_single_datum_bins():
    # Table II, ResNet18: bin 7 (index 6) is (0.62, 1) and bin 8 (index 7) is (0.7868, 1) (notes/004 §2.3 item 1).
    table = entropic_bins(_binary([0.62, 0.7868]), np.array([1, 1]), kind="probs", n_bins=10)
    assert table.counts[6] == 1 and table.counts[7] == 1
    # ECE and ESCE are 1 - p: exact up to rounding of p through log/exp (1e-12); ECD to the notes' 6 decimals.
    assert table.ece[6] == pytest.approx(0.38, abs=1e-12)
    assert table.esce[6] == pytest.approx(+0.38, abs=1e-12)
    assert table.ecd[6] == pytest.approx(-0.186028, abs=1e-6)
    assert table.ece[7] == pytest.approx(0.2132, abs=1e-12)
    assert table.esce[7] == pytest.approx(+0.2132, abs=1e-12)
    assert table.ecd[7] == pytest.approx(-0.278384, abs=1e-6)


def test_empty_bins_are_nan_and_skipped():
    p = np.array([0.05, 0.07, 0.95, 0.62])
    y = np.array([0, 1, 1, 1])
    table = entropic_bins(_binary(p), y, kind="probs", n_bins=10)
    empty = table.counts == 0
    assert empty.sum() == 7
    for name in ("mean_prediction", "frequency", "ece", "esce", "ecd"):
        values = getattr(table, name)
        assert np.all(np.isnan(values[empty]))
        assert np.all(np.isfinite(values[~empty]))
    for name in ("ece", "esce", "ecd"):
        assert np.isfinite(table.weighted(name))
    # By hand: bins 0 (0.05, 0.07; y 0, 1), 6 (0.62; 1), 9 (0.95; 1).
    esce = np.array([0.5 - 0.06, 1 - 0.62, 1 - 0.95])
    weights = np.array([2, 1, 1]) / 4
    assert table.weighted("esce") == pytest.approx(np.dot(weights, esce), abs=EXACT_TOL)
    assert table.weighted("ece") == pytest.approx(np.dot(weights, np.abs(esce)), abs=EXACT_TOL)
    assert table.weighted("ecd") == pytest.approx(np.mean((p - y) * logit(p)), abs=1e-12)


def test_bin_edges_are_left_closed_and_exact():
    # Exact k/10 goes to bin k ([k/10, (k+1)/10)); 1.0 goes to the last bin (notes/004 A8).
    p = np.arange(11) / 10
    p_written = np.array([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0])
    expected_counts = np.array([1] * 9 + [2])
    for values in (p, p_written):
        table = entropic_bins(_binary(values), np.zeros(11, dtype=int), kind="probs", n_bins=10)
        assert_allclose(table.counts, expected_counts, rtol=0, atol=0)
    only_03 = entropic_bins(_binary([0.3]), np.array([1]), kind="probs", n_bins=10)
    assert only_03.counts[3] == 1
    only_1 = entropic_bins(_binary([1.0]), np.array([1]), kind="probs", n_bins=10)
    assert only_1.counts[9] == 1
    assert only_1.ecd[9] == 0.0  # p = y exactly
    below = entropic_bins(_binary([0.3 - 1e-9]), np.array([1]), kind="probs", n_bins=10)
    assert below.counts[2] == 1
    # The same cases from logits: exp(log 0.3) is off 0.3 by rounding only and must bin like 0.3.
    from_logits = entropic_bins(np.column_stack([np.zeros(1), [logit(0.3)]]), np.array([1]), kind="logits")
    assert from_logits.counts[3] == 1


def test_intro_example_constant_prediction():
    # §3 item 11: constant p = 0.6 with every y = 1: ECE 0.4, ESCE +0.4, ECD -0.162186 (under-confident).
    n = 25
    table = entropic_bins(_binary(np.full(n, 0.6)), np.ones(n, dtype=int), kind="probs", n_bins=10)
    assert table.counts[6] == n
    # ECE/ESCE: 1 - 0.6 up to rounding of a mean of 25 copies (1e-12); ECD to the notes' 6 decimals.
    assert table.weighted("ece") == pytest.approx(0.4, abs=1e-12)
    assert table.weighted("esce") == pytest.approx(0.4, abs=1e-12)
    assert table.weighted("ecd") == pytest.approx(-0.162186, abs=1e-6)
    assert ecd(_binary(np.full(n, 0.6)), np.ones(n, dtype=int), kind="probs") == pytest.approx(-0.162186, abs=1e-6)


def test_bins_reject_non_binary_and_unknown_names():
    rng = np.random.default_rng(5)
    with pytest.raises(CalibInputError):
        entropic_bins(rng.dirichlet(np.ones(3), size=10), rng.integers(0, 3, size=10), kind="probs")
    table = entropic_bins(_binary([0.2, 0.8]), np.array([0, 1]), kind="probs")
    with pytest.raises(CalibInputError, match="name"):
        table.weighted("nll")
    with pytest.raises(CalibInputError):
        entropic_bins(_binary([0.2, 0.8]), np.array([0, 1]), kind="probs", n_bins=0)


# --- Gaussian ECD ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("k", "expected"), [(0.5, 1.5), (1.0, 0.0), (2.0, -0.75), (4.0, -1.125)])
def test_gaussian_ecd_scaled_covariance(k, expected):
    # notes/004 §1.3: true covariance I, predicted k I in d = 3 gives (d/2)(1/k - 1).
    d, n = 3, 200_000
    assert expected == pytest.approx(d / 2 * (1 / k - 1), abs=1e-15)
    rng = np.random.default_rng(int(10 * k))
    errors = rng.standard_normal((n, d))
    value = gaussian_ecd(errors, k * np.eye(d))
    # Per datum (NEES - d)/2 with NEES = chi2_d / k: sd = sqrt(2d) / (2k); 4 standard errors over N.
    se = np.sqrt(2 * d) / (2 * k) / np.sqrt(n)
    assert value == pytest.approx(expected, abs=4 * se)
    # Per-datum covariances (N, d, d) give the same number as a shared (d, d).
    covs = np.broadcast_to(k * np.eye(d), (1000, d, d))
    assert gaussian_ecd(errors[:1000], covs) == pytest.approx(gaussian_ecd(errors[:1000], k * np.eye(d)), abs=1e-12)


def test_gaussian_ecd_matches_nll_minus_entropy():
    rng = np.random.default_rng(11)
    d, n = 4, 40
    mus = rng.normal(size=(n, d))
    xs = mus + rng.normal(scale=1.5, size=(n, d))
    covs = []
    for _ in range(n):
        a = rng.normal(size=(d, d))
        covs.append(a @ a.T + 0.3 * np.eye(d))
    covs = np.array(covs)
    direct = np.mean(
        [
            -multivariate_normal(mean=mus[i], cov=covs[i]).logpdf(xs[i])
            - multivariate_normal(mean=mus[i], cov=covs[i]).entropy()
            for i in range(n)
        ]
    )
    # Two factorisations of the same quantities (solve vs eigendecomposition): rounding ~1e-13 at these sizes.
    assert gaussian_ecd(xs - mus, covs) == pytest.approx(direct, abs=1e-10)


def test_gaussian_ecd_one_dimensional_nees():
    # d = 1: (e^2 / P - 1) / 2 by hand.
    e = np.array([[1.0], [2.0], [0.5]])
    p = np.array([[[2.0]], [[1.0]], [[0.25]]])
    expected = np.mean((e[:, 0] ** 2 / p[:, 0, 0] - 1) / 2)
    assert gaussian_ecd(e, p) == pytest.approx(expected, abs=1e-15)


@pytest.mark.parametrize(
    ("errors", "cov"),
    [
        (np.ones(3), np.eye(3)),  # errors not (N, d)
        (np.ones((2, 2, 2)), np.eye(2)),  # errors 3-D
        (np.ones((3, 2)), np.zeros((2, 2))),  # singular
        (np.ones((3, 2)), np.array([[1.0, 1.0], [1.0, 1.0]])),  # singular, rank 1
    ],
    ids=["errors-1d", "errors-3d", "zero-cov", "rank-1-cov"],
)
def test_gaussian_ecd_rejects_bad_input(errors, cov):
    with pytest.raises(CalibInputError):
        gaussian_ecd(errors, cov)


@pytest.mark.parametrize(
    "cov",
    [np.array([[1.0, 0.0], [0.0, -1.0]]), np.array([[1.0, 2.0], [0.0, 1.0]])],
    ids=["indefinite", "non-symmetric"],
)
def test_gaussian_ecd_rejects_non_spd(cov):
    # Only symmetric positive definite covariances are Gaussian covariances; diag(1, -1) is invertible, so
    # a plain solve would return a meaningless number.
    with pytest.raises(CalibInputError):
        gaussian_ecd(np.ones((3, 2)), cov)


@pytest.mark.parametrize(
    ("errors", "cov"),
    [
        (np.ones((3, 2)), np.eye(3)),  # covariance of the wrong dimension
        (np.ones((0, 2)), np.eye(2)),  # no errors: a mean of nothing
        (np.array([[np.nan, 0.0], [1.0, 1.0]]), np.eye(2)),  # NaN must not pass through silently
    ],
    ids=["cov-wrong-dimension", "no-errors", "nan-error"],
)
def test_gaussian_ecd_rejects_other_bad_input(errors, cov):
    # calib.validation: every rejection is a CalibInputError whose message names the argument.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(CalibInputError):
            gaussian_ecd(errors, cov)


# --- temperature ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("temperature", "population"),
    [(0.25, 0.5846), (0.5, 0.2307), (0.9, 0.0303), (1.0, 0.0), (1.5, -0.0968), (3.0, -0.1600), (10.0, -0.0888)],
)
def test_temperature_population_values(temperature, population):
    # notes/004 §3 items 3-4: t ~ U(-5, 5), y ~ Bern(sigmoid t), prediction sigmoid(t / T).
    rng = np.random.default_rng(2025)
    n = 200_000
    t = rng.uniform(-5, 5, size=n)
    y = (rng.random(n) < expit(t)).astype(int)
    terms = ecd_terms(np.column_stack([np.zeros(n), t / temperature]), y, kind="logits")
    value = terms.mean()
    # Monte Carlo: 4 standard errors of the mean (sample sd of the terms / sqrt N) plus 5e-5 for the notes'
    # 4-decimal rounding.
    se = terms.std(ddof=1) / np.sqrt(n)
    assert value == pytest.approx(population, abs=4 * se + 5e-5)
    assert ecd(np.column_stack([np.zeros(n), t / temperature]), y, kind="logits") == pytest.approx(value, abs=1e-15)
    # Sign: over-confident (T < 1) positive, under-confident (T > 1) negative, and clearly so.
    if temperature < 1:
        assert value > 4 * se
    elif temperature > 1:
        assert value < -4 * se
