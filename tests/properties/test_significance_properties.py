"""Property-based tests of calib's hypothesis tests, bootstrap intervals and evaluation summary.

Properties: p-values in [0, 1], statistics finite and >= 0 where documented, bootstrap low <= high;
deterministic statistics unchanged by permuting the samples (1e-12 relative: chi-squared statistics
can be large); the same results for probs / logprobs / logits (1e-9) and for a float32 array and the
same numbers in float64 (1e-6). Resampling p-values and intervals are seeded draws over sample
positions, so they are exempt from the order property (the SKCE block test documents its dependence
on the order); their statistic on the data is not. Duplication vs weighting (issue property 3):
none of these functions takes weights, and chi-squared statistics grow with N by design, so only
the bootstrap ECE estimate (a mean) is checked to be unchanged by repeating every sample.
"""

from __future__ import annotations

import warnings

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
    folds_rejected,
    permutations_of,
    samples,
)

from calib.calibration_errors.binned import BinnedCalibrationError
from calib.calibration_errors.lenses import TopK
from calib.calibration_errors.simplex_binning import DataDependent, UniformGrid
from calib.evaluation.engine import evaluate
from calib.resampling.bootstrap import bootstrap, bootstrap_ece
from calib.resampling.significance import (
    SmallSampleWarning,
    deviation_diagram,
    hosmer_lemeshow,
    miscalibration_resampling,
    multinomial_hosmer_lemeshow,
    pearson_chi2,
    resampling_test,
    skce_asymptotic_test,
    skce_block_test,
)
from calib.scoring.scores import brier, cross_entropy
from calib.validation import CalibInputError

pytestmark = pytest.mark.filterwarnings("ignore::calib.resampling.significance.SmallSampleWarning")


def _p(value) -> None:
    v = np.asarray(value, dtype=np.float64)
    assert np.all((v >= 0.0) & (v <= 1.0)), f"p-value {v} outside [0, 1]"


def _kinds(fn, sample: Sample, tol: float = KIND_TOL) -> dict:
    """fn(scores, labels, kind) for every kind; asserts the results agree with the probs one."""
    out = {kind: np.asarray(fn(sample.as_kind(kind), sample.labels, kind), dtype=np.float64) for kind in KINDS}
    for kind in ("logprobs", "logits"):
        assert_close(out[kind], out["probs"], tol, f"kinds: {kind} vs probs")
    return out


def _float32(fn, sample: Sample, kind: str) -> None:
    single = sample.as_kind(kind, float32=True)
    assert_close(
        np.asarray(fn(single, sample.labels, kind), dtype=np.float64),
        np.asarray(fn(single.astype(np.float64), sample.labels, kind), dtype=np.float64),
        FLOAT32_TOL,
        "float32",
    )


# --- chi-squared tests ------------------------------------------------------------------------------


@PROPERTY
@given(sample=samples(), data=st.data())
def test_pearson_chi2(sample, data):
    """Statistic >= 0, p in [0, 1]; order-free with the groups; same for every kind and for float32."""
    groups = np.array(data.draw(st.lists(st.integers(0, 2), min_size=sample.n, max_size=sample.n), label="groups"))
    kind = data.draw(st.sampled_from(KINDS), label="kind")

    def fn(s, y, kind, g=groups):
        r = pearson_chi2(s, y, kind=kind, groups=g)
        return [r.statistic, r.p_value, r.df]

    stat, p, _ = fn(sample.as_kind(kind), sample.labels, kind)
    assert stat >= 0.0 and not np.isnan(stat), stat
    _p(p)
    perm = permutations_of(data, sample.n)
    assert_close(
        fn(sample.take(perm).as_kind(kind), sample.labels[perm], kind, groups[perm]), [stat, p, _], ORDER_TOL, "order"
    )
    _kinds(fn, sample)
    _float32(fn, sample, kind)


