"""Tests of calib.resampling.bootstrap: percentile confidence intervals (paper 000, App. E)."""

import numpy as np
import pytest

import calib._internal.rows
import calib.resampling.bootstrap
from calib._internal.rows import float_chunks
from calib.calibration_errors.binned import BinnedCalibrationError
from calib.calibration_errors.binning import equal_mass_bin_ids
from calib.calibration_errors.presets import ece_preset
from calib.resampling.bootstrap import (
    ResampledSums,
    bootstrap,
    bootstrap_ece,
    bootstrap_indices,
    counted_resamples,
    percentile_interval,
    resample_blocks,
    resample_counts,
)
from calib.validation import CalibInputError


def _mean(x, groups):
    return x.mean()


def test_percentile_interval_of_known_values():
    # np.arange(101) has its p-th percentile at exactly p (linear interpolation on integer ranks)
    low, high = percentile_interval(np.arange(101), 0.05)
    assert (low, high) == (2.5, 97.5)
    low, high = percentile_interval(np.arange(101), 0.1)
    assert (low, high) == (5.0, 95.0)


def test_percentile_interval_works_per_column():
    values = np.column_stack([np.arange(101), 10 * np.arange(101)])
    low, high = percentile_interval(values, 0.2)
    np.testing.assert_array_equal(low, [10.0, 100.0])
    np.testing.assert_array_equal(high, [90.0, 900.0])


def test_bootstrap_interval_of_a_mean_has_the_normal_width():
    rng = np.random.default_rng(0)
    sigma, n = 2.0, 2000
    x = rng.normal(1.0, sigma, size=n)
    result = bootstrap(_mean, x, n_boot=2000, seed=0)
    expected = 2 * 1.96 * sigma / np.sqrt(n)
    # The width estimates 2 z sigma / sqrt(N) with two errors: the sample sd (relative error 1/sqrt(2N) = 1.6%)
    # and the Monte Carlo error of two 2.5% quantiles from B = 2000 resamples (sqrt(p(1-p)/B)/phi(z) per
    # quantile, ~2.2% of the width for both). 10% is ~3.7 combined standard errors.
    assert result.high[0] - result.low[0] == pytest.approx(expected, rel=0.10)
    assert result.estimate[0] == x.mean()
    assert result.low[0] < x.mean() < result.high[0]
    assert result.values.shape == (2000, 1)


def test_same_seed_same_result_other_seed_differs():
    rng = np.random.default_rng(0)
    x = rng.normal(size=200)
    a = bootstrap(_mean, x, n_boot=50, seed=1)
    b = bootstrap(_mean, x, n_boot=50, seed=1)
    c = bootstrap(_mean, x, n_boot=50, seed=2)
    np.testing.assert_array_equal(a.values, b.values)
    np.testing.assert_array_equal(a.low, b.low)
    assert not np.array_equal(a.values, c.values)


def test_groups_are_the_original_indices_of_the_resampled_rows():
    n = 40
    data = 10 * np.arange(n)
    other = np.arange(n)[:, None] * np.ones((1, 3))
    calls = []

    def statistic(d, o, groups):
        calls.append((d.copy(), o.copy(), np.asarray(groups).copy()))
        return np.array([d.sum(), o.sum()])

    result = bootstrap(statistic, data, other, n_boot=20, seed=5)
    # first call: the full data with ids 0..N-1
    np.testing.assert_array_equal(calls[0][2], np.arange(n))
    indices = bootstrap_indices(n, n_boot=20, seed=5)
    assert len(calls) == 21
    for (d, o, groups), ids in zip(calls[1:], indices, strict=True):
        np.testing.assert_array_equal(groups, ids)
        np.testing.assert_array_equal(d, 10 * groups)  # the rows really are data[groups]
        np.testing.assert_array_equal(o[:, 0], groups)
    # a vector statistic gives one interval per output
    assert result.low.shape == (2,)
    assert result.values.shape == (20, 2)


