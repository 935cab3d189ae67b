"""Tests of calib.calibration_errors.simplex_binning: uniform grids, triangles and the recursive scheme of
Vaicenavicius et al. (2019), App. B, with the conventions of notes/003 §2.4 and §6 items 4-6.
"""

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from calib.calibration_errors.simplex_binning import DataDependent, Triangles, UniformGrid, _compact
from calib.validation import CalibInputError


def _same_partition(ids_a, ids_b):
    """True when the two labelings induce the same equivalence classes (a bijection between ids)."""
    pairs = np.unique(np.column_stack([ids_a, ids_b]), axis=0)
    return pairs.shape[0] == np.unique(ids_a).size == np.unique(ids_b).size


def _tuple_bins(probs, n_bins):
    """Per-coordinate bins on the first m - 1 columns by the definition floor(M v), 1 in the last bin.

    Random continuous values are never within rounding of an edge k/M, so floor agrees with exact edges.
    """
    return np.minimum(np.floor(probs[:, :-1] * n_bins), n_bins - 1).astype(np.int64)


def _check_ids(ids, n_cells, n_points):
    assert ids.shape == (n_points,)
    assert ids.dtype.kind == "i"
    assert 1 <= n_cells <= n_points
    assert ids.min() == 0 and ids.max() == n_cells - 1
    assert np.unique(ids).size == n_cells  # contiguous: every id in range is used


# --- UniformGrid ---------------------------------------------------------------------------------


def test_uniform_grid_two_classes_exact_edges():
    values = np.array([0.0, 0.05, 0.1, 0.3, 0.35, 0.6, 0.7, 0.95, 1.0, 0.2999999])
    # [k/10, (k+1)/10) with the written decimals on their edges, 1.0 in the last bin.
    expected_bins = np.array([0, 0, 1, 3, 3, 6, 7, 9, 9, 2])
    probs = np.column_stack([values, 1.0 - values])
    ids, n_cells = UniformGrid(10).cells(probs)
    assert n_cells == np.unique(expected_bins).size == 7
    # Cells are numbered in lexicographic (here: increasing) order of their bins.
    assert_array_equal(ids, np.unique(expected_bins, return_inverse=True)[1])
    _check_ids(ids, n_cells, values.size)


@pytest.mark.parametrize("n_bins", [1, 3, 7, 10])
def test_uniform_grid_two_classes_random(n_bins):
    rng = np.random.default_rng(0)
    g = rng.random(500)
    ids, n_cells = UniformGrid(n_bins).cells(np.column_stack([g, 1.0 - g]))
    bins = _tuple_bins(np.column_stack([g, 1.0 - g]), n_bins)[:, 0]
    assert n_cells == np.unique(bins).size
    assert_array_equal(ids, np.unique(bins, return_inverse=True)[1])
    _check_ids(ids, n_cells, g.size)


@pytest.mark.parametrize(("n_classes", "n_bins"), [(3, 5), (4, 10), (5, 3)])
def test_uniform_grid_equals_tuple_partition(n_classes, n_bins):
    rng = np.random.default_rng(n_classes)
    probs = rng.dirichlet(np.ones(n_classes), size=1000)
    ids, n_cells = UniformGrid(n_bins).cells(probs)
    tuples, expected = np.unique(_tuple_bins(probs, n_bins), axis=0, return_inverse=True)
    assert n_cells == tuples.shape[0]
    assert _same_partition(ids, expected.ravel())
    # The documented numbering: lexicographic order of the bin tuples (np.unique(axis=0) sorts so).
    assert_array_equal(ids, expected.ravel())
    _check_ids(ids, n_cells, probs.shape[0])


def test_uniform_grid_last_column_is_ignored():
    # The cell is the tuple of bins of the first m - 1 columns: (2, 2), (2, 2), (2, 2), (2, 3); the
    # last column (bins 5, 5, 4, 4) is not split, as it is fixed by the others.
    probs = np.array([[0.25, 0.25, 0.5], [0.25, 0.25, 0.5], [0.25, 0.26, 0.49], [0.25, 0.35, 0.4]])
    ids, n_cells = UniformGrid(10).cells(probs)
    assert n_cells == 2
    assert_array_equal(ids, [0, 0, 0, 1])


def test_uniform_grid_many_classes_compaction_path():
    # 60 classes at 10 bins: 10^59 potential cells, so the mixed-radix key must be compacted on the
    # way (10^19 > 2^62 after 19 columns). Sparse Dirichlet rows spread over many occupied cells.
    rng = np.random.default_rng(60)
    probs = rng.dirichlet(np.full(60, 0.2), size=2000)
    ids, n_cells = UniformGrid(10).cells(probs)
    tuples, expected = np.unique(_tuple_bins(probs, 10), axis=0, return_inverse=True)
    _check_ids(ids, n_cells, 2000)
    assert n_cells == tuples.shape[0]
    assert n_cells > 100  # the check is not about a handful of cells
    assert _same_partition(ids, expected.ravel())
    assert_array_equal(ids, expected.ravel())


