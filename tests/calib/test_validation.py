"""Tests of calib.validation: conversion to log-posteriors and rejection of bad input."""

import numpy as np
import pytest

from calib.validation import CalibInputError, as_labels, as_logprobs, as_priors, top_label

PROBS = np.array([[0.2, 0.3, 0.5], [0.7, 0.2, 0.1], [1.0, 0.0, 0.0]])


def test_probs_give_float64_log_of_the_same_numbers():
    logp = as_logprobs(PROBS, kind="probs")
    assert logp.dtype == np.float64
    assert logp.shape == (3, 3)
    # exact log of the literals, up to one rounding of the division by a row sum of ~1
    np.testing.assert_allclose(logp[:2], np.log([[0.2, 0.3, 0.5], [0.7, 0.2, 0.1]]), rtol=0, atol=1e-15)
    assert logp[2, 0] == 0.0
    assert np.all(np.isneginf(logp[2, 1:]))


def test_float32_and_integer_inputs_become_float64():
    assert as_logprobs(PROBS.astype(np.float32), kind="probs").dtype == np.float64
    assert as_logprobs([[0, 1], [1, 0]], kind="probs").dtype == np.float64


def test_three_kinds_agree_on_one_distribution():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(4), size=20)
    logits = np.log(p) + rng.normal(size=(20, 1)) * 3.0  # a per-row shift leaves softmax unchanged
    from_probs = as_logprobs(p, kind="probs")
    from_logprobs = as_logprobs(np.log(p), kind="logprobs")
    from_logits = as_logprobs(logits, kind="logits")
    # all three are the same log-posteriors up to float rounding (a few ulps of numbers of order 10)
    np.testing.assert_allclose(from_logprobs, from_probs, rtol=0, atol=1e-12)
    np.testing.assert_allclose(from_logits, from_probs, rtol=0, atol=1e-12)
    # normalized: every row's probabilities sum to 1 (float rounding of 4 terms)
    for logp in (from_probs, from_logprobs, from_logits):
        np.testing.assert_allclose(np.exp(logp).sum(axis=1), 1.0, rtol=0, atol=1e-14)


def test_logits_are_normalized_with_log_softmax():
    logp = as_logprobs([[0.0, 0.0], [np.log(3.0), 0.0]], kind="logits")
    # closed form: softmax([0, 0]) = [1/2, 1/2], softmax([log 3, 0]) = [3/4, 1/4]
    np.testing.assert_allclose(logp, np.log([[0.5, 0.5], [0.75, 0.25]]), rtol=0, atol=1e-15)


def test_probs_rows_summing_to_one_within_float32_rounding_are_renormalized():
    p = np.array([[0.25, 0.75 + 5e-5]])
    logp = as_logprobs(p, kind="probs")
    # renormalized exactly by the row sum (float rounding only)
    np.testing.assert_allclose(np.exp(logp).sum(axis=1), 1.0, rtol=0, atol=1e-15)


@pytest.mark.parametrize(
    ("scores", "kind", "pattern"),
    [
        (PROBS, "probabilities", "kind"),
        (np.array([0.2, 0.8]), "probs", "scores must have shape"),
        (np.zeros((0, 3)), "logits", "scores is empty"),
        (np.ones((4, 1)), "probs", "scores needs K >= 2"),
        (np.array([[0.5, np.nan], [0.5, 0.5]]), "probs", "scores contains NaN"),
        (np.array([[0.5, 0.5], [0.1, np.nan]]), "logits", "scores contains NaN"),
        (np.array([[-0.1, 1.1]]), "probs", "scores .*must lie in \\[0, 1\\]"),
        (np.array([[1.2, -0.2]]), "probs", "scores .*must lie in \\[0, 1\\]"),
        (np.array([[1.5, 0.5]]), "probs", "scores: columns \\[0\\] hold values outside \\[0, 1\\]"),
        (np.array([[0.5, 0.4], [0.5, 0.5]]), "probs", "scores: rows of .*must sum to 1"),
        (np.array([[0.6, 0.6]]), "probs", "scores: rows of .*must sum to 1"),
        (np.array([[0.5, -0.5]]), "logprobs", "scores .*positive values"),
        (np.array([[np.log(0.5), np.log(0.4)]]), "logprobs", "scores: rows of .*must sum to 1"),
        (np.array([[np.inf, 0.0]]), "logits", "scores contains \\+inf"),
        (np.array([[np.inf, 0.0]]), "logprobs", "scores contains \\+inf"),
        (np.array([[np.inf, 0.0]]), "probs", "scores: columns \\[0\\] hold values outside \\[0, 1\\]"),
        (np.array([[-np.inf, -np.inf]]), "logits", "scores has a row that is -inf everywhere"),
    ],
)
def test_as_logprobs_rejects_bad_input(scores, kind, pattern):
    with pytest.raises(CalibInputError, match=pattern):
        as_logprobs(scores, kind=kind)


