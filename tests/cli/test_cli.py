"""The ``calib`` command end to end: run as a subprocess on files a user would write."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support import run_calib

from calib.calibration_errors.corp import corp_decomposition
from calib.scoring.decisions import normalized_risk, zero_one_costs
from calib.scoring.scores import cross_entropy

ROOT = Path(__file__).resolve().parents[2]


def _softmax(logits: np.ndarray) -> np.ndarray:
    probs = np.exp(logits - logits.max(axis=1, keepdims=True))
    return probs / probs.sum(axis=1, keepdims=True)


def _posteriors(seed: int, n: int = 300, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Labels drawn from softmax(2 z); the model reports softmax(2 scale z) (over-confident for scale > 1)."""
    rng = np.random.default_rng(seed)
    logits = 2 * rng.normal(size=(n, 3))
    labels = (rng.random(n)[:, None] > np.cumsum(_softmax(logits), axis=1)).sum(axis=1)
    return _softmax(scale * logits), np.minimum(labels, 2)


@pytest.fixture
def user_csv(tmp_path) -> Path:
    probs, labels = _posteriors(0)
    frame = pd.DataFrame(probs, columns=["cat", "dog", "bird"]).assign(label=labels)
    path = tmp_path / "scores.csv"
    frame.to_csv(path, index=False)
    return path


def test_console_script_is_declared():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["calib"] == "calib.cli:main"


