"""Tests of calib.scoring.decisions: cost matrices, Bayes decisions (eq. 1), expected cost (eq. 7), NRisk."""

import numpy as np
import pytest
from scipy.special import log_softmax, softmax

from calib.data.synthetic import gaussian_posteriors
from calib.scoring.decisions import (
    bayes_decisions,
    expected_cost,
    imbalanced_costs,
    naive_cost,
    normalized_risk,
    zero_one_costs,
)
from calib.validation import CalibInputError

# Float rounding of sums of a few products of numbers of order 1.
EXACT = 1e-14


def test_zero_one_costs():
    c = zero_one_costs(3)
    np.testing.assert_array_equal(c, [[0, 1, 1], [1, 0, 1], [1, 1, 0]])


def test_zero_one_costs_with_abstention_column():
    c = zero_one_costs(3, abstention=0.1)
    assert c.shape == (3, 4)
    np.testing.assert_array_equal(c[:, :3], 1 - np.eye(3))
    np.testing.assert_array_equal(c[:, 3], [0.1, 0.1, 0.1])


def test_imbalanced_costs_put_the_cost_on_the_last_row_except_its_diagonal():
    c = imbalanced_costs(4)
    expected = 1.0 - np.eye(4)
    expected[3, :3] = 10.0
    np.testing.assert_array_equal(c, expected)
    # paper 000 Sec. 3.2, K = 2: c_21 = 10 (true class H2 decided as H1), c_12 = 1
    np.testing.assert_array_equal(imbalanced_costs(2), [[0, 1], [10, 0]])
    np.testing.assert_array_equal(imbalanced_costs(3, costly_class=0, cost=5.0), [[0, 5, 5], [1, 0, 1], [1, 1, 0]])


def test_bayes_decisions_for_zero_one_costs_are_argmax():
    rng = np.random.default_rng(0)
    q = rng.dirichlet(np.ones(5), size=300)
    np.testing.assert_array_equal(bayes_decisions(q, zero_one_costs(5), kind="probs"), q.argmax(axis=1))


def test_bayes_decision_ties_go_to_the_lowest_index():
    np.testing.assert_array_equal(bayes_decisions([[0.5, 0.5], [0.25, 0.75]], zero_one_costs(2), kind="probs"), [0, 1])


@pytest.mark.parametrize("kind", ["logits", "logprobs", "probs"])
def test_exact_posterior_ties_go_to_the_lowest_index_despite_rounded_expected_costs(kind):
    # classes 1 and 3 tie exactly; 1 - q_j summed over the other classes rounds differently for j = 1 and 3
    logits = np.array([[0.0, 0.25, -1.0, 0.25], [0.1, 0.3, 0.3, 0.3]])
    scores = {"logits": logits, "logprobs": log_softmax(logits, axis=1), "probs": softmax(logits, axis=1)}[kind]
    np.testing.assert_array_equal(bayes_decisions(scores, zero_one_costs(4), kind=kind), [1, 1])


def test_abstention_happens_exactly_below_max_posterior_0_9():
    # With 0-1 costs and abstention cost 0.1, deciding class j costs 1 - q_j and abstaining costs 0.1,
    # so the Bayes decision abstains (index K) exactly when max_j q_j < 0.9.
    rng = np.random.default_rng(0)
    q = rng.dirichlet(np.full(3, 0.3), size=2000)
    q = q[np.abs(q.max(axis=1) - 0.9) > 1e-9]  # keep clear of the tie at max q = 0.9
    dec = bayes_decisions(q, zero_one_costs(3, abstention=0.1), kind="probs")
    abstain = q.max(axis=1) < 0.9
    assert 0 < abstain.sum() < abstain.size  # both outcomes occur
    np.testing.assert_array_equal(dec[abstain], 3)
    np.testing.assert_array_equal(dec[~abstain], q.argmax(axis=1)[~abstain])


def test_expected_cost_with_zero_one_costs_is_the_error_rate():
    rng = np.random.default_rng(0)
    q = rng.dirichlet(np.ones(4), size=500)
    y = rng.integers(0, 4, size=500)
    dec = bayes_decisions(q, zero_one_costs(4), kind="probs")
    assert expected_cost(y, dec, zero_one_costs(4)) == pytest.approx(1.0 - np.mean(dec == y), rel=EXACT)


def test_expected_cost_hand_computed():
    # eq. 7: class 0 has 2 samples (one decided 1), class 1 has 2 (one abstained), class 2 has 1 (decided 0)
    y = [0, 0, 1, 1, 2]
    d = [0, 1, 1, 3, 0]
    c = [[0, 1, 2, 0.1], [1, 0, 1, 0.1], [5, 1, 0, 0.1]]
    # empirical priors [2/5, 2/5, 1/5]: 2/5 * 1 * 1/2 + 2/5 * 0.1 * 1/2 + 1/5 * 5 * 1
    assert expected_cost(y, d, c) == pytest.approx(0.2 + 0.02 + 1.0, rel=EXACT)
    # explicit priors [0.5, 0.3, 0.2]: 0.5 * 1/2 + 0.3 * 0.1/2 + 0.2 * 5
    assert expected_cost(y, d, c, priors=[0.5, 0.3, 0.2]) == pytest.approx(0.25 + 0.015 + 1.0, rel=EXACT)


