"""A Parquet data set evaluated on real Dask clusters equals its evaluation here: on a LocalCluster, and on a
scheduler and two workers started as commands (``dask scheduler``, ``dask worker``), also when a worker is
killed mid-run; a bad partition or an unreachable scheduler is one error and nothing written.

Run with ``python -m pytest -q -m dask`` (CI runs them after the unit tests); the SLURMCluster one is in
tests/slurm/.
"""

from __future__ import annotations

import dataclasses
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import dask
import numpy as np
import pandas as pd
import pytest
from distributed import Client, LocalCluster
from distributed.diagnostics.plugin import SchedulerPlugin
from prediction_logs import assert_same, die, write_log
from threadpoolctl import threadpool_info

import calib.evaluation.partitioned as partitioned
from calib.data.chunks import table_chunks
from calib.data.table_options import TableOptions
from calib.evaluation.dask_cluster import CONNECT_TIMEOUT, on_cluster
from calib.evaluation.metrics import REGISTRY, MetricDefinition, Terms, register
from calib.evaluation.partitioned import evaluate_partitioned
from calib.evaluation.router import evaluate_dataset
from calib.validation import CalibInputError

pytestmark = pytest.mark.dask

BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> Path:
    """60 000 rows of three classes in four files of row groups of 2 500 rows."""
    return write_log(tmp_path_factory.mktemp("dask") / "log", n=60_000, k=3, files=4, row_group=2_500)


@pytest.fixture(scope="module")
def commands_cluster(tmp_path_factory):
    """A scheduler and two single-threaded workers (each under a nanny, which restarts it when it dies),
    started as a user starts them by hand; yields the scheduler's address."""
    folder = tmp_path_factory.mktemp("cluster")
    address = f"tcp://127.0.0.1:{_free_port()}"
    logs = [open(folder / name, "w") for name in ("scheduler.log", "workers.log")]  # noqa: SIM115
    scheduler = subprocess.Popen(
        [BIN / "dask", "scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1], "--no-dashboard"],
        stdout=logs[0],
        stderr=subprocess.STDOUT,
    )
    workers = subprocess.Popen(
        [BIN / "dask", "worker", address, "--nworkers", "2", "--nthreads", "1", "--no-dashboard",
         "--local-directory", str(folder)],
        stdout=logs[1],
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        with Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for process in (workers, scheduler):
            process.terminate()
            process.wait(timeout=30)
        for stream in logs:
            stream.close()


OPTIONS = {"n_boot": 40, "sample_limit": 20_000, "fit_samples": 10_000, "calibrators": ("dp", "temperature")}


def test_a_local_cluster_gives_the_evaluation_here(log, monkeypatch):
    monkeypatch.setattr(partitioned, "PARTITION_ROWS", 5_000)  # 12 partitions of 2 row groups
    options = {**OPTIONS, "kind": "probs", "group_column": "segment", "binning": "equal-mass"}
    here = evaluate_dataset(log, **options)
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, Client(cluster) as client:
        there = evaluate_dataset(log, scheduler=client, **options)
        assert client.status == "running"  # a client that was given is left open
    assert_same(there, here)


def _blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


# Each block's BLAS thread counts, recorded by the terms of the metric "rows seen" on the workers.
_SEEN_BLAS = []


def _rows_seen_terms(batch, ctx):
    _SEEN_BLAS.append(_blas_threads())
    return {"n": Terms(np.ones(batch.labels.size))}


@pytest.fixture
def rows_seen():
    register(MetricDefinition(name="rows seen", reads="nothing", terms=_rows_seen_terms,
                              value=lambda sums, ctx: {"rows seen": sums["n"][0]}))  # fmt: skip
    yield _SEEN_BLAS
    del REGISTRY["rows seen"]
    _SEEN_BLAS.clear()


def test_each_partition_runs_blas_on_one_thread_on_a_worker_of_two_threads(log, rows_seen, monkeypatch):
    # The worker runs in this process (processes=False), whose BLAS runs on its default threads: a nanny's
    # worker process starts with OPENBLAS_NUM_THREADS=1 already (distributed.nanny.pre-spawn-environ). The
    # limit after the run is not checked: with threadpoolctl 3.8 it stays at one thread when the last
    # partition to leave it ran on another worker thread than the first (calib._internal.threads).
    monkeypatch.setattr(partitioned, "PARTITION_ROWS", 5_000)
    if set(_blas_threads()) == {1}:
        pytest.skip("BLAS runs on one thread here already (one core, or OPENBLAS_NUM_THREADS=1)")
    with (
        LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster,
        Client(cluster) as client,
    ):
        there = evaluate_dataset(log, scheduler=client, kind="probs", n_boot=10, calibrators=())
    assert there.metrics["rows seen"].value == 60_000
    assert len(rows_seen) == 12 and all(set(pools) == {1} for pools in rows_seen)  # 12 partitions of a block


def test_a_partition_whose_workers_all_die_is_one_error(log):
    # each worker that reads a partition ends at once (as one out of memory would); the scheduler gives up
    # after the first (allowed-failures 0) and the run stops with the CalibInputError that says so
    table = table_chunks(log, TableOptions(kind="probs", format="parquet"))
    dying = dataclasses.replace(table, read=die)
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=None) as cluster,
        Client(cluster) as client,
        on_cluster(client, say=lambda _: None) as map_reduce,
        pytest.raises(CalibInputError, match=r"partitions: the 1 Dask workers that ran task .* died each time"),
    ):
        evaluate_partitioned(dying, map_reduce=map_reduce, n_boot=0, calibrators=())


