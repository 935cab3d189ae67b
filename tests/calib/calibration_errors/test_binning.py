"""Tests of calib.calibration_errors.binning: equal-width bins with an explicit edge rule."""

import numpy as np
import pytest

from calib.calibration_errors.binning import equal_width_bin_ids, equal_width_edges
from calib.validation import CalibInputError


def test_edges():
    np.testing.assert_array_equal(equal_width_edges(4), [0.0, 0.25, 0.5, 0.75, 1.0])


def test_values_on_edges_with_right_closed_bins():
    # (low, high]: an edge value belongs to the bin below it; 0 goes to the first bin
    v = [0.0, 0.25, 0.5, 0.75, 1.0]
    np.testing.assert_array_equal(equal_width_bin_ids(v, 4, closed="right"), [0, 0, 1, 2, 3])


def test_values_on_edges_with_left_closed_bins():
    # [low, high): an edge value belongs to the bin above it; 1 goes to the last bin
    v = [0.0, 0.25, 0.5, 0.75, 1.0]
    np.testing.assert_array_equal(equal_width_bin_ids(v, 4, closed="left"), [0, 1, 2, 3, 3])


def test_values_inside_bins_do_not_depend_on_the_rule():
    v = [0.01, 0.3, 0.49, 0.51, 0.99]
    for closed in ("right", "left"):
        np.testing.assert_array_equal(equal_width_bin_ids(v, 4, closed=closed), [0, 1, 1, 2, 3])


@pytest.mark.parametrize("n_bins", [3, 10, 15])
def test_edge_values_follow_the_documented_comparison(n_bins):
    # The module promises that a value equal to an edge of linspace(0, 1, M + 1) lands where
    # `low < p <= high` (right) or `low <= p < high` (left) puts it, also for inexact edges like 0.1 * 3.
    edges = equal_width_edges(n_bins)
    right = equal_width_bin_ids(edges, n_bins, closed="right")
    left = equal_width_bin_ids(edges, n_bins, closed="left")
    np.testing.assert_array_equal(right, np.r_[0, np.arange(n_bins)])
    np.testing.assert_array_equal(left, np.r_[np.arange(n_bins), n_bins - 1])


def test_one_bin_holds_everything():
    np.testing.assert_array_equal(equal_width_bin_ids([0.0, 0.5, 1.0], 1, closed="right"), [0, 0, 0])


@pytest.mark.parametrize(
    ("values", "n_bins", "closed", "pattern"),
    [
        ([0.5], 4, "both", "closed"),
        ([0.5], 0, "right", "n_bins"),
        ([0.5], 2.0, "right", "n_bins"),
        ([-0.1], 4, "right", "values"),
        ([1.1], 4, "right", "values"),
        ([np.nan], 4, "left", "values"),
    ],
)
def test_bad_arguments_are_rejected(values, n_bins, closed, pattern):
    with pytest.raises(CalibInputError, match=pattern):
        equal_width_bin_ids(values, n_bins, closed=closed)


@pytest.mark.parametrize("m", [1, 2, 3, 7, 10, 15, 100, 1000])
@pytest.mark.parametrize("kind", ["exact", "linspace", "float32"])
@pytest.mark.parametrize("side", ["left", "right"])
def test_locate_equals_searchsorted(m, kind, side):
    from calib.calibration_errors.binning import grid_edges, locate

    edges = grid_edges(m, kind)
    rng = np.random.default_rng(m)
    on_edges = np.concatenate([edges, np.nextafter(edges, -1.0), np.nextafter(edges, 2.0)])
    values = np.concatenate([rng.random(2000), on_edges, np.arange(m + 1) / m, [-0.5, 1.5, 0.0, 1.0]])
    np.testing.assert_array_equal(locate(edges, values, side), np.searchsorted(edges, values, side=side))


def test_locate_falls_back_for_uneven_edges():
    from calib.calibration_errors.binning import locate

    edges = np.array([0.0, 0.05, 0.5, 0.9, 1.0])
    values = np.random.default_rng(0).random(500)
    np.testing.assert_array_equal(locate(edges, values), np.searchsorted(edges, values))


@pytest.mark.parametrize("side", ["left", "right"])
def test_locate_equals_searchsorted_across_blocks_and_shapes(side):
    from calib.calibration_errors.binning import _LOCATE_BLOCK, grid_edges, locate

    edges = grid_edges(15, "float32")
    values = np.random.default_rng(1).random(2 * _LOCATE_BLOCK + 17)
    values[::1000] = edges[np.arange(values[::1000].size) % edges.size]  # exactly on edges, in every block
    np.testing.assert_array_equal(locate(edges, values, side), np.searchsorted(edges, values, side=side))
    grid = values[:600].reshape(20, 30)
    np.testing.assert_array_equal(locate(edges, grid, side), np.searchsorted(edges, grid, side=side))


@pytest.mark.parametrize("m", [1, 2, 3, 15, 100, 10**5])
@pytest.mark.parametrize("kind", ["exact", "linspace", "float32"])
@pytest.mark.parametrize("closed", ["left", "right"])
def test_values_snap_to_the_edge_within_tolerance_as_a_search_of_their_neighbours_finds_it(m, kind, closed):
    from calib.calibration_errors.binning import bin_ids_from_edges, grid_edges

    edges, tolerance = grid_edges(m, kind), 1e-12
    near = [edges + shift * tolerance for shift in (-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0)]
    values = np.concatenate([np.random.default_rng(m).random(3000), *near, np.nextafter(edges, 2.0), [-1.0, 2.0]])
    # The rule as written: snap to the neighbouring edge below, else above, when within the tolerance.
    above = np.clip(np.searchsorted(edges, values), 1, m)
    lower, upper = edges[above - 1], edges[above]
    snapped = np.where(
        np.abs(values - lower) <= tolerance, lower, np.where(np.abs(values - upper) <= tolerance, upper, values)
    )
    side = "right" if closed == "left" else "left"
    expected = np.clip(np.searchsorted(edges, snapped, side=side) - 1, 0, m - 1)
    np.testing.assert_array_equal(bin_ids_from_edges(values, edges, closed=closed, tolerance=tolerance), expected)
