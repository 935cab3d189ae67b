"""Tests of calib.scoring.decomposition: calibration-refinement and epistemic-irreducible decompositions.

Golden values: survey Silva Filho et al. (2023), Sect. 3.1, Table 2, recomputed exactly in the
project notes (notes/001 §2.3 and Appendix A).
"""

import numpy as np
import pytest

from calib.scoring.decomposition import (
    CalibrationRefinement,
    EpistemicIrreducible,
    calibration_refinement,
    epistemic_irreducible,
    group_frequencies,
)
from calib.scoring.scores import brier, cross_entropy
from calib.validation import CalibInputError

# Table 2: 10 instances, K = 3. Classes 1/2/3 are columns 0/1/2.
T2_SCORES = np.array([[0.9, 0.1, 0.0]] * 4 + [[0.6, 0.2, 0.2]] * 6)
T2_LABELS = np.array([0, 0, 0, 1, 0, 1, 1, 1, 2, 2])
T2_POSTERIORS = np.array([[0.75, 0.25, 0.0]] * 4 + [[0.5, 0.5, 0.0]] * 2 + [[0.0, 0.5, 0.5]] * 4)
T2_CALIBRATED = np.array([[0.75, 0.25, 0.0]] * 4 + [[1 / 6, 1 / 2, 1 / 3]] * 6)


def _random_problem(seed, n=400, k=4, n_distinct=25):
    """Scores with many repeated rows (so that groups hold several labels) and random labels."""
    rng = np.random.default_rng(seed)
    distinct = rng.dirichlet(np.ones(k), size=n_distinct)
    scores = distinct[rng.integers(0, n_distinct, size=n)]
    labels = rng.integers(0, k, size=n)
    return scores, labels


# --- Table 2 golden values ---------------------------------------------------------------------------


def test_table2_brier_calibration_refinement():
    result = calibration_refinement(T2_SCORES, T2_LABELS, kind="probs", loss="brier")
    assert isinstance(result, CalibrationRefinement)
    assert result.total == pytest.approx(0.712, abs=1e-6)
    assert result.calibration == pytest.approx(0.195333, abs=1e-6)
    assert result.refinement == pytest.approx(0.516667, abs=1e-6)
    assert result.residual == pytest.approx(0.0, abs=1e-12)


def test_table2_brier_epistemic_irreducible():
    result = epistemic_irreducible(T2_SCORES, T2_LABELS, T2_POSTERIORS, kind="probs", loss="brier")
    assert isinstance(result, EpistemicIrreducible)
    assert result.total == pytest.approx(0.712, abs=1e-6)
    assert result.epistemic == pytest.approx(0.262, abs=1e-6)
    assert result.irreducible == pytest.approx(0.45, abs=1e-6)
    # On Table 2, Q equals the label frequencies among instances sharing X, so the sample identity is exact.
    assert result.residual == pytest.approx(0.0, abs=1e-12)


def test_table2_log_loss_decompositions():
    cr = calibration_refinement(T2_SCORES, T2_LABELS, kind="probs", loss="log")
    assert cr.total == pytest.approx(1.117668, abs=1e-6)
    assert cr.calibration == pytest.approx(0.285892, abs=1e-6)
    assert cr.refinement == pytest.approx(0.831777, abs=1e-6)
    ei = epistemic_irreducible(T2_SCORES, T2_LABELS, T2_POSTERIORS, kind="probs", loss="log")
    assert ei.total == pytest.approx(1.117668, abs=1e-6)
    assert ei.epistemic == pytest.approx(0.476846, abs=1e-6)
    assert ei.irreducible == pytest.approx(0.640822, abs=1e-6)


def test_table2_calibrated_column_is_the_group_frequency():
    with np.errstate(divide="ignore"):
        logp = np.log(T2_SCORES)
    freq = group_frequencies(logp, T2_LABELS)
    np.testing.assert_allclose(freq, T2_CALIBRATED, atol=1e-15)
    np.testing.assert_allclose(freq[4:], np.tile([1 / 6, 1 / 2, 1 / 3], (6, 1)), atol=1e-15)


@pytest.mark.parametrize("loss", ["brier", "log"])
def test_explicit_calibrated_matches_the_default(loss):
    default = calibration_refinement(T2_SCORES, T2_LABELS, kind="probs", loss=loss)
    explicit = calibration_refinement(T2_SCORES, T2_LABELS, kind="probs", loss=loss, calibrated=T2_CALIBRATED)
    for field in ("total", "calibration", "refinement"):
        assert getattr(explicit, field) == pytest.approx(getattr(default, field), abs=1e-12)


def test_default_loss_is_brier_and_inputs_may_be_logits():
    default = calibration_refinement(T2_SCORES[4:], T2_LABELS[4:], kind="probs")
    assert default.total == calibration_refinement(T2_SCORES[4:], T2_LABELS[4:], kind="probs", loss="brier").total
    logits = np.log(T2_SCORES[4:]) + 3.0  # rows without zeros; any shift is a valid logit
    from_logits = calibration_refinement(logits, T2_LABELS[4:], kind="logits", loss="log")
    from_probs = calibration_refinement(T2_SCORES[4:], T2_LABELS[4:], kind="probs", loss="log")
    assert from_logits.total == pytest.approx(from_probs.total, abs=1e-12)
    assert from_logits.calibration == pytest.approx(from_probs.calibration, abs=1e-12)