def test_as_logprobs_error_names_a_custom_argument():
    with pytest.raises(CalibInputError, match="reference contains NaN"):
        as_logprobs([[np.nan, 1.0]], kind="logits", name="reference")


def test_calib_input_error_is_a_value_error():
    assert issubclass(CalibInputError, ValueError)


def test_as_labels_returns_int64():
    labels = as_labels(np.array([0.0, 2.0, 1.0]), 3, 3)
    assert labels.dtype == np.int64
    np.testing.assert_array_equal(labels, [0, 2, 1])


@pytest.mark.parametrize(
    ("labels", "pattern"),
    [
        ([0, 1], "labels has 2 entries but the scores have 3 rows"),
        ([0, 1, 3], "labels must lie in \\[0, 3\\)"),
        ([0, -1, 2], "labels must lie in \\[0, 3\\)"),
        ([0.0, 1.5, 2.0], "labels must hold integer class indices"),
        ([0.0, np.nan, 2.0], "labels must hold integer class indices"),
        (["a", "b", "c"], "labels must hold integer class indices"),
        ([[0, 1, 2]], "labels must be a 1-D vector"),
        (np.zeros((3, 1), dtype=int), "labels must be a 1-D vector"),
    ],
)
def test_as_labels_rejects_bad_input(labels, pattern):
    with pytest.raises(CalibInputError, match=pattern):
        as_labels(labels, 3, 3)


def test_as_priors_accepts_a_probability_vector():
    np.testing.assert_array_equal(as_priors([0.25, 0.75], 2), [0.25, 0.75])


@pytest.mark.parametrize(
    ("priors", "pattern"),
    [
        ([0.5, 0.5, 0.0], "priors must have one entry per class"),
        ([1.0], "priors must have one entry per class"),
        ([0.0, 1.0], "priors must be finite and strictly positive"),
        ([-0.5, 1.5], "priors must be finite and strictly positive"),
        ([np.nan, 1.0], "priors must be finite and strictly positive"),
        ([0.3, 0.3], "priors must sum to 1"),
        ([0.6, 0.6], "priors must sum to 1"),
    ],
)
def test_as_priors_rejects_bad_input(priors, pattern):
    with pytest.raises(CalibInputError, match=pattern):
        as_priors(priors, 2)


def test_top_label_is_max_and_first_argmax_for_contiguous_and_strided_rows():
    probs = np.array([[0.2, 0.4, 0.4], [0.5, 0.25, 0.25], [0.1, 0.1, 0.8], [1 / 3, 1 / 3, 1 / 3]])
    for arr in (probs, np.asfortranarray(probs), np.repeat(probs, 2, axis=0)[::2]):
        confidence, prediction = top_label(arr)
        np.testing.assert_array_equal(prediction, [1, 0, 2, 0])
        np.testing.assert_array_equal(confidence, probs.max(axis=1))


def test_huge_finite_logits_whose_sum_overflows_are_not_mistaken_for_infinity():
    # 1e308 + 1e308 overflows to inf (and + -1e308 ... to nan): still finite logits, still normalized.
    logits = np.array([[1e308, 1e308], [1e308, -1e308], [0.0, 0.0]])
    out = as_logprobs(logits, "logits")
    np.testing.assert_allclose(out[[0, 2]], np.log(0.5))
    np.testing.assert_array_equal(out[1], [0.0, -np.inf])
    with pytest.raises(CalibInputError, match=r"\+inf"):
        as_logprobs(np.array([[np.inf, 0.0]]), "logits")
