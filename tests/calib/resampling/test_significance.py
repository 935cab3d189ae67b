"""Tests of calib.resampling.significance: Pearson chi-squared, Hosmer-Lemeshow and the resampling test.

Golden values: survey Silva Filho et al. (2023), Sect. 6, Table 8 (multinomial HL on the Table 3
toy data) and Fig. 21 / Algorithm 1 (resampling test), recomputed in notes/001 §6.4-6.5 and App. A.
"""

import math
import warnings

import numpy as np
import pytest
from scipy.stats import chi2

from calib.resampling import significance
from calib.resampling.significance import (
    HosmerLemeshowResult,
    SmallSampleWarning,
    hosmer_lemeshow,
    multinomial_hosmer_lemeshow,
    pearson_chi2,
    percentile_bins,
    resampling_test,
    sample_labels,
)
from calib.validation import CalibInputError

THIRD = 1 / 3
# Table 3 (notes/001 §5.1): ids 1-10 have class 1, 11-20 class 2, 21-30 class 3; ids 7-8 use exact 1/3.
TOY_SCORES = np.array(
    [
        [1.0, 0.0, 0.0], [0.9, 0.1, 0.0], [0.8, 0.1, 0.1], [0.7, 0.1, 0.2], [0.6, 0.3, 0.1],
        [0.4, 0.1, 0.5], [THIRD, THIRD, THIRD], [THIRD, THIRD, THIRD], [0.2, 0.4, 0.4], [0.1, 0.5, 0.4],
        [0.8, 0.2, 0.0], [0.7, 0.0, 0.3], [0.5, 0.2, 0.3], [0.4, 0.4, 0.2], [0.4, 0.2, 0.4],
        [0.3, 0.4, 0.3], [0.2, 0.3, 0.5], [0.1, 0.6, 0.3], [0.1, 0.3, 0.6], [0.0, 0.2, 0.8],
        [0.8, 0.2, 0.0], [0.8, 0.1, 0.1], [0.8, 0.0, 0.2], [0.6, 0.0, 0.4], [0.3, 0.0, 0.7],
        [0.2, 0.6, 0.2], [0.2, 0.4, 0.4], [0.0, 0.4, 0.6], [0.0, 0.3, 0.7], [0.0, 0.3, 0.7],
    ]
)  # fmt: skip
TOY_LABELS = np.repeat([0, 1, 2], 10)


def classwise_ece(probs, labels, n_bins=5):
    """Classwise ECE (survey Defs. 3-5) with equal-width right-closed bins [0, .2], (.2, .4], ...

    The 1e-12 shift puts scores equal to an edge in the lower bin despite float edges such as
    0.30000000000000004 (notes/001 §11 item 2). Empty bins contribute nothing.
    """
    n, k = probs.shape
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    total = 0.0
    for j in range(k):
        s = probs[:, j]
        bins = np.clip(np.searchsorted(edges, s - 1e-12, side="left") - 1, 0, n_bins - 1)
        # sum over a bin of (s - y) is n_m (mean s - freq); |.| / N gives the n_m / N weighting
        gaps = np.bincount(bins, weights=s - (labels == j), minlength=n_bins)
        total += np.abs(gaps).sum() / n
    return total / k


def _brier(probs, labels):
    onehot = np.eye(probs.shape[1])[labels]
    return float(np.mean(np.sum((probs - onehot) ** 2, axis=1)))


# --- multinomial Hosmer-Lemeshow: Table 8 ------------------------------------------------------------


def _table8():
    with pytest.warns(SmallSampleWarning, match="400"):
        return multinomial_hosmer_lemeshow(TOY_SCORES, TOY_LABELS, kind="probs", n_bins=5)


def test_table8_statistic_df_and_p_value():
    result = _table8()
    assert isinstance(result, HosmerLemeshowResult)
    assert result.statistic == pytest.approx(25.3004, abs=1e-3)
    assert result.df == 6
    assert result.p_value == pytest.approx(3.0037e-4, rel=1e-3)
    assert result.p_value == pytest.approx(chi2.sf(result.statistic, 6), rel=1e-12)


