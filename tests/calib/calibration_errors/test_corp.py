"""CORP reliability curves, bands, the MCB test and the score decomposition (Dimitriadis et al. 2021).

Checked against an independent pool-adjacent-violators written here, the exact identity
S = MCB - DSC + UNC with each term recomputed sample by sample, Ferrer & Ramos's calibration loss with
isotonic regression fitted on the test data (which is MCB), model-diagnostics' decomposition (stored by
benchmarks/write_corp_fixtures.py), and simulations for the size of the MCB test and the coverage of
the consistency band.
"""

import numpy as np
import pytest
from peer_fixtures import corp_recipes, load_json

from calib.calibration_errors.corp import (
    SCORES,
    _raw_score_of_draws,
    calibrated_positives,
    corp_curve,
    corp_decomposition,
    corp_report,
    decompose,
    mcb_test,
)
from calib.calibrators import IsotonicCalibrator
from calib.scoring.calibration_losses import calibration_loss
from calib.validation import CalibInputError


def reference_pav(x, y):
    """Pool adjacent violators on the samples sorted by score, each group of equal scores entering as
    one point (sum, count), one point at a time; returns the fitted value of each sample."""
    order = np.argsort(x, kind="stable")
    xs, ys = np.asarray(x, dtype=float)[order], np.asarray(y, dtype=float)[order]
    points = []  # [sum of outcomes, count] per distinct score, in increasing order
    for i, (score, outcome) in enumerate(zip(xs, ys, strict=True)):
        if i and xs[i - 1] == score:
            points[-1][0] += outcome
            points[-1][1] += 1
        else:
            points.append([outcome, 1])
    blocks = []  # [sum, count] of pooled points
    for total, count in points:
        blocks.append([total, count])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            total, count = blocks.pop()
            blocks[-1][0] += total
            blocks[-1][1] += count
    fitted = np.concatenate([np.full(count, total / count) for total, count in blocks])
    out = np.empty_like(fitted)
    out[order] = fitted
    return out


def _draw(seed, n, digits=None, exponent=1.0):
    return corp_recipes.corp_inputs(n, seed, digits, exponent)


@pytest.mark.parametrize(("seed", "digits"), [(0, None), (1, 2), (2, 1), (3, 0)])
def test_curve_is_the_pav_fit_with_ties_pooled(seed, digits):
    x, y = _draw(seed, 300, digits, exponent=1.7)
    curve = corp_curve(x, y)
    # block means are sums over up to 300 outcomes taken in another order: ~300 x 2^-53 apart
    np.testing.assert_allclose(curve.recalibrated[curve.index], reference_pav(x, y), rtol=0, atol=1e-14)
    assert np.all(np.diff(curve.points) > 0) and np.all(np.diff(curve.recalibrated) >= 0)
    assert curve.counts.sum() == x.size and curve.at(curve.points).tolist() == curve.recalibrated.tolist()


def test_equal_scores_share_one_value_whatever_their_order():
    # a tie split by sample order would let PAV give 0.4 two values; pooled it has one
    x, y = [0.2, 0.4, 0.4, 0.4, 0.7], [1, 0, 1, 0, 1]
    curve = corp_curve(x, y)
    assert curve.points.tolist() == [0.2, 0.4, 0.7]
    np.testing.assert_allclose(curve.recalibrated, [0.5, 0.5, 1.0])


@pytest.mark.parametrize("score", ["brier", "log"])
@pytest.mark.parametrize(("seed", "digits", "exponent"), [(0, None, 1.0), (1, 2, 0.5), (2, 1, 2.0)])
def test_decomposition_terms_recomputed_sample_by_sample(score, seed, digits, exponent):
    x, y = _draw(seed, 2000, digits, exponent)
    y = y.astype(int)
    d = corp_decomposition(x, y, score=score)
    xhat, ybar = reference_pav(x, y), y.mean()

    def mean(p):
        p = np.broadcast_to(p, x.shape)
        if score == "brier":
            return np.mean((p - y) ** 2)
        with np.errstate(divide="ignore"):
            return -np.mean(np.where(y == 1, np.log(p), np.log1p(-p)))

    # Grouped sums (per distinct score) against per-sample means: the same 2000 terms added in another
    # order, at most 2000 x 2^-53 (4e-13) apart relative. MCB is a difference of two such means, so it
    # carries their absolute error (< 1e-13 at scores of order 0.2-0.7): relative to an MCB >= 1e-4 that is
    # below 1e-9. The identity reuses the same two means, so only its final additions round.
    assert d.score == pytest.approx(mean(x), rel=1e-12)
    assert d.mcb == pytest.approx(mean(x) - mean(xhat), rel=1e-9, abs=1e-15)
    assert d.dsc == pytest.approx(mean(ybar) - mean(xhat), rel=1e-12)
    assert d.unc == pytest.approx(mean(ybar), rel=1e-12)
    assert d.score == pytest.approx(d.mcb - d.dsc + d.unc, rel=1e-14)
    assert d.mcb >= 0 and d.dsc >= 0


