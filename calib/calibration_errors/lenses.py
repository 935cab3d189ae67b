"""Calibration lenses: the induced problems of Vaicenavicius et al. (2019), Sect. 3.2 and Example 2.

A lens psi maps a label y and a prediction mu to an induced target z = psi(y, mu); it induces the
prediction pi_psi(mu) = P_{Y'~mu}[psi(Y', mu) in .]. A model is calibrated only if every induced
model is (the converse fails: Tables 1 and 2 of the paper). Three families ship:

- :class:`Canonical`: psi(y, mu) = y, the full vector (calibration in the sense of eq. 1).
- :class:`TopK`: the k largest predictions and "the rest": prediction (mu_(1), ..., mu_(k),
  1 - sum), target the rank of the true class if it is among the top k, else k. ``TopK(1)`` is the
  maximum lens of Guo et al. (2017): (confidence, 1 - confidence), target 0 when the argmax is
  right. Ties in the ranking go to the lower class index (``argsort`` is stable).
- :class:`ClassGroups`: a fixed partition of the classes, given explicitly (Example 2.2); the
  groups {c} and "all others" give the marginal calibration of class c (eq. 3).

Each lens maps distributions over classes (rows) to distributions over the induced targets using
the ordering set by the predictions, so the same map serves predictions, one-hot labels and the
true conditional distributions of an analytic example.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from calib.validation import CalibInputError, as_labels, as_probs, check_positive_int


@dataclass(frozen=True)
class InducedProblem:
    """Induced predictions (N, m') on the simplex and induced integer targets in [0, m')."""

    probs: np.ndarray
    labels: np.ndarray


class Lens(ABC):
    """Base class: ``induce`` maps (N, K) distributions to (N, m'), ordered by ``predictions``."""

    @abstractmethod
    def n_targets(self, n_classes: int) -> int:
        """m', the number of induced targets for K classes (raises if the lens does not fit K)."""

    @abstractmethod
    def induce(self, predictions: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The (N, m') induced distributions of (N, K) ``rows`` under the ordering of ``predictions``."""

    @abstractmethod
    def induced_labels(self, predictions: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """The induced target of each label."""

    def __call__(self, scores, labels, *, kind: str) -> InducedProblem:
        """The induced problem of (``scores``, ``labels``); ``kind`` says what the scores hold."""
        probs = as_probs(scores, kind)
        y = as_labels(labels, *probs.shape)
        self.n_targets(probs.shape[1])  # validates the lens against K
        return InducedProblem(self.induce(probs, probs), self.induced_labels(probs, y))


@dataclass(frozen=True)
class Canonical(Lens):
    """The identity lens: the induced problem is the original one."""

    def n_targets(self, n_classes: int) -> int:
        return n_classes

    def induce(self, predictions, rows):
        return np.asarray(rows, dtype=np.float64)

    def induced_labels(self, predictions, labels):
        return labels


@dataclass(frozen=True)
class TopK(Lens):
    """The k largest predictions plus "the rest" (k = 1: the maximum lens of Guo et al. (2017))."""

    k: int = 1

    def n_targets(self, n_classes: int) -> int:
        k = check_positive_int(self.k, "k")
        if k >= n_classes:
            raise CalibInputError(f"the top-k lens needs k < K; got k={k} for K={n_classes} (use Canonical instead)")
        return k + 1

    def _ranking(self, predictions: np.ndarray) -> np.ndarray:
        return np.argsort(-predictions, axis=1, kind="stable")[:, : self.k]

    def induce(self, predictions, rows):
        top = np.take_along_axis(np.asarray(rows, dtype=np.float64), self._ranking(predictions), axis=1)
        rest = np.clip(np.asarray(rows, dtype=np.float64).sum(axis=1) - top.sum(axis=1), 0.0, None)
        return np.column_stack([top, rest])

    def induced_labels(self, predictions, labels):
        hits = self._ranking(predictions) == labels[:, None]
        return np.where(hits.any(axis=1), hits.argmax(axis=1), self.k)


def maximum_lens() -> TopK:
    """The maximum (confidence) lens: TopK(1)."""
    return TopK(1)


@dataclass(frozen=True)
class ClassGroups(Lens):
    """A fixed partition of the classes, e.g. ((0, 1, 2), (3, 4, 5), (6, 7, 8, 9)) (Fig. 1)."""

    groups: tuple[tuple[int, ...], ...]

    def _group_of(self, n_classes: int) -> np.ndarray:
        members = [int(c) for group in self.groups for c in group]
        if any(len(g) == 0 for g in self.groups) or sorted(members) != list(range(n_classes)):
            raise CalibInputError(
                f"groups must partition the classes 0..{n_classes - 1} into non-empty groups, each class in "
                f"exactly one; got {[list(g) for g in self.groups]}"
            )
        group_of = np.empty(n_classes, dtype=np.int64)
        for g, group in enumerate(self.groups):
            group_of[list(group)] = g
        return group_of

    def n_targets(self, n_classes: int) -> int:
        self._group_of(n_classes)
        return len(self.groups)

    def induce(self, predictions, rows):
        rows = np.asarray(rows, dtype=np.float64)
        group_of = self._group_of(rows.shape[1])
        return np.stack([rows[:, group_of == g].sum(axis=1) for g in range(len(self.groups))], axis=1)

    def induced_labels(self, predictions, labels):
        return self._group_of(predictions.shape[1])[labels]


def marginal_lens(cls: int, n_classes: int) -> ClassGroups:
    """Marginal calibration of class ``cls`` (eq. 3): the groups ({cls}, all other classes)."""
    if not 0 <= cls < n_classes:
        raise CalibInputError(f"cls must be a class index in [0, {n_classes}); got {cls}")
    return ClassGroups(((cls,), tuple(c for c in range(n_classes) if c != cls)))


def induced_deviation(lens: Lens, predictions, conditionals, weights) -> float:
    """Largest |r_psi(nu) - nu| of a finite model (Sect. 3.2): 0 iff the induced model is calibrated.

    ``predictions`` (A, K) are the atoms g(X) with probabilities ``weights`` (A,), ``conditionals``
    (A, K) the true P[Y in . | g(X)]. Atoms with the same induced prediction are pooled: r_psi(nu)
    is the weighted mean of their induced conditionals (the tower property).
    """
    g = as_probs(predictions, "probs", "predictions")
    r = as_probs(conditionals, "probs", "conditionals")
    w = np.asarray(weights, dtype=np.float64)
    if r.shape != g.shape or w.shape != (g.shape[0],) or np.any(w <= 0):
        raise CalibInputError(
            f"predictions {g.shape} and conditionals {r.shape} must match and weights must be ({g.shape[0]},) > 0"
        )
    nu, r_nu = lens.induce(g, g), lens.induce(g, r)
    atoms, pooled = np.unique(np.round(nu, 12), axis=0, return_inverse=True)
    pooled = pooled.ravel()
    mass = np.bincount(pooled, weights=w)
    mean_r = np.stack([np.bincount(pooled, weights=w * r_nu[:, j]) for j in range(nu.shape[1])], axis=1)
    return float(np.max(np.abs(mean_r / mass[:, None] - atoms)))
