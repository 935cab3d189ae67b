"""Sample weights in CORP: the weighted PAV curve, decompositions, the MCB test and the bands (issue 56)."""

import numpy as np
import pytest
from sklearn.isotonic import IsotonicRegression
from weighted_rows import weighted_rows as rows_of_weights

from calib.calibration_errors.corp import (
    calibrated_positives,
    corp_curve,
    corp_decomposition,
    corp_report,
    mcb_test,
)
from calib.calibration_errors.corp_bands import _weighted_bootstrap_cells, corp_bands
from calib.calibration_errors.corp_lenses import lens_decomposition
from calib.scoring.murphy import mean_elementary_scores, murphy_diagram
from calib.validation import CalibInputError, kish_effective_size

SEEDS = range(6)


def weighted_rows(seed: int, n: int = 80, ties: bool = True):
    """Over-confident forecasts (outcomes of probability x ** 1.5) with integer weights."""
    return rows_of_weights(seed, n, ties=ties, power=1.5)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("ties", [True, False])
def test_weighted_curve_of_integer_weights_is_that_of_repeated_rows(seed, ties):
    x, y, w = weighted_rows(seed, ties=ties)
    weighted, repeated = corp_curve(x, y, sample_weight=w), corp_curve(np.repeat(x, w), np.repeat(y, w))
    assert np.array_equal(weighted.points, repeated.points)
    np.testing.assert_allclose(weighted.counts, repeated.counts, rtol=0, atol=1e-12)
    np.testing.assert_allclose(weighted.positives, repeated.positives, rtol=0, atol=1e-12)
    np.testing.assert_allclose(weighted.recalibrated, repeated.recalibrated, rtol=0, atol=1e-12)
    unit = corp_curve(x, y, sample_weight=np.ones(x.size))
    assert np.array_equal(unit.recalibrated, corp_curve(x, y).recalibrated) and unit.weights is None


@pytest.mark.parametrize("seed", SEEDS)
def test_weighted_pav_is_scikit_learns_weighted_isotonic_regression(seed):
    rng = np.random.default_rng(seed)
    x = np.round(rng.uniform(size=300), 2)
    y = (rng.uniform(size=300) < x).astype(np.float64)
    w = rng.uniform(0.05, 4.0, size=300)
    expected = IsotonicRegression(y_min=0.0, y_max=1.0).fit(x, y, sample_weight=w).predict(x)
    np.testing.assert_allclose(corp_curve(x, y, sample_weight=w).at(x), expected, rtol=0, atol=1e-10)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("score", ["brier", "log"])
def test_weighted_decomposition_of_integer_weights_is_that_of_repeated_rows(seed, score):
    x, y, w = weighted_rows(seed)
    x = np.clip(x, 0.05, 0.95)  # a finite log score
    weighted = corp_decomposition(x, y, score=score, sample_weight=w)
    repeated = corp_decomposition(np.repeat(x, w), np.repeat(y, w), score=score)
    for term in ("score", "mcb", "dsc", "unc"):
        assert getattr(weighted, term) == pytest.approx(getattr(repeated, term), abs=1e-12)
    assert corp_decomposition(x, y, score=score, sample_weight=np.ones(x.size)) == corp_decomposition(x, y, score=score)
    z = np.log(x / (1 - x))
    with_odds = corp_decomposition(x, y, score=score, log_odds=z, sample_weight=w)
    assert with_odds.score == pytest.approx(weighted.score, abs=1e-12)


def test_weighted_brier_decomposition_is_weighted_mean_brier():
    x, y, w = weighted_rows(7)
    d = corp_decomposition(x, y, sample_weight=w)
    assert d.score == pytest.approx(np.average((x - y) ** 2, weights=w), abs=1e-14)
    assert d.unc == pytest.approx(np.average(y, weights=w) * (1 - np.average(y, weights=w)), abs=1e-14)


