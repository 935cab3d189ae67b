"""Tests of calib.calibrators.trivial: paper 002's MRR (§3, §5), its closed-form metrics, and netcal-style
one-vs-all histogram binning / isotonic regression (Zadrozny & Elkan 2001, 2002; notes 002 §5 items 3-4)."""

import numpy as np
import pytest
from peer_fixtures import check_fingerprint, load_arrays, load_json, recipes
from scipy.special import log_softmax, softmax

from calib.calibration_errors.binned import BinnedCalibrationError
from calib.calibrators import (
    MeanReplacement,
    OneVsAllHistogramBinning,
    OneVsAllIsotonic,
    TemperatureScaling,
    mrr_metrics,
)
from calib.data.miscalibrated_logits import miscalibrated_logits
from calib.scoring.scores import brier, cross_entropy
from calib.validation import CalibInputError

# MRR rows of paper 002's six tables, verbatim (notes §6.2-6.7), all x100:
# (table, model / data, K, test accuracy, ECE, ACE, SmoothECE, NLL, Brier summed over classes).
PUBLISHED_MRR = [
    ("Table 1", "ViT-B/16, ImageNet", 1000, 85.14, 0.18, 0.18, 0.18, 144.66, 27.51),
    ("Table 2", "ResNet-50, ImageNet", 1000, 80.33, 0.28, 0.28, 0.28, 185.48, 35.48),
    ("Table 3", "EfficientNet-B3, ImageNet", 1000, 81.47, 0.07, 0.07, 0.07, 175.92, 33.62),
    ("Table 4", "ConvNeXt-Tiny, ImageNet", 1000, 84.13, 0.13, 0.13, 0.13, 153.34, 29.22),
    ("Table 5", "ResNet-32, CIFAR-10", 10, 93.46, 0.34, 0.34, 0.34, 38.52, 12.60),
    ("Table 6", "ResNet-32, CIFAR-100", 100, 70.20, 0.20, 0.20, 0.20, 197.85, 50.63),
]
IDS = [row[0] for row in PUBLISHED_MRR]

# Exactness of a mean of N <= 2000 per-sample losses of order 1 in float64.
EXACT = 1e-12


def _closed_form_x100(k, acc, ece, sign):
    m = mrr_metrics(acc / 100, (acc + sign * ece) / 100, k)
    return 100 * m["NLL"], 100 * m["Brier"], 100 * m["ECE"]


@pytest.mark.parametrize("row", PUBLISHED_MRR, ids=IDS)
def test_mrr_closed_forms_reproduce_published_rows(row):
    """h = a +- ECE; NLL and Brier match the printed values within 0.05 (x100) for at least one sign.

    The printed accuracy is rounded to 0.01 (x100); NLL moves by |ln h - ln((1-h)/(K-1))| ~ 8.3 per unit
    of a at K = 1000, so rounding alone can shift it by ~0.04 (Table 2 is off by 0.042).
    """
    _, _, k, acc, ece, ace, smooth, nll, bs = row
    assert ece == ace == smooth  # one confidence value: every binning / smoothing agrees
    fits = []
    for sign in (1, -1):
        got_nll, got_brier, got_ece = _closed_form_x100(k, acc, ece, sign)
        assert got_ece == pytest.approx(ece, abs=1e-9)
        fits.append(abs(got_nll - nll) <= 0.05 and abs(got_brier - bs) <= 0.05)
    assert any(fits)


@pytest.mark.parametrize("row", PUBLISHED_MRR, ids=IDS)
def test_mrr_published_rows_are_consistent_within_print_rounding(row):
    """Some (a, ECE) within +-0.005 of the printed values gives NLL and Brier within +-0.005 of theirs."""
    _, _, k, acc, ece, _, _, nll, bs = row
    best = np.inf
    for da in np.linspace(-0.005, 0.005, 101):
        for de in np.linspace(-0.005, 0.005, 11):
            for sign in (1, -1):
                got_nll, got_brier, _ = _closed_form_x100(k, acc + da, ece + de, sign)
                best = min(best, max(abs(got_nll - nll), abs(got_brier - bs)))
    assert best <= 0.005


