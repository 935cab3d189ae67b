"""Tests of calib.scoring.scores: CE (eq. 8), Brier (eq. 9), prior-weighted forms (eqs. 36-37), semi-empirical CE."""

import numpy as np
import pytest

from calib.data.synthetic import gaussian_posteriors
from calib.scoring.scores import brier, cross_entropy, semi_empirical_cross_entropy
from calib.validation import CalibInputError

# Float rounding of sums of a handful of logs / squares of numbers of order 1.
EXACT = 1e-14

Q = np.array([[0.2, 0.3, 0.5], [0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.25, 0.25, 0.5]])
Y = np.array([2, 0, 1, 1])


def _naive(labels, n_classes):
    """Posteriors equal to the empirical priors for every sample (the best naive system)."""
    p = np.bincount(labels, minlength=n_classes) / labels.size
    return np.tile(p, (labels.size, 1))


def test_cross_entropy_hand_computed():
    expected = -(np.log(0.5) + np.log(0.7) + np.log(0.8) + np.log(0.25)) / 4
    assert cross_entropy(Q, Y, kind="probs") == pytest.approx(expected, rel=EXACT)
    assert cross_entropy(np.log(Q), Y, kind="logprobs") == pytest.approx(expected, rel=EXACT)


def test_nce_hand_computed():
    # empirical priors [1/4, 1/2, 1/4]: entropy = 1.5 log 2
    expected = -(np.log(0.5) + np.log(0.7) + np.log(0.8) + np.log(0.25)) / 4 / (1.5 * np.log(2))
    assert cross_entropy(Q, Y, kind="probs", normalize=True) == pytest.approx(expected, rel=EXACT)


def test_nce_of_naive_system_is_one():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, size=200)
    assert cross_entropy(_naive(y, 4), y, kind="probs", normalize=True) == pytest.approx(1.0, rel=EXACT)


def test_nbs_of_naive_system_is_one():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, size=200)
    for scaling in ("mean", "sum"):
        assert brier(_naive(y, 4), y, kind="probs", scaling=scaling, normalize=True) == pytest.approx(1.0, rel=EXACT)


def test_brier_mean_is_sum_over_k():
    rng = np.random.default_rng(0)
    q = rng.dirichlet(np.ones(5), size=50)
    y = rng.integers(0, 5, size=50)
    bs_sum = brier(q, y, kind="probs", scaling="sum")
    assert brier(q, y, kind="probs", scaling="mean") == pytest.approx(bs_sum / 5, rel=EXACT)
    # NBS does not depend on the scaling
    assert brier(q, y, kind="probs", scaling="mean", normalize=True) == pytest.approx(
        brier(q, y, kind="probs", scaling="sum", normalize=True), rel=EXACT
    )


def test_brier_toy_case_of_the_notes():
    # notes/000 §1.2: a 2-sample toy case gives 0.125 (paper scaling) against a classic Brier of 0.25.
    # One sample is perfect (loss 0), the other has q = [1/2, 1/2]: classic loss 1/4 + 1/4 = 1/2.
    q = np.array([[1.0, 0.0], [0.5, 0.5]])
    y = np.array([0, 1])
    assert brier(q, y, kind="probs", scaling="sum") == 0.25
    assert brier(q, y, kind="probs", scaling="mean") == 0.125


def test_brier_hand_computed():
    # classic per-sample losses: (0.2^2 + 0.3^2 + 0.5^2), (0.3^2 + 0.2^2 + 0.1^2), (0.1^2 + 0.2^2 + 0.1^2),
    # (0.25^2 + 0.75^2 + 0.5^2)
    losses = np.array([0.38, 0.14, 0.06, 0.875])
    assert brier(Q, Y, kind="probs", scaling="sum") == pytest.approx(losses.mean(), rel=EXACT)
    assert brier(Q, Y, kind="probs", scaling="mean") == pytest.approx(losses.mean() / 3, rel=EXACT)


def test_prior_weighted_ce_with_empirical_priors_equals_plain_ce():
    rng = np.random.default_rng(0)
    q = rng.dirichlet(np.ones(3), size=60)
    y = rng.integers(0, 3, size=60)
    emp = np.bincount(y, minlength=3) / y.size
    assert cross_entropy(q, y, kind="probs", priors=emp) == pytest.approx(cross_entropy(q, y, kind="probs"), rel=EXACT)
    assert brier(q, y, kind="probs", scaling="mean", priors=emp) == pytest.approx(
        brier(q, y, kind="probs", scaling="mean"), rel=EXACT
    )


