"""ECE presets of other libraries (calib.calibration_errors.presets), checked on hand-computed cases and against
the libraries."""

import dataclasses
from importlib.metadata import version

import numpy as np
import pytest
from peer_fixtures import check_fingerprint, load_json, recipes

from calib.calibration_errors.binning import grid_edges
from calib.calibration_errors.presets import PRESETS, ece_preset
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
        assert ece_preset(preset, n_bins=10)(_binary(P), Y, kind="probs") == pytest.approx(0.29, abs=1e-12)


def test_netcal_puts_edge_values_in_the_upper_bin():
    # [0.4, 0.5) = {0.45}: 0.55; [0.5, 0.6) = {0.5, 0.55}: mean 0.525, freq 1/2 -> 0.025; [0.9, 1] = {0.95, 1}: 0.475
    expected = (0.55 + 2 * 0.025 + 2 * 0.475) / 5
    assert ece_preset("netcal", n_bins=10)(_binary(P), Y, kind="probs") == pytest.approx(expected, abs=1e-12)
    assert expected == pytest.approx(0.31)


def test_torchmetrics_puts_one_in_an_extra_bin():
    # as netcal, but p = 1.0 (label 0) sits alone: gap 1.0; 0.95 alone: gap 0.05
    expected = (0.55 + 2 * 0.025 + 0.05 + 1.0) / 5
    bins = ece_preset("torchmetrics", n_bins=10).reliability(_binary(P), Y, kind="probs")[0]
    assert bins.counts.size == 11 and bins.counts[10] == 1
    assert ece_preset("torchmetrics", n_bins=10)(_binary(P), Y, kind="probs") == pytest.approx(expected)


def test_linspace_edges_move_a_score_of_point_three():
    # linspace edge 3 is 0.30000000000000004 > 0.3: a right-closed rule still puts 0.3 in (0.2, 0.3],
    # a left-closed rule on linspace edges puts it in [0.2, 0.3) (netcal); torchmetrics compares float32
    # 0.3 with the float32 edge 0.3, equal, so it goes to [0.3, 0.4).
    assert grid_edges(10, "linspace")[3] > 0.3 and grid_edges(10, "exact")[3] == 0.3
    scores, labels = _binary([0.3]), [1]
    netcal = ece_preset("netcal", n_bins=10).reliability(scores, labels, kind="probs")[0]
    torch_like = ece_preset("torchmetrics", n_bins=10).reliability(scores, labels, kind="probs")[0]
    survey = ece_preset("survey", n_bins=10).reliability(scores, labels, kind="probs")[0]
    assert np.flatnonzero(netcal.counts).tolist() == [2]
    assert np.flatnonzero(torch_like.counts).tolist() == [3]
    assert np.flatnonzero(survey.counts).tolist() == [2]


def test_torchmetrics_edges_are_its_float32_linspace():
    # torch.linspace(0, 1, 16, dtype=float32)[3] is 0.20000002, one float32 ulp above float32(0.2) =
    # float32(3 / 15): at torchmetrics' default 15 bins a score of 0.2 goes to [2/15, 3/15), 0.4 to
    # [5/15, 6/15) for the same reason, while 0.6 sits above its edge 0.59999996 and stays in bin 9.
    edges = grid_edges(15, "float32")
    assert edges[3] == np.float32(0.20000002) > np.float32(0.2)
    assert edges[9] == np.float32(0.59999996) < np.float32(0.6)
    bins = ece_preset("torchmetrics", n_bins=15).reliability(_binary([0.2, 0.4, 0.6]), [1, 1, 1], kind="probs")[0]
    assert np.flatnonzero(bins.counts).tolist() == [2, 5, 9]
    # at 10 bins torch's edges are k / 10 rounded to float32, so the README example holds
    np.testing.assert_array_equal(grid_edges(10, "float32"), (np.arange(11) / 10).astype(np.float32))


