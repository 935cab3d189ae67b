"""Bregman divergences and the sharpness-gap / calibration-error decomposition of "Reassessing calibration" (n.d.).

Source: "Reassessing calibration" (n.d.), Sect. 4 and Appendices A-C. Equation, lemma and proposition
numbers below are the paper's.

Divergences (eq. 4.1), d_phi(x, y) = phi(x) - phi(y) - grad phi(y)^T (x - y), for two losses:

- ``"brier"``: phi(x) = ||x||^2, so d_phi(x, y) = ||x - y||^2, summed over classes (not averaged);
  1-D counterpart varphi(a) = a^2, d_varphi(a, b) = (a - b)^2.
- ``"log"``: phi(x) = sum_i x_i ln x_i, so d_phi(x, y) = KL(x || y) (natural log; the linear terms
  cancel on the simplex); 1-D counterpart varphi(a) = a ln a + (1 - a) ln(1 - a), the binary KL.
  Conventions: 0 ln 0 = 0, and d = +inf where y_i = 0 < x_i. Nothing is clipped.

The loss name fixes the pair (phi, varphi) together, so the two valid pairs of Lemma 4.6 / Corollary
4.7 cannot be mixed (a mixed pair such as full Brier with 1-D logistic loss is not covered by the
lemma and can violate eq. 4.6).

Finite worlds. A :class:`FiniteWorld` is a discrete joint law of (X, Y): atoms x_j with weights w_j,
true conditionals q_j = pi_{Y|X=x_j} and predictions p_j = g(x_j). The classification function c is
the first-index argmax of the prediction unless ``classes`` gives another function of the
prediction; the confidence is h = e_c^T g (the maximum for top-label c). Conditioning on g(X) groups
atoms with exactly equal prediction rows; conditioning on h(X) groups atoms with exactly equal
confidence values. Every conditional expectation is therefore exact, and so is every identity.

``target`` chooses Z in Lemma 4.1: ``"conditional"`` uses Z = pi_{Y|X} (E d_phi(pi_{Y|X}, g(X)), the
paper's generalization error), ``"label"`` uses the one-hot Z = e_Y (E d_phi(e_Y, g(X)), the Brier
score or NLL). Both give the same calibration term, because E[e_Y | g] = E[pi_{Y|X} | g]; the
"label" sharpness gap also holds the irreducible term E phi(e_Y) - E phi(pi_{Y|X}) (every model shares
it, so rankings do not change: "Reassessing calibration" (n.d.), App. E).

Samples. :func:`sample_world` turns scores and labels into the empirical world (weight 1/N per
sample, one-hot conditionals), so the plug-in estimates group identical predictions / confidences
and every identity also holds exactly on a sample. With sample weights (``sample_weight=``, one weight
>= 0 per sample) an atom's weight is w_i / sum_j w_j (samples of weight 0 are no atoms): every
expectation is a weighted mean, and integer weights give the world of the samples repeated w_i times.

Typos in the source resolved here: eq. 4.7's second divergence is the 1-D d_varphi (the text writes
d_phi twice); eq. 4.8 (Nadaraya-Watson) needs y_i in the numerator; in the proof of Prop. 4.3 the
inclusion is sigma(pi_Y) (trivial) subset sigma(g(X)), not the reverse.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calib.calibration_errors.smoothing import nadaraya_watson
from calib.validation import CalibInputError, Choice, as_labels, as_probs, as_sample_weights, check

LOSSES = ("brier", "log")
TARGETS = ("conditional", "label")
CALIBRATIONS = ("full", "confidence")
KERNELS = ("gaussian", "epanechnikov")
FORMS = ("plugin", "covariance")

_WEIGHT_SUM_TOL = 1e-6
_FIELDS = ("weights", "conditionals", "predictions", "classes")
# Gaussian Nadaraya-Watson is evaluated in blocks of about this many kernel entries.


def _check_loss(loss) -> str:
    if loss not in LOSSES:
        raise CalibInputError(
            f"loss must be one of {LOSSES} ('brier' = squared error summed over classes, 'log' = KL / NLL, "
            f"natural log); got {loss!r}"
        )
    return loss


# --- generating functions and divergences (unvalidated kernels) ----------------------------------------


def _xlogx(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x > 0, x * np.log(x), 0.0)


def _phi(p: np.ndarray, loss: str) -> np.ndarray:
    if loss == "brier":
        return np.einsum("ij,ij->i", p, p)
    return _xlogx(p).sum(axis=1)


def _div(p: np.ndarray, q: np.ndarray, loss: str) -> np.ndarray:
    if loss == "brier":
        diff = p - q
        return np.einsum("ij,ij->i", diff, diff)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(p > 0, p * (np.log(p) - np.log(q)), 0.0).sum(axis=1)


def _phi_1d(a: np.ndarray, loss: str) -> np.ndarray:
    if loss == "brier":
        return a * a
    return _xlogx(a) + _xlogx(1.0 - a)


def _kl_term(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(a > 0, a * (np.log(a) - np.log(b)), 0.0)


def _div_1d(a: np.ndarray, b: np.ndarray, loss: str) -> np.ndarray:
    if loss == "brier":
        return (a - b) ** 2
    return _kl_term(a, b) + _kl_term(1.0 - a, 1.0 - b)


# --- public divergences ------------------------------------------------------------------------------------


def _prob_rows(x, kind: str, name: str) -> np.ndarray:
    return as_probs(x, kind, name)


def _unit_interval(x, name: str) -> np.ndarray:
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise CalibInputError(f"{name} must be numeric values in [0, 1]; got {type(x).__name__}") from exc
    if not np.all((arr >= 0) & (arr <= 1)):  # also catches NaN
        raise CalibInputError(f"{name} must lie in [0, 1] (probabilities of one event); NaN and inf are not allowed")
    return arr


def convex_generator(p, *, loss: str = "brier", kind: str = "probs") -> np.ndarray:
    """Row-wise generating function phi(p) of the Bregman divergence, for p of shape (N, K).

    Source: "Reassessing calibration" (n.d.), eq. 4.1 and Sect. 4.1 (phi(x) = ||x||^2 for Brier;
    phi(x) = sum_i x_i ln x_i, the negative entropy, for KL / NLL; 0 ln 0 = 0). ``kind`` says what ``p``
    holds, as elsewhere in ``calib``.
    """
    loss = _check_loss(loss)
    return _phi(_prob_rows(p, kind, "p"), loss)


def convex_generator_1d(a, *, loss: str = "brier") -> np.ndarray:
    """Element-wise 1-D counterpart varphi(a) on [0, 1] of the generating function.

    Source: "Reassessing calibration" (n.d.), Sect. 4.1 and Corollary 4.7 (varphi(a) = a^2 for Brier; varphi(a) =
    a ln a + (1 - a) ln(1 - a), the logistic loss, for KL). Returns an array shaped like ``a``.
    """
    loss = _check_loss(loss)
    return _phi_1d(_unit_interval(a, "a"), loss)


def bregman_divergence(p, q, *, loss: str = "brier", kind: str = "probs") -> np.ndarray:
    """Row-wise Bregman divergence d_phi(p_i, q_i) between probability vectors, shape (N,).

    Source: "Reassessing calibration" (n.d.), eq. 4.1 (d_phi(x, y) = phi(x) - phi(y) - grad phi(y)^T
    (x - y)), with the two instances of Sect. 4: ``"brier"`` gives ||p - q||^2 (summed over classes),
    ``"log"`` gives KL(p || q) = sum_j p_j ln(p_j / q_j) with 0 ln 0 = 0 and +inf where q_j = 0 < p_j.

    ``p`` and ``q`` have shape (N, K) (either may have a single row, which is broadcast) and are read
    as ``kind`` (probabilities by default). Against a one-hot ``p = e_y`` the Brier divergence is the
    Brier score and the KL divergence is -ln q_y.
    """
    loss = _check_loss(loss)
    p_arr = _prob_rows(p, kind, "p")
    q_arr = _prob_rows(q, kind, "q")
    if p_arr.shape[1] != q_arr.shape[1] or (
        p_arr.shape[0] != q_arr.shape[0] and 1 not in (p_arr.shape[0], q_arr.shape[0])
    ):
        raise CalibInputError(
            f"p has shape {p_arr.shape} but q has {q_arr.shape}; pass the same (N, K) or a single row to broadcast"
        )
    return _div(p_arr, q_arr, loss)


def bregman_divergence_1d(a, b, *, loss: str = "brier") -> np.ndarray:
    """Element-wise 1-D Bregman divergence d_varphi(a, b) for a, b in [0, 1] (broadcast like numpy).

    Source: "Reassessing calibration" (n.d.), Sect. 4.1, eq. 4.6 and Corollary 4.7: ``"brier"`` gives
    (a - b)^2, ``"log"`` the binary KL a ln(a / b) + (1 - a) ln((1 - a) / (1 - b)), with 0 ln 0 = 0 and
    +inf where b is 0 or 1 and a differs from it. This is the divergence of the confidence problem
    (1{Y = c(X)}, h(X)).
    """
    loss = _check_loss(loss)
    a_arr = _unit_interval(a, "a")
    b_arr = _unit_interval(b, "b")
    try:
        np.broadcast_shapes(a_arr.shape, b_arr.shape)
    except ValueError as exc:
        raise CalibInputError(f"a has shape {a_arr.shape} and b has {b_arr.shape}; they must broadcast") from exc
    return _div_1d(a_arr, b_arr, loss)


# --- finite worlds -------------------------------------------------------------------------------------------


def _group_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact-equality groups of the rows (2-D) or values (1-D) of ``keys``: (first index, inverse).

    Rows are compared as raw bytes (one opaque item per row), which is exact float equality once
    -0.0 is folded into 0.0 and much faster than ``np.unique(axis=0)`` for many columns.
    """
    keys = np.ascontiguousarray(keys + 0.0)  # -0.0 + 0.0 == +0.0
    if keys.ndim == 2:
        keys = keys.view(np.dtype((np.void, keys.dtype.itemsize * keys.shape[1]))).reshape(-1)
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