# --- identities and special cases on random data ------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("loss", ["brier", "log"])
def test_total_is_calibration_plus_refinement_on_random_data(seed, loss):
    scores, labels = _random_problem(seed)
    result = calibration_refinement(scores, labels, kind="probs", loss=loss)
    assert result.total == pytest.approx(result.calibration + result.refinement, abs=1e-12)
    assert result.calibration > 0 and result.refinement > 0
    expected_total = (
        brier(scores, labels, kind="probs", scaling="sum")
        if loss == "brier"
        else cross_entropy(scores, labels, kind="probs")
    )
    assert result.total == pytest.approx(expected_total, abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("loss", ["brier", "log"])
def test_epistemic_identity_holds_when_posteriors_are_group_frequencies(seed, loss):
    scores, labels = _random_problem(seed)
    # Q = frequencies among instances sharing a "covariate" (here: the score row), so the cross term vanishes
    q = group_frequencies(np.log(scores), labels)
    result = epistemic_irreducible(scores, labels, q, kind="probs", loss=loss)
    assert result.total == pytest.approx(result.epistemic + result.irreducible, abs=1e-12)


def test_residual_reports_the_brier_cross_term_for_an_inconsistent_reference():
    scores, labels = _random_problem(3)
    rng = np.random.default_rng(3)
    q = rng.dirichlet(np.ones(4), size=labels.size)
    result = epistemic_irreducible(scores, labels, q, kind="probs", loss="brier")
    onehot = np.eye(4)[labels]
    cross = 2 * np.mean(np.sum((scores - q) * (q - onehot), axis=1))
    assert abs(result.residual) > 1e-3
    assert result.residual == pytest.approx(cross, abs=1e-12)


@pytest.mark.parametrize("loss", ["brier", "log"])
def test_calibration_term_vanishes_for_scores_equal_to_group_frequencies(loss):
    # 3 groups of 10 with class counts (5, 3, 2), (1, 8, 1), (0, 4, 6); scores = those frequencies
    counts = np.array([[5, 3, 2], [1, 8, 1], [0, 4, 6]])
    scores = np.repeat(counts / 10, 10, axis=0)
    labels = np.concatenate([np.repeat(np.arange(3), row) for row in counts])
    result = calibration_refinement(scores, labels, kind="probs", loss=loss)
    assert result.calibration == pytest.approx(0.0, abs=1e-15)
    assert result.refinement == pytest.approx(result.total, abs=1e-12)


@pytest.mark.parametrize("loss", ["brier", "log"])
def test_refinement_vanishes_when_no_score_is_shared_across_classes(loss):
    # Survey Sect. 3.1: refinement loss is 0 iff no two instances of different classes share S
    scores = np.array([[0.7, 0.2, 0.1], [0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]])
    labels = np.array([0, 0, 2, 1])
    result = calibration_refinement(scores, labels, kind="probs", loss=loss)
    assert result.refinement == pytest.approx(0.0, abs=1e-15)
    assert result.calibration == pytest.approx(result.total, abs=1e-12)


def test_epistemic_term_vanishes_when_scores_are_the_true_posteriors():
    result = epistemic_irreducible(T2_POSTERIORS, T2_LABELS, T2_POSTERIORS, kind="probs", loss="log")
    assert result.epistemic == pytest.approx(0.0, abs=1e-15)
    assert result.irreducible == pytest.approx(0.640822, abs=1e-6)


def test_zero_score_on_the_true_class_gives_infinite_log_loss():
    scores = np.array([[1.0, 0.0], [1.0, 0.0], [0.5, 0.5]])
    labels = np.array([0, 1, 1])
    result = calibration_refinement(scores, labels, kind="probs", loss="log")
    assert result.total == np.inf
    assert result.calibration == np.inf
    assert np.isfinite(result.refinement)
    # Brier stays finite and exact
    brier_parts = calibration_refinement(scores, labels, kind="probs", loss="brier")
    assert brier_parts.total == pytest.approx(brier_parts.calibration + brier_parts.refinement, abs=1e-15)


def test_results_are_frozen():
    result = calibration_refinement(T2_SCORES, T2_LABELS, kind="probs")
    with pytest.raises(AttributeError):
        result.total = 0.0


# --- rejected arguments -------------------------------------------------------------------------------


def test_bad_shapes_and_arguments_are_rejected():
    with pytest.raises(CalibInputError, match="calibrated"):
        calibration_refinement(T2_SCORES, T2_LABELS, kind="probs", calibrated=T2_CALIBRATED[:5])
    with pytest.raises(CalibInputError, match="true_posteriors"):
        epistemic_irreducible(T2_SCORES, T2_LABELS, T2_POSTERIORS[:, :2], kind="probs", loss="brier")
    with pytest.raises(CalibInputError, match="labels"):
        calibration_refinement(T2_SCORES, T2_LABELS[:-1], kind="probs")
    with pytest.raises(CalibInputError, match="shape"):
        calibration_refinement(T2_SCORES[:, 0], T2_LABELS, kind="probs")
    with pytest.raises(CalibInputError, match="loss"):
        calibration_refinement(T2_SCORES, T2_LABELS, kind="probs", loss="hinge")
    with pytest.raises(CalibInputError, match="loss"):
        epistemic_irreducible(T2_SCORES, T2_LABELS, T2_POSTERIORS, kind="probs", loss="brier_half")
    with pytest.raises(CalibInputError, match="kind"):
        calibration_refinement(T2_SCORES, T2_LABELS, kind="probabilities")
    with pytest.raises(CalibInputError, match="calibrated"):
        calibration_refinement(T2_SCORES, T2_LABELS, kind="probs", calibrated=T2_CALIBRATED * 2)