def test_uniform_grid_rejects_bad_input():
    with pytest.raises(CalibInputError):
        UniformGrid(10).cells(np.array([0.2, 0.8]))
    with pytest.raises(CalibInputError):
        UniformGrid(10).cells(np.ones((3, 1)))
    with pytest.raises(CalibInputError):
        UniformGrid(0).cells(np.full((3, 2), 0.5))


# --- Triangles -----------------------------------------------------------------------------------


def _barycentric(point, vertices):
    """Coordinates lam with lam @ vertices = point (vertices (3, 3), rows on the simplex)."""
    return np.linalg.solve(vertices.T, point)


def _areas(vertices):
    """Area of each triangle in the (p1, p2) projection, where the whole simplex has area 1/2."""
    a, b, c = vertices[:, 0, :2], vertices[:, 1, :2], vertices[:, 2, :2]
    u, v = b - a, c - a
    return 0.5 * np.abs(u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0])


@pytest.mark.parametrize("k", [1, 2, 5, 10])
def test_triangle_vertices_tile_the_simplex(k):
    verts = Triangles(k).vertices()
    assert verts.shape == (k * k, 3, 3)
    # Vertices are multiples of 1/k: sums are exact up to one rounding per coordinate.
    np.testing.assert_allclose(verts.sum(axis=2), 1.0, rtol=0, atol=1e-12)
    assert np.all(verts >= 0)
    areas = _areas(verts)
    np.testing.assert_allclose(areas, 0.5 / k**2, rtol=1e-9)  # congruent cells; float rounding only
    assert areas.sum() == pytest.approx(0.5, rel=1e-12)
    # Distinct cells: no two triangles share all three vertices.
    keys = np.round(np.sort(verts.reshape(k * k, 3, 3) @ np.array([1, 100, 10000]), axis=1) * k)
    assert np.unique(keys, axis=0).shape[0] == k * k


@pytest.mark.parametrize("k", [1, 3, 5, 10])
def test_random_points_lie_in_their_triangle(k):
    rng = np.random.default_rng(k)
    probs = rng.dirichlet(np.ones(3), size=4000)
    ids, n_cells = Triangles(k).cells(probs)
    assert n_cells == k * k
    assert ids.min() >= 0 and ids.max() < k * k
    verts = Triangles(k).vertices()
    lam = np.array([_barycentric(p, verts[i]) for p, i in zip(probs, ids, strict=True)])
    assert lam.min() >= -1e-9  # inside up to the edge tolerance used by the scheme
    # 4000 uniform points over k^2 <= 100 equal-area cells (~40 each): every cell is hit.
    assert np.unique(ids).size == k * k


@pytest.mark.parametrize("k", [1, 2, 5, 10])
def test_corners_edges_and_lattice_points_get_a_containing_triangle(k):
    t = np.linspace(0.0, 1.0, 4 * k + 1)  # includes every lattice value j/k and midpoints
    edges = np.concatenate(
        [np.column_stack([t, 1 - t, 0 * t]), np.column_stack([t, 0 * t, 1 - t]), np.column_stack([0 * t, t, 1 - t])]
    )
    lattice = np.array([[i, j, k - i - j] for i in range(k + 1) for j in range(k + 1 - i)], dtype=float) / k
    points = np.concatenate([np.eye(3), edges, lattice])
    ids, _ = Triangles(k).cells(points)
    assert ids.min() >= 0 and ids.max() < k * k
    verts = Triangles(k).vertices()
    for p, i in zip(points, ids, strict=True):
        assert _barycentric(p, verts[i]).min() >= -1e-9, (p, i)


def test_triangles_reject_non_three_columns():
    with pytest.raises(CalibInputError, match="3-class"):
        Triangles(5).cells(np.full((4, 4), 0.25))
    with pytest.raises(CalibInputError):
        Triangles(5).cells(np.full((4, 2), 0.5))


# --- DataDependent -------------------------------------------------------------------------------


@pytest.mark.parametrize(("n_classes", "min_size"), [(2, 50), (3, 100), (10, 200)])
def test_leaves_are_smaller_than_min_size(n_classes, min_size):
    rng = np.random.default_rng(n_classes)
    probs = rng.dirichlet(np.ones(n_classes), size=3000)
    ids, n_cells = DataDependent(min_size).cells(probs)
    _check_ids(ids, n_cells, 3000)
    counts = np.bincount(ids)
    assert counts.max() < min_size
    assert n_cells >= 3000 // min_size + 1  # at least this many leaves are needed to hold them


def test_identical_points_stay_one_cell():
    probs = np.full((500, 2), 0.5)  # the constant GMM model
    ids, n_cells = DataDependent(10).cells(probs)
    assert n_cells == 1
    assert_array_equal(ids, 0)
    tree, _ = DataDependent(10).fit(probs)
    assert_array_equal(tree.assign(np.array([[0.1, 0.9], [0.5, 0.5], [1.0, 0.0]])), 0)  # an unsplit root


