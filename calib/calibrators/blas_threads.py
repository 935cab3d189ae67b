"""One BLAS thread for the calibrator fits, through a single threadpoolctl controller.

The fits' matrix products are thin (N x K by K x K, Hessians of a few hundred rows), where BLAS
threads cost more than they save. ``threadpoolctl.threadpool_limits`` rescans the loaded libraries
at every call: 0.7 ms, 1.4 ms once torch is loaded (then 4% of the 33 ms DP fit at 5·10⁴ x 10,
now 15 ms). A controller made once and reused sets the limit in 0.01 ms.
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