def _hosmer_lemeshow(s, y, kind, n_bins, multinomial):
    test = multinomial_hosmer_lemeshow if multinomial else hosmer_lemeshow
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SmallSampleWarning)
        r = test(s, y, kind=kind, n_bins=n_bins)
    return [r.statistic, r.p_value, r.df, *r.counts]


@pytest.mark.parametrize("multinomial", [False, True], ids=["binary", "multinomial"])
@PROPERTY
@given(data=st.data())
def test_hosmer_lemeshow(multinomial, data):
    """Statistic >= 0, p in [0, 1]; order-free; same for every kind and for float32."""
    sample = data.draw(samples(k=None if multinomial else 2, min_n=6), label="sample")
    n_bins = data.draw(st.sampled_from([3, 5, 10]), label="n_bins")
    kind = data.draw(st.sampled_from(KINDS), label="kind")

    def fn(s, y, kind):
        return _hosmer_lemeshow(s, y, kind, n_bins, multinomial)

    try:
        value = fn(sample.as_kind(kind), sample.labels, kind)
    except CalibInputError as exc:  # documented: fewer than 3 non-empty bins (tied scores)
        assert "non-empty" in str(exc)
        assume(False)
    assert value[0] >= 0.0 and not np.isnan(value[0]), value
    _p(value[1])
    perm = permutations_of(data, sample.n)
    assert_close(fn(sample.take(perm).as_kind(kind), sample.labels[perm], kind), value, ORDER_TOL, "order")
    _kinds(fn, sample)
    try:
        _float32(fn, sample, kind)
    except CalibInputError as exc:  # rounding to float32 can tie scores: the same documented rejection
        assert "non-empty" in str(exc)


# --- resampling tests ---------------------------------------------------------------------------------


def _top_ece(probs, labels):
    return BinnedCalibrationError("top_label", n_bins=5)(probs, labels, kind="probs")


@settings(PROPERTY, max_examples=15)
@given(sample=samples(min_n=2), data=st.data())
def test_resampling_test(sample, data):
    """p-values in [0, 1] (the +1 form > 0), null statistics finite; observed value order- and kind-free."""
    kind = data.draw(st.sampled_from(KINDS), label="kind")

    def fn(s, y, kind):
        r = resampling_test(_top_ece, s, kind=kind, labels=y, n_resamples=30, seed=1)
        return [r.statistic, r.p_value, r.p_value_plus_one, *r.null_statistics]

    value = fn(sample.as_kind(kind), sample.labels, kind)
    _p(value[1:3])
    assert value[2] > 0.0 and np.all(np.isfinite(value)), value
    perm = permutations_of(data, sample.n)
    assert_close(fn(sample.take(perm).as_kind(kind), sample.labels[perm], kind)[0], value[0], ORDER_TOL, "order")
    _kinds(fn, sample)
    _float32(fn, sample, kind)


BINNINGS = {"grid": UniformGrid(4), "data-dependent": DataDependent(5)}


def _miscalibration(s, y, kind, binning, lens, method):
    r = miscalibration_resampling(
        s,
        y,
        kind=kind,
        binning=BINNINGS[binning],
        distances=("tv", "sq_l2"),
        lens=lens,
        method=method,
        n_resamples=20,
        seed=3,
    )
    return np.concatenate([r.observed, r.p_value, r.p_value_plus_one, r.mean, r.sd])


