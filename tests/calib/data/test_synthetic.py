"""Tests of calib.data.synthetic: the Gaussian posteriors of paper 000, App. C."""

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from calib.data.synthetic import (
    class_priors,
    class_sizes,
    gaussian_log_likelihoods,
    gaussian_posteriors,
    mismatched_priors,
)
from calib.validation import CalibInputError

# Identities between log-posteriors of magnitude up to ~100 (x scale 5): float rounding ~1e-13.
IDENTITY_ATOL = 1e-9


@pytest.mark.parametrize(
    ("n_classes", "n_samples", "expected"),
    [
        (2, 400, [320, 79]),
        (2, 200, [160, 39]),
        (2, 2000, [1600, 399]),
        (2, 20000, [16000, 3999]),
        (10, 2000, [1600] + [44] * 9),
    ],
)
def test_paper_mode_sizes_are_truncated(n_classes, n_samples, expected):
    # notes/000 §4: int(P_i N) with float64 priors, so (1 - 0.8) * 400 = 79.99999999999999 -> 79
    sizes = class_sizes(class_priors(n_classes, 0.8), n_samples, "paper")
    np.testing.assert_array_equal(sizes, expected)
    data = gaussian_posteriors(n_classes=n_classes, n_samples=n_samples, prior1=0.8, variance=0.15, seed=0, rng="paper")
    np.testing.assert_array_equal(np.bincount(data.labels), expected)
    assert data.systems["cal"].shape == (sum(expected), n_classes)


def test_paper_mode_sizes_for_figure_4():
    # notes/000 §4: K=2, P1=0.6, N=100000 gives [60000, 40000]
    np.testing.assert_array_equal(class_sizes(class_priors(2, 0.6), 100_000, "paper"), [60000, 40000])


@pytest.mark.parametrize(
    ("n_classes", "prior1", "n_samples"),
    [(2, 0.8, 400), (2, 0.8, 399), (10, 0.8, 2000), (3, 0.5, 7), (10, 0.1, 100), (10, 0.1, 15), (4, 0.25, 6)],
)
def test_default_mode_sizes_are_non_negative_and_sum_to_n(n_classes, prior1, n_samples):
    sizes = class_sizes(class_priors(n_classes, prior1), n_samples, "default")
    assert sizes.sum() == n_samples
    assert np.all(sizes >= 0), sizes
    data = gaussian_posteriors(n_classes=n_classes, n_samples=n_samples, prior1=prior1, variance=0.1, seed=0)
    assert data.labels.size == n_samples


def test_default_mode_sizes_are_rounded():
    # App. C step 2: nearest integer; K=2, P1=0.8, N=399 -> 319.2, 79.8 -> [319, 80]
    np.testing.assert_array_equal(class_sizes(class_priors(2, 0.8), 399, "default"), [319, 80])


def test_priors():
    np.testing.assert_allclose(class_priors(4, 0.7), [0.7, 0.1, 0.1, 0.1], rtol=1e-15)
    np.testing.assert_allclose(mismatched_priors(4, 0.9), [1 / 30, 1 / 30, 1 / 30, 0.9], rtol=1e-15)


def test_mean_of_cal_posteriors_matches_the_published_value():
    # notes/000 §3.4: the saved np.mean(cal posteriors) vector of the K=10 run begins 0.80289633 (8 decimals)
    data = gaussian_posteriors(n_classes=10, n_samples=2000, prior1=0.8, variance=0.08, seed=0, rng="paper")
    mean = np.exp(data.systems["cal"]).mean(axis=0)
    assert mean[0] == pytest.approx(0.80289633, abs=5e-9)  # half a unit of the 8th decimal


@pytest.mark.parametrize("rng", ["default", "paper"])
def test_systems_are_related_by_exact_identities(rng):
    k, scale = 4, 5.0
    data = gaussian_posteriors(n_classes=k, n_samples=300, prior1=0.7, variance=0.1, scale=scale, seed=0, rng=rng)
    cal, mcp, mcs, mcps = (data.systems[n] for n in ("cal", "mcp", "mcs", "mcps"))
    for logp in (cal, mcp, mcs, mcps):
        np.testing.assert_allclose(np.exp(logp).sum(axis=1), 1.0, rtol=0, atol=1e-14)
    # mcs = log_softmax(scale * cal): log-odds against class 0 are scaled by `scale`
    np.testing.assert_allclose(mcs - mcs[:, :1], scale * (cal - cal[:, :1]), rtol=0, atol=IDENTITY_ATOL)
    np.testing.assert_allclose(mcps - mcps[:, :1], scale * (mcp - mcp[:, :1]), rtol=0, atol=IDENTITY_ATOL)
    # cal and mcp share likelihoods: their log-odds differ by the log ratio of the two prior vectors
    p, m = class_priors(k, 0.7), mismatched_priors(k, 0.9)
    shift = (np.log(m) - np.log(m[0])) - (np.log(p) - np.log(p[0]))
    np.testing.assert_allclose((mcp - mcp[:, :1]) - (cal - cal[:, :1]), np.tile(shift, (300, 1)), atol=IDENTITY_ATOL)


