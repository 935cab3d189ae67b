"""Tests of calib.calibration_errors.binned: binary ECE (eq. 27), top-label ECEmc (Sec. 2.5.2), reliability bins."""

import numpy as np
import pytest

from calib.calibration_errors.binned import BinnedCalibrationError, reliability_bins
from calib.data.synthetic import gaussian_posteriors
from calib.validation import CalibInputError

# Posteriors pass through log and exp once: a few ulps on numbers of order 1.
EXACT = 1e-14


def _binary(q1):
    q1 = np.asarray(q1, dtype=float)
    return np.column_stack([1 - q1, q1])


# Hand example: 6 samples, 2 bins (0, 1/2], (1/2, 1].
Q1 = [0.2, 0.4, 0.6, 0.8, 0.9, 0.3]
Y = [0, 1, 1, 1, 0, 0]


def test_ece_binary_hand_computed():
    # bin 1: q1 = 0.2, 0.4, 0.3 -> mean 0.3, positives 1/3, gap 1/30
    # bin 2: q1 = 0.6, 0.8, 0.9 -> mean 23/30, positives 2/3, gap 1/10
    # ECE = 3/6 * 1/30 + 3/6 * 1/10 = 1/15
    assert BinnedCalibrationError("binary", n_bins=2)(_binary(Q1), Y, kind="probs") == pytest.approx(1 / 15, rel=EXACT)
    # squared gaps: 1/2 * 1/900 + 1/2 * 1/100
    assert BinnedCalibrationError("binary", n_bins=2, norm="squared")(_binary(Q1), Y, kind="probs") == pytest.approx(
        0.5 / 900 + 0.5 / 100, rel=EXACT
    )


def test_reliability_bins_hand_computed():
    bins = BinnedCalibrationError("binary", n_bins=4).reliability(_binary(Q1), Y, kind="probs")[0]
    # bins (0, .25], (.25, .5], (.5, .75], (.75, 1]
    np.testing.assert_array_equal(bins.counts, [1, 2, 1, 2])
    np.testing.assert_allclose(bins.mean_confidence, [0.2, 0.35, 0.6, 0.85], rtol=EXACT)
    np.testing.assert_allclose(bins.frequency, [0.0, 0.5, 1.0, 0.5], rtol=0, atol=0)
    np.testing.assert_array_equal(bins.edges, [0, 0.25, 0.5, 0.75, 1])
    # ECE = (0.2 + 2 * 0.15 + 0.4 + 2 * 0.35) / 6
    assert bins.ece() == pytest.approx(1.6 / 6, rel=EXACT)


def test_empty_bins_are_nan_and_skipped():
    bins = BinnedCalibrationError("binary", n_bins=5).reliability(_binary([0.1, 0.15, 0.9]), [0, 1, 1], kind="probs")[0]
    np.testing.assert_array_equal(bins.counts, [2, 0, 0, 0, 1])
    assert np.all(np.isnan(bins.mean_confidence[1:4]))
    assert np.all(np.isnan(bins.frequency[1:4]))
    # gaps: |0.5 - 0.125| on 2 samples, |1 - 0.9| on 1
    assert bins.ece() == pytest.approx((2 * 0.375 + 0.1) / 3, rel=EXACT)


def test_top_label_ece_hand_computed():
    q = np.array([[0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.1, 0.1, 0.8], [0.3, 0.3, 0.4], [0.05, 0.05, 0.9]])
    y = np.array([0, 0, 2, 2, 1])
    # confidences 0.6, 0.7, 0.8, 0.4, 0.9; correct 1, 0, 1, 1, 0. Two bins (0, 1/2], (1/2, 1]:
    # bin 1: conf 0.4, acc 1 -> gap 0.6; bin 2: mean conf 0.75, acc 1/2 -> gap 0.25
    assert BinnedCalibrationError("top_label", n_bins=2)(q, y, kind="probs") == pytest.approx(
        (0.6 + 4 * 0.25) / 5, rel=EXACT
    )