def test_large_leaf_only_when_points_are_identical():
    rng = np.random.default_rng(7)
    spread = rng.dirichlet(np.ones(3), size=300)
    probs = np.concatenate([spread, np.tile([0.2, 0.3, 0.5], (200, 1))])
    ids, n_cells = DataDependent(50).cells(probs)
    _check_ids(ids, n_cells, 500)
    for leaf in range(n_cells):
        members = probs[ids == leaf]
        assert members.shape[0] < 50 or np.all(members == members[0])
    assert np.bincount(ids).max() >= 200  # the block of identical predictions is one oversized leaf


def test_split_rule_hand_example():
    # Columns 0 and 1 have equal variance (population var of 0.125, 0.5, 0.875, 0.5 is 0.0703125):
    # the tie goes to column 0. The mean is exactly 0.5 (dyadic values), so the two points AT the
    # threshold go high. min_size = 4: only the root splits (children have 1 and 3 points).
    probs = np.array([[0.125, 0.875], [0.5, 0.5], [0.875, 0.125], [0.5, 0.5]])
    tree, ids = DataDependent(4).fit(probs)
    assert tree.axis[0] == 0
    assert tree.threshold[0] == 0.5
    assert tree.n_leaves == 2
    assert_array_equal(ids, [0, 1, 1, 1])


def test_split_rule_picks_highest_variance_coordinate():
    # Population variances: col 0 0.00125, col 1 0.0569, col 2 0.0669 -> split column 2 at its mean 0.425.
    probs = np.array([[0.1, 0.1, 0.8], [0.2, 0.7, 0.1], [0.3, 0.2, 0.5], [0.2, 0.5, 0.3]])
    tree, ids = DataDependent(4).fit(probs)
    assert tree.axis[0] == 2
    assert tree.threshold[0] == pytest.approx(0.425, abs=1e-15)
    assert_array_equal(ids, [1, 0, 1, 0])  # 0.1 and 0.3 are below 0.425: the low leaf, numbered first


def test_recursive_pre_order_numbering():
    # 1-D-like data: the root splits at mean 0.453125, each child at its own mean; leaves are numbered
    # in pre-order (low subtree first), i.e. here by increasing value.
    values = np.array([0.875, 0.0625, 0.75, 0.125])
    tree, ids = DataDependent(2).fit(np.column_stack([values, 1 - values]))
    assert tree.threshold[0] == 0.453125
    assert tree.n_leaves == 4
    assert_array_equal(ids, [3, 0, 2, 1])


@pytest.mark.parametrize("threshold", ["mean", "median"])
def test_assign_reproduces_fitted_ids(threshold):
    rng = np.random.default_rng(11)
    probs = rng.dirichlet(np.full(4, 0.7), size=2000)
    tree, ids = DataDependent(100, threshold=threshold).fit(probs)
    assert tree.n_leaves > 20
    assert_array_equal(tree.assign(probs), ids)
    # A permuted copy is assigned consistently with its source rows.
    perm = rng.permutation(2000)
    assert_array_equal(tree.assign(probs[perm]), ids[perm])


def test_median_threshold_gives_equal_children():
    # 1024 distinct values and min_size 256: every node of 256+ points splits at its median into
    # halves (no ties), 1024 -> 512 -> 256 -> 128, so 8 leaves of exactly 128 points.
    rng = np.random.default_rng(12)
    probs = rng.dirichlet(np.ones(3), size=1024)
    ids, n_cells = DataDependent(256, threshold="median").cells(probs)
    assert n_cells == 8
    assert_array_equal(np.bincount(ids), np.full(8, 128))


def test_median_threshold_odd_count_differs_by_one():
    rng = np.random.default_rng(13)
    probs = rng.dirichlet(np.ones(3), size=1001)
    ids, n_cells = DataDependent(1001, threshold="median").cells(probs)
    assert n_cells == 2
    assert sorted(np.bincount(ids).tolist()) == [500, 501]  # the median point itself goes high


@pytest.mark.parametrize("kwargs", [{"min_size": 1}, {"min_size": 0}, {"min_size": 10, "threshold": "mode"}])
def test_data_dependent_rejects_bad_parameters(kwargs):
    with pytest.raises(CalibInputError):
        DataDependent(**kwargs).cells(np.full((4, 2), 0.5))


@pytest.mark.parametrize(("n_keys", "bound"), [(5000, 7), (5000, 5000), (300, 10**12), (0, 10)])
def test_key_compaction_numbers_keys_by_rank_as_unique_does(n_keys, bound):
    # A table of the occupied keys (bound <= N) and np.unique's sort (bound > N) give the same ids.
    keys = np.random.default_rng(n_keys).integers(0, bound, size=n_keys)
    ids, n_cells = _compact(keys, bound)
    unique, expected = np.unique(keys, return_inverse=True)
    assert n_cells == unique.size
    assert ids.dtype == np.int64
    assert_array_equal(ids, expected)