def test_evaluate_prints_the_summary_and_writes_files(user_csv, tmp_path):
    done = run_calib("evaluate", user_csv.name, "--n-boot", "20", "--out", "report", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "accuracy" in done.stdout and "recommended calibrator" in done.stdout
    assert "calib: metrics and 20 bootstrap resamples" in done.stderr  # progress goes to stderr
    for name in ("metrics.json", "metrics.csv", "reliability.png", "reliability.pdf", "corp.png", "corp.pdf"):
        assert (tmp_path / "report" / name).stat().st_size > 0
    metrics = {m["metric"]: m for m in json.loads((tmp_path / "report" / "metrics.json").read_text())["metrics"]}
    frame = pd.read_csv(user_csv)
    probs, labels = frame[["cat", "dog", "bird"]].to_numpy(), frame.label.to_numpy()
    assert metrics["accuracy"]["value"] == pytest.approx(np.mean(probs.argmax(axis=1) == labels), abs=1e-12)
    nce = cross_entropy(probs, labels, kind="probs", normalize=True)
    assert metrics["NCE"]["value"] == pytest.approx(nce, rel=1e-12)
    assert metrics["NCE"]["low"] <= nce <= metrics["NCE"]["high"]


def test_evaluate_json_and_quiet(user_csv, tmp_path):
    done = run_calib("evaluate", str(user_csv), "--json", "--quiet", "--n-boot", "0", cwd=tmp_path)
    # --quiet: no progress; the one note says how the numeric labels were matched to the named columns
    assert done.returncode == 0 and done.stderr.startswith("calib: note:") and done.stderr.count("\n") == 1
    assert "label k is read as the k-th class column (0: cat, 1: dog, 2: bird)" in done.stderr
    parsed = json.loads(done.stdout)
    assert {m["metric"] for m in parsed["metrics"]} >= {"accuracy", "NCE", "NBS", "ECD", "smooth ECE"}
    assert all(m["low"] == "nan" for m in parsed["metrics"])  # --n-boot 0: no intervals (strict JSON)


def test_evaluate_json_holds_the_corp_decompositions_of_a_binary_file(tmp_path):
    rng = np.random.default_rng(3)
    p1 = rng.uniform(size=400)
    labels = (rng.random(400) < p1**2).astype(int)
    pd.DataFrame({"no": 1 - p1, "yes": p1, "label": labels}).to_csv(tmp_path / "binary.csv", index=False)
    done = run_calib("evaluate", "binary.csv", "--json", "--quiet", "--n-boot", "99", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    corp = json.loads(done.stdout)["corp"]
    assert corp["lens"] == "positive class" and corp["resamples"] == 99
    for score in ("brier", "log"):
        d = corp_decomposition(p1, labels, score=score)
        assert set(corp[score]) == {"score", "mcb", "dsc", "unc", "p_value"}
        # the command reads the CSV, takes logs and exponentiates back: the scores move by a few ulps
        assert [corp[score][k] for k in ("score", "mcb", "dsc", "unc")] == pytest.approx(
            [d.score, d.mcb, d.dsc, d.unc], rel=1e-12
        )
        assert corp[score]["p_value"] == 0.01  # p^2 against p: every resample under calibration has less MCB
    text = run_calib("evaluate", "binary.csv", "--quiet", "--n-boot", "0", cwd=tmp_path).stdout
    assert "no MCB test (--n-boot 0)" in text and f"{d.score:.4f} = MCB {d.mcb:.4f} - DSC {d.dsc:.4f}" in text
    assert "classes, in order: no, yes; positive class: yes" in text  # the later by name, whatever the column order
    assert json.loads(done.stdout)["positive_class"] == "yes"


def test_priors_and_cost_matrices(user_csv, tmp_path):
    (tmp_path / "costs.csv").write_text("0,1,1\n10,0,1\n1,1,0\n")
    done = run_calib(
        "evaluate", str(user_csv), "--priors", "0.2", "0.3", "0.5", "--abstain", "0.1", "--costs", "costs.csv",
        "--json", "--quiet", "--n-boot", "0", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    metrics = {m["metric"]: m["value"] for m in json.loads(done.stdout)["metrics"]}
    frame = pd.read_csv(user_csv)
    probs, labels = frame[["cat", "dog", "bird"]].to_numpy(), frame.label.to_numpy()
    priors = np.array([0.2, 0.3, 0.5])
    costs = np.loadtxt(tmp_path / "costs.csv", delimiter=",")
    assert metrics["NRisk costs"] == pytest.approx(normalized_risk(probs, labels, costs, kind="probs", priors=priors))
    abstain = zero_one_costs(3, abstention=0.1)
    assert metrics["NRisk 0-1 + abstain"] == pytest.approx(
        normalized_risk(probs, labels, abstain, kind="probs", priors=priors)
    )
    assert metrics["NCE"] == pytest.approx(cross_entropy(probs, labels, kind="probs", priors=priors, normalize=True))
    bad = run_calib("evaluate", str(user_csv), "--priors", "0.5", "0.6", "0.1", "--quiet", cwd=tmp_path)
    assert bad.returncode == 2 and "--priors must sum to 1" in bad.stderr
    bad = run_calib("evaluate", str(user_csv), "--abstain", "-1", "--quiet", cwd=tmp_path)
    assert bad.returncode == 2 and "--abstain: abstention must be a finite cost >= 0" in bad.stderr
    (tmp_path / "nan.csv").write_text("0,1,nan\n10,0,1\n1,1,0\n")  # a NaN in the first row is no header
    bad = run_calib("evaluate", str(user_csv), "--costs", "nan.csv", "--quiet", cwd=tmp_path)
    assert "--costs nan.csv: the cost of true class cat and decision 2 is nan" in bad.stderr


def _broken(tmp_path: Path, user_csv: Path, fault: str) -> Path:
    frame = pd.read_csv(user_csv)
    if fault == "header":
        frame = frame.rename(columns={"label": "target"})
    elif fault == "nan":
        frame.loc[4, "dog"] = np.nan
    elif fault == "row_sum":
        frame.loc[2, "cat"] += 0.3
    elif fault == "log_values":
        frame[["cat", "dog", "bird"]] = np.log(frame[["cat", "dog", "bird"]])
    elif fault == "label":
        frame.loc[0, "label"] = 7
    path = tmp_path / f"{fault}.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize(
    ("fault", "hint"),
    [
        ("header", "--labels COLUMN"),
        ("nan", "holds NaN (an empty or missing score)"),
        ("row_sum", "sum to 1"),
        ("log_values", "--kind logprobs"),
        ("label", "class indices run from 0 to 2"),
    ],
)
def test_a_file_with_a_mistake_gives_one_clear_line_and_exit_1(user_csv, tmp_path, fault, hint):
    done = run_calib("evaluate", str(_broken(tmp_path, user_csv, fault)), "--quiet", cwd=tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    lines = [line for line in done.stderr.strip().splitlines() if not line.startswith("calib: note:")]
    assert len(lines) == 1 and lines[0].startswith("calib evaluate: error:") and hint in lines[0]


def test_missing_file_and_bad_command_line(tmp_path):
    done = run_calib("evaluate", "nowhere.csv", cwd=tmp_path)
    assert done.returncode == 1 and "does not exist" in done.stderr
    assert run_calib("evaluate", cwd=tmp_path).returncode == 2
    assert run_calib("calibrate", "--apply", "a", cwd=tmp_path).returncode == 2  # --out is required
    (tmp_path / "a.csv").write_text("x,y,label\n0.5,0.5,1\n")
    magic = run_calib(
        "calibrate", "--method", "magic", "--train", "a.csv", "--apply", "a.csv", "--out", "b.npz", cwd=tmp_path
    )
    assert magic.returncode == 2
    assert "--method 'magic' is not a calibrator; use auto or one of dp, temperature" in magic.stderr


def test_calibrate_fits_saves_loads_and_applies(tmp_path):
    for name, seed in (("train.csv", 1), ("test.csv", 2)):
        probs, labels = _posteriors(seed, scale=3.0)  # over-confident: temperature scaling should help
        pd.DataFrame(probs, columns=["a", "b", "c"]).assign(label=labels).to_csv(tmp_path / name, index=False)
    fit = run_calib(
        "calibrate", "--method", "temperature", "--train", "train.csv", "--apply", "test.csv",
        "--out", "fitted.npz", "--save-model", "ts.json", "--quiet", cwd=tmp_path,
    )  # fmt: skip
    assert fit.returncode == 0, fit.stderr
    again = run_calib("calibrate", "--model", "ts.json", "--apply", "test.csv", "--out", "again.npz", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    first, second = np.load(tmp_path / "fitted.npz"), np.load(tmp_path / "again.npz")
    np.testing.assert_array_equal(first["scores"], second["scores"])
    assert str(first["kind"]) == "logprobs"
    test = pd.read_csv(tmp_path / "test.csv")
    raw = cross_entropy(test[["a", "b", "c"]].to_numpy(), test.label.to_numpy(), kind="probs")
    assert cross_entropy(first["scores"], first["labels"], kind="logprobs") < raw


def test_calibrate_rejects_a_bad_output_name_and_a_foreign_model(user_csv, tmp_path):
    done = run_calib("calibrate", "--method", "dp", "--train", str(user_csv), "--apply", str(user_csv),
                  "--out", "x.txt", "--quiet", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2 and ".npz or .csv" in done.stderr and not (tmp_path / "x.txt").exists()
    done = run_calib("calibrate", "--model", str(user_csv), "--apply", str(user_csv), "--out", "y.npz", cwd=tmp_path)
    assert done.returncode == 1 and "calib reads calibrators from .json files" in done.stderr


def test_compare_gives_paired_intervals_and_checks_the_labels(user_csv, tmp_path):
    probs, labels = _posteriors(0)
    sharper = np.exp(2 * np.log(probs))
    sharper /= sharper.sum(axis=1, keepdims=True)
    pd.DataFrame(sharper, columns=["cat", "dog", "bird"]).assign(label=labels).to_csv(tmp_path / "b.csv", index=False)
    done = run_calib(
        "compare", str(user_csv), "b.csv", "--names", "A", "B", "--n-boot", "50", "--quiet", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if "B - A: NCE" in x)
    diff, low, high = (float(v) for v in re.findall(r"[+-]\d+\.\d+", line))
    expected = cross_entropy(sharper, labels, kind="probs", normalize=True) - cross_entropy(
        probs, labels, kind="probs", normalize=True
    )
    assert diff == pytest.approx(expected, abs=1e-4) and low <= diff <= high
    mcb = [float(v) for v in next(x for x in done.stdout.splitlines() if x.startswith("    MCB")).split()[1:]]
    confidence = [p.max(axis=1) for p in (probs, sharper)]
    correct = [p.argmax(axis=1) == labels for p in (probs, sharper)]
    expected_mcb = [corp_decomposition(x, c).mcb for x, c in zip(confidence, correct, strict=True)]
    assert mcb == pytest.approx(expected_mcb, abs=5e-5)  # printed to 4 decimals
    other = pd.read_csv(user_csv).assign(label=np.roll(labels, 1))
    other.to_csv(tmp_path / "c.csv", index=False)
    done = run_calib("compare", str(user_csv), "c.csv", "--quiet", cwd=tmp_path)
    assert done.returncode == 1 and "paired row by row differ from those of" in done.stderr


def test_fit_samples_caps_the_calibrators_data_and_says_so(user_csv, tmp_path):
    capped = run_calib(
        "evaluate", str(user_csv), "--json", "--quiet", "--n-boot", "20", "--fit-samples", "100", cwd=tmp_path
    )
    full = run_calib("evaluate", str(user_csv), "--json", "--quiet", "--n-boot", "20", cwd=tmp_path)
    capped, full = json.loads(capped.stdout), json.loads(full.stdout)
    assert capped["calibrator_gains"]["samples"] == 100 and full["calibrator_gains"]["samples"] == 300
    rcl = {m["metric"]: m["value"] for m in capped["metrics"] if m["metric"].startswith("RCL")}
    assert rcl != {m["metric"]: m["value"] for m in full["metrics"] if m["metric"].startswith("RCL")}
    # every other metric uses all samples
    others = [m for m in capped["metrics"] if not m["metric"].startswith("RCL")]
    assert others == [m for m in full["metrics"] if not m["metric"].startswith("RCL")]
    text = run_calib("evaluate", str(user_csv), "--quiet", "--n-boot", "20", "--fit-samples", "100", cwd=tmp_path)
    assert "on a random 100 samples" in text.stdout