def test_top_label_equals_binary_when_every_q1_is_above_one_half():
    # For K = 2 with q1 > 1/2, the confidence is q1 and "argmax is correct" is "label is 1": same bins, same ECE.
    rng = np.random.default_rng(0)
    q1 = rng.uniform(0.5, 1.0, size=400)
    q1 = q1[q1 > 0.5]
    y = (rng.random(q1.size) < q1**2).astype(int)
    q = _binary(q1)
    for n_bins in (5, 15):
        for norm in ("l1", "l2"):
            assert BinnedCalibrationError("top_label", n_bins=n_bins, norm=norm)(
                q, y, kind="probs"
            ) == BinnedCalibrationError("binary", n_bins=n_bins, norm=norm)(q, y, kind="probs")


def test_perfectly_calibrated_construction_has_zero_ece():
    # In every bin the frequency of positives equals the (constant) confidence. It is also calibrated in
    # the top-label sense: confidence 3/4 (q1 = 1/4 or 3/4) is right 6 times in 8, 1/2 once in 2, 1 twice.
    q1 = [0.25] * 4 + [0.5] * 2 + [0.75] * 4 + [1.0] * 2
    y = [1, 0, 0, 0] + [1, 0] + [1, 1, 1, 0] + [1, 1]
    for closed in ("right", "left"):
        assert BinnedCalibrationError("binary", n_bins=4, closed=closed)(_binary(q1), y, kind="probs") == pytest.approx(
            0.0, abs=EXACT
        )
        assert BinnedCalibrationError("top_label", n_bins=4, closed=closed)(
            _binary(q1), y, kind="probs"
        ) == pytest.approx(0.0, abs=EXACT)
    # flipping one label breaks it: bin of q1 = 1/2 gets frequency 0 (gap 1/2 on 2 of 12 samples)
    y[4] = 0
    assert BinnedCalibrationError("binary", n_bins=4)(_binary(q1), y, kind="probs") == pytest.approx(1 / 12, rel=EXACT)


def test_counts_sum_to_n():
    rng = np.random.default_rng(0)
    q = rng.dirichlet(np.ones(3), size=257)
    y = rng.integers(0, 3, size=257)
    for n_bins in (1, 7, 15):
        assert BinnedCalibrationError("top_label", n_bins=n_bins).reliability(q, y, kind="probs")[0].counts.sum() == 257
        q2 = q[:, :2] / q[:, :2].sum(axis=1, keepdims=True)
        assert (
            BinnedCalibrationError("binary", n_bins=n_bins).reliability(q2, y % 2, kind="probs")[0].counts.sum() == 257
        )


def test_l2_is_at_most_l1():
    # every gap lies in [0, 1], so gap^2 <= gap bin by bin
    rng = np.random.default_rng(0)
    q = rng.dirichlet([0.5, 0.5], size=300)
    y = rng.integers(0, 2, size=300)
    for n_bins in (3, 10, 15):
        l1 = BinnedCalibrationError("binary", n_bins=n_bins)(q, y, kind="probs")
        l2 = BinnedCalibrationError("binary", n_bins=n_bins, norm="squared")(q, y, kind="probs")
        assert 0 < l2 <= l1


def test_ece_mc_of_figure_6_systems():
    # notes/000 §3.4, saved notebook output: ECEmc in % with M = 15 bins (low, high], K = 10, N = 2000.
    # Printed to 2 decimals: tolerance half a unit of the last digit.
    data = gaussian_posteriors(n_classes=10, n_samples=2000, prior1=0.8, variance=0.08, seed=0, rng="paper")
    published = {"cal": 0.60, "mcp": 15.60, "mcs": 6.70, "mcps": 32.98}
    for name, value in published.items():
        ece = 100 * BinnedCalibrationError("top_label", n_bins=15)(data.systems[name], data.labels, kind="logprobs")
        assert ece == pytest.approx(value, abs=0.005), name


def test_binary_ece_rejects_three_classes():
    q = np.full((4, 3), 1 / 3)
    with pytest.raises(CalibInputError, match="scores"):
        BinnedCalibrationError("binary", n_bins=10)(q, [0, 1, 2, 0], kind="probs")


