"""Tests of calib.calibration_errors.smoothing: NW regression and KDE (paper 002, eq. 4.8 and App. D), SmoothECE
(Blasiok & Nakkiran 2023) and the calibration-sharpness diagram (paper 002, Sec. 4.2; identities of the notes,
Sec. 4.3).
"""

import time
import warnings

import numpy as np
import pytest
from scipy.stats import norm

import calib._internal.rows
import calib.resampling.bootstrap
from calib.calibration_errors.smoothing import (
    ResampledSmoothEce,
    _convolve_nodes,
    brier_losses_sum,
    calibration_sharpness,
    calibration_sharpness_top_label,
    kde,
    nadaraya_watson,
    smooth_ece,
    smooth_ece_top_label,
)
from calib.resampling.bootstrap import bootstrap_indices, resample_counts
from calib.scoring.scores import brier
from calib.validation import CalibInputError

KERNELS = ("gaussian", "epanechnikov")


def _data(n, seed=0, power=1.3):
    rng = np.random.default_rng(seed)
    x = rng.beta(5.0, 1.5, n)
    y = (rng.random(n) < x**power).astype(float)
    return x, y


def _brute_kernel(u, sigma, kernel):
    z = np.asarray(u, dtype=float) / sigma
    if kernel == "gaussian":
        return np.exp(-0.5 * z**2) / (sigma * np.sqrt(2 * np.pi))
    return 0.75 / sigma * (1 - z**2) * (np.abs(z) <= 1)


# ---------------------------------------------------------------------------------------------
# Nadaraya-Watson and KDE


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("method", ["exact", "grid"])
def test_nw_and_kde_match_brute_force_definitions(kernel, method):
    x, y = _data(60, seed=1)
    y = y + np.linspace(0, 0.5, 60)  # non-binary targets
    points = np.linspace(0.3, 1.05, 41)
    sigma = 0.07
    dens = np.array([np.mean([_brute_kernel(p - xi, sigma, kernel) for xi in x]) for p in points])
    numer = np.array(
        [np.mean([_brute_kernel(p - xi, sigma, kernel) * yi for xi, yi in zip(x, y, strict=True)]) for p in points]
    )
    tol = 1e-12 if method == "exact" else 2e-5
    got_dens = kde(x, points, bandwidth=sigma, kernel=kernel, method=method)
    np.testing.assert_allclose(got_dens, dens, rtol=0, atol=tol * dens.max())
    got = nadaraya_watson(x, y, points, bandwidth=sigma, kernel=kernel, method=method)
    inside = dens > 1e-3 * dens.max()
    np.testing.assert_allclose(got[inside], numer[inside] / dens[inside], rtol=0, atol=tol * 10)


@pytest.mark.parametrize(
    ("kernel", "sigma", "tol"), [("gaussian", 0.05, 1e-5), ("gaussian", 0.02, 1e-5), ("epanechnikov", 0.05, 5e-5)]
)
def test_grid_method_agrees_with_exact_sums(kernel, sigma, tol):
    x, y = _data(5000, seed=2)
    points = np.linspace(-0.1, 1.1, 1201)
    exact = nadaraya_watson(x, y, points, bandwidth=sigma, kernel=kernel, method="exact")
    grid = nadaraya_watson(x, y, points, bandwidth=sigma, kernel=kernel, method="grid")
    np.testing.assert_array_equal(np.isnan(exact), np.isnan(grid))
    assert np.nanmax(np.abs(exact - grid)) < tol
    d_exact = kde(x, points, bandwidth=sigma, kernel=kernel, method="exact")
    d_grid = kde(x, points, bandwidth=sigma, kernel=kernel, method="grid")
    assert np.max(np.abs(d_exact - d_grid)) < tol * d_exact.max()
    assert np.all(d_grid >= 0)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("method", ["exact", "grid"])
def test_kde_integrates_to_one_and_density_times_nw_to_the_mean(kernel, method):
    x, _ = _data(400, seed=3)
    losses = np.random.default_rng(4).gamma(2.0, 0.3, x.size)
    wide = np.linspace(-1.0, 2.0, 60001)
    dens = kde(x, wide, bandwidth=0.05, kernel=kernel, method=method)
    assert np.trapezoid(dens, wide) == pytest.approx(1.0, abs=1e-6)
    product = dens * np.nan_to_num(nadaraya_watson(x, losses, wide, bandwidth=0.05, kernel=kernel, method=method))
    assert np.trapezoid(product, wide) == pytest.approx(losses.mean(), rel=1e-6)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("method", ["exact", "grid"])
