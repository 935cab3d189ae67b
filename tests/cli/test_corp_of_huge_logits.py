"""The CORP decomposition of the log score on logits so large that probabilities round to 0 and 1 (issue 51).

A user's file of two classes' logits of +-5000 (``--kind logits``): the log score is finite (NCE is), but
the decomposition printed "log inf = MCB inf - ...", computed from probabilities that are 0 in floating
point. It is computed from the log-posteriors now; the numbers are checked against an independent
computation from the logits (numpy's logaddexp, scikit-learn's isotonic regression).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, log_softmax, logsumexp
from sklearn.isotonic import IsotonicRegression

import calib.cli
from calib.calibration_errors.corp import corp_decomposition, corp_report
from calib.calibration_errors.corp_lenses import lens_decomposition
from calib.validation import CalibInputError


def _run(path, *options: str, capsys) -> tuple[int, dict | None, str]:
    """``calib evaluate PATH --json`` in this process: (exit status, the JSON document or None, stderr)."""
    code = calib.cli.main(["evaluate", str(path), "--json", "--quiet", *options])
    out = capsys.readouterr()
    return code, (json.loads(out.out) if code == 0 else None), out.err


def _entropy_of_pav(z: np.ndarray, y: np.ndarray) -> float:
    """S(xhat) of the log score, independently: scikit-learn's isotonic regression of y on the logits (ties
    pooled as CORP pools them), scored with 0 log 0 = 0."""
    fitted = IsotonicRegression(increasing=True).fit(z, y).predict(z)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(y == 1, -np.log(fitted), -np.log1p(-fitted))
    return float(np.mean(np.where(((y == 1) & (fitted == 1)) | ((y == 0) & (fitted == 0)), 0.0, terms)))


def test_huge_logits_give_a_finite_log_decomposition(tmp_path, capsys):
    """Logits of +-5000 (two classes, --kind logits): the probabilities round to 0 and 1 and the log score
    of the wrong ones was inf ("log inf = MCB inf - ..."). The log score and its decomposition come from
    the logits now, and agree with an independent computation."""
    rng = np.random.default_rng(3)
    n = 400
    y = rng.integers(0, 2, n)
    right = rng.random(n) < 0.85
    z = np.where(right == (y == 1), 1.0, -1.0) * rng.choice([4000.0, 5000.0], n)
    path = tmp_path / "logits.csv"
    pd.DataFrame({"neg": np.zeros(n), "pos": z, "label": y}).to_csv(path, index=False)
    code, document, err = _run(path, "--kind", "logits", "--n-boot", "20", capsys=capsys)
    assert code == 0, err
    log = document["corp"]["log"]
    expected_score = float(np.mean(np.logaddexp(0.0, -np.where(y == 1, z, -z))))  # -log p(y), from the logits
    p1 = y.mean()
    unc = float(-(p1 * np.log(p1) + (1 - p1) * np.log(1 - p1)))
    recalibrated = _entropy_of_pav(z, y)
    assert np.isfinite(log["score"]) and log["score"] > 100
    assert log["score"] == pytest.approx(expected_score, rel=1e-12)
    assert log["unc"] == pytest.approx(unc, rel=1e-12)
    assert log["dsc"] == pytest.approx(unc - recalibrated, rel=1e-9, abs=1e-12)
    assert log["mcb"] == pytest.approx(expected_score - recalibrated, rel=1e-12)
    nce = next(m["value"] for m in document["metrics"] if m["metric"] == "NCE")
    assert log["score"] == pytest.approx(nce * unc, rel=1e-12)  # NCE = cross-entropy / entropy of the priors
    assert 0 <= log["p_value"] <= 1


def test_huge_logits_of_several_classes_in_the_python_api():
    """The top-label and one-vs-rest lenses of three classes' logits of thousands: finite log decompositions
    equal to the binary log scores computed from the logits."""
    rng = np.random.default_rng(4)
    n, k = 300, 3
    logits = 3000.0 * rng.normal(size=(n, k))
    labels = rng.integers(0, k, n)
    logp = log_softmax(logits, axis=1)
    top = lens_decomposition(logits, labels, kind="logits", lens="top_label", score="log").total
    winner = logp.argmax(axis=1)
    others = np.where(np.arange(k) == winner[:, None], -np.inf, logp)
    top_odds = logp.max(axis=1) - logsumexp(others, axis=1)
    correct = winner == labels
    assert top.score == pytest.approx(float(np.mean(np.logaddexp(0.0, -np.where(correct, top_odds, -top_odds)))))
    assert np.isfinite([top.score, top.mcb, top.dsc, top.unc]).all()
    parts = lens_decomposition(logits, labels, kind="logits", lens="one_vs_rest", score="log").parts
    for c in range(k):
        rest = logsumexp(np.where(np.arange(k) == c, -np.inf, logp), axis=1)
        odds = logp[:, c] - rest
        expected = float(np.mean(np.logaddexp(0.0, -np.where(labels == c, odds, -odds))))
        assert parts[f"class {c}"].score == pytest.approx(expected, rel=1e-12)
        assert parts[f"class {c}"].mcb == pytest.approx(expected - _entropy_of_pav(odds, labels == c), rel=1e-9)


def test_log_odds_change_nothing_where_the_probabilities_are_exact():
    """Moderate logits: pooling by the log-odds and scoring from them gives what the probabilities give."""
    rng = np.random.default_rng(5)
    z = np.round(rng.normal(scale=2.0, size=500), 2)  # ties, pooled either way
    y = (rng.random(500) < expit(z)).astype(float)
    with_odds = corp_report(expit(z), y, n_resamples=50, seed=1, log_odds=z)
    without = corp_report(expit(z), y, n_resamples=50, seed=1)
    for name in ("brier", "log"):
        a, b = with_odds[name], without[name]
        assert (a.score, a.mcb, a.dsc, a.unc) == pytest.approx((b.score, b.mcb, b.dsc, b.unc), rel=1e-12, abs=1e-15)
        assert a.p_value == b.p_value
    with pytest.raises(CalibInputError, match="log_odds must hold one number"):
        corp_decomposition(expit(z), y, score="log", log_odds=z[:-1])
