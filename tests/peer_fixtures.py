"""Outputs of torch-based peers (netcal, torchmetrics), stored by benchmarks/write_peer_fixtures.py.

CI does not install torch, so the suite compares calib with what those peers computed once, on inputs
the tests draw again from the seeds recorded beside the outputs. ``recipes`` is that script, imported
for its input recipes only (it imports the peers inside its ``main``).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "peers"
_SCRIPT = ROOT / "benchmarks" / "write_peer_fixtures.py"

_spec = importlib.util.spec_from_file_location("write_peer_fixtures", _SCRIPT)
recipes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(recipes)

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
