"""Tests of calib.calibration_errors.lenses: the lenses of Vaicenavicius et al. (2019), Sect. 3.2 and Example 2.

Golden values: Tables 1 and 2 of the paper (Examples 1 and 3), checked by hand in notes/003 §1.2:
Table 1 is calibrated under the maximum lens and marginally for every class but not canonically;
Table 2 is calibrated under the maximum lens only.
"""

import re

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import softmax

from calib.calibration_errors.lenses import Canonical, ClassGroups, TopK, induced_deviation, marginal_lens, maximum_lens
from calib.data.notion_examples import finite_model
from calib.validation import CalibInputError

# Calibrated induced models pool atoms whose conditionals average to the prediction exactly in
# rational arithmetic; the only error left is float rounding of sums of a few numbers in [0, 1].
CALIBRATED_TOL = 1e-12


def _deviation(name, lens):
    model = finite_model(name)
    return induced_deviation(lens, model.predictions, model.conditionals, model.weights)


# --- Tables 1 and 2: calibration under the lenses --------------------------------------------------


@pytest.mark.parametrize("name", ["table1", "table2"])
def test_tables_are_not_canonically_calibrated(name):
    # Every atom of both tables has max |r - g| = 0.1 (e.g. (0.2, 0.2, 0.6) vs (0.1, 0.3, 0.6) in
    # Table 1 and (0.7, 0.2, 0.1) vs (0.6, 0.1, 0.3) -> 0.2 in Table 2); the brief's bound is 0.05.
    assert _deviation(name, Canonical()) > 0.05


@pytest.mark.parametrize("expected", [("table1", 0.1), ("table2", 0.2)])
def test_canonical_deviation_matches_hand_values(expected):
    # Table 1: every atom differs from its conditional by exactly 0.1 in some class. Table 2: atom 1
    # has |0.1 - 0.3| = 0.2 in class 2, atom 2 has |0.0 - 0.2| = 0.2. Tolerance: float rounding.
    name, value = expected
    assert _deviation(name, Canonical()) == pytest.approx(value, abs=1e-12)


@pytest.mark.parametrize("lens", [TopK(1), maximum_lens()], ids=["TopK(1)", "maximum_lens"])
@pytest.mark.parametrize("name", ["table1", "table2"])
def test_tables_are_calibrated_under_the_maximum_lens(name, lens):
    # Table 1: every max is 0.6 and the conditional of the argmax averages (0.6+0.7+0.6+0.5+0.7+0.5)/6;
    # Table 2: (0.7 + 0.5) / 2 = 0.6 (notes/003 §1.2).
    assert _deviation(name, lens) < CALIBRATED_TOL


@pytest.mark.parametrize("cls", [0, 1, 2])
def test_table1_is_marginally_calibrated_for_every_class(cls):
    assert _deviation("table1", marginal_lens(cls, 3)) < CALIBRATED_TOL


@pytest.mark.parametrize("cls", [0, 1, 2])
def test_table2_is_not_marginally_calibrated_for_any_class(cls):
    # The two atoms have distinct marginals in every class, so no pooling: class 0 is off by 0.1
    # (0.6 -> 0.7, 0.4 -> 0.3), class 1 by 0.1, class 2 by 0.2.
    hand = {0: 0.1, 1: 0.1, 2: 0.2}[cls]
    assert _deviation("table2", marginal_lens(cls, 3)) == pytest.approx(hand, abs=1e-12)


def test_marginal_lens_is_the_two_group_partition():
    lens = marginal_lens(1, 4)
    assert lens == ClassGroups(((1,), (0, 2, 3)))
    with pytest.raises(CalibInputError):
        marginal_lens(4, 4)


def test_induced_deviation_rejects_mismatched_inputs():
    model = finite_model("table1")
    with pytest.raises(CalibInputError):
        induced_deviation(Canonical(), model.predictions, model.conditionals[:-1], model.weights)
    with pytest.raises(CalibInputError):
        induced_deviation(Canonical(), model.predictions, model.conditionals, -model.weights)


# --- TopK ----------------------------------------------------------------------------------------


def test_top1_gives_confidence_and_hit_target():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(4), size=200)
    labels = rng.integers(0, 4, size=200)
    problem = TopK(1)(probs, labels, kind="probs")
    top = probs.max(axis=1)
    # 1 - max as computed by the lens is sum - max; both are float sums of four numbers.
    assert_allclose(problem.probs, np.column_stack([top, 1.0 - top]), rtol=0, atol=1e-12)
    assert_array_equal(problem.labels, np.where(probs.argmax(axis=1) == labels, 0, 1))
    assert {0, 1} <= set(problem.labels.tolist())  # both outcomes occur, so the check has teeth


def test_top1_ties_go_to_the_lower_class_index():
    probs = np.array([[0.4, 0.4, 0.2], [0.2, 0.4, 0.4], [0.3, 0.4, 0.3]])
    # Row 0: classes 0 and 1 tie -> class 0 is "the" argmax; row 1: 1 and 2 tie -> class 1.
    hits = TopK(1)(probs, [0, 1, 1], kind="probs").labels
    misses = TopK(1)(probs, [1, 2, 0], kind="probs").labels
    assert_array_equal(hits, [0, 0, 0])
    assert_array_equal(misses, [1, 1, 1])


def test_topk_rows_sum_to_one_and_rest_target_is_k():
    rng = np.random.default_rng(1)
    probs = rng.dirichlet(np.ones(6), size=300)
    labels = rng.integers(0, 6, size=300)
    order = np.argsort(-probs, axis=1)
    for k in (1, 2, 3, 5):
        problem = TopK(k)(probs, labels, kind="probs")
        assert problem.probs.shape == (300, k + 1)
        # Tolerance: a sum of six floats in [0, 1].
        assert_allclose(problem.probs.sum(axis=1), 1.0, rtol=0, atol=1e-12)
        assert_allclose(problem.probs[:, :k], np.sort(probs, axis=1)[:, ::-1][:, :k], rtol=0, atol=0)
        rank = np.argmax(order == labels[:, None], axis=1)  # position of the true class in the ranking
        assert_array_equal(problem.labels, np.where(rank < k, rank, k))


