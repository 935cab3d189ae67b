"""The pinned downloads of the real posterior sets, against an HTTP server on the loopback laid out as the
upstream repositories (tests/upstream_server.py): a good file, a truncated transfer, an altered file, a
404, a server that does not answer in time and a cached download damaged later. Each ends as documented,
with one message naming the file and the fix, and nothing half-written."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf
from support import ROOT
from upstream_server import UpstreamServer, closed_port_url

from calib._internal.files import sha256_file
from calib.data.registry import RealDataError, checksums, locate, materialize
from pipeline.real_data import obtainable, upstream_answers

MIRROR = ROOT.parent / "shared" / "real_posteriors"
SET = "ferrer2024/sst2_gpt2"
SCORES = f"{SET}/scores.npy"


def _leftovers(cache: Path) -> list[str]:
    return sorted(str(p.relative_to(cache)) for p in cache.rglob("*") if p.is_file()) if cache.exists() else []


def test_a_good_download_is_verified_and_read_like_the_mirror(tmp_path):
    with UpstreamServer(MIRROR) as server:
        pset = materialize(SET, mirror=None, cache=tmp_path, download=True, url=server.url, timeout=5)
    mirrored = materialize(SET, mirror=MIRROR)
    np.testing.assert_array_equal(pset.scores, mirrored.scores)
    np.testing.assert_array_equal(pset.labels, mirrored.labels)
    for relpath in (SCORES, f"{SET}/targets.npy"):
        assert sha256_file(tmp_path / relpath) == checksums()[relpath][1]
    assert _leftovers(tmp_path) == [SCORES, f"{SET}/targets.npy"]
    assert [method for method, _ in server.requests] == ["GET", "GET"]


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ("truncate", "is truncated: 7348 bytes, expected 14696"),
        ("alter", f"the download of {SCORES} from http://127.0.0.1"),
        ("missing", "answered 404 Not Found. Check real_data.url"),
        ("hang", "did not answer within 0.5 s (real_data.timeout_seconds)"),
    ],
)
def test_a_bad_transfer_stops_with_the_file_and_the_fix_and_leaves_nothing(tmp_path, fault, said):
    with UpstreamServer(MIRROR, {SCORES: fault}) as server:
        started = time.monotonic()
        with pytest.raises(RealDataError) as caught:
            locate(SCORES, mirror=None, cache=tmp_path, download=True, url=server.url, timeout=0.5)
        assert time.monotonic() - started < 10
    message = str(caught.value)
    assert said in message and SCORES in message and "\n" not in message
    assert "CALIB_REAL_DATA" in message  # the other way to provide the file
    if fault == "alter":
        assert "is altered: sha256" in message and "retry, or use a mirror" in message
    assert _leftovers(tmp_path) == []  # no file, no temporary file


def test_a_cached_download_damaged_later_is_fetched_again(tmp_path):
    with UpstreamServer(MIRROR) as server:
        good = locate(SCORES, mirror=None, cache=tmp_path, download=True, url=server.url, timeout=5)
        data = bytearray(good.read_bytes())
        data[100] ^= 0xFF
        good.write_bytes(bytes(data))
        again = locate(SCORES, mirror=None, cache=tmp_path, download=True, url=server.url, timeout=5)
    assert again == good and sha256_file(again) == checksums()[SCORES][1]
    assert [relpath for _, relpath in server.requests] == [SCORES, SCORES]
    # damaged again, and the upstream gone: the damaged copy is removed and the failure says so
    good.write_bytes(bytes(data))
    with pytest.raises(RealDataError, match="Connection refused"):
        locate(SCORES, mirror=None, cache=tmp_path, download=True, url=closed_port_url(), timeout=5)
    assert _leftovers(tmp_path) == []


def test_the_fetch_step_says_one_line_and_writes_nothing(tmp_path):
    with UpstreamServer(MIRROR, {SCORES: "alter"}) as server:
        env = {**os.environ, "CALIB_REAL_DATA": str(tmp_path / "no-mirror"), "CALIB_REAL_DATA_URL": server.url}
        done = subprocess.run(
            [sys.executable, "-m", "pipeline.steps.fetch", f"real_set={SET}", f"paths.results={tmp_path}"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env=env,
        )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("fetch: the download of ferrer2024/sst2_gpt2/scores.npy") and "is altered" in line
    assert not (tmp_path / "data" / "real" / f"{SET}.npz").exists()
    assert _leftovers(tmp_path / "data" / "downloads") == []


def _config(tmp_path: Path, download, url: str):
    return OmegaConf.create(
        {
            "paths": {"data": str(tmp_path / "data")},
            "real_data": {
                "mirror": str(tmp_path / "no-mirror"),
                "download": download,
                "url": url,
                "cache": str(tmp_path / "data" / "downloads"),
                "timeout_seconds": 5,
            },
        }
    )


def test_auto_downloads_when_the_upstream_answers_and_skips_when_it_does_not(tmp_path, monkeypatch):
    monkeypatch.delenv("CALIB_REAL_DATA", raising=False)
    monkeypatch.delenv("CALIB_REAL_DATA_URL", raising=False)
    with UpstreamServer(MIRROR) as server:
        assert obtainable(_config(tmp_path, "auto", server.url), SET)
        assert [method for method, _ in server.requests] == ["HEAD"]  # a probe, no download
    started = time.monotonic()
    offline = closed_port_url()
    assert not obtainable(_config(tmp_path, "auto", offline), SET)
    assert obtainable(_config(tmp_path, True, offline), SET)  # true: always fetched (and failing loudly)
    assert not obtainable(_config(tmp_path, False, offline), SET)
    assert time.monotonic() - started < 5
    assert not obtainable(_config(tmp_path, "auto", offline), "ferrer2024/sitw_plda")  # missing upstream
    upstream_answers.cache_clear()