def _json(args: list[str]) -> dict:
    run = subprocess.run([BIN / "calib", "evaluate", *args, "--json", "--quiet"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def _assert_same_document(a, b, where=""):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            _assert_same_document(a[key], b[key], f"{where}/{key}")
    elif isinstance(a, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _assert_same_document(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert a == pytest.approx(b, rel=1e-12, abs=1e-15), where
    else:
        assert a == b, where


def test_the_command_on_a_scheduler_and_two_workers_started_by_hand_gives_the_command_here(log, commands_cluster):
    # the rows after the first 4096 resampled in 64 buckets (the bucketed bootstrap of large data sets)
    args = [str(log), "--kind", "probs", "--groups", "segment", "--n-boot", "30", "--sample-limit", "20000",
            "--resample-buckets", "64"]  # fmt: skip
    _assert_same_document(_json([*args, "--scheduler", commands_cluster]), _json(args))


def test_weights_and_crossed_segments_on_a_scheduler_give_the_command_here(tmp_path, commands_cluster):
    folder = write_log(tmp_path / "weighted", n=30_000, k=3, files=3, row_group=2_500, weights=True, channel=True)
    args = [str(folder), "--kind", "probs", "--groups", "segment", "channel", "--weights", "weight", "--n-boot", "30",
            "--sample-limit", "20000", "--resample-buckets", "64", "--binning", "equal-mass"]  # fmt: skip
    _assert_same_document(_json([*args, "--scheduler", commands_cluster]), _json(args))


def _killer(client: Client, done: threading.Event, record: dict) -> None:
    """SIGKILL the worker process running the most tasks once a few partitions are done and most are not."""

    def progress(dask_scheduler=None):
        states = [task.state for task in dask_scheduler.tasks.values()]
        return states.count("memory"), len(states)

    while not done.is_set():
        finished, total = client.run_on_scheduler(progress)
        if total >= 20 and 2 <= finished < total // 2:
            pids = client.run(os.getpid)
            busy = max(client.processing().items(), key=lambda item: len(item[1]))[0]
            os.kill(pids[busy], signal.SIGKILL)
            record.update(finished=finished, total=total, pid=pids[busy])
            return
        time.sleep(0.02)


def test_a_worker_killed_mid_run_is_replaced_and_the_result_is_the_same(log, commands_cluster, monkeypatch):
    monkeypatch.setattr(partitioned, "PARTITION_ROWS", 2_500)  # 24 partitions
    options = {**OPTIONS, "n_boot": 200}
    here = evaluate_dataset(log, kind="probs", **options)
    with Client(commands_cluster, timeout="30s") as client:
        done, record = threading.Event(), {}
        killer = threading.Thread(target=_killer, args=(client, done, record))
        killer.start()
        try:
            there = evaluate_dataset(log, kind="probs", scheduler=client, **options)
        finally:
            done.set()
            killer.join()
        assert record, "no worker was killed before the run ended"
        assert record["pid"] not in client.run(os.getpid).values()
    assert_same(there, here)


def test_the_workers_hold_a_few_states_at_a_time_and_none_after(log, commands_cluster, monkeypatch):
    # each result is dropped once the merge that reads it is done: of 48 partition states and 47 merges, the
    # workers hold a few at any moment (at most one unmerged state per tree level and worker, about 2 x 6),
    # and nothing once the client has the last; the scheduler counts them at every transition (a watcher
    # polling it from here would miss the peak whenever its calls wait behind the run's)
    monkeypatch.setattr(partitioned, "PARTITION_ROWS", 1_250)
    table = table_chunks(write_log(Path(log).parent / "small_groups", n=60_000, files=4, row_group=1_250),
                         TableOptions(kind="probs", format="parquet"))  # fmt: skip
    assert len(table.partitions(1_250)) == 48

    class HeldStates(SchedulerPlugin):
        def __init__(self):
            self.now = self.peak = self.transitions = 0

        def transition(self, key, start, finish, *args, **kwargs):
            self.now += (finish == "memory") - (start == "memory")
            self.peak, self.transitions = max(self.peak, self.now), self.transitions + 1

    def watch(dask_scheduler=None):
        dask_scheduler.add_plugin(HeldStates(), name="held-states")

    def counted(dask_scheduler=None):
        plugin = dask_scheduler.plugins.pop("held-states")
        return plugin.now, plugin.peak, plugin.transitions

    with Client(commands_cluster, timeout="30s") as client:
        client.run_on_scheduler(watch)
        with on_cluster(client, say=lambda _: None) as map_reduce:
            evaluate_partitioned(table, map_reduce=map_reduce, n_boot=20, calibrators=())
        now, peak, transitions = client.run_on_scheduler(counted)
    assert transitions > 4 * 95 and now == 0 and peak <= 14, (now, peak, transitions)


def _out_files(out: Path) -> list[Path]:
    return sorted(p for p in out.rglob("*") if p.is_file()) if out.exists() else []


@pytest.mark.parametrize("fault", ["unreadable", "other schema"])
def test_a_bad_partition_is_one_error_naming_its_file_and_nothing_is_written(tmp_path, commands_cluster, fault):
    folder = write_log(tmp_path / "log", n=12_000, files=3, row_group=2_000)
    bad = folder / "part-01.parquet"
    if fault == "unreadable":
        # its footer (read by the client) intact, its pages (read by a worker) overwritten
        data = bytearray(bad.read_bytes())
        data[4:4_000] = os.urandom(3_996)
        bad.write_bytes(bytes(data))
    else:
        pd.read_parquet(bad).rename(columns={"class_1": "class_one"}).to_parquet(bad, index=False)
    out = tmp_path / "out"
    run = subprocess.run(
        [BIN / "calib", "evaluate", str(folder), "--kind", "probs", "--scheduler", commands_cluster, "--out", str(out),
         "--groups", "segment", "--quiet"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert run.returncode == 1, run.stderr
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr, run.stderr
    assert str(bad) in run.stderr
    assert ("not a readable parquet table" if fault == "unreadable" else "has other columns") in run.stderr
    assert _out_files(out) == []


def test_an_unreachable_scheduler_is_one_line_within_the_stated_timeout(tmp_path):
    folder = write_log(tmp_path / "log", n=3_000, files=1)
    start = time.perf_counter()
    address = f"tcp://127.0.0.1:{_free_port()}"
    run = subprocess.run(
        [BIN / "calib", "evaluate", str(folder), "--kind", "probs", "--scheduler", address, "--quiet"],
        capture_output=True, text=True,
    )  # fmt: skip
    elapsed = time.perf_counter() - start
    assert run.returncode == 1 and run.stderr.count("\n") == 1, run.stderr
    assert f"--scheduler {address}: no Dask scheduler answered" in run.stderr
    assert f"within {CONNECT_TIMEOUT} s" in run.stderr
    assert elapsed < CONNECT_TIMEOUT + 10  # the timeout, and the command's start


def test_worker_memory_does_not_grow_with_the_data_set(tmp_path, commands_cluster):
    """A partition's state is what its worker holds: the peak memory of the workers is the same for a data
    set four times larger (each partition kept only its share of the subsamples)."""
    peaks = []
    for files in (2, 8):
        folder = write_log(tmp_path / f"log{files}", n=50_000 * files, files=files, row_group=50_000)
        with Client(commands_cluster, timeout="30s") as client:
            client.restart()
            evaluate_dataset(folder, kind="probs", n_boot=50, calibrators=(), sample_limit=20_000, scheduler=client)
            usage = client.run(resource.getrusage, resource.RUSAGE_SELF)  # peak RSS in KiB
            peaks.append(max(u.ru_maxrss for u in usage.values()) / 1024)
    # A quarter and 20 MB of slack for the allocators' page-level noise between two fresh workers; a worker
    # that kept its states would add the 8 files' subsample shares and states on top.
    assert peaks[1] < peaks[0] * 1.25 + 20, peaks
