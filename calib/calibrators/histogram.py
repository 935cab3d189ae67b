"""Histogram binning calibration (binary).

Source: Zadrozny & Elkan (2001); Ferrer & Ramos (2024), Sec. 2.5.2 (the transform behind the binary ECE) and
its H calibrator; the survey, Silva Filho et al. (2023), Sect. 5.3.1, eqs. 3-5. The positive-class
posterior q_1 is cut into M bins, equal-width (``strategy="equal-width"``, edge rule as in
:mod:`calib.calibration_errors.binning`) or equal-mass on the training scores (``strategy="equal-mass"``:
the library's one equal-mass binning, :func:`calib.calibration_errors.binning.equal_mass_edges`); each bin
maps to the fraction of positives among its training samples, so a bin without positives (or without
negatives) gives probability exactly 0 (or 1), whose log-probability is -inf.

A bin with no training sample needs a policy (``empty_bin``):
- ``"identity"`` (default): leave such samples' posteriors unchanged;
- ``"prior"``: the positive rate of the whole training set;
- ``"zero"``: probability 0, which is what the code of Ferrer & Ramos (2024) does (and why some of
  their Table-2 rows have CE = inf); use it only to reproduce those numbers.
"""

from __future__ import annotations

from typing import Annotated

import numpy as np

from calib.calibration_errors.binning import (
    EDGE_RULES,
    FORMER_STRATEGY_NAMES,
    EdgeRule,
    Strategy,
    strategy_bin_ids,
    strategy_edges,
)
from calib.calibrators.base import Calibrator, FittedField, binary_logprobs
from calib.validation import CalibInputError, Choice, NBins

EMPTY_BIN_POLICIES = ("identity", "prior", "zero")
EmptyBin = Annotated[str, Choice(EMPTY_BIN_POLICIES)]


