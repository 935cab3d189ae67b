"""calib.evaluation: the engine's metrics equal the library's metric functions (on the data and on every
Poisson resample), a chunked pass equals one pass, subgroups are tested and flagged as planted, the
settings reach every metric, and a metric registered once appears everywhere."""

from __future__ import annotations

import json

import numpy as np
import pytest

import calib.evaluation.data_pass
import calib.evaluation.passes
import calib.evaluation.progress
import calib.evaluation.settings
from calib.calibration_errors.binned import BinnedCalibrationError
from calib.calibration_errors.corp import corp_decomposition
from calib.calibration_errors.entropic import ecd
from calib.calibration_errors.kernel_calibration import mmce
from calib.calibration_errors.smoothing import smooth_ece_top_label
from calib.cli import main
from calib.evaluation.data_pass import run_pass
from calib.evaluation.engine import compare, evaluate, evaluate_chunks
from calib.evaluation.metrics import REGISTRY, MetricDefinition, Terms, register
from calib.evaluation.passes import poisson_counts, subsample_keys
from calib.evaluation.settings import EvaluationSettings
from calib.evaluation.subgroups import holm
from calib.scoring.decisions import normalized_risk, zero_one_costs
from calib.scoring.scores import brier, cross_entropy
from calib.validation import CalibInputError, CalibInputWarning, check_inputs


def reference_metrics(logp, labels, costs, priors=None, n_bins=15) -> dict[str, float]:
    """The engine's metrics computed one by one by the library's metric functions, each of which
    validates its input and sums in its own way: the independent reference of the engine's sums."""
    out = {
        "accuracy": float(np.mean(logp.argmax(axis=1) == labels)),
        "NCE": cross_entropy(logp, labels, kind="logprobs", priors=priors, normalize=True),
        "NBS": brier(logp, labels, kind="logprobs", scaling="mean", priors=priors, normalize=True),
    }
    out |= {f"NRisk {n}": normalized_risk(logp, labels, c, kind="logprobs", priors=priors) for n, c in costs.items()}
    lenses = {"ECE top-label": "top_label"}
    lenses |= {"ECE positive class": "binary"} if logp.shape[1] == 2 else {"ECE class-wise": "classwise"}
    for name, target in lenses.items():
        out[name] = BinnedCalibrationError(target, n_bins=n_bins)(logp, labels, kind="logprobs")
        squared = BinnedCalibrationError(target, n_bins=n_bins, norm="squared", debiased=True)
        out[f"squared {name} (debiased)"] = squared(logp, labels, kind="logprobs")
    out["smooth ECE"] = smooth_ece_top_label(logp, labels, kind="logprobs")
    out["squared MMCE (unbiased)"] = mmce(logp, labels, kind="logprobs", bandwidth=0.4, estimator="unbiased")
    out["ECD"] = ecd(logp, labels, kind="logprobs")
    return out


def _numbers(metric) -> tuple[float, float, float]:
    return metric.value, metric.low, metric.high


def _logits(seed: int, n: int, k: int):
    rng = np.random.default_rng(seed)
    return check_inputs(2.0 * rng.normal(size=(n, k)), rng.integers(0, k, n), "logits")


@pytest.mark.parametrize(("k", "priors", "n_bins"), [(2, None, 15), (4, None, 10), (4, [0.1, 0.2, 0.3, 0.4], 7)])
def test_every_metric_equals_the_library_function_on_the_data_and_on_each_poisson_resample(k, priors, n_bins):
    logp, y = _logits(k, 300, k)
    costs = {"0-1": zero_one_costs(k), "skewed": np.abs(np.random.default_rng(1).normal(size=(k, k))) * (1 - np.eye(k))}
    settings = EvaluationSettings(n_boot=6, seed=3, n_bins=n_bins, calibrators=())
    done = run_pass(lambda: iter([(logp, y, None, None)]), n_classes=k, n_rows=300, settings=settings, costs=costs,
                    priors=priors, grouped=False, say=lambda _: None, whole_limit=300)  # fmt: skip
    draws = done.draws()
    ((_, counts),) = poisson_counts(3, 0, 300, 6)  # one block: the resamples' draw counts of each row
    rows = [np.arange(300)] + [np.repeat(np.arange(300), counts[:, j].astype(int)) for j in range(6)]
    expected = [reference_metrics(logp[r], y[r], costs, priors, n_bins) for r in rows]
    assert sorted(draws) == sorted(expected[0])
    for name, values in draws.items():
        if name in ("smooth ECE", "squared MMCE (unbiased)"):  # multinomial resamples of their own: data only
            np.testing.assert_allclose(values[0], expected[0][name], rtol=1e-12)
            continue
        # class and bin sums are added in another order than the functions' means: float rounding only
        np.testing.assert_allclose(values, [m[name] for m in expected], rtol=1e-13, atol=1e-15, err_msg=name)


