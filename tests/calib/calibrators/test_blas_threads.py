"""The calibrator fits run BLAS on one thread, and restore the previous limit afterwards."""

from __future__ import annotations

from threadpoolctl import threadpool_info, threadpool_limits

from calib.calibrators.blas_threads import one_blas_thread


def blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_one_blas_thread_inside_and_the_old_limit_after():
    with threadpool_limits(limits=2, user_api="blas"):  # a limit of 2 outside, whatever the environment sets
        before = blas_threads()
        assert before  # numpy's BLAS is loaded
        with one_blas_thread():
            assert set(blas_threads()) == {1}
        assert blas_threads() == before
