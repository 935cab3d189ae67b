"""The recalibration baselines of "Reassessing calibration" (n.d.): Mean Replacement Recalibration and
netcal-style one-vs-all HB / IR.

Source: "Reassessing calibration" (n.d.), Sect. 3 (the trivial recalibration, its protocol and metrics) and
Tables 1-6; the details the text leaves open are those of the authors' code (the supplementary
material the paper points to; public at github.com/2014mchidamb/reassessing-calibration).

- :class:`MeanReplacement` (MRR, Sect. 3): the predicted class c(x) is the
  argmax of the *original* posteriors and gets the calibration-split top-1 accuracy a_hat; every
  other class gets (1 - a_hat)/(K - 1). Its ECE is ~0 while NLL and Brier get much worse.
- :func:`mrr_metrics`: the closed forms of MRR's test-split metrics from the test accuracy a, the
  MRR confidence h = a_hat and K: ECE = ACE = SmoothECE = |a - h|,
  NLL = -[a ln h + (1 - a) ln((1 - h)/(K - 1))] (natural log) and the Brier score summed over
  classes (not averaged), a[(1-h)^2 + (1-h)^2/(K-1)] + (1-a)[h^2 + (1 - (1-h)/(K-1))^2
  + (K-2)((1-h)/(K-1))^2]. Values are fractions (the paper's tables print x100).
- :class:`OneVsAllHistogramBinning` and :class:`OneVsAllIsotonic`: histogram binning
  (Zadrozny & Elkan (2001)) and isotonic regression (Zadrozny & Elkan (2002)) applied one-vs-all the way
  netcal 1.x's ``HistogramBinning(bins=15)`` / ``IsotonicRegression()`` do it, which is what the
  authors' code runs (the text says only "histogram binning" and "isotonic regression"; the accuracy
  drop in its tables fits a one-vs-all scheme). They output exact zeros (log = -inf, so NLL = inf;
  nothing is clipped away) and can change the argmax, hence the accuracy.

Why not :class:`calib.calibrators.OneVsRest`: its binary calibrators do not behave like netcal's.
``IsotonicCalibrator`` interpolates in log-odds and floors probabilities at 1e-30 (no exact zeros),
and ``HistogramBinning`` uses :mod:`calib.calibration_errors.binning` edges (k/M, with an edge tolerance) with the same
edge rule at fit and predict and no midpoint fill for empty bins. OneVsRest also treats a class that
is every training label as a constant 1, where netcal still bins it. The classes here work directly
on the probabilities p_j = exp(log p_j) and reproduce netcal step by step.

scikit-learn is imported inside the functions that use it: a command or job that never calls them starts
without loading it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import numpy as np

from calib.calibrators.base import Calibrator
from calib.calibrators.isotonic import distinct_levels
from calib.validation import CalibInputError, Choice, NBins, check_positive_int

if TYPE_CHECKING:
    from sklearn.isotonic import IsotonicRegression

ZERO_ROW_POLICIES = ("uniform", "nan")
ZeroRows = Annotated[str, Choice(ZERO_ROW_POLICIES)]


class MeanReplacement(Calibrator):
    """Mean Replacement Recalibration (MRR; "Reassessing calibration" (n.d.), Sect. 3).

    ``fit`` stores ``confidence_`` = a_hat, the top-1 accuracy of the uncalibrated posteriors on the
    calibration data (argmax ties go to the first class, as numpy's argmax). ``predict_log_proba``
    keeps each row's argmax c (first index on ties) and returns log a_hat at c and
    log((1 - a_hat)/(K - 1)) elsewhere, exactly (the logs of those two numbers; a_hat = 1 gives
    -inf off the argmax, a_hat = 0 gives -inf on it).

    The paper's classifier is c = argmax of the original posteriors, so accuracy is unchanged. If
    a_hat < 1/K the output vector's own largest entry is not c (and a_hat = 1/K makes the row
    uniform): evaluate accuracy with the original argmax then.

    ``fit(..., sample_weight=w)`` (one weight >= 0 per row) makes a_hat the weighted accuracy
    sum_i w_i 1{argmax_i = y_i} / sum_i w_i, the weighted mean that integer weights make the accuracy of the
    repeated rows (:meth:`Calibrator.fit`).
    """

    def __init__(self):
        pass

    def _fit(self, logp: np.ndarray, labels: np.ndarray, sample_weight: np.ndarray | None = None) -> None:
        correct = logp.argmax(axis=1) == labels
        self.confidence_ = float(np.average(correct, weights=sample_weight))

    def _n_parameters(self) -> int:
        """a_hat."""
        return 1

    def _transform(self, logp: np.ndarray) -> np.ndarray:
        n, k = logp.shape
        with np.errstate(divide="ignore"):
            log_top = np.log(self.confidence_)
            log_rest = np.log((1.0 - self.confidence_) / (k - 1))
        out = np.full((n, k), log_rest)
        out[np.arange(n), logp.argmax(axis=1)] = log_top
        return out


def mrr_metrics(accuracy: float, confidence: float, n_classes: int) -> dict[str, float]:
    """MRR's test metrics in closed form from its test accuracy a and confidence h = a_hat (K classes).

    Derived from the definition of MRR ("Reassessing calibration" (n.d.), Sect. 3); they give every
    MRR row of its Tables 1-6 to within the rounding of the printed accuracy. ECE = ACE = SmoothECE =
    |a - h| (every confidence is h, so any binning or smoothing sees one atom);
    NLL = -[a ln h + (1 - a) ln((1 - h)/(K - 1))] (natural log); Brier, summed over classes,
    = a[(1-h)^2 + (1-h)^2/(K-1)] + (1-a)[h^2 + (1 - (1-h)/(K-1))^2 + (K-2)((1-h)/(K-1))^2]. A term
    whose weight is 0 counts 0 (0 ln 0 = 0); NLL is inf when a class with positive weight gets
    probability 0 (h = 0 < a, or h = 1 > a).

    Returns fractions (the paper's tables print x100) keyed by the paper's column names:
    ``accuracy`` (a), ``confidence`` (h), ``ECE``, ``ACE``, ``SmoothECE``, ``NLL``, ``Brier``.
    """
    k = check_positive_int(n_classes, "n_classes", minimum=2)
    a, h = float(accuracy), float(confidence)
    if not 0.0 <= a <= 1.0:
        raise CalibInputError(f"accuracy must be a fraction in [0, 1]; got {accuracy!r}")
    if not 0.0 <= h <= 1.0:
        raise CalibInputError(f"confidence must be a fraction in [0, 1]; got {confidence!r}")
    rest = (1.0 - h) / (k - 1)
    nll = -(_xlogy(a, h) + _xlogy(1.0 - a, rest))
    brier = a * ((1.0 - h) ** 2 + (k - 1) * rest**2) + (1.0 - a) * (h**2 + (1.0 - rest) ** 2 + (k - 2) * rest**2)
    gap = abs(a - h)
    return {"accuracy": a, "confidence": h, "ECE": gap, "ACE": gap, "SmoothECE": gap, "NLL": nll, "Brier": brier}


def _xlogy(x: float, y: float) -> float:
    """x ln y with 0 ln y = 0 (including y = 0) and x ln 0 = -inf for x > 0."""
    if x == 0.0:
        return 0.0
    return x * math.log(y) if y > 0.0 else -math.inf


class _NetcalOneVsAll(Calibrator):
    """Shared one-vs-all scheme of netcal 1.x's ``HistogramBinning`` / ``IsotonicRegression``.

    K >= 3: for every class j with at least one calibration label, a binary model is fitted on
    (p_j, 1{y = j}); a class absent from the calibration labels keeps a column of zeros. Prediction
    puts each model's output c_j in column j, divides by the row sum (netcal's default
    ``independent_probabilities=False``), then clips to [0, 1]. K = 2: one binary model on
    (p_1, 1{y = 1}) (fitted even if class 1 is absent), output [1 - c_1, c_1] after clipping c_1.
    ``fit(..., sample_weight=w)`` weighs every binary fit by the rows' weights: a histogram bin's value is its
    weighted fraction of positives, and the isotonic fit is scikit-learn's with ``sample_weight`` (weighted
    PAV), each the minimizer of the weighted mean squared error sum_i w_i (y_i - c(p_i))^2 / sum_i w_i.

    A row whose c_j are all 0 is 0/0 in netcal (NaN). ``zero_rows`` fixes that: ``"uniform"``
    (default) returns 1/K for every class of such a row; ``"nan"`` keeps netcal's NaN (calib's
    metrics reject NaN, so use it only to compare with netcal itself).

    Exact zeros are kept: their log-probability is -inf, so the NLL of a sample whose true class
    gets 0 is inf. The argmax of the output may differ from the input's; compare it with
    ``np.argmax`` (first index on ties), since coarse or tied values are common.

    Fitted attributes: ``models_`` (length K; the fitted binary model of class j or None; for
    K = 2 only index 1 is used).
    """

    def __init__(self, zero_rows: ZeroRows = "uniform"):
        self.zero_rows = zero_rows

    def _fit(self, logp: np.ndarray, labels: np.ndarray, sample_weight: np.ndarray | None = None) -> None:
        p = np.exp(logp)
        k = p.shape[1]
        self.models_ = [None] * k
        for j in [1] if k == 2 else range(k):
            positive = labels == j
            if k == 2 or positive.any():
                self.models_[j] = self._fit_binary(p[:, j], positive, sample_weight)

    def _n_parameters(self) -> int:
        """The sum over the fitted binary models of :meth:`_binary_parameters`."""
        return sum(self._binary_parameters(model) for model in self.models_ if model is not None)

    def predict_unnormalized_proba(self, scores, *, kind: str) -> np.ndarray:
        """The per-class outputs c_j before row normalisation, shape (N, K); 0 for classes not fitted.

        For K = 2, column 1 is the class-1 model's output and column 0 is 1 - c_1 (both clipped).
        """
        return self._unnormalized(np.exp(self._fitted_input(scores, kind)))

    def _unnormalized(self, p: np.ndarray) -> np.ndarray:
        if p.shape[1] == 2:
            c1 = np.clip(self._predict_binary(self.models_[1], p[:, 1]), 0.0, 1.0)
            return np.column_stack([1.0 - c1, c1])
        out = np.zeros_like(p)
        for j, model in enumerate(self.models_):
            if model is not None:
                out[:, j] = self._predict_binary(model, p[:, j])
        return out

    def _transform(self, logp: np.ndarray) -> np.ndarray:
        p = np.exp(logp)
        c = self._unnormalized(p)
        if p.shape[1] > 2:
            total = c.sum(axis=1, keepdims=True)
            zero = total[:, 0] == 0
            with np.errstate(invalid="ignore"):
                c = np.clip(c / total, 0.0, 1.0)
            c[zero] = 1.0 / p.shape[1] if self.zero_rows == "uniform" else np.nan
        with np.errstate(divide="ignore"):
            return np.log(c)

    def _fit_binary(self, p: np.ndarray, positive: np.ndarray, sample_weight: np.ndarray | None):
        """The class's binary model on (p_j, 1{y = j}), each row weighing ``sample_weight`` (None: 1)."""
        raise NotImplementedError

    def _binary_parameters(self, model) -> int:
        raise NotImplementedError

    def _predict_binary(self, model, p: np.ndarray) -> np.ndarray:
        raise NotImplementedError