def test_reliability_bins_rejects_outcome_of_another_length():
    with pytest.raises(CalibInputError, match="outcome"):
        reliability_bins([0.2, 0.4, 0.9], [1, 0], n_bins=2, closed="right")


# --- one estimator for every target ------------------------------------------------------------------


def _dirichlet(seed: int, n: int, k: int):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(k, 0.7), size=n)
    return probs, rng.integers(0, k, n)


@pytest.mark.parametrize("k", [3, 4])
@pytest.mark.parametrize("n_bins", [2, 5])
def test_canonical_target_equals_eta_hat_over_a_uniform_grid(k, n_bins):
    """Vaicenavicius et al. (2019), eq. 6 with d = TV over equal bins of the simplex, computed independently
    by calib.calibration_errors.miscalibration (mixed-radix cell keys) on the classes in reverse order, so
    that its grid bins the same K - 1 coordinates (1..K-1) as the estimator."""
    from calib.calibration_errors.miscalibration import expected_miscalibration
    from calib.calibration_errors.simplex_binning import UniformGrid

    probs, y = _dirichlet(k, 3000, k)
    ours = BinnedCalibrationError("canonical", n_bins=n_bins, closed="left")(probs, y, kind="probs")
    grid = expected_miscalibration(probs[:, ::-1], k - 1 - y, kind="probs", binning=UniformGrid(n_bins), distance="tv")
    assert ours == pytest.approx(grid, rel=1e-12)  # the same cells, their terms summed in another order


@pytest.mark.parametrize("closed", ["right", "left"])
def test_canonical_target_of_two_classes_is_the_binary_ece(closed):
    probs, y = _dirichlet(0, 500, 2)
    probs[:50, 1] = np.round(probs[:50, 1], 1)  # some scores on edges
    probs[:50, 0] = 1 - probs[:50, 1]
    for norm in ("l1", "max"):
        canonical = BinnedCalibrationError("canonical", n_bins=10, closed=closed, norm=norm)(probs, y, kind="probs")
        binary = BinnedCalibrationError("binary", n_bins=10, closed=closed, norm=norm)(probs, y, kind="probs")
        # the same bins; TV of the 2-vector gap (a, -a) is |a| but for the rounding of 1 - p in the column sums
        assert canonical == pytest.approx(binary, rel=1e-13)


def test_canonical_target_hand_computed():
    # 2 bins per class on classes 1 and 2: cells by (q1 > 1/2, q2 > 1/2)
    probs = np.array([[0.6, 0.2, 0.2], [0.2, 0.7, 0.1], [0.3, 0.6, 0.1], [0.1, 0.1, 0.8]])
    y = [0, 1, 2, 2]
    # cell (0, 0): sample 0, TV(e_0, q) = 0.4; cell (1, 0): samples 1, 2: mean (0.25, 0.65, 0.1),
    # frequency (0, 1/2, 1/2), TV = (0.25 + 0.15 + 0.4) / 2 = 0.4; cell (0, 1): sample 3, TV = 0.2
    ece = BinnedCalibrationError("canonical", n_bins=2)
    # the decimal probabilities are not exact in binary: the value is 0.35 to a few ulps
    assert ece(probs, y, kind="probs") == pytest.approx((0.4 + 2 * 0.4 + 0.2) / 4, rel=1e-14)
    assert BinnedCalibrationError("canonical", n_bins=2, norm="max")(probs, y, kind="probs") == pytest.approx(0.4)
    assert BinnedCalibrationError("canonical", n_bins=2, average=True)(probs, y, kind="probs") == pytest.approx(1 / 3)


def test_classwise_reliability_is_each_class_against_the_rest():
    probs, y = _dirichlet(1, 400, 3)
    ece = BinnedCalibrationError("classwise", n_bins=7, closed="left", norm="l2")
    per_class = ece.reliability(probs, y, kind="probs")
    assert len(per_class) == 3
    for j, bins in enumerate(per_class):
        direct = reliability_bins(probs[:, j], y == j, n_bins=7, closed="left")
        np.testing.assert_array_equal(bins.counts, direct.counts)
        np.testing.assert_array_equal(bins.frequency, direct.frequency)
    # the same per-class values averaged by np.mean both times
    assert ece(probs, y, kind="probs") == pytest.approx(np.mean([b.ece("l2") for b in per_class]), rel=1e-15)
    mce = BinnedCalibrationError("classwise", n_bins=7, closed="left", norm="max")(probs, y, kind="probs")
    assert mce == max(b.mce() for b in per_class)


