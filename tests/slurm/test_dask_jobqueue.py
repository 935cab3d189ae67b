"""A Parquet data set evaluated on Dask workers started as SLURM jobs by dask-jobqueue's SLURMCluster, on the
local cluster of ``profiles/slurm/local_cluster.sh``: the same result as here, and the workers' jobs in sacct.

Run with ``python -m pytest -q -m slurm`` once the cluster is up (CI does).
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from dask_jobqueue import SLURMCluster
from distributed import Client
from prediction_logs import assert_same, write_log

import calib.evaluation.partitioned as partitioned
from calib.evaluation.router import evaluate_dataset

pytestmark = pytest.mark.slurm


def test_slurm_workers_from_dask_jobqueue_give_the_evaluation_here_and_are_in_sacct(tmp_path, monkeypatch):
    if subprocess.run(["sinfo", "-h"], capture_output=True).returncode != 0:
        pytest.fail("the local SLURM cluster is not up; start it with: profiles/slurm/local_cluster.sh up (as root)")
    log = write_log(tmp_path / "log", n=40_000, files=4, row_group=2_500)
    monkeypatch.setattr(partitioned, "PARTITION_ROWS", 5_000)  # 8 partitions
    options = {"n_boot": 40, "sample_limit": 10_000, "calibrators": ("dp",), "group_column": "segment"}
    here = evaluate_dataset(log, kind="probs", **options)
    name = f"calib-dask-{time.time_ns()}"
    with SLURMCluster(
        queue="local",
        account="calib",
        cores=1,
        processes=1,
        memory="1GB",
        walltime="00:10:00",
        job_name=name,
        python=sys.executable,
        log_directory=str(tmp_path / "logs"),
        local_directory=str(tmp_path),
        scheduler_options={"host": "127.0.0.1", "dashboard_address": None},
    ) as cluster:
        cluster.scale(2)
        with Client(cluster) as client:
            client.wait_for_workers(2, timeout=120)
            there = evaluate_dataset(log, kind="probs", scheduler=client, **options)
            jobs = set(cluster.workers)
    assert_same(there, here)
    assert len(jobs) == 2
    records = _accounting_records(name, expected=2)
    assert len(records) == 2, records
    for record in records:
        _, job_name, partition, account, _ = record.split("|")
        assert (job_name, partition, account) == (name, "local", "calib")


def _accounting_records(name: str, *, expected: int, patience: float = 90.0) -> list[str]:
    """sacct's records of the jobs called ``name``, asked again until ``expected`` are there or ``patience``
    seconds have passed: slurmctld hands job records to slurmdbd through a queue, and on a cluster just
    started the first jobs reach the database tens of seconds after they end."""
    fields = "JobID,JobName,Partition,Account,State"
    query = ["sacct", "-n", "-P", "-X", "--name", name, "-S", "now-1hour", "-o", fields]
    deadline = time.monotonic() + patience
    while True:
        records = subprocess.run(query, capture_output=True, text=True, check=True).stdout.splitlines()
        if len(records) >= expected or time.monotonic() > deadline:
            return records
        time.sleep(2)
