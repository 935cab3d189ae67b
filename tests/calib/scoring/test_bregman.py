"""Tests of calib.scoring.bregman: Bregman divergences and the sharpness-gap / calibration-error decomposition.

Source: paper 002, "Reassessing how to compare and improve the calibration of machine learning
models", Sect. 4 and Appendices A-C; the property tests T1-T8 are those of notes 002 §2, run on
small exact finite worlds (hand-built and seeded random ones), where every conditional expectation
is a finite sum, so the identities hold to rounding and the inequalities hold exactly.
"""

import dataclasses
import math

import numpy as np
import pytest
from scipy.integrate import quad

from calib.scoring.bregman import (
    FiniteWorld,
    PointwiseSharpness,
    SharpnessCalibration,
    bregman_divergence,
    bregman_divergence_1d,
    confidence_decomposition,
    confidence_problem_decomposition,
    convex_generator,
    convex_generator_1d,
    empirical_decomposition,
    full_decomposition,
    kernel_calibration_error,
    pointwise_sharpness_gap,
    prediction_groups,
    sample_world,
)
from calib.scoring.decomposition import calibration_refinement
from calib.validation import CalibInputError

LOSSES = ("brier", "log")
TARGETS = ("conditional", "label")
SEEDS = range(6)


def _random_world(seed, k=4, m=14, n_base=3, zeros=True):
    """A finite world whose atoms share predictions, and whose distinct predictions share confidences.

    Predictions come from a pool of Dirichlet vectors plus coordinate permutations of them: a
    permuted copy has the same maximum (the same confidence) but is a different vector, often with a
    different argmax. Conditionals have some exact zeros (to exercise 0 ln 0 = 0); predictions are
    strictly positive so that every log-loss term is finite.
    """
    rng = np.random.default_rng(seed)
    base = rng.dirichlet(np.ones(k), size=n_base)
    pool = np.vstack([base] + [base[:, rng.permutation(k)] for _ in range(2)])
    predictions = pool[rng.integers(0, len(pool), size=m)]
    conditionals = rng.dirichlet(np.ones(k), size=m)
    if zeros:
        mask = rng.uniform(size=(m, k)) < 0.3
        mask[np.arange(m), rng.integers(0, k, size=m)] = False  # keep at least one positive entry
        conditionals = np.where(mask, 0.0, conditionals)
        conditionals /= conditionals.sum(axis=1, keepdims=True)
    weights = rng.dirichlet(np.ones(m))
    return FiniteWorld(weights, conditionals, predictions)


def _worlds():
    return [_random_world(seed, k=k) for seed in SEEDS for k in (2, 3, 5)]


def _assert_adds_up(result):
    assert abs(result.total - (result.sharpness + result.calibration)) < 1e-12
    assert abs(result.total - (result.sharpness + result.calibration)) <= 1e-10 * abs(result.total)


# --- independent oracle: the finite-world formulas of notes §2, with explicit loops ---------------------------


def _phi(v, loss):
    if loss == "brier":
        return sum(x * x for x in v)
    return sum(x * math.log(x) for x in v if x > 0)


def _d(x, y, loss):
    if loss == "brier":
        return sum((a - b) ** 2 for a, b in zip(x, y, strict=True))
    total = 0.0
    for a, b in zip(x, y, strict=True):
        if a > 0:
            total += math.inf if b == 0 else a * math.log(a / b)
    return total


def _oracle(world, loss, target):
    """(total, sharpness, calibration) of T1, by grouping atoms in a dict keyed on the prediction tuple."""
    w, q, p = world.weights.tolist(), world.conditionals.tolist(), world.predictions.tolist()
    k = len(q[0])
    eye = np.eye(k).tolist()
    groups = {}
    for j, pj in enumerate(p):
        groups.setdefault(tuple(pj), []).append(j)
    if target == "conditional":
        total = sum(w[j] * _d(q[j], p[j], loss) for j in range(len(w)))
        e_phi = sum(w[j] * _phi(q[j], loss) for j in range(len(w)))
    else:
        total = sum(w[j] * q[j][y] * _d(eye[y], p[j], loss) for j in range(len(w)) for y in range(k) if q[j][y] > 0)
        e_phi = sum(w[j] * q[j][y] * _phi(eye[y], loss) for j in range(len(w)) for y in range(k))
    sharp_second, calibration = 0.0, 0.0
    for v, members in groups.items():
        weight = sum(w[j] for j in members)
        mu = [sum(w[j] * q[j][y] for j in members) / weight for y in range(k)]
        sharp_second += weight * _phi(mu, loss)
        calibration += weight * _d(mu, v, loss)
    return total, e_phi - sharp_second, calibration


# --- divergences and generators (eq. 4.1) -----------------------------------------------------------------------


