"""One BLAS thread for the calibrator fits, through a single threadpoolctl controller.

OpenBLAS splits a product differently for different thread counts, and the last bits of the fitted
parameters follow (a matrix scaling fit at 10^4 x 10 moves by 4e-15 between 1 and 2 threads). On one
thread a fit gives the same bytes on every machine, however many cores it has and however many fits
run at once. It costs nothing measurable: ``python benchmarks/hand_tuned.py --only fits`` times the
fits at 10^5 and 10^6 x 10 at 0.88-1.06x of the default threads. ``threadpoolctl.threadpool_limits``
rescans the loaded libraries at every call; a controller made once and reused only sets the limit.
"""

from __future__ import annotations

from functools import cache

from threadpoolctl import ThreadpoolController


@cache
def _controller() -> ThreadpoolController:
    return ThreadpoolController()  # made at the first fit, when numpy's and scipy's BLAS are loaded


def one_blas_thread():
    """Context manager within which the BLAS libraries run on one thread."""
    return _controller().limit(limits=1, user_api="blas")