def test_nw_of_a_constant_is_that_constant(kernel, method):
    x, _ = _data(3000, seed=5)
    points = np.linspace(0, 1, 501)
    got = nadaraya_watson(x, np.full(x.size, 0.37), points, bandwidth=0.03, kernel=kernel, method=method)
    defined = ~np.isnan(got)
    assert defined.sum() > 300
    np.testing.assert_allclose(got[defined], 0.37, rtol=1e-6)  # the grid's FFT round-off where p_hat ~ 0
    dens = kde(x, points, bandwidth=0.03, kernel=kernel)
    bulk = dens > 1e-3 * dens.max()
    np.testing.assert_allclose(got[bulk], 0.37, rtol=1e-12)


@pytest.mark.parametrize("kernel", KERNELS)
def test_small_bandwidth_gives_group_means(kernel):
    rng = np.random.default_rng(6)
    x = rng.choice([0.2, 0.5, 0.8], 300)
    y = rng.random(300)
    got = nadaraya_watson(x, y, [0.2, 0.5, 0.8], bandwidth=1e-3, kernel=kernel, method="exact")
    np.testing.assert_allclose(got, [y[x == v].mean() for v in (0.2, 0.5, 0.8)], rtol=1e-13)


@pytest.mark.parametrize("method", ["exact", "grid"])
def test_nan_where_there_is_no_data_and_no_warnings(method):
    x = np.linspace(0.0, 0.2, 50)
    y = (x > 0.1).astype(float)
    points = np.array([0.1, 0.2 + 4 * 0.01, 0.2 + 8 * 0.01, 0.9, 3.0, -5.0])
    with warnings.catch_warnings(), np.errstate(divide="raise", invalid="raise", over="raise"):
        warnings.simplefilter("error")
        got = nadaraya_watson(x, y, points, bandwidth=0.01, method=method)
        dens = kde(x, points, bandwidth=0.01, method=method)
    assert np.isfinite(got[:2]).all()
    assert np.isnan(got[2:]).all()
    np.testing.assert_array_equal(dens[2:], 0.0)
    assert got[0] == pytest.approx(0.5, abs=1e-6)


def test_eval_shapes_and_auto_method():
    x, y = _data(200, seed=7)
    assert nadaraya_watson(x, y, 0.9).shape == ()
    assert kde(x, np.full((3, 4), 0.8)).shape == (3, 4)
    big_x, big_y = _data(40_000, seed=8)
    points = np.linspace(0, 1, 1000)  # 4e7 pairs: "auto" takes the grid
    np.testing.assert_allclose(
        nadaraya_watson(big_x, big_y, points), nadaraya_watson(big_x, big_y, points, method="grid"), rtol=0, atol=0
    )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"bandwidth": 0.0}, "bandwidth"),
        ({"bandwidth": -0.1}, "bandwidth"),
        ({"bandwidth": np.nan}, "bandwidth"),
        ({"bandwidth": "wide"}, "bandwidth"),
        ({"kernel": "tophat"}, "kernel"),
        ({"method": "fast"}, "method"),
        ({"grid_points": 2}, "grid_points"),
    ],
)
def test_nw_rejects_bad_options(kwargs, match):
    with pytest.raises(CalibInputError, match=match):
        nadaraya_watson([0.1, 0.5], [0, 1], [0.3], **kwargs)


def test_nw_and_kde_reject_bad_data():
    with pytest.raises(CalibInputError, match="y_data"):
        nadaraya_watson([0.1, 0.5], [0, 1, 1], [0.3])
    with pytest.raises(CalibInputError, match="x_data"):
        nadaraya_watson([[0.1, 0.5]], [[0, 1]], [0.3])
    with pytest.raises(CalibInputError, match="empty"):
        kde([], [0.3])
    with pytest.raises(CalibInputError, match="NaN"):
        kde([0.1, np.nan], [0.3])
    with pytest.raises(CalibInputError, match="x_eval"):
        kde([0.1, 0.2], [np.inf])


# ---------------------------------------------------------------------------------------------
# SmoothECE


