"""The survey's calibration-error family and binning (Silva Filho et al. 2023, Defs. 1-6; notes/001 App. A)."""

import numpy as np
import pytest

from calib.calibration_errors.binned import BinnedCalibrationError, reliability_bins
from calib.calibration_errors.binning import (
    bin_ids,
    equal_mass_bin_ids,
    equal_width_bin_ids,
    equal_width_edges,
)
from calib.data.toys import ece_toy, footnote2_toy
from calib.validation import CalibInputError

GOLDEN = 1e-6  # notes/001 App. A values are given to 6 decimals


def test_table3_toy_golden_values():
    s, y = ece_toy()
    assert [
        BinnedCalibrationError("classwise", n_bins=5).reliability(s, y, kind="probs")[j].ece() for j in range(3)
    ] == pytest.approx([0.187778, 0.145556, 0.202222], abs=GOLDEN)
    assert BinnedCalibrationError("classwise", n_bins=5)(s, y, kind="probs") == pytest.approx(0.178519, abs=GOLDEN)
    assert BinnedCalibrationError("classwise", n_bins=5, norm="max")(s, y, kind="probs") == pytest.approx(
        0.485714, abs=GOLDEN
    )
    assert BinnedCalibrationError("top_label", n_bins=5)(s, y, kind="probs") == pytest.approx(0.211111, abs=GOLDEN)
    assert BinnedCalibrationError("top_label", n_bins=5, norm="max")(s, y, kind="probs") == pytest.approx(
        0.3, abs=GOLDEN
    )


def test_table3_bins_hold_the_printed_counts():
    # Tables 4-6: a score of exactly 0.2 / 0.4 / 0.6 / 0.8 stays in the lower bin (right-closed).
    s, y = ece_toy()
    counts = [
        BinnedCalibrationError("classwise", n_bins=5).reliability(s, y, kind="probs")[j].counts.tolist()
        for j in range(3)
    ]
    assert counts == [[11, 7, 3, 7, 2], [15, 12, 3, 0, 0], [11, 11, 4, 4, 0]]


def test_logprobs_give_the_same_bins_as_probabilities():
    s, y = ece_toy()
    with np.errstate(divide="ignore"):
        logs = np.log(s)
    assert BinnedCalibrationError("classwise", n_bins=5)(logs, y, kind="logprobs") == pytest.approx(0.178519, abs=1e-4)


def test_footnote2_is_classwise_calibrated_but_not_confidence_calibrated():
    s, y = footnote2_toy()
    assert BinnedCalibrationError("classwise", n_bins=10)(s, y, kind="probs") == pytest.approx(0.0, abs=1e-12)
    conf = reliability_bins(s.max(axis=1), s.argmax(axis=1) == y, n_bins=10, closed="right")
    full = conf.occupied
    assert conf.mean_confidence[full] == pytest.approx([0.4, 0.6])
    assert conf.frequency[full] == pytest.approx([0.35, 0.6])


def test_constant_prior_predictor_has_zero_ece():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 300)
    prior = np.bincount(y, minlength=3) / y.size
    scores = np.tile(prior, (300, 1))
    assert BinnedCalibrationError("classwise", n_bins=15)(scores, y, kind="probs") == pytest.approx(0.0, abs=1e-12)
    assert (
        BinnedCalibrationError("binary", n_bins=15)(
            np.column_stack([1 - scores[:, 0], scores[:, 0]]), (y == 0).astype(int), kind="probs"
        )
        < 1e-12
    )


def test_norms_average_and_debiased_on_a_hand_case():
    # bins (0, .5]: scores .2, .4 labels 0, 1 -> mean .3, freq .5, gap .2; (.5, 1]: .9 label 1 -> gap .1
    s = np.array([[0.8, 0.2], [0.6, 0.4], [0.1, 0.9]])
    y = [0, 1, 1]
    kw = {"n_bins": 2}

    def ece(**settings):
        return BinnedCalibrationError("binary", **kw, **settings)(s, y, kind="probs")

    assert ece() == pytest.approx((2 * 0.2 + 0.1) / 3)
    assert ece(norm="squared") == pytest.approx((2 * 0.04 + 0.01) / 3)
    assert ece(norm="l2") == pytest.approx(np.sqrt((2 * 0.04 + 0.01) / 3))
    assert ece(average=True) == pytest.approx(0.15)
    assert ece(norm="max") == pytest.approx(0.2)
    # debiased: bin 1 subtracts .5 * .5 / (2 - 1) = .25; the singleton bin keeps its squared gap
    assert BinnedCalibrationError("binary", norm="squared", debiased=True, **kw)(s, y, kind="probs") == pytest.approx(
        (2 * (0.04 - 0.25) + 0.01) / 3
    )
    assert (
        BinnedCalibrationError("binary", norm="l2", debiased=True, **kw)(s, y, kind="probs") == 0.0
    )  # negative estimate clipped at 0
    with pytest.raises(CalibInputError, match="debiased"):
        BinnedCalibrationError("binary", debiased=True, **kw)


