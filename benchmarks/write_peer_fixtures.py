"""Store what netcal and torchmetrics compute, so the test suite can check calib against them without torch.

netcal and torchmetrics need torch, too heavy for CI; without this, the cross-checks with them only ran
where a developer had installed them. This script runs them once on inputs drawn from fixed seeds and
writes their outputs to ``tests/fixtures/peers/`` (JSON, plus NPZ for arrays; never pickle), with the
peer's name and exact version, the seeds and the generation parameters. The tests draw the same inputs
with the recipes below (they import this file, which needs only numpy and scipy until ``main`` runs)
and compare calib's results with the stored ones:

- ``netcal_binning.json`` / ``.npz``: netcal ``HistogramBinning(bins=15)`` and ``IsotonicRegression``
  fitted one-vs-all on K = 2, 3, 6 (one class absent from the fit labels) and applied to fresh scores
  (tests/calib/calibrators/test_trivial.py).
- ``ece_presets.json``: netcal ``ECE`` and torchmetrics ``binary_calibration_error`` /
  ``multiclass_calibration_error`` (L1) with their per-bin counts and torchmetrics' bin edges, on
  uniform and softmax scores and on scores that sit on bin edges (multiples of 1/10, 1/15, 1/20, with
  0, 0.5 and 1), binary and top-label, at 10, 15 and 20 bins (tests/calib/calibration_errors/test_presets.py).

relplot and uncertainty-calibration are light and in the ``test`` extra, so the suite calls them live.

Rerun after a peer release or a recipe change, from the repository root, in a scratch virtualenv (the
CPU build of torch first, so that the peers do not pull a CUDA one)::

    pip install torch==2.13.0 && pip install -e ".[bench]" && python benchmarks/write_peer_fixtures.py

The files are written byte for byte reproducibly (fixed zip timestamps), so ``git diff`` after a rerun
shows only what the peers changed.
"""

from __future__ import annotations

import importlib
import json
import platform
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import numpy as np
from scipy.special import softmax

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "peers"

# --- netcal one-vs-all binning (the cases of tests/calib/calibrators/test_trivial.py::test_one_vs_all_matches_netcal)
BINNING_CLASSES = (2, 3, 6)
BINNING_FIT = {"n": 400, "seed": 0}
BINNING_APPLY = {"n": 1000, "seed": 1}
BINNING_SCALE = 2.5
HISTOGRAM_BINS = 15

# --- binned ECE presets: the inputs, each drawn by ece_inputs(**params)
ECE_INPUTS = {
    "binary_uniform": {"k": 2, "n": 300, "seed": 10, "scores": "uniform"},
    "binary_tenths": {"k": 2, "n": 300, "seed": 11, "scores": "grid", "denominator": 10},
    "binary_fifteenths": {"k": 2, "n": 300, "seed": 12, "scores": "grid", "denominator": 15},
    "binary_twentieths": {"k": 2, "n": 300, "seed": 13, "scores": "grid", "denominator": 20},
    "top_label_softmax": {"k": 4, "n": 300, "seed": 14, "scores": "softmax"},
    "top_label_tenths": {"k": 4, "n": 300, "seed": 15, "scores": "grid", "denominator": 10},
    "top_label_fifteenths": {"k": 4, "n": 300, "seed": 16, "scores": "grid", "denominator": 15},
}
N_BINS = (10, 15, 20)