def _group_sum(values: np.ndarray, inverse: np.ndarray, n_groups: int) -> np.ndarray:
    if values.ndim == 1:
        return np.bincount(inverse, weights=values, minlength=n_groups)
    order = np.argsort(inverse, kind="stable")
    starts = np.searchsorted(inverse[order], np.arange(n_groups))
    return np.add.reduceat(values[order], starts, axis=0)


def _as_weights(weights, n_atoms: int) -> np.ndarray:
    try:
        w = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise CalibInputError(f"weights must be a numeric vector; got {type(weights).__name__}") from exc
    if w.shape != (n_atoms,):
        raise CalibInputError(f"weights must have one entry per atom, shape ({n_atoms},); got {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise CalibInputError("weights must be finite and strictly positive (drop atoms of weight 0)")
    total = w.sum()
    if abs(total - 1.0) > _WEIGHT_SUM_TOL:
        raise CalibInputError(f"weights must sum to 1 (a probability law on the atoms); they sum to {total:.6g}")
    return w if abs(total - 1.0) <= 1e-12 else w / total


def _as_classes(classes, predictions: np.ndarray) -> np.ndarray:
    n_atoms, n_classes = predictions.shape
    if classes is None:
        return np.argmax(predictions, axis=1)
    c = as_labels(classes, n_atoms, n_classes, name="classes")
    first, inverse = _group_rows(predictions)
    if np.any(c != c[first][inverse]):
        raise CalibInputError(
            "classes must be a function of the prediction: atoms with identical prediction rows need the same class"
        )
    return c


def _set_fields(world: FiniteWorld, weights, conditionals, predictions, classes) -> None:
    """Store validated arrays read-only on a (frozen) world."""
    for name, value in zip(_FIELDS, (weights, conditionals, predictions, classes), strict=True):
        value.setflags(write=False)
        object.__setattr__(world, name, value)


@dataclass(frozen=True, eq=False)
class FiniteWorld:
    """A discrete joint law of (X, Y) with a predictor g, the finite worlds that test the identities of
    "Reassessing calibration" (n.d.).

    ``weights`` (m,) are P(X = x_j) > 0 summing to 1; ``conditionals`` (m, K) are pi_{Y|X=x_j};
    ``predictions`` (m, K) are g(x_j); ``classes`` (m,) is c(g(x_j)), by default the first-index
    argmax of the prediction (standard confidence calibration, eq. 2.2), otherwise any function of the
    prediction. All inputs are probabilities; they are validated, stored as read-only float64 arrays.
    """

    weights: np.ndarray
    conditionals: np.ndarray
    predictions: np.ndarray
    classes: np.ndarray | None = None

    def __post_init__(self):
        cond = as_probs(self.conditionals, "probs", "conditionals")
        pred = as_probs(self.predictions, "probs", "predictions")
        if cond.shape != pred.shape:
            raise CalibInputError(
                f"conditionals have shape {cond.shape} but predictions have {pred.shape}; give one row per atom"
            )
        # as_probs returns fresh arrays; weights and classes may alias the caller's arrays, so copy them.
        weights = np.array(_as_weights(self.weights, pred.shape[0]), copy=True)
        classes = np.array(_as_classes(self.classes, pred), copy=True)
        _set_fields(self, weights, cond, pred, classes)

    @property
    def confidences(self) -> np.ndarray:
        """h(x_j) = g(x_j)[c(x_j)], the confidence of each atom (the maximum for top-label c)."""
        return self.predictions[np.arange(self.predictions.shape[0]), self.classes]


def sample_world(scores, labels, *, kind: str, classes=None, sample_weight=None) -> FiniteWorld:
    """The empirical world of a sample: weight 1/N per sample, one-hot conditionals e_{y_i}, g = scores.

    With ``sample_weight`` (one weight >= 0 per sample, :func:`calib.validation.as_sample_weights`) sample
    i weighs w_i / sum_j w_j, and samples of weight 0 are left out (a world's atoms weigh more than 0).

    Source: the plug-in reading of "Reassessing calibration" (n.d.), Lemma 4.1 (eq. 4.2) and eq. 4.7:
    conditioning on g(X) (or h(X)) becomes grouping of samples with identical prediction rows (or
    confidences), so the decompositions hold exactly on the sample. ``kind`` says what ``scores`` holds;
    ``classes`` overrides the first-index argmax as c (e.g. the original argmax for a recalibrated h).

    Examples
    --------
    >>> world = sample_world([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]], [0, 1, 1], kind="probs", sample_weight=[3, 1, 0])
    >>> world.weights.tolist(), world.classes.tolist()
    ([0.75, 0.25], [0, 1])
    """
    probs = as_probs(scores, kind, "scores")
    y = as_labels(labels, probs.shape[0], probs.shape[1])
    w = as_sample_weights(sample_weight, y.size)
    chosen = np.array(_as_classes(classes, probs), copy=True)
    weights = np.full(y.size, 1.0 / y.size)
    if w is not None:
        kept = w > 0
        probs, y, chosen, weights = probs[kept], y[kept], chosen[kept], w[kept] / w.sum()
    onehot = np.zeros_like(probs)
    onehot[np.arange(y.size), y] = 1.0
    # Every field is fresh and valid by construction, so skip FiniteWorld's re-validation of (N, K) arrays.
    world = object.__new__(FiniteWorld)
    _set_fields(world, weights, onehot, probs, chosen)
    return world


@dataclass(frozen=True, eq=False)
class PredictionGroups:
    """Distinct predictions v of a world with W_v = P(g(X) = v) and mu_v = E[pi_{Y|X} | g(X) = v].

    ``inverse`` maps each atom to its group. Source: "Reassessing calibration" (n.d.), eq. 2.1 and Lemma 4.1.
    """

    predictions: np.ndarray
    weights: np.ndarray
    means: np.ndarray
    inverse: np.ndarray


@dataclass(frozen=True)
class SharpnessCalibration:
    """total = sharpness + calibration, the decomposition of "Reassessing calibration" (n.d.), Lemma 4.1
    (eq. 4.2) / eq. 4.7.

    Each field is an expectation over the world (a float; +inf when a log-loss term is infinite).
    """

    total: float
    sharpness: float
    calibration: float


@dataclass(frozen=True, eq=False)
class PointwiseSharpness:
    """Per confidence level t (sorted): the terms of the pointwise sharpness gap rho(t), "Reassessing
    calibration" (n.d.), eq. 4.7.

    - ``confidence`` t and ``weight`` W_t = P(h(X) = t);
    - ``accuracy`` E[1{Y = c(X)} | h(X) = t];
    - ``divergence`` E[d_phi(Z, g(X)) | h(X) = t], the full multi-class divergence (first term of 4.7);
    - ``full_calibration`` E[d_phi(E[pi | g(X)], g(X)) | h(X) = t], the left side of eq. 4.6;
    - ``calibration`` d_varphi(accuracy, t), the 1-D confidence calibration error (right side of 4.6);
    - ``rho`` = divergence - calibration (NaN only where both are +inf, which the log loss allows at t = 1).
    """

    confidence: np.ndarray
    weight: np.ndarray
    accuracy: np.ndarray
    divergence: np.ndarray
    full_calibration: np.ndarray
    calibration: np.ndarray
    rho: np.ndarray


def _check_world(world) -> FiniteWorld:
    if not isinstance(world, FiniteWorld):
        raise CalibInputError(
            "world must be a FiniteWorld (build one with FiniteWorld(...) or sample_world(...)); "
            f"got {type(world).__name__}"
        )
    return world


def _atoms(world: FiniteWorld, target: str):
    """Weights, Z rows, predictions and classes; for target 'label' one atom per (x_j, y) with q_j[y] > 0."""
    target = check(target, Choice(TARGETS), "target")
    if target == "conditional":
        return world.weights, world.conditionals, world.predictions, world.classes
    rows, ys = np.nonzero(world.conditionals)
    if rows.size == world.weights.size and np.all(world.conditionals[rows, ys] == 1.0):
        # Deterministic labels (e.g. a sample world): pi_{Y|X} = e_Y already, nothing to expand.
        return world.weights, world.conditionals, world.predictions, world.classes
    z = np.zeros((rows.size, world.conditionals.shape[1]))
    z[np.arange(rows.size), ys] = 1.0
    w = world.weights[rows] * world.conditionals[rows, ys]
    return w, z, world.predictions[rows], world.classes[rows]


def _groups(w: np.ndarray, z: np.ndarray, p: np.ndarray) -> PredictionGroups:
    first, inverse = _group_rows(p)
    n_groups = first.size
    weight = _group_sum(w, inverse, n_groups)
    means = _group_sum(w[:, None] * z, inverse, n_groups) / weight[:, None]
    return PredictionGroups(p[first], weight, means, inverse)


def prediction_groups(world: FiniteWorld) -> PredictionGroups:
    """Group a world by its distinct predictions: W_v and mu_v = E[pi_{Y|X} | g(X) = v] = E[e_Y | g(X) = v].

    Source: "Reassessing calibration" (n.d.), eq. 2.1 (full calibration means mu_v = v) and Lemma 4.1 (eq. 4.2) with the
    conditioning variable g(X); on a finite world every conditional expectation is a weighted mean over
    the atoms that share a prediction.
    """
    world = _check_world(world)
    return _groups(world.weights, world.conditionals, world.predictions)


def full_decomposition(world: FiniteWorld, *, loss: str = "brier", target: str = "conditional") -> SharpnessCalibration:
    """Lemma 4.1 (eq. 4.2) with conditioning on the prediction g(X): full (canonical) calibration.

    Source: "Reassessing calibration" (n.d.), Lemma 4.1 / eq. 4.2 and its proof (App. A), with Z = pi_{Y|X} (``target=
    "conditional"``) or Z = e_Y (``"label"``):

        E d_phi(Z, g) = [E phi(Z) - E phi(E[Z | g])] + E d_phi(E[Z | g], g)
                         (sharpness gap)                (calibration error)

    The three terms are computed separately (the total from the atoms, the sharpness gap from phi,
    the calibration error from the group means), so their agreement is a real check of the identity.
    For Brier the calibration term is the L2 ECE of Prop. 4.4.
    """
    world = _check_world(world)
    loss = _check_loss(loss)
    w, z, p, _ = _atoms(world, target)
    groups = _groups(w, z, p)
    total = float(np.sum(w * _div(z, p, loss)))
    sharpness = float(np.sum(w * _phi(z, loss)) - np.sum(groups.weights * _phi(groups.means, loss)))
    calibration = float(np.sum(groups.weights * _div(groups.means, groups.predictions, loss)))
    return SharpnessCalibration(total, sharpness, calibration)


def pointwise_sharpness_gap(
    world: FiniteWorld, *, loss: str = "brier", target: str = "conditional"
) -> PointwiseSharpness:
    """Pointwise sharpness gap rho(t) of eq. 4.7 at every confidence level t of a finite world.

    Source: "Reassessing calibration" (n.d.), eq. 4.7, rho(p) = E[d_phi(pi_{Y|X}, g(X)) | h(X) = p] -
    d_varphi(E[1{Y = c(X)} | h(X) = p], p), with the 1-D d_varphi in the second term (the paper's text
    misprints it as d_phi); Prop. 4.8 (rho >= 0 for the pairs of Lemma 4.6 / Corollary 4.7). Also
    returns the left side of eq. 4.6 per level. With ``target="label"`` the first term is E[d_phi(e_Y,
    g(X)) | h(X) = p], which is what the paper estimates from samples (App. D).
    """
    world = _check_world(world)
    loss = _check_loss(loss)
    w, z, p, c = _atoms(world, target)
    groups = _groups(w, z, p)
    rows = np.arange(w.size)
    h = p[rows, c]
    first, level = _group_rows(h)
    n_levels = first.size
    weight = _group_sum(w, level, n_levels)
    accuracy = _group_sum(w * z[rows, c], level, n_levels) / weight
    divergence = _group_sum(w * _div(z, p, loss), level, n_levels) / weight
    group_cal = _div(groups.means, groups.predictions, loss)
    full_cal = _group_sum(w * group_cal[groups.inverse], level, n_levels) / weight
    t = h[first]
    calibration = _div_1d(np.clip(accuracy, 0.0, 1.0), t, loss)
    with np.errstate(invalid="ignore"):
        rho = divergence - calibration
    return PointwiseSharpness(t, weight, accuracy, divergence, full_cal, calibration, rho)


def confidence_decomposition(
    world: FiniteWorld, *, loss: str = "brier", target: str = "conditional"
) -> SharpnessCalibration:
    """Full divergence = E rho(h(X)) + confidence calibration error, with conditioning on h(X).

    Source: "Reassessing calibration" (n.d.), eq. 4.7 and Sect. 4.2 (the calibration-sharpness diagram's d_TOT, band and
    d_CAL), Lemma 4.6 / eq. 4.6 and Prop. 4.8. The total is the full multi-class E d_phi(Z, g(X)) as
    in :func:`full_decomposition` (Sect. 4.1: report the full divergence, not the 1-D one); the
    calibration term is E d_varphi(E[1{Y = c(X)} | h(X)], h(X)), which is at most the full calibration
    error (corollary of eq. 4.6); the sharpness gap is E rho(h(X)) >= 0, at least the full sharpness gap.
    With the log loss a confidence of exactly 1 on a sometimes-wrong class makes both the total and the
    calibration term +inf; the sharpness gap is then reported as NaN (inf - inf is undefined).
    """
    levels = pointwise_sharpness_gap(world, loss=loss, target=target)
    total = float(np.sum(levels.weight * levels.divergence))
    calibration = float(np.sum(levels.weight * levels.calibration))
    if np.isfinite(total):
        sharpness = float(np.sum(levels.weight * levels.rho))
    else:  # +inf total: the gap is +inf if the calibration term is finite, undefined (NaN) if not
        sharpness = float("inf") if np.isfinite(calibration) else float("nan")
    return SharpnessCalibration(total, sharpness, calibration)


def confidence_problem_decomposition(
    world: FiniteWorld, *, loss: str = "brier", target: str = "conditional"
) -> SharpnessCalibration:
    """Lemma 4.1 (eq. 4.2) for the 1-D confidence problem: Z = 1{Y = c(X)} (or pi_{Y|X}(c(X))), given h(X).

    Source: "Reassessing calibration" (n.d.), Lemma 4.1 with the 1-D varphi of Sect. 4.1 applied to (Z, h(X)):
    E d_varphi(Z, h) = [E varphi(Z) - E varphi(E[Z | h])] + E d_varphi(E[Z | h], h). Its calibration
    term equals that of :func:`confidence_decomposition`, but its total is the 1-D loss that Prop. 4.5
    shows to be a pitfall as a generalization metric (small for an always-wrong predictor); use it to
    study the confidence problem, not to report a model's loss.
    """
    world = _check_world(world)
    loss = _check_loss(loss)
    w, z, p, c = _atoms(world, target)
    rows = np.arange(w.size)
    h = p[rows, c]
    zc = z[rows, c]
    first, level = _group_rows(h)
    n_levels = first.size
    weight = _group_sum(w, level, n_levels)
    accuracy = np.clip(_group_sum(w * zc, level, n_levels) / weight, 0.0, 1.0)
    t = h[first]
    total = float(np.sum(w * _div_1d(zc, h, loss)))
    sharpness = float(np.sum(w * _phi_1d(zc, loss)) - np.sum(weight * _phi_1d(accuracy, loss)))
    calibration = float(np.sum(weight * _div_1d(accuracy, t, loss)))
    return SharpnessCalibration(total, sharpness, calibration)


def empirical_decomposition(
    scores, labels, *, kind: str, loss: str = "brier", calibration: str = "full", classes=None, sample_weight=None
) -> SharpnessCalibration:
    """Plug-in sharpness / calibration decomposition of the mean loss on a sample (exact on the sample).

    Source: "Reassessing calibration" (n.d.), Lemma 4.1 (eq. 4.2) for ``calibration="full"`` (groups of identical score
    rows) and eq. 4.7 with Lemma 4.6 for ``calibration="confidence"`` (groups of identical
    confidences). The total is the mean Brier score (summed over classes) or NLL (natural log).
    ``sample_weight`` (one weight >= 0 per sample) makes every mean a weighted mean, sum_i w_i v_i /
    sum_i w_i (:func:`sample_world`); None weighs every sample 1.

    Examples
    --------
    >>> s = [[0.6, 0.4], [0.6, 0.4], [0.2, 0.8]]
    >>> d = empirical_decomposition(s, [0, 1, 1], kind="probs", sample_weight=[3, 1, 1])
    >>> round(d.total, 4), round(d.calibration, 4)
    (0.352, 0.052)
    """
    check(calibration, Choice(CALIBRATIONS), "calibration")
    world = sample_world(scores, labels, kind=kind, classes=classes, sample_weight=sample_weight)
    if calibration == "full":
        return full_decomposition(world, loss=loss, target="label")
    return confidence_decomposition(world, loss=loss, target="label")


# --- kernel (Nadaraya-Watson) plug-in of the confidence calibration error ------------------------------


def _nadaraya_watson_at_samples(
    x: np.ndarray, y: np.ndarray, bandwidth: float, kernel: str, w: np.ndarray | None = None
) -> np.ndarray:
    """m_hat(x_i) = sum_j K((x_i - x_j)/s) y_j / sum_j K((x_i - x_j)/s) at every sample point x_i; with
    weights ``w``, sum_j w_j K(...) y_j / sum_j w_j K(...).

    Epanechnikov: exact in O(n log n) by prefix sums; Gaussian:
    :func:`calib.calibration_errors.smoothing.nadaraya_watson` (exact sums in blocks).
    """
    n = x.size
    if kernel == "epanechnikov":
        # Exact windowed sums via prefix sums over sorted x: K(u) = 1 - u^2 on |u| <= 1 (the constant cancels).
        order = np.argsort(x, kind="stable")
        xs, ys = x[order], y[order]
        center = xs.mean()
        xc = xs - center
        cols = np.column_stack([np.ones(n), xc, xc * xc])
        if w is not None:  # each sample's terms times its weight: the windowed sums become weighted sums
            cols = cols * w[order][:, None]
        prefix = np.vstack([np.zeros((1, 6)), np.cumsum(np.hstack([cols, cols * ys[:, None]]), axis=0)])
        lo = np.searchsorted(xs, xs - bandwidth, side="left")
        hi = np.searchsorted(xs, xs + bandwidth, side="right")
        s = prefix[hi] - prefix[lo]
        inv_s2 = 1.0 / (bandwidth * bandwidth)

        def window(s0, s1, s2):
            return s0 - (xc * xc * s0 - 2.0 * xc * s1 + s2) * inv_s2

        den = window(s[:, 0], s[:, 1], s[:, 2])
        num = window(s[:, 3], s[:, 4], s[:, 5])
        out = np.empty(n)
        out[order] = num / den
        return out
    return nadaraya_watson(x, y, x, bandwidth=bandwidth, kernel="gaussian", method="exact", sample_weight=w)


def kernel_calibration_error(
    confidences,
    correct,
    *,
    loss: str = "brier",
    bandwidth: float,
    kernel: str = "gaussian",
    form: str = "plugin",
    sample_weight=None,
) -> float:
    """Nadaraya-Watson plug-in estimate of the confidence calibration error E d_varphi(E[A | h], h).

    Source: "Reassessing calibration" (n.d.), eq. 4.8 (with y_i restored in the numerator, a typo in the
    paper), Theorem 4.9 and its formal version Theorem C.4 with estimator (C.3). ``confidences`` are
    h(x_i) in [0, 1], ``correct`` the indicators A_i = 1{y_i = c(x_i)}; m_hat is the NW regression of A
    on h with a Gaussian (``bandwidth`` = standard deviation) or Epanechnikov (support |u| <= bandwidth)
    kernel, evaluated at every sample point.

    - ``form="plugin"``: (1/n) sum_i d_varphi(m_hat(h_i), h_i), the estimate the authors' diagrams show.
    - ``form="covariance"``: eq. (C.3), (1/n) sum_i [varphi(m_hat(h_i)) - varphi(h_i) - varphi'(h_i)
      (A_i - h_i)], written here as varphi(m_hat) - varphi(A) + d_varphi(A, h) so that h in {0, 1} is
      handled; it can be negative on finite samples.

    Both are consistent under C.1 / C.2 (bandwidth -> 0 with n bandwidth^2 / log n -> inf). Cost:
    O(n log n) for Epanechnikov, O(n^2) time in blocks for Gaussian.

    ``sample_weight`` (one weight >= 0 per sample, :func:`calib.validation.as_sample_weights`) weighs the
    regression, m_hat(h) = sum_j w_j K((h - h_j)/s) A_j / sum_j w_j K((h - h_j)/s), and the mean,
    sum_i w_i (...) / sum_i w_i; samples of weight 0 are dropped, so integer weights give the estimate
    of the samples repeated w_i times. None weighs every sample 1.

    Examples
    --------
    >>> h, a = [0.55, 0.6, 0.7, 0.8, 0.9, 0.95], [1, 0, 1, 1, 1, 1]
    >>> e = kernel_calibration_error(h, a, bandwidth=0.1, kernel="epanechnikov", sample_weight=[1, 2, 1, 1, 0, 3])
    >>> repeated = kernel_calibration_error(np.repeat(h, [1, 2, 1, 1, 0, 3]), np.repeat(a, [1, 2, 1, 1, 0, 3]),
    ...                                     bandwidth=0.1, kernel="epanechnikov")
    >>> bool(abs(e - repeated) < 1e-12)
    True
    """
    loss = _check_loss(loss)
    kernel = check(kernel, Choice(KERNELS), "kernel")
    form = check(form, Choice(FORMS), "form")
    h = _unit_interval(confidences, "confidences")
    if h.ndim != 1 or h.size == 0:
        raise CalibInputError(f"confidences must be a non-empty 1-D vector; got shape {h.shape}")
    a = np.asarray(correct)
    if a.shape != h.shape:
        raise CalibInputError(f"correct has shape {a.shape} but confidences have {h.shape}; they must match")
    if a.dtype.kind not in "biuf" or not np.all((a == 0) | (a == 1)):
        raise CalibInputError("correct must hold 0/1 (or boolean) indicators 1{y_i = c(x_i)}")
    a = a.astype(np.float64)
    if isinstance(bandwidth, bool) or not np.isscalar(bandwidth) or not np.isfinite(bandwidth) or bandwidth <= 0:
        raise CalibInputError(f"bandwidth must be a finite number > 0; got {bandwidth!r}")
    w = as_sample_weights(sample_weight, h.size)
    if w is not None:
        h, a, w = h[w > 0], a[w > 0], w[w > 0]
    m_hat = np.clip(_nadaraya_watson_at_samples(h, a, float(bandwidth), kernel, w), 0.0, 1.0)
    if form == "plugin":
        terms = _div_1d(m_hat, h, loss)
    else:
        terms = _phi_1d(m_hat, loss) - _phi_1d(a, loss) + _div_1d(a, h, loss)
    return float(np.mean(terms)) if w is None else float(np.sum(w * terms) / w.sum())