def test_topk_hand_example():
    probs = np.array([[0.1, 0.5, 0.15, 0.25]])
    # ranking: class 1 (0.5), class 3 (0.25), class 2 (0.15), class 0 (0.1)
    expected = {1: 0, 3: 1, 2: 2, 0: 2}
    for label, target in expected.items():
        problem = TopK(2)(probs, [label], kind="probs")
        assert problem.labels.tolist() == [target]
        assert_allclose(problem.probs, [[0.5, 0.25, 0.25]], rtol=0, atol=1e-15)


@pytest.mark.parametrize("k", [3, 4])
def test_topk_with_k_at_least_k_classes_raises(k):
    probs = np.full((2, 3), 1 / 3)
    with pytest.raises(CalibInputError, match="k < K"):
        TopK(k)(probs, [0, 1], kind="probs")


def test_topk_rejects_k_zero():
    with pytest.raises(CalibInputError):
        TopK(0)(np.full((2, 3), 1 / 3), [0, 1], kind="probs")


# --- ClassGroups ---------------------------------------------------------------------------------

FIG1_GROUPS = ((0, 1, 2), (3, 4, 5), (6, 7, 8, 9))


def test_class_groups_sum_probabilities_and_map_labels():
    rng = np.random.default_rng(2)
    probs = rng.dirichlet(np.ones(10), size=100)
    labels = rng.integers(0, 10, size=100)
    problem = ClassGroups(FIG1_GROUPS)(probs, labels, kind="probs")
    expected = np.column_stack([probs[:, 0:3].sum(1), probs[:, 3:6].sum(1), probs[:, 6:10].sum(1)])
    assert_allclose(problem.probs, expected, rtol=0, atol=1e-15)  # same sums up to summation order
    assert_array_equal(problem.labels, np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, 2])[labels])


def test_class_groups_order_inside_groups_does_not_matter():
    groups = ((7, 2), (0, 9, 4), (1, 3, 5, 6, 8))
    probs = np.random.default_rng(3).dirichlet(np.ones(10), size=20)
    labels = np.arange(20) % 10
    problem = ClassGroups(groups)(probs, labels, kind="probs")
    assert_allclose(problem.probs[:, 0], probs[:, 2] + probs[:, 7], rtol=0, atol=1e-15)
    assert_array_equal(problem.labels[:10], [1, 2, 0, 2, 1, 2, 2, 0, 2, 1])


@pytest.mark.parametrize(
    "groups",
    [
        ((0, 1, 2), (3, 4, 5), (6, 7, 8)),  # class 9 missing
        ((0, 1, 2), (2, 3, 4, 5), (6, 7, 8, 9)),  # class 2 twice
        ((0, 1, 2), (), (3, 4, 5, 6, 7, 8, 9)),  # empty group
        ((0, 1, 2), (3, 4, 5), (6, 7, 8, 9, 10)),  # class 10 does not exist
    ],
    ids=["missing", "duplicate", "empty", "out-of-range"],
)
def test_class_groups_must_partition_the_classes(groups):
    probs = np.full((2, 10), 0.1)
    named = re.escape(str([list(g) for g in groups]))
    with pytest.raises(CalibInputError, match=named):
        ClassGroups(groups)(probs, [0, 9], kind="probs")


# --- Lens.__call__ ---------------------------------------------------------------------------------


@pytest.mark.parametrize("lens", [Canonical(), TopK(1), TopK(2), ClassGroups(((0, 2), (1, 3), (4,)))])
def test_logits_equal_probs_after_softmax(lens):
    rng = np.random.default_rng(4)
    logits = rng.normal(scale=2.0, size=(50, 5))
    labels = rng.integers(0, 5, size=50)
    from_logits = lens(logits, labels, kind="logits")
    from_probs = lens(softmax(logits, axis=1), labels, kind="probs")
    # exp(log_softmax) vs softmax differ by a few ulps; continuous logits have no ties to flip.
    assert_allclose(from_logits.probs, from_probs.probs, rtol=0, atol=1e-13)
    assert_array_equal(from_logits.labels, from_probs.labels)


@pytest.mark.parametrize("labels", [[0, 3], [-1, 0], [0.5, 1]])
@pytest.mark.parametrize("lens", [Canonical(), TopK(1), ClassGroups(((0,), (1, 2)))])
def test_bad_labels_raise(lens, labels):
    with pytest.raises(CalibInputError):
        lens(np.full((2, 3), 1 / 3), labels, kind="probs")


def test_bad_scores_raise():
    with pytest.raises(CalibInputError):
        TopK(1)([[0.5, 0.6, 0.1]], [0], kind="probs")  # row sums to 1.2
    with pytest.raises(CalibInputError):
        TopK(1)([[0.5, 0.5]], [0, 1], kind="probs")  # one row, two labels
    with pytest.raises(CalibInputError):
        TopK(1)([[0.5, 0.5]], [0], kind="odds")


def test_canonical_induced_problem_is_the_input():
    rng = np.random.default_rng(5)
    probs = rng.dirichlet(np.ones(4), size=100)
    labels = rng.integers(0, 4, size=100)
    problem = Canonical()(probs, labels, kind="probs")
    assert_array_equal(problem.probs, probs)  # rows summing to 1 within 1e-12 are used as given
    assert_array_equal(problem.labels, labels)