def test_table8_bins_edges_and_tables():
    result = _table8()
    np.testing.assert_array_equal(result.counts, [7, 5, 7, 7, 4])
    np.testing.assert_allclose(result.edges, [0.0, 0.2, 0.56, 0.7, 0.9, 1.0], atol=1e-12)
    np.testing.assert_array_equal(result.observed, [[3, 1, 3], [2, 2, 1], [3, 3, 1], [2, 3, 2], [0, 1, 3]])
    expected = [
        [5.9, 0.7, 0.4],
        [3.1, 0.6, 1.3],
        [37 / 15, 53 / 30, 83 / 30],  # 2.4667, 1.7667, 2.7667: the two 1/3 rows fall in B3
        [1.1, 3.1, 2.8],
        [0.0, 1.2, 2.8],
    ]
    np.testing.assert_allclose(result.expected, expected, atol=1e-12)
    assert result.n_bins_used == 5


def test_table8_skips_the_zero_over_zero_cell():
    # B5, class 1 has O = E = 0; one term per cell (eq. 21 prints it twice, which would give 50.6)
    result = _table8()
    o, e = result.observed, result.expected
    live = e > 0
    assert not live[4, 0]
    assert result.statistic == pytest.approx(np.sum((o[live] - e[live]) ** 2 / e[live]), rel=1e-12)


def test_small_sample_warning_only_below_400():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), size=400)
    labels = sample_labels(probs, 1, rng)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        multinomial_hosmer_lemeshow(probs, labels, kind="probs")
    with pytest.warns(SmallSampleWarning):
        multinomial_hosmer_lemeshow(probs[:399], labels[:399], kind="probs")


# --- binary Hosmer-Lemeshow -------------------------------------------------------------------------


def test_binary_hl_hand_computed_example():
    p = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    labels = np.array([0, 1, 0, 0, 1, 1])
    result = hosmer_lemeshow(np.column_stack([1 - p, p]), labels, kind="probs", n_bins=3)
    # edges at the 0/33.3/66.7/100th percentiles: 0.1, 0.2 + (2/3)0.1, 0.4 + (1/3)0.1, 0.6 -> bins of 2
    np.testing.assert_allclose(result.edges, [0.1, 0.8 / 3, 1.3 / 3, 0.6], atol=1e-15)
    np.testing.assert_array_equal(result.counts, [2, 2, 2])
    # bin 1: O+ = 1, E+ = 0.3; bin 2: O+ = 0, E+ = 0.7; bin 3: O+ = 2, E+ = 1.1 (negatives: n - those)
    expected = (0.7**2 / 0.3 + 0.7**2 / 1.7) + (0.7**2 / 0.7 + 0.7**2 / 1.3) + (0.9**2 / 1.1 + 0.9**2 / 0.9)
    assert result.statistic == pytest.approx(expected, rel=1e-12)
    assert result.df == 1
    assert result.p_value == pytest.approx(chi2.sf(expected, 1), rel=1e-12)
    np.testing.assert_allclose(result.observed, [[1, 1], [2, 0], [0, 2]])
    np.testing.assert_allclose(result.expected, [[1.7, 0.3], [1.3, 0.7], [0.9, 1.1]], atol=1e-15)


def test_binary_hl_equals_multinomial_hl_for_two_classes():
    rng = np.random.default_rng(5)
    p = rng.uniform(size=600)
    labels = (rng.uniform(size=600) < p**1.3).astype(int)
    scores = np.column_stack([1 - p, p])
    binary = hosmer_lemeshow(scores, labels, kind="probs", n_bins=8)
    multi = multinomial_hosmer_lemeshow(scores, labels, kind="probs", n_bins=8)
    assert binary.statistic == pytest.approx(multi.statistic, rel=1e-10)
    assert binary.df == multi.df == 6
    np.testing.assert_array_equal(binary.counts, multi.counts)


