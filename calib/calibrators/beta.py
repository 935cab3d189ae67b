"""Beta calibration of a binary posterior.

Source: Kull et al. (2017), "Beta calibration: a well-founded and easily
implemented improvement on logistic calibration for binary classifiers" (AISTATS), and the survey
of Silva Filho et al. (2023), Sect. 5.3.4, eqs. 10-11. The map is

    logit g(s) = a ln s - b ln(1 - s) + c,

a logistic regression on the features ln s and -ln(1 - s) (survey eq. 10; note the sign of b).
The identity is a = b = 1, c = 0. Writing c = b ln(1 - m) - a ln m defines the midpoint m, the
score that is mapped to 1/2. The three variants of the reference implementations (the R and
Python ``betacal`` packages of the authors) are:

- ``"abm"``: a, b, c all fitted, with a, b >= 0 so the map is monotone;
- ``"ab"``: m fixed at 1/2, so c = b ln(1/2) - a ln(1/2) = (a - b) ln 2, i.e.
  logit g = a ln(2 s) - b ln(2 (1 - s)); a and b fitted without a sign constraint (as in betacal);
- ``"am"``: a = b, so logit g = a (ln s - ln(1 - s)) + c, with m = 1 / (1 + exp(c / a));
  this is Platt scaling on the log-odds (no sign constraint, as in betacal).

ln s and ln(1 - s) are the input log-posteriors log q_1 and log q_0, with exact zeros smoothed as
:mod:`calib.calibrators.zeros` describes (finite values used as they are). Fits minimize the mean
log-loss (with sample weights w, the weighted mean sum_i w_i loss_i / sum_i w_i: a weighted logistic
regression) by damped Newton with the exact Hessian (at most three parameters), in float64 and
deterministically.

scipy.optimize is imported inside the functions that use it: a command or job that never calls them starts
without loading it.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
from scipy.special import expit

from calib.calibrators.base import Calibrator, FittedField
from calib.calibrators.platt import LogisticObjective, binary_log_sigmoid, fit_logistic
from calib.validation import Choice

BETA_PARAMETERS = ("abm", "ab", "am")
BetaParameters = Annotated[str, Choice(BETA_PARAMETERS)]

_LN2 = float(np.log(2.0))


class BetaCalibrator(Calibrator):
    """Beta calibration of a binary posterior: logit g(s) = a ln s - b ln(1 - s) + c.

    A logistic regression on the features ln s and -ln(1 - s) (note the sign of b), with s = q_1; ln
    s and ln(1 - s) are the input log-posteriors log q_1 and log q_0, with exact zeros smoothed
    (:mod:`calib.calibrators.zeros`) so that exact 0 or 1 posteriors stay usable. a = b = 1, c = 0
    is the identity. The parameters minimize the mean log-loss (``fit(..., sample_weight=w)``: the weighted
    mean sum_i w_i loss_i / sum_i w_i) by damped Newton with the exact
    Hessian (at most three parameters), in float64 and deterministically: O(N) time per iteration.
    Binary only (K = 2).

    For "abm" the constraint a, b >= 0 is enforced exactly rather than by betacal's heuristic: the
    loss is convex, so the constrained optimum is the unconstrained optimum of one of the four
    faces {a, b free}, {a = 0}, {b = 0}, {a = b = 0} (c always free); every face is fitted and the
    feasible face optimum with the lowest loss is kept. When the unconstrained fit already has
    a, b >= 0 this is that fit; when one coefficient comes out negative it usually coincides with
    betacal's refit without that feature (betacal keeps that refit even when it is not the best
    feasible face).

    Source: Kull et al. (2017) (and the authors' R and Python ``betacal`` packages, for the three
    variants); Silva Filho et al. (2023), Sect. 5.3.4, eqs. 10-11.

    Sample weights: ``fit(scores, labels, kind=..., sample_weight=w)`` takes one weight >= 0 per row (default
    None: equal weights). The fit then minimizes the weighted mean of the log-loss (a weighted logistic
    regression), sum_i w_i loss_i / sum_i w_i, so integer weights fit what repeating each row w_i times fits;
    rows of weight 0 are dropped (:meth:`Calibrator.fit`).

    Parameters
    ----------
    parameters : {"abm", "ab", "am"}, default "abm"
        The variant. "abm": a, b, c all fitted, with a, b >= 0 so the map is monotone. "ab": the
        midpoint fixed at 1/2, so c = (a - b) ln 2, i.e. logit g = a ln(2 s) - b ln(2 (1 - s)); a and
        b fitted without a sign constraint (as in betacal). "am": a = b, so logit g = a (ln s -
        ln(1 - s)) + c, which is Platt scaling on the log-odds (no sign constraint, as in betacal).

    Attributes
    ----------
    a_, b_ : float
        a and b.
    c_ : float
        The intercept of the formula above, whatever the variant.
    m_ : float
        The midpoint, c = b ln(1 - m) - a ln m: the score mapped to 1/2; 0.5 by definition for "ab",
        1 / (1 + exp(c / a)) for "am", found by root search for "abm"; NaN when no such score exists
        in (0, 1), e.g. a = b = 0.
    converged_, n_classes_ : bool, int
        As for :class:`calib.calibrators.platt.PlattCalibrator` (n_classes_ is 2).

    Raises
    ------
    CalibInputError
        From ``fit``, for invalid scores or labels, scores with K != 2 columns, or an unknown
        ``parameters``.

    Examples
    --------
    >>> scores = [[0.9, 0.1], [0.2, 0.8], [0.95, 0.05], [0.1, 0.9], [0.7, 0.3], [0.4, 0.6], [0.85, 0.15], [0.3, 0.7]]
    >>> labels = [0, 1, 1, 1, 0, 0, 0, 1]
    >>> model = BetaCalibrator().fit(scores, labels, kind="probs")
    >>> model.a_, round(model.b_, 4), round(model.m_, 4)  # a = 0: the constraint a >= 0 is active
    (0.0, 2.1455, 0.5358)
    >>> round(BetaCalibrator("am").fit(scores, labels, kind="probs").a_, 4)
    0.5485
    """

    binary_only = True
    log_scale = True

    def __init__(self, parameters: BetaParameters = "abm"):
        self.parameters = parameters

    def _fit(self, logp: np.ndarray, labels: np.ndarray, sample_weight: np.ndarray | None = None) -> None:
        y = labels.astype(np.float64)
        if self.parameters == "abm":
            self.a_, self.b_, self.c_, self.converged_ = _fit_abm(logp, y, sample_weight)
            self.m_ = _midpoint(self.a_, self.b_, self.c_)
        elif self.parameters == "ab":
            theta, self.converged_ = fit_logistic(self._objective(logp, y, sample_weight))
            self.a_, self.b_ = float(theta[0]), float(theta[1])
            self.c_ = (self.a_ - self.b_) * _LN2
            self.m_ = 0.5
        else:
            theta, self.converged_ = fit_logistic(self._objective(logp, y, sample_weight))
            self.a_ = self.b_ = float(theta[0])
            self.c_ = float(theta[1])
            self.m_ = float(expit(-self.c_ / self.a_)) if self.a_ != 0 else float("nan")

    def _objective(
        self, logp: np.ndarray, targets: np.ndarray, sample_weight: np.ndarray | None = None
    ) -> LogisticObjective:
        """The training objective of the variant, unconstrained (exposed for gradient checks).

        Parameters: (a, b, c) for "abm", (a, b) for "ab", (a, c) for "am".
        """
        ln_s, ln_1ms = _log_features(logp)
        ones = np.ones(logp.shape[0])
        if self.parameters == "abm":
            x = np.column_stack([ln_s, -ln_1ms, ones])
        elif self.parameters == "ab":
            x = np.column_stack([ln_s + _LN2, -(ln_1ms + _LN2)])
        else:
            x = np.column_stack([ln_s - ln_1ms, ones])
        return LogisticObjective(x, targets, sample_weight)

    def _n_parameters(self) -> int:
        """a, b and c for "abm"; two for "ab" (a, b) and "am" (a, c)."""
        return 3 if self.parameters == "abm" else 2

    def _transform(self, logp: np.ndarray) -> np.ndarray:
        ln_s, ln_1ms = _log_features(logp)
        return binary_log_sigmoid(self.a_ * ln_s - self.b_ * ln_1ms + self.c_)

    def _fitted_fields(self) -> dict[str, FittedField]:
        monotone = 0.0 if self.parameters == "abm" else None  # the constraint a, b >= 0 of "abm"
        return {
            "a_": FittedField("float", low=monotone),
            "b_": FittedField("float", low=monotone),
            "c_": FittedField("float"),
            "m_": FittedField("float", finite=False, low=0.0, high=1.0),  # NaN when no score maps to 1/2
            "converged_": FittedField("bool"),
        }


def _log_features(logp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ln s, ln(1 - s)) = (log q_1, log q_0), finite (zeros treated by :mod:`calib.calibrators.zeros`)."""
    return logp[:, 1].copy(), logp[:, 0].copy()