def test_multiclass_presets_use_the_top_label_confidence():
    scores = np.array([[0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.1, 0.1, 0.8]])
    labels = [0, 0, 2]
    # confidences 0.6, 0.7, 0.8 in separate bins; correct 1, 0, 1 -> (0.4 + 0.7 + 0.2) / 3
    for preset in ("survey", "netcal", "torchmetrics", "uncertainty_calibration"):
        assert ece_preset(preset, n_bins=10)(scores, labels, kind="probs") == pytest.approx(1.3 / 3)
    with pytest.raises(CalibInputError, match=r"target='binary' needs scores with K = 2 columns"):
        ece_preset("sklearn")(scores, labels, kind="probs")


def test_default_bins_and_unknown_preset():
    assert {name: estimator.n_bins for name, (_, estimator) in PRESETS.items()} == {
        "survey": 10, "sklearn": 5, "netcal": 10, "torchmetrics": 15, "uncertainty_calibration": 15,
        "kull2019": 14,
    }  # fmt: skip
    with pytest.raises(CalibInputError, match="preset must be one of"):
        ece_preset("pycalib")
    with pytest.raises(CalibInputError, match="norm must be one of"):
        ece_preset("survey", norm="l3")


def _kull_digitize_classwise(probs, labels, bins=15, power=1):
    """Class-wise ECE by the rule of Kull et al. (2019)'s released code, written here from its description:
    per class j, bin q_j by np.digitize on np.linspace(0, 1, bins), weigh each non-empty bin's
    |mean score - frequency of "label is j"| ** power by its count / N, add; then average over the classes."""
    n, k = probs.shape
    edges = np.linspace(0.0, 1.0, bins)
    per_class = []
    for j in range(k):
        score, hit = probs[:, j], (labels == j).astype(float)
        ids = np.digitize(score, edges)
        per_class.append(
            sum(np.count_nonzero(ids == b) / n * abs(score[ids == b].mean() - hit[ids == b].mean()) ** power
                for b in np.unique(ids))
        )  # fmt: skip
    return float(np.mean(per_class)), per_class


def _kull_cases(k, seed, n=600):
    """Random K-class posteriors with scores of exactly 1.0, exactly on linspace(0, 1, 15) edges, and one ulp
    below k / 14 (where linspace's edges 5, 9, 10 and 13 lie: those go to the upper bin by linspace edges but
    to the lower one by exact edges k / 14)."""
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(k, 0.3), size=n)
    probs[:40] = np.eye(k)[rng.integers(0, k, 40)]  # one-hot rows: scores 1.0 and 0.0
    special = np.r_[np.linspace(0, 1, 15)[1:-1], np.nextafter(np.arange(1, 14) / 14, 0.0)]
    values = rng.choice(special, size=200)
    rows = np.zeros((200, k))
    rows[:, 0], rows[:, 1] = values, 1.0 - values
    probs[40:240] = np.take_along_axis(rows, np.argsort(rng.random((200, k)), axis=1), axis=1)  # shuffled
    labels = np.array([rng.choice(k, p=p) for p in probs])
    labels[:20] = (labels[:20] + rng.integers(1, k, 20)) % k  # a score of 1.0 with the wrong label
    sure = (probs.max(axis=1) >= 13 / 14) & (probs.max(axis=1) < 1)
    labels[sure] = probs[sure].argmax(axis=1)  # the bin below 1.0 under-confident, p = 1 over-confident
    return probs, labels