def test_normalized_risk_of_naive_system_is_one():
    rng = np.random.default_rng(0)
    y = rng.choice(3, size=300, p=[0.2, 0.5, 0.3])
    p = np.bincount(y, minlength=3) / y.size
    naive = np.tile(p, (300, 1))
    assert normalized_risk(naive, y, zero_one_costs(3), kind="probs") == pytest.approx(1.0, rel=EXACT)


def test_normalized_risk_hand_computed_with_explicit_priors():
    q = np.array([[0.9, 0.1], [0.4, 0.6], [0.3, 0.7], [0.8, 0.2], [0.55, 0.45]])
    y = np.array([0, 0, 1, 1, 1])
    c = imbalanced_costs(2)  # [[0, 1], [10, 0]]
    # Bayes: decide 1 when 10 q1 > q0, i.e. q1 > 1/11: every sample here is decided 1.
    # R_01 = 2/2, R_10 = 0/3. Priors [0.7, 0.3]: EC = 0.7 * 1 * 1 = 0.7.
    # Best constant decision: min(0.3 * 10, 0.7 * 1) = 0.7, so NRisk = 1.
    assert normalized_risk(q, y, c, kind="probs", priors=[0.7, 0.3]) == pytest.approx(1.0, rel=EXACT)
    # 0-1 costs: decisions [0, 1, 1, 0, 0]; R_01 = 1/2, R_10 = 2/3.
    # Priors [0.7, 0.3]: EC = 0.35 + 0.2 = 0.55; naive = min(0.3, 0.7) = 0.3.
    assert normalized_risk(q, y, zero_one_costs(2), kind="probs", priors=[0.7, 0.3]) == pytest.approx(
        0.55 / 0.3, rel=EXACT
    )
    # Empirical priors [0.4, 0.6]: EC = 0.2 + 0.4 = 0.6; naive = 0.4.
    assert normalized_risk(q, y, zero_one_costs(2), kind="probs") == pytest.approx(0.6 / 0.4, rel=EXACT)


def test_naive_cost_is_the_best_constant_decision():
    assert naive_cost(zero_one_costs(3, abstention=0.1), [0.5, 0.3, 0.2]) == pytest.approx(0.1, rel=EXACT)
    assert naive_cost(zero_one_costs(3), [0.5, 0.3, 0.2]) == pytest.approx(0.5, rel=EXACT)


def test_normalized_risk_of_figure_6_systems():
    # notes/000 §3.4: NRisk-01 / -01r / -im, independent re-run of the authors' code, K=10, N=2000.
    # Printed to 4 decimals: tolerance half a unit of the last digit.
    data = gaussian_posteriors(n_classes=10, n_samples=2000, prior1=0.8, variance=0.08, seed=0, rng="paper")
    published = {
        "cal": (0.3965, 0.3231, 0.2803),
        "mcp": (1.8737, 1.3677, 1.4583),
        "mcs": (0.3965, 0.6298, 0.3245),
        "mcps": (1.8737, 3.0536, 1.0240),
    }
    costs = (zero_one_costs(10), zero_one_costs(10, abstention=0.1), imbalanced_costs(10))
    for name, values in published.items():
        for c, value in zip(costs, values, strict=True):
            got = normalized_risk(data.systems[name], data.labels, c, kind="logprobs")
            assert got == pytest.approx(value, abs=5e-5), name


@pytest.mark.parametrize(
    ("costs", "pattern"),
    [
        (np.ones((3, 3)), "costs must have shape \\(K=2"),
        (np.ones((2, 1)), "costs must have shape \\(K=2"),
        (np.ones(2), "costs must have shape \\(K=2"),
        ([[0, 1], [-1, 0]], "costs must be finite and non-negative"),
        ([[0, 1], [np.inf, 0]], "costs must be finite and non-negative"),
    ],
)
def test_bad_costs_are_rejected(costs, pattern):
    q = np.array([[0.3, 0.7], [0.6, 0.4]])
    with pytest.raises(CalibInputError, match=pattern):
        bayes_decisions(q, costs, kind="probs")
    with pytest.raises(CalibInputError, match=pattern):
        normalized_risk(q, [0, 1], costs, kind="probs")


def test_expected_cost_rejects_bad_arguments():
    c = zero_one_costs(2)
    with pytest.raises(CalibInputError, match="costs must be finite and non-negative"):
        expected_cost([0, 1], [0, 1], [[0, -1], [1, 0]])
    with pytest.raises(CalibInputError, match="costs must be a \\(K, D\\) matrix"):
        expected_cost([0, 1], [0, 1], [0, 1])
    with pytest.raises(CalibInputError, match="decisions must lie in"):
        expected_cost([0, 1], [0, 2], c)
    with pytest.raises(CalibInputError, match="decisions must be a 1-D vector"):
        expected_cost([0, 1], [[0, 1]], c)
    with pytest.raises(CalibInputError, match="labels has 3 entries"):
        expected_cost([0, 1, 1], [0, 1], c)
    with pytest.raises(CalibInputError, match="labels has no samples of classes \\[1\\]"):
        expected_cost([0, 0], [0, 1], c, priors=[0.5, 0.5])


@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda: zero_one_costs(1), "n_classes"),
        (lambda: zero_one_costs(2, abstention=-0.1), "abstention"),
        (lambda: zero_one_costs(2, abstention=np.nan), "abstention"),
        (lambda: imbalanced_costs(3, costly_class=3), "costly_class"),
    ],
)
def test_bad_cost_constructor_arguments(call, pattern):
    with pytest.raises(CalibInputError, match=pattern):
        call()
