"""The threads of an evaluation: the pass over the data runs BLAS on one thread (and puts the limit back
afterwards), draws the next block's resample counts on a second thread only when ``threads`` is 2 or more,
and gives the same JSON document for any ``threads``."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import calib.evaluation.data_pass
import calib.evaluation.passes
from calib.cli import main
from calib.evaluation.engine import evaluate
from calib.evaluation.metrics import REGISTRY, MetricDefinition, Terms, register


def blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


@pytest.fixture
def blas_in_the_pass():
    """A metric whose terms record, for each block of the pass, the BLAS libraries' thread counts."""
    seen = []

    def terms(batch, ctx):
        seen.append(blas_threads())
        return {"n": Terms(np.ones(batch.labels.size))}

    register(MetricDefinition(name="rows seen", reads="nothing", terms=terms,
                              value=lambda sums, ctx: {"rows seen": sums["n"][0]}))  # fmt: skip
    yield seen
    del REGISTRY["rows seen"]


def _logits(n: int, k: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 2
    logp = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
    return logp, np.array([rng.choice(k, p=p) for p in np.exp(logp)])


@pytest.mark.parametrize("threads", [1, 2])
def test_the_pass_runs_blas_on_one_thread_and_draws_ahead_only_with_two_threads(blas_in_the_pass, monkeypatch,
                                                                                threads):  # fmt: skip
    monkeypatch.setattr(calib.evaluation.passes, "BLOCK_ROWS", 700)  # 8 blocks
    drawn_on = []
    draw = calib.evaluation.data_pass.poisson_counts

    def recorded(*args):
        drawn_on.append(threading.get_ident())
        return draw(*args)

    monkeypatch.setattr(calib.evaluation.data_pass, "poisson_counts", recorded)
    logp, y = _logits(5000, 3)
    with threadpool_limits(limits=2, user_api="blas"):  # 2 outside, whatever the environment sets
        before = blas_threads()
        summary = evaluate(logp, y, kind="logprobs", n_boot=20, calibrators=(), threads=threads)
        assert blas_threads() == before  # put back after the pass
    assert summary.metrics["rows seen"].value == 5000
    assert len(blas_in_the_pass) == 8 and all(set(pools) == {1} for pools in blas_in_the_pass)
    others = {ident for ident in drawn_on if ident != threading.get_ident()}
    assert len(drawn_on) == 8 and len(others) == threads - 1  # blocks 2 to 8 drawn ahead on the second thread


def test_the_json_document_is_the_same_for_one_and_two_threads(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(calib.evaluation.passes, "BLOCK_ROWS", 700)
    logp, y = _logits(4000, 3, seed=1)
    np.savez(tmp_path / "s.npz", scores=np.exp(logp), labels=y)
    documents = []
    with threadpool_limits(limits=2, user_api="blas"):
        for threads in ("1", "2"):
            assert main(["evaluate", str(tmp_path / "s.npz"), "--json", "--quiet", "--n-boot", "30",
                         "--calibrators", "temperature", "dp", "vector_clr", "--threads", threads]) == 0  # fmt: skip
            documents.append(capsys.readouterr().out)
    assert "threads" not in json.loads(documents[0])["settings"]  # the results do not depend on it
    assert documents[0] == documents[1]
