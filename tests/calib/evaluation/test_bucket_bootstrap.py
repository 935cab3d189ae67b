"""The bucketed Poisson bootstrap of the evaluation pass (calib.evaluation.passes): the first 64 G rows each
resampled on its own and the later rows by the Poisson weight of their bucket, a hash of their position.

Checked against the definition (each resample's sums are the rows' values weighted by their own counts or
their buckets' weights, computed here row by row), the two ways the engine computes it (bucket sums, or rows
with their buckets' weights, infinite values included), its independence of how the data are cut, the
subgroups' consistency with the whole, and the output's words. Its validity against known truths is the
study in benchmarks/bucket_bootstrap.py."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from prediction_logs import assert_same

import calib.evaluation.passes as passes
from calib.cli import main
from calib.evaluation.data_pass import run_pass
from calib.evaluation.engine import evaluate, evaluate_chunks
from calib.evaluation.passes import BucketWeights, poisson_counts, row_buckets
from calib.evaluation.settings import EvaluationSettings

N, K, G, SEED = 6_000, 3, 64, 11  # 4096 rows on their own, 1904 in 64 buckets


def _data(n=N, k=K, seed=0, zeros=False):
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 1.5, (n, k))
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    y = (rng.random(n)[:, None] > np.cumsum(np.exp(logp), axis=1)).sum(axis=1)
    if zeros:  # a zero probability on the true class, once among the rows alone and once among the bucketed ones
        for row in (100, 5_500):
            with np.errstate(divide="ignore"):
                logp[row] = np.log(np.eye(k)[(y[row] + 1) % k])
    return logp, y


def _pass(logp, y, n_boot=20, **options):
    settings = EvaluationSettings(n_boot=n_boot, seed=SEED, resample_buckets=G, calibrators=(), **options)
    return run_pass(lambda: iter([(logp, y, None, None)]), n_classes=logp.shape[1], n_rows=y.size, settings=settings,
                    costs=None, priors=None, grouped=False, say=lambda _: None, whole_limit=y.size)  # fmt: skip


def test_each_resample_weighs_the_rows_alone_by_their_counts_and_the_others_by_their_bucket():
    logp, y = _data()
    alone = passes.ROWS_ALONE_PER_BUCKET * G
    ((_, own),) = poisson_counts(SEED, 0, alone, 20)  # block 0 holds every row (65536 rows a block at K = 3)
    ((_, weights),) = BucketWeights(SEED, G, 20)
    counts = np.concatenate([own, weights[row_buckets(SEED, alone, N - alone, G)]]).astype(float)
    correct = (logp.argmax(axis=1) == y).astype(float)
    expected = correct @ counts / counts.sum(axis=0)
    np.testing.assert_allclose(_pass(logp, y).draws()["accuracy"][1:], expected, rtol=1e-13)


def test_the_rows_of_a_bucket_share_its_weight_and_the_buckets_scatter_neighbours():
    buckets = row_buckets(SEED, 10**6, 4 * G, G)
    assert len(set(buckets[:G].tolist())) > G / 2  # 64 neighbouring rows fall in many buckets
    assert (row_buckets(SEED, 10**6 + 7, 5, G) == buckets[7:12]).all()  # a row's bucket is its position's
    assert not (row_buckets(SEED + 1, 10**6, 4 * G, G) == buckets).all()  # and the seed's


@pytest.mark.parametrize("binning", ["equal-width", "equal-mass"])
def test_bucket_sums_equal_the_rows_weighted_by_their_buckets_infinite_values_included(monkeypatch, binning):
    # the engine sums a term by bucket, or (a term too large) row by row with each row's bucket weight: the same
    logp, y = _data(zeros=True)
    by_bucket = _pass(logp, y, n_boot=100, binning=binning).draws()
    monkeypatch.setattr(passes, "MAX_BUCKETED_CELLS", 0)
    by_row = _pass(logp, y, n_boot=100, binning=binning).draws()
    assert by_bucket.keys() == by_row.keys()
    for name in by_bucket:
        np.testing.assert_allclose(by_bucket[name], by_row[name], rtol=1e-12, atol=1e-15, err_msg=name)
    nce = by_bucket["NCE"][1:]
    assert np.isinf(nce).any() and np.isfinite(nce).any()  # resamples with and without a zero-probability row


def test_chunks_of_any_size_give_the_whole_data_sets_intervals():
    logp, y = _data(n=9_000)
    groups = np.random.default_rng(1).integers(0, 3, y.size)
    options = {"n_boot": 30, "seed": SEED, "resample_buckets": G, "calibrators": ()}
    whole = evaluate(logp, y, kind="logprobs", groups=groups, **options)
    for size in (777, 4_096, 5_000):

        def pieces(size=size):
            return ((logp[i : i + size], y[i : i + size], groups[i : i + size]) for i in range(0, y.size, size))

        assert_same(evaluate_chunks(pieces, n_classes=K, kind="logprobs", grouped=True, **options), whole)


def test_the_subgroups_resamples_add_up_to_the_whole_ones():
    logp, y = _data(n=9_000)
    groups = np.random.default_rng(1).integers(0, 3, y.size)
    settings = EvaluationSettings(n_boot=20, seed=SEED, resample_buckets=G, calibrators=())
    done = run_pass(lambda: iter([(logp, y, groups, None)]), n_classes=K, n_rows=y.size, settings=settings, costs=None,
                    priors=None, grouped=True, say=lambda _: None, whole_limit=y.size)  # fmt: skip
    summed = sum(segment.state.sums["n"] for segment in done.by_group.values())
    np.testing.assert_allclose(summed, done.overall.sums["n"], rtol=1e-14)
    assert len(np.unique(summed[0, 1:])) > 5  # the resamples' sizes differ (the weights are drawn)


def test_without_buckets_or_below_their_start_every_row_is_resampled_on_its_own():
    logp, y = _data()
    alone = evaluate(logp, y, kind="logprobs", n_boot=20, seed=SEED, resample_buckets=None, calibrators=())
    few = evaluate(logp, y, kind="logprobs", n_boot=20, seed=SEED, resample_buckets=128, calibrators=())  # 8192 alone
    assert alone.resampling == few.resampling == "each row on its own"
    assert {k: (m.low, m.high) for k, m in alone.metrics.items()} == {
        k: (m.low, m.high) for k, m in few.metrics.items()
    }
    bucketed = evaluate(logp, y, kind="logprobs", n_boot=20, seed=SEED, resample_buckets=G, calibrators=())
    assert bucketed.resampling.startswith("rows 1 to 4096 each on its own, the other 1904 rows in 64 buckets")
    assert bucketed.metrics["NCE"].high != alone.metrics["NCE"].high


def test_the_command_says_what_was_resampled_and_refuses_too_few_buckets(tmp_path, capsys):
    logp, y = _data()
    path = tmp_path / "scores.csv"
    frame = pd.DataFrame(np.exp(logp), columns=["a", "b", "c"]).assign(label=np.array(["a", "b", "c"])[y])
    frame.to_csv(path, index=False)
    out = tmp_path / "out"
    code = main(["evaluate", str(path), "--n-boot", "20", "--resample-buckets", "64", "--calibrators", "none",
                 "--out", str(out), "--quiet"])  # fmt: skip
    assert code == 0
    document = json.loads((out / "metrics.json").read_text())
    assert document["settings"]["resample_buckets"] == 64
    assert document["resampling"].startswith("rows 1 to 4096 each on its own")
    assert main(["evaluate", str(path), "--resample-buckets", "10", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--resample-buckets" in err and "64" in err and err.count("\n") == 1