class HistogramBinning(Calibrator):
    """Histogram binning of a binary posterior: each bin of q(class 1) maps to its fraction of positives.

    The positive-class posterior q_1 is cut into M bins B_1..B_M and g(s) = ybar(B_m) for s in B_m,
    the fraction of positives among the training samples of the bin: the transform behind the binary
    ECE. With ``fit(..., sample_weight=w)`` that fraction is weighted, sum_{i in B_m} w_i y_i /
    sum_{i in B_m} w_i (the minimizer of the weighted mean squared error within the bin), equal-mass bins
    hold equal weight (:func:`calib.calibration_errors.binning.equal_mass_edges`), and ``prior_`` is the
    weighted positive rate. A
    bin without positives (or without negatives) gives probability exactly 0 (or 1), whose
    log-probability is -inf. A bin with no training sample follows ``empty_bin``. Fit and prediction
    take O(N log M) time at most. Binary only (K = 2).

    Source: Zadrozny & Elkan (2001); Ferrer & Ramos (2024), Sec. 2.5.2 (and its H calibrator);
    Silva Filho et al. (2023), Sect. 5.3.1, eqs. 3-5.

    Sample weights: ``fit(scores, labels, kind=..., sample_weight=w)`` takes one weight >= 0 per row (default
    None: equal weights). The fit then minimizes the weighted mean of squared error within each bin: each bin
    maps to its weighted fraction of positives (equal-mass bins of equal weight), sum_i w_i loss_i / sum_i w_i,
    so integer weights fit what repeating each row w_i times fits; rows of weight 0 are dropped
    (:meth:`Calibrator.fit`).

    Parameters
    ----------
    n_bins : int, default 15
        M, the number of bins (1 to 10000).
    closed : {"right", "left"}, default "right"
        Edge rule of equal-width bins (see :mod:`calib.calibration_errors.binning`): "right" puts a score on an inner
        edge in the lower bin, "left" in the upper one.
    empty_bin : {"identity", "prior", "zero"}, default "identity"
        What a bin with no training sample gives: "identity" leaves such samples' posteriors
        unchanged; "prior" gives the positive rate of the whole training set; "zero" gives
        probability 0, which is what the code of Ferrer & Ramos (2024) does (and why some of their
        Table-2 rows have CE = inf): use it only to reproduce those numbers.
    strategy : {"equal-width", "equal-mass"}, default "equal-width"
        Equal-width bins on [0, 1], or equal-mass bins of the training scores (right-closed, N / M
        scores per bin rounded, a tie sharing a bin, on the side of a boundary nearer to it, so the bins
        are equal in mass where ties allow: :func:`calib.calibration_errors.binning.equal_mass_edges`).
        The former names "width" and "mass" are read as these, with a FutureWarning.

    Attributes
    ----------
    edges_ : ndarray of shape (M + 1,)
        The bin edges (k / M, or the equal-mass edges of the training scores).
    closed_ : str
        The edge rule used ("right" for equal-mass bins).
    counts_ : ndarray of shape (M,)
        Training samples per bin.
    bin_values_ : ndarray of shape (M,)
        The fraction of positives per bin (NaN for an empty bin).
    prior_ : float
        The positive rate of the training set.
    n_classes_ : int
        2.

    Raises
    ------
    CalibInputError
        From ``fit``, for invalid scores or labels, scores with K != 2 columns, or an invalid
        ``n_bins``, ``closed``, ``empty_bin`` or ``strategy``.

    Examples
    --------
    >>> scores = [[0.9, 0.1], [0.2, 0.8], [0.95, 0.05], [0.1, 0.9], [0.7, 0.3], [0.4, 0.6], [0.85, 0.15], [0.3, 0.7]]
    >>> labels = [0, 1, 1, 1, 0, 0, 0, 1]
    >>> model = HistogramBinning(n_bins=2).fit(scores, labels, kind="probs")
    >>> model.counts_.tolist(), model.bin_values_.tolist()
    ([4, 4], [0.25, 0.75])
    >>> model.predict_proba([[0.6, 0.4]], kind="probs").tolist()
    [[0.75, 0.25]]
    """

    binary_only = True

    def __init__(
        self,
        n_bins: NBins = 15,
        closed: EdgeRule = "right",
        empty_bin: EmptyBin = "identity",
        strategy: Strategy = "equal-width",
    ):
        self.n_bins = n_bins
        self.closed = closed
        self.empty_bin = empty_bin
        self.strategy = strategy

    def _bin_ids(self, p1: np.ndarray) -> np.ndarray:
        return strategy_bin_ids(p1, self.edges_, strategy=self._strategy, closed=self.closed_)

    @property
    def _strategy(self) -> str:
        return FORMER_STRATEGY_NAMES.get(self.strategy, self.strategy)

    def _fit(self, logp: np.ndarray, labels: np.ndarray, sample_weight: np.ndarray | None = None) -> None:
        p1 = np.exp(logp[:, 1])
        self.edges_ = strategy_edges(self._strategy, self.n_bins, p1, sample_weight=sample_weight)
        self.closed_ = self.closed if self._strategy == "equal-width" else "right"
        ids = self._bin_ids(p1)
        self.counts_ = np.bincount(ids, minlength=self.n_bins)
        if sample_weight is None:
            positives = np.bincount(ids, weights=labels.astype(np.float64), minlength=self.n_bins)
            with np.errstate(invalid="ignore"):
                self.bin_values_ = positives / self.counts_
            self.prior_ = float(labels.mean())
            return
        # Weighted frequencies: a bin's positive weight over its total weight (every row kept weighs > 0, so a
        # bin is empty, NaN, exactly where counts_ is 0).
        totals = np.bincount(ids, weights=sample_weight, minlength=self.n_bins)
        positives = np.bincount(ids, weights=sample_weight * labels, minlength=self.n_bins)
        with np.errstate(invalid="ignore"):
            self.bin_values_ = positives / totals
        self.prior_ = float(np.dot(sample_weight, labels) / sample_weight.sum())

    fewer_parameters = "fewer bins, HistogramBinning(n_bins=...)"

    def _n_parameters(self) -> int:
        """One per bin that holds a training sample (its fraction of positives)."""
        return int(np.count_nonzero(self.counts_))

    def _transform(self, logp: np.ndarray) -> np.ndarray:
        p1 = np.exp(logp[:, 1])
        ids = self._bin_ids(p1)
        mapped = self.bin_values_[ids]
        empty = self.counts_[ids] == 0
        fill = {"identity": p1, "prior": np.full_like(p1, self.prior_), "zero": np.zeros_like(p1)}[self.empty_bin]
        return binary_logprobs(np.where(empty, fill, mapped))

    def _fitted_fields(self) -> dict[str, FittedField]:
        m = int(self.n_bins)
        return {
            "edges_": FittedField("array", (m + 1,), low=0.0, high=1.0, increasing=True),
            "closed_": FittedField("str", choices=EDGE_RULES),
            "counts_": FittedField("array", (m,), dtype="int64", low=0),
            # 0 / 0 = NaN for an empty bin
            "bin_values_": FittedField("array", (m,), finite=False, low=0.0, high=1.0),
            "prior_": FittedField("float", low=0.0, high=1.0),
        }

    def _restore_fitted_state(self, state: dict[str, object]) -> None:
        """Take saved bins only if a bin's value is undefined (NaN) exactly where it is empty, as a fit leaves it."""
        if not np.array_equal(np.isnan(state["bin_values_"]), state["counts_"] == 0):
            raise CalibInputError("bin_values_ must be NaN exactly in the bins whose counts_ are 0")
        super()._restore_fitted_state(state)