def _binary_problem(seed, n=5000):
    rng = np.random.default_rng(seed)
    p = rng.beta(2.0, 2.0, size=n)
    labels = (rng.uniform(size=n) < p).astype(int)
    return p, labels


@pytest.mark.parametrize("seed", range(5))
def test_binary_hl_does_not_reject_calibrated_scores(seed):
    # labels drawn from the scores themselves; p-values for seeds 0-4 are 0.60, 0.63, 0.77, 0.31, 0.39
    p, labels = _binary_problem(seed)
    result = hosmer_lemeshow(np.column_stack([1 - p, p]), labels, kind="probs")
    assert result.df == 8
    assert result.p_value > 0.01


@pytest.mark.parametrize("seed", range(3))
def test_binary_hl_rejects_overconfident_scores(seed):
    p, labels = _binary_problem(seed)
    over = 1 / (1 + np.exp(-3 * np.log(p / (1 - p))))  # slope 3 on the logit scale
    result = hosmer_lemeshow(np.column_stack([1 - over, over]), labels, kind="probs")
    assert result.p_value < 1e-6


def test_percentile_bins_are_right_closed_and_ties_empty_a_bin():
    values = np.array([0.0, 0.2, 0.2, 0.2, 0.4, 0.6])
    edges, index = percentile_bins(values, 3)
    # 33.3th percentile interpolates between two 0.2s; 66.7th between 0.2 and 0.4
    np.testing.assert_allclose(edges, [0.0, 0.2, 0.2 + 0.2 / 3, 0.6], atol=1e-15)
    np.testing.assert_array_equal(index, [0, 0, 0, 0, 2, 2])


def test_hl_degrees_of_freedom_count_non_empty_bins():
    p = np.repeat([0.1, 0.3, 0.5, 0.7], 25)
    labels = np.zeros(100, dtype=int)
    labels[::2] = 1
    result = hosmer_lemeshow(np.column_stack([1 - p, p]), labels, kind="probs", n_bins=10)
    assert result.n_bins_used == 4
    assert result.counts.sum() == 100
    assert result.df == 2


def test_hl_rejects_bad_arguments():
    p = np.linspace(0.05, 0.95, 50)
    scores = np.column_stack([1 - p, p])
    labels = np.arange(50) % 2
    for bad in (2, 0, -1, 2.5, True):
        with pytest.raises(CalibInputError, match="n_bins"):
            hosmer_lemeshow(scores, labels, kind="probs", n_bins=bad)
        with pytest.raises(CalibInputError, match="n_bins"):
            multinomial_hosmer_lemeshow(scores, labels, kind="probs", n_bins=bad)
    with pytest.raises(CalibInputError, match="multinomial_hosmer_lemeshow"):
        hosmer_lemeshow(TOY_SCORES, TOY_LABELS, kind="probs")
    constant = np.full((50, 2), 0.5)
    with pytest.raises(CalibInputError, match="non-empty"):
        hosmer_lemeshow(constant, labels, kind="probs")
    with pytest.raises(CalibInputError, match="labels"):
        hosmer_lemeshow(scores, labels[:-1], kind="probs")


# --- Pearson chi-squared ------------------------------------------------------------------------------


def _pearson_example():
    # group "a": 2 x (0.5, 0.5, 0), labels 0, 0 -> O = (2, 0, 0), E = (1, 1, 0): 1 + 1, class 3 is 0/0
    # group "b": 5 x (0.2, 0.6, 0.2), labels 0, 0, 1, 1, 2 -> O = (2, 2, 1), E = (1, 3, 1): 1 + 1/3 + 0
    scores = np.array([[0.5, 0.5, 0.0]] * 2 + [[0.2, 0.6, 0.2]] * 5)
    labels = np.array([0, 0, 0, 0, 1, 1, 2])
    groups = np.array(["a", "a", "b", "b", "b", "b", "b"])
    return scores, labels, groups