def test_auto_target_is_binary_for_two_classes_and_top_label_otherwise():
    two, y2 = _dirichlet(2, 300, 2)
    three, y3 = _dirichlet(3, 300, 3)
    auto = BinnedCalibrationError("auto", n_bins=10)
    assert auto(two, y2, kind="probs") == BinnedCalibrationError("binary", n_bins=10)(two, y2, kind="probs")
    assert auto(three, y3, kind="probs") == BinnedCalibrationError(n_bins=10)(three, y3, kind="probs")


def test_edge_tolerance_decides_scores_a_rounding_away_from_an_edge():
    # 0.1 + 0.2 - 0.1 = 0.20000000000000004: on the edge 1/5 with the default tolerance, above it without
    scores = _binary([0.1 + 0.2 - 0.1, 0.9])
    with_tolerance = BinnedCalibrationError("binary", n_bins=5).reliability(scores, [1, 1], kind="probs")[0]
    exact = BinnedCalibrationError("binary", n_bins=5, edge_tolerance=0.0).reliability(scores, [1, 1], kind="probs")[0]
    assert np.flatnonzero(with_tolerance.counts).tolist() == [0, 4]
    assert np.flatnonzero(exact.counts).tolist() == [1, 4]


@pytest.mark.parametrize(
    ("setting", "named"),
    # single fields are refused by their declarations (tests/calib/evaluation/test_settings.py); these rules
    # join two fields
    [
        ({"norm": "l1", "debiased": True}, "debiased"),
        ({"target": "canonical", "norm": "l2"}, "target='canonical' takes norm"),
    ],
)
def test_settings_that_do_not_go_together_are_named_when_the_estimator_is_made(setting, named):
    with pytest.raises(CalibInputError, match=named):
        BinnedCalibrationError(**setting)


def test_canonical_target_has_no_reliability_bins():
    probs, y = _dirichlet(4, 20, 3)
    with pytest.raises(CalibInputError, match="no reliability bins"):
        BinnedCalibrationError("canonical").reliability(probs, y, kind="probs")


@pytest.mark.parametrize(
    "settings",
    [
        {"target": "top_label"},
        {"target": "classwise", "n_bins": 5},
        {"target": "classwise", "norm": "max"},
        {"target": "top_label", "norm": "l2", "debiased": True},
        {"target": "top_label", "strategy": "equal-mass", "n_bins": 4},
        {"target": "top_label", "closed": "left", "edges": "float32", "one_in_extra_bin": True},
        {"target": "classwise", "norm": "squared", "average": True},
        {"target": "canonical", "n_bins": 3},
    ],
    ids=lambda s: "-".join(f"{v}" for v in s.values()),
)
@pytest.mark.parametrize("kind", ["probs", "logprobs"])
def test_with_scores_is_the_estimator_of_each_label_draw_bit_for_bit(settings, kind):
    rng = np.random.default_rng(11)
    probs = rng.dirichlet(np.ones(3), size=300)
    probs[:20] = np.round(probs[:20] * 5) / 5  # scores on the edges
    probs /= probs.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):  # a rounded score of 0 is a log-probability of -inf
        scores = np.log(probs) if kind == "logprobs" else probs
    ece = BinnedCalibrationError(**settings)
    of_labels = ece.with_scores(scores, kind=kind)
    draws = rng.integers(0, 3, size=(30, 300))
    values = [of_labels(y) for y in draws]
    assert values == [ece(scores, y, kind=kind) for y in draws]  # the same floats, not merely close
    assert len(set(values)) > 1


def test_with_scores_checks_each_draw_of_labels():
    of_labels = BinnedCalibrationError().with_scores([[0.9, 0.1], [0.4, 0.6]], kind="probs")
    with pytest.raises(CalibInputError, match="labels"):
        of_labels([0, 2])