def test_n_bins_10_on_the_command_line_equals_an_independent_10_bin_ece(tmp_path, capsys):
    rng = np.random.default_rng(5)
    probs = rng.dirichlet([0.6, 0.6, 0.6], size=2000)
    labels = np.array([rng.choice(3, p=p**1.5 / (p**1.5).sum()) for p in probs])
    np.savez(tmp_path / "s.npz", scores=probs, labels=labels)
    assert main(["evaluate", str(tmp_path / "s.npz"), "--n-bins", "10", "--json", "--quiet", "--n-boot", "0",
                 "--calibrators", "none"]) == 0  # fmt: skip
    metrics = {m["metric"]: m["value"] for m in json.loads(capsys.readouterr().out)["metrics"]}
    # Top-label ECE by hand: 10 right-closed equal-width bins, the lowest holding 0.
    confidence, correct = probs.max(axis=1), probs.argmax(axis=1) == labels
    bins = np.clip(np.ceil(confidence * 10).astype(int) - 1, 0, 9)
    gaps = [abs(np.sum(correct[bins == b] - confidence[bins == b])) for b in range(10)]
    assert metrics["ECE top-label"] == pytest.approx(sum(gaps) / probs.shape[0], rel=1e-12)
    main(["evaluate", str(tmp_path / "s.npz"), "--json", "--quiet", "--n-boot", "0", "--calibrators", "none"])
    default = json.loads(capsys.readouterr().out)
    assert default["settings"]["n_bins"] == 15  # the option reached the metric: 15 bins give another value
    assert {m["metric"]: m["value"] for m in default["metrics"]}["ECE top-label"] != metrics["ECE top-label"]


@pytest.mark.parametrize("binning", ["equal-width", "equal-mass"])
def test_a_chunked_pass_equals_one_pass_for_random_chunkings(binning, monkeypatch):
    monkeypatch.setattr(calib.evaluation.passes, "BLOCK_ROWS", 700)  # several blocks on a small set
    rng = np.random.default_rng(11)
    logp, y = _logits(11, 5000, 3)
    groups = rng.choice(np.array(["north", "south", "east"]), 5000)
    options = dict(n_boot=30, seed=2, calibrators=("temperature",), binning=binning, fit_samples=1500)
    whole = evaluate(logp, y, kind="logprobs", groups=groups, **options)
    for _ in range(3):  # three random chunkings
        edges = np.sort(rng.choice(np.arange(1, 5000), size=rng.integers(1, 40), replace=False))
        parts = np.split(np.arange(5000), edges)
        chunked = evaluate_chunks(lambda parts=parts: ((logp[p], y[p], groups[p]) for p in parts), n_classes=3,
                                  kind="logprobs", grouped=True, n_rows=5000, **options)  # fmt: skip
        for name, m in whole.metrics.items():
            assert chunked.metrics[name].method == m.method
            np.testing.assert_allclose(_numbers(chunked.metrics[name]), _numbers(m), rtol=1e-12)
        assert [g.group for g in chunked.groups] == [g.group for g in whole.groups]
        for a, b in zip(chunked.groups, whole.groups, strict=True):
            assert a.n == b.n and a.p_adjusted == pytest.approx(b.p_adjusted, rel=1e-12)
            for name, m in b.metrics.items():
                np.testing.assert_allclose(a.metrics[name].value, m.value, rtol=1e-12)
        assert chunked.gains == whole.gains


