"""Outputs of peers CI does not install, stored by benchmarks/write_peer_fixtures.py (netcal,
torchmetrics) and benchmarks/write_corp_fixtures.py (model-diagnostics).

The suite compares calib with what those peers computed once, on inputs the tests draw again from the
seeds recorded beside the outputs. ``recipes`` and ``corp_recipes`` are those scripts, imported for
their input recipes only (they import the peers inside their ``main``).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "peers"
_SCRIPT = ROOT / "benchmarks" / "write_peer_fixtures.py"


def _script(path: Path):
    """A fixture-writing script of benchmarks/, imported for its input recipes (its peers load in main)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


recipes = _script(_SCRIPT)
corp_recipes = _script(ROOT / "benchmarks" / "write_corp_fixtures.py")

REGENERATE = f"regenerate with the command in the docstring of {_SCRIPT.relative_to(ROOT)}"


def load_json(name: str) -> dict:
    """The fixture ``name``.json; a missing file fails the test that asks for it (never a skip)."""
    path = FIXTURES / f"{name}.json"
    assert path.is_file(), f"peer fixture {path} is missing: {REGENERATE}"
    return json.loads(path.read_text())


def load_arrays(name: str) -> dict[str, np.ndarray]:
    """The arrays of ``name``.npz, read without pickle."""
    path = FIXTURES / f"{name}.npz"
    assert path.is_file(), f"peer fixture {path} is missing: {REGENERATE}"
    with np.load(path, allow_pickle=False) as archive:
        return {key: archive[key] for key in archive.files}


def check_fingerprint(recorded: dict, probs: np.ndarray, labels: np.ndarray, what: str) -> None:
    """The inputs drawn here are the ones the peer saw (same shape, column sums, label counts)."""
    drawn = recipes.fingerprint(probs, labels)
    message = f"{what}: the inputs drawn from the recorded seed differ from the peer's; {REGENERATE}"
    assert drawn["shape"] == recorded["shape"], message
    assert drawn["label_counts"] == recorded["label_counts"], message
    # sums of <= 1000 terms of order 1: numpy's exp may differ by an ulp between CPUs, nothing more
    np.testing.assert_allclose(drawn["column_sums"], recorded["column_sums"], rtol=1e-12, err_msg=message)
