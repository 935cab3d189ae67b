"""Tests of calib.data.ecd_simulation: the simulated predictions of paper 004, Sect. V-A, in two readings.

Golden values: notes/004 §2.3 item 5 (means and sds over 300 repetitions of N = 10,000) for the
table-matching reading (noise on the probability, clipped at 1e-5, u ~ U(-7.4, 7.4)) and the text's
reading (noise on the log-odds, u ~ U(-10, 10)); calibration (ECD and ESCE within a few SE of 0) at sigma = 0.
"""

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import expit, logit
from scipy.stats import kstest, norm

from calib.calibration_errors.entropic import ecd, entropic_bins
from calib.data.ecd_simulation import simulate
from calib.validation import CalibInputError

READINGS = {"prob": 7.4, "logit": 10.0}  # noise_space -> half_width of u (notes/004 A5)


def _binary(p):
    return np.column_stack([1.0 - p, p])


@pytest.mark.parametrize("noise_space", ["prob", "logit"])
def test_shapes_types_and_ranges(noise_space):
    p, y = simulate(
        500, sigma=2.0, noise_space=noise_space, half_width=READINGS[noise_space], rng=np.random.default_rng(0)
    )
    assert p.shape == (500,) and y.shape == (500,)
    assert p.dtype == np.float64
    assert np.issubdtype(y.dtype, np.integer)
    assert set(np.unique(y)) == {0, 1}
    assert np.all((p >= 0) & (p <= 1))


def test_prob_noise_is_clipped():
    clip = 1e-5
    p, _ = simulate(20_000, sigma=2.0, noise_space="prob", half_width=7.4, clip=clip, rng=np.random.default_rng(1))
    assert p.min() >= clip and p.max() <= 1 - clip
    # sigma = 2 pushes many predictions past both ends: the clip values are attained exactly.
    assert np.any(p == clip) and np.any(p == 1 - clip)
    # P(p + eps < clip) = E_u[Phi((clip - sigmoid(w u)) / 2)], u ~ U(-7.4, 7.4); by quadrature.
    expected, _ = quad(lambda u: norm.cdf((clip - expit(0.5 * u)) / 2.0) / 14.8, -7.4, 7.4)
    frac = np.mean(p == clip)
    se = np.sqrt(expected * (1 - expected) / p.size)
    assert frac == pytest.approx(expected, abs=4 * se)  # binomial proportion: 4 SE


def test_custom_clip_is_respected():
    clip = 0.01
    p, _ = simulate(5000, sigma=1.0, noise_space="prob", half_width=7.4, clip=clip, rng=np.random.default_rng(2))
    assert p.min() == clip and p.max() == 1 - clip


@pytest.mark.parametrize("noise_space", ["prob", "logit"])
def test_sigma_zero_is_sigmoid_of_uniform_log_odds(noise_space):
    a, w = READINGS[noise_space], 0.5
    p, _ = simulate(20_000, sigma=0.0, noise_space=noise_space, half_width=a, weight=w, rng=np.random.default_rng(3))
    # p = sigmoid(w u) with u ~ U(-a, a): logit(p) / w is uniform on (-a, a). KS at a seeded p-value > 1e-3.
    u = logit(p) / w
    assert np.all(np.abs(u) <= a + 1e-9)  # rounding of logit(sigmoid(.))
    assert kstest(u, "uniform", args=(-a, 2 * a)).pvalue > 1e-3


def test_sigma_zero_gives_the_same_predictions_in_both_readings():
    # sigma = 0: clip(sigmoid(t)) = sigmoid(t + 0) when the clip is inactive (|t| <= 3.7 keeps p in (0.02, 0.98)).
    kwargs = {"sigma": 0.0, "half_width": 7.4}
    p_prob, y_prob = simulate(1000, noise_space="prob", rng=np.random.default_rng(4), **kwargs)
    p_logit, y_logit = simulate(1000, noise_space="logit", rng=np.random.default_rng(4), **kwargs)
    np.testing.assert_array_equal(y_prob, y_logit)
    np.testing.assert_allclose(p_prob, p_logit, rtol=0, atol=0)


def test_logit_noise_adds_variance_to_the_log_odds():
    # logit(p_hat) = w u + eps: variance (w a)^2 / 3 + sigma^2 = 25/3 + 4 for a = 10, w = 0.5, sigma = 2.
    p, _ = simulate(100_000, sigma=2.0, noise_space="logit", half_width=10.0, rng=np.random.default_rng(5))
    z = logit(p)
    expected = 25 / 3 + 4
    # sd of the sample variance ~ sqrt(Var(z^2) / N) ~ 0.06 here; 0.3 is ~5 sd.
    assert z.var() == pytest.approx(expected, abs=0.3)
    assert z.mean() == pytest.approx(0.0, abs=4 * np.sqrt(expected / z.size))  # 4 SE of the mean


