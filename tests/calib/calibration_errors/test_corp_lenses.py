"""CORP through lenses: the one-vs-rest sum decomposes the multiclass Brier score exactly, and each
part is the binary decomposition of its induced problem."""

import numpy as np
import pytest
from scipy.special import softmax

from calib.calibration_errors.corp import corp_decomposition
from calib.calibration_errors.corp_lenses import lens_decomposition
from calib.validation import CalibInputError


def _posteriors(seed, n=1500, k=4):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 2.0
    labels = np.array([rng.choice(k, p=p) for p in softmax(logits / 1.5, axis=1)])
    return softmax(logits, axis=1), labels


def test_one_vs_rest_brier_total_is_the_multiclass_brier_score():
    probs, labels = _posteriors(0)
    d = lens_decomposition(probs, labels, kind="probs")
    brier = np.mean(np.sum((probs - np.eye(4)[labels]) ** 2, axis=1))
    # four binary means of 1500 terms added, against one mean of their row sums: rounding only
    assert d.total.score == pytest.approx(brier, rel=1e-12)
    assert d.total.mcb - d.total.dsc + d.total.unc == pytest.approx(brier, rel=1e-12)
    assert sorted(d.parts) == ["class 0", "class 1", "class 2", "class 3"]


def test_parts_are_the_binary_decompositions_of_the_induced_problems():
    probs, labels = _posteriors(1)
    d = lens_decomposition(np.log(probs), labels, kind="logprobs", lens="top_label", score="log")
    confidence, correct = probs.max(axis=1), probs.argmax(axis=1) == labels
    assert d.parts["top label"] == corp_decomposition(confidence, correct, score="log") == d.total
    part = lens_decomposition(probs, labels, kind="probs").parts["class 2"]
    assert part == corp_decomposition(probs[:, 2], labels == 2)


def test_unknown_lens_is_named():
    probs, labels = _posteriors(2, n=20)
    with pytest.raises(CalibInputError, match="lens must be one of"):
        lens_decomposition(probs, labels, kind="probs", lens="classwise")