def test_divergences_hand_values():
    p = np.array([[1.0, 0.0], [0.5, 0.5], [0.5, 0.5], [0.0, 1.0]])
    q = np.array([[0.5, 0.5], [0.25, 0.75], [1.0, 0.0], [0.0, 1.0]])
    np.testing.assert_allclose(bregman_divergence(p, q, loss="brier"), [0.5, 0.125, 0.5, 0.0], rtol=0, atol=1e-15)
    kl = bregman_divergence(p, q, loss="log")
    np.testing.assert_allclose(kl[:2], [math.log(2), 0.5 * math.log(2) + 0.5 * math.log(2 / 3)], rtol=1e-15)
    assert kl[2] == math.inf  # q = 0 < p
    assert kl[3] == 0.0  # 0 ln 0 = 0
    np.testing.assert_allclose(
        bregman_divergence_1d([0.5, 1.0, 0.2], [0.75, 0.6, 0.2], loss="brier"), [0.0625, 0.16, 0]
    )
    np.testing.assert_allclose(
        bregman_divergence_1d([0.5, 1.0, 0.0], [0.75, 0.6, 0.2], loss="log"),
        [0.5 * math.log(0.5 / 0.75) + 0.5 * math.log(0.5 / 0.25), math.log(1 / 0.6), math.log(1 / 0.8)],
        rtol=1e-14,
    )
    assert bregman_divergence_1d(0.5, 1.0, loss="log") == math.inf
    assert bregman_divergence_1d(1.0, 1.0, loss="log") == 0.0
    np.testing.assert_allclose(convex_generator([[0.5, 0.5], [1.0, 0.0]], loss="brier"), [0.5, 1.0])
    np.testing.assert_allclose(convex_generator([[0.5, 0.5], [1.0, 0.0]], loss="log"), [-math.log(2), 0.0])
    np.testing.assert_allclose(convex_generator_1d([0.5, 0.0, 1.0], loss="log"), [-math.log(2), 0.0, 0.0])
    np.testing.assert_allclose(convex_generator_1d([0.5, 0.3], loss="brier"), [0.25, 0.09])


@pytest.mark.parametrize("loss", LOSSES)
def test_divergence_is_eq_4_1_of_its_generator(loss):
    """d_phi(x, y) = phi(x) - phi(y) - grad phi(y)^T (x - y), with grad = 2y (Brier) or ln y + 1 (KL)."""
    rng = np.random.default_rng(1)
    x, y = rng.dirichlet(np.ones(5), size=50), rng.dirichlet(np.ones(5), size=50)
    grad = 2 * y if loss == "brier" else np.log(y) + 1
    expected = convex_generator(x, loss=loss) - convex_generator(y, loss=loss) - ((x - y) * grad).sum(axis=1)
    np.testing.assert_allclose(bregman_divergence(x, y, loss=loss), expected, rtol=1e-11, atol=1e-14)
    a, b = rng.uniform(0.01, 0.99, size=50), rng.uniform(0.01, 0.99, size=50)
    grad1 = 2 * b if loss == "brier" else np.log(b / (1 - b))
    expected1 = convex_generator_1d(a, loss=loss) - convex_generator_1d(b, loss=loss) - grad1 * (a - b)
    np.testing.assert_allclose(bregman_divergence_1d(a, b, loss=loss), expected1, rtol=1e-11, atol=1e-14)


def test_divergence_to_one_hot_is_brier_score_and_nll():
    rng = np.random.default_rng(2)
    scores = rng.dirichlet(np.ones(4), size=30)
    labels = rng.integers(0, 4, size=30)
    onehot = np.eye(4)[labels]
    np.testing.assert_allclose(bregman_divergence(onehot, scores, loss="brier"), ((scores - onehot) ** 2).sum(axis=1))
    np.testing.assert_allclose(bregman_divergence(onehot, scores, loss="log"), -np.log(scores[np.arange(30), labels]))


def test_divergence_kinds_and_broadcast():
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(6, 3))
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    ref = np.array([[0.2, 0.3, 0.5]])
    for loss in LOSSES:
        np.testing.assert_allclose(
            bregman_divergence(logits, logits[::-1], loss=loss, kind="logits"),
            bregman_divergence(probs, probs[::-1], loss=loss),
            rtol=1e-12,
        )
        np.testing.assert_allclose(
            bregman_divergence(probs, ref, loss=loss), bregman_divergence(probs, np.repeat(ref, 6, axis=0), loss=loss)
        )


# --- finite worlds: hand-computed examples ------------------------------------------------------------------------


def test_hand_world_full_decomposition():
    # Two atoms share the prediction (0.8, 0.2); mu = (0.5, 0.5).
    world = FiniteWorld([0.5, 0.5], [[1, 0], [0, 1]], [[0.8, 0.2], [0.8, 0.2]])
    groups = prediction_groups(world)
    np.testing.assert_allclose(groups.means, [[0.5, 0.5]])
    np.testing.assert_allclose(groups.weights, [1.0])
    for target in TARGETS:  # deterministic labels: pi_{Y|X} = e_Y
        r = full_decomposition(world, loss="brier", target=target)
        assert isinstance(r, SharpnessCalibration)
        assert r.total == pytest.approx(0.68, abs=1e-15)  # 0.5 * 0.08 + 0.5 * 1.28
        assert r.sharpness == pytest.approx(0.5, abs=1e-15)  # 1 - ||mu||^2
        assert r.calibration == pytest.approx(0.18, abs=1e-15)  # ||(0.3, -0.3)||^2
    r = full_decomposition(world, loss="log")
    assert r.total == pytest.approx(-0.5 * math.log(0.8) - 0.5 * math.log(0.2), rel=1e-14)
    assert r.sharpness == pytest.approx(math.log(2), rel=1e-14)
    assert r.calibration == pytest.approx(0.5 * math.log(0.5 / 0.8) + 0.5 * math.log(0.5 / 0.2), rel=1e-14)