def test_mrr_metrics_edge_cases():
    perfect = mrr_metrics(1.0, 1.0, 5)
    assert (perfect["NLL"], perfect["Brier"], perfect["ECE"]) == (0.0, 0.0, 0.0)
    assert mrr_metrics(0.9, 1.0, 5)["NLL"] == np.inf  # wrong rows give the true class 0
    assert mrr_metrics(0.0, 0.0, 3)["NLL"] == pytest.approx(np.log(2))  # 0 ln 0 = 0 on the argmax term
    # K = 2: the Brier sum is 2 (1 - h)^2 on correct rows and 2 h^2 on wrong ones.
    m = mrr_metrics(0.7, 0.6, 2)
    assert m["Brier"] == pytest.approx(0.7 * 2 * 0.4**2 + 0.3 * 2 * 0.6**2, abs=1e-15)
    assert m["NLL"] == pytest.approx(-(0.7 * np.log(0.6) + 0.3 * np.log(0.4)), abs=1e-15)
    assert m["ECE"] == m["ACE"] == m["SmoothECE"] == pytest.approx(0.1, abs=1e-15)
    assert (m["accuracy"], m["confidence"]) == (0.7, 0.6)
    for bad in [(1.2, 0.5, 3), (0.5, -0.1, 3), (0.5, 0.5, 1), (0.5, 0.5, 2.0)]:
        with pytest.raises(CalibInputError):
            mrr_metrics(*bad)


def _random_split(k=7, n_cal=300, n_test=2000, seed=3):
    rng = np.random.default_rng(seed)
    logits = 2.0 * rng.standard_normal((n_cal + n_test, k))
    p = softmax(1.5 * logits, axis=1)  # labels from a sharper model: the scores are under-confident
    y = (rng.random(p.shape[0])[:, None] >= np.cumsum(p, axis=1)).sum(axis=1).clip(max=k - 1)
    return (logits[:n_cal], y[:n_cal]), (logits[n_cal:], y[n_cal:])


def test_mean_replacement_matches_closed_forms_on_data():
    (cal_x, cal_y), (x, y) = _random_split()
    k = x.shape[1]
    model = MeanReplacement().fit(cal_x, cal_y, kind="logits")
    a_hat = model.confidence_
    assert a_hat == np.mean(cal_x.argmax(axis=1) == cal_y)
    out = model.predict_log_proba(x, kind="logits")
    top = x.argmax(axis=1)
    rows = np.arange(y.size)
    # Exact output values: log a_hat on the original argmax, log((1 - a_hat)/(K - 1)) elsewhere.
    np.testing.assert_array_equal(out[rows, top], np.log(a_hat))
    rest = np.ones_like(out, dtype=bool)
    rest[rows, top] = False
    np.testing.assert_array_equal(out[rest], np.log((1 - a_hat) / (k - 1)))
    # Accuracy unchanged; every confidence is a_hat.
    np.testing.assert_array_equal(out.argmax(axis=1), top)
    np.testing.assert_array_equal(np.exp(out).max(axis=1), np.exp(np.log(a_hat)))
    acc = np.mean(top == y)
    expected = mrr_metrics(acc, a_hat, k)
    assert cross_entropy(out, y, kind="logprobs") == pytest.approx(expected["NLL"], abs=EXACT)
    assert brier(out, y, kind="logprobs", scaling="sum") == pytest.approx(expected["Brier"], abs=EXACT)
    # One confidence value: 15-bin ECE and netcal-style (unweighted) ACE both equal |a - a_hat|.
    for average in (False, True):
        got = BinnedCalibrationError("top_label", n_bins=15, average=average)(out, y, kind="logprobs")
        assert got == pytest.approx(expected["ECE"], abs=EXACT)
    assert expected["NLL"] > cross_entropy(x, y, kind="logits")  # MRR pays in NLL


def test_mean_replacement_ties_and_degenerate_accuracy():
    cal = np.log(np.array([[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]]) + 1e-300)
    model = MeanReplacement().fit(cal, [0, 2], kind="logprobs")  # row 0 tie -> class 0, correct
    assert model.confidence_ == 1.0
    out = model.predict_log_proba(np.log(np.array([[0.4, 0.4, 0.2]])), kind="logprobs")
    np.testing.assert_array_equal(out, [[0.0, -np.inf, -np.inf]])  # first index wins the tie
    model = MeanReplacement().fit(cal, [1, 1], kind="logprobs")
    assert model.confidence_ == 0.0
    out = model.predict_log_proba(np.log(np.array([[0.1, 0.6, 0.3]])), kind="logprobs")
    np.testing.assert_array_equal(out, [[np.log(0.5), -np.inf, np.log(0.5)]])