def test_pearson_chi2_hand_example():
    scores, labels, groups = _pearson_example()
    result = pearson_chi2(scores, labels, kind="probs", groups=groups)
    assert result.statistic == pytest.approx(10 / 3, rel=1e-12)
    assert result.df == 4  # G (K - 1) = 2 x 2
    assert result.p_value == pytest.approx(chi2.sf(10 / 3, 4), rel=1e-12)
    np.testing.assert_array_equal(result.groups, ["a", "b"])
    np.testing.assert_array_equal(result.observed, [[2, 0, 0], [2, 2, 1]])
    np.testing.assert_allclose(result.expected, [[1, 1, 0], [1, 3, 1]], atol=1e-15)


def test_pearson_chi2_groups_by_covariate_rows():
    scores, labels, groups = _pearson_example()
    covariates = np.where(groups[:, None] == "a", [[3, 1]], [[2, 2]])
    by_rows = pearson_chi2(scores, labels, kind="probs", groups=covariates)
    assert by_rows.statistic == pytest.approx(10 / 3, rel=1e-12)
    assert by_rows.df == 4


def test_pearson_chi2_is_zero_for_matching_counts_and_infinite_for_impossible_labels():
    scores = np.array([[0.25, 0.75]] * 4)
    assert pearson_chi2(scores, [0, 1, 1, 1], kind="probs", groups=np.zeros(4)).statistic == 0.0
    impossible = np.array([[1.0, 0.0]] * 3)
    result = pearson_chi2(impossible, [0, 0, 1], kind="probs", groups=np.zeros(3))
    assert result.statistic == np.inf
    assert result.p_value == 0.0


def test_pearson_chi2_rejects_bad_groups():
    scores, labels, groups = _pearson_example()
    with pytest.raises(CalibInputError, match="groups"):
        pearson_chi2(scores, labels, kind="probs", groups=groups[:-1])
    with pytest.raises(CalibInputError, match="groups"):
        pearson_chi2(scores, labels, kind="probs", groups=np.zeros((7, 2, 2)))


# --- resampling test (Algorithm 1) -------------------------------------------------------------------


def test_local_classwise_ece_reproduces_the_toy_value():
    assert classwise_ece(TOY_SCORES, TOY_LABELS) == pytest.approx(0.178519, abs=1e-6)


def test_resampling_test_on_the_toy_data():
    result = resampling_test(classwise_ece, TOY_SCORES, kind="probs", labels=TOY_LABELS, n_resamples=1000, seed=0)
    assert result.statistic == pytest.approx(0.178519, abs=1e-6)
    assert 0.005 <= result.p_value <= 0.03  # survey Fig. 21: 0.016; seed 0 gives 0.009
    assert result.null_statistics.shape == (1000,)
    # notes/001 §6.5: the null has mean ~0.110 and sd ~0.027
    assert 0.09 < result.null_statistics.mean() < 0.13
    assert result.p_value == np.mean(result.null_statistics > result.statistic)
    n_ge = np.count_nonzero(result.null_statistics >= result.statistic)
    assert result.p_value_plus_one == pytest.approx((1 + n_ge) / 1001, rel=1e-15)
    assert result.p_value_plus_one >= result.p_value


def test_resampling_test_is_deterministic_per_seed():
    kwargs = {"kind": "probs", "labels": TOY_LABELS, "n_resamples": 200}
    a = resampling_test(classwise_ece, TOY_SCORES, seed=7, **kwargs)
    b = resampling_test(classwise_ece, TOY_SCORES, seed=7, **kwargs)
    c = resampling_test(classwise_ece, TOY_SCORES, seed=8, **kwargs)
    np.testing.assert_array_equal(a.null_statistics, b.null_statistics)
    assert a.p_value == b.p_value
    assert not np.array_equal(a.null_statistics, c.null_statistics)


