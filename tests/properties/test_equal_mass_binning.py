"""Equal-mass binning has one definition (:func:`calib.calibration_errors.binning.equal_mass_edges`): the
engine (``calib evaluate --binning equal-mass``), :class:`BinnedCalibrationError`, the ECE bootstrap and the
reliability figure give the same number on tied, rounded and continuous scores, and the bins equal an
independent rank rule that never splits a tie.
"""

from __future__ import annotations

import json

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from strategies import ORDER_TOL, PROPERTY
from support import run_calib

from calib.calibration_errors.binned import BinnedCalibrationError
from calib.calibration_errors.binning import equal_mass_bin_ids, equal_mass_edges
from calib.evaluation.engine import evaluate
from calib.resampling.bootstrap import bootstrap_ece


def _rank_rule(values: np.ndarray, m: int) -> np.ndarray:
    """Bins by rank, floor(r M / N) for the r-th smallest value, a tie group in the bin of its first member:
    written here from the definition, apart from the library's edges."""
    order = np.argsort(values, kind="stable")
    ranked = values[order]
    first = np.r_[True, ranked[1:] != ranked[:-1]]
    start_of_group = np.maximum.accumulate(np.where(first, np.arange(values.size), 0))
    ids = np.empty(values.size, dtype=np.int64)
    ids[order] = start_of_group * m // values.size
    return ids


@st.composite
def scores(draw):
    """Binary positive-class scores: continuous, rounded to 1-2 decimals, or from a few tied values."""
    n = draw(st.integers(2, 300))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    form = draw(st.sampled_from(["continuous", "rounded", "tied"]))
    p = rng.uniform(0.0, 1.0, n)
    if form == "rounded":
        p = np.round(p, draw(st.integers(1, 2)))
    elif form == "tied":
        p = rng.choice(np.round(rng.uniform(0, 1, draw(st.integers(1, 4))), 3), n)
    labels = (rng.random(n) < p).astype(np.int64)
    labels[:2] = (0, 1)  # two classes, which an evaluation needs
    return p, labels, draw(st.integers(1, 20))


@PROPERTY
@given(scores())
def test_equal_mass_bins_are_the_rank_rule(drawn):
    p, _, m = drawn
    np.testing.assert_array_equal(equal_mass_bin_ids(p, m), _rank_rule(p, m))


@PROPERTY
@given(scores())
def test_every_equal_mass_ece_is_the_same_number(drawn):
    p, labels, m = drawn
    probs = np.column_stack([1 - p, p])
    for target, metric in (("binary", "ECE positive class"), ("top_label", None)):
        estimator = BinnedCalibrationError(target, n_bins=m, strategy="equal-mass")
        direct = estimator(probs, labels, kind="probs")
        booted = bootstrap_ece(probs, labels, kind="probs", estimator=estimator, n_boot=2).estimate[0]
        assert abs(booted - direct) <= ORDER_TOL
        if metric is None:
            continue
        summary = evaluate(probs, labels, kind="probs", n_bins=m, binning="equal-mass", n_boot=0, calibrators=())
        assert abs(summary.metrics[metric].value - direct) <= ORDER_TOL
        (figure,) = summary.reliability[metric]  # the bins the command's figure draws
        assert abs(figure.ece() - direct) <= ORDER_TOL
        # the engine bins exp(log p), which may differ from p in the last bit
        np.testing.assert_allclose(figure.edges, equal_mass_edges(p, m), rtol=ORDER_TOL, atol=0)


def test_the_command_gives_the_libraries_number_on_rounded_scores(tmp_path):
    """The issue's case: 333 scores rounded to 2 decimals, 15 bins (the engine's quantile edges gave 0.062192
    against 0.060931 from the rank rule before one definition)."""
    rng = np.random.default_rng(5)
    p = np.round(rng.uniform(0.2, 1.0, 333), 2)
    labels = (rng.random(333) < p).astype(int)
    path = tmp_path / "rounded.csv"
    path.write_text("p0,p1,y\n" + "".join(f"{1 - v:.2f},{v:.2f},{y}\n" for v, y in zip(p, labels, strict=True)))
    done = run_calib(
        *("evaluate", str(path), "--kind", "probs", "--labels", "y", "--binning", "equal-mass"),
        *("--n-boot", "0", "--calibrators", "none", "--json"),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    value = {m["metric"]: m["value"] for m in json.loads(done.stdout)["metrics"]}["ECE positive class"]
    probs = np.column_stack([1 - p, p])
    expected = BinnedCalibrationError("binary", n_bins=15, strategy="equal-mass")(probs, labels, kind="probs")
    assert abs(value - expected) <= ORDER_TOL
