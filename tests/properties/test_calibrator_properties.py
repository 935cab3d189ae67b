"""Property-based tests of calib's calibrators, protocols and calibration loss (RCL).

Each calibrator is fitted on a drawn sample and applied to that sample and to a second one.
Properties: valid probability rows (finite, in [0, 1], rows summing to 1 within 1e-9) that agree
with ``predict_log_proba``; refitting on the permuted sample, on every sample repeated r times, on
float32 input and on probs / logprobs / logits of the same posteriors gives the same calibrated
posteriors. Tolerances: closed-form fits (binning, isotonic, mean replacement) 1e-9 on the
probabilities. Newton fits stop when half the Newton decrement is below 1e-14 / 1e-15 and treat
Hessian directions below 1e-12 of the largest eigenvalue as flat; with log-probabilities of hundreds
of nats among the features that leaves the optimum resolved to ~1e-7 (seen: 1.4e-9 absolute on a
probability of 0.0036 between two equivalent fits), so maximum-likelihood fits are compared to
OPTIMIZER_TOL = 1e-6. On separable data (e.g. one training sample) a maximum-likelihood fit has no
finite optimum, so order / duplication / float32 / kinds are checked after adding rows that carry
every label (:func:`anchored`); valid rows are checked on any data. Duplication vs weighting (issue
property 3): the only calibrators with weights are AffineCalibrator and TemperatureScaling
(``priors``, weight P_h / N_h per class-h sample); for them duplicating a class's samples is checked
to equal re-weighting by the new class frequencies; every calibrator but those whose fit depends on N
is also checked to give the same map when every sample is repeated r times. Scale invariance (issue 51):
temperature, DP and vector scaling fitted on logits multiplied by c in [1e-3, 1e4] give the posteriors
of the unscaled fit within 1e-9 (their fits start from the map giving the scores unit spread, so both
follow the same Newton iterates up to rounding).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from strategies import (
    FLOAT32_TOL,
    KIND_TOL,
    KINDS,
    ORDER_TOL,
    PROPERTY,
    Sample,
    assert_close,
    assert_probability_rows,
    distance_to_edges,
    folds_rejected,
    permutations_of,
    samples,
    xv_outcome,
)

from calib.calibrators import (
    AffineCalibrator,
    BetaCalibrator,
    DirichletCalibrator,
    HistogramBinning,
    IsotonicCalibrator,
    MatrixScaling,
    MeanReplacement,
    OneVsAllHistogramBinning,
    OneVsAllIsotonic,
    OneVsRest,
    PlattCalibrator,
    TemperatureScaling,
    VectorScaling,
    calibrate,
    held_out,
)
from calib.scoring.calibration_losses import calibration_loss, calibration_loss_from_posteriors
from calib.validation import CalibInputError

OPTIMIZER_TOL = 1e-6
# Fits cost more than metrics: fewer examples, smaller training sets.
FITS = settings(PROPERTY, max_examples=15)
MAX_TRAIN = 30


@dataclass(frozen=True)
class Cal:
    """A calibrator factory and what applies to it.

    ``dup``: refitting on every sample repeated r times gives the same map. ``edges``: bin counts whose
    edges are not tolerance-protected (netcal's rule).
    ``iterative``: a maximum-likelihood fit by Newton / L-BFGS (see :func:`anchored`). ``valid``: the
    training samples the calibrator documents as valid (others raise a CalibInputError). ``zeros``: whether
    samples may hold exact zeros (logits -inf), which a map of the logits as given refuses.
    """

    name: str
    make: Callable
    k: int | None = None
    present: object = 0
    dup: bool = True
    edges: tuple[int, ...] = ()
    max_examples: int | None = None
    iterative: bool = True
    valid: Callable | None = None
    zeros: bool = True
    props: tuple[str, ...] = ("valid", "order", "dup", "float32", "kinds")

    def __str__(self) -> str:
        return self.name

    @property
    def tol(self) -> float:
        return OPTIMIZER_TOL if self.iterative else KIND_TOL


# Guo et al.'s maps of the logits as given: the same posteriors as other logits calibrate differently (no "kinds")
GUO_PROPS = ("valid", "order", "dup", "float32")
CALIBRATORS = [
    Cal("affine", AffineCalibrator),
    Cal("temperature", TemperatureScaling),
    Cal("dirichlet", lambda: DirichletCalibrator(reg_lambda=0)),
    Cal("dirichlet odir", lambda: DirichletCalibrator(reg_lambda=0.1, reg_mu=0.01)),
    Cal(
        "dirichlet odir reference row",
        lambda: DirichletCalibrator(reg_lambda=0.1, reference_row=True, normalized=False),
    ),
    Cal(
        "dirichlet cv",
        # regularised grid points only: an unregularised fit inside a fold may have no finite optimum
        make=lambda: DirichletCalibrator(lambdas=(0.01, 0.1), n_folds=2, patience=None),
        present="all",
        # no class with 2 samples: its stratified 2-fold CV raises CalibInputError (test_xv_with_small_classes)
        valid=lambda s: not folds_rejected(s.labels, 2),
        max_examples=4,
        props=("valid", "kinds"),  # folds depend on N and on the order; slow (a grid of fits per fold)
    ),
    Cal("matrix scaling survey", lambda: MatrixScaling(features="last_class_ratios", reg_lambda=0)),
    Cal(
        "matrix scaling survey ridge",
        lambda: MatrixScaling(
            features="last_class_ratios", reg_lambda=0.01, reg_mu=0.0, penalty="l2", normalized=False
        ),
    ),
    Cal("matrix scaling", lambda: MatrixScaling(reg_lambda=0.01), zeros=False, props=GUO_PROPS),
    Cal("vector scaling", VectorScaling, zeros=False, props=GUO_PROPS),
    Cal("vector scaling clr", lambda: VectorScaling(features="clr")),
    Cal("dirichlet diagonal", lambda: VectorScaling(features="log_posteriors")),
    Cal("vector scaling survey", lambda: VectorScaling(features="last_class_ratios")),
    Cal("mean replacement", MeanReplacement, iterative=False),
    Cal("one-vs-all histogram", lambda: OneVsAllHistogramBinning(n_bins=5), edges=(5,), iterative=False),
    Cal("one-vs-all isotonic", OneVsAllIsotonic, iterative=False),
    Cal("one-vs-rest isotonic", lambda: OneVsRest(IsotonicCalibrator()), iterative=False),
    Cal("one-vs-rest platt", lambda: OneVsRest(PlattCalibrator(smooth_targets=True)), dup=False),
    Cal("one-vs-rest histogram", lambda: OneVsRest(HistogramBinning(n_bins=4)), iterative=False),
    Cal("platt", PlattCalibrator, k=2),
    Cal("platt smooth targets", lambda: PlattCalibrator(smooth_targets=True), k=2, dup=False),  # targets use N
    Cal("platt score", lambda: PlattCalibrator(feature="score"), k=2),
    Cal("beta abm", BetaCalibrator, k=2),
    Cal("beta ab", lambda: BetaCalibrator("ab"), k=2),
    Cal("beta am", lambda: BetaCalibrator("am"), k=2),
    Cal("histogram", lambda: HistogramBinning(n_bins=10), k=2, iterative=False),
    Cal(
        "histogram left prior",
        lambda: HistogramBinning(n_bins=4, closed="left", empty_bin="prior"),
        k=2,
        iterative=False,
    ),
    Cal("histogram zero", lambda: HistogramBinning(n_bins=7, empty_bin="zero"), k=2, iterative=False),
    Cal("histogram mass", lambda: HistogramBinning(n_bins=3, strategy="equal-mass"), k=2, dup=False, iterative=False),
    Cal("isotonic", IsotonicCalibrator, k=2, iterative=False),
]


def anchored(sample: Sample) -> Sample:
    """``sample`` plus K + 1 generic score rows, each given every label once.

    On separable data (e.g. one training sample) a maximum-likelihood fit has no finite optimum and
    the Newton iterations stop wherever the loss stops decreasing measurably (documented for Platt),
    so the fitted map is not a function of the data and the order / duplication / float32 / kind
    properties are undefined. Rows carrying every label rule separation out: the optimum is finite.
    """
    k = sample.k
    anchors = np.random.default_rng(k).normal(size=(k + 1, k))
    logits = np.vstack([sample.logits, np.repeat(anchors, k, axis=0)])
    return Sample(logits, np.concatenate([sample.labels, np.tile(np.arange(k), k + 1)]))


def _fit_predict(cal: Cal, train: Sample, kind: str, evaluate: tuple[Sample, ...], *, float32: bool = False):
    """Calibrated probabilities of the ``evaluate`` samples (stacked) by a model fitted on ``train``."""
    model = cal.make().fit(train.as_kind(kind, float32=float32), train.labels, kind=kind)
    return np.vstack([model.predict_proba(s.as_kind(kind), kind=kind) for s in evaluate])


def check_valid(cal: Cal, train: Sample, test: Sample, kind: str) -> None:
    """Property 1: valid probability rows, equal to exp(predict_log_proba)."""
    model = cal.make().fit(train.as_kind(kind), train.labels, kind=kind)
    for s in (train, test):
        probs = model.predict_proba(s.as_kind(kind), kind=kind)
        assert_probability_rows(probs, "valid rows")
        logp = model.predict_log_proba(s.as_kind(kind), kind=kind)
        assert not np.any(np.isnan(logp)) and np.all(logp <= 0.0), "log-probabilities"
        assert_close(np.exp(logp), probs, ORDER_TOL, "predict_proba vs predict_log_proba")


def check_order(cal: Cal, train: Sample, test: Sample, kind: str, data) -> None:
    """Property 2: fitting on the permuted training sample gives the same calibrated posteriors."""
    perm = permutations_of(data, train.n)
    assert_close(
        _fit_predict(cal, train.take(perm), kind, (train, test)),
        _fit_predict(cal, train, kind, (train, test)),
        cal.tol,
        "order",
    )


def check_dup(cal: Cal, train: Sample, test: Sample, kind: str, data) -> None:
    """Property 3 with equal weights: fitting on every sample repeated r times gives the same map."""
    repeats = data.draw(st.integers(2, 3), label="repeats")
    doubled = train.take(np.repeat(np.arange(train.n), repeats))
    assert_close(
        _fit_predict(cal, doubled, kind, (train, test)),
        _fit_predict(cal, train, kind, (train, test)),
        cal.tol,
        "equal duplication",
    )


def check_float32(cal: Cal, train: Sample, test: Sample, kind: str) -> None:
    """Property 4: float32 arrays and the same numbers in float64 agree to float32 precision (1e-6)."""
    model32 = cal.make().fit(train.as_kind(kind, float32=True), train.labels, kind=kind)
    model64 = cal.make().fit(train.as_kind(kind, float32=True).astype(np.float64), train.labels, kind=kind)
    for s in (train, test):
        x32 = s.as_kind(kind, float32=True)
        assert_close(
            model32.predict_proba(s.as_kind(kind), kind=kind),
            model64.predict_proba(s.as_kind(kind), kind=kind),
            FLOAT32_TOL,
            "float32 fit",
        )
        assert_close(
            model64.predict_proba(x32, kind=kind),
            model64.predict_proba(x32.astype(np.float64), kind=kind),
            FLOAT32_TOL,
            "float32 predict",
        )


def check_kinds(cal: Cal, train: Sample, test: Sample) -> None:
    """Property 5: probs, logprobs and logits of the same posteriors give the same calibrated posteriors."""
    for m in cal.edges:
        # netcal's histogram bins a probability on an edge k / M by its own rule, without calib's edge
        # tolerance, so exp(log(0.2)) = 0.20000000000000004 may change bins: such samples are not compared.
        if min(distance_to_edges(train.probs(), m), distance_to_edges(test.probs(), m)) <= 1e-9:
            return
    out = {kind: _fit_predict(cal, train, kind, (train, test)) for kind in KINDS}
    assert_close(out["logprobs"], out["probs"], cal.tol, "kinds: logprobs vs probs")
    assert_close(out["logits"], out["probs"], cal.tol, "kinds: logits vs probs")


def _run(cal: Cal, props) -> None:
    settings_ = FITS if cal.max_examples is None else settings(FITS, max_examples=cal.max_examples)

    @settings_
    @given(st.data())
    def body(data):
        zeros = data.draw(st.booleans(), label="zeros") if cal.zeros else False
        train = data.draw(samples(k=cal.k, present=cal.present, zeros=zeros, max_n=MAX_TRAIN), label="train")
        if cal.valid is not None:
            assume(cal.valid(train))
        test = data.draw(samples(k=train.k, zeros=zeros, max_n=10), label="test")
        kind = data.draw(st.sampled_from(KINDS), label="kind")
        posed = anchored(train) if cal.iterative else train  # valid rows are checked on any data
        for prop in props:
            if prop == "valid":
                check_valid(cal, train, test, kind)
            elif prop == "order":
                check_order(cal, posed, test, kind, data)
            elif prop == "dup":
                check_dup(cal, posed, test, kind, data)
            elif prop == "float32":
                check_float32(cal, posed, test, kind)
            else:
                check_kinds(cal, posed, test)

    body()


@pytest.mark.parametrize("cal", CALIBRATORS, ids=[c.name for c in CALIBRATORS])
def test_calibrator_properties(cal: Cal):
    """Valid rows, sample order, equal duplication, float32 and kinds of one calibrator."""
    _run(cal, [p for p in cal.props if p != "dup" or cal.dup])


# --- duplication equals weighting: the priors of affine / temperature scaling ---------------------


@st.composite
def class_duplications(draw):
    sample = draw(samples(present="all", max_k=4))
    repeats = np.array(draw(st.lists(st.integers(1, 3), min_size=sample.k, max_size=sample.k)))
    return sample, repeats


@pytest.mark.parametrize("make", [AffineCalibrator, TemperatureScaling], ids=["affine", "temperature"])
@FITS
@given(case=class_duplications(), kind=st.sampled_from(KINDS))
def test_duplicating_classes_equals_prior_weights(make, case, kind):
    """Fitting on class-wise duplicated samples equals fitting the originals with priors = the new frequencies."""
    sample, repeats = case
    sample = anchored(sample)  # a finite optimum (see anchored)
    dup = sample.take(np.repeat(np.arange(sample.n), repeats[sample.labels]))
    counts = np.bincount(sample.labels, minlength=sample.k) * repeats
    x = sample.as_kind(kind)
    direct = make().fit(dup.as_kind(kind), dup.labels, kind=kind).predict_proba(x, kind=kind)
    weighted = make(priors=counts / counts.sum()).fit(x, sample.labels, kind=kind).predict_proba(x, kind=kind)
    assert_close(direct, weighted, OPTIMIZER_TOL)
    # and with explicit priors, duplicating classes changes nothing
    priors = np.full(sample.k, 1.0 / sample.k)
    a = make(priors=priors).fit(dup.as_kind(kind), dup.labels, kind=kind).predict_proba(x, kind=kind)
    b = make(priors=priors).fit(x, sample.labels, kind=kind).predict_proba(x, kind=kind)
    assert_close(a, b, OPTIMIZER_TOL)


# --- scale invariance (metamorphic): logits c z give the same calibrated posteriors as z -----------------

# Maps that commute with scaling the logits: alpha log q + beta (log-softmax(c z) = c z - a row constant)
# and vector scaling on centred log-posteriors (clr(c z) = c clr(z)); the fits start from the unit-spread map.
SCALE_INVARIANT = {
    "temperature": TemperatureScaling,
    "affine": AffineCalibrator,
    "vector clr": lambda: VectorScaling(features="clr"),
}
SCALE_TOL = 1e-9


@st.composite
def logit_samples(draw):
    """Gaussian logits (N in [60, 200], K in [2, 5], a spread in [0.3, 5]) with labels drawn from their softmax."""
    k, n = draw(st.integers(2, 5)), draw(st.integers(60, 200))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    logits = draw(st.floats(0.3, 5.0)) * rng.normal(size=(n, k))
    labels = (logits + rng.gumbel(size=(n, k))).argmax(axis=1)
    labels[:k] = np.arange(k)  # every class present
    return logits, labels


@pytest.mark.parametrize("name", list(SCALE_INVARIANT))
@FITS
@example(case=(np.linspace(-1.0, 1.0, 120).reshape(40, 3) * [1.0, -2.0, 0.5], np.arange(40) % 3), exponent=4.0)
@given(case=logit_samples(), exponent=st.floats(-3.0, 4.0))
def test_scaling_the_logits_leaves_the_calibrated_posteriors_unchanged(name, case, exponent):
    """Temperature, DP and vector scaling fitted on c z and applied to c z, c in [1e-3, 1e4], give the
    posteriors fitted on z and applied to z, within SCALE_TOL (max absolute difference)."""
    logits, labels = case
    c = 10.0**exponent
    make = SCALE_INVARIANT[name]
    base = make().fit(logits, labels, kind="logits")
    scaled = make().fit(c * logits, labels, kind="logits")
    assert base.converged_ and scaled.converged_
    difference = np.abs(scaled.predict_proba(c * logits, kind="logits") - base.predict_proba(logits, kind="logits"))
    assert difference.max() <= SCALE_TOL


# --- protocols and calibration loss -------------------------------------------------------------

RCL_CALIBRATORS = {
    "affine": AffineCalibrator,
    "temperature": TemperatureScaling,
    "isotonic ovr": lambda: OneVsRest(IsotonicCalibrator()),
}


def _rcl(make: Callable, sample: Sample, kind: str, metric: str, protocol: str, **split) -> float:
    """calibration_loss of a fresh ``make()`` on ``sample`` given as ``kind``; ``split``: n_folds or folds."""
    x = sample.as_kind(kind)
    return calibration_loss(x, sample.labels, kind=kind, metric=metric, calibrator=make(), protocol=protocol, **split)


@pytest.mark.parametrize("name", list(RCL_CALIBRATORS))
@FITS
@given(sample=samples(present=2, min_n=4), data=st.data())
def test_calibration_loss_properties(name, sample, data):
    """RCL <= 1 (a fraction, i.e. <= 100 %) under tt and xv; on well-posed data (see anchored) the tt value
    is order-free and both are the same for probs / logprobs / logits (OPTIMIZER_TOL)."""
    make = RCL_CALIBRATORS[name]
    for protocol in ("tt", "xv"):
        for metric in ("ce", "brier"):
            kind = data.draw(st.sampled_from(KINDS), label="kind")
            with xv_outcome(sample.labels, 2, protocol):
                v = _rcl(make, sample, kind, metric, protocol, n_folds=2)
                # RCL <= 1; -inf when a fold's model gives a test label probability 0 (a class absent from
                # the fold's training labels gets a constant-zero predictor in OneVsRest, documented)
                assert not np.isnan(v) and v <= 1.0, (protocol, metric, v)
    # Each fold's training set holds a full anchor set, so every fit (tt and both xv folds) is well posed.
    m = anchored(sample).n - sample.n
    posed = anchored(anchored(sample))
    folds = np.concatenate([np.arange(sample.n) % 2, np.zeros(m, dtype=int), np.ones(m, dtype=int)])
    values = {
        (kind, protocol, metric): _rcl(make, posed, kind, metric, protocol, folds=folds)
        for kind in KINDS
        for protocol in ("tt", "xv")
        for metric in ("ce", "brier")
    }
    for key, v in values.items():
        assert_close(v, values[("probs", *key[1:])], OPTIMIZER_TOL, f"kinds {key}")
    permuted = posed.take(permutations_of(data, posed.n))
    for metric in ("ce", "brier"):
        v = _rcl(make, permuted, "logits", metric, "tt")
        assert_close(v, values["logits", "tt", metric], OPTIMIZER_TOL, f"order {metric}")


@PROPERTY
@given(sample=samples(present=2), other=st.data())
def test_calibration_loss_from_posteriors_properties(sample, other):
    """RCL from two posterior sets: <= 1, order-free, duplication-free (1e-12), kind-free (1e-9), float32 (1e-6)."""
    cal = other.draw(samples(k=sample.k, min_n=sample.n, max_n=sample.n), label="calibrated")
    perm = permutations_of(other, sample.n)

    def rcl(raw: Sample, c: Sample, kind: str, idx=None, float32=False, metric="ce"):
        idx = np.arange(raw.n) if idx is None else idx
        return calibration_loss_from_posteriors(
            raw.as_kind(kind, float32=float32)[idx],
            c.as_kind(kind, float32=float32)[idx],
            raw.labels[idx],
            kind=kind,
            metric=metric,
        )

    for metric in ("ce", "brier"):
        base = rcl(sample, cal, "probs", metric=metric)
        assert np.isfinite(base) and base <= 1.0, base
        assert_close(rcl(sample, cal, "probs", perm, metric=metric), base, ORDER_TOL, "order")
        assert_close(
            rcl(sample, cal, "probs", np.repeat(np.arange(sample.n), 2), metric=metric), base, ORDER_TOL, "dup"
        )
        for kind in ("logprobs", "logits"):
            assert_close(rcl(sample, cal, kind, metric=metric), base, KIND_TOL, kind)
        single = calibration_loss_from_posteriors(
            sample.as_kind("logits", float32=True),
            cal.as_kind("logits", float32=True),
            sample.labels,
            kind="logits",
            metric=metric,
        )
        upcast = calibration_loss_from_posteriors(
            sample.as_kind("logits", float32=True).astype(np.float64),
            cal.as_kind("logits", float32=True).astype(np.float64),
            sample.labels,
            kind="logits",
            metric=metric,
        )
        assert_close(single, upcast, FLOAT32_TOL, "float32")


@FITS
@given(train=samples(present="all", max_k=4, min_n=4, max_n=MAX_TRAIN), data=st.data())
def test_protocol_outputs_are_probability_rows(train, data):
    """calibrate (tt, xv) and held_out return log-posteriors of valid probability rows (xv: or reject labels
    without a class of n_folds samples)."""
    test = data.draw(samples(k=train.k, max_n=10), label="test")
    kind = data.draw(st.sampled_from(KINDS), label="kind")
    out = calibrate(VectorScaling(features="clr"), train.as_kind(kind), train.labels, kind=kind, protocol="tt")
    assert_probability_rows(np.exp(out), "tt")
    with xv_outcome(train.labels, 2):
        vector = VectorScaling(features="clr")
        out = calibrate(vector, train.as_kind(kind), train.labels, kind=kind, protocol="xv", n_folds=2)
        assert_probability_rows(np.exp(out), "xv")
    # (a given penalty: the default's cross-validation needs a class of n_folds = 5 samples)
    dirichlet = DirichletCalibrator(reg_lambda=0.0)
    out = held_out(dirichlet, train.as_kind(kind), train.labels, test.as_kind(kind), kind=kind)
    assert_probability_rows(np.exp(out), "held_out")


@FITS
@example(sample=Sample(np.zeros((2, 2)), np.array([0, 1])), kind="probs")
@example(sample=Sample(np.zeros((3, 2)), np.array([0, 0, 1])), kind="probs")
@given(sample=samples(min_n=2, max_n=8), kind=st.sampled_from(KINDS))
def test_xv_with_small_classes(sample, kind):
    """Stratified 2-fold xv (calibrate, DirichletCalibrator's choice of lambda) on N >= 2 samples: a
    CalibInputError that says "Use fewer folds or stratified=False" (calibrate) or names the labels and a given
    penalty (the choice of lambda) exactly when every class has fewer than 2 samples; otherwise valid rows, a
    class smaller than n_folds being absent from some folds.

    Regression: sklearn's StratifiedKFold used to raise a plain ValueError there."""
    x = sample.as_kind(kind)
    with xv_outcome(sample.labels, 2):
        out = calibrate(TemperatureScaling(), x, sample.labels, kind=kind, protocol="xv", n_folds=2)
        assert_probability_rows(np.exp(out), "xv")
    # The penalty's own cross-validation uses fewer folds where it can, and names the fix where no fold is possible.
    refused = folds_rejected(sample.labels, 2)
    penalty_outcome = (
        pytest.raises(CalibInputError, match=r"labels: .*give the penalty \(e.g. reg_lambda=1.0\)")
        if refused
        else contextlib.nullcontext()
    )
    with penalty_outcome:
        model = DirichletCalibrator(lambdas=(0.1,), n_folds=2).fit(x, sample.labels, kind=kind)
        assert_probability_rows(model.predict_proba(x, kind=kind), "DirichletCalibrator cv")
