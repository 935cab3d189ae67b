"""Shared hypothesis strategies and helpers of the property tests (test_properties_*.py); no tests here.

A :class:`Sample` is drawn as logits (N, K) and labels; its posteriors are handed to calib in any
``kind``: ``logits`` as drawn, ``logprobs = log_softmax(logits)``, ``probs = softmax(logits)`` (what a
user computes from a network's output). Logits lie in [-8, 8], so every probability is above 1e-8
unless ``zeros=True`` also draws logits of -inf (exact zero probabilities).

Float32: ``as_kind(..., float32=True)`` rounds the posteriors of a kind to float32. Property 4 is
checked twice: the float32 array against the same numbers upcast to float64 (calib converts its
inputs to float64, so only float32 precision, 1e-6 relative, is allowed between them), and for
metrics that are continuous in the scores, the float32-rounded posteriors against the unrounded
float64 ones (rounding moves an input by 6e-8 relative and a logit in [-8, 8] by 5e-7, so 1e-5).
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.special import log_softmax, softmax

from calib.validation import CalibInputError

KINDS = ("probs", "logprobs", "logits")
# Exact identities up to the rounding of sums in another order (permutation, duplication).
ORDER_TOL = 1e-12
# Probabilities, log-probabilities and logits of the same posteriors (issue property 5).
KIND_TOL = 1e-9
# float32 input against the same numbers in float64: float32 precision (about 8 float32 ulps).
FLOAT32_TOL = 1e-6
# float32-rounded posteriors against the unrounded float64 ones, for continuous metrics.
ROUNDING_TOL = 1e-5
# Range bounds are exact in real arithmetic; a value computed as a difference of sums or through an FFT
# may cross one by rounding (seen: -2.2e-16, 1 + 1e-15). This allows rounding and nothing more.
RANGE_SLACK = 1e-12
# Rows of calibrated probabilities sum to 1 within this.
ROW_SUM_TOL = 1e-9

PROPERTY = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

LOGIT = st.floats(-8.0, 8.0, allow_nan=False, allow_infinity=False, allow_subnormal=False)


class Sample:
    """Logits (N, K) and labels in [0, K) of one drawn example."""

    __slots__ = ("logits", "labels")

    def __init__(self, logits: np.ndarray, labels: np.ndarray):
        self.logits = logits
        self.labels = labels

    def __repr__(self) -> str:  # full precision, so a falsifying example can be pasted back
        return f"Sample(logits=np.array({self.logits.tolist()!r}), labels=np.array({self.labels.tolist()!r}))"

    @property
    def n(self) -> int:
        return int(self.labels.size)

    @property
    def k(self) -> int:
        return int(self.logits.shape[1])

    def probs(self) -> np.ndarray:
        return softmax(self.logits, axis=1)

    def as_kind(self, kind: str, *, float32: bool = False) -> np.ndarray:
        """The posteriors in ``kind``; with ``float32`` rounded to float32."""
        if kind == "logits":
            out = self.logits
        elif kind == "logprobs":
            out = log_softmax(self.logits, axis=1)
        else:
            out = softmax(self.logits, axis=1)
        return out.astype(np.float32) if float32 else out

    def take(self, index) -> Sample:
        """The samples at ``index`` (a permutation, or repeats for duplication)."""
        index = np.asarray(index)
        return Sample(self.logits[index], self.labels[index])


@st.composite
def samples(draw, *, k=None, min_k=2, max_k=6, min_n=1, max_n=40, present=0, zeros=False):
    """A :class:`Sample`; ``present`` forces classes 0..present-1 to occur among the labels (``"all"``: K).

    Small samples (N <= 8) are drawn entry by entry, so hypothesis shrinks them to minimal examples;
    larger ones come from a drawn seed, with logits optionally rounded to multiples of ``step`` (ties,
    equal rows and scores exactly on bin edges such as 0.5) and labels optionally drawn from the
    posteriors themselves (calibrated data). Both keep generation cheap enough for many examples.
    """
    k = draw(st.integers(min_k, max_k)) if k is None else k
    present = k if present == "all" else present
    low = max(min_n, present)
    if draw(st.booleans()) and low <= 8:
        n = draw(st.integers(low, min(max_n, 8)))
        elements = st.one_of(LOGIT, st.just(-np.inf)) if zeros else LOGIT
        logits = draw(hnp.arrays(np.float64, (n, k), elements=elements))
        logits[np.isneginf(logits).all(axis=1), 0] = 0.0  # logits need a finite entry per row
        labels = draw(hnp.arrays(np.int64, n, elements=st.integers(0, k - 1)))
    else:
        n = draw(st.integers(low, max_n))
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1), label="seed"))
        logits = np.clip(rng.normal(0.0, draw(st.sampled_from([0.5, 2.0, 6.0])), size=(n, k)), -8.0, 8.0)
        step = draw(st.sampled_from([0.0, 0.25, 1.0]))
        if step:
            logits = np.round(logits / step) * step
        if zeros:
            logits[rng.random((n, k)) < 0.25] = -np.inf
            logits[np.isneginf(logits).all(axis=1), 0] = 0.0  # logits need a finite entry per row
        if draw(st.booleans()):  # calibrated: labels drawn from the posteriors
            p = softmax(logits, axis=1).cumsum(axis=1)
            labels = np.minimum((rng.random((n, 1)) > p).sum(axis=1), k - 1)
        else:
            labels = rng.integers(0, k, size=n)
    if present:
        slots = draw(st.permutations(range(n)))[:present]
        labels[slots] = np.arange(present)
    return Sample(logits, labels.astype(np.int64))


def permutations_of(data, n: int) -> np.ndarray:
    """A permutation of range(n) drawn from ``st.data()``."""
    return np.array(data.draw(st.permutations(range(n)), label="permutation"), dtype=np.int64)


def assert_close(actual, expected, tol: float, what: str = "") -> None:
    """Equal within ``tol`` absolute and relative (infinities must match; NaN only where NaN)."""
    a = np.asarray(actual, dtype=np.float64)
    b = np.asarray(expected, dtype=np.float64)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol, err_msg=what)


def assert_probability_rows(probs, what: str = "") -> None:
    """Finite, in [0, 1], rows summing to 1 within ROW_SUM_TOL."""
    p = np.asarray(probs)
    assert p.ndim == 2, what
    assert np.all(np.isfinite(p)), f"{what}: non-finite probabilities {p[~np.isfinite(p)][:5]}"
    assert np.all(p >= 0.0) and np.all(p <= 1.0), f"{what}: probabilities outside [0, 1]"
    sums = p.sum(axis=1)
    assert np.all(np.abs(sums - 1.0) <= ROW_SUM_TOL), f"{what}: row sums {sums[np.abs(sums - 1) > ROW_SUM_TOL][:5]}"


def distance_to_edges(values, n_bins: int) -> float:
    """Smallest distance of ``values`` to the edges k / n_bins (inf for no values)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size == 0:
        return float("inf")
    return float(np.min(np.abs(v * n_bins - np.round(v * n_bins))) / n_bins)


def folds_rejected(labels, n_folds: int) -> bool:
    """Stratified ``n_folds``-fold cross-validation rejects ``labels`` whose largest class is smaller than n_folds."""
    return int(np.bincount(np.asarray(labels)).max()) < n_folds


def xv_outcome(labels, n_folds: int, protocol: str = "xv"):
    """A context around a calibration ``protocol`` run on ``labels``: xv (stratified ``n_folds``-fold) must raise
    the documented CalibInputError where the largest class has fewer than n_folds samples (the statements
    after the call are then skipped); otherwise nothing may raise."""
    if protocol == "xv" and folds_rejected(labels, n_folds):
        return pytest.raises(CalibInputError, match="Use fewer folds or stratified=False")
    return contextlib.nullcontext()