def _brute_smece(f, y, sigma, mesh=10001):
    """int_0^1 |(1/n) sum_i K~(t, f_i) (f_i - y_i)| dt, fully reflected Gaussian, trapezoid rule."""
    t = np.linspace(0, 1, mesh)
    total = np.zeros(mesh)
    for k in range(-3, 4):
        kern = norm.pdf(t[:, None] - f[None, :] - 2 * k, scale=sigma)
        kern += norm.pdf(t[:, None] + f[None, :] - 2 * k, scale=sigma)
        total += kern @ (f - y)
    return np.trapezoid(np.abs(total) / f.size, t)


def _relplot_discretization(f, y, sigma):
    """relplot 1.0.3's smECE_sigma written out directly (np.add.at binning, direct np.convolve)."""
    nodes = max(2000, round(20 / sigma)) // 2 + 1
    mesh = np.linspace(0, 1, max(200, round(10 / sigma)))
    pos = f * (nodes - 1)
    left = np.clip(pos.astype(int), 0, nodes - 2)
    frac = pos - left
    smoothed = []
    for w in (f - y, np.ones_like(f)):
        binned = np.zeros(nodes)
        np.add.at(binned, left, (1 - frac) * w)
        np.add.at(binned, left + 1, frac * w)
        ext = np.concatenate([binned[::-1][:-1], binned, binned[::-1][1:]])
        taps = norm.pdf(np.linspace(0, 1, nodes) - 0.5, scale=sigma)
        conv = np.convolve(ext, taps, "valid")[nodes // 2 : nodes // 2 + nodes]
        smoothed.append(np.interp(mesh, np.linspace(0, 1, nodes), conv))
    return np.abs(smoothed[0]).sum() / (smoothed[1] + 1e-4).sum()


def _smece_cases(n, seed):
    rng = np.random.default_rng(seed)
    f = rng.random(n)
    yield "calibrated", f, (rng.random(n) < f).astype(float)
    yield "miscalibrated", f, (rng.random(n) < f**2).astype(float)
    g = rng.beta(5, 1, n)
    yield "top-label", g, (rng.random(n) < g - 0.08).astype(float)
    h = np.clip(rng.normal(0.97, 0.03, n), 0, 1)  # many samples exactly at 1
    yield "saturated", h, (rng.random(n) < 0.95).astype(float)


@pytest.mark.parametrize("sigma", [0.02, 0.1, 0.3])
def test_fine_smooth_ece_matches_the_definition(sigma):
    rng = np.random.default_rng(9)
    f = np.concatenate([rng.random(150), [0.0, 0.0, 1.0, 1.0, 1.0]])
    y = (rng.random(f.size) < f**1.5).astype(float)
    expected = _brute_smece(f, y, sigma)
    assert smooth_ece(f, y, bandwidth=sigma, discretization="fine") == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("sigma", [0.05, 0.013, 7 / 1024, 0.4])  # 7/1024: relplot's even node count
def test_relplot_discretization_written_out(sigma):
    for _, f, y in _smece_cases(700, seed=10):
        assert smooth_ece(f, y, bandwidth=sigma) == pytest.approx(_relplot_discretization(f, y, sigma), abs=1e-13)


@pytest.mark.parametrize("discretization", ["relplot", "fine"])
@pytest.mark.parametrize("h", [0.0, 0.3, 0.85, 1.0])
def test_constant_confidence_gives_the_accuracy_gap(discretization, h):
    """Mean-replacement recalibration: one confidence h, accuracy a, SmoothECE = |a - h| (notes Sec. 5)."""
    n = 2000
    correct = (np.arange(n) < 1703).astype(float)  # a = 0.8515
    conf = np.full(n, h)
    value, sigma = smooth_ece(conf, correct, discretization=discretization, return_bandwidth=True)
    assert value == pytest.approx(abs(0.8515 - h), abs=1e-6)
    assert smooth_ece(conf, correct, bandwidth=0.05, discretization=discretization) == pytest.approx(
        abs(0.8515 - h), abs=1e-6
    )
    assert sigma >= value - 1e-6


@pytest.mark.parametrize("discretization", ["relplot", "fine"])
def test_calibrated_point_masses_give_zero(discretization):
    levels = [(0.2, 50), (0.5, 30), (0.75, 40), (1.0, 20)]
    conf = np.concatenate([np.full(m, v) for v, m in levels])
    correct = np.concatenate([(np.arange(m) < v * m).astype(float) for v, m in levels])
    value, sigma = smooth_ece(conf, correct, discretization=discretization, return_bandwidth=True)
    assert value < 1e-12
    assert sigma <= 2 / 1024
    for bandwidth in (0.01, 0.2):
        assert smooth_ece(conf, correct, bandwidth=bandwidth, discretization=discretization) < 1e-12


@pytest.mark.parametrize("discretization", ["relplot", "fine"])
def test_smooth_ece_symmetry_and_monotone_in_bandwidth(discretization):
    f, y = _data(3000, seed=11)
    sigmas = (0.005, 0.01, 0.03, 0.1, 0.3, 0.6)
    values = [smooth_ece(f, y, bandwidth=s, discretization=discretization) for s in sigmas]
    mirrored = [smooth_ece(1 - f, 1 - y, bandwidth=s, discretization=discretization) for s in sigmas]
    np.testing.assert_allclose(mirrored, values, rtol=1e-9)
    # Smoothing contracts the L1 norm; relplot cuts its kernel at |u| <= 1/2, which breaks this for wide kernels.
    checked = len(sigmas) if discretization == "fine" else 4
    assert np.all(np.diff(values[:checked]) <= 1e-12)


def test_smooth_ece_bandwidth_is_the_fixed_point():
    f, y = _data(4000, seed=12)
    value, sigma = smooth_ece(f, y, discretization="fine", return_bandwidth=True)
    assert value == pytest.approx(sigma, abs=1e-8)
    value, sigma = smooth_ece(f, y, return_bandwidth=True)  # relplot: 10 bisection steps on [0, 1]
    assert (sigma * 1024) == round(sigma * 1024)
    assert value <= sigma
    below = sigma - 1 / 1024
    assert smooth_ece(f, y, bandwidth=below) > below
    assert value == pytest.approx(smooth_ece(f, y, discretization="fine"), rel=0.05)


@pytest.mark.parametrize("n", [1000, 5000, 20000])
def test_smooth_ece_agrees_with_relplot(n):
    """relplot (in the 'test' extra: this cross-check must run, not skip) gives the same value and bandwidth."""
    import relplot

    for _, f, y in _smece_cases(n, seed=n):
        expected, width = relplot.smECE(f, y, return_width=True)
        value, sigma = smooth_ece(f, y, return_bandwidth=True)
        assert sigma == width
        assert value == pytest.approx(expected, abs=1e-9)
        for s in (0.05, 0.013, 7 / 1024):
            assert smooth_ece(f, y, bandwidth=s) == pytest.approx(relplot.smECE_sigma(f, y, s), abs=1e-9)


@pytest.mark.parametrize(("n", "n_boot"), [(40, 30), (3000, 12), (60_000, 3)])
def test_resampled_smooth_ece_equals_smooth_ece_of_each_resample(n, n_boot, monkeypatch):
    monkeypatch.setattr(calib._internal.rows, "_CHUNK_CELLS", 5000)  # several chunks of samples
    rows = bootstrap_indices(n, n_boot=n_boot, seed=n)
    for case, f, y in _smece_cases(n, seed=n + 1):
        expected = [smooth_ece(f[r], y[r]) for r in rows]
        # the binned sums add c_i (f_i - y_i) in sample order instead of each draw in draw order
        np.testing.assert_allclose(
            ResampledSmoothEce(f, y)(resample_counts(rows, n)), expected, rtol=1e-12, err_msg=case
        )


def test_resampled_smooth_ece_of_the_full_data_is_smooth_ece():
    f, y = _data(5000, seed=3)
    assert ResampledSmoothEce(f, y)(np.ones((5000, 1)))[0] == pytest.approx(smooth_ece(f, y), rel=1e-13)


def test_smooth_ece_top_label_and_speed():
    rng = np.random.default_rng(13)
    logits = rng.normal(size=(500, 4)) * 2
    labels = rng.integers(0, 4, 500)
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    expected = smooth_ece(probs.max(axis=1), probs.argmax(axis=1) == labels)
    assert smooth_ece_top_label(logits, labels, kind="logits") == pytest.approx(expected, rel=1e-12)
    f, y = _data(1_000_000, seed=14)
    start = time.perf_counter()
    smooth_ece(f, y)
    assert time.perf_counter() - start < 2.0  # ~0.1 s on one core


def test_smooth_ece_rejects_bad_inputs():
    with pytest.raises(CalibInputError, match="confidence"):
        smooth_ece([0.2, 1.2], [0, 1])
    with pytest.raises(CalibInputError, match="correct"):
        smooth_ece([0.2, 0.4], [0, 2])
    with pytest.raises(CalibInputError, match="correct"):
        smooth_ece([0.2, 0.4], [0, 1, 1])
    with pytest.raises(CalibInputError, match="discretization"):
        smooth_ece([0.2, 0.4], [0, 1], discretization="coarse")
    with pytest.raises(CalibInputError, match="bandwidth"):
        smooth_ece([0.2, 0.4], [0, 1], bandwidth=0)
    with pytest.raises(CalibInputError, match="bandwidth"):
        smooth_ece([0.2, 0.4], [0, 1], bandwidth=1e-7)
    with pytest.raises(CalibInputError, match="kind"):
        smooth_ece_top_label([[0.2, 0.8]], [1], kind="prob")


# ---------------------------------------------------------------------------------------------
# calibration-sharpness diagram


def _multiclass(n, k=5, seed=15, temperature=0.6):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 2
    true = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = (rng.random(n)[:, None] > np.cumsum(true, axis=1)).sum(axis=1).clip(0, k - 1)
    shown = np.exp(logits / temperature)
    return shown / shown.sum(axis=1, keepdims=True), labels


def test_brier_losses_sum():
    probs, labels = _multiclass(300)
    onehot = np.eye(probs.shape[1])[labels]
    np.testing.assert_allclose(brier_losses_sum(probs, labels, kind="probs"), ((probs - onehot) ** 2).sum(axis=1))
    assert brier_losses_sum(probs, labels, kind="probs").mean() == pytest.approx(
        brier(probs, labels, kind="probs", scaling="sum"), rel=1e-12
    )


def test_sharpness_curves_follow_their_definitions():
    probs, labels = _multiclass(800)
    conf, correct = probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(float)
    losses = brier_losses_sum(probs, labels, kind="probs")
    res = calibration_sharpness(conf, correct, losses, grid_points=401)
    grid = np.linspace(0, 1, 401)
    np.testing.assert_array_equal(res.grid, grid)
    np.testing.assert_allclose(res.curve, nadaraya_watson(conf, correct, grid), rtol=1e-12)
    np.testing.assert_allclose(res.density, kde(conf, grid), rtol=1e-12)
    np.testing.assert_allclose(res.loss_curve, nadaraya_watson(conf, losses, grid), rtol=1e-12)
    np.testing.assert_allclose(res.rho, res.loss_curve - (res.curve - grid) ** 2, rtol=1e-12)
    half = res.density * res.rho / 2
    np.testing.assert_allclose(res.band_high, res.curve + half, rtol=1e-12)
    np.testing.assert_allclose(res.band_low, np.maximum(res.curve - half, 0), rtol=1e-12)
    assert np.nanmin(res.band_low) >= 0
    # n <= n_eval: one draw over all samples, std 0.
    fitted = nadaraya_watson(conf, correct, conf)
    assert res.cal_values.shape == (1,)
    assert res.cal_mean == pytest.approx(np.mean((fitted - conf) ** 2), rel=1e-12)
    assert res.cal_std == 0.0
    assert res.total == pytest.approx(losses.mean(), rel=1e-14)
    assert res.bandwidth == 0.05 and res.kernel == "gaussian"
    other = calibration_sharpness_top_label(probs, labels, kind="probs", grid_points=401)
    np.testing.assert_array_equal(other.curve, res.curve)
    assert other.cal_mean == res.cal_mean and other.total == res.total


def test_sharpness_subsampling_of_evaluation_points():
    probs, labels = _multiclass(3000, seed=16)
    conf, correct = probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(float)
    losses = brier_losses_sum(probs, labels, kind="probs")
    res = calibration_sharpness(conf, correct, losses, n_eval=500, n_repeats=10, seed=3, grid_points=101)
    draws = np.random.default_rng(3).integers(0, conf.size, size=(10, 500))
    expected = [np.mean((nadaraya_watson(conf, correct, conf[d]) - conf[d]) ** 2) for d in draws]
    np.testing.assert_allclose(res.cal_values, expected, rtol=1e-12)
    assert res.cal_mean == pytest.approx(np.mean(expected), rel=1e-12)
    assert res.cal_std == pytest.approx(np.std(expected, ddof=1), rel=1e-10)
    again = calibration_sharpness(conf, correct, losses, n_eval=500, n_repeats=10, seed=3, grid_points=101)
    np.testing.assert_array_equal(again.cal_values, res.cal_values)
    data_mode = calibration_sharpness(
        conf, correct, losses, n_eval=500, n_repeats=10, seed=3, grid_points=101, subsample="data"
    )
    d = draws[4]
    first = np.mean((nadaraya_watson(conf[d], correct[d], conf[d]) - conf[d]) ** 2)
    assert data_mode.cal_values[4] == pytest.approx(first, rel=1e-12)


def test_sharpness_band_area_identity_and_grid_method():
    """int p_hat rho = mean(loss) - int p_hat (m - p)^2 when the data sit well inside [0, 1] (notes Sec. 4.3)."""
    rng = np.random.default_rng(17)
    conf = rng.uniform(0.3, 0.7, 2000)
    correct = (rng.random(conf.size) < conf + 0.1).astype(float)
    losses = rng.gamma(2.0, 0.2, conf.size)
    res = calibration_sharpness(conf, correct, losses, bandwidth=0.02, grid_points=20001, method="exact")
    area = np.trapezoid(np.nan_to_num(res.density * res.rho), res.grid)
    gap = np.trapezoid(np.nan_to_num(res.density * (res.curve - res.grid) ** 2), res.grid)
    assert area == pytest.approx(res.total - gap, abs=1e-8)
    grid_res = calibration_sharpness(conf, correct, losses, bandwidth=0.02, grid_points=20001, method="grid")
    assert grid_res.cal_mean == pytest.approx(res.cal_mean, abs=1e-6)
    np.testing.assert_allclose(grid_res.curve, res.curve, rtol=0, atol=1e-5)


def test_sharpness_constant_confidence():
    """Mean replacement: one confidence h; curve = accuracy everywhere, cal = (a - h)^2 (notes Sec. 4.2)."""
    n, h = 1000, 0.85
    correct = (np.arange(n) < 812).astype(float)
    losses = np.where(correct == 1, 0.03, 0.9)
    res = calibration_sharpness(np.full(n, h), correct, losses, grid_points=101)
    np.testing.assert_allclose(res.curve, 0.812, rtol=1e-12)
    assert res.cal_mean == pytest.approx((0.812 - h) ** 2, rel=1e-12)
    peak = 1 / (0.05 * np.sqrt(2 * np.pi))
    assert res.density[85] == pytest.approx(peak, rel=1e-12)
    assert res.rho[85] == pytest.approx(losses.mean() - (0.812 - 0.85) ** 2, rel=1e-12)
    assert res.band_high[85] == pytest.approx(0.812 + peak * res.rho[85] / 2, rel=1e-12)
    assert np.all(np.isfinite(res.band_low)) and np.all(res.band_low >= 0)
    np.testing.assert_array_equal(res.band_high[:40], res.curve[:40])  # no density, no band


def test_sharpness_rejects_bad_inputs():
    conf, correct, losses = [0.6, 0.7, 0.9], [1, 0, 1], [0.2, 0.8, 0.1]
    with pytest.raises(CalibInputError, match="losses"):
        calibration_sharpness(conf, correct, [0.2, 0.8])
    with pytest.raises(CalibInputError, match="losses"):
        calibration_sharpness(conf, correct, [0.2, np.nan, 0.1])
    with pytest.raises(CalibInputError, match="n_eval"):
        calibration_sharpness(conf, correct, losses, n_eval=0)
    with pytest.raises(CalibInputError, match="n_repeats"):
        calibration_sharpness(conf, correct, losses, n_repeats=1.5)
    with pytest.raises(CalibInputError, match="subsample"):
        calibration_sharpness(conf, correct, losses, subsample="both")
    with pytest.raises(CalibInputError, match="kernel"):
        calibration_sharpness(conf, correct, losses, kernel="box")
    with pytest.raises(CalibInputError, match="confidence"):
        calibration_sharpness([0.6, 0.7, 1.9], correct, losses)


@pytest.mark.parametrize("mode", ["same", "valid"])
@pytest.mark.parametrize(("nodes", "n_taps", "columns"), [(3003, 1001, (2, 5)), (5000, 99, (3,)), (2001, 2001, (1,))])
def test_node_convolution_is_scipy_signals_fftconvolve_bit_for_bit(mode, nodes, n_taps, columns):
    from scipy.signal import fftconvolve

    rng = np.random.default_rng(nodes)
    values, taps = rng.normal(size=(nodes, *columns)), rng.random(n_taps)
    expected = fftconvolve(values, taps.reshape((-1,) + (1,) * len(columns)), mode=mode, axes=0)
    np.testing.assert_array_equal(_convolve_nodes(values, taps, mode=mode), expected)