@pytest.mark.parametrize("noise_space", ["prob", "logit"])
def test_sigma_zero_is_calibrated(noise_space):
    n = 100_000
    p, y = simulate(
        n, sigma=0.0, noise_space=noise_space, half_width=READINGS[noise_space], rng=np.random.default_rng(6)
    )
    # Under calibration E[ECD_i | p] = 0 with variance p(1-p) logit(p)^2 (notes/004 §3 item 2): 4 SE.
    se_ecd = np.sqrt(np.mean(p * (1 - p) * logit(p) ** 2) / n)
    assert abs(ecd(_binary(p), y, kind="probs")) < 4 * se_ecd
    # Weighted ESCE = mean(y) - mean(p): variance sum p(1-p) / N^2; 4 SE.
    table = entropic_bins(_binary(p), y, kind="probs", n_bins=10)
    se_esce = np.sqrt(np.mean(p * (1 - p)) / n)
    assert abs(table.weighted("esce")) < 4 * se_esce
    # Per bin the label frequency tracks the mean prediction: |ESCE_b| < 4 SE_b in every occupied bin.
    ids = np.minimum(np.floor(10 * p), 9).astype(int)
    for b in np.flatnonzero(table.counts):
        members = p[ids == b]
        assert abs(table.esce[b]) < 4 * np.sqrt(np.mean(members * (1 - members)) / members.size) + 1e-12
    # A noisy draw from the same seed is not calibrated (ECD far above the calibrated SE).
    noisy, y2 = simulate(
        n, sigma=2.0, noise_space=noise_space, half_width=READINGS[noise_space], rng=np.random.default_rng(6)
    )
    assert ecd(_binary(noisy), y2, kind="probs") > 20 * se_ecd


def test_same_seed_same_arrays_other_seed_differs():
    kwargs = {"sigma": 0.5, "noise_space": "prob", "half_width": 7.4}
    a = simulate(300, rng=np.random.default_rng(9), **kwargs)
    b = simulate(300, rng=np.random.default_rng(9), **kwargs)
    c = simulate(300, rng=np.random.default_rng(10), **kwargs)
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])


# notes/004 §2.3 item 5: mean +- sd of the weighted ECE and ECD over 300 datasets of N = 10,000.
PUBLISHED_STATS = [
    ("prob", 7.4, 0.5, (0.1750, 0.0049), (1.2441, 0.0354)),
    ("prob", 7.4, 2.0, (0.4032, 0.0051), (4.1919, 0.0531)),
    ("prob", 7.4, 0.0, (0.0089, 0.0022), (0.0004, 0.0051)),
    ("logit", 10.0, 0.5, (0.0098, 0.0023), (0.0128, 0.0057)),
    ("logit", 10.0, 2.0, (0.0803, 0.0038), (0.2112, 0.0098)),
    ("logit", 10.0, 0.0, (0.0079, 0.0019), (0.0000, 0.0053)),
]


@pytest.mark.parametrize(("noise_space", "half_width", "sigma", "ece_stat", "ecd_stat"), PUBLISHED_STATS)
def test_weighted_sums_match_the_notes(noise_space, half_width, sigma, ece_stat, ecd_stat):
    n_seeds = 5
    eces, ecds = [], []
    for seed in range(n_seeds):
        p, y = simulate(
            10_000,
            sigma=sigma,
            noise_space=noise_space,
            half_width=half_width,
            weight=0.5,
            clip=1e-5,
            rng=np.random.default_rng(100 + seed),
        )
        table = entropic_bins(_binary(p), y, kind="probs", n_bins=10)
        eces.append(table.weighted("ece"))
        ecds.append(table.weighted("ecd"))
    # The mean of 5 datasets has sd = sd_one / sqrt(5) (the notes' 300-rep mean is itself ~exact: sd / 17);
    # 4 such sds, plus 1e-4 for the notes' 4-decimal rounding.
    for values, (mean, sd) in ((eces, ece_stat), (ecds, ecd_stat)):
        assert np.mean(values) == pytest.approx(mean, abs=4 * sd / np.sqrt(n_seeds) + 1e-4)


def test_table_matching_reading_is_far_from_the_text_reading():
    # The two readings differ by an order of magnitude at sigma = 2 (notes/004 §2.3 item 5: ECD 4.19 vs 0.21).
    rng = np.random.default_rng(7)
    p_prob, y_prob = simulate(10_000, sigma=2.0, noise_space="prob", half_width=7.4, rng=rng)
    p_logit, y_logit = simulate(10_000, sigma=2.0, noise_space="logit", half_width=10.0, rng=rng)
    assert ecd(_binary(p_prob), y_prob, kind="probs") > 10 * ecd(_binary(p_logit), y_logit, kind="probs") > 0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"noise_space": "gauss"},
        {"noise_space": "Prob"},
        {"sigma": -0.1},
        {"sigma": float("nan")},
        {"clip": 0.5},
        {"clip": 0.7},
        {"clip": 0.0},
        {"half_width": 0.0},
        {"n_samples": 0},
        {"n_samples": -5},
        {"n_samples": 10.0},
    ],
)
def test_bad_arguments_raise(kwargs):
    args = {"n_samples": 100, "sigma": 0.5, "noise_space": "prob", "half_width": 7.4, "clip": 1e-5}
    args.update(kwargs)
    n = args.pop("n_samples")
    with pytest.raises(CalibInputError):
        simulate(n, rng=np.random.default_rng(0), **args)
