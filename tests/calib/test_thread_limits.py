"""calib._internal.threads: one BLAS thread within the limit, counted across the threads that enter it, and
the old limit after; the pass's drawer on a second thread only when the budget allows."""

from __future__ import annotations

import threading

from threadpoolctl import threadpool_info, threadpool_limits

from calib._internal.threads import one_blas_thread, pass_drawer


def blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


def test_one_blas_thread_inside_and_the_old_limit_after():
    with threadpool_limits(limits=2, user_api="blas"):  # a limit of 2 outside, whatever the environment sets
        before = blas_threads()
        assert before  # numpy's BLAS is loaded
        with one_blas_thread():
            assert set(blas_threads()) == {1}
            with one_blas_thread():  # nested, as a fit within the evaluation's limit
                assert set(blas_threads()) == {1}
            assert set(blas_threads()) == {1}
        assert blas_threads() == before


def test_the_limit_holds_until_the_last_of_overlapping_threads_leaves():
    # thread A enters, then B; A leaves and ends while B is inside (as two tasks of a Dask worker): B keeps one
    # thread, and the limit found before A entered is back after B leaves. No limit is held here meanwhile:
    # threadpoolctl 3.8 lets only the thread that holds one set OpenBLAS's.
    a_inside, a_may_leave, a_left, b_may_leave = (threading.Event() for _ in range(4))
    seen = {}

    def a():
        with one_blas_thread():
            a_inside.set()
            a_may_leave.wait()
        a_left.set()

    def b():
        a_inside.wait()
        with one_blas_thread():
            a_may_leave.set()
            a_left.wait()
            seen["b after a left"] = set(blas_threads())
            b_may_leave.wait()

    before = blas_threads()
    first, second = threading.Thread(target=a), threading.Thread(target=b)
    first.start()
    second.start()
    first.join()
    b_may_leave.set()
    second.join()
    assert seen["b after a left"] == {1}
    assert blas_threads() == before


def test_the_drawer_runs_on_a_second_thread_only_with_two_threads():
    for threads, elsewhere in ((1, False), (2, True), (4, True)):
        with pass_drawer(threads) as drawer:
            assert (drawer.submit(threading.get_ident).result() != threading.get_ident()) is elsewhere


def test_the_in_place_drawer_raises_at_result_as_a_thread_would():
    with pass_drawer(1) as drawer:
        failed = drawer.submit(int, "not a number")
    assert isinstance(failed.exception(), ValueError)
