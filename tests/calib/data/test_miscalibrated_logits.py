"""Tests of calib.data.miscalibrated_logits (notes 002 §6.10 item 3): known truth, seeded draws, TS recovery."""

import numpy as np
import pytest
from scipy.special import softmax

from calib.calibrators import TemperatureScaling
from calib.data.miscalibrated_logits import miscalibrated_logits
from calib.scoring.scores import cross_entropy
from calib.validation import CalibInputError

# Temperature scaling's alpha on N = 50000, K = 10, noise 0: over 20 seeds alpha * scale had mean 1.001
# and sd 0.005 (max deviation 0.009), for scale 0.5 and 2; 0.03 is about 6 sd.
ALPHA_TOL = 0.03


def test_shapes_reproducibility_and_truth():
    d = miscalibrated_logits(1000, 6, scale=2.0, noise_sd=0.3, seed=7)
    assert d.true_logits.shape == d.true_probs.shape == d.model_logits.shape == (1000, 6)
    assert d.labels.shape == d.latent_classes.shape == (1000,)
    assert d.labels.dtype == np.int64 and d.labels.min() >= 0 and d.labels.max() < 6
    np.testing.assert_allclose(d.true_probs, softmax(d.true_logits, axis=1), rtol=1e-14)
    np.testing.assert_allclose(d.true_probs.sum(axis=1), 1.0, rtol=0, atol=1e-14)
    again = miscalibrated_logits(1000, 6, scale=2.0, noise_sd=0.3, seed=7)
    for a, b in [(d.true_logits, again.true_logits), (d.labels, again.labels), (d.model_logits, again.model_logits)]:
        np.testing.assert_array_equal(a, b)
    other = miscalibrated_logits(1000, 6, scale=2.0, noise_sd=0.3, seed=8)
    assert not np.array_equal(d.labels, other.labels)


def test_truth_does_not_depend_on_scale_or_noise():
    a = miscalibrated_logits(500, 4, scale=0.5, noise_sd=0.0, seed=1)
    b = miscalibrated_logits(500, 4, scale=3.0, noise_sd=1.0, seed=1)
    np.testing.assert_array_equal(a.true_logits, b.true_logits)
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_array_equal(a.model_logits, 0.5 * a.true_logits)  # noise_sd = 0: exactly scale * z
    assert not np.allclose(b.model_logits, 3.0 * b.true_logits)


def test_class_structure_and_label_frequencies():
    d = miscalibrated_logits(50000, 5, margin=3.0, seed=2)
    # The latent class carries the margin, so it is usually the true argmax.
    assert np.mean(d.true_logits.argmax(axis=1) == d.latent_classes) > 0.8
    # Labels are drawn from the true posteriors: class frequencies match their means within 5 sd.
    freq = np.bincount(d.labels, minlength=5) / d.labels.size
    mean_p = d.true_probs.mean(axis=0)
    np.testing.assert_array_less(np.abs(freq - mean_p), 5 * np.sqrt(mean_p * (1 - mean_p) / d.labels.size))
    # ... and conditionally: the mean posterior of the labelled class among confident rows.
    top = d.true_probs.argmax(axis=1)
    conf = d.true_probs.max(axis=1)
    for lo, hi in [(0.3, 0.6), (0.6, 0.8), (0.8, 1.0)]:
        rows = (conf > lo) & (conf <= hi)
        acc, mean_conf = np.mean(top[rows] == d.labels[rows]), conf[rows].mean()
        assert abs(acc - mean_conf) < 5 * np.sqrt(mean_conf * (1 - mean_conf) / rows.sum())


@pytest.mark.parametrize("scale", [0.5, 2.0])
def test_temperature_scaling_recovers_inverse_scale(scale):
    d = miscalibrated_logits(50000, 10, scale=scale, noise_sd=0.0, seed=0)
    model = TemperatureScaling().fit(d.model_logits, d.labels, kind="logits")
    assert model.converged_
    assert abs(model.scale_ * scale - 1.0) < ALPHA_TOL
    # The recalibrated posteriors are close to the truth.
    recal = model.predict_proba(d.model_logits, kind="logits")
    assert np.abs(recal - d.true_probs).max() < 0.05


@pytest.mark.parametrize(("scale", "noise_sd"), [(0.5, 0.0), (2.0, 0.0), (1.0, 0.5), (2.0, 0.5)])
def test_true_probabilities_beat_the_model(scale, noise_sd):
    d = miscalibrated_logits(20000, 10, scale=scale, noise_sd=noise_sd, seed=4)
    true_nll = cross_entropy(d.true_probs, d.labels, kind="probs")
    model_nll = cross_entropy(d.model_logits, d.labels, kind="logits")
    assert true_nll < model_nll


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_samples": 0}, "n_samples"),
        ({"n_classes": 1}, "n_classes"),
        ({"scale": 0.0}, "scale"),
        ({"scale": np.inf}, "scale"),
        ({"noise_sd": -1.0}, "noise_sd"),
        ({"logit_sd": np.nan}, "logit_sd"),
        ({"margin": np.inf}, "margin"),
    ],
)
def test_invalid_arguments(kwargs, match):
    args = {"n_samples": 10, "n_classes": 3} | kwargs
    with pytest.raises(CalibInputError, match=match):
        miscalibrated_logits(**args)