def test_cal_posteriors_are_bayes_posteriors_of_the_likelihoods():
    # App. C step 4: log N(x; sqrt(0.5) e_k, v I); at x = sqrt(0.5) e_0 the distances are 0 and 1
    v = 0.2
    x = np.array([[np.sqrt(0.5), 0.0]])
    llk = gaussian_log_likelihoods(x, v)
    expected = -np.log(2 * np.pi * v) - np.array([[0.0, 1.0]]) / (2 * v)
    np.testing.assert_allclose(llk, expected, rtol=1e-14)


def test_labels_are_sorted_by_class():
    data = gaussian_posteriors(n_classes=3, n_samples=90, prior1=0.5, variance=0.1, seed=0)
    assert np.all(np.diff(data.labels) >= 0)
    # default mode, largest remainders: exact sizes [45, 22.5, 22.5]; the one leftover sample goes to
    # the first class with the largest fractional part (class 1)
    np.testing.assert_array_equal(np.bincount(data.labels), [45, 23, 22])


@pytest.mark.parametrize("rng", ["default", "paper"])
def test_same_seed_same_bytes_other_seed_differs(rng):
    kwargs = {"n_classes": 3, "n_samples": 200, "prior1": 0.6, "variance": 0.15, "rng": rng}
    a = gaussian_posteriors(seed=0, **kwargs)
    b = gaussian_posteriors(seed=0, **kwargs)
    c = gaussian_posteriors(seed=1, **kwargs)
    for name in ("cal", "mcp", "mcs", "mcps"):
        assert a.systems[name].tobytes() == b.systems[name].tobytes()
        assert a.systems[name].tobytes() != c.systems[name].tobytes()
    assert a.labels.tobytes() == b.labels.tobytes()


def test_paper_mode_returns_the_legacy_stream_after_the_draw():
    data = gaussian_posteriors(n_classes=2, n_samples=100, prior1=0.8, variance=0.15, seed=0, rng="paper")
    assert isinstance(data.legacy_rng, np.random.RandomState)
    # it is not a fresh RandomState(0): the draw consumed part of the stream
    assert data.legacy_rng.random_sample() != np.random.RandomState(0).random_sample()
    default = gaussian_posteriors(n_classes=2, n_samples=100, prior1=0.8, variance=0.15, seed=0)
    assert default.legacy_rng is None


@pytest.mark.parametrize(("n_classes", "n_samples", "variance"), [(2, 400, 0.15), (3, 1000, 0.5), (10, 2000, 0.19)])
def test_paper_mode_features_are_scipys_multivariate_normal_draws(n_classes, n_samples, variance):
    # The authors draw each class with scipy.stats.multivariate_normal.rvs from one legacy RandomState(seed).
    prior1 = 0.8
    data = gaussian_posteriors(n_classes=n_classes, n_samples=n_samples, prior1=prior1, variance=variance, seed=4,
                               rng="paper")  # fmt: skip
    legacy, means = np.random.RandomState(4), np.sqrt(0.5) * np.eye(n_classes)
    sizes = class_sizes(class_priors(n_classes, prior1), n_samples, "paper")
    features = np.concatenate(
        [
            np.reshape(
                multivariate_normal.rvs(means[i], variance * np.eye(n_classes), size=int(m), random_state=legacy),
                (m, n_classes),
            )  # fmt: skip
            for i, m in enumerate(sizes)
        ]
    )
    expected = gaussian_log_likelihoods(features, variance)
    priors = np.log(class_priors(n_classes, prior1))
    cal = expected + priors - np.logaddexp.reduce(expected + priors, axis=1, keepdims=True)
    # The same log-posteriors by another normalisation (logaddexp, not log_softmax): values of magnitude < 100
    # agree to a few float64 ulps (~1e-14); a different draw moves them by O(1).
    np.testing.assert_allclose(data.systems["cal"], cal, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"prior1": 0.0}, "prior1"),
        ({"prior1": 1.0}, "prior1"),
        ({"prior1": 1.5}, "prior1"),
        ({"variance": 0.0}, "variance"),
        ({"variance": -1.0}, "variance"),
        ({"variance": np.nan}, "variance"),
        ({"variance": np.inf}, "variance"),
        ({"rng": "legacy"}, "rng"),
        ({"scale": 0.0}, "scale"),
        ({"mismatch_prior": 1.0}, "mismatch_prior"),
        ({"n_classes": 1}, "n_classes"),
        ({"n_samples": 0}, "n_samples"),
    ],
)
def test_invalid_arguments_are_rejected(kwargs, pattern):
    args = {"n_classes": 2, "n_samples": 100, "prior1": 0.8, "variance": 0.15, "seed": 0} | kwargs
    with pytest.raises(CalibInputError, match=pattern):
        gaussian_posteriors(**args)
