"""Helpers several test modules share (``tests`` is on pytest's path, so ``from support import ...``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def run_calib(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python -m calib.cli *args`` in ``cwd``, running this checkout's calib, with its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "calib.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def draw_labels(probs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """y_i ~ Cat(probs_i) by inverse CDF, independent of the library's samplers."""
    cdf = np.cumsum(probs, axis=1)
    return np.minimum((rng.random(probs.shape[0])[:, None] >= cdf).sum(axis=1), probs.shape[1] - 1)


def given_build() -> Path | None:
    """The complete workflow build the ``CALIB_TEST_BUILD`` environment variable names, or None.

    CI runs ``snakemake --cores 2`` once before the tests and names its results folder here, so the
    end-to-end tests bring that build up to date (nothing to do) and check it instead of building
    their own; without it they build one in a temporary folder first.
    """
    given = os.environ.get("CALIB_TEST_BUILD")
    return Path(given).resolve() if given else None


# The rules whose jobs run a step of the default build (besides the artifact jobs); the sweeps add two more.
BUILD_STEP_RULES = frozenset({"simulate", "fetch", "zoo", "report"})
SWEEP_RULES = frozenset({"sweep_point", "sweep_aggregate"})


def artifact_rules() -> set[str]:
    """The Snakemake rule of every artifact job of the workflow (pipeline.targets.jobs)."""
    # Imported on call: the library's and the CLI's tests import this module too, and need neither Hydra nor
    # the workflow's experiment list.
    from pipeline.targets import experiments, jobs, rule_name

    return {rule_name(job) for job in jobs(experiments())}


def stable_id(value) -> str:
    """A test id's text for ``value``, the same in every process (pytest-xdist compares the ids its workers
    collect): the repr, or the type's name for an object whose repr holds its address."""
    text = repr(value)
    return f"<{type(value).__name__}>" if " at 0x" in text else text
