"""The backtracking line search shared by the Newton fits of the calibrators (Armijo rule), and
their convergence report.

Nocedal & Wright (2006), Algorithm 3.1 with sufficient-decrease constant 1/4 and halving.

Every scaling fit (temperature, DP, vector, matrix, Dirichlet) records ``gradient_norm_``: the largest
absolute entry of the gradient of its training objective at the parameters it returns, taken with
respect to the parameters that multiply features scaled to unit root-mean-square (a weight w on
features x of RMS s counts as the weight s w on x / s), so that it does not depend on the scale of
the scores. ``converged_`` is True only when the optimizer met its own stopping rule and that norm is
at most GRADIENT_TOL; otherwise fit warns (:func:`report_convergence`).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np

from calib.validation import CalibInputWarning

# A fit whose line search finds no decrease stopped before its own decrement test: it has converged
# only if its Newton decrement (twice the predicted distance to the minimum) is below this share of the loss.
STALLED_DECREMENT = 1e-10
# The largest gradient entry (unit-RMS feature coordinates, see the module docstring) a converged fit may keep.
GRADIENT_TOL = 1e-6


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


def report_convergence(calibrator: str, stopped: bool, gradient_norm: float) -> bool:
    """``converged_`` of a fit whose optimizer met its stopping rule (``stopped``) with the gradient
    norm ``gradient_norm`` (module docstring): True only when both hold; otherwise a
    :class:`calib.validation.CalibInputWarning` naming ``calibrator`` and the norm.

    Examples
    --------
    >>> report_convergence("TemperatureScaling", True, 1e-12)
    True
    """
    converged = bool(stopped) and bool(gradient_norm <= GRADIENT_TOL)
    if not converged:
        why = "stopped before its optimum" if not stopped else "met its stopping rule"
        warnings.warn(
            f"{calibrator}: the fit {why} with gradient norm {gradient_norm:.3g} (tolerance {GRADIENT_TOL:g}), "
            "so converged_ is False and the calibrated posteriors are not the maximum-likelihood ones; check the "
            "scores for extreme or degenerate values (or allow more iterations where the calibrator has max_iter)",
            CalibInputWarning,
            stacklevel=4,
        )
    return converged