def binning_inputs(k: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(probs (n, k), labels): softmax of 2.5 N(0, 1) logits; labels uniform on 0..k-1, then k-1 -> 0.

    Class k - 1 never occurs in the labels, so the one-vs-all fit of that class sees no positive.
    """
    rng = np.random.default_rng(seed)
    probs = softmax(BINNING_SCALE * rng.standard_normal((n, k)), axis=1)
    labels = rng.integers(0, k, size=n)
    labels[labels == k - 1] = 0
    return probs, labels


def ece_inputs(k: int, n: int, seed: int, scores: str, denominator: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(probs (n, k), labels) for the binned-ECE comparisons.

    ``scores``: ``uniform`` (binary p_1 ~ U(0, 1), label 1 with probability 3 p_1^2 - 2 p_1^3),
    ``softmax`` (softmax of 2 N(0, 1) logits) or ``grid`` (the positive class's or the top-label
    probability is j / ``denominator``, as Python divides, so scores sit on the edges of 10, 15 or 20
    equal bins; binary grids include 0 and 1, and labels are 1 with probability 0.1 + 0.8 p_1, so 0
    and 1 carry both labels). Top-label rows put the confidence c on a random class and split the rest
    evenly, and are correct with probability 1.3 c - 0.15; a wrong label is another class at random.
    Every rule is over-confident at one end and under-confident at the other: with one sign in every
    bin the ECE would be |mean(p - y)| whatever the binning, and would not test it.
    """
    rng = np.random.default_rng(seed)
    if k == 2:
        if scores == "uniform":
            p1 = rng.random(n)
            labels = rng.random(n) < p1**2 * (3.0 - 2.0 * p1)
        elif scores == "grid":
            p1 = rng.integers(0, denominator + 1, n) / denominator
            labels = rng.random(n) < 0.1 + 0.8 * p1
        else:
            raise ValueError(f"binary scores are 'uniform' or 'grid', not {scores!r}")
        return np.column_stack([1.0 - p1, p1]), labels.astype(np.int64)
    if scores == "softmax":
        probs = softmax(2.0 * rng.standard_normal((n, k)), axis=1)
        top = probs.argmax(axis=1)
        correct = rng.random(n) < 1.3 * probs.max(axis=1) - 0.15
    elif scores == "grid":
        lowest = denominator // k + 1  # the smallest j with j / denominator > 1 / k: a strict maximum
        confidence = rng.integers(lowest, denominator + 1, n) / denominator
        top = rng.integers(0, k, n)
        probs = np.repeat(((1.0 - confidence) / (k - 1))[:, None], k, axis=1)
        probs[np.arange(n), top] = confidence
        correct = rng.random(n) < 1.3 * confidence - 0.15
    else:
        raise ValueError(f"top-label scores are 'softmax' or 'grid', not {scores!r}")
    wrong = (top + rng.integers(1, k, n)) % k
    return probs, np.where(correct, top, wrong).astype(np.int64)


def fingerprint(probs: np.ndarray, labels: np.ndarray) -> dict:
    """Column sums and label counts: the tests check that their inputs are the ones the peer saw.

    Sums rather than a hash: numpy's exp may differ by an ulp between CPUs, which moves no result here
    but would change every hash.
    """
    return {
        "shape": list(probs.shape),
        "column_sums": probs.sum(axis=0).tolist(),
        "label_counts": np.bincount(labels, minlength=probs.shape[1]).tolist(),
    }


def _environment() -> dict:
    import torch

    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "numpy": np.__version__,
        "scikit-learn": version("scikit-learn"),
        "torch": torch.__version__,
        # torch.linspace (torchmetrics' bin edges) rounds differently on its scalar fallback
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
    }


def write_netcal_binning() -> None:
    """netcal's one-vs-all HistogramBinning and IsotonicRegression, fitted on one draw, applied to another."""
    from netcal.binning import HistogramBinning, IsotonicRegression

    cases, outputs = [], {}
    for k in BINNING_CLASSES:
        probs, labels = binning_inputs(k, **BINNING_FIT)
        applied, applied_labels = binning_inputs(k, **BINNING_APPLY)
        for name, model in (
            ("histogram", HistogramBinning(bins=HISTOGRAM_BINS)),
            ("isotonic", IsotonicRegression()),
        ):
            model.fit(probs, labels)
            with np.errstate(invalid="ignore"):  # rows whose classes all map to 0 give 0 / 0
                out = np.asarray(model.transform(applied), dtype=np.float64)
            key = f"{name}_k{k}"
            outputs[key] = out
            cases.append(
                {
                    "key": key,
                    "calibrator": f"{type(model).__name__}({f'bins={HISTOGRAM_BINS}' if name == 'histogram' else ''})",
                    "k": k,
                    "fit": {**BINNING_FIT, "fingerprint": fingerprint(probs, labels)},
                    "apply": {**BINNING_APPLY, "fingerprint": fingerprint(applied, applied_labels)},
                    "output_shape": list(out.shape),
                }
            )
    meta = {
        "peer": "netcal",
        "version": version("netcal"),
        "environment": _environment(),
        "recipe": "benchmarks/write_peer_fixtures.py: binning_inputs(k, n, seed)",
        "scale": BINNING_SCALE,
        "cases": cases,
    }
    write_json(FIXTURES / "netcal_binning.json", meta)
    write_npz(FIXTURES / "netcal_binning.npz", outputs)