def _fit_abm(logp: np.ndarray, y: np.ndarray, sample_weight: np.ndarray | None) -> tuple[float, float, float, bool]:
    """Exact fit of (a, b, c) under a, b >= 0 by enumerating the active sets (see BetaCalibrator)."""
    ln_s, ln_1ms = _log_features(logp)
    full = np.column_stack([ln_s, -ln_1ms, np.ones(ln_s.size)])
    best = None
    # Faces: indices of the free columns among (a, b, c); c is always free.
    for free in ((0, 1, 2), (1, 2), (0, 2), (2,)):
        problem = LogisticObjective(full[:, free], y, sample_weight)
        theta, converged = fit_logistic(problem)
        coefs = np.zeros(3)
        coefs[list(free)] = theta
        if coefs[0] < 0 or coefs[1] < 0:
            continue
        loss = problem.loss(theta)
        if best is None or loss < best[0]:
            best = (loss, coefs, converged)
        if len(free) == 3:
            break  # the unconstrained optimum is feasible: it is the constrained optimum
    _, coefs, converged = best  # the face {a = b = 0} is always feasible
    return float(coefs[0]), float(coefs[1]), float(coefs[2]), converged


def _midpoint(a: float, b: float, c: float) -> float:
    """The score m in (0, 1) with a ln m - b ln(1 - m) + c = 0 ("abm": a, b >= 0), or NaN if none.

    Searched on x = logit(m) in [-700, 700], where the left side, a ln sigmoid(x) - b ln
    sigmoid(-x) + c, is increasing when a, b >= 0 (not both 0), so the root is unique.
    """

    def h(x: float) -> float:
        return -a * np.logaddexp(0.0, -x) + b * np.logaddexp(0.0, x) + c

    if a == 0 and b == 0:
        return float("nan")
    lo, hi = -700.0, 700.0
    f_lo, f_hi = h(lo), h(hi)
    if not np.isfinite(f_lo) or not np.isfinite(f_hi) or f_lo * f_hi > 0:
        return float("nan")
    from scipy.optimize import brentq

    x = brentq(h, lo, hi, xtol=1e-14, rtol=4 * np.finfo(float).eps)
    return float(1.0 / (1.0 + np.exp(-x)))
