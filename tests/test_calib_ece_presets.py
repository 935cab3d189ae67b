"""ECE presets of other libraries (calib.ece_presets), checked on hand-computed cases."""

import numpy as np
import pytest

from calib.ece_presets import PRESETS, preset_ece, preset_edges, preset_reliability
from calib.validation import CalibInputError


def _binary(p):
    p = np.asarray(p, dtype=float)
    return np.column_stack([1 - p, p])


# p on edges 0.5 and 1.0: the presets differ only by the edge rule and by where 1.0 goes.
P = [0.45, 0.5, 0.55, 0.95, 1.0]
Y = [1, 0, 1, 1, 0]


def test_right_closed_presets_put_edge_values_in_the_lower_bin():
    # bins (0.4, 0.5] = {0.45, 0.5}: mean 0.475, freq 1/2; (0.5, 0.6] = {0.55}: gap 0.45;
    # (0.9, 1] = {0.95, 1.0}: mean 0.975, freq 1/2 -> ECE = 2/5 0.025 + 1/5 0.45 + 2/5 0.475 = 0.29
    for preset in ("survey", "sklearn", "uncertainty_calibration"):
        assert preset_ece(_binary(P), Y, kind="probs", preset=preset, n_bins=10) == pytest.approx(0.29, abs=1e-12)


def test_netcal_puts_edge_values_in_the_upper_bin():
    # [0.4, 0.5) = {0.45}: 0.55; [0.5, 0.6) = {0.5, 0.55}: mean 0.525, freq 1/2 -> 0.025; [0.9, 1] = {0.95, 1}: 0.475
    expected = (0.55 + 2 * 0.025 + 2 * 0.475) / 5
    assert preset_ece(_binary(P), Y, kind="probs", preset="netcal", n_bins=10) == pytest.approx(expected, abs=1e-12)
    assert expected == pytest.approx(0.31)


def test_torchmetrics_puts_one_in_an_extra_bin():
    # as netcal, but p = 1.0 (label 0) sits alone: gap 1.0; 0.95 alone: gap 0.05
    expected = (0.55 + 2 * 0.025 + 0.05 + 1.0) / 5
    bins = preset_reliability(_binary(P), Y, kind="probs", preset="torchmetrics", n_bins=10)
    assert bins.counts.size == 11 and bins.counts[10] == 1
    assert preset_ece(_binary(P), Y, kind="probs", preset="torchmetrics", n_bins=10) == pytest.approx(expected)


def test_linspace_edges_move_a_score_of_point_three():
    # linspace edge 3 is 0.30000000000000004 > 0.3: a right-closed rule still puts 0.3 in (0.2, 0.3],
    # a left-closed rule on linspace edges puts it in [0.2, 0.3) (netcal); torchmetrics compares float32
    # 0.3 with the float32 edge 0.3, equal, so it goes to [0.3, 0.4).
    assert preset_edges(10, "linspace")[3] > 0.3 and preset_edges(10, "exact")[3] == 0.3
    scores, labels = _binary([0.3]), [1]
    netcal = preset_reliability(scores, labels, kind="probs", preset="netcal", n_bins=10)
    torch_like = preset_reliability(scores, labels, kind="probs", preset="torchmetrics", n_bins=10)
    survey = preset_reliability(scores, labels, kind="probs", preset="survey", n_bins=10)
    assert np.flatnonzero(netcal.counts).tolist() == [2]
    assert np.flatnonzero(torch_like.counts).tolist() == [3]
    assert np.flatnonzero(survey.counts).tolist() == [2]


def test_torchmetrics_edges_are_its_float32_linspace():
    # torch.linspace(0, 1, 16, dtype=float32)[3] is 0.20000002, one float32 ulp above float32(0.2) =
    # float32(3 / 15): at torchmetrics' default 15 bins a score of 0.2 goes to [2/15, 3/15), 0.4 to
    # [5/15, 6/15) for the same reason, while 0.6 sits above its edge 0.59999996 and stays in bin 9.
    edges = preset_edges(15, "float32")
    assert edges[3] == np.float32(0.20000002) > np.float32(0.2)
    assert edges[9] == np.float32(0.59999996) < np.float32(0.6)
    bins = preset_reliability(_binary([0.2, 0.4, 0.6]), [1, 1, 1], kind="probs", preset="torchmetrics", n_bins=15)
    assert np.flatnonzero(bins.counts).tolist() == [2, 5, 9]
    # at 10 bins torch's edges are k / 10 rounded to float32, so the README example holds
    np.testing.assert_array_equal(preset_edges(10, "float32"), (np.arange(11) / 10).astype(np.float32))


def test_multiclass_presets_use_the_top_label_confidence():
    scores = np.array([[0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.1, 0.1, 0.8]])
    labels = [0, 0, 2]
    # confidences 0.6, 0.7, 0.8 in separate bins; correct 1, 0, 1 -> (0.4 + 0.7 + 0.2) / 3
    for preset in ("survey", "netcal", "torchmetrics", "uncertainty_calibration"):
        assert preset_ece(scores, labels, kind="probs", preset=preset, n_bins=10) == pytest.approx(1.3 / 3)
    with pytest.raises(CalibInputError, match="binary only"):
        preset_ece(scores, labels, kind="probs", preset="sklearn")


def test_default_bins_and_unknown_preset():
    assert {k: v.n_bins for k, v in PRESETS.items()} == {
        "survey": 10, "sklearn": 5, "netcal": 10, "torchmetrics": 15, "uncertainty_calibration": 15,
    }  # fmt: skip
    with pytest.raises(CalibInputError, match="preset must be one of"):
        preset_ece(_binary(P), Y, kind="probs", preset="pycalib")
    with pytest.raises(CalibInputError, match="norm must be one of"):
        preset_ece(_binary(P), Y, kind="probs", preset="survey", norm="l3")


def test_sklearn_preset_matches_calibration_curve():
    from sklearn.calibration import calibration_curve

    rng = np.random.default_rng(0)
    p = np.round(rng.random(500), 2)  # many scores on edges
    y = (rng.random(500) < p).astype(int)
    prob_true, prob_pred = calibration_curve(y, p, n_bins=10, strategy="uniform")
    bins = preset_reliability(_binary(p), y, kind="probs", preset="sklearn", n_bins=10)
    full = bins.occupied
    np.testing.assert_allclose(bins.frequency[full], prob_true, rtol=0, atol=1e-12)
    np.testing.assert_allclose(bins.mean_confidence[full], prob_pred, rtol=0, atol=1e-12)