@pytest.mark.parametrize("method", ["consistency", "labels", "bootstrap"])
@pytest.mark.parametrize("binning", list(BINNINGS))
@settings(PROPERTY, max_examples=12)
@given(data=st.data())
def test_miscalibration_resampling(method, binning, data):
    """p-values in [0, 1], tv in [0, 1]; the observed eta is order-free and eta, the p-values, the mean and
    sd of the resamples are the same for every kind."""
    sample = data.draw(samples(min_n=2), label="sample")
    kind = data.draw(st.sampled_from(KINDS), label="kind")
    lens = data.draw(st.sampled_from([None, TopK(1)]), label="lens")

    def fn(s, y, kind):
        return _miscalibration(s, y, kind, binning, lens, method)

    value = fn(sample.as_kind(kind), sample.labels, kind)
    assert np.all(np.isfinite(value)), value
    _p(value[2:6])
    assert 0.0 <= value[0] <= 1.0 and 0.0 <= value[1] <= 2.0, value[:2]
    _float32(fn, sample, kind)
    perm = permutations_of(data, sample.n)
    assert_close(fn(sample.take(perm).as_kind(kind), sample.labels[perm], kind)[:2], value[:2], ORDER_TOL, "order")
    _kinds(fn, sample)


@settings(PROPERTY, max_examples=15)
@given(sample=samples(min_n=2), data=st.data())
def test_deviation_diagram(sample, data):
    """Consistency bars low <= high, shares sum to 1, deviations in [-1, 1]; the same for every kind."""
    kind = data.draw(st.sampled_from(KINDS), label="kind")
    method = data.draw(st.sampled_from(["consistency", "labels"]), label="method")

    def diagram(s, y, kind):
        return deviation_diagram(
            s, y, kind=kind, binning=UniformGrid(5), lens=TopK(1), method=method, n_resamples=20, seed=2
        )

    def fn(s, y, kind):
        d = diagram(s, y, kind)
        return np.concatenate([d.mean_prediction, d.deviation, d.share, d.low, d.high])

    d = diagram(sample.as_kind(kind), sample.labels, kind)
    assert abs(d.share.sum() - 1.0) <= 1e-12 and np.all(np.abs(d.deviation) <= 1.0)
    both = np.isfinite(d.low) & np.isfinite(d.high)
    assert np.all(d.low[both] <= d.high[both]), (d.low, d.high)
    _kinds(fn, sample)
    _float32(fn, sample, kind)


@settings(PROPERTY, max_examples=20)
# regression: the block estimator's Laplacian kernel of rows 1e-16 apart is 1 up to rounding too (the
# cancellation in |p|^2 + |p'|^2 - 2 p.p' gave 1 - 1e-8 for probs and 1 for logprobs: statistics 7e-9 apart)
@example(
    sample=Sample(np.array([[-2.220446049250313e-16, 0.0, 0.0], *[[0.0, 0.0, 0.0]] * 3]), np.zeros(4, int)),
    kind="probs",
)
@given(sample=samples(min_n=4), kind=st.sampled_from(KINDS))
def test_skce_tests(sample, kind):  # the order property: test_skce_statistic_order
    """Block and asymptotic SKCE tests: p in [0, 1]; statistics and p-values agree for every kind."""

    def fn(s, y, kind):
        block = skce_block_test(s, y, kind=kind, block_size=2, bandwidth=0.5)
        asym = skce_asymptotic_test(s, y, kind=kind, bandwidth=0.5, n_resamples=30, seed=4)
        return [block.statistic, block.p_value, asym.statistic, asym.p_value]

    value = fn(sample.as_kind(kind), sample.labels, kind)
    assert np.all(np.isfinite(value)), value
    _p([value[1], value[3]])
    _kinds(fn, sample)
    _float32(fn, sample, kind)


SKCE_ORDER = (
    Sample(
        np.array(
            [
                [2.0, 1.0],
                [-8.0, -1.0],
                [7.0, -8.0],
                [4.0, -6.0],
                [-7.0, 5.0],
                [-8.0, -4.0],
                [8.0, -3.0],
                [-8.0, -7.0],
                [-1.0, 7.0],
                [-8.0, -0.0],
                [1.0, 8.0],
                [3.0, -1.0],
                [-3.0, 4.0],
            ]
        ),
        np.array([1, 1, 0, 0, 0, 0, 1, 0, 1, 1, 1, 1, 0]),
    ),
    np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 11]),
)


