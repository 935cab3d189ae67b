"""Property-based tests of calib's metrics: ranges, sample order, duplication, float32 and kinds.

Metrics of (scores, labels, kind) are listed once in ``METRICS`` and every property runs over the
list; metrics of confidences (SmoothECE, the kernel calibration error) and of weighted finite worlds
have their own tests below. Duplication vs weighting (issue property 3): no calib metric takes a
per-sample ``sample_weight``; the weights there are ``priors`` (each class h weighted by P_h / N_h in
cross_entropy, brier, normalized_risk, expected_cost, bayes_risk_curve, integrated_risk), the atom
``weights`` of a bregman.FiniteWorld and of lenses.induced_deviation. Those are checked against
duplicated samples; every mean-type metric is also checked to be unchanged when each sample is
repeated the same number of times (equal weights). Regression tests below check, with the minimal
falsifying examples once found, properties that need care on exact ties: the data-dependent partition,
the Laplacian SKCE of identical rows and the tie rule of Bayes decisions.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st
from strategies import (
    FLOAT32_TOL,
    KIND_TOL,
    KINDS,
    ORDER_TOL,
    PROPERTY,
    RANGE_SLACK,
    ROUNDING_TOL,
    Sample,
    assert_close,
    distance_to_edges,
    permutations_of,
    samples,
)

from calib.calibration_errors.binned import BinnedCalibrationError
from calib.calibration_errors.entropic import ecd, entropic_bins, single_datum_bound
from calib.calibration_errors.kernel_calibration import median_bandwidth, mmce, skce
from calib.calibration_errors.lenses import ClassGroups, TopK, induced_deviation
from calib.calibration_errors.miscalibration import expected_miscalibration
from calib.calibration_errors.presets import PRESETS, ece_preset
from calib.calibration_errors.simplex_binning import DataDependent, Triangles, UniformGrid
from calib.calibration_errors.smoothing import smooth_ece, smooth_ece_top_label
from calib.scoring.bregman import FiniteWorld, empirical_decomposition, full_decomposition, kernel_calibration_error
from calib.scoring.decisions import (
    bayes_decisions,
    expected_cost,
    imbalanced_costs,
    normalized_risk,
    zero_one_costs,
)
from calib.scoring.decomposition import calibration_refinement, epistemic_irreducible
from calib.scoring.divergences import expected_divergence_to_constant, score_divergence
from calib.scoring.risk_curves import bayes_risk_curve, integrated_risk
from calib.scoring.scores import brier, cross_entropy, semi_empirical_cross_entropy
from calib.validation import as_probs

INF = math.inf
ECD_FLOOR_BINARY = single_datum_bound()[1]  # -0.27846..., the smallest binary ECD summand


def _reference_probs(labels: np.ndarray, k: int) -> np.ndarray:
    """A reference posterior per sample: 0.7 on the label, the rest spread evenly."""
    return 0.7 * np.eye(k)[labels] + 0.3 / k


def _in_kind(probs: np.ndarray, kind: str) -> np.ndarray:
    """``probs`` expressed as ``kind`` (logits shifted by a constant 1.5 per row)."""
    if kind == "probs":
        return probs
    return np.log(probs) + (1.5 if kind == "logits" else 0.0)


@dataclass(frozen=True)
class Metric:
    """A metric f(scores, labels, kind) -> float or array, its documented range and which properties apply.

    ``lo``/``hi`` may be callables of K. ``order``: invariant to permuting the samples. ``dup``:
    invariant to repeating every sample the same number of times. ``finite_with_zeros``: finite when
    some probabilities are exactly 0. ``continuous``: continuous in the scores (float32 rounding test).
    ``edges``: bin counts whose edges k / M are not tolerance-protected (library presets).
    ``kind_tol``: the probs/logprobs/logits tolerance of a sample where KIND_TOL is not attainable.
    ``ties``: the bins follow the scores' ties (equal-mass bins), so a sample whose scores tie in one kind
    and not in another (a last-bit difference of exp(log p) from p) is not compared across kinds.
    """

    name: str
    fn: Callable
    lo: object = 0.0
    hi: object = INF
    k: int | None = None
    present: object = 0
    order: bool = True
    dup: bool = True
    finite_with_zeros: bool = True
    continuous: bool = False
    edges: tuple[int, ...] = ()
    min_n: int = 1
    min_k: int = 2
    max_examples: int | None = None
    valid: Callable | None = None
    documented_nan: Callable | None = None
    kind_tol: Callable[[Sample], float] | None = None
    ties: bool = False

    def draw(self, data, zeros: bool = False) -> Sample:
        """A sample for this metric; ``valid`` rejects inputs the metric documents as invalid."""
        sample = data.draw(self.strategy(zeros=zeros), label="sample")
        if self.valid is not None:
            assume(self.valid(sample))
        return sample

    def bounds(self, k: int) -> tuple[float, float]:
        lo = self.lo(k) if callable(self.lo) else self.lo
        hi = self.hi(k) if callable(self.hi) else self.hi
        return lo, hi

    def strategy(self, zeros: bool = False):
        return samples(k=self.k, min_k=self.min_k, present=self.present, zeros=zeros, min_n=self.min_n)

    def __call__(self, sample: Sample, kind: str, *, float32: bool = False):
        return np.asarray(self.fn(sample.as_kind(kind, float32=float32), sample.labels, kind), dtype=np.float64)

    def __str__(self) -> str:
        return self.name


def _uniform_priors(k: int) -> np.ndarray:
    return np.full(k, 1.0 / k)


def _skewed_priors(k: int) -> np.ndarray:
    p = np.arange(1.0, k + 1.0)
    return p / p.sum()


def _cal_ref(s, y, kind, loss):
    r = calibration_refinement(s, y, kind=kind, loss=loss)
    return [r.total, r.calibration, r.refinement]


def _epi_irr(s, y, kind, loss):
    k = s.shape[1]
    r = epistemic_irreducible(s, y, _reference_probs(y, k), kind=kind, loss=loss)
    return [r.total, r.epistemic, r.irreducible]


def _bregman(s, y, kind, loss, calibration):
    r = empirical_decomposition(s, y, kind=kind, loss=loss, calibration=calibration)
    return [r.total, r.sharpness, r.calibration]


def _divergence(s, y, kind, divergence):
    k = s.shape[1]
    return np.mean(score_divergence(_in_kind(_reference_probs(y, k), kind), s, kind=kind, divergence=divergence))


def _preset(s, y, kind, preset, norm):
    return ece_preset(preset, norm=norm)(s, y, kind=kind)


def _to_constant(s, y, kind, divergence):
    return expected_divergence_to_constant(s, GRID, kind=kind, divergence=divergence)


def _median_positive(sample: Sample) -> bool:
    """The median heuristic needs a positive median pairwise distance (documented CalibInputError)."""
    p = sample.probs()
    d = np.linalg.norm(p[:, None, :] - p[None, :, :], axis=2)[np.triu_indices(sample.n, k=1)]
    return d.size > 0 and float(np.median(d)) > 1e-9


def _median_kind_tol(sample: Sample) -> float:
    """KIND_TOL plus what the median bandwidth nu lets rounding move the unbiased SKCE by.

    The probabilities calib recovers from each kind agree to a few ulps of exp(log p) with |log p| <= 16
    (2e-15 per coordinate, so 4e-15 on a distance between two rows). kappa = exp(-d / nu) then moves by
    at most 4e-15 / nu * sup_x e^-x (1 + x) = 4e-15 / nu (d and nu both move), and each term kappa <u, u'>
    by twice that (|<u, u'>| <= 2): 8e-15 / nu, rounded up to 1e-14 / nu. Negligible against 1e-9 unless
    nu < 1e-5, i.e. for near-identical predictions, where the estimate itself is that sensitive.
    """
    return KIND_TOL + 1e-14 / median_bandwidth(sample.probs())


def _inf_minus_inf(value: np.ndarray) -> np.ndarray:
    """NaN is documented for the sharpness gap (index 1) when the total (index 0) is +inf."""
    return np.array([False, bool(np.isposinf(value[0])), False])


def _ecd_floor(k: int) -> float:
    # binary: the single-datum bound (entropic docstring); K > 2: NLL >= 0 and entropy <= log K
    return ECD_FLOOR_BINARY if k == 2 else -math.log(k)


GRID = np.linspace(0.05, 0.95, 7)


METRICS = [
    # calib.scoring.scores
    Metric("CE", lambda s, y, kind: cross_entropy(s, y, kind=kind), finite_with_zeros=False, continuous=True),
    Metric(
        "NCE",
        lambda s, y, kind: cross_entropy(s, y, kind=kind, normalize=True),
        present=2,
        finite_with_zeros=False,
        continuous=True,
    ),
    Metric(
        "CE priors",
        lambda s, y, kind: cross_entropy(s, y, kind=kind, priors=_skewed_priors(s.shape[1])),
        present="all",
        finite_with_zeros=False,
        continuous=True,
    ),
    Metric(
        "Brier mean", lambda s, y, kind: brier(s, y, kind=kind, scaling="mean"), hi=lambda k: 2.0 / k, continuous=True
    ),
    Metric("Brier sum", lambda s, y, kind: brier(s, y, kind=kind, scaling="sum"), hi=2.0, continuous=True),
    Metric(
        "NBS", lambda s, y, kind: brier(s, y, kind=kind, scaling="mean", normalize=True), present=2, continuous=True
    ),
    Metric(
        "NBS priors",
        lambda s, y, kind: brier(s, y, kind=kind, scaling="sum", normalize=True, priors=_uniform_priors(s.shape[1])),
        present="all",
        continuous=True,
    ),
    Metric(
        "semi-empirical CE",
        lambda s, y, kind: semi_empirical_cross_entropy(
            s, _reference_probs(y, s.shape[1]), kind=kind, reference_kind="probs", normalize=True
        ),
        finite_with_zeros=False,
        continuous=True,
    ),
    # calib.calibration_errors.binned (values are fractions in [0, 1])
    Metric("ECE binary", lambda s, y, kind: BinnedCalibrationError("binary", n_bins=10)(s, y, kind=kind), hi=1.0, k=2),
    Metric(
        "MCE binary",
        lambda s, y, kind: BinnedCalibrationError("binary", n_bins=5, norm="max")(s, y, kind=kind),
        hi=1.0,
        k=2,
    ),
    Metric(
        "ECE binary l2 left mass",
        lambda s, y, kind: BinnedCalibrationError("binary", n_bins=4, norm="l2", closed="left", strategy="equal-mass")(
            s, y, kind=kind
        ),
        hi=1.0,
        k=2,
        ties=True,
        dup=False,  # the tie rule's nearer side is in samples: repeated samples are ties it may move
    ),
    Metric(
        "ECE class 0",
        lambda s, y, kind: BinnedCalibrationError("classwise", n_bins=10).reliability(s, y, kind=kind)[0].ece(),
        hi=1.0,
    ),
    Metric("ECE classwise", lambda s, y, kind: BinnedCalibrationError("classwise", n_bins=10)(s, y, kind=kind), hi=1.0),
    Metric(
        "ECE classwise squared average",
        lambda s, y, kind: BinnedCalibrationError("classwise", n_bins=5, norm="squared", average=True)(s, y, kind=kind),
        hi=1.0,
    ),
    Metric(
        "MCE classwise",
        lambda s, y, kind: BinnedCalibrationError("classwise", n_bins=10, norm="max")(s, y, kind=kind),
        hi=1.0,
    ),
    Metric("ECE top-label", lambda s, y, kind: BinnedCalibrationError("top_label", n_bins=15)(s, y, kind=kind), hi=1.0),
    Metric(
        "ECE top-label l2 left",
        lambda s, y, kind: BinnedCalibrationError("top_label", n_bins=10, norm="l2", closed="left")(s, y, kind=kind),
        hi=1.0,
    ),
    Metric(
        "ECE top-label mass",
        lambda s, y, kind: BinnedCalibrationError("top_label", n_bins=3, strategy="equal-mass")(s, y, kind=kind),
        hi=1.0,
        ties=True,
        dup=False,  # the tie rule's nearer side is in samples: repeated samples are ties it may move
    ),
    Metric(
        "ECE top-label debiased l2",
        lambda s, y, kind: BinnedCalibrationError("top_label", n_bins=5, norm="l2", debiased=True)(s, y, kind=kind),
        hi=1.0,
        dup=False,  # the debiasing term uses the bin counts
    ),
    Metric(
        "MCE top-label",
        lambda s, y, kind: BinnedCalibrationError("top_label", n_bins=10, norm="max")(s, y, kind=kind),
        hi=1.0,
    ),
    Metric(
        "ECE canonical",
        lambda s, y, kind: BinnedCalibrationError("canonical", n_bins=4)(s, y, kind=kind),
        hi=1.0,
    ),
    # calib.calibration_errors.presets: scores on an edge k / M bin by each library's rule, without calib's tolerance
    *[
        Metric(
            f"preset {name} {norm}",
            partial(_preset, preset=name, norm=norm),
            hi=1.0,
            k=2 if spec.target == "binary" else None,
            edges=(spec.n_bins,),
        )
        for name, (_, spec) in PRESETS.items()
        for norm in ("l1", "max")
    ],
    # calib.calibration_errors.smoothing
    Metric(
        "smooth ECE relplot",
        lambda s, y, kind: smooth_ece_top_label(s, y, kind=kind),
        hi=1.0,
        dup=False,  # relplot's density offset 1e-4 depends on N (documented)
        max_examples=20,
    ),
    Metric(
        "smooth ECE fine",
        lambda s, y, kind: smooth_ece_top_label(s, y, kind=kind, discretization="fine"),
        hi=1.0,
        max_examples=6,  # 40 bisection steps on grids of up to 2^17 nodes
    ),
    Metric(
        "smooth ECE fixed bandwidth",
        lambda s, y, kind: smooth_ece_top_label(s, y, kind=kind, bandwidth=0.1, discretization="fine"),
        hi=1.0,
        max_examples=20,
    ),
    # calib.calibration_errors.kernel_calibration: |h| <= 2 (kappa <= 1, |e_y - p| <= sqrt 2)
    Metric(
        "SKCE unbiased median",
        lambda s, y, kind: skce(s, y, kind=kind),
        valid=_median_positive,
        kind_tol=_median_kind_tol,
        lo=-2.0,
        hi=2.0,
        dup=False,
        min_n=2,
    ),
    Metric(
        "SKCE biased laplacian",
        lambda s, y, kind: skce(s, y, kind=kind, estimator="biased", bandwidth=0.5),
        hi=2.0,
        continuous=True,
    ),
    Metric(
        "SKCE unbiased gaussian",
        lambda s, y, kind: skce(s, y, kind=kind, kernel="gaussian", bandwidth=0.3),
        lo=-2.0,
        hi=2.0,
        dup=False,
        continuous=True,
        min_n=2,
    ),
    Metric(
        "SKCE block",
        lambda s, y, kind: skce(s, y, kind=kind, estimator="block", bandwidth=0.5, block_size=3),
        lo=-2.0,
        hi=2.0,
        order=False,
        dup=False,
        min_n=3,  # blocks follow the sample order (documented)
    ),
    # squared: MMCE = sqrt(MMCE^2) turns a rounding residue (1e-17) of MMCE^2 = 0 into 3e-9
    Metric("MMCE", lambda s, y, kind: mmce(s, y, kind=kind) ** 2, hi=1.0),
    Metric(
        "MMCE unbiased",
        lambda s, y, kind: mmce(s, y, kind=kind, estimator="unbiased"),
        lo=-1.0,
        hi=1.0,
        dup=False,
        min_n=2,
    ),
    # calib.calibration_errors.entropic
    Metric("ECD", lambda s, y, kind: ecd(s, y, kind=kind), lo=_ecd_floor, finite_with_zeros=False, continuous=True),
    Metric(
        "entropic bins ECE / ECD",
        lambda s, y, kind: [entropic_bins(s, y, kind=kind).weighted(w) for w in ("ece", "ecd")],
        lo=ECD_FLOOR_BINARY,
        hi=INF,
        k=2,
        finite_with_zeros=False,
    ),
    # calib.scoring.decisions
    Metric(
        "NRisk 0-1",
        lambda s, y, kind: normalized_risk(s, y, zero_one_costs(s.shape[1]), kind=kind),
        present=2,
    ),
    Metric(
        "NRisk abstention priors",
        lambda s, y, kind: normalized_risk(
            s, y, zero_one_costs(s.shape[1], abstention=0.3), kind=kind, priors=_skewed_priors(s.shape[1])
        ),
        present="all",
    ),
    Metric(
        "expected cost imbalanced",
        lambda s, y, kind: expected_cost(
            y, bayes_decisions(s, imbalanced_costs(s.shape[1]), kind=kind), imbalanced_costs(s.shape[1])
        ),
        hi=10.0,
    ),
    # calib.scoring.divergences
    Metric("divergence kl", lambda s, y, kind: _divergence(s, y, kind, "kl"), finite_with_zeros=False, continuous=True),
    Metric(
        "divergence sq_euclidean", lambda s, y, kind: _divergence(s, y, kind, "sq_euclidean"), hi=2.0, continuous=True
    ),
    Metric("divergence l1", lambda s, y, kind: _divergence(s, y, kind, "l1"), hi=2.0, continuous=True),
    Metric(
        "divergence l1_positive", lambda s, y, kind: _divergence(s, y, kind, "l1_positive"), hi=1.0, continuous=True
    ),
    *[
        Metric(
            f"divergence to constant {d}",
            partial(_to_constant, divergence=d),
            hi=INF if d == "kl" else 2.0,
            k=2,
            continuous=True,
        )
        for d in ("kl", "sq_euclidean", "l1", "l1_positive")
    ],
    # calib.scoring.decomposition
    Metric("calibration-refinement brier", lambda s, y, kind: _cal_ref(s, y, kind, "brier"), hi=2.0),
    Metric("calibration-refinement log", lambda s, y, kind: _cal_ref(s, y, kind, "log"), finite_with_zeros=False),
    Metric("epistemic-irreducible brier", lambda s, y, kind: _epi_irr(s, y, kind, "brier"), hi=2.0, continuous=True),
    Metric(
        "epistemic-irreducible log",
        lambda s, y, kind: _epi_irr(s, y, kind, "log"),
        finite_with_zeros=False,
        continuous=True,
    ),
    # calib.scoring.bregman on a sample (exact decompositions; each term >= 0)
    *[
        Metric(
            f"bregman {loss} {cal}",
            partial(_bregman, loss=loss, calibration=cal),
            hi=2.0 if loss == "brier" else INF,
            finite_with_zeros=loss == "brier",
            # a confidence of exactly 1 on a wrong class: total and calibration inf, sharpness NaN (documented)
            documented_nan=_inf_minus_inf if (loss, cal) == ("log", "confidence") else None,
        )
        for loss in ("brier", "log")
        for cal in ("full", "confidence")
    ],
    # calib.calibration_errors.miscalibration: tv in [0, 1], l2 in [0, sqrt 2], sq_l2 in [0, 2]
    Metric(
        "miscalibration canonical grid tv",
        lambda s, y, kind: expected_miscalibration(s, y, kind=kind, binning=UniformGrid(4)),
        hi=1.0,
    ),
    Metric(
        "miscalibration top-1 grid l2",
        lambda s, y, kind: expected_miscalibration(
            s, y, kind=kind, binning=UniformGrid(10), lens=TopK(1), distance="l2"
        ),
        hi=math.sqrt(2.0),
    ),
    Metric(
        "miscalibration top-2 triangles sq_l2",
        lambda s, y, kind: expected_miscalibration(
            s, y, kind=kind, binning=Triangles(4), lens=TopK(2), distance="sq_l2"
        ),
        hi=2.0,
        min_k=3,
    ),
    Metric(
        "miscalibration class groups data-dependent",
        lambda s, y, kind: expected_miscalibration(
            s, y, kind=kind, binning=DataDependent(4), lens=ClassGroups(((0,), tuple(range(1, s.shape[1]))))
        ),
        hi=1.0,
        dup=False,  # min_size counts samples
    ),
    # calib.scoring.risk_curves (binary; both classes needed)
    Metric(
        "Bayes risk curve priors",
        lambda s, y, kind: bayes_risk_curve(s, y, GRID, kind=kind, priors=[0.3, 0.7]),
        k=2,
        present="all",
    ),
    Metric(
        "integrated risk beta22",
        lambda s, y, kind: integrated_risk(s, y, kind=kind, weight="beta22", n_grid=2001),
        k=2,
        present="all",
    ),
]


# --- the five properties of every metric in METRICS ----------------------------------------------
# Drawing a sample costs more than evaluating most metrics, so one test per metric checks every
# property on each drawn sample; each assertion names its property.


def check_range(metric: Metric, sample: Sample, kind: str, zeros: bool) -> None:
    """Property 1: finite (unless zeros make it documented inf / NaN) and inside the documented range."""
    value = metric(sample, kind)
    lo, hi = metric.bounds(sample.k)
    nan = np.isnan(value)
    if zeros and metric.documented_nan is not None:
        nan &= ~metric.documented_nan(value)
    assert not np.any(nan), f"range: NaN {value}"
    if not zeros or metric.finite_with_zeros:
        assert np.all(np.isfinite(value)), f"range: not finite {value}"
    shown = value[~np.isnan(value)]
    assert np.all(shown >= lo - RANGE_SLACK) and np.all(shown <= hi + RANGE_SLACK), (
        f"range: {value} not in [{lo}, {hi}]"
    )


def check_order(metric: Metric, sample: Sample, kind: str, data) -> None:
    """Property 2: permuting scores and labels together changes nothing (1e-12)."""
    perm = permutations_of(data, sample.n)
    assert_close(metric(sample.take(perm), kind), metric(sample, kind), ORDER_TOL, "order")


def check_dup(metric: Metric, sample: Sample, kind: str, data) -> None:
    """Property 3 with equal weights: repeating every sample r times changes nothing (1e-12)."""
    repeats = data.draw(st.integers(2, 3), label="repeats")
    doubled = sample.take(np.repeat(np.arange(sample.n), repeats))
    assert_close(metric(doubled, kind), metric(sample, kind), ORDER_TOL, "equal duplication")


def check_float32(metric: Metric, sample: Sample, kind: str) -> None:
    """Property 4: a float32 array and the same numbers in float64 agree to float32 precision (1e-6)."""
    single = sample.as_kind(kind, float32=True)
    v32 = np.asarray(metric.fn(single, sample.labels, kind), dtype=np.float64)
    v64 = np.asarray(metric.fn(single.astype(np.float64), sample.labels, kind), dtype=np.float64)
    assert_close(v32, v64, FLOAT32_TOL, "float32 vs the same numbers in float64")


def check_rounding(metric: Metric, sample: Sample, kind: str) -> None:
    """Property 4, continuous metrics: rounding the posteriors to float32 moves the value by 1e-5 at most."""
    assert_close(metric(sample, kind, float32=True), metric(sample, kind), ROUNDING_TOL, "float32 rounding")


def _same_ties(sample: Sample) -> bool:
    """Whether the probabilities of every kind tie alike: in each class column and in the top-label
    confidence, the same pairs of samples hold equal scores."""
    patterns = []
    for kind in KINDS:
        p = as_probs(sample.as_kind(kind), kind)
        scores = np.column_stack([p, p.max(axis=1)])
        patterns.append(np.stack([np.equal.outer(column, column) for column in scores.T]))
    return all(np.array_equal(pattern, patterns[0]) for pattern in patterns[1:])


def check_kinds(metric: Metric, sample: Sample) -> None:
    """Property 5: probabilities, log-probabilities and logits of the same posteriors agree (1e-9)."""
    # Library presets bin a score on an edge k / M by the library's rule, without calib's 1e-12 edge
    # tolerance, so exp(log(0.2)) = 0.20000000000000004 may change bins: such samples are not compared.
    if any(distance_to_edges(sample.probs(), m) <= 1e-9 for m in metric.edges):
        return
    if metric.ties and not _same_ties(sample):
        return
    values = {kind: metric(sample, kind) for kind in KINDS}
    tol = KIND_TOL if metric.kind_tol is None else metric.kind_tol(sample)
    assert_close(values["logprobs"], values["probs"], tol, "kinds: logprobs vs probs")
    assert_close(values["logits"], values["probs"], tol, "kinds: logits vs probs")


def run_property(metric: Metric, prop: str, sample: Sample, kind: str, zeros: bool, data) -> None:
    if prop == "range":
        check_range(metric, sample, kind, zeros)
    elif prop == "order":
        check_order(metric, sample, kind, data)
    elif prop == "dup":
        check_dup(metric, sample, kind, data)
    elif prop == "float32":
        check_float32(metric, sample, kind)
    elif prop == "rounding":
        check_rounding(metric, sample, kind)
    else:
        check_kinds(metric, sample)


def properties_of(metric: Metric) -> list[str]:
    props = ["range", "kinds", "float32"]
    props += ["order"] if metric.order else []
    props += ["dup"] if metric.dup else []
    props += ["rounding"] if metric.continuous else []
    return props


def _run(metric: Metric, props: list[str]) -> None:
    settings_ = PROPERTY if metric.max_examples is None else type(PROPERTY)(PROPERTY, max_examples=metric.max_examples)

    @settings_
    @given(st.data())
    def body(data):
        zeros = data.draw(st.booleans(), label="zeros")
        sample = metric.draw(data, zeros=zeros)
        kind = data.draw(st.sampled_from(KINDS), label="kind")
        for prop in props:
            run_property(metric, prop, sample, kind, zeros, data)

    body()


@pytest.mark.parametrize("metric", METRICS, ids=[m.name for m in METRICS])
def test_metric_properties(metric: Metric):
    """Range, sample order, equal duplication, float32 and probs/logprobs/logits of one metric."""
    _run(metric, properties_of(metric))


# --- regressions on exact ties ---------------------------------------------------------------------
# The explicit examples are minimal falsifying examples of earlier calib versions; the generated ones
# search the same kind of input.


@st.composite
def symmetric_cases(draw):
    """Rows that are permutations of a few base logit vectors (ties between coordinates), a permutation, min_size."""
    bases = [(0.0, 0.0, -1.0), (-1.0, 1.0, -1.0), (1.0, 1.0, 1.0), (0.0, 1.0, 2.0)]
    rows = draw(st.lists(st.tuples(st.sampled_from(bases), st.permutations(range(3))), min_size=3, max_size=16))
    logits = np.array([[base[i] for i in order] for base, order in rows])
    labels = np.array(draw(st.lists(st.integers(0, 2), min_size=len(rows), max_size=len(rows))))
    perm = np.array(draw(st.permutations(range(len(rows)))))
    return Sample(logits, labels), perm, draw(st.integers(2, 5))


DATA_DEPENDENT_KINDS = (
    Sample(
        np.array(
            [
                [0.0, 0.0, -1.0],
                [0.0, 0.0, -1.0],
                [0.0, -1.0, 0.0],
                [-1.0, 0.0, 0.0],
                [-1.0, 1.0, -1.0],
                [0.0, -1.0, 0.0],
                [0.0, 0.0, -1.0],
                [1.0, 1.0, 1.0],
                [-1.0, 0.0, 0.0],
                [0.0, 0.0, -1.0],
                [-1.0, 1.0, -1.0],
                [-1.0, 1.0, -1.0],
                [-1.0, 0.0, 0.0],
                [0.0, -1.0, 0.0],
            ]
        ),
        np.array([0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0]),
    ),
    np.arange(14),
    5,
)
DATA_DEPENDENT_ORDER = (
    Sample(
        np.array(
            [
                [-1.0, 1.0, -1.0],
                [0.0, 0.0, -1.0],
                [1.0, 1.0, 1.0],
                [2.0, 0.0, 1.0],
                [-1.0, 1.0, -1.0],
                [2.0, 1.0, 0.0],
                [0.0, 2.0, 1.0],
                [0.0, -1.0, 0.0],
            ]
        ),
        np.array([2, 0, 1, 2, 1, 2, 2, 0]),
    ),
    np.array([0, 3, 6, 4, 7, 5, 2, 1]),
    3,
)


DATA_DEPENDENT_EQUAL_POINTS = (
    Sample(
        np.array([[0.0, 0.0, -1.0], [0.0, -1.0, 0.0], [-1.0, 0.0, 0.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]),
        np.array([0, 1, 0, 0, 0]),
    ),
    np.arange(5),
    3,
)
DATA_DEPENDENT_EQUAL_CONFIDENCES = (
    Sample(np.array([[0.0, 0.0, -1.0], [-1.0, 1.0, -1.0], [-1.0, -1.0, 1.0]]), np.array([0, 1, 0])),
    np.arange(3),
    2,
)


@PROPERTY
@example(case=DATA_DEPENDENT_KINDS, lens=None)
@example(case=DATA_DEPENDENT_ORDER, lens=None)
@example(case=DATA_DEPENDENT_EQUAL_POINTS, lens=None)
@example(case=DATA_DEPENDENT_EQUAL_CONFIDENCES, lens=TopK(1))
@given(case=symmetric_cases(), lens=st.sampled_from([None, TopK(1)]))
def test_data_dependent_partition_ties(case, lens):
    """expected_miscalibration with DataDependent: order-free (1e-12) and the same for every kind (1e-9).

    Regression: coordinates whose variances tie (within rounding) split on the lowest index, and points
    equal up to rounding (permuted logits give the same posteriors or top-1 confidences) are never split
    apart, so neither the sample order nor probs / logprobs / logits change the partition."""
    sample, perm, min_size = case
    binning = DataDependent(min_size)

    def eta(s: Sample, kind: str) -> float:
        return expected_miscalibration(s.as_kind(kind), s.labels, kind=kind, binning=binning, lens=lens)

    base = eta(sample, "probs")
    assert_close(eta(sample.take(perm), "probs"), base, ORDER_TOL, "order")
    for kind in ("logprobs", "logits"):
        assert_close(eta(sample, kind), base, KIND_TOL, kind)


@PROPERTY
@example(sample=Sample(np.array([[0.0, 0.015625, 0.015625, 0.015625]]), np.array([0])), repeats=2)
@given(sample=samples(min_k=3), repeats=st.integers(2, 3))
def test_skce_laplacian_duplication(sample, repeats):
    """The biased (V-statistic) Laplacian SKCE is unchanged by repeating every sample r times (1e-12).

    Regression: the Laplacian kernel of two identical rows (K > 2) is exactly 1, not the exponential of
    the square root of a rounding residue of |p|^2 + |p'|^2 - 2 p.p'."""
    doubled = sample.take(np.repeat(np.arange(sample.n), repeats))
    for kind in KINDS:
        value = skce(sample.as_kind(kind), sample.labels, kind=kind, estimator="biased", bandwidth=0.5)
        again = skce(doubled.as_kind(kind), doubled.labels, kind=kind, estimator="biased", bandwidth=0.5)
        assert_close(again, value, ORDER_TOL, f"equal duplication ({kind})")


@st.composite
def near_identical_samples(draw):
    """Rows within 1e-14 to 1e-5 of one logit vector: a median pairwise distance of 1e-9 and below."""
    k = draw(st.integers(2, 4))
    n = draw(st.integers(2, 6))
    base = np.array(draw(st.lists(st.floats(-7.0, 7.0), min_size=k, max_size=k)))
    scales = 10.0 ** np.array(draw(st.lists(st.integers(-14, -5), min_size=n, max_size=n)), dtype=np.float64)
    steps = np.array(draw(st.lists(st.lists(st.floats(-1.0, 1.0), min_size=k, max_size=k), min_size=n, max_size=n)))
    labels = np.array(draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
    return Sample(base + scales[:, None] * steps, labels)


@PROPERTY
@example(
    sample=Sample(
        np.array(
            [
                [-5.515311255679425, -4.413363900207987, 3.26771852999051, 5.2444303397924585],
                [-5.515311255693158, -4.413363900374062, 3.267718530015057, 5.244430339749297],
                [-5.515311252337771, -4.413363892722788, 3.267718533845257, 5.244430354784005],
            ]
        ),
        np.array([1, 0, 0]),
    )
)
@given(sample=near_identical_samples())
def test_skce_median_kinds_on_near_identical_rows(sample):
    """The median-bandwidth SKCE of probs, logprobs and logits agree within ``_median_kind_tol``.

    Regression: with a median distance of 1.7e-9 (the example: 0.57452907 from probs, 0.57452912 from
    logits), rounding the probabilities moves the estimate by 1e-14 / nu, far above 1e-9: the estimate
    is that sensitive, not wrong, so the kinds are compared within the bound derived for it."""
    assume(_median_positive(sample))
    values = {kind: skce(sample.as_kind(kind), sample.labels, kind=kind) for kind in KINDS}
    tol = _median_kind_tol(sample)
    assert_close(values["logprobs"], values["probs"], tol, "kinds: logprobs vs probs")
    assert_close(values["logits"], values["probs"], tol, "kinds: logits vs probs")


QUARTERS = st.sampled_from([-1.0, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0])


@st.composite
def tied_samples(draw):
    """Logits on a grid of quarters: exact ties between posteriors of one row are common."""
    k = draw(st.integers(3, 5))
    n = draw(st.integers(1, 6))
    logits = np.array(draw(st.lists(st.lists(QUARTERS, min_size=k, max_size=k), min_size=n, max_size=n)))
    labels = np.array(draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
    return Sample(logits, labels)


@PROPERTY
@example(sample=Sample(np.array([[0.0, 0.25, -1.0, 0.25]]), np.array([0])))
@given(sample=tied_samples())
def test_bayes_decisions_ties(sample):
    """0-1 costs: the Bayes decision is the first argmax of the posteriors, for every kind.

    Regression: ties of expected costs (within rounding) go to the lowest index, not to whichever the
    matrix product's rounding favours."""
    costs = zero_one_costs(sample.k)
    first = np.array([np.flatnonzero(row == row.max())[0] for row in sample.logits])
    for kind in KINDS:
        decisions = bayes_decisions(sample.as_kind(kind), costs, kind=kind)
        assert np.array_equal(decisions, first), (kind, decisions, first)


# --- duplication equals weighting, where calib takes weights -------------------------------------


@st.composite
def class_duplications(draw, **kwargs):
    """A sample with every class present and a repeat count per class."""
    sample = draw(samples(present="all", **kwargs))
    repeats = np.array(draw(st.lists(st.integers(1, 3), min_size=sample.k, max_size=sample.k)))
    return sample, repeats


def _repeat_classes(sample: Sample, repeats: np.ndarray) -> Sample:
    return sample.take(np.repeat(np.arange(sample.n), repeats[sample.labels]))


def _duplicated_priors(sample: Sample, repeats: np.ndarray) -> np.ndarray:
    counts = np.bincount(sample.labels, minlength=sample.k) * repeats
    return counts / counts.sum()


@PROPERTY
@given(class_duplications(), st.sampled_from(KINDS))
def test_duplicating_classes_equals_prior_weights_in_scores(case, kind):
    """CE, Brier and NRisk of class-wise duplicated samples equal the originals weighted by the new priors."""
    sample, repeats = case
    dup = _repeat_classes(sample, repeats)
    priors = _duplicated_priors(sample, repeats)
    s, y, sd, yd = sample.as_kind(kind), sample.labels, dup.as_kind(kind), dup.labels
    costs = zero_one_costs(sample.k, abstention=0.4)
    assert_close(cross_entropy(sd, yd, kind=kind), cross_entropy(s, y, kind=kind, priors=priors), ORDER_TOL)
    assert_close(
        brier(sd, yd, kind=kind, scaling="mean", normalize=True),
        brier(s, y, kind=kind, scaling="mean", normalize=True, priors=priors),
        ORDER_TOL,
    )
    assert_close(
        normalized_risk(sd, yd, costs, kind=kind), normalized_risk(s, y, costs, kind=kind, priors=priors), ORDER_TOL
    )
    decisions = bayes_decisions(s, costs, kind=kind)
    assert_close(
        expected_cost(yd, np.repeat(decisions, repeats[y]), costs),
        expected_cost(y, decisions, costs, priors=priors),
        ORDER_TOL,
    )


@PROPERTY
@given(class_duplications(), st.sampled_from(KINDS))
def test_prior_weighted_scores_ignore_class_duplication(case, kind):
    """With explicit priors, duplicating a class's samples changes nothing (weights P_h / N_h)."""
    sample, repeats = case
    dup = _repeat_classes(sample, repeats)
    priors = _skewed_priors(sample.k)
    s, y, sd, yd = sample.as_kind(kind), sample.labels, dup.as_kind(kind), dup.labels
    assert_close(
        cross_entropy(sd, yd, kind=kind, priors=priors), cross_entropy(s, y, kind=kind, priors=priors), ORDER_TOL
    )
    assert_close(
        brier(sd, yd, kind=kind, scaling="sum", priors=priors),
        brier(s, y, kind=kind, scaling="sum", priors=priors),
        ORDER_TOL,
    )


@PROPERTY
@given(class_duplications(k=2), st.sampled_from(KINDS))
def test_duplicating_classes_equals_prior_weights_in_risk_curves(case, kind):
    """Bayes-risk curves of class-wise duplicated samples equal the originals with the new priors."""
    sample, repeats = case
    dup = _repeat_classes(sample, repeats)
    priors = _duplicated_priors(sample, repeats)
    assert_close(
        bayes_risk_curve(dup.as_kind(kind), dup.labels, GRID, kind=kind),
        bayes_risk_curve(sample.as_kind(kind), sample.labels, GRID, kind=kind, priors=priors),
        ORDER_TOL,
    )
    assert_close(
        integrated_risk(dup.as_kind(kind), dup.labels, kind=kind, weight="uniform", n_grid=2001),
        integrated_risk(sample.as_kind(kind), sample.labels, kind=kind, weight="uniform", n_grid=2001, priors=priors),
        ORDER_TOL,
    )


@PROPERTY
@given(samples(max_n=25), st.data())
def test_duplicated_samples_equal_weighted_finite_world(sample, data):
    """bregman: a sample with repeated rows equals the FiniteWorld of the distinct rows weighted by multiplicity."""
    repeats = np.array(data.draw(st.lists(st.integers(1, 3), min_size=sample.n, max_size=sample.n), label="repeats"))
    dup = sample.take(np.repeat(np.arange(sample.n), repeats))
    probs = sample.probs()
    world = FiniteWorld(repeats / repeats.sum(), np.eye(sample.k)[sample.labels], probs)
    for loss in ("brier", "log"):
        direct = empirical_decomposition(dup.probs(), dup.labels, kind="probs", loss=loss)
        weighted = full_decomposition(world, loss=loss, target="label")
        assert_close(
            [direct.total, direct.sharpness, direct.calibration],
            [weighted.total, weighted.sharpness, weighted.calibration],
            ORDER_TOL,
            loss,
        )


@PROPERTY
@given(samples(min_k=3, max_n=20), st.data())
def test_lens_deviation_duplicated_atoms_equal_weights(sample, data):
    """lenses.induced_deviation: an atom split into copies sharing its weight changes nothing."""
    conditionals = _reference_probs(sample.labels, sample.k)
    weights = np.array(data.draw(st.lists(st.integers(1, 5), min_size=sample.n, max_size=sample.n)), dtype=float)
    repeats = np.array(data.draw(st.lists(st.integers(1, 3), min_size=sample.n, max_size=sample.n)))
    index = np.repeat(np.arange(sample.n), repeats)
    probs = sample.probs()
    for lens in (TopK(1), TopK(2), ClassGroups(((0,), tuple(range(1, sample.k))))):
        base = induced_deviation(lens, probs, conditionals, weights)
        split = induced_deviation(lens, probs[index], conditionals[index], (weights / repeats)[index])
        assert_close(split, base, ORDER_TOL, str(lens))


# --- metrics of confidences (no kind) ----------------------------------------------------------------

UNIT = st.floats(0.0, 1.0, allow_nan=False, allow_subnormal=False)


@st.composite
def confidences(draw, max_n=40):
    n = draw(st.integers(2, max_n))
    conf = np.array(draw(st.lists(UNIT, min_size=n, max_size=n)))
    correct = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    return conf, correct


CONFIDENCE_METRICS = {
    "smooth_ece relplot": lambda c, a: smooth_ece(c, a),
    "smooth_ece relplot bandwidth": lambda c, a: smooth_ece(c, a, bandwidth=0.05),
    "smooth_ece fine bandwidth": lambda c, a: smooth_ece(c, a, bandwidth=0.05, discretization="fine"),
    "kernel calibration error gaussian": lambda c, a: kernel_calibration_error(c, a, bandwidth=0.1),
    "kernel calibration error epanechnikov": lambda c, a: kernel_calibration_error(
        c, a, bandwidth=0.2, kernel="epanechnikov"
    ),
}


@pytest.mark.parametrize("name", list(CONFIDENCE_METRICS))
@PROPERTY
@given(case=confidences(), data=st.data())
def test_confidence_metrics_range_order_float32(name, case, data):
    """SmoothECE / kernel calibration error: in [0, 1], order-free (1e-12), float32 input = same float64 numbers."""
    fn = CONFIDENCE_METRICS[name]
    conf, correct = case
    value = fn(conf, correct)
    assert np.isfinite(value) and -RANGE_SLACK <= value <= 1.0 + RANGE_SLACK, value
    perm = permutations_of(data, conf.size)
    assert_close(fn(conf[perm], correct[perm]), value, ORDER_TOL)
    single = conf.astype(np.float32)
    assert_close(fn(single, correct), fn(single.astype(np.float64), correct), FLOAT32_TOL)