def write_ece_presets() -> None:
    """netcal ECE and torchmetrics' L1 calibration error, each with its per-bin sample counts."""
    import torch
    from netcal.metrics import ECE
    from torchmetrics.functional.classification import binary_calibration_error, multiclass_calibration_error

    # the module itself (its name is shadowed by the function the package re-exports), for its binning
    tm = importlib.import_module("torchmetrics.functional.classification.calibration_error")

    inputs, netcal, torchmetrics = {}, [], []
    for name, params in ECE_INPUTS.items():
        probs, labels = ece_inputs(**params)
        inputs[name] = {**params, "fingerprint": fingerprint(probs, labels)}
        k = probs.shape[1]
        # Every peer takes a binary problem as the positive-class probability, K > 2 as the rows.
        scores = probs[:, 1] if k == 2 else probs
        if k > 2:
            assert np.unique(labels).size > 2, "netcal reads labels with two values as a binary problem"
        preds, target = torch.as_tensor(scores, dtype=torch.float32), torch.as_tensor(labels)
        for m in N_BINS:
            metric = ECE(bins=m)
            value = metric.measure(scores, labels)
            netcal.append(
                {"input": name, "n_bins": m, "ece": float(value), "counts": _netcal_counts(metric, scores, labels)}
            )
            if k == 2:
                ece = binary_calibration_error(preds, target, n_bins=m, norm="l1")
                confidences, accuracies = tm._binary_calibration_error_update(preds, target)
            else:
                ece = multiclass_calibration_error(preds, target, num_classes=k, n_bins=m, norm="l1")
                confidences, accuracies = tm._multiclass_calibration_error_update(preds, target)
            # the per-bin counts of _ce_compute's own binning, on the edges it builds
            edges = torch.linspace(0, 1, m + 1, dtype=confidences.dtype)
            _, _, share = tm._binning_bucketize(confidences, accuracies, edges)
            torchmetrics.append(
                {
                    "input": name,
                    "n_bins": m,
                    "ece": float(ece),
                    "counts": _int_list(share.double().numpy() * labels.size),
                }
            )
    edges = {str(m): torch.linspace(0, 1, m + 1, dtype=torch.float32).double().tolist() for m in N_BINS}
    meta = {
        "recipe": "benchmarks/write_peer_fixtures.py: ece_inputs(**inputs[name])",
        "environment": _environment(),
        "inputs": inputs,
        "peers": {
            "netcal": {
                "peer": "netcal",
                "version": version("netcal"),
                "call": "netcal.metrics.ECE(bins=n_bins).measure(scores, labels); counts from its prepare + binning",
                "cases": netcal,
            },
            "torchmetrics": {
                "peer": "torchmetrics",
                "version": version("torchmetrics"),
                "call": "binary_ / multiclass_calibration_error(float32 preds, n_bins=n_bins, norm='l1'); counts "
                "from its _binning_bucketize",
                "bin_edges": edges,
                "cases": torchmetrics,
            },
        },
    }
    write_json(FIXTURES / "ece_presets.json", meta)


def _netcal_counts(metric, scores: np.ndarray, labels: np.ndarray) -> list[int]:
    """Per-bin sample counts as netcal's _measure forms them (measure itself returns only their total)."""
    x, matched, uncertainty, bounds, _ = metric.prepare(scores, labels, False, None)
    _, counts, _, _ = metric.binning(bounds[0], x[0], matched[0], x[0][:, 0], uncertainty[0][:, 0])
    return _int_list(counts)


def _int_list(counts) -> list[int]:
    rounded = np.rint(np.asarray(counts, dtype=np.float64))
    assert np.allclose(rounded, counts, rtol=0, atol=1e-3), counts
    return rounded.astype(np.int64).tolist()


def write_json(path: Path, data: dict) -> None:
    """``data`` as indented JSON (shared by the fixture writers of benchmarks/)."""
    # json writes floats with repr, which reads back to the same double
    path.write_text(json.dumps(data, indent=1) + "\n")
    print(f"wrote {path.relative_to(FIXTURES.parents[2])} ({path.stat().st_size} bytes)", file=sys.stderr)


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """np.savez_compressed with a fixed timestamp, so an unchanged peer rewrites identical bytes."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(info, "w") as member:
                np.lib.format.write_array(member, np.ascontiguousarray(array), allow_pickle=False)
    print(f"wrote {path.relative_to(FIXTURES.parents[2])} ({path.stat().st_size} bytes)", file=sys.stderr)


def main() -> None:
    """Run the peers and write every fixture file."""
    FIXTURES.mkdir(parents=True, exist_ok=True)
    write_netcal_binning()
    write_ece_presets()


if __name__ == "__main__":
    main()