@settings(PROPERTY, max_examples=20)
@example(case=SKCE_ORDER)
@given(case=samples(min_n=4).flatmap(lambda s: st.tuples(st.just(s), st.permutations(range(s.n)))))
def test_skce_statistic_order(case):
    """The asymptotic SKCE test's statistic (the unbiased SKCE) is unchanged by permuting the samples (1e-12).

    Regression: pair distances of close rows are not the square root of the cancellation in
    |p|^2 + |p'|^2 - 2 p.p' (error 1e-16 / distance), which made the statistic depend on the order."""
    sample, perm = case
    perm = np.asarray(perm)
    x = sample.as_kind("probs")
    base = skce_asymptotic_test(x, sample.labels, kind="probs", bandwidth=0.5, n_resamples=5).statistic
    moved = skce_asymptotic_test(x[perm], sample.labels[perm], kind="probs", bandwidth=0.5, n_resamples=5)
    assert_close(moved.statistic, base, ORDER_TOL, "order")


# --- regression: resampled statistics equal to the observed one (up to rounding) count as ties --------


def _skce_asymptotic(s, y, kind):
    return skce_asymptotic_test(s, y, kind=kind, bandwidth=0.5, n_resamples=30, seed=4).p_value


def _miscalibration_p(s, y, kind):
    r = miscalibration_resampling(s, y, kind=kind, binning=UniformGrid(4), method="labels", n_resamples=20, seed=3)
    return [*r.p_value, *r.p_value_plus_one]


P_VALUE_TIES = {"miscalibration_resampling": _miscalibration_p, "skce_asymptotic_test": _skce_asymptotic}


@pytest.mark.parametrize("name", list(P_VALUE_TIES))
@settings(PROPERTY, max_examples=15)
# minimal falsifying examples of earlier calib versions: for miscalibration_resampling p = 0.2 (probs)
# vs 0.05 (logprobs), for skce_asymptotic_test p = 1.0 (probs) vs 0.71 (logprobs)
@example(sample=Sample(np.zeros((2, 6)), np.array([0, 0])))
@example(sample=Sample(np.array([[-0.5, 1.0, 0.5], [-1.0, -0.5, 1.0], [0.0, -1.0, 0.5]]), np.array([2, 2, 0])))
@given(sample=samples(min_n=2, max_n=8))
def test_resampling_p_value_ties(name, sample):
    """The seeded p-values of a resampling test are the same for probs, logprobs and logits.

    Regression: resampled statistics equal to the observed one in exact arithmetic (all-equal labels,
    Rademacher signs all +1 or all -1) count in p = #{T_j >= T} / R whatever the rounding."""
    _kinds(P_VALUE_TIES[name], sample)


# --- bootstrap ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("view", ["top_label", "binary", "classwise"])
@PROPERTY
@given(data=st.data())
def test_bootstrap_ece(view, data):
    """low <= high; the estimate is the direct ECE (1e-12), in [0, 1], order- and duplication-free; kinds agree."""
    sample = data.draw(samples(k=2 if view == "binary" else None), label="sample")
    kind = data.draw(st.sampled_from(KINDS), label="kind")

    def fn(s, y, kind):
        r = bootstrap_ece(s, y, kind=kind, estimator=BinnedCalibrationError(view, n_bins=10), n_boot=40, seed=5)
        return np.concatenate([r.estimate, r.low, r.high])

    est, low, high = fn(sample.as_kind(kind), sample.labels, kind)
    assert np.all(np.isfinite([est, low, high])) and low <= high and 0.0 <= est <= 1.0, (est, low, high)
    assert_close(
        est,
        BinnedCalibrationError(view, n_bins=10)(sample.as_kind(kind), sample.labels, kind=kind),
        ORDER_TOL,
        "direct",
    )
    perm = permutations_of(data, sample.n)
    assert_close(fn(sample.take(perm).as_kind(kind), sample.labels[perm], kind)[0], est, ORDER_TOL, "order")
    doubled = sample.take(np.repeat(np.arange(sample.n), 2))
    assert_close(fn(doubled.as_kind(kind), doubled.labels, kind)[0], est, ORDER_TOL, "equal duplication")
    _kinds(fn, sample)
    _float32(fn, sample, kind)