def test_hand_world_log_loss_with_irreducible_term():
    world = FiniteWorld([1.0], [[0.5, 0.5]], [[0.75, 0.25]])
    kl = 0.5 * math.log(4 / 3)  # KL((1/2, 1/2) || (3/4, 1/4))
    cond = full_decomposition(world, loss="log", target="conditional")
    assert (cond.total, cond.sharpness, cond.calibration) == pytest.approx((kl, 0.0, kl), abs=1e-15)
    label = full_decomposition(world, loss="log", target="label")
    # E d(e_Y, g) = NLL; its sharpness gap is the irreducible term E phi(e_Y) - phi(pi) = ln 2.
    assert label.total == pytest.approx(-0.5 * math.log(0.75) - 0.5 * math.log(0.25), rel=1e-14)
    assert label.sharpness == pytest.approx(math.log(2), rel=1e-14)
    assert label.calibration == pytest.approx(kl, rel=1e-14)
    # K = 2 with one prediction per confidence: the binary KL of the top coordinate is the full KL.
    conf = confidence_decomposition(world, loss="log")
    assert conf.calibration == pytest.approx(kl, rel=1e-14)
    assert conf.sharpness == pytest.approx(0.0, abs=1e-15)


def test_hand_world_shared_confidence():
    # (0.5, 0.3, 0.2) and (0.5, 0.2, 0.3) share h = 0.5 and c = 0; accuracy at h = 0.5 is 0.5.
    world = FiniteWorld([0.5, 0.5], [[1, 0, 0], [0, 1, 0]], [[0.5, 0.3, 0.2], [0.5, 0.2, 0.3]])
    levels = pointwise_sharpness_gap(world, loss="brier")
    assert isinstance(levels, PointwiseSharpness)
    np.testing.assert_allclose(levels.confidence, [0.5])
    np.testing.assert_allclose(levels.weight, [1.0])
    np.testing.assert_allclose(levels.accuracy, [0.5])
    np.testing.assert_allclose(levels.divergence, [0.68])  # 0.5 * 0.38 + 0.5 * 0.98
    np.testing.assert_allclose(levels.full_calibration, [0.68])  # each prediction has its own group
    np.testing.assert_allclose(levels.calibration, [0.0], atol=1e-30)
    np.testing.assert_allclose(levels.rho, [0.68])
    full = full_decomposition(world)
    conf = confidence_decomposition(world)
    assert (full.total, full.sharpness, full.calibration) == pytest.approx((0.68, 0.0, 0.68))
    # Confidence-calibrated but far from fully calibrated: the confidence view moves it all to sharpness.
    assert (conf.total, conf.sharpness, conf.calibration) == pytest.approx((0.68, 0.68, 0.0))


def test_classification_default_is_first_index_argmax():
    world = FiniteWorld([0.5, 0.5], [[0, 1, 0], [0, 1, 0]], [[0.4, 0.4, 0.2], [0.2, 0.4, 0.4]])
    np.testing.assert_array_equal(world.classes, [0, 1])
    np.testing.assert_allclose(world.confidences, [0.4, 0.4])
    levels = pointwise_sharpness_gap(world)
    np.testing.assert_allclose(levels.accuracy, [0.5])  # the first atom's c = 0 is wrong, the second's c = 1 right