# A constructed K = 3 calibration set (15 bins: 0.05 -> bin 0, 0.25 -> 3, 0.7 -> 10, 0.9 -> 13).
# Class 0: p=0.7 never class 0, p=0.9 always; class 1: p=0.25 always class 1, p=0.05 never;
# class 2 never appears, so its column stays 0.
CAL_P = np.array([[0.7, 0.25, 0.05]] * 5 + [[0.9, 0.05, 0.05]] * 5)
CAL_Y = np.array([1] * 5 + [0] * 5)


@pytest.mark.parametrize("cls", [OneVsAllHistogramBinning, OneVsAllIsotonic])
def test_one_vs_all_changes_argmax_and_gives_exact_zeros(cls):
    model = cls().fit(CAL_P, CAL_Y, kind="probs")
    x = np.array([[0.7, 0.25, 0.05]])
    out = model.predict_log_proba(x, kind="probs")
    np.testing.assert_array_equal(np.exp(out), [[0.0, 1.0, 0.0]])
    assert x.argmax(axis=1)[0] == 0 and out.argmax(axis=1)[0] == 1  # the argmax moved
    assert np.isneginf(out[0, 0]) and np.isneginf(out[0, 2])
    assert cross_entropy(out, [0], kind="logprobs") == np.inf  # not clipped: NLL is infinite
    # On the calibration set the input argmax is always class 0 (accuracy 0.5); the output follows the labels.
    cal_out = model.predict_log_proba(CAL_P, kind="probs")
    assert np.mean(cal_out.argmax(axis=1) == CAL_Y) == 1.0
    assert np.mean(CAL_P.argmax(axis=1) == CAL_Y) == 0.5


@pytest.mark.parametrize("cls", [OneVsAllHistogramBinning, OneVsAllIsotonic])
def test_one_vs_all_zero_rows_policy(cls):
    """Every class maps to 0 (class 0 at 0.7, class 1 at 0.05, class 2 absent): 0/0 in netcal."""
    x = np.array([[0.7, 0.05, 0.25], [0.9, 0.05, 0.05]])
    uniform = cls().fit(CAL_P, CAL_Y, kind="probs")
    np.testing.assert_array_equal(uniform.predict_unnormalized_proba(x, kind="probs")[0], [0.0, 0.0, 0.0])
    out = uniform.predict_log_proba(x, kind="probs")
    np.testing.assert_array_equal(out[0], np.full(3, np.log(1 / 3)))
    np.testing.assert_array_equal(np.exp(out[1]), [1.0, 0.0, 0.0])
    nan = cls(zero_rows="nan").fit(CAL_P, CAL_Y, kind="probs").predict_log_proba(x, kind="probs")
    assert np.isnan(nan[0]).all()
    np.testing.assert_array_equal(nan[1], out[1])


def test_histogram_empty_bin_maps_to_midpoint():
    model = OneVsAllHistogramBinning(n_bins=15).fit(CAL_P, CAL_Y, kind="probs")
    # Class 0 at 0.5 (bin 7) and class 1 at 0.45 (bin 6) have no calibration sample: midpoints.
    x = np.array([[0.5, 0.45, 0.05]])
    c = model.predict_unnormalized_proba(x, kind="probs")
    np.testing.assert_allclose(c, [[7.5 / 15, 6.5 / 15, 0.0]], rtol=0, atol=1e-15)
    np.testing.assert_allclose(model.predict_proba(x, kind="probs"), c / c.sum(), rtol=1e-15)
    h0 = model.models_[0]
    assert model.models_[2] is None  # class 2 absent from the calibration labels
    np.testing.assert_array_equal(h0.counts[[10, 13]], [5, 5])
    empty = h0.counts == 0
    np.testing.assert_allclose(h0.values[empty], ((np.arange(15) + 0.5) / 15)[empty], atol=1e-15)
    np.testing.assert_array_equal(h0.values[[10, 13]], [0.0, 1.0])


