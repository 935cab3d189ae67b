"""The backtracking line search shared by the Newton fits of the calibrators (Armijo rule).

Nocedal & Wright (2006), Algorithm 3.1 with sufficient-decrease constant 1/4 and halving.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

# A fit whose line search finds no decrease stopped before its own decrement test: it has converged
# only if its Newton decrement (twice the predicted distance to the minimum) is below this share of the loss.
STALLED_DECREMENT = 1e-10


def converged_when_stalled(decrement: float, loss: float) -> bool:
    """Whether a Newton fit whose line search found no decrease is at its optimum after all: the
    predicted gap to the minimum, half the ``decrement``, is within STALLED_DECREMENT / 2 of the loss.

    Examples
    --------
    >>> converged_when_stalled(1e-13, 0.5), converged_when_stalled(1e-3, 0.5)
    (True, False)
    """
    return decrement <= STALLED_DECREMENT * max(1.0, abs(loss))


def armijo_step(
    loss: Callable[[np.ndarray], float], theta: np.ndarray, step: np.ndarray, value: float, decrement: float, t=1.0
) -> tuple[np.ndarray, float] | None:
    """(theta + t step, t) for the first t = t0, t0/2, ... with loss <= value - t decrement / 4.

    ``decrement`` is -grad . step (> 0 for a descent step). None when no t above 1e-12 decreases
    the loss: at float precision the fit is then at its optimum.
    """
    while t > 1e-12:
        candidate = theta + t * step
        if loss(candidate) <= value - 0.25 * t * decrement:
            return candidate, t
        t *= 0.5
    return None
