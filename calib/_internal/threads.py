"""The threads an evaluation uses, decided here: BLAS (and OpenMP) on one thread for the pass over the data and
the calibrator fits, and the ``threads`` setting for how many threads work at once.

Why one BLAS thread:

- The calibrator fits: OpenBLAS splits a product differently for different thread counts, and the last bits
  of the fitted parameters follow (a matrix scaling fit at 10^4 x 10 moves by 4e-15 between 1 and 2
  threads). On one thread a fit gives the same bytes on every machine, however many cores it has and however
  many fits run at once. It costs nothing measurable: ``python benchmarks/hand_tuned.py --only fits`` times
  the fits at 10^5 and 10^6 x 10 at 0.88-1.06x of the default threads.
- The pass over the data: its products are small (a block's terms times 64 resamples' counts) and a second
  thread draws the next block's resample counts alongside. With OpenBLAS's default threads on 2 cores the
  pass ran 1.48x slower than on one BLAS thread at 200 resamples and 5x at 1000 (one run stalled): the BLAS
  threads fight the drawing thread for the cores.

The ``threads`` setting is the evaluation's whole budget: the pass draws ahead on a second thread only when
it is 2 or more (:func:`pass_drawer`), and the calibrators are fitted ``threads`` at once, as the subsample's
resampled metrics are computed (:func:`thread_pool`). A partition on a Dask worker runs its pass on the one
worker thread that runs the task (:data:`PARTITION_THREADS`), so a worker of n threads uses n cores.

The limit is counted (:func:`one_blas_thread`): the first thread to enter sets it, the last to leave puts back
what it found. ``threadpoolctl``'s limits each restore what they found on entering, so two that overlap in
time on different threads (a Dask worker's tasks) would leave the second running on all threads once the
first left. threadpoolctl 3.8 also lets a single thread at a time set OpenBLAS's process-wide limit (the
first to set it, until it leaves its last limit or ends): when the last to leave is another thread and the
first still runs, the limit stays at one thread (on a Dask worker, whose threads run only the tasks). OpenMP
keeps its thread count per calling thread, so its limit holds in the thread that entered first; calib runs
no OpenMP code of its own, and a BLAS built on OpenMP takes the BLAS limit. ``threadpoolctl.threadpool_limits``
rescans the loaded libraries at every call; a controller made once and reused only sets the limit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from functools import cache

from threadpoolctl import ThreadpoolController

# The threads of one partition's pass on a Dask worker: the worker thread that runs the task (no drawing
# thread), so that the worker's --nthreads is the cores it uses.
PARTITION_THREADS = 1

_lock = threading.Lock()
_holders = 0  # the threads inside one_blas_thread, nested ones counted each time
_limit = ExitStack()  # threadpoolctl's limit while any holder is inside, closed by the last to leave


@cache
def _controller() -> ThreadpoolController:
    return ThreadpoolController()  # made at the first limit, when numpy's and scipy's BLAS are loaded


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Context manager within which the BLAS and OpenMP libraries run on one thread, in every thread of the
    process while any thread is inside one (it may be entered from several threads and nested)."""
    global _holders
    with _lock:
        if _holders == 0:
            _limit.enter_context(_controller().limit(limits=1, user_api=None))
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0:
                _limit.close()


@contextmanager
def pass_drawer(threads: int) -> Iterator[Executor]:
    """The threads of a pass over the data, within which BLAS runs on one thread.

    Parameters
    ----------
    threads : int
        The threads the pass may use: with 2 or more, the executor draws on a second thread; with 1, it runs
        each submitted call at once, in the caller's thread (the same draws, one after the other).

    Yields
    ------
    Executor
        Where the pass submits the next block's resample counts.
    """
    drawer = ThreadPoolExecutor(max_workers=1) if threads > 1 else _InPlace()
    with one_blas_thread(), drawer:
        yield drawer


@contextmanager
def thread_pool(threads: int) -> Iterator[ThreadPoolExecutor]:
    """A pool of ``threads`` threads, each running BLAS on one thread: the calibrator fits run on it that
    many at once, and the subsample's resampled metrics (the smooth ECE's and the MMCE's) a group of
    resamples per task, so the results are the same bytes for any ``threads``.

    Parameters
    ----------
    threads : int
        The threads that work at once.

    Yields
    ------
    ThreadPoolExecutor
    """
    with one_blas_thread(), ThreadPoolExecutor(max_workers=threads) as pool:
        yield pool


class _InPlace(Executor):
    """An executor that runs each call when it is submitted, in the caller's thread."""

    def submit(self, fn: Callable, /, *args, **kwargs) -> Future:
        done = Future()
        try:
            done.set_result(fn(*args, **kwargs))
        except Exception as exc:  # raised at .result(), as from a thread
            done.set_exception(exc)
        return done