def test_resampling_does_not_depend_on_the_block_size(monkeypatch):
    kwargs = {"kind": "probs", "labels": TOY_LABELS, "n_resamples": 50, "seed": 3}
    whole = resampling_test(classwise_ece, TOY_SCORES, **kwargs)
    monkeypatch.setattr(significance, "_BLOCK_CELLS", 7 * TOY_LABELS.size)
    blocked = resampling_test(classwise_ece, TOY_SCORES, **kwargs)
    np.testing.assert_array_equal(whole.null_statistics, blocked.null_statistics)


def test_p_value_conventions_on_a_constant_statistic():
    # every resampled value ties the observed one: strict ">" gives 0, the +1 convention gives 1
    result = resampling_test(lambda p, y: 0.0, TOY_SCORES, kind="probs", labels=TOY_LABELS, n_resamples=20)
    assert result.p_value == 0.0
    assert result.p_value_plus_one == 1.0


def test_resampling_test_does_not_reject_labels_drawn_from_the_scores():
    rng = np.random.default_rng(11)
    probs = rng.dirichlet(np.ones(4) * 0.7, size=500)
    labels = sample_labels(probs, 1, rng)[0]
    result = resampling_test(_brier, probs, kind="probs", labels=labels, n_resamples=300, seed=1)
    assert result.p_value > 0.05


def test_statistic_receives_the_callers_probabilities_and_int_labels():
    seen = []

    def record(p, y):
        seen.append((p, y))
        return 0.0

    resampling_test(record, TOY_SCORES, kind="probs", labels=TOY_LABELS, n_resamples=3)
    assert len(seen) == 4
    np.testing.assert_array_equal(seen[0][0], TOY_SCORES)  # passed unchanged, e.g. 0.6 stays 0.6
    np.testing.assert_array_equal(seen[0][1], TOY_LABELS)
    for p, y in seen[1:]:
        assert y.dtype == np.int64 and y.shape == (30,)
        assert np.all(p[np.arange(30), y] > 0)  # zero-probability classes are never drawn


def test_rows_off_by_rounding_are_renormalised_for_sampling_only():
    probs = np.array([[0.5, 0.49995], [0.79998, 0.2]])  # row sums 0.99995 and 0.99998 pass validation
    seen = []
    resampling_test(lambda p, y: seen.append(p) or 0.0, probs, kind="probs", labels=[0, 1], n_resamples=2)
    np.testing.assert_array_equal(seen[0], probs)
    draws = sample_labels(probs, 200000, np.random.default_rng(0))
    freq = (draws == 1).mean(axis=0)
    np.testing.assert_allclose(freq, probs[:, 1] / probs.sum(axis=1), atol=0.004)  # sd <= 0.0012
    # the last class is reachable with its renormalised probability, never beyond the row
    assert draws.max() == 1


def test_sample_labels_frequencies_match_the_probabilities():
    probs = np.array([[0.5, 0.25, 0.25, 0.0], [0.0, 0.0, 0.0, 1.0], [0.1, 0.0, 0.6, 0.3]])
    draws = sample_labels(probs, 40000, np.random.default_rng(2))
    assert draws.shape == (40000, 3) and draws.dtype == np.int64
    freq = np.stack([(draws == j).mean(axis=0) for j in range(4)], axis=1)
    np.testing.assert_allclose(freq, probs, atol=0.01)  # sd <= 0.0025 per cell
    assert np.all(probs[np.arange(3), draws] > 0)


def test_bisection_sampler_agrees_with_the_class_scan(monkeypatch):
    rng = np.random.default_rng(4)
    probs = rng.dirichlet(np.ones(100), size=40)
    probs[:, ::3] = 0.0
    probs /= probs.sum(axis=1, keepdims=True)
    bisected = sample_labels(probs, 300, np.random.default_rng(9))  # K = 100 > 64: bisection
    monkeypatch.setattr(significance, "_LINEAR_SCAN_MAX_K", 1000)
    scanned = sample_labels(probs, 300, np.random.default_rng(9))
    np.testing.assert_array_equal(bisected, scanned)
    assert np.all(probs[np.arange(40), bisected] > 0)