@pytest.mark.parametrize(("k", "seed"), [(2, 0), (3, 1), (5, 2), (10, 3)])
def test_kull2019_preset_matches_digitize_on_linspace(k, seed):
    probs, labels = _kull_cases(k, seed)
    assert (probs == 1.0).sum() >= 40 and np.isin(probs, np.linspace(0, 1, 15)[1:-1]).sum() > 50
    expected, per_class = _kull_digitize_classwise(probs, labels)
    preset = ece_preset("kull2019")
    assert preset(probs, labels, kind="probs") == pytest.approx(expected, rel=1e-12, abs=1e-15)
    bins = preset.reliability(probs, labels, kind="probs")
    assert len(bins) == k
    for j, class_bins in enumerate(bins):  # the same 15 bins, sample for sample, and each class's ECE
        ids = np.digitize(probs[:, j], np.linspace(0, 1, 15)) - 1
        np.testing.assert_array_equal(class_bins.counts, np.bincount(ids, minlength=15))
        assert class_bins.counts[14] == np.count_nonzero(probs[:, j] == 1.0)
        assert class_bins.ece() == pytest.approx(per_class[j], rel=1e-12, abs=1e-15)
    squared = ece_preset("kull2019", norm="squared")(probs, labels, kind="probs")
    assert squared == pytest.approx(_kull_digitize_classwise(probs, labels, power=2)[0], rel=1e-12, abs=1e-15)
    # each of the preset's choices matters on these scores: exact edges k / 14, the lower bin on an
    # edge, p = 1 in the last bin, calib's edge tolerance or the top-label target each change the ECE
    base = PRESETS["kull2019"][1]
    for change in (
        {"edges": "exact"}, {"closed": "right"}, {"one_in_extra_bin": False}, {"edge_tolerance": 1e-12},
        {"target": "top_label" if k > 2 else "binary"},
    ):  # fmt: skip
        other = dataclasses.replace(base, **change)(probs, labels, kind="probs")
        assert abs(other - expected) > 1e-9, change


def test_kull2019_preset_on_the_worked_example():
    # class 1 bins as torchmetrics (1.0 alone): 0.33; class 0 scores 0.55, 0.5, 0.45, 0.05, 0.0 against
    # outcomes 0, 1, 0, 0, 1: [0, 0.1) = {0.05, 0}: 0.475; [0.4, 0.5) = {0.45}: 0.45; [0.5, 0.6) = {0.5, 0.55}:
    # 0.025 -> (2 0.475 + 0.45 + 2 0.025) / 5 = 0.29; mean 0.31
    scores = _binary(P)
    per_class = [b.ece() for b in ece_preset("kull2019", n_bins=10).reliability(scores, Y, kind="probs")]
    assert per_class == pytest.approx([0.29, 0.33], abs=1e-12)
    assert ece_preset("kull2019", n_bins=10)(scores, Y, kind="probs") == pytest.approx(0.31, abs=1e-12)
    assert _kull_digitize_classwise(scores, np.array(Y), bins=11)[0] == pytest.approx(0.31, abs=1e-12)


def test_sklearn_preset_matches_calibration_curve():
    from sklearn.calibration import calibration_curve

    rng = np.random.default_rng(0)
    p = np.round(rng.random(500), 2)  # many scores on edges
    y = (rng.random(500) < p).astype(int)
    prob_true, prob_pred = calibration_curve(y, p, n_bins=10, strategy="uniform")
    bins = ece_preset("sklearn", n_bins=10).reliability(_binary(p), y, kind="probs")[0]
    full = bins.occupied
    np.testing.assert_allclose(bins.frequency[full], prob_true, rtol=0, atol=1e-12)
    np.testing.assert_allclose(bins.mean_confidence[full], prob_pred, rtol=0, atol=1e-12)


# ---------------------------------------------------------------------------------------------
# Against the libraries themselves: netcal and torchmetrics as stored by
# benchmarks/write_peer_fixtures.py (both need torch, which CI does not install), uncertainty-calibration
# live (pure Python, in the 'test' extra). Inputs: uniform and softmax scores, and scores on bin edges.

STORED = load_json("ece_presets")
NETCAL = STORED["peers"]["netcal"]
TORCHMETRICS = STORED["peers"]["torchmetrics"]
CASES = [(name, m) for name in recipes.ECE_INPUTS for m in recipes.N_BINS]


def _case_id(case):
    return f"{case['input']}-{case['n_bins']}"


def _stored_inputs(name):
    params = dict(STORED["inputs"][name])
    recorded = params.pop("fingerprint")
    probs, labels = recipes.ece_inputs(**params)
    check_fingerprint(recorded, probs, labels, f"ECE input {name!r}")
    return probs, labels


