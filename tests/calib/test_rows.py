"""Row-wise reductions: equal to numpy / scipy's, and to closed forms."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import log_softmax

from calib._internal.rows import exp_row_sums, log_softmax_rows, row_max, row_min, row_sums

SIZES = [2, 3, 4, 10, 16, 17, 50]


@pytest.mark.parametrize("k", SIZES)
def test_row_sums_equal_numpy_sums_up_to_the_order_of_additions(k):
    arr = np.random.default_rng(k).random((500, k))
    np.testing.assert_allclose(row_sums(arr), arr.sum(axis=1), rtol=1e-15, atol=0)
    np.testing.assert_allclose(row_sums(arr[::2, ::-1]), arr[::2].sum(axis=1), rtol=1e-15, atol=0)


@pytest.mark.parametrize("k", SIZES)
def test_row_max_is_exactly_numpy_max_with_infinities_and_strides(k):
    arr = np.random.default_rng(k).normal(size=(9000, k))  # more rows than one block
    arr[0] = -np.inf
    arr[1, k // 2] = np.inf
    arr[2, -1] = -np.inf
    for view in (arr, arr[::3, ::-1], np.asfortranarray(arr)):
        np.testing.assert_array_equal(row_max(view), view.max(axis=1))
    arr[3, 0] = np.nan
    assert np.isnan(row_max(arr)[3])


@pytest.mark.parametrize("k", SIZES)
def test_row_min_is_exactly_numpy_min_with_infinities_and_strides(k):
    arr = np.random.default_rng(k).normal(size=(9000, k))  # more rows than one block
    arr[0] = np.inf
    arr[1, k // 2] = -np.inf
    for view in (arr, arr[::3, ::-1], np.asfortranarray(arr)):
        np.testing.assert_array_equal(row_min(view), view.min(axis=1))
    arr[3, -1] = np.nan
    assert np.isnan(row_min(arr)[3])


@pytest.mark.parametrize("k", SIZES)
def test_exp_row_sums_are_the_row_sums_of_the_exponentials_across_blocks(k):
    arr = np.random.default_rng(k).normal(size=(9000, k))  # more rows than one block
    arr[0, 0] = -np.inf
    for view in (arr, arr[::3, ::-1], arr[:1]):
        np.testing.assert_array_equal(exp_row_sums(view), row_sums(np.exp(view)))


@pytest.mark.parametrize("k", SIZES)
def test_log_softmax_matches_scipy_far_from_zero(k):
    arr = np.random.default_rng(k).normal(size=(300, k)) * 300.0 + 1e3  # exp would overflow unshifted
    np.testing.assert_allclose(log_softmax_rows(arr), log_softmax(arr, axis=1), rtol=0, atol=1e-12)


def test_closed_forms_uniform_rows_and_minus_infinity():
    # log softmax of a constant row is -log K; a -inf entry has probability 0.
    np.testing.assert_allclose(log_softmax_rows(np.full((3, 5), 7.5)), -np.log(5.0), rtol=1e-15)
    out = log_softmax_rows(np.array([[0.0, -np.inf, 0.0]]))
    np.testing.assert_allclose(out, [[-np.log(2.0), -np.inf, -np.log(2.0)]])
    np.testing.assert_allclose(log_softmax_rows(np.log([[0.25, 0.75]])), np.log([[0.25, 0.75]]), atol=2.3e-16)


def test_overwrite_computes_in_place_and_default_leaves_the_input_alone():
    arr = np.random.default_rng(0).normal(size=(20, 4))
    before = arr.copy()
    np.testing.assert_array_equal(arr, before)
    out = log_softmax_rows(arr)
    np.testing.assert_array_equal(arr, before)
    same = log_softmax_rows(arr, overwrite=True)
    assert same is arr
    np.testing.assert_array_equal(same, out)