def test_prior_weighted_ce_hand_computed():
    # eq. 36: class counts N = [1, 2, 1]; weight P_h / N_h per sample
    priors = [0.5, 0.25, 0.25]
    expected = -(0.25 * np.log(0.5) + 0.5 * np.log(0.7) + 0.125 * (np.log(0.8) + np.log(0.25)))
    assert cross_entropy(Q, Y, kind="probs", priors=priors) == pytest.approx(expected, rel=EXACT)
    # NCE with explicit priors divides by their entropy: 1.5 log 2 for [1/2, 1/4, 1/4]
    assert cross_entropy(Q, Y, kind="probs", priors=priors, normalize=True) == pytest.approx(
        expected / (1.5 * np.log(2)), rel=EXACT
    )


def test_prior_weighted_brier_hand_computed():
    # eq. 37 with the same weights; classic per-sample losses as in test_brier_hand_computed
    priors = [0.5, 0.25, 0.25]
    expected = 0.25 * 0.38 + 0.5 * 0.14 + 0.125 * (0.06 + 0.875)
    assert brier(Q, Y, kind="probs", scaling="sum", priors=priors) == pytest.approx(expected, rel=EXACT)
    naive = 0.5 * 0.5 + 2 * 0.25 * 0.75  # sum_i P_i (1 - P_i)
    assert brier(Q, Y, kind="probs", scaling="sum", priors=priors, normalize=True) == pytest.approx(
        expected / naive, rel=EXACT
    )


def test_nce_is_one_for_the_system_that_outputs_the_explicit_priors():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, size=90)
    priors = np.array([0.6, 0.3, 0.1])
    q = np.tile(priors, (90, 1))
    assert cross_entropy(q, y, kind="probs", priors=priors, normalize=True) == pytest.approx(1.0, rel=EXACT)
    assert brier(q, y, kind="probs", scaling="mean", priors=priors, normalize=True) == pytest.approx(1.0, rel=EXACT)


def test_semi_empirical_with_one_hot_reference_equals_cross_entropy():
    onehot = np.eye(3)[Y]
    value = semi_empirical_cross_entropy(Q, onehot, kind="probs", reference_kind="probs")
    assert value == pytest.approx(cross_entropy(Q, Y, kind="probs"), rel=EXACT)
    normalized = semi_empirical_cross_entropy(Q, onehot, kind="probs", reference_kind="probs", normalize=True)
    assert normalized == pytest.approx(cross_entropy(Q, Y, kind="probs", normalize=True), rel=EXACT)


def test_semi_empirical_hand_computed():
    s = np.array([[0.5, 0.5], [0.9, 0.1]])
    q = np.array([[0.25, 0.75], [0.8, 0.2]])
    expected = -(0.5 * np.log(0.25) + 0.5 * np.log(0.75) + 0.9 * np.log(0.8) + 0.1 * np.log(0.2)) / 2
    assert semi_empirical_cross_entropy(q, s, kind="probs", reference_kind="probs") == pytest.approx(
        expected, rel=EXACT
    )


def test_normalized_semi_empirical_of_naive_system_is_one():
    rng = np.random.default_rng(0)
    s = rng.dirichlet(np.ones(4), size=100)
    naive = np.tile(s.mean(axis=0), (100, 1))
    value = semi_empirical_cross_entropy(naive, s, kind="probs", reference_kind="probs", normalize=True)
    assert value == pytest.approx(1.0, rel=EXACT)


def test_single_class_labels_make_normalized_scores_undefined():
    q = np.array([[0.7, 0.3], [0.6, 0.4]])
    y = np.array([0, 0])
    with pytest.raises(CalibInputError, match="labels"):
        cross_entropy(q, y, kind="probs", normalize=True)
    with pytest.raises(CalibInputError, match="labels"):
        brier(q, y, kind="probs", scaling="mean", normalize=True)


def test_single_class_reference_makes_normalized_semi_empirical_undefined():
    # The analogue of the single-class-labels case: the mean reference posterior is one-hot, its entropy
    # is 0 and the normalized value is undefined; it must be a CalibInputError naming the reference.
    q = np.array([[0.7, 0.3], [0.6, 0.4]])
    s = np.array([[1.0, 0.0], [1.0, 0.0]])
    with pytest.raises(CalibInputError, match="reference"):
        semi_empirical_cross_entropy(q, s, kind="probs", reference_kind="probs", normalize=True)