def _segments(n: int, planted: float, seed: int):
    """Binary posteriors of ``n`` rows in 10 segments, calibrated except segment "s9" (2 % of the rows),
    whose outcomes follow the probabilities pushed towards 1/2 (an overconfident model there)."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.98, n)
    segment = np.where(rng.random(n) < planted, 9, rng.integers(0, 9, n))
    truth = np.where(segment == 9, 0.5 + 0.6 * (p - 0.5), p)
    y = (rng.random(n) < truth).astype(int)
    return np.column_stack([1 - p, p]), y, np.array([f"s{s}" for s in segment])


def test_a_planted_miscalibrated_two_percent_segment_of_a_million_rows_is_flagged_and_no_other():
    probs, y, segments = _segments(10**6, 0.02, seed=3)
    summary = evaluate(probs, y, kind="probs", groups=segments, group_column="segment", n_boot=0, calibrators=())
    flagged = {row.group for row in summary.groups if row.flagged}
    assert flagged == {"s9"}
    rows = {row.group: row for row in summary.groups}
    assert rows["s9"].n == np.sum(segments == "s9") and 15_000 < rows["s9"].n < 25_000
    assert sum(row.n for row in summary.groups) == 10**6


def test_calibrated_groups_are_flagged_in_at_most_five_percent_of_data_sets():
    # Holm's adjustment keeps the chance of any false flag among the groups at 0.05 at most; 200 data sets
    # of calibrated groups: the flagged share with three binomial standard deviations of Monte-Carlo error.
    runs = 200
    flagged = 0
    for seed in range(runs):
        rng = np.random.default_rng(seed)
        p = rng.uniform(0.05, 0.95, 2000)
        y = (rng.random(2000) < p).astype(int)
        groups = rng.integers(0, 5, 2000)
        summary = evaluate(np.column_stack([1 - p, p]), y, kind="probs", groups=groups, n_boot=0, calibrators=())
        flagged += any(row.flagged for row in summary.groups)
    assert flagged / runs <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs)


def test_holm_adjustment_equals_its_definition():
    # Holm (1979): sorted p_(i) times (m - i + 1), running maximum, capped at 1
    p = [0.01, 0.04, 0.03, 0.2, float("nan")]
    assert holm(p)[:4] == pytest.approx([0.04, 0.09, 0.09, 0.2]) and np.isnan(holm(p)[4])
    assert holm([0.5, 0.6]) == [1.0, 1.0]


@pytest.fixture
def mean_confidence():
    definition = register(
        MetricDefinition(
            name="mean confidence",
            reads="the top label's confidence",
            terms=lambda batch, ctx: {"confidence": Terms(batch.confidence), "n": Terms(np.ones(batch.labels.size))},
            value=lambda sums, ctx: {"mean confidence": sums["confidence"][0] / sums["n"][0]},
            bounds=(0.0, 1.0),
        )
    )
    yield definition
    del REGISTRY["mean confidence"]


def test_a_metric_registered_once_appears_in_evaluate_compare_bootstrap_and_the_command(
    mean_confidence, tmp_path, capsys
):
    logp, y = _logits(4, 500, 3)
    expected = float(np.mean(np.exp(logp).max(axis=1)))
    summary = evaluate(logp, y, kind="logprobs", n_boot=40, calibrators=())
    m = summary.metrics["mean confidence"]
    assert m.value == pytest.approx(expected, rel=1e-12) and m.low < m.value < m.high  # bootstrapped
    sharper = logp * 1.5
    sharper -= np.logaddexp.reduce(sharper, axis=1, keepdims=True)
    comparison = compare([logp, sharper], y, names=["raw", "sharp"], n_boot=40)
    assert comparison.metrics[0]["mean confidence"] == pytest.approx(expected, rel=1e-12)
    difference = comparison.differences[0]["mean confidence"]
    assert difference.value > 0 and 0 < difference.low < difference.high  # paired: sharper is more confident
    np.savez(tmp_path / "s.npz", scores=np.exp(logp), labels=y)
    assert main(["evaluate", str(tmp_path / "s.npz"), "--json", "--quiet", "--n-boot", "20",
                 "--calibrators", "none", "--metrics", "mean confidence", "NCE"]) == 0  # fmt: skip
    document = json.loads(capsys.readouterr().out)
    assert [m["metric"] for m in document["metrics"]] == ["NCE", "mean confidence"]
    # the figures still read the lens's bins when --metrics leaves its ECE out
    assert document["reliability"][0]["metric"] == "ECE top-label"


def test_unknown_settings_are_named_by_their_option_and_the_advice_holds(tmp_path, capsys):
    rng = np.random.default_rng(0)
    p = rng.uniform(0.1, 0.9, 8)
    np.savez(tmp_path / "tiny.npz", scores=np.column_stack([1 - p, p]), labels=np.array([0, 1] * 4))
    file = str(tmp_path / "tiny.npz")
    assert main(["evaluate", file, "--quiet", "--n-bins", "0"]) == 2
    assert "--n-bins must be an integer from 1 to 10000; got 0" in capsys.readouterr().err
    assert main(["evaluate", file, "--quiet", "--calibrators", "platypus"]) == 1
    assert "--calibrators: unknown 'platypus'" in capsys.readouterr().err
    assert main(["evaluate", file, "--quiet", "--metrics", "ECE class-wise"]) == 1
    assert "--metrics ['ECE class-wise'] are not among the metrics" in capsys.readouterr().err
    assert main(["evaluate", file, "--quiet"]) == 1  # 4 samples per class for 5 folds
    error = capsys.readouterr().err
    assert "(--calibrators none)" in error
    assert main(["evaluate", file, "--quiet", "--calibrators", "none", "--json", "--n-boot", "0"]) == 0
    metrics = {m["metric"]: m["value"] for m in json.loads(capsys.readouterr().out)["metrics"]}
    assert metrics["accuracy"] == np.mean((p > 0.5) == np.array([0, 1] * 4))


def test_groups_need_a_table_column(tmp_path, capsys):
    np.savez(tmp_path / "s.npz", scores=np.full((4, 2), 0.5), labels=np.array([0, 1, 0, 1]))
    assert main(["evaluate", str(tmp_path / "s.npz"), "--groups", "site"]) == 2
    assert "groups are read from columns of a table" in capsys.readouterr().err


def test_the_groups_of_a_table_in_the_json_document_and_files(tmp_path, capsys):
    import pandas as pd

    probs, y, segments = _segments(20_000, 0.1, seed=8)
    frame = pd.DataFrame({"no": probs[:, 0], "yes": probs[:, 1], "label": np.where(y == 1, "yes", "no"),
                          "segment": segments})  # fmt: skip
    frame.to_csv(tmp_path / "s.csv", index=False)
    args = ["evaluate", str(tmp_path / "s.csv"), "--groups", "segment", "--json", "--quiet", "--n-boot", "20",
            "--calibrators", "none", "--out", str(tmp_path / "out")]  # fmt: skip
    assert main(args) == 0
    groups = json.loads(capsys.readouterr().out)["groups"]
    assert groups["column"] == "segment"
    rows = {row["group"]: row for row in groups["rows"]}
    assert sorted(rows) == sorted(set(segments)) and sum(r["n"] for r in rows.values()) == 20_000
    assert [g for g, r in rows.items() if r["flagged"]] == ["s9"]
    for group, row in rows.items():
        own = frame[frame.segment == group]
        expected = cross_entropy(own[["no", "yes"]].to_numpy(), (own.label == "yes").to_numpy().astype(int),
                                 kind="probs", normalize=True)  # fmt: skip
        nce = {m["metric"]: m for m in row["metrics"]}["NCE"]
        assert nce["value"] == pytest.approx(expected, rel=1e-12) and nce["low"] <= nce["high"]
        assert row["p_value"] <= row["p_adjusted"] <= 1
    table = pd.read_csv(tmp_path / "out" / "groups.csv")
    assert sorted(table.group) == sorted(rows) and table.flagged.sum() == 1
    assert (tmp_path / "out" / "groups.png").stat().st_size > 0


def test_long_phases_report_progress_with_the_time_left(monkeypatch):
    now = iter([0.0, 1.0, 3.0, 3.5, 10.0])  # start, then after each step
    monkeypatch.setattr(calib.evaluation.progress.time, "perf_counter", lambda: next(now))
    lines = []
    phase = calib.evaluation.progress.Phase("bootstrap", 8, lines.append)
    for steps in (1, 2, 1, 4):
        phase.advance(steps)
    # 1 s after the start nothing yet (lines at most every 2 s); then the rate so far gives the time left
    assert lines == ["bootstrap 3/8 (3 s, about 5 s left)", "bootstrap 8/8 (10.0 s)"]


def test_a_single_class_is_named_before_any_metric():
    logp, y = check_inputs(np.zeros((6, 2)), np.ones(6, dtype=int), "logits")
    with pytest.raises(CalibInputError, match="labels hold a single class"):
        evaluate(logp, y, kind="logprobs", calibrators=())


@pytest.mark.parametrize("limit", [1, 50, 400, 5000])
def test_a_subsample_offered_block_by_block_holds_the_smallest_keys_in_their_order(limit):
    rng = np.random.default_rng(limit)
    keys = rng.random(20_000)
    keys[[3, 7000, 15000]] = np.sort(keys)[limit - 1]  # ties at the limit: the first offered are kept
    rows = np.arange(keys.size)
    sample = calib.evaluation.passes.Subsample(limit)
    for start in range(0, keys.size, 700):
        sample.offer(keys[start : start + 700], rows[start : start + 700])
    below, tied = np.flatnonzero(keys < np.sort(keys)[limit - 1]), np.flatnonzero(keys == np.sort(keys)[limit - 1])
    expected = np.sort(np.concatenate([below, tied[: limit - below.size]]))
    np.testing.assert_array_equal(sample.arrays[0], expected)
    np.testing.assert_array_equal(sample.keys, keys[expected])


def test_calibrators_on_a_subsample_are_the_evaluation_of_that_subsample():
    logp, y = _logits(21, 900, 3)
    capped = evaluate(logp, y, kind="logprobs", n_boot=30, seed=4, fit_samples=400)
    subset = np.sort(np.argsort(subsample_keys(4, 0, 900))[:400])
    assert capped.fit_samples == 400
    alone = evaluate(logp[subset], y[subset], kind="logprobs", n_boot=30, seed=4, fit_samples=None)
    for name, m in capped.metrics.items():
        if name.startswith("RCL"):
            np.testing.assert_allclose(m.value, alone.metrics[name].value, rtol=1e-12, err_msg=name)
    for name, g in capped.gains.items():
        np.testing.assert_allclose(_numbers(g), _numbers(alone.gains[name]), rtol=1e-12)
    everything = evaluate(logp, y, kind="logprobs", n_boot=30, seed=4, fit_samples=None)
    assert everything.fit_samples == 900
    assert {k: v for k, v in capped.metrics.items() if not k.startswith("RCL")} == {
        k: v for k, v in everything.metrics.items() if not k.startswith("RCL")
    }


@pytest.mark.parametrize("k", [2, 4])
def test_evaluate_decomposes_the_scores_of_its_binary_view(k):
    logp, y = _logits(k, 600, k)
    corp = evaluate(logp, y, kind="logprobs", n_boot=20, calibrators=()).corp
    probs = np.exp(logp)
    if k == 2:
        x, outcome = probs[:, 1], y == 1
    else:
        x, outcome = probs.max(axis=1), probs.argmax(axis=1) == y
    for score in ("brier", "log"):
        d = corp_decomposition(x, outcome, score=score)
        # the same function of the same floats (exp of the validated log-posteriors): rounding only
        assert (corp.scores[score].mcb, corp.scores[score].dsc) == pytest.approx((d.mcb, d.dsc), rel=1e-12)
        assert 0 < corp.scores[score].p_value <= 1
    assert corp.lens == ("positive class" if k == 2 else "top label") and corp.resamples == 20


def test_settings_take_numpy_integers_and_refuse_floats():
    assert EvaluationSettings(n_bins=np.int64(10), seed=np.uint32(3)).n_bins == 10
    with pytest.raises(CalibInputError, match="n_bins must be an integer"):
        EvaluationSettings(n_bins=10.0)


def test_poisson_counts_follow_the_poisson_distribution_and_a_short_block_is_a_prefix():
    from scipy.stats import chisquare, poisson

    ((_, counts),) = poisson_counts(7, 3, 200_000, 10)
    observed = np.bincount(counts.astype(int).ravel(), minlength=8)[:8]
    expected = poisson.pmf(np.arange(8), 1.0) * counts.size
    expected[-1] += counts.size - expected.sum()  # 7 or more
    observed[-1] += counts.size - observed.sum()
    assert chisquare(observed, expected).pvalue > 1e-3
    ((_, short),) = poisson_counts(7, 3, 1234, 10)
    np.testing.assert_array_equal(short, counts[:1234])


def test_a_phase_whose_estimated_total_falls_short_stops_giving_time_left(monkeypatch):
    now = iter([0.0, 3.0, 6.0, 9.0])
    monkeypatch.setattr(calib.evaluation.progress.time, "perf_counter", lambda: next(now))
    lines = []
    phase = calib.evaluation.progress.Phase("reading", 4, lines.append, unit="rows")  # a CSV's estimate
    for steps in (3, 3, 3):
        phase.advance(steps)
    assert lines == ["reading 3/4 rows (3 s, about 1 s left)", "reading 6 rows (6 s)", "reading 9 rows (9 s)"]


def test_a_missing_group_is_named_by_its_line(tmp_path, capsys):
    import pandas as pd

    frame = pd.DataFrame({"no": [0.4, 0.7, 0.2], "yes": [0.6, 0.3, 0.8], "label": ["yes", "no", "yes"],
                          "site": ["a", None, "b"]})  # fmt: skip
    frame.to_csv(tmp_path / "s.csv", index=False)
    assert main(["evaluate", str(tmp_path / "s.csv"), "--groups", "site", "--quiet"]) == 1
    assert "1 rows have no group in 'site' (first at line 3)" in capsys.readouterr().err


def test_counts_drawn_as_read_equal_counts_drawn_ahead(monkeypatch):
    logp, y = _logits(6, 800, 3)
    groups = np.random.default_rng(6).integers(0, 3, 800)
    ahead = evaluate(logp, y, kind="logprobs", groups=groups, n_boot=70, calibrators=())
    monkeypatch.setattr(calib.evaluation.data_pass, "COUNT_BYTES", 0)  # every block drawn as it is read
    lazy = evaluate(logp, y, kind="logprobs", groups=groups, n_boot=70, calibrators=())
    assert lazy.metrics == ahead.metrics and [g.metrics for g in lazy.groups] == [g.metrics for g in ahead.groups]


def test_the_ecd_interval_of_underconfident_ten_class_posteriors_holds_its_estimate():
    # One datum's ECD term goes below the two-class floor -0.27846 when K > 2; an interval clipped there was
    # [-0.278, -0.278] around an estimate of -0.645.
    from scipy.special import softmax

    rng = np.random.default_rng(0)
    logits = 4 * rng.normal(size=(3000, 10))
    labels = (logits + rng.gumbel(size=logits.shape)).argmax(axis=1)  # drawn from softmax(logits)
    summary = evaluate(softmax(logits / 4, axis=1), labels, kind="probs", n_boot=100, calibrators=())
    ecd = summary.metrics["ECD"]
    assert ecd.value < -0.5 and ecd.low < ecd.value < ecd.high


def test_bins_times_resamples_past_the_memory_bound_are_refused_and_the_advised_resamples_run(monkeypatch):
    # A small bound stands for the 2 GiB one, so that following the advice runs in a test.
    monkeypatch.setattr(calib.evaluation.settings, "MAX_BINNED_SUMS_BYTES", 2**20)
    rng = np.random.default_rng(1)
    probs, labels = rng.dirichlet([1, 1, 1], size=300), rng.integers(0, 3, 300)
    with pytest.raises(CalibInputError, match=r"ask for at most (\d+) resamples \(n_boot=\d+\)") as raised:
        evaluate(probs, labels, kind="probs", n_bins=100, n_boot=1000, calibrators=())
    advised = int(raised.value.args[0].split("n_boot=")[1].split(")")[0])
    assert 2 <= advised < 1000
    summary = evaluate(probs, labels, kind="probs", n_bins=100, n_boot=advised, calibrators=())
    without = evaluate(probs, labels, kind="probs", n_bins=100, n_boot=0, calibrators=())
    # the point estimate is summed along with the resamples, in another order: equal to rounding
    assert summary.metrics["ECE top-label"].value == pytest.approx(without.metrics["ECE top-label"].value, rel=1e-12)
    assert summary.metrics["ECE top-label"].low <= summary.metrics["ECE top-label"].high


def test_a_dataframes_columns_are_its_classes_by_name_in_any_order():
    import pandas as pd

    rng = np.random.default_rng(2)
    probs = rng.dirichlet(np.ones(4), size=500)
    y = np.array([rng.choice(4, p=p) for p in probs])
    names = np.array(["alpha", "beta", "mu", "zeta"])
    frame, text = pd.DataFrame(probs, columns=names), pd.Series(names[y])
    reference = evaluate(probs, y, kind="probs", n_boot=0, calibrators=()).metrics
    shuffled = frame[["mu", "zeta", "alpha", "beta"]]
    for scores, labels in ((frame, text), (shuffled, text), (shuffled, text.to_numpy()), (shuffled, list(text))):
        # the same numbers in another column order: sums over the classes differ only by rounding
        metrics = evaluate(scores, labels, kind="probs", n_boot=0, calibrators=()).metrics
        assert metrics["NCE"].value == pytest.approx(reference["NCE"].value, rel=1e-12)
        assert metrics["accuracy"].value == reference["accuracy"].value
    numbered = pd.DataFrame(probs[:, [2, 0, 3, 1]], columns=[2, 0, 3, 1])  # a pivot's numbers, out of order
    metrics = evaluate(numbered, y, kind="probs", n_boot=0, calibrators=()).metrics
    assert metrics["NCE"].value == pytest.approx(reference["NCE"].value, rel=1e-12)
    with pytest.warns(CalibInputWarning, match=r"label k is read as the k-th class column \(0: mu, 1: zeta"):
        positional = evaluate(shuffled, y, kind="probs", n_boot=0, calibrators=())
    assert positional.notes and "0: mu, 1: zeta" in positional.notes[0]  # said in the summary too
    mapped = evaluate(shuffled, y, kind="probs", n_boot=0, calibrators=(),
                      label_values={0: "alpha", 1: "beta", 2: "mu", 3: "zeta"})  # the advised mapping, by name
    assert mapped.metrics["NCE"].value == pytest.approx(reference["NCE"].value, rel=1e-12) and not mapped.notes


def test_labels_whose_index_is_not_the_dataframes_are_refused_and_the_advised_alignment_runs():
    import pandas as pd

    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.ones(3), size=300)
    frame = pd.DataFrame(probs, columns=["a", "b", "c"])
    labels = pd.Series(np.array(["a", "b", "c"])[rng.integers(0, 3, 300)]).sample(frac=1, random_state=0)
    with pytest.raises(CalibInputError, match=r"align them first \(labels\.loc\[scores\.index\]\)"):
        evaluate(frame, labels, kind="probs")
    aligned = evaluate(frame, labels.loc[frame.index], kind="probs", n_boot=0, calibrators=())
    by_hand = evaluate(probs, labels.sort_index().map({"a": 0, "b": 1, "c": 2}).to_numpy(), kind="probs", n_boot=0,
                       calibrators=())  # fmt: skip
    assert aligned.metrics["NCE"].value == by_hand.metrics["NCE"].value


def test_python_arguments_of_the_wrong_shape_get_one_error_naming_them_and_the_advised_form_runs():
    import pandas as pd

    rng = np.random.default_rng(5)
    probs, y = rng.dirichlet(np.ones(3), size=300), rng.integers(0, 3, 300)
    frame = pd.DataFrame(probs, columns=["a", "b", "c"])
    quick = {"n_boot": 0, "calibrators": ()}
    costs = np.ones((3, 3)) - np.eye(3)
    wrong_and_right = [
        ({"bootstrap": 0}, "did you mean n_boot?", {"n_boot": 0}),
        ({"costs": costs}, "costs must be a mapping of a name to a (K, D) cost matrix", {"costs": {"0-1": costs}}),
        ({"priors": {"a": 0.5, "b": 0.5}}, "priors must name each class of scores once (a, b, c)",
         {"priors": {"a": 0.2, "b": 0.3, "c": 0.5}}),
    ]  # fmt: skip
    for wrong, fragment, right in wrong_and_right:
        with pytest.raises(CalibInputError) as raised:
            evaluate(frame, y, kind="probs", **(quick | wrong))
        assert fragment in str(raised.value)
        evaluate(frame, y, kind="probs", **(quick | right))
    named = evaluate(frame, y, kind="probs", priors={"c": 0.5, "a": 0.2, "b": 0.3}, **quick).metrics["NCE"].value
    assert named == evaluate(probs, y, kind="probs", priors=[0.2, 0.3, 0.5], **quick).metrics["NCE"].value
    with pytest.raises(CalibInputError, match="priors must be K numbers in the order of the classes"):
        evaluate(probs, y, kind="probs", priors={"a": 1.0}, **quick)


def test_chunks_read_once_or_malformed_are_refused_and_a_function_making_them_anew_runs_empty_ones_included():
    rng = np.random.default_rng(6)
    probs, y = rng.dirichlet(np.ones(3), size=300), rng.integers(0, 3, 300)
    once = ((probs[i : i + 100], y[i : i + 100], None) for i in range(0, 300, 100))
    with pytest.raises(CalibInputError, match="must be a function that returns a fresh iterable"):
        evaluate_chunks(once, n_classes=3, kind="probs")
    with pytest.raises(CalibInputError, match=r"gave 300 rows at its first call and 0 at call 2"):
        evaluate_chunks(lambda: once, n_classes=3, kind="probs", binning="equal-mass", n_boot=0, calibrators=())
    with pytest.raises(CalibInputError, match=r"each chunk must be a tuple \(scores, labels, groups\)"):
        evaluate_chunks(lambda: [(probs, y)], n_classes=3, kind="probs")

    def anew():
        yield probs[:0], y[:0], None  # an empty partition
        for start in range(0, 300, 100):
            yield probs[start : start + 100], y[start : start + 100], None

    options = {"binning": "equal-mass", "n_boot": 20, "calibrators": ()}
    assert (
        evaluate_chunks(anew, n_classes=3, kind="probs", **options).metrics
        == evaluate(probs, y, kind="probs", **options).metrics
    )


@pytest.mark.parametrize("missing", [None, np.nan], ids=["None", "NaN"])
def test_samples_without_a_group_are_refused_and_filling_them_in_runs(missing):
    rng = np.random.default_rng(7)
    probs, y = rng.dirichlet(np.ones(3), size=300), rng.integers(0, 3, 300)
    groups = np.array(["north"] * 150 + ["south"] * 150, dtype=object)
    groups[[4, 9]] = missing
    with pytest.raises(CalibInputError, match=r"groups: 2 samples have no group \(None or NaN; first at row 4"):
        evaluate(probs, y, kind="probs", groups=groups, n_boot=0, calibrators=())
    filled = np.where([g is None or g != g for g in groups], "unknown", groups)
    summary = evaluate(probs, y, kind="probs", groups=filled, n_boot=0, calibrators=())
    assert sorted((row.group, row.n) for row in summary.groups) == [("north", 148), ("south", 150), ("unknown", 2)]


@pytest.mark.parametrize(("k", "n_bins"), [(2, 100), (3, 100), (10, 200), (50, 50)])
def test_the_memory_bound_counts_at_least_the_sums_a_pass_keeps_and_at_most_twice_them(k, n_bins):
    rng = np.random.default_rng(k)
    logp = np.log(rng.dirichlet(np.ones(k), size=2000))
    settings = calib.evaluation.settings.EvaluationSettings(n_bins=n_bins, n_boot=50, calibrators=())
    done = run_pass(lambda: iter([(logp, rng.integers(0, k, 2000), None, None)]), n_classes=k, n_rows=2000,
                    settings=settings, costs=None, priors=None, grouped=False, say=lambda _: None,
                    whole_limit=2000)  # fmt: skip
    kept = sum(values.nbytes for values in done.gathered.overall.sums.values())
    assert kept <= settings.binned_sums_bytes(k) <= 2 * kept


def test_compare_gives_no_interval_to_a_difference_of_plug_in_calibration_errors_and_says_why():
    rng = np.random.default_rng(8)
    z = 1.5 * rng.normal(size=800)
    y = (rng.random(800) < 1 / (1 + np.exp(-z))).astype(int)
    systems = [np.log(np.column_stack([1 - p, p])) for p in (1 / (1 + np.exp(-z)), 1 / (1 + np.exp(-1.8 * z)))]
    c = compare(systems, y, names=["calibrated", "over-confident"], n_boot=50)
    row = c.differences[0]
    for name in ("ECE top-label", "ECE positive class", "smooth ECE"):
        assert np.isnan(row[name].low) and row[name].method == "" and name in c.notes[0]
    for name in ("accuracy", "NCE", "squared ECE positive class (debiased)", "squared MMCE (unbiased)"):
        assert row[name].low <= row[name].high and row[name].method == "basic"
    assert "debiased squared forms' differences have intervals" in c.notes[0]
    assert compare(systems, y, names=["a", "b"], n_boot=0).notes == []


def test_the_gain_interval_is_a_t_interval_of_the_fold_means_with_nadeau_and_bengios_variance():
    from scipy import stats

    from calib.evaluation.evidence import cross_validated_interval

    rng = np.random.default_rng(4)
    folds = rng.permutation(np.arange(1000) % 5)
    values = rng.normal(0.01, 0.2, 1000)
    means = np.array([values[folds == k].mean() for k in range(5)])  # equal folds: their mean is the mean
    scale = np.sqrt((1 / 5 + 1 / 4) * means.var(ddof=1))  # n_test / n_train = 1 / 4 for 5 folds
    expected = stats.t.interval(0.9, 4, loc=values.mean(), scale=scale)
    np.testing.assert_allclose(cross_validated_interval(values, folds, 0.1), expected, rtol=1e-12)
    assert cross_validated_interval(np.r_[values, -np.inf], np.r_[folds, 0], 0.1) == (-np.inf, -np.inf)