def test_world_is_frozen_and_read_only():
    world = _random_world(0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        world.weights = np.ones(3)
    with pytest.raises(ValueError, match="read-only"):
        world.predictions[0, 0] = 0.0


# --- T1: Lemma 4.1 (eq. 4.2), exact identity -------------------------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("loss", LOSSES)
def test_t1_lemma_4_1_identity_on_random_worlds(loss, target):
    for world in _worlds():
        r = full_decomposition(world, loss=loss, target=target)
        _assert_adds_up(r)
        assert r.sharpness >= -1e-12  # Jensen
        assert r.calibration >= 0.0
        np.testing.assert_allclose((r.total, r.sharpness, r.calibration), _oracle(world, loss, target), atol=1e-13)


@pytest.mark.parametrize("loss", LOSSES)
def test_t1_label_sharpness_adds_the_irreducible_term(loss):
    """With Z = e_Y the sharpness gap gains E phi(e_Y) - E phi(pi_{Y|X}) >= 0; the calibration term is unchanged."""
    for world in _worlds():
        cond = full_decomposition(world, loss=loss, target="conditional")
        label = full_decomposition(world, loss=loss, target="label")
        e_phi_onehot = 1.0 if loss == "brier" else 0.0
        irreducible = e_phi_onehot - float(world.weights @ convex_generator(world.conditionals, loss=loss))
        assert irreducible >= 0
        assert label.calibration == pytest.approx(cond.calibration, abs=1e-14)
        assert label.sharpness == pytest.approx(cond.sharpness + irreducible, abs=1e-13)
        assert label.total == pytest.approx(cond.total + irreducible, abs=1e-13)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("loss", LOSSES)
def test_t1_lemma_4_1_on_the_confidence_problem(loss, target):
    """Lemma 4.1 with the 1-D varphi for (1{Y = c(X)}, h(X)); its calibration term is eq. 4.6's right side."""
    for world in _worlds():
        r = confidence_problem_decomposition(world, loss=loss, target=target)
        _assert_adds_up(r)
        assert r.sharpness >= -1e-12
        assert r.calibration == pytest.approx(confidence_decomposition(world, loss=loss).calibration, abs=1e-14)


# --- T2: Prop 4.2, refining the predictor never raises the sharpness gap ------------------------------------


@pytest.mark.parametrize("loss", LOSSES)
def test_t2_prop_4_2_merging_predictions(loss):
    rng = np.random.default_rng(20)
    for world in _worlds():
        groups = prediction_groups(world)
        n_groups, k = groups.predictions.shape
        fine = float(groups.weights @ convex_generator(groups.means, loss=loss))
        for n_cells in range(1, n_groups + 1):
            merge = rng.integers(0, n_cells, size=n_groups)  # g_1 = M o g_2
            coarse_predictions = rng.dirichlet(np.ones(k), size=n_cells)[merge][groups.inverse]
            coarse_world = FiniteWorld(world.weights, world.conditionals, coarse_predictions)
            coarse_groups = prediction_groups(coarse_world)
            coarse = float(coarse_groups.weights @ convex_generator(coarse_groups.means, loss=loss))
            assert coarse <= fine + 1e-12  # eq. 4.3
            assert (
                full_decomposition(coarse_world, loss=loss).sharpness
                >= full_decomposition(world, loss=loss).sharpness - 1e-12
            )


# --- T3: Prop 4.3, the constant predictor is the worst calibrated predictor ------------------------------------


@pytest.mark.parametrize("loss", LOSSES)
def test_t3_prop_4_3_calibrated_predictors_beat_the_constant(loss):
    rng = np.random.default_rng(30)
    for world in _worlds():
        w, q = world.weights, world.conditionals
        prior = w @ q  # pi_Y
        constant = full_decomposition(FiniteWorld(w, q, np.repeat(prior[None, :], w.size, axis=0)), loss=loss)
        assert constant.calibration == pytest.approx(0.0, abs=1e-13)  # the constant pi_Y is calibrated
        assert constant.total == pytest.approx(float(w @ bregman_divergence(q, prior[None, :], loss=loss)), abs=1e-13)
        for n_cells in (1, 2, 3, w.size):
            cell = rng.integers(0, n_cells, size=w.size)
            cell_weight = np.bincount(cell, weights=w, minlength=n_cells)
            means = np.zeros((n_cells, q.shape[1]))
            np.add.at(means, cell, w[:, None] * q)
            used = cell_weight > 0
            means[used] /= cell_weight[used, None]
            calibrated = full_decomposition(FiniteWorld(w, q, means[cell]), loss=loss)
            assert calibrated.calibration == pytest.approx(0.0, abs=1e-13)
            assert calibrated.total <= constant.total + 1e-12  # eq. 4.4


# --- T4: Lemma 4.6 / Corollary 4.7, confidence calibration error bounds full calibration error ----------------


@pytest.mark.parametrize("loss", LOSSES)
def test_t4_coordinate_domination(loss):
    rng = np.random.default_rng(40)
    x, y = rng.dirichlet(np.ones(4) * 0.7, size=500), rng.dirichlet(np.ones(4) * 0.7, size=500)
    full = bregman_divergence(x, y, loss=loss)
    for i in range(4):
        assert np.all(full >= bregman_divergence_1d(x[:, i], y[:, i], loss=loss) - 1e-12)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("loss", LOSSES)
def test_t4_lemma_4_6_per_confidence_level(loss, target):
    shared_levels = 0
    for world in _worlds():
        levels = pointwise_sharpness_gap(world, loss=loss, target=target)
        groups = prediction_groups(world)
        # Left side of eq. 4.6 by the notes' formula: sum_{v in V_t} W_v d(mu_v, v) / W_t.
        group_conf = groups.predictions.max(axis=1)
        group_cal = bregman_divergence(groups.means, groups.predictions, loss=loss)
        for t, weight, lhs in zip(levels.confidence, levels.weight, levels.full_calibration, strict=True):
            members = group_conf == t
            shared_levels += members.sum() > 1
            assert weight == pytest.approx(groups.weights[members].sum(), abs=1e-15)
            assert lhs == pytest.approx(groups.weights[members] @ group_cal[members] / weight, rel=1e-12)
        assert np.all(levels.full_calibration >= levels.calibration - 1e-12)  # eq. 4.6
        # Corollary: full calibration error >= confidence calibration error.
        assert (
            full_decomposition(world, loss=loss).calibration >= confidence_decomposition(world, loss=loss).calibration
        )
    assert shared_levels > 0  # the worlds do exercise confidence levels shared by several predictions


@pytest.mark.parametrize("loss", LOSSES)
def test_t4_holds_for_any_classification_function_of_the_prediction(loss):
    """Lemma 4.6 needs c to be a function of g(X) and h = e_c^T g, not the argmax: try the argmin."""
    for world in _worlds():
        argmin = np.argmin(world.predictions, axis=1)
        other = FiniteWorld(world.weights, world.conditionals, world.predictions, classes=argmin)
        np.testing.assert_allclose(other.confidences, world.predictions.min(axis=1))
        levels = pointwise_sharpness_gap(other, loss=loss)
        assert np.all(levels.full_calibration >= levels.calibration - 1e-12)
        assert np.all(levels.rho >= -1e-12)


def test_t4_mixed_pair_is_not_covered():
    """Full Brier with the 1-D logistic loss violates coordinate domination and eq. 4.6 (why loss fixes the pair)."""
    x, y = np.array([[0.5, 0.5]]), np.array([[0.999, 0.001]])
    assert bregman_divergence(x, y, loss="brier")[0] < bregman_divergence_1d(0.5, 0.999, loss="log")
    world = FiniteWorld([0.5, 0.5], [[1, 0], [0, 1]], [[0.999, 0.001]] * 2)
    levels = pointwise_sharpness_gap(world, loss="brier")
    mixed_rhs = bregman_divergence_1d(levels.accuracy, levels.confidence, loss="log")
    assert levels.full_calibration[0] == pytest.approx(2 * 0.499**2)
    assert levels.full_calibration[0] < mixed_rhs[0]


# --- T5: Prop 4.8, the pointwise sharpness gap is nonnegative ---------------------------------------------------


@pytest.mark.parametrize("loss", LOSSES)
def test_t5_prop_4_8_rho_nonnegative(loss):
    for world in _worlds():
        cond = pointwise_sharpness_gap(world, loss=loss, target="conditional")
        label = pointwise_sharpness_gap(world, loss=loss, target="label")
        assert np.all(cond.rho >= -1e-12)
        assert np.all(label.rho >= -1e-12)
        # E[d(e_Y, g) | X] >= d(pi_{Y|X}, g), so the label version is the larger one at every level.
        assert np.all(label.divergence >= cond.divergence - 1e-12)
        np.testing.assert_allclose(label.calibration, cond.calibration, atol=1e-14)
        # (C.1): the divergence at a level dominates the full calibration error at that level.
        assert np.all(cond.divergence >= cond.full_calibration - 1e-12)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("loss", LOSSES)
def test_t5_confidence_decomposition_adds_up_and_is_coarser(loss, target):
    for world in _worlds():
        full = full_decomposition(world, loss=loss, target=target)
        conf = confidence_decomposition(world, loss=loss, target=target)
        _assert_adds_up(conf)
        assert conf.total == pytest.approx(full.total, abs=1e-13)
        assert conf.calibration <= full.calibration + 1e-12
        assert conf.sharpness >= full.sharpness - 1e-12
        levels = pointwise_sharpness_gap(world, loss=loss, target=target)
        assert conf.sharpness == pytest.approx(float(levels.weight @ levels.rho), abs=1e-14)


@pytest.mark.parametrize("loss", LOSSES)
def test_t5_rho_nonnegative_on_samples(loss):
    """With exact grouping the sample is a finite world, so rho >= 0 holds (unlike the NW estimate, notes §2 T5)."""
    rng = np.random.default_rng(50)
    for _ in range(5):
        pool = rng.dirichlet(np.ones(4), size=4)
        pool = np.vstack([pool, pool[:, ::-1]])
        scores = pool[rng.integers(0, len(pool), size=200)]
        labels = np.array([rng.choice(4, p=row) for row in scores])
        levels = pointwise_sharpness_gap(sample_world(scores, labels, kind="probs"), loss=loss)
        assert np.all(levels.rho >= -1e-12)
        assert np.all(levels.full_calibration >= levels.calibration - 1e-12)


# --- T6: Prop 4.5, the 1-D loss is a pitfall ------------------------------------------------------------------------


@pytest.mark.parametrize("c", [0.5, 1.0])
def test_t6_prop_4_5_always_wrong_predictor(c):
    weights = np.array([0.2, 0.3, 0.5])
    for k in range(2, 1001):
        eps = c / k
        y_star = np.arange(3) % k  # deterministic labels
        y_wrong = (y_star + 1) % k  # always wrong
        predictions = np.full((3, k), 1 / k - eps / (k - 1))
        predictions[np.arange(3), y_wrong] = 1 / k + eps
        conditionals = np.zeros((3, k))
        conditionals[np.arange(3), y_star] = 1.0
        world = FiniteWorld(weights, conditionals, predictions)
        one_d = confidence_problem_decomposition(world, loss="brier").total  # E (1{Y = c(X)} - h(X))^2
        full = full_decomposition(world, loss="brier").total  # E ||pi_{Y|X} - g(X)||^2
        closed_full = (1 - 1 / k + eps / (k - 1)) ** 2 + (1 / k + eps) ** 2 + (k - 2) * (1 / k - eps / (k - 1)) ** 2
        assert one_d == pytest.approx((1 / k + eps) ** 2, rel=1e-11)
        assert full == pytest.approx(closed_full, rel=1e-11)
        assert one_d <= (1 + c) ** 2 / k**2 + 1e-15  # O(1/k^2), inside O(1/k)
        assert full >= (1 - 1 / k) ** 2 - 1e-12
        assert full >= 0.25 - 1e-12  # Omega(1)


# --- T7: Prop 4.4, only the L2 ECE is Bregman-induced ---------------------------------------------------------------


def test_t7_l2_ece_is_the_brier_calibration_term():
    for world in _worlds():
        groups = prediction_groups(world)
        l2_ece = float(groups.weights @ ((groups.means - groups.predictions) ** 2).sum(axis=1))
        assert l2_ece == pytest.approx(full_decomposition(world, loss="brier").calibration, abs=1e-15)


@pytest.mark.parametrize(("q", "minimiser"), [(1, 0.0), (3, 0.25), (4, 1 / (1 + 9 ** (1 / 3))), (2, 0.1)])
def test_t7_lq_minimiser_witness(q, minimiser):
    """Bregman divergences are minimised in the 2nd argument at the mean; |z - c|^q is not for q != 2."""
    grid = np.linspace(0.0, 1.0, 100_001)
    risk = 0.9 * np.abs(grid) ** q + 0.1 * np.abs(1 - grid) ** q  # Z ~ Bernoulli(0.1)
    best = grid[np.argmin(risk)]
    assert best == pytest.approx(minimiser, abs=2e-5)
    assert (abs(best - 0.1) < 1e-4) == (q == 2)


@pytest.mark.parametrize("loss", LOSSES)
def test_t7_bregman_mean_minimiser(loss):
    """E d(Z, c) = E d(Z, E Z) + d(E Z, c): Lemma 4.1 with constant conditioning, so argmin_c is E Z."""
    rng = np.random.default_rng(70)
    for world in _worlds():
        w, z = world.weights, world.conditionals
        mean = w @ z
        c = rng.dirichlet(np.ones(z.shape[1]), size=1)
        lhs = float(w @ bregman_divergence(z, c, loss=loss))
        rhs = float(w @ bregman_divergence(z, mean[None, :], loss=loss)) + bregman_divergence(
            mean[None, :], c, loss=loss
        )
        assert lhs == pytest.approx(rhs[0], abs=1e-13)
        assert lhs >= float(w @ bregman_divergence(z, mean[None, :], loss=loss))


# --- T8: Theorem 4.9 / C.4, consistency of the Nadaraya-Watson plug-in ---------------------------------------------


def _dense_nw_error(h, a, bandwidth, kernel, loss, form):
    u = (h[:, None] - h[None, :]) / bandwidth
    k = np.exp(-0.5 * u * u) if kernel == "gaussian" else np.where(np.abs(u) <= 1, 1 - u * u, 0.0)
    m_hat = (k @ a) / k.sum(axis=1)
    if form == "plugin":
        return float(np.mean(bregman_divergence_1d(m_hat, h, loss=loss)))
    grad = 2 * h if loss == "brier" else np.log(h / (1 - h))
    phi_m, phi_h = convex_generator_1d(m_hat, loss=loss), convex_generator_1d(h, loss=loss)
    return float(np.mean(phi_m - phi_h - grad * (a - h)))  # eq. (C.3) as printed


@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
@pytest.mark.parametrize("form", ["plugin", "covariance"])
@pytest.mark.parametrize("loss", LOSSES)
def test_t8_estimator_matches_a_dense_computation(loss, form, kernel):
    rng = np.random.default_rng(80)
    h = rng.uniform(0.1, 0.9, size=400)
    a = (rng.uniform(size=400) < h**2).astype(int)
    got = kernel_calibration_error(h, a, loss=loss, bandwidth=0.07, kernel=kernel, form=form)
    assert got == pytest.approx(_dense_nw_error(h, a.astype(float), 0.07, kernel, loss, form), rel=1e-9, abs=1e-12)


def test_t8_nw_plugin_is_consistent():
    """Median |error| over seeds falls along n = 500, 2k, 8k, 32k and is small at 32k (sigma_n = 0.5 n^{-1/4})."""
    low, high = 0.25, 0.95  # h ~ U[low, high]; m stays inside (0, 1), as the binary KL needs

    def m(h):
        return h - 0.15 * np.sin(np.pi * h)

    truth = {
        loss: quad(lambda t, loss=loss: float(bregman_divergence_1d(m(t), t, loss=loss)), low, high)[0] / (high - low)
        for loss in LOSSES
    }
    sizes = (500, 2000, 8000, 32000)
    errors = {(loss, form): {n: [] for n in sizes} for loss in LOSSES for form in ("plugin", "covariance")}
    for n in sizes:
        for seed in range(40):
            rng = np.random.default_rng([seed, n])
            h = rng.uniform(low, high, size=n)
            a = rng.uniform(size=n) < m(h)
            for loss, form in errors:
                est = kernel_calibration_error(
                    h, a, loss=loss, bandwidth=0.5 * n**-0.25, kernel="epanechnikov", form=form
                )
                errors[loss, form][n].append(abs(est - truth[loss]))
    for (loss, _form), by_n in errors.items():
        medians = [np.median(by_n[n]) for n in sizes]
        assert np.all(np.diff(medians) < 0), medians
        assert medians[-1] < 0.1 * truth[loss], medians


def test_t8_gaussian_kernel_converges():
    low, high = 0.2, 1.0
    truth = quad(lambda t: (t * t - t) ** 2, low, high)[0] / (high - low)  # m(h) = h^2, Brier
    errors = []
    for seed in range(3):
        rng = np.random.default_rng(seed)
        h = rng.uniform(low, high, size=3000)
        a = rng.uniform(size=3000) < h**2
        errors.append(kernel_calibration_error(h, a, loss="brier", bandwidth=0.02, kernel="gaussian") - truth)
    assert np.median(np.abs(errors)) < 0.1 * truth


def test_t8_covariance_form_can_be_negative():
    """(C.3) minus the plug-in is 2 mean(h_i (m_hat_i - A_i)): negative when A follows h inside a window."""
    h, a = np.array([0.3, 0.7]), np.array([0, 1])  # one wide window: m_hat ~ 1/2 at both points
    covariance = kernel_calibration_error(h, a, bandwidth=100.0, kernel="epanechnikov", form="covariance")
    plugin = kernel_calibration_error(h, a, bandwidth=100.0, kernel="epanechnikov", form="plugin")
    assert covariance == pytest.approx(0.25 - 2 * 0.35 + 0.29, abs=1e-4)  # mean(m^2) - 2 mean(h A) + mean(h^2)
    assert plugin == pytest.approx(0.04, abs=1e-4)  # mean((m - h)^2)
    assert covariance < 0 <= plugin


def test_t8_covariance_form_handles_certain_confidences():
    h = np.array([1.0, 1.0, 0.6, 0.7])
    a = np.array([1, 1, 0, 1])
    for loss in LOSSES:
        assert np.isfinite(kernel_calibration_error(h, a, loss=loss, bandwidth=0.05, form="covariance"))
    assert kernel_calibration_error([1.0, 1.0], [1, 0], loss="log", bandwidth=0.05, form="covariance") == math.inf


# --- empirical plug-in on samples -------------------------------------------------------------------------------------


# Survey Table 2 (notes 001): 10 instances, K = 3, two distinct score rows.
T2_SCORES = np.array([[0.9, 0.1, 0.0]] * 4 + [[0.6, 0.2, 0.2]] * 6)
T2_LABELS = np.array([0, 0, 0, 1, 0, 1, 1, 1, 2, 2])


def test_empirical_table2_golden_values():
    r = empirical_decomposition(T2_SCORES, T2_LABELS, kind="probs", loss="brier")
    assert (r.total, r.sharpness, r.calibration) == pytest.approx((0.712, 0.516667, 0.195333), abs=1e-6)
    _assert_adds_up(r)
    conf = empirical_decomposition(T2_SCORES, T2_LABELS, kind="probs", loss="brier", calibration="confidence")
    # h = 0.9 (accuracy 3/4) and h = 0.6 (accuracy 1/6).
    expected_cal = 0.4 * (0.75 - 0.9) ** 2 + 0.6 * (1 / 6 - 0.6) ** 2
    assert conf.calibration == pytest.approx(expected_cal, abs=1e-15)
    assert conf.total == pytest.approx(0.712, abs=1e-12)
    _assert_adds_up(conf)


@pytest.mark.parametrize("loss", LOSSES)
def test_empirical_matches_calibration_refinement(loss):
    """On samples, calibration = E d(C, S) and sharpness gap = refinement of calib.scoring.decomposition."""
    rng = np.random.default_rng(90)
    for _ in range(4):
        pool = rng.dirichlet(np.ones(3), size=6)
        scores = pool[rng.integers(0, 6, size=150)]
        labels = rng.integers(0, 3, size=150)
        ours = empirical_decomposition(scores, labels, kind="probs", loss=loss)
        theirs = calibration_refinement(scores, labels, kind="probs", loss=loss)
        _assert_adds_up(ours)
        assert ours.total == pytest.approx(theirs.total, abs=1e-12)
        assert ours.calibration == pytest.approx(theirs.calibration, abs=1e-12)
        assert ours.sharpness == pytest.approx(theirs.refinement, abs=1e-12)
        conf = empirical_decomposition(scores, labels, kind="probs", loss=loss, calibration="confidence")
        _assert_adds_up(conf)
        assert conf.calibration <= ours.calibration + 1e-12


def test_empirical_logits_equal_probs():
    rng = np.random.default_rng(91)
    logits = np.round(rng.normal(size=(8, 3)), 1)[rng.integers(0, 8, size=100)]
    labels = rng.integers(0, 3, size=100)
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    for calibration in ("full", "confidence"):
        a = empirical_decomposition(logits, labels, kind="logits", loss="log", calibration=calibration)
        b = empirical_decomposition(probs, labels, kind="probs", loss="log", calibration=calibration)
        assert (a.total, a.sharpness, a.calibration) == pytest.approx((b.total, b.sharpness, b.calibration), abs=1e-12)


def test_mean_replacement_is_confidence_calibrated_but_not_sharp():
    """MRR (paper 002 Sect. 3): top confidence := accuracy, argmax kept; zero confidence CE, larger sharpness gap."""
    rng = np.random.default_rng(92)
    n, k = 400, 5
    scores = rng.dirichlet(np.ones(k) * 0.5, size=n)
    labels = np.array([rng.choice(k, p=row) for row in scores])
    top = np.argmax(scores, axis=1)
    acc = float(np.mean(top == labels))
    mrr = np.full((n, k), (1 - acc) / (k - 1))
    mrr[np.arange(n), top] = acc
    base = empirical_decomposition(scores, labels, kind="probs", calibration="confidence")
    flat = empirical_decomposition(mrr, labels, kind="probs", calibration="confidence", classes=top)
    assert flat.calibration < 1e-15
    assert flat.total > base.total
    assert flat.sharpness > base.sharpness


def test_infinite_log_loss_is_reported_not_clipped():
    scores = np.array([[1.0, 0.0], [1.0, 0.0], [0.3, 0.7]])
    labels = np.array([0, 1, 1])
    full = empirical_decomposition(scores, labels, kind="probs", loss="log")
    assert full.total == math.inf and full.calibration == math.inf
    conf = empirical_decomposition(scores, labels, kind="probs", loss="log", calibration="confidence")
    assert conf.total == math.inf and conf.calibration == math.inf
    assert math.isnan(conf.sharpness)  # inf - inf at h = 1: undefined, documented
    brier = empirical_decomposition(scores, labels, kind="probs", loss="brier", calibration="confidence")
    _assert_adds_up(brier)


# --- bad inputs -----------------------------------------------------------------------------------------------------

_P = np.array([[0.2, 0.8], [0.5, 0.5]])


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: bregman_divergence(_P, [[0.2, 0.3, 0.5]]), "p has shape"),
        (lambda: bregman_divergence(_P, np.ones((3, 2)) / 2), "p has shape"),
        (lambda: bregman_divergence([[0.5, 0.6]], _P), "^p: rows"),
        (lambda: bregman_divergence(_P, [[0.5, 0.6]]), "^q: rows"),
        (lambda: bregman_divergence(_P, [[-0.1, 1.1]]), "q "),
        (lambda: bregman_divergence(_P, _P, loss="hinge"), "loss"),
        (lambda: bregman_divergence(_P, _P, kind="odds"), "kind"),
        (lambda: bregman_divergence([0.2, 0.8], _P), "p must have shape"),
        (lambda: bregman_divergence_1d(1.5, 0.5), "a must"),
        (lambda: bregman_divergence_1d(0.5, np.nan), "b must"),
        (lambda: bregman_divergence_1d([0.1, 0.2], [0.1, 0.2, 0.3]), "broadcast"),
        (lambda: convex_generator(_P, loss="l1"), "loss"),
        (lambda: convex_generator_1d(-0.2), "a must"),
        (lambda: FiniteWorld([0.5, 0.5, 0.0], _P, _P), "weights"),
        (lambda: FiniteWorld([1.5, -0.5], _P, _P), "weights"),
        (lambda: FiniteWorld([0.6, 0.6], _P, _P), "weights must sum"),
        (lambda: FiniteWorld([0.5, 0.5], _P[:1], _P), "conditionals have shape"),
        (lambda: FiniteWorld([0.5, 0.5], [[0.5, 0.6], [0.5, 0.5]], _P), "conditionals"),
        (lambda: FiniteWorld([0.5, 0.5], _P, [[0.5, 0.6], [0.5, 0.5]]), "predictions"),
        (lambda: FiniteWorld([0.5, 0.5], _P, [[0.5, 0.5], [0.5, 0.5]], classes=[0, 1]), "classes"),
        (lambda: FiniteWorld([0.5, 0.5], _P, _P, classes=[0, 2]), "classes"),
        (lambda: full_decomposition(_random_world(0), target="posterior"), "target"),
        (lambda: full_decomposition(_random_world(0), loss="hinge"), "loss"),
        (lambda: full_decomposition(_P), "world"),
        (lambda: pointwise_sharpness_gap(_random_world(0), loss="zero_one"), "loss"),
        (lambda: sample_world(_P, [0, 2], kind="probs"), "labels"),
        (lambda: sample_world([[np.nan, 1.0], [0.5, 0.5]], [0, 1], kind="probs"), "scores"),
        (lambda: empirical_decomposition(_P, [0, 1], kind="probs", calibration="topk"), "calibration"),
        (lambda: kernel_calibration_error([0.5, 0.6], [1, 0], bandwidth=0.0), "bandwidth"),
        (lambda: kernel_calibration_error([0.5, 0.6], [1, 0], bandwidth=0.1, kernel="box"), "kernel"),
        (lambda: kernel_calibration_error([0.5, 0.6], [1, 0], bandwidth=0.1, form="debiased"), "form"),
        (lambda: kernel_calibration_error([0.5, 0.6], [1, 0.5], bandwidth=0.1), "correct"),
        (lambda: kernel_calibration_error([0.5, 0.6], [1, 0, 1], bandwidth=0.1), "correct has shape"),
        (lambda: kernel_calibration_error([0.5, 1.2], [1, 0], bandwidth=0.1), "confidences"),
        (lambda: kernel_calibration_error([], [], bandwidth=0.1), "confidences"),
    ],
)
def test_bad_inputs_name_the_argument(call, name):
    with pytest.raises(CalibInputError, match=name):
        call()
