"""A fresh clone anywhere builds every artifact: without ../shared/real_posteriors beside it, the default
``real_data.download: auto`` fetches the published sets from their upstream (here an HTTP server on the
loopback laid out as the upstream repositories, tests/upstream_server.py), and the build is byte for byte
the mirror build (CI's own, which ``CALIB_TEST_BUILD`` names, else one made here first)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from support import ROOT, given_build
from upstream_server import UpstreamServer

MIRROR = ROOT.parent / "shared" / "real_posteriors"
# In the workflow tests' worker, one after the other: one of them deletes and rebuilds a figure of the build
# this test compares with.
pytestmark = pytest.mark.xdist_group("workflow")


def _snakemake(cwd: Path, results: Path, env: dict) -> subprocess.CompletedProcess:
    cmd = ["snakemake", "--cores", "2", "--config", f"results={results}"]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, check=False)


def _files(folder: Path) -> dict[str, Path]:
    """The build's outputs, by path relative to it (the download cache aside)."""
    return {
        str(p.relative_to(folder)): p
        for p in folder.rglob("*")
        if p.is_file() and p.relative_to(folder).parts[:2] != ("data", "downloads")
    }


def test_a_fresh_clone_without_the_mirror_downloads_every_set_and_builds_the_same_bytes(tmp_path):
    reference = given_build()
    if reference is None:  # no build given: the mirror build, made here in a results folder of its own
        reference = tmp_path / "mirror_build"
        done = _snakemake(ROOT, reference, dict(os.environ))
        assert done.returncode == 0, done.stderr[-3000:]
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    # Beside the clone, the authors' figures the report points to (../shared/reference), as beside this checkout,
    # so that the only difference from the mirror build is where the real sets come from: the default mirror,
    # ../shared/real_posteriors, is absent.
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "reference").symlink_to(ROOT.parent / "shared" / "reference")
    assert not (clone.parent / "shared" / "real_posteriors").exists()
    results = clone / "build"  # not the tracked results/ folder, which holds a README
    env = {k: v for k, v in os.environ.items() if k != "CALIB_REAL_DATA"}
    with UpstreamServer(MIRROR) as server:
        env["CALIB_REAL_DATA_URL"] = server.url
        done = _snakemake(clone, results, env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "are not available" not in done.stderr  # nothing skipped
    downloaded = {relpath for method, relpath in server.requests if method == "GET"}
    assert len(downloaded) >= 50 and all((results / "data" / "downloads" / p).is_file() for p in downloaded)
    ours, theirs = _files(results), _files(reference)
    assert sorted(ours) == sorted(theirs)
    differ = []
    for name, path in ours.items():
        mine, other = path.read_bytes(), theirs[name].read_bytes()
        if name == "report.md":  # it names its results folder
            mine, other = mine.replace(str(results).encode(), b"R"), other.replace(str(reference).encode(), b"R")
        if mine != other:
            differ.append(name)
    assert differ == []
