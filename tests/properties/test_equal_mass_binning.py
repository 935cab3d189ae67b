"""Equal-mass binning has one definition (:func:`calib.calibration_errors.binning.equal_mass_edges`): the
engine (``calib evaluate --binning equal-mass``), :class:`BinnedCalibrationError`, the ECE bootstrap and the
reliability figure give the same number on tied, rounded and continuous scores, and the bins equal an
independent rank rule that never splits a tie and moves each boundary to the nearer side of a tie.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import ORDER_TOL, PROPERTY
from support import run_calib

from calib.calibration_errors.binned import BinnedCalibrationError
from calib.calibration_errors.binning import bin_ids_from_edges, equal_mass_bin_ids, equal_mass_edges
from calib.evaluation.engine import evaluate
from calib.resampling.bootstrap import bootstrap_ece


def _rank_rule(values: np.ndarray, m: int) -> tuple[list[int], list[float]]:
    """The boundaries (ranks where bins 1 .. M - 1 start) and inner edges of M equal-mass bins, written here
    from the definition by a plain loop over the distinct values and their cumulative counts, apart from
    the library: boundary m is R = ceil(m N / M), unless a tie at ranks [L, U) straddles it (L < R < U),
    which moves it to L when R - L < U - R and L > 0, else to U; the edge is the largest value below it."""
    ranked = sorted(values.tolist())
    n = len(ranked)
    blocks = []  # (value, L, U) for each distinct value, ascending
    for value in ranked:
        if blocks and blocks[-1][0] == value:
            blocks[-1][2] += 1
        else:
            start = blocks[-1][2] if blocks else 0
            blocks.append([value, start, start + 1])
    boundaries = []
    for k in range(1, m):
        target = -(-k * n // m)
        for _, low, high in blocks:
            if low < target < high:
                target = low if low > 0 and target - low < high - target else high
                break
        boundaries.append(target)
    return boundaries, [ranked[b - 1] for b in boundaries]


def _rank_rule_ids(values: np.ndarray, m: int) -> np.ndarray:
    """Each value's bin by the rank rule: the boundaries at or below the rank of its tie's first member."""
    boundaries, _ = _rank_rule(values, m)
    ranked = np.sort(values)
    first = np.searchsorted(ranked, values, side="left")
    return np.array([sum(b <= r for b in boundaries) for r in first], dtype=np.int64)


@st.composite
def scores(draw):
    """Binary positive-class scores: continuous, rounded to 1-2 decimals, or from a few tied values."""
    n = draw(st.integers(2, 300))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    form = draw(st.sampled_from(["continuous", "rounded", "tied"]))
    p = rng.uniform(0.0, 1.0, n)
    if form == "rounded":
        p = np.round(p, draw(st.integers(1, 2)))
    elif form == "tied":
        p = rng.choice(np.round(rng.uniform(0, 1, draw(st.integers(1, 4))), 3), n)
    labels = (rng.random(n) < p).astype(np.int64)
    labels[:2] = (0, 1)  # two classes, which an evaluation needs
    return p, labels, draw(st.integers(1, 20))


@PROPERTY
@given(scores())
def test_equal_mass_bins_are_the_rank_rule(drawn):
    p, _, m = drawn
    np.testing.assert_array_equal(equal_mass_bin_ids(p, m), _rank_rule_ids(p, m))
    np.testing.assert_array_equal(equal_mass_edges(p, m), [0.0, *_rank_rule(p, m)[1], 1.0])
    # (N, K): one set of edges per column, each that of the column alone
    both = np.column_stack([p, 1 - p])
    np.testing.assert_array_equal(equal_mass_edges(both, m)[:, 1], equal_mass_edges(1 - p, m))


@pytest.mark.parametrize("m", [3, 513, 600, 2000])
def test_many_bins_sort_once_and_keep_the_rank_rule(m):
    """More than 512 bins take the sorted path (one sort instead of partial sorts): the same rule."""
    rng = np.random.default_rng(m)
    for p in (np.round(rng.uniform(0, 1, 3001), 2), np.round(rng.beta(5, 1, 3001), 3), rng.uniform(0, 1, 3001)):
        np.testing.assert_array_equal(equal_mass_edges(p, m), [0.0, *_rank_rule(p, m)[1], 1.0])


def test_continuous_scores_keep_the_rank_edges():
    """Without ties the edges are v_(ceil(m N / M) - 1), as before the tie rule (paper numbers keep their bytes)."""
    p = np.random.default_rng(3).uniform(0, 1, 10_007)
    for m in (1, 2, 7, 15, 100, 1000):
        ranks = (np.arange(1, m) * p.size + m - 1) // m - 1
        np.testing.assert_array_equal(equal_mass_edges(p, m), [0.0, *np.sort(p)[ranks], 1.0])


def test_rounded_scores_fill_the_bins_nearly_equally():
    """10^5 scores of a confident model rounded to 2 decimals, 5 bins of 20000 nominal: every boundary lands
    within half the tie it meets of its target rank (the former rule, ties all to the lower bin, moved one by
    3494 rows, its whole tie; the nearer side moves it by 630), and here every bin is within half the largest
    straddling tie (2062) of 20000: 19164 to 20630 rows, against 16506 to 23288 by the former rule. (In general
    a bin's count is within the sum of the halves of its two boundaries' ties.)"""
    p = np.round(np.random.default_rng(0).beta(5, 1, 10**5), 2)
    m, n = 5, p.size
    ranked = np.sort(p)
    targets = (np.arange(1, m) * n + m - 1) // m
    straddling = [(ranked[t - 1], np.count_nonzero(p == ranked[t - 1])) for t in targets if ranked[t] == ranked[t - 1]]
    assert [size for _, size in straddling] == [1439, 2343, 3260, 4124]
    half = max(size for _, size in straddling) / 2

    edges = equal_mass_edges(p, m)
    counts = np.bincount(bin_ids_from_edges(p, edges, closed="right", tolerance=0.0), minlength=m)
    boundaries = np.cumsum(counts)[:-1]
    for target, boundary in zip(targets, boundaries, strict=True):
        value = ranked[target - 1]
        assert abs(boundary - target) <= np.count_nonzero(p == value) / 2
    assert counts.tolist() == [19888, 20511, 19807, 19164, 20630]
    assert np.abs(counts - n / m).max() == 836 <= half

    former = np.r_[0.0, ranked[targets - 1], 1.0]  # the former rule: v_(ceil(m N / M) - 1), ties to the lower bin
    former_counts = np.bincount(bin_ids_from_edges(p, former, closed="right", tolerance=0.0), minlength=m)
    assert former_counts.tolist() == [21327, 19072, 19807, 23288, 16506]
    assert np.abs(former_counts - n / m).max() == 3494 > half
    assert np.abs(np.cumsum(former_counts)[:-1] - targets).max() == 3494
    assert np.abs(boundaries - targets).max() == 630


@PROPERTY
@given(scores())
def test_every_equal_mass_ece_is_the_same_number(drawn):
    p, labels, m = drawn
    probs = np.column_stack([1 - p, p])
    for target, metric in (("binary", "ECE positive class"), ("top_label", None)):
        estimator = BinnedCalibrationError(target, n_bins=m, strategy="equal-mass")
        direct = estimator(probs, labels, kind="probs")
        booted = bootstrap_ece(probs, labels, kind="probs", estimator=estimator, n_boot=2).estimate[0]
        assert abs(booted - direct) <= ORDER_TOL
        if metric is None:
            continue
        summary = evaluate(probs, labels, kind="probs", n_bins=m, binning="equal-mass", n_boot=0, calibrators=())
        assert abs(summary.metrics[metric].value - direct) <= ORDER_TOL
        (figure,) = summary.reliability[metric]  # the bins the command's figure draws
        assert abs(figure.ece() - direct) <= ORDER_TOL
        # the engine bins exp(log p), which may differ from p in the last bit
        np.testing.assert_allclose(figure.edges, equal_mass_edges(p, m), rtol=ORDER_TOL, atol=0)


def test_the_command_gives_the_libraries_number_on_rounded_scores(tmp_path):
    """The issue's case: 333 scores rounded to 2 decimals, 15 bins (the engine's quantile edges gave 0.062192
    against 0.060931 from the rank rule before one definition)."""
    rng = np.random.default_rng(5)
    p = np.round(rng.uniform(0.2, 1.0, 333), 2)
    labels = (rng.random(333) < p).astype(int)
    path = tmp_path / "rounded.csv"
    path.write_text("p0,p1,y\n" + "".join(f"{1 - v:.2f},{v:.2f},{y}\n" for v, y in zip(p, labels, strict=True)))
    done = run_calib(
        *("evaluate", str(path), "--kind", "probs", "--labels", "y", "--binning", "equal-mass"),
        *("--n-boot", "0", "--calibrators", "none", "--json"),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    value = {m["metric"]: m["value"] for m in json.loads(done.stdout)["metrics"]}["ECE positive class"]
    probs = np.column_stack([1 - p, p])
    expected = BinnedCalibrationError("binary", n_bins=15, strategy="equal-mass")(probs, labels, kind="probs")
    assert abs(value - expected) <= ORDER_TOL