@settings(PROPERTY, max_examples=15)
@given(sample=samples(present=2, min_n=3), data=st.data())
def test_bootstrap_generic(sample, data):
    """bootstrap() of (CE, Brier): low <= high for each, the estimate is the statistic on the data."""
    kind = data.draw(st.sampled_from(KINDS), label="kind")
    x = sample.as_kind(kind)

    def stat(s, y, groups):
        return [cross_entropy(s, y, kind=kind), brier(s, y, kind=kind, scaling="sum")]

    r = bootstrap(stat, x, sample.labels, n_boot=30, seed=6)
    assert np.all(r.low <= r.high) and np.all(np.isfinite(r.values)), (r.low, r.high)
    assert_close(r.estimate, stat(x, sample.labels, None), 0.0, "estimate")


# --- calib.evaluation.engine.evaluate ---------------------------------------------------------------------


def _evaluate(s, y, kind, n_boot=12):
    """evaluate(), or the documented rejections: a bootstrap resample lacks a class (NCE / NBS undefined),
    or no class has 5 samples (the 5-fold stratified RCL); either skips the example."""
    small = folds_rejected(y, 5)
    try:
        summary = evaluate(s, y, kind=kind, n_boot=n_boot, seed=7)
    except CalibInputError as exc:
        assert "resample" in str(exc) or (small and "needs a class with at least 5 samples" in str(exc)), exc
        assume(False)
    assert not small, "5-fold RCL without a class of 5 samples"
    return summary


@settings(PROPERTY, max_examples=6)
@given(sample=samples(present="all", max_k=4, min_n=12), data=st.data())
def test_evaluate_summary(sample, data):
    """Finite metrics, low <= high, RCL <= 1 (<= 100 %), ECEs in [0, 1] (their debiased forms in [-1, 1], with
    upper bounds from 0); point metrics order- and kind-free."""
    kind = data.draw(st.sampled_from(KINDS), label="kind")
    summary = _evaluate(sample.as_kind(kind), sample.labels, kind)
    for name, m in summary.metrics.items():
        if name.startswith("RCL"):
            # -inf when a fold's histogram bin holds no sample of a test label (probability 0): documented CE
            assert not np.isnan(m.value) and m.value <= 1.0, (name, m)
            continue
        assert np.isfinite(m.value), (name, m)
        assert m.low <= m.high, (name, m)
        if name.startswith(("NCE", "NBS", "NRisk")):
            assert m.value >= 0.0, (name, m)
        if name.endswith(("(debiased)", "(unbiased)")):  # unbiased for errors that can be 0: may fall below it
            assert -1.0 <= m.value <= 1.0 and m.low == 0.0, (name, m)
        elif "ECE" in name or name == "accuracy":
            assert 0.0 <= m.value <= 1.0, (name, m)
    # Point metrics and intervals: not RCL (its 5 folds are seeded by position and a fold can be separable)
    point = {k: [m.value, m.low, m.high] for k, m in summary.metrics.items() if not k.startswith("RCL")}
    other = data.draw(st.sampled_from([k for k in KINDS if k != kind]), label="other kind")
    again = _evaluate(sample.as_kind(other), sample.labels, other)
    for name, values in point.items():
        m = again.metrics[name]
        assert_close([m.value, m.low, m.high], values, KIND_TOL, f"kinds: {name}")
    perm = permutations_of(data, sample.n)
    shuffled = _evaluate(sample.take(perm).as_kind(kind), sample.labels[perm], kind, n_boot=0)
    for name, values in point.items():
        assert_close(shuffled.metrics[name].value, values[0], ORDER_TOL, f"order: {name}")
