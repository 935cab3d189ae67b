"""One BLAS thread for the calibrator fits, through a single threadpoolctl controller.

The fits' matrix products are thin (N x K by K x K, Hessians of a few hundred rows), where BLAS
threads cost more than they save. ``threadpoolctl.threadpool_limits`` rescans the loaded libraries
at every call; a controller made once and reused only sets the limit.
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
