"""Sample weights in the evaluation: integer weights equal repeated rows for every metric, on the data and on
every resample; agreement with scikit-learn's weighted scores; chunks, groups and refusals.

The interval identity: the weighted pass resamples the original rows (a Poisson count c_i per row, which
its weight multiplies), so resample b of the weighted data equals the metrics of the data in which row i
is repeated c_bi w_i times (not the resamples of the repeated data set, whose copies of a row would each
draw a count of their own: rows are what was sampled).
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, log_loss

from calib.evaluation.data_pass import run_pass
from calib.evaluation.engine import compare, evaluate, evaluate_chunks
from calib.evaluation.passes import poisson_counts
from calib.evaluation.settings import EvaluationSettings
from calib.resampling.bootstrap import counted_resamples
from calib.validation import CalibInputError

SEED = 11
N_BOOT = 6


def _data(n: int, k: int, seed: int):
    rng = np.random.default_rng(seed)
    logits = 1.5 * rng.normal(size=(n, k))
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    labels = (rng.random(n)[:, None] > np.cumsum(probs, axis=1)).sum(axis=1)
    weights = rng.integers(0, 4, n)
    return np.log(probs), labels, weights


def _settings(binning: str, n_boot: int = 0) -> EvaluationSettings:
    return EvaluationSettings(n_boot=n_boot, seed=SEED, binning=binning, n_bins=10, calibrators=())


def _draws(logp, labels, weights, settings):
    done = run_pass(lambda: iter([(logp, labels, None, weights)]), n_classes=logp.shape[1], n_rows=labels.size,
                    settings=settings, costs=None, priors=None, grouped=False, say=lambda _: None,
                    whole_limit=labels.size)  # fmt: skip
    return done.draws()


@pytest.mark.parametrize("k", [2, 3])
@pytest.mark.parametrize("binning", ["equal-width", "equal-mass"])
def test_integer_weights_equal_repeated_rows_for_every_metric_and_group(k, binning):
    logp, labels, weights = _data(1500, k, seed=k)
    groups = np.array(["north", "south", "east"])[np.arange(labels.size) % 3]
    rows = np.repeat(np.arange(labels.size), weights)
    options = {"n_boot": 0, "seed": SEED, "binning": binning, "n_bins": 10, "calibrators": ()}
    weighted = evaluate(logp, labels, kind="logprobs", groups=groups, sample_weight=weights, **options)
    repeated = evaluate(logp[rows], labels[rows], kind="logprobs", groups=groups[rows], **options)
    assert weighted.metrics.keys() == repeated.metrics.keys()
    for name, metric in repeated.metrics.items():
        assert weighted.metrics[name].value == pytest.approx(metric.value, rel=1e-12, abs=1e-15), name
    for mine, theirs in zip(weighted.groups, repeated.groups, strict=True):
        assert mine.group == theirs.group
        assert mine.weight == theirs.n == theirs.weight and mine.n == np.count_nonzero(groups == mine.group)
        for name, metric in theirs.metrics.items():
            assert mine.metrics[name].value == pytest.approx(metric.value, rel=1e-12, abs=1e-15), (mine.group, name)
    for name, bins in repeated.reliability.items():
        for mine, theirs in zip(weighted.reliability[name], bins, strict=True):
            np.testing.assert_allclose(mine.edges, theirs.edges, rtol=0, atol=1e-15)
            np.testing.assert_allclose(mine.counts, theirs.counts, rtol=1e-12)
    assert weighted.weighting.total == weights.sum()


@pytest.mark.parametrize("binning", ["equal-width", "equal-mass"])
def test_each_resample_equals_the_rows_repeated_by_their_count_times_their_weight(binning):
    logp, labels, weights = _data(900, 3, seed=5)
    draws = _draws(logp, labels, weights, _settings(binning, N_BOOT))
    ((_, summed_counts),) = poisson_counts(SEED, 0, labels.size, N_BOOT)  # one block: every row on its own
    (whole_counts,) = counted_resamples(labels.size, n_boot=N_BOOT, seed=np.random.SeedSequence(SEED, spawn_key=(4,)))
    whole = {"smooth ECE", "squared MMCE (unbiased)"}
    for b in range(N_BOOT):
        for names, counts in ((whole, whole_counts[:, b]), (set(draws) - whole, summed_counts[:, b])):
            rows = np.repeat(np.arange(labels.size), counts.astype(np.int64) * weights)
            expected = _draws(logp[rows], labels[rows], None, _settings(binning))
            for name in names:
                # Equal-mass edges stay those of the data on every resample, so the repeated rows are binned on
                # the weighted data's edges: the edges of the repeated data are the resample's own; compare only
                # where the edges do not enter (equal width) or for the metrics without bins.
                if binning == "equal-mass" and "ECE" in name and name != "smooth ECE":
                    continue
                assert draws[name][1 + b] == pytest.approx(expected[name][0], rel=1e-11, abs=1e-14), (b, name)


def test_weighted_accuracy_and_cross_entropy_agree_with_scikit_learn():
    logp, labels, _ = _data(2000, 4, seed=8)
    weights = np.random.default_rng(3).gamma(0.5, 2.0, labels.size)  # not integers
    summary = evaluate(logp, labels, kind="logprobs", sample_weight=weights, n_boot=0, calibrators=())
    probs = np.exp(logp)
    accuracy = accuracy_score(labels, probs.argmax(axis=1), sample_weight=weights)
    assert summary.metrics["accuracy"].value == pytest.approx(accuracy, rel=1e-12)
    # NCE = CE / H(priors) with the empirical priors: here the weighted class frequencies.
    frequencies = np.bincount(labels, weights=weights) / weights.sum()
    entropy = -np.sum(frequencies * np.log(frequencies))
    expected = log_loss(labels, probs, sample_weight=weights) / entropy
    assert summary.metrics["NCE"].value == pytest.approx(expected, rel=1e-10)


def test_scaling_the_weights_changes_no_metric_but_those_that_count_samples():
    logp, labels, weights = _data(1200, 3, seed=2)
    # Equal width: equal-mass boundaries of whole weights are whole ranks, ceil(m W / M), as those of the rows
    # the weights repeat, and of other weights m W / M (calib.calibration_errors.binning.equal_mass_edges).
    options = {"n_boot": 0, "calibrators": (), "binning": "equal-width"}
    once = evaluate(logp, labels, kind="logprobs", sample_weight=weights, **options)
    scaled = evaluate(logp, labels, kind="logprobs", sample_weight=weights / 7.0, **options)
    for name, metric in once.metrics.items():
        if name in ("squared MMCE (unbiased)", "squared ECE top-label (debiased)", "squared ECE class-wise (debiased)"):
            continue  # their bias corrections count N = sum w samples (their docstrings say so)
        # The smooth ECE adds relplot's absolute density offset 1e-4 to a density of total weight sum w, a
        # relative change of about 1e-4 / sum w.
        rel = 1e-5 if name == "smooth ECE" else 1e-12
        assert scaled.metrics[name].value == pytest.approx(metric.value, rel=rel, abs=1e-15), name


def test_chunks_with_weights_equal_the_whole_data_set_with_groups_and_resamples():
    logp, labels, weights = _data(5000, 3, seed=4)
    weights = weights * 0.5
    groups = np.arange(labels.size) % 4
    options = {"n_boot": 20, "seed": SEED, "calibrators": (), "binning": "equal-mass"}
    whole = evaluate(logp, labels, kind="logprobs", groups=groups, sample_weight=weights, **options)
    cuts = [0, 777, 3000, 3001, labels.size]
    pieces = lambda: (  # noqa: E731
        (logp[a:b], labels[a:b], groups[a:b], weights[a:b]) for a, b in zip(cuts[:-1], cuts[1:], strict=True)
    )
    cut = evaluate_chunks(pieces, n_classes=3, kind="logprobs", grouped=True, **options)
    for name, metric in whole.metrics.items():
        got = cut.metrics[name]
        for mine, theirs in ((got.value, metric.value), (got.low, metric.low), (got.high, metric.high)):
            assert mine == pytest.approx(theirs, rel=1e-12, abs=1e-15), name
    assert cut.weighting == whole.weighting
    assert [g.metrics["NCE"].value for g in cut.groups] == pytest.approx([g.metrics["NCE"].value for g in whole.groups])


def test_a_chunk_of_zero_weights_is_allowed_but_all_zero_and_mixed_chunks_are_refused():
    logp, labels, weights = _data(600, 2, seed=6)
    zero = np.zeros(300)
    ok = evaluate_chunks(lambda: iter([(logp[:300], labels[:300], None, zero),
                                       (logp[300:], labels[300:], None, weights[300:] + 1.0)]),
                         n_classes=2, kind="logprobs", n_boot=0, calibrators=())  # fmt: skip
    assert ok.weighting.total == pytest.approx(np.sum(weights[300:] + 1.0))
    with pytest.raises(CalibInputError, match="sample_weight are all 0"):
        evaluate_chunks(lambda: iter([(logp, labels, None, np.zeros(600))]), n_classes=2, kind="logprobs",
                        n_boot=0, calibrators=())  # fmt: skip
    with pytest.raises(CalibInputError, match="some (rows have weights and others none|chunks and None for others)"):
        evaluate_chunks(lambda: iter([(logp[:300], labels[:300], None, None),
                                      (logp[300:], labels[300:], None, weights[300:] + 1.0)]),
                        n_classes=2, kind="logprobs", n_boot=0, calibrators=())  # fmt: skip


@pytest.mark.parametrize(
    ("weights", "problem"),
    [
        (lambda n: np.r_[np.ones(n - 1), -1.0], "must be >= 0; found -1 at index"),
        (lambda n: np.r_[np.ones(n - 1), np.nan], "must be finite; found nan at index"),
        (lambda n: np.r_[np.ones(n - 1), np.inf], "must be finite; found inf at index"),
        (lambda n: np.zeros(n), "are all 0"),
        (lambda n: np.ones(n + 1), "shape"),
        (lambda n: np.array(["a"] * n), "must be numbers"),
    ],
)
def test_bad_weights_are_refused_in_one_line_naming_sample_weight(weights, problem):
    logp, labels, _ = _data(50, 2, seed=1)
    with pytest.raises(CalibInputError, match=problem) as error:
        evaluate(logp, labels, kind="logprobs", sample_weight=weights(labels.size), n_boot=0, calibrators=())
    assert str(error.value).startswith("sample_weight") and "\n" not in str(error.value)


def test_a_weighted_evaluation_says_its_estimand_total_and_effective_size():
    logp, labels, weights = _data(800, 2, seed=9)
    summary = evaluate(logp, labels, kind="logprobs", sample_weight=weights, n_boot=20, calibrators=())
    assert summary.weighting.effective_size == pytest.approx(weights.sum() ** 2 / np.sum(weights**2))
    assert "each resampled row keeps its sample weight" in summary.resampling
    assert all("counted by its weight" in m.estimand for m in summary.metrics.values() if m.estimand)
    tiny = evaluate(logp, labels, kind="logprobs", sample_weight=np.r_[1000.0, np.full(799, 1e-3)], n_boot=0,
                    calibrators=())  # fmt: skip
    assert any("effective sample size" in note for note in tiny.notes)


def test_compare_weighs_every_system_alike():
    logp, labels, weights = _data(700, 3, seed=12)
    other = logp * 0.5
    other -= np.logaddexp.reduce(other, axis=1, keepdims=True)
    rows = np.repeat(np.arange(labels.size), weights)
    weighted = compare([logp, other], labels, names=["a", "b"], sample_weight=weights, n_boot=0)
    repeated = compare([logp[rows], other[rows]], labels[rows], names=["a", "b"], n_boot=0)
    for name, value in repeated.differences[0].items():
        assert weighted.differences[0][name].value == pytest.approx(value.value, rel=1e-12, abs=1e-15), name
    assert weighted.weighting.total == weights.sum()