def test_bootstrap_indices_are_a_seeded_resample_with_replacement():
    ids = bootstrap_indices(30, n_boot=100, seed=0)
    assert ids.shape == (100, 30)
    assert ids.min() >= 0
    assert ids.max() <= 29
    # with replacement: duplicates occur (the chance of a permutation is 30!/30^30 ~ 1e-12)
    assert any(np.unique(row).size < 30 for row in ids)
    np.testing.assert_array_equal(ids, np.random.default_rng(0).integers(0, 30, size=(100, 30)))


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.05, 1.5, np.nan])
def test_alpha_out_of_range_is_rejected(alpha):
    with pytest.raises(CalibInputError, match="alpha"):
        percentile_interval(np.arange(10), alpha)
    with pytest.raises(CalibInputError, match="alpha"):
        bootstrap(_mean, np.arange(10.0), n_boot=5, seed=0, alpha=alpha)


def test_bad_arrays_and_counts_are_rejected():
    with pytest.raises(CalibInputError, match="array"):
        bootstrap(_mean, n_boot=5, seed=0)
    with pytest.raises(CalibInputError, match="same number of samples"):
        bootstrap(lambda a, b, groups: 0.0, np.arange(5), np.arange(6), n_boot=5, seed=0)
    with pytest.raises(CalibInputError, match="n_boot"):
        bootstrap_indices(10, n_boot=0, seed=0)
    with pytest.raises(CalibInputError, match="n_samples"):
        bootstrap_indices(0, n_boot=5, seed=0)


def _posteriors(seed: int, n: int, k: int):
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.full(k, 0.5), size=n)
    return probs, rng.integers(0, k, n)


@pytest.mark.parametrize(
    ("target", "k", "closed"),
    [("top_label", 4, "right"), ("binary", 2, "left"), ("classwise", 3, "right"), ("auto", 2, "right")],
)
def test_batched_ece_bootstrap_equals_the_loop_over_resamples(target, k, closed):
    probs, y = _posteriors(0, 500, k)
    ece = BinnedCalibrationError(target, n_bins=10, closed=closed)
    result = bootstrap_ece(probs, y, kind="probs", estimator=ece, n_boot=30, seed=4)
    loop = [ece(probs[rows], y[rows], kind="probs") for rows in bootstrap_indices(500, n_boot=30, seed=4)]
    # per-bin sums in another order than the per-bin means of the loop: float rounding only
    np.testing.assert_allclose(result.values[:, 0], loop, rtol=0, atol=1e-15)
    assert result.estimate[0] == pytest.approx(ece(probs, y, kind="probs"), abs=1e-15)
    assert result.low[0] <= result.estimate[0] <= result.high[0]


@pytest.mark.parametrize("preset", ["netcal", "torchmetrics", "sklearn"])
def test_batched_ece_bootstrap_follows_a_preset_binning(preset):
    probs, y = _posteriors(1, 400, 2)
    probs[:40, 1] = np.round(probs[:40, 1], 1)  # scores on edges, where the presets' rules differ
    probs[:40, 0] = 1.0 - probs[:40, 1]
    ece = ece_preset(preset, n_bins=10)
    result = bootstrap_ece(probs, y, kind="probs", estimator=ece, n_boot=20, seed=2)
    loop = [ece(probs[rows], y[rows], kind="probs") for rows in bootstrap_indices(400, n_boot=20, seed=2)]
    # per-bin sums in another order than the per-bin means of the loop: float rounding only
    np.testing.assert_allclose(result.values[:, 0], loop, rtol=0, atol=1e-15)


@pytest.mark.parametrize("setting", [{"norm": "l2"}, {"average": True}, {"target": "canonical"}])
def test_the_batched_ece_bootstrap_refuses_estimators_it_cannot_batch(setting):
    probs, y = _posteriors(0, 50, 3)
    with pytest.raises(CalibInputError, match=r"bootstrap\(statistic"):
        bootstrap_ece(probs, y, kind="probs", estimator=BinnedCalibrationError(**setting), n_boot=5)