@dataclass(frozen=True)
class _Histogram:
    """One binary histogram: equal-width ``edges`` and the value of each bin."""

    edges: np.ndarray
    values: np.ndarray
    counts: np.ndarray


class OneVsAllHistogramBinning(_NetcalOneVsAll):
    """One-vs-all histogram binning of Zadrozny & Elkan (2001) as netcal ``HistogramBinning(bins=n_bins)``.

    "Reassessing calibration" (n.d.), Sect. 3 (15 bins), as the authors' code runs it. Per class j, on
    the calibration probabilities p_j:
    - edges ``np.linspace(0, 1, n_bins + 1)``;
    - fit: p_j clipped to [eps, 1 - eps] (eps = float64 machine epsilon), bins left-closed
      [e_i, e_{i+1}) (scipy ``binned_statistic_dd``); bin value = mean of 1{y = j} in the bin;
      an **empty bin gets its midpoint** (e_i + e_{i+1})/2;
    - predict: p_j unclipped, bins right-closed (e_i, e_{i+1}] (``np.digitize(right=True)``), 0 in
      the first bin and values above 1 in the last. A probability exactly on an interior edge thus
      falls in different bins at fit and at predict, as in netcal.
    Then the one-vs-all combination of :class:`_NetcalOneVsAll` (row-normalise, clip, all-zero rows
    per ``zero_rows``). A non-empty bin with no positives maps to exactly 0.

    ``models_[j]`` is the class-j histogram (``edges``, bin ``values``, calibration ``counts``) or None.
    """

    def __init__(self, n_bins: NBins = 15, zero_rows: ZeroRows = "uniform"):
        super().__init__(zero_rows=zero_rows)
        self.n_bins = n_bins

    def _fit_binary(self, p: np.ndarray, positive: np.ndarray, sample_weight: np.ndarray | None) -> _Histogram:
        eps = np.finfo(np.float64).eps
        edges = np.linspace(0.0, 1.0, self.n_bins + 1)
        ids = np.clip(np.digitize(np.clip(p, eps, 1.0 - eps), edges) - 1, 0, self.n_bins - 1)
        counts = np.bincount(ids, minlength=self.n_bins)
        if sample_weight is None:
            totals = counts
            hits = np.bincount(ids, weights=positive.astype(np.float64), minlength=self.n_bins)
        else:  # the weighted fraction of positives (every row kept weighs > 0: a bin is empty where counts is 0)
            totals = np.bincount(ids, weights=sample_weight, minlength=self.n_bins)
            hits = np.bincount(ids, weights=sample_weight * positive, minlength=self.n_bins)
        midpoints = 0.5 * (edges[:-1] + edges[1:])
        with np.errstate(invalid="ignore"):
            values = np.where(counts > 0, hits / totals, midpoints)
        return _Histogram(edges, values, counts)

    def _binary_parameters(self, model: _Histogram) -> int:
        """One per bin that holds a calibration sample (the midpoints of empty bins are not fitted)."""
        return int(np.count_nonzero(model.counts))

    def _predict_binary(self, model: _Histogram, p: np.ndarray) -> np.ndarray:
        ids = np.clip(np.digitize(p, model.edges, right=True) - 1, 0, model.values.size - 1)
        return model.values[ids]


