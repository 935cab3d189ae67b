"""Sample weights in the scores, decompositions and Murphy diagrams' means (issue 56)."""

import numpy as np
import pytest
from sklearn.metrics import brier_score_loss, log_loss

from calib.scoring.bregman import empirical_decomposition, kernel_calibration_error
from calib.scoring.calibration_losses import calibration_loss_from_posteriors
from calib.scoring.decomposition import calibration_refinement, epistemic_irreducible
from calib.scoring.scores import brier, cross_entropy, semi_empirical_cross_entropy
from calib.validation import CalibInputError

SEEDS = range(6)


def weighted_posteriors(seed: int, n: int = 70, k: int = 3, coarse: bool = False):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(k), size=n)
    if coarse:  # few distinct rows, so that the estimated C pools samples
        probs = probs[rng.integers(0, 6, size=n)]
    labels = rng.integers(0, k, size=n)
    labels[:k] = np.arange(k)  # every class present
    w = rng.integers(0, 5, size=n)
    w[:k] = 1
    w[k : k + 3] = 0
    return probs, labels, w


def repeated(w, *arrays):
    return [np.repeat(np.asarray(a), w, axis=0) for a in arrays]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("normalize", [False, True])
@pytest.mark.parametrize("priors", [None, [0.2, 0.3, 0.5]])
def test_scores_of_integer_weights_are_those_of_repeated_rows(seed, normalize, priors):
    probs, labels, w = weighted_posteriors(seed)
    p, y = repeated(w, probs, labels)
    options = {"kind": "probs", "normalize": normalize, "priors": priors}
    assert cross_entropy(probs, labels, **options, sample_weight=w) == pytest.approx(
        cross_entropy(p, y, **options), abs=1e-12
    )
    for scaling in ("mean", "sum"):
        assert brier(probs, labels, scaling=scaling, **options, sample_weight=w) == pytest.approx(
            brier(p, y, scaling=scaling, **options), abs=1e-12
        )
    ones = np.ones(labels.size)
    assert cross_entropy(probs, labels, **options, sample_weight=ones) == cross_entropy(probs, labels, **options)
    assert brier(probs, labels, scaling="sum", **options, sample_weight=ones) == brier(
        probs, labels, scaling="sum", **options
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_weighted_scores_are_scikit_learns(seed):
    rng = np.random.default_rng(seed)
    probs, labels = rng.dirichlet(np.ones(4), size=200), rng.integers(0, 4, size=200)
    w = rng.uniform(0.0, 3.0, size=200)
    expected = log_loss(labels, probs, sample_weight=w, labels=range(4))
    assert cross_entropy(probs, labels, kind="probs", sample_weight=w) == pytest.approx(expected, abs=1e-10)
    binary, y = probs[:, :2] / probs[:, :2].sum(axis=1, keepdims=True), labels % 2
    expected = brier_score_loss(y, binary[:, 1], sample_weight=w)
    assert brier(binary, y, kind="probs", scaling="mean", sample_weight=w) == pytest.approx(expected, abs=1e-10)


def test_weight_zero_drops_an_infinite_loss():
    scores, labels = [[0.5, 0.5], [1.0, 0.0]], [0, 1]
    assert cross_entropy(scores, labels, kind="probs") == np.inf
    assert cross_entropy(scores, labels, kind="probs", sample_weight=[1, 0]) == pytest.approx(np.log(2))


def test_priors_need_every_class_of_positive_weight():
    with pytest.raises(CalibInputError, match="positive weight of classes \\[1\\]"):
        brier([[0.5, 0.5], [0.2, 0.8]], [0, 1], kind="probs", scaling="sum", priors=[0.5, 0.5], sample_weight=[1, 0])


@pytest.mark.parametrize("seed", SEEDS)
def test_semi_empirical_cross_entropy_of_integer_weights_is_that_of_repeated_rows(seed):
    probs, _, w = weighted_posteriors(seed)
    reference = np.random.default_rng(seed + 100).dirichlet(np.ones(3), size=probs.shape[0])
    for normalize in (False, True):
        options = {"kind": "probs", "reference_kind": "probs", "normalize": normalize}
        assert semi_empirical_cross_entropy(probs, reference, **options, sample_weight=w) == pytest.approx(
            semi_empirical_cross_entropy(*repeated(w, probs, reference), **options), abs=1e-12
        )
        ones = np.ones(probs.shape[0])
        assert semi_empirical_cross_entropy(probs, reference, **options, sample_weight=ones) == (
            semi_empirical_cross_entropy(probs, reference, **options)
        )


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("loss", ["brier", "log"])
def test_decompositions_of_integer_weights_are_those_of_repeated_rows(seed, loss):
    probs, labels, w = weighted_posteriors(seed, coarse=True)
    truth = np.random.default_rng(seed + 7).dirichlet(np.ones(3), size=probs.shape[0])
    p, y, q = repeated(w, probs, labels, truth)
    for weighted, plain in [
        (
            calibration_refinement(probs, labels, kind="probs", loss=loss, sample_weight=w),
            calibration_refinement(p, y, kind="probs", loss=loss),
        ),
        (
            calibration_refinement(probs, labels, kind="probs", loss=loss, calibrated=truth, sample_weight=w),
            calibration_refinement(p, y, kind="probs", loss=loss, calibrated=q),
        ),
        (
            epistemic_irreducible(probs, labels, truth, kind="probs", loss=loss, sample_weight=w),
            epistemic_irreducible(p, y, q, kind="probs", loss=loss),
        ),
    ]:
        for a, b in zip(weighted.__dict__.values(), plain.__dict__.values(), strict=True):
            assert a == pytest.approx(b, abs=1e-12)
    unit = calibration_refinement(probs, labels, kind="probs", loss=loss, sample_weight=np.ones(labels.size))
    assert unit == calibration_refinement(probs, labels, kind="probs", loss=loss)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("loss", ["brier", "log"])
@pytest.mark.parametrize("calibration", ["full", "confidence"])
def test_sharpness_decompositions_of_integer_weights_are_those_of_repeated_rows(seed, loss, calibration):
    probs, labels, w = weighted_posteriors(seed, coarse=True)
    options = {"kind": "probs", "loss": loss, "calibration": calibration}
    weighted = empirical_decomposition(probs, labels, **options, sample_weight=w)
    plain = empirical_decomposition(*repeated(w, probs, labels), **options)
    for a, b in zip(weighted.__dict__.values(), plain.__dict__.values(), strict=True):
        assert a == pytest.approx(b, abs=1e-12)
    unit = empirical_decomposition(probs, labels, **options, sample_weight=np.ones(labels.size))
    assert unit == empirical_decomposition(probs, labels, **options)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("kernel", ["gaussian", "epanechnikov"])
@pytest.mark.parametrize("form", ["plugin", "covariance"])
def test_kernel_calibration_error_of_integer_weights_is_that_of_repeated_rows(seed, kernel, form):
    rng = np.random.default_rng(seed)
    h = rng.uniform(0.3, 1.0, size=50)
    a = (rng.uniform(size=50) < h).astype(int)
    w = rng.integers(0, 5, size=50)
    w[:3] = 0
    options = {"bandwidth": 0.1, "kernel": kernel, "form": form}
    assert kernel_calibration_error(h, a, **options, sample_weight=w) == pytest.approx(
        kernel_calibration_error(*repeated(w, h, a), **options), abs=1e-12
    )
    assert kernel_calibration_error(h, a, **options, sample_weight=np.ones(50)) == pytest.approx(
        kernel_calibration_error(h, a, **options), abs=1e-12
    )


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("metric", ["ce", "brier"])
def test_calibration_loss_of_integer_weights_is_that_of_repeated_rows(seed, metric):
    probs, labels, w = weighted_posteriors(seed)
    calibrated = (probs + 0.5) / (probs + 0.5).sum(axis=1, keepdims=True)
    options = {"kind": "probs", "metric": metric}
    assert calibration_loss_from_posteriors(probs, calibrated, labels, **options, sample_weight=w) == pytest.approx(
        calibration_loss_from_posteriors(*repeated(w, probs, calibrated, labels), **options), abs=1e-12
    )


@pytest.mark.parametrize("metric", ["ce", "brier"])
def test_a_calibrator_fitted_with_integer_weights_removes_the_loss_it_removes_from_the_repeated_rows(metric):
    from calib.calibrators import TemperatureScaling
    from calib.scoring.calibration_losses import calibration_loss

    probs, _, w = weighted_posteriors(3)
    # Labels drawn from under-confident posteriors (random labels would put the temperature's optimum at 0).
    sharp = probs**2 / (probs**2).sum(axis=1, keepdims=True)
    labels = (np.random.default_rng(4).random(probs.shape[0])[:, None] > np.cumsum(sharp, axis=1)).sum(axis=1)
    options = {"kind": "probs", "metric": metric, "calibrator": TemperatureScaling(), "protocol": "tt"}
    assert calibration_loss(probs, labels, **options, sample_weight=w) == pytest.approx(
        calibration_loss(*repeated(w, probs, labels), **options), abs=1e-12
    )