def test_resample_blocks_bound_memory_and_keep_one_stream(monkeypatch):
    whole = np.random.default_rng(9).integers(0, 50, size=(40, 50))
    np.testing.assert_array_equal(bootstrap_indices(50, n_boot=40, seed=9), whole)  # one block when it fits
    monkeypatch.setattr(calib.resampling.bootstrap, "_BLOCK_CELLS", 50 * 6)
    blocks = list(resample_blocks(50, n_boot=40, seed=9))
    assert [b.shape for b in blocks] == [(6, 50)] * 6 + [(4, 50)]
    # the class-wise ECE splits a block further (K cells per sample) without changing the resamples
    probs, y = _posteriors(1, 50, 3)
    classwise = BinnedCalibrationError("classwise", n_bins=5)
    split = bootstrap_ece(probs, y, kind="probs", estimator=classwise, n_boot=40, seed=9).values[:, 0]
    loop = [classwise(probs[r], y[r], kind="probs") for r in np.concatenate(blocks)]
    np.testing.assert_allclose(split, loop, rtol=0, atol=1e-15)


def test_resample_counts_count_each_draw():
    rows = bootstrap_indices(7, n_boot=5, seed=3)
    counts = resample_counts(rows, 7)
    assert counts.shape == (7, 5) and counts.dtype == np.float64
    np.testing.assert_array_equal(counts, [[np.sum(r == i) for r in rows] for i in range(7)])


def test_counted_resamples_are_the_resamples_of_resample_blocks(monkeypatch):
    monkeypatch.setattr(calib.resampling.bootstrap, "_BLOCK_CELLS", 50 * 3)  # blocks of 3 resamples
    monkeypatch.setattr(calib.resampling.bootstrap, "_COUNT_CELLS", 50 * 7)  # two whole blocks per matrix
    matrices = list(counted_resamples(50, n_boot=20, seed=4))
    assert [m.shape[1] for m in matrices] == [6, 6, 6, 2] and matrices[0].dtype == np.uint8
    expected = resample_counts(bootstrap_indices(50, n_boot=20, seed=4), 50)
    np.testing.assert_array_equal(np.hstack(matrices), expected)
    monkeypatch.setattr(calib._internal.rows, "_CHUNK_CELLS", 6 * 8)  # 8 samples per chunk of 6 resamples
    chunks = list(float_chunks(matrices[0]))
    assert [rows.stop - rows.start for rows, _ in chunks] == [8] * 6 + [2]
    assert all(c.dtype == np.float64 for _, c in chunks)
    np.testing.assert_array_equal(np.vstack([c for _, c in chunks]), expected[:, :6])


def test_counts_beyond_a_byte_widen_the_count_matrix(monkeypatch):
    expected = 300 * resample_counts(bootstrap_indices(20, n_boot=5, seed=1), 20)
    drawn = calib.resampling.bootstrap._draw_counts
    monkeypatch.setattr(calib.resampling.bootstrap, "_draw_counts", lambda row, n: 300 * drawn(row, n))
    (matrix,) = counted_resamples(20, n_boot=5, seed=1)
    np.testing.assert_array_equal(matrix, expected)


def test_resampled_sums_equal_the_sums_over_each_resample():
    rng = np.random.default_rng(5)
    values, groups = rng.normal(size=(40, 3)), rng.integers(0, 4, size=(40, 3))
    rows = bootstrap_indices(40, n_boot=6, seed=1)
    counts = resample_counts(rows, 40)
    plain = ResampledSums(values)(counts)
    np.testing.assert_allclose(plain, [[values[r, c].sum() for r in rows] for c in range(3)], rtol=1e-13)
    grouped = ResampledSums(values, groups, 4)(counts)  # a group per value
    expected = [[[values[r, c][groups[r, c] == g].sum() for r in rows] for g in range(4)] for c in range(3)]
    np.testing.assert_allclose(grouped, expected, rtol=1e-13, atol=1e-15)
    shared = ResampledSums(values, groups[:, 0], 4)(counts)  # one group per sample
    expected = [[[values[r, c][groups[r, 0] == g].sum() for r in rows] for g in range(4)] for c in range(3)]
    np.testing.assert_allclose(shared, expected, rtol=1e-13, atol=1e-15)