@pytest.mark.parametrize(("score", "metric"), [("brier", "brier"), ("log", "ce")])
def test_mcb_is_the_calibration_loss_of_isotonic_regression_on_the_test_data(score, metric):
    x, y = _draw(5, 3000, 2, exponent=1.5)
    y = y.astype(int)
    loss = calibration_loss(
        np.column_stack([1 - x, x]), y, kind="probs", metric=metric, calibrator=IsotonicCalibrator(), protocol="tt",
        relative=False,
    )  # fmt: skip
    # the same PAV fit, reached by IsotonicRegression on the (N, 2) posteriors and summed per sample: 3000
    # terms in another order (< 7e-13 relative)
    assert corp_decomposition(x, y, score=score).mcb == pytest.approx(loss, rel=1e-12)


def test_a_score_given_as_a_function_is_decomposed_like_the_named_one():
    x, y = _draw(6, 500)
    named = corp_decomposition(x, y, score="brier")
    given = corp_decomposition(x, y, score=lambda p, outcome: (p - outcome) ** 2)
    assert given == named


def test_recalibrated_scores_have_no_miscalibration():
    x, y = _draw(7, 800, 2, exponent=0.6)
    curve = corp_curve(x, y)
    again = corp_decomposition(curve.recalibrated[curve.index], y)
    # the recalibrated scores are their own PAV fit: both means are the same grouped sums but for the
    # fit's last-bit rounding of each block mean
    assert again.mcb == pytest.approx(0.0, abs=1e-15)


STORED = load_json("corp_decomposition")


@pytest.mark.parametrize("case", STORED["cases"], ids=lambda case: f"{case['input']}-{case['scoring']}")
def test_decomposition_matches_model_diagnostics(case):
    """model-diagnostics' decompose (SquaredError, LogLoss): sums of N terms of order one in another
    order, so equal to N x 2^-52 relative, about 1e-12."""
    x, y = corp_recipes.corp_inputs(*STORED["inputs"][case["input"]])
    d = corp_decomposition(x, y, score=case["scoring"])
    peer = f"model-diagnostics {STORED['version']} on {case['input']}"
    assert [d.score, d.mcb, d.dsc, d.unc] == pytest.approx(
        [case["score"], case["miscalibration"], case["discrimination"], case["uncertainty"]], abs=1e-12
    ), peer


def test_stored_peer_cases_cover_every_input():
    assert STORED["inputs"] == {name: list(recipe) for name, recipe in corp_recipes.CORP_INPUTS.items()}
    assert sorted((c["input"], c["scoring"]) for c in STORED["cases"]) == sorted(
        (name, score) for name in corp_recipes.CORP_INPUTS for score in ("brier", "log")
    )


def test_mcb_test_has_its_size_under_calibration_and_power_against_miscalibration():
    """200 calibrated data sets: P(p <= 0.1) within 3 binomial standard errors (0.064) of 0.1."""
    p_values = [mcb_test(corp_curve(*_draw(100 + s, 300)), n_resamples=99, seed=s).p_value for s in range(200)]
    assert abs(np.mean(np.array(p_values) <= 0.1) - 0.1) <= 3 * np.sqrt(0.1 * 0.9 / 200)
    miscalibrated = mcb_test(corp_curve(*_draw(9, 1000, exponent=2.0)), n_resamples=199)
    assert miscalibrated.p_value == 1 / 200


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda: corp_curve([0.2, 0.5], [0, 0.5]), "outcome must hold 0 or 1"),
        (lambda: corp_curve([0.2, 1.5], [0, 1]), "confidence must lie in"),
        (lambda: corp_curve([0.2, 0.5], [0, 1, 1]), "equal length"),
        (lambda: corp_decomposition([0.2, 0.5], [0, 1], score="crps"), "score must be one of"),
        (lambda: corp_decomposition([0.2, 0.5], [0, 1], score=lambda p, y: np.nan * p), "NaN"),
        (lambda: mcb_test(corp_curve([0.2, 0.5], [0, 1]), n_resamples=0), "n_resamples"),
    ],
)
def test_bad_input_is_named(call, named):
    with pytest.raises(CalibInputError, match=named):
        call()