def test_debiased_l2_is_nearly_unbiased_for_calibrated_scores():
    # labels drawn from the scores: the plug-in squared CE is biased upward by about sum_b ybar(1-ybar)/N
    rng = np.random.default_rng(1)
    plug_in, debiased = [], []
    for _ in range(50):
        p = rng.random(400)
        y = (rng.random(400) < p).astype(int)
        s = np.column_stack([1 - p, p])
        plug_in.append(BinnedCalibrationError("binary", n_bins=10, norm="squared")(s, y, kind="probs"))
        debiased.append(BinnedCalibrationError("binary", n_bins=10, norm="squared", debiased=True)(s, y, kind="probs"))
    assert np.mean(plug_in) > 0.004  # bias of order M / (4 N) ~ 0.006
    assert abs(np.mean(debiased)) < 0.0015  # true squared CE is 0 up to within-bin spread


def test_exact_edges_keep_decimal_scores_on_their_edge():
    assert equal_width_edges(10)[3] == 0.3
    assert equal_width_bin_ids([0.3, 0.7, 0.1], 10, closed="right").tolist() == [2, 6, 0]
    assert equal_width_bin_ids([0.3, 0.7, 0.1], 10, closed="left").tolist() == [3, 7, 1]
    # a score one float above the edge (what a trip through logarithms can give) counts as on it
    assert equal_width_bin_ids([np.nextafter(0.2, 1.0)], 10, closed="right").tolist() == [1]


def test_equal_mass_bins_have_equal_counts_and_keep_ties_together():
    v = np.linspace(0.0, 1.0, 100)
    assert np.bincount(equal_mass_bin_ids(v, 4)).tolist() == [25, 25, 25, 25]
    tied = np.array([0.1] * 6 + [0.5] * 2 + [0.9] * 2)
    ids = equal_mass_bin_ids(tied, 5)
    for value in (0.1, 0.5, 0.9):
        assert np.unique(ids[tied == value]).size == 1
    assert ids[tied == 0.1][0] < ids[tied == 0.5][0] < ids[tied == 0.9][0]
    shuffled = np.random.default_rng(0).permutation(tied)
    assert np.array_equal(np.sort(equal_mass_bin_ids(shuffled, 5)), np.sort(ids))


def test_bad_binning_arguments():
    with pytest.raises(CalibInputError, match="strategy"):
        bin_ids([0.1], 3, strategy="kmeans")
    with pytest.raises(CalibInputError, match=r"\[0, 1\]"):
        equal_mass_bin_ids([0.1, 1.2], 2)


def test_clopper_pearson_intervals_closed_forms():
    # n = 10, k = 0: high = 1 - (alpha/2)^(1/n); k = n: low = (alpha/2)^(1/n); k = 5 symmetric about 1/2
    bins = reliability_bins(
        np.r_[np.full(10, 0.05), np.full(10, 0.95), np.full(10, 0.55)],
        np.r_[np.zeros(10), np.ones(10), np.repeat([0, 1], 5)],
        n_bins=10,
        closed="right",
    )
    low, high = bins.frequency_intervals(0.95)
    assert low[0] == 0.0 and high[0] == pytest.approx(1 - 0.025 ** (1 / 10))
    assert high[9] == 1.0 and low[9] == pytest.approx(0.025 ** (1 / 10))
    assert low[5] == pytest.approx(1 - high[5])
    assert np.isnan(low[3]) and np.isnan(high[3])
    with pytest.raises(CalibInputError, match="level"):
        bins.frequency_intervals(1.5)