def test_ce_is_inf_when_a_true_class_has_probability_zero():
    q = np.array([[1.0, 0.0], [0.5, 0.5]])
    y = np.array([1, 0])
    assert cross_entropy(q, y, kind="probs") == np.inf
    assert cross_entropy(q, y, kind="probs", normalize=True) == np.inf
    # the Brier score stays finite: classic losses 2 and 1/2
    assert brier(q, y, kind="probs", scaling="sum") == 1.25


def test_bad_arguments_are_rejected():
    with pytest.raises(CalibInputError, match="scaling"):
        brier(Q, Y, kind="probs", scaling="classic")
    with pytest.raises(CalibInputError, match="priors"):
        cross_entropy(Q, Y, kind="probs", priors=[0.5, 0.5])
    with pytest.raises(CalibInputError, match="labels has no samples of classes \\[2\\]"):
        cross_entropy(Q, [0, 0, 1, 1], kind="probs", priors=[0.2, 0.3, 0.5])
    with pytest.raises(CalibInputError, match="reference has shape"):
        semi_empirical_cross_entropy(Q, Q[:2], kind="probs", reference_kind="probs")


# Published numbers --------------------------------------------------------------------------------


def test_nbs_of_figure_6_systems():
    # notes/000 §3.4: saved notebook output (bold), K=10, N=2000, P1=0.8, variance 0.08, paper RNG, seed 0.
    # Printed to 4 decimals: tolerance half a unit of the last digit.
    data = gaussian_posteriors(n_classes=10, n_samples=2000, prior1=0.8, variance=0.08, seed=0, rng="paper")
    published = {"cal": 0.3182, "mcp": 1.5029, "mcs": 0.3993, "mcps": 1.9362}
    for name, value in published.items():
        nbs = brier(data.systems[name], data.labels, kind="logprobs", scaling="mean", normalize=True)
        assert nbs == pytest.approx(value, abs=5e-5), name


def test_nce_of_figure_6_systems():
    # notes/000 §3.4: independent re-run of the authors' code, 4 decimals (half a unit of the last digit).
    data = gaussian_posteriors(n_classes=10, n_samples=2000, prior1=0.8, variance=0.08, seed=0, rng="paper")
    published = {"cal": 0.2520, "mcp": 1.1618, "mcs": 0.7715, "mcps": 4.3421}
    for name, value in published.items():
        nce = cross_entropy(data.systems[name], data.labels, kind="logprobs", normalize=True)
        assert nce == pytest.approx(value, abs=5e-5), name


def test_nbs_of_appendix_e():
    # notes/000 §3.5: Brier(cal, targets) = 0.3683633176519441 (normalized), K=2, N=400, P1=0.8, variance 0.15.
    # The authors compute in float32 (torch): agreement to ~1e-7 relative is all float32 allows; 1e-6 absolute.
    data = gaussian_posteriors(n_classes=2, n_samples=400, prior1=0.8, variance=0.15, seed=0, rng="paper")
    nbs = brier(data.systems["cal"], data.labels, kind="logprobs", scaling="mean", normalize=True)
    assert nbs == pytest.approx(0.3683633176519441, abs=1e-6)


@pytest.mark.parametrize(
    ("n_samples", "published"),
    [(200, {"cal": -3, "mcs": -7, "mcp": 4, "mcps": 4}), (2000, {"cal": -5, "mcs": -10, "mcp": -2, "mcps": -2})],
)
def test_table_1_true_reference_row(n_samples, published):
    # Table 1 (notes/000 §3.2, §4): round(100 (NCE - normalized semi-empirical CE with s = cal) / NCE).
    # Cells are rounded to integers: |value - cell| <= 0.5, plus 0.05 for the authors' float32 arithmetic.
    data = gaussian_posteriors(n_classes=2, n_samples=n_samples, prior1=0.8, variance=0.15, seed=0, rng="paper")
    ref = data.systems["cal"]
    for name, cell in published.items():
        q = data.systems[name]
        emp = cross_entropy(q, data.labels, kind="logprobs", normalize=True)
        semi = semi_empirical_cross_entropy(q, ref, kind="logprobs", reference_kind="logprobs", normalize=True)
        assert abs(100 * (emp - semi) / emp - cell) <= 0.55, name