def test_decompose_accepts_a_fitted_curve():
    x, y = _draw(13, 400)
    assert decompose(corp_curve(x, y), "log") == corp_decomposition(x, y, score="log")


def test_draws_under_calibration_have_the_binomial_mean_and_variance():
    """2000 resamples: per distinct score, mean n x within 5 standard errors and variance n x (1 - x)
    within 5 sqrt(2 / 2000) relative, for scores held by one sample (the uniform draw) and by many
    (numpy's binomial). The variance bound is 5 standard errors of a sample variance for the counts of
    50 (nearly normal) and 2.65 for a single sample at x = 0.1 or 0.9 (Bernoulli kurtosis 8.1)."""
    x = np.concatenate([np.repeat([0.2, 0.7], 50), [0.1, 0.5, 0.9]])
    curve = corp_curve(x, np.zeros(x.size))
    draws = np.array(list(calibrated_positives(curve, 2000, np.random.default_rng(3))))
    mean, var = curve.counts * curve.points, curve.counts * curve.points * (1 - curve.points)
    assert np.all(np.abs(draws.mean(axis=0) - mean) <= 5 * np.sqrt(var / 2000))
    assert np.all(np.abs(draws.var(axis=0) / var - 1) <= 5 * np.sqrt(2 / 2000))


def test_report_holds_each_scores_decomposition_and_test():
    x, y = _draw(15, 800, exponent=1.5)
    report = corp_report(x, y, n_resamples=99, seed=4)
    for score in ("brier", "log"):
        d, t = corp_decomposition(x, y, score=score), mcb_test(corp_curve(x, y), score=score, n_resamples=99, seed=4)
        r = report[score]
        assert (r.score, r.mcb, r.dsc, r.unc) == pytest.approx((d.score, d.mcb, d.dsc, d.unc), rel=1e-12, abs=1e-15)
        assert r.p_value == t.p_value


def test_report_tests_a_bounded_subset_and_keeps_every_sample_in_the_terms():
    x, y = _draw(16, 3000, exponent=3.0)
    report = corp_report(x, y, n_resamples=49, test_samples=300)
    assert report["brier"].mcb == pytest.approx(corp_decomposition(x, y).mcb, rel=1e-12)
    assert report["brier"].p_value == 1 / 50  # x^3 is far from calibrated: even 300 samples reject


@pytest.mark.parametrize(
    "score",
    [
        SCORES["log"],  # infinite at forecasts 0 and 1, where no draw under calibration can land: one dot product
        lambda p, y: np.where(p == 0.5, np.inf, (p - y) ** 2),  # infinite inside: the general sum
    ],
)
def test_raw_score_of_draws_is_the_mean_score_of_each_draw(score):
    """The resamples' raw mean score, whichever way it is computed, equals the mean over the samples
    of s(x_i, y_i) with y_i rebuilt from the drawn positives (a mean of 600 terms: rounding only)."""
    x = np.concatenate([[0.0, 1.0], np.repeat([0.25, 0.5], 40), np.linspace(0.05, 0.95, 518)])
    curve = corp_curve(x, np.zeros(x.size))
    raw = _raw_score_of_draws(score, curve)
    for positives in calibrated_positives(curve, 5, np.random.default_rng(6)):
        negatives = curve.counts - positives
        with np.errstate(divide="ignore", invalid="ignore"):
            per_sample = np.concatenate(
                [np.repeat(score(curve.points, 1.0), positives.astype(int)),
                 np.repeat(score(curve.points, 0.0), negatives.astype(int))]
            )  # fmt: skip
        assert raw(positives) == pytest.approx(np.mean(per_sample), rel=1e-12)