class OneVsAllIsotonic(_NetcalOneVsAll):
    """One-vs-all isotonic regression of Zadrozny & Elkan (2002) as netcal ``IsotonicRegression()``.

    "Reassessing calibration" (n.d.), Sect. 3, as the authors' code runs it. Per class j: scikit-learn
    ``IsotonicRegression(y_min=0, y_max=1, increasing=True, out_of_bounds="clip")`` of 1{y = j} on the
    raw probability p_j (interpolation is linear in p_j, not in log-odds; no input clipping). Then the
    one-vs-all combination of :class:`_NetcalOneVsAll` (row-normalise, clip, all-zero rows per
    ``zero_rows``). The fitted map is 0 below the lowest positive, so exact zeros are common.
    """

    def _fit_binary(self, p: np.ndarray, positive: np.ndarray, sample_weight: np.ndarray | None) -> IsotonicRegression:
        from sklearn.isotonic import IsotonicRegression

        model = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip")
        return model.fit(p, positive.astype(np.float64), sample_weight=sample_weight)

    def _binary_parameters(self, model: IsotonicRegression) -> int:
        """One per constant piece of the fit, as :class:`calib.calibrators.isotonic.IsotonicCalibrator` counts them."""
        return distinct_levels(model.y_thresholds_)

    def _predict_binary(self, model: IsotonicRegression, p: np.ndarray) -> np.ndarray:
        return model.predict(p)