@pytest.mark.parametrize("peer", [NETCAL, TORCHMETRICS], ids=lambda peer: peer["peer"])
def test_stored_peer_cases_cover_every_input(peer):
    """Every input of the recipe, at every bin count, has a stored value: a missing case fails here."""
    assert {name: {**params, "fingerprint": None} for name, params in STORED["inputs"].items()} == {
        name: {**params, "fingerprint": None} for name, params in recipes.ECE_INPUTS.items()
    }, "the recipe's ECE inputs changed since the fixtures were written"
    assert sorted((case["input"], case["n_bins"]) for case in peer["cases"]) == sorted(CASES)


@pytest.mark.parametrize("case", NETCAL["cases"], ids=_case_id)
def test_netcal_preset_matches_netcal(case):
    """Same bins, sample for sample; the ECE to rounding (netcal clips scores to [eps, 1 - eps] before
    averaging them, which moves a bin mean by at most eps = 2.2e-16, and sums in another order)."""
    probs, labels = _stored_inputs(case["input"])
    peer = f"netcal {NETCAL['version']} ECE(bins={case['n_bins']}) on {case['input']}"
    bins = ece_preset("netcal", n_bins=case["n_bins"]).reliability(probs, labels, kind="probs")[0]
    np.testing.assert_array_equal(bins.counts, case["counts"], err_msg=peer)
    assert bins.ece("l1") == pytest.approx(case["ece"], abs=1e-12), peer


@pytest.mark.parametrize("m", [int(m) for m in TORCHMETRICS["bin_edges"]])
def test_float32_edges_are_torchmetrics_edges(m):
    """torchmetrics bins on torch.linspace(0, 1, M + 1) in float32: the same numbers, to the bit."""
    peer = f"torchmetrics {TORCHMETRICS['version']} (torch {STORED['environment']['torch']}) edges, M = {m}"
    np.testing.assert_array_equal(grid_edges(m, "float32"), TORCHMETRICS["bin_edges"][str(m)], err_msg=peer)


@pytest.mark.parametrize("case", TORCHMETRICS["cases"], ids=_case_id)
def test_torchmetrics_preset_matches_torchmetrics(case):
    """Same bins, sample for sample (an (M + 1)-th bin for p = 1); the ECE within torchmetrics' float32
    arithmetic: its per-bin sums of n terms in [0, 1] may be off by n 2^-24 relative, so the ECE by n 2^-24."""
    probs, labels = _stored_inputs(case["input"])
    peer = f"torchmetrics {TORCHMETRICS['version']} calibration_error(n_bins={case['n_bins']}) on {case['input']}"
    bins = ece_preset("torchmetrics", n_bins=case["n_bins"]).reliability(probs, labels, kind="probs")[0]
    np.testing.assert_array_equal(bins.counts, case["counts"], err_msg=peer)
    assert bins.ece("l1") == pytest.approx(case["ece"], abs=labels.size * 2.0**-24), peer


@pytest.mark.parametrize(("name", "m"), CASES)
def test_uncertainty_calibration_preset_matches_get_ece(name, m):
    """uncertainty-calibration's get_ece (float64, as here): same bins and the same ECE to rounding."""
    from calibration import utils

    probs, labels = recipes.ece_inputs(**recipes.ECE_INPUTS[name])
    peer = f"uncertainty-calibration {version('uncertainty-calibration')} get_ece(num_bins={m}) on {name}"
    if probs.shape[1] == 2:  # the peer's binary input is the positive-class probability
        scores, confidence, outcome = probs[:, 1], probs[:, 1], labels
    else:
        scores, confidence = probs, utils.get_top_probs(probs)
        outcome = (utils.get_top_predictions(probs) == labels).astype(float)
    # the peer's own binning, as its get_ece does it: edges j / M, then its bin(...)
    binned = utils.bin(list(zip(confidence, outcome, strict=True)), utils.get_equal_prob_bins(confidence, m))
    bins = ece_preset("uncertainty_calibration", n_bins=m).reliability(probs, labels, kind="probs")[0]
    np.testing.assert_array_equal(bins.counts, [len(b) for b in binned], err_msg=peer)
    assert bins.ece("l1") == pytest.approx(utils.get_ece(scores, labels, num_bins=m), abs=1e-12), peer