def test_resampling_accepts_logits():
    logits = np.log(np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1], [0.1, 0.1, 0.8]])) + 1.0
    result = resampling_test(_brier, logits, kind="logits", labels=[2, 0, 1], n_resamples=10, seed=0)
    assert result.null_statistics.shape == (10,)


def test_resampling_rejects_bad_arguments():
    kwargs = {"kind": "probs", "labels": TOY_LABELS}
    with pytest.raises(CalibInputError, match="statistic"):
        resampling_test("classwise_ece", TOY_SCORES, **kwargs)
    for bad in (0, -5, 1.5):
        with pytest.raises(CalibInputError, match="n_resamples"):
            resampling_test(classwise_ece, TOY_SCORES, n_resamples=bad, **kwargs)
    with pytest.raises(CalibInputError, match="statistic"):
        resampling_test(lambda p, y: np.nan, TOY_SCORES, **kwargs)
    with pytest.raises(CalibInputError, match="statistic"):
        resampling_test(lambda p, y: np.ones(3), TOY_SCORES, **kwargs)
    with pytest.raises(CalibInputError, match="labels"):
        resampling_test(classwise_ece, TOY_SCORES, kind="probs", labels=TOY_LABELS[:5])


# --- Spiegelhalter's Z -------------------------------------------------------------------------------


def test_spiegelhalter_z_is_the_standardized_brier_score():
    """Spiegelhalter (1986) defines Z from the Brier score B = sum (y - p)^2: (B - E0[B]) / sd0(B) with
    E0[B] = sum p (1 - p) and var0(B) = sum (1 - 2p)^2 p (1 - p) under calibration."""
    rng = np.random.default_rng(0)
    p = rng.uniform(size=500)
    y = (rng.uniform(size=500) < p**1.2).astype(float)
    brier, expected = np.sum((y - p) ** 2), np.sum(p * (1 - p))
    z = (brier - expected) / np.sqrt(np.sum((1 - 2 * p) ** 2 * p * (1 - p)))
    result = significance.spiegelhalter_z(p, y)
    # the same sums arranged differently (500 terms: < 1e-13 relative); the reference p-value forms
    # 1 - Phi by subtraction, which loses about 2^-53 / p relative, below 1e-9 for p > 1e-7
    assert result.statistic == pytest.approx(z, rel=1e-12)
    assert result.p_value == pytest.approx(2 * (1 - 0.5 * (1 + math.erf(abs(z) / math.sqrt(2)))), rel=1e-9)


def test_spiegelhalter_z_has_its_size_under_calibration():
    """2000 calibrated data sets of 200: the rejection rate at 5 % is within 3 binomial standard errors
    (0.0146) of 0.05."""
    rng = np.random.default_rng(1)
    p = rng.uniform(0.02, 0.98, size=(2000, 200))
    y = (rng.uniform(size=p.shape) < p).astype(float)
    rejected = [significance.spiegelhalter_z(p[i], y[i]).p_value < 0.05 for i in range(p.shape[0])]
    assert abs(np.mean(rejected) - 0.05) <= 3 * np.sqrt(0.05 * 0.95 / 2000)


def test_spiegelhalter_z_detects_overconfidence_and_names_bad_input():
    rng = np.random.default_rng(2)
    p = rng.uniform(size=2000)
    y = (rng.uniform(size=2000) < 0.5 + 0.5 * (p - 0.5)).astype(float)  # scores twice too spread out
    assert significance.spiegelhalter_z(p, y).p_value < 1e-6
    with pytest.raises(CalibInputError, match="variance is 0"):
        significance.spiegelhalter_z([0.0, 0.5, 1.0], [0, 1, 1])
    with pytest.raises(CalibInputError, match="outcome must hold 0 or 1"):
        significance.spiegelhalter_z([0.2, 0.4], [0, 0.5])