@pytest.mark.parametrize("seed", SEEDS)
def test_lens_decomposition_of_integer_weights_is_that_of_repeated_rows(seed):
    rng = np.random.default_rng(seed)
    probs, labels = rng.dirichlet(np.ones(3), size=60), rng.integers(0, 3, size=60)
    w = rng.integers(0, 5, size=60)
    for lens in ("one_vs_rest", "top_label"):
        weighted = lens_decomposition(probs, labels, kind="probs", lens=lens, score="log", sample_weight=w)
        repeated = lens_decomposition(
            np.repeat(probs, w, axis=0), np.repeat(labels, w), kind="probs", lens=lens, score="log"
        )
        assert weighted.total.mcb == pytest.approx(repeated.total.mcb, abs=1e-12)
        assert weighted.total.score == pytest.approx(repeated.total.score, abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_murphy_diagram_of_integer_weights_is_that_of_repeated_rows(seed):
    x, y, w = weighted_rows(seed)
    forecasts = {"a": x, "b": np.sqrt(x)}
    weighted = murphy_diagram(forecasts, y, sample_weight=w)
    repeated = murphy_diagram({k: np.repeat(v, w) for k, v in forecasts.items()}, np.repeat(y, w))
    for name in forecasts:
        np.testing.assert_allclose(weighted.raw[name], repeated.raw[name], rtol=0, atol=1e-12)
        np.testing.assert_allclose(weighted.recalibrated[name], repeated.recalibrated[name], rtol=0, atol=1e-12)
    unit = murphy_diagram(forecasts, y, sample_weight=np.ones(y.size))
    assert all(np.array_equal(unit.raw[k], murphy_diagram(forecasts, y).raw[k]) for k in forecasts)


def test_weighted_resamples_under_calibration_draw_each_sample():
    x, y, w = weighted_rows(3, n=40)
    curve = corp_curve(x, y, sample_weight=w)
    draws = np.array(list(calibrated_positives(curve, 4000, np.random.default_rng(0))))
    # Each sample draws its own outcome: the mean positives of a score are its summed weight times it.
    np.testing.assert_allclose(draws.mean(axis=0), curve.counts * curve.points, atol=0.15)
    # A score of weight 3 held by one sample is 0 or 3, never 1 or 2 (a binomial of the weight would be).
    single = np.flatnonzero(np.bincount(curve.index, minlength=curve.points.size) == 1)
    assert np.all(np.isin(draws[:, single], [0.0]) | np.isclose(draws[:, single], curve.counts[single]))


def test_weighted_bootstrap_resamples_the_weighted_samples():
    x, y, w = weighted_rows(4, n=40)
    curve = corp_curve(x, y, sample_weight=w)
    cells = list(_weighted_bootstrap_cells(curve, 3000, np.random.default_rng(0)))
    counts = np.mean([c for c, _ in cells], axis=0)
    positives = np.mean([p for _, p in cells], axis=0)
    np.testing.assert_allclose(counts, curve.counts, atol=0.3)
    np.testing.assert_allclose(positives, curve.positives, atol=0.3)


def test_weighted_mcb_test_keeps_its_level_and_power():
    rng = np.random.default_rng(5)
    x = rng.uniform(size=400)
    w = rng.integers(1, 5, size=400)
    calibrated = rng.uniform(size=400) < x
    assert mcb_test(corp_curve(x, calibrated, sample_weight=w), n_resamples=200).p_value > 0.05
    assert mcb_test(corp_curve(x, rng.uniform(size=400) < x**3, sample_weight=w), n_resamples=200).p_value < 0.01


def test_unit_weights_give_the_unweighted_report_and_bands():
    x, y, _ = weighted_rows(2, n=200, ties=False)
    ones = np.ones(x.size)
    assert corp_report(x, y, n_resamples=50, sample_weight=ones) == corp_report(x, y, n_resamples=50)
    a = corp_bands(corp_curve(x, y, sample_weight=ones), n_resamples=50)
    b = corp_bands(corp_curve(x, y), n_resamples=50)
    assert np.array_equal(a.consistency, b.consistency) and np.array_equal(a.confidence, b.confidence)


def test_report_of_integer_weights_decomposes_as_repeated_rows():
    x, y, w = weighted_rows(8)
    weighted = corp_report(x, y, scores=("brier",), n_resamples=20, sample_weight=w, test_samples=30)["brier"]
    repeated = corp_report(np.repeat(x, w), np.repeat(y, w), scores=("brier",), n_resamples=0)["brier"]
    assert weighted.mcb == pytest.approx(repeated.mcb, abs=1e-12)
    assert 0 < weighted.p_value <= 1


def test_constant_weights_give_the_unweighted_asymptotic_bands():
    """Kish's effective size of weights all equal to c is N, and so of each score's samples their count."""
    x, y, _ = weighted_rows(1, n=500)
    weighted = corp_curve(x, y, sample_weight=np.full(x.size, 3.0))
    assert weighted.effective_size == pytest.approx(500.0, abs=1e-9)
    a, b = corp_bands(weighted, method="asymptotic"), corp_bands(corp_curve(x, y), method="asymptotic")
    np.testing.assert_allclose(a.consistency, b.consistency, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.confidence, b.confidence, rtol=0, atol=1e-12)


def test_uneven_weights_widen_the_asymptotic_bands_by_kish():
    x, y, _ = weighted_rows(1, n=500)
    w = np.where(np.arange(500) % 2 == 0, 1.0, 9.0)
    curve = corp_curve(x, y, sample_weight=w)
    assert curve.effective_size == pytest.approx(kish_effective_size(w))
    weighted, plain = corp_bands(curve, method="asymptotic"), corp_bands(corp_curve(x, y), method="asymptotic")
    width = lambda band: np.mean(band[1] - band[0])  # noqa: E731
    assert width(weighted.consistency) > width(plain.consistency)


def test_bad_weights_are_refused():
    with pytest.raises(CalibInputError, match="sample_weight"):
        corp_curve([0.1, 0.9], [0, 1], sample_weight=[1.0, -1.0])
    with pytest.raises(CalibInputError, match="sample_weight"):
        corp_decomposition([0.1, 0.9], [0, 1], sample_weight=[1.0])


@pytest.mark.parametrize("seed", SEEDS)
def test_mean_elementary_scores_of_summed_weights_are_weighted_means(seed):
    x, y, w = weighted_rows(seed)
    curve = corp_curve(x, y, sample_weight=w)
    theta = np.linspace(0, 1, 11)
    by_hand = [np.average(t * ((x > t) & (y == 0)) + (1 - t) * ((x <= t) & (y == 1)), weights=w) for t in theta]
    np.testing.assert_allclose(
        mean_elementary_scores(curve.points, curve.counts, curve.positives, theta), by_hand, rtol=0, atol=1e-12
    )