def test_resampled_sums_keep_infinities_as_the_plain_sum_does():
    values = np.array([1.0, np.inf, 2.0, -np.inf, 3.0])
    rows = np.array([[0, 2, 4, 4, 0], [1, 0, 0, 2, 4], [3, 3, 0, 0, 2], [1, 3, 0, 0, 0]])
    counts = resample_counts(rows, 5)
    with np.errstate(invalid="ignore"):
        expected = [values[r].sum() for r in rows]  # 7, inf, -inf, nan
    np.testing.assert_array_equal(ResampledSums(values)(counts)[0], expected)
    groups = np.array([0, 1, 1, 0, 1])
    with np.errstate(invalid="ignore"):
        by_group = [[values[r][groups[r] == g].sum() for r in rows] for g in range(2)]
    np.testing.assert_array_equal(ResampledSums(values, groups, 2)(counts)[0], by_group)


def test_ece_estimators_are_checked():
    with pytest.raises(CalibInputError, match="estimator must be a calib.BinnedCalibrationError"):
        bootstrap_ece(*_posteriors(2, 20, 3), kind="probs", estimator="top_label")
    with pytest.raises(CalibInputError, match="K = 2"):
        bootstrap_ece(*_posteriors(2, 20, 3), kind="probs", estimator=BinnedCalibrationError("binary"))


def test_percentile_interval_of_infinite_values_has_no_nan():
    # e.g. cross-entropies of resamples that hold a zero probability on a true label
    low, high = percentile_interval(np.array([[1.0, 3.0], [np.inf, 4.0], [np.inf, 5.0], [2.0, 6.0]]), 0.5)
    np.testing.assert_array_equal(low, [1.75, 3.75])
    np.testing.assert_array_equal(high, [np.inf, 5.25])
    assert percentile_interval([-np.inf, -np.inf, 0.0], 0.05)[0] == -np.inf
    with pytest.raises(CalibInputError, match="undefined"):
        percentile_interval([-np.inf, np.inf], 0.5)


@pytest.mark.parametrize("values", [[], [1.0, np.nan], None, ["a", "b"]])
def test_percentile_interval_rejects_values_without_numbers(values):
    with pytest.raises(CalibInputError, match="values"):
        percentile_interval(values, 0.05)


@pytest.mark.parametrize("n_boot", [0, 1, 20])
def test_the_full_sample_leads_the_counted_resamples_when_asked(monkeypatch, n_boot):
    monkeypatch.setattr(calib.resampling.bootstrap, "_COUNT_CELLS", 50 * 8)  # matrices of 8 resamples
    matrices = list(counted_resamples(50, n_boot=n_boot, seed=4, full_sample_first=True))
    np.testing.assert_array_equal(matrices[0][:, 0], np.ones(50))
    rest = np.concatenate([matrices[0][:, 1:], *matrices[1:]], axis=1)
    if n_boot:
        expected = np.concatenate(list(counted_resamples(50, n_boot=n_boot, seed=4)), axis=1)
        np.testing.assert_array_equal(rest, expected)
    else:
        assert rest.shape == (50, 0)


def test_equal_mass_ece_bootstrap_keeps_the_bins_of_the_data():
    """Equal-mass edges are found once, on the data, as ``calib evaluate`` finds them; a resample's ECE is
    then its gaps summed in those bins (computed here apart from the batched products)."""
    probs, y = _posteriors(3, 300, 2)
    probs[:, 1] = np.round(probs[:, 1], 2)  # ties
    probs[:, 0] = 1.0 - probs[:, 1]
    ece = BinnedCalibrationError("binary", n_bins=8, strategy="equal-mass")
    result = bootstrap_ece(probs, y, kind="probs", estimator=ece, n_boot=15, seed=1)
    ids = equal_mass_bin_ids(probs[:, 1], 8)
    gaps = (y == 1) - probs[:, 1]
    loop = [
        np.abs(np.bincount(ids[r], weights=gaps[r], minlength=8)).sum() / r.size
        for r in bootstrap_indices(300, n_boot=15, seed=1)
    ]
    np.testing.assert_allclose(result.values[:, 0], loop, rtol=0, atol=1e-15)
    assert result.estimate[0] == pytest.approx(ece(probs, y, kind="probs"), abs=1e-15)