def test_histogram_binary_and_edge_rules():
    """K = 2 calibrates p_1 only; p on an interior edge is binned left-closed at fit, right-closed at predict."""
    edge = np.linspace(0, 1, 16)[6]  # 0.4
    assert np.exp(np.log(edge)) == edge  # survives the interface's trip through log-probabilities
    p1 = np.array([edge, edge, 0.3])
    model = OneVsAllHistogramBinning().fit(np.column_stack([1 - p1, p1]), [1, 1, 0], kind="probs")
    hist = model.models_[1]
    assert model.models_[0] is None
    ids = np.flatnonzero(hist.counts)
    assert ids.tolist() == [4, 6]  # 0.3 -> bin 4; the edge 0.4 -> bin 6 at fit
    out = model.predict_proba(np.column_stack([1 - p1, p1]), kind="probs")
    # At predict the edge value falls in bin 5 (empty: midpoint 5.5/15), and 0.3 in bin 4 (value 0).
    np.testing.assert_allclose(out[:, 1], [5.5 / 15, 5.5 / 15, 0.0], atol=1e-15)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=0, atol=1e-15)


NETCAL = load_json("netcal_binning")
NETCAL_OUTPUTS = load_arrays("netcal_binning")


@pytest.mark.parametrize("case", NETCAL["cases"], ids=lambda case: case["key"])
def test_one_vs_all_matches_netcal(case):
    """netcal's HistogramBinning / IsotonicRegression, whose semantics these classes copy, as stored by
    benchmarks/write_peer_fixtures.py (netcal needs torch, which CI does not install).

    Both work in float64 with the same operations (bin frequencies; scikit-learn's IsotonicRegression on
    both sides, the fixture's scikit-learn version recorded beside netcal's), so they agree to rounding.
    """
    k = case["k"]
    peer = f"netcal {NETCAL['version']} {case['calibrator']}, K = {k}"
    p, y = recipes.binning_inputs(k, case["fit"]["n"], case["fit"]["seed"])
    test_p, test_y = recipes.binning_inputs(k, case["apply"]["n"], case["apply"]["seed"])
    check_fingerprint(case["fit"]["fingerprint"], p, y, peer)
    check_fingerprint(case["apply"]["fingerprint"], test_p, test_y, peer)
    if case["key"].startswith("histogram"):
        ours = OneVsAllHistogramBinning(n_bins=recipes.HISTOGRAM_BINS, zero_rows="nan")
    else:
        ours = OneVsAllIsotonic(zero_rows="nan")
    ours.fit(p, y, kind="probs")
    expected = NETCAL_OUTPUTS[case["key"]]
    if k == 2:  # netcal returns the positive class only
        expected = np.column_stack([1 - expected, expected])
    got = ours.predict_proba(test_p, kind="probs")
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15, equal_nan=True, err_msg=peer)
    np.testing.assert_array_equal(got == 0, expected == 0, err_msg=peer)


def test_recalibration_pattern_on_synthetic_logits():
    """Notes 002 §6.8 shape on miscalibrated logits: K = 100, N = 50000, first 20% calibrates, 80% tests.

    MRR vs TS on ECE is not asserted: here TS's family holds the truth (noise aside), so its ECE is as
    small as MRR's sampling-noise |a - a_hat| (about 1% either way over seeds).
    """
    data = miscalibrated_logits(50000, 100, scale=1.5, noise_sd=0.5, margin=7.0, logit_sd=2.0, seed=0)
    n_cal = 10000
    x_cal, y_cal = data.model_logits[:n_cal], data.labels[:n_cal]
    x, y = data.model_logits[n_cal:], data.labels[n_cal:]
    out = {"baseline": log_softmax(x, axis=1)}
    for name, model in [
        ("TS", TemperatureScaling()),
        ("HB", OneVsAllHistogramBinning()),
        ("IR", OneVsAllIsotonic()),
        ("MRR", MeanReplacement()),
    ]:
        out[name] = model.fit(x_cal, y_cal, kind="logits").predict_log_proba(x, kind="logits")
    acc = {name: np.mean(lp.argmax(axis=1) == y) for name, lp in out.items()}
    nll = {name: cross_entropy(lp, y, kind="logprobs") for name, lp in out.items()}
    bs = {name: brier(lp, y, kind="logprobs", scaling="sum") for name, lp in out.items()}
    ece = {name: BinnedCalibrationError("top_label", n_bins=15)(lp, y, kind="logprobs") for name, lp in out.items()}
    assert acc["MRR"] == acc["TS"] == acc["baseline"]
    assert acc["HB"] < acc["IR"] < acc["baseline"]
    assert ece["MRR"] < min(ece["baseline"], ece["HB"], ece["IR"])
    assert nll["HB"] == nll["IR"] == np.inf
    assert nll["TS"] < nll["baseline"] < nll["MRR"] < np.inf
    assert bs["MRR"] == max(bs.values())
    assert bs["TS"] == min(bs.values())
