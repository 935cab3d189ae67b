"""Tests of calib.data.zoo: seeded stratified splits of sklearn's datasets and the posteriors of classic models."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from scipy.special import expit, logsumexp
from sklearn.model_selection import train_test_split
from sklearn.utils import Bunch
from threadpoolctl import threadpool_limits

from calib.data import zoo
from calib.data.zoo import DATASETS, MODELS, zoo_names, zoo_posteriors
from calib.scoring.scores import cross_entropy
from calib.validation import CalibInputError

N_SAMPLES = {"breast_cancer": 569, "digits": 1797, "iris": 150, "wine": 178}
CHEAP_MODELS = ("logistic_regression", "gaussian_nb")
SMALL_DATASETS = ("iris", "breast_cancer")


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    # HistGradientBoosting's OpenMP threads are slow on a busy machine; one thread is fast and deterministic.
    with threadpool_limits(limits=1):
        yield


@functools.cache
def _zoo(dataset: str, model: str, seed: int = 0):
    return zoo_posteriors(dataset, model, seed=seed)


class _Spy:
    """A stand-in model: its scores are the sample ids it is shown, and it records the ids it was trained on."""

    def __init__(self, record: dict, n_classes: int):
        self.record, self.n_classes = record, n_classes

    def fit(self, x, y):
        self.record["train_ids"] = x[:, -1].astype(int)
        self.record["train_labels"] = np.asarray(y)
        return self

    def decision_function(self, x):
        scores = np.zeros((x.shape[0], self.n_classes))
        scores[:, 0] = x[:, -1]
        return scores


def _spy_split(monkeypatch, dataset: str, **kwargs):
    """Run zoo_posteriors with the spy model on ``dataset`` whose features carry each sample's id."""
    original = DATASETS[dataset]
    bunch = original()
    n, k = bunch.target.size, bunch.target_names.size

    def with_ids():
        return Bunch(
            data=np.column_stack([bunch.data, np.arange(n)]), target=bunch.target, target_names=bunch.target_names
        )

    record: dict = {}
    monkeypatch.setitem(DATASETS, dataset, with_ids)
    monkeypatch.setitem(MODELS, "spy", (lambda seed: _Spy(record, k), "decision_function", "logits"))
    out = zoo_posteriors(dataset, "spy", **kwargs)
    ids = {split: out[split].scores[:, 0].astype(int) for split in ("cal", "test")}
    return bunch, out, record, ids


def _rebuild_split(dataset: str, seed: int = 0):
    """The test split of the default fractions (train 50 %, then the rest halved), rebuilt with sklearn."""
    bunch = DATASETS[dataset]()
    x_train, x_rest, y_train, y_rest = train_test_split(
        bunch.data, bunch.target, train_size=0.5, stratify=bunch.target, random_state=seed
    )
    _, x_test, _, y_test = train_test_split(x_rest, y_rest, test_size=0.5, stratify=y_rest, random_state=seed)
    return x_train, y_train, x_test, y_test


# ---------------------------------------------------------------------------------------------- splits


@pytest.mark.parametrize("model", CHEAP_MODELS)
@pytest.mark.parametrize("dataset", sorted(DATASETS))
def test_split_sizes_follow_the_fractions(dataset, model):
    out = _zoo(dataset, model)
    n = N_SAMPLES[dataset]
    assert DATASETS[dataset]().target.size == n
    n_cal, n_test = out["cal"].n_samples, out["test"].n_samples
    n_train = n - n_cal - n_test
    assert abs(n_train - n / 2) <= 1
    assert abs(n_cal - n / 4) <= 1
    assert abs(n_test - n / 4) <= 1
    assert out["cal"].scores.shape[0] == n_cal and out["test"].scores.shape[0] == n_test


@pytest.mark.parametrize("dataset", sorted(DATASETS))
def test_cal_and_test_partition_the_samples_left_out_of_training(monkeypatch, dataset):
    bunch, out, record, ids = _spy_split(monkeypatch, dataset)
    n = bunch.target.size
    train, cal, test = record["train_ids"], ids["cal"], ids["test"]
    for part in (train, cal, test):
        assert np.unique(part).size == part.size  # no sample twice within a split
    assert not set(cal) & set(test)
    assert not set(train) & (set(cal) | set(test))
    assert np.array_equal(np.sort(np.concatenate([cal, test])), np.setdiff1d(np.arange(n), train))
    assert train.size + cal.size + test.size == n
    # the labels travel with their samples
    assert np.array_equal(record["train_labels"], bunch.target[train])
    assert np.array_equal(out["cal"].labels, bunch.target[cal])
    assert np.array_equal(out["test"].labels, bunch.target[test])
    # the split does not depend on the model: a real model gets the same split sizes
    real = _zoo(dataset, "gaussian_nb")
    assert (real["cal"].n_samples, real["test"].n_samples) == (cal.size, test.size)
    assert np.array_equal(real["test"].labels, out["test"].labels)


def test_other_fractions_set_other_split_sizes(monkeypatch):
    bunch, out, record, ids = _spy_split(monkeypatch, "breast_cancer", fractions=(0.6, 0.1, 0.3))
    n = bunch.target.size
    assert abs(record["train_ids"].size - 0.6 * n) <= 1
    assert abs(ids["cal"].size - 0.1 * n) <= 1
    assert abs(ids["test"].size - 0.3 * n) <= 1
    assert record["train_ids"].size + ids["cal"].size + ids["test"].size == n


@pytest.mark.parametrize("split", ["cal", "test"])
@pytest.mark.parametrize("dataset", sorted(DATASETS))
def test_splits_are_stratified(dataset, split):
    y = DATASETS[dataset]().target
    k = int(y.max()) + 1
    shares = np.bincount(y, minlength=k) / y.size
    labels = _zoo(dataset, "gaussian_nb")[split].labels
    counts = np.bincount(labels, minlength=k)
    assert np.all(np.abs(counts - labels.size * shares) <= 1)


def test_train_split_is_stratified(monkeypatch):
    bunch, _, record, _ = _spy_split(monkeypatch, "wine")
    shares = np.bincount(bunch.target) / bunch.target.size
    counts = np.bincount(record["train_labels"], minlength=shares.size)
    assert np.all(np.abs(counts - record["train_labels"].size * shares) <= 1)


@pytest.mark.parametrize("dataset", sorted(DATASETS))
def test_class_names_are_sklearns_target_names(dataset):
    expected = tuple(str(c) for c in DATASETS[dataset]().target_names)
    out = _zoo(dataset, "gaussian_nb")
    for split in ("cal", "test"):
        assert out[split].class_names == expected
        assert out[split].n_classes == len(expected)
    if dataset == "digits":
        assert expected == tuple(str(d) for d in range(10))
    if dataset == "breast_cancer":
        assert expected == ("malignant", "benign")


@pytest.mark.parametrize("dataset", sorted(DATASETS))
def test_set_names_and_provenance(dataset):
    out = _zoo(dataset, "logistic_regression", 0)
    assert set(out) == {"cal", "test"}
    for split, pset in out.items():
        assert pset.name == f"zoo/{dataset}/logistic_regression/{split}"
        assert dataset in pset.provenance and "seed 0" in pset.provenance and split in pset.provenance


# ---------------------------------------------------------------------------------------------- scores


@pytest.mark.parametrize("model", sorted(MODELS))
@pytest.mark.parametrize("dataset", SMALL_DATASETS)
def test_every_model_gives_valid_scores_of_its_declared_kind(dataset, model):
    out = _zoo(dataset, model)
    k = DATASETS[dataset]().target_names.size
    for pset in out.values():
        assert pset.kind == MODELS[model][2]
        assert pset.scores.shape == (pset.n_samples, k)
        logp = pset.logprobs()  # raises CalibInputError if the scores do not fit their kind
        assert logp.shape == (pset.n_samples, k)
        assert not np.isnan(logp).any() and not np.isposinf(logp).any()
        np.testing.assert_allclose(logsumexp(logp, axis=1), 0.0, atol=1e-9)
        # the classifiers are far better than chance on these easy sets
        assert np.mean(logp.argmax(axis=1) == pset.labels) > 0.8


@pytest.mark.parametrize("model", ["svm", "boosting"])
def test_binary_decision_function_is_stored_as_two_column_log_odds(model):
    pset = _zoo("breast_cancer", model)["test"]
    x_train, y_train, x_test, y_test = _rebuild_split("breast_cancer")
    assert np.array_equal(pset.labels, y_test)
    estimator = MODELS[model][0](0).fit(x_train, y_train)
    decision = estimator.decision_function(x_test)
    assert pset.scores.shape == (y_test.size, 2)
    assert np.all(pset.scores[:, 0] == 0)
    np.testing.assert_allclose(pset.scores[:, 1], decision, rtol=1e-12, atol=1e-12)
    probs = np.exp(pset.logprobs())
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(probs[:, 1], expit(pset.scores[:, 1]), rtol=1e-10, atol=1e-12)
    # positive log-odds means class 1, as the estimator predicts
    np.testing.assert_array_equal(probs.argmax(axis=1), estimator.predict(x_test))
    if model == "boosting":  # boosting's decision function is its log-odds: softmax gives predict_proba
        np.testing.assert_allclose(probs, estimator.predict_proba(x_test), rtol=1e-9, atol=1e-12)


def test_multiclass_decision_function_is_kept_as_logits():
    pset = _zoo("iris", "svm")["test"]
    assert pset.kind == "logits" and pset.scores.shape == (pset.n_samples, 3)
    assert not np.all(pset.scores[:, 0] == 0)


def test_probability_models_give_exact_zeros_that_logprobs_keeps_as_minus_inf():
    # random forests and k-NN vote: some classes get probability exactly 0 on easy sets
    pset = _zoo("iris", "knn")["test"]
    assert pset.kind == "probs"
    assert np.isneginf(pset.logprobs()).any()


# ---------------------------------------------------------------------------------------------- seeds


@pytest.mark.parametrize("model", ["logistic_regression", "random_forest"])
def test_same_seed_gives_identical_arrays(model):
    first = zoo_posteriors("iris", model, seed=3)
    second = zoo_posteriors("iris", model, seed=3)
    for split in ("cal", "test"):
        assert np.array_equal(first[split].scores, second[split].scores)
        assert np.array_equal(first[split].labels, second[split].labels)


def test_different_seed_changes_the_split(monkeypatch):
    _, _, record0, ids0 = _spy_split(monkeypatch, "iris", seed=0)
    _, _, record1, ids1 = _spy_split(monkeypatch, "iris", seed=1)
    assert set(ids0["test"]) != set(ids1["test"])
    assert set(record0["train_ids"]) != set(record1["train_ids"])
    a, b = _zoo("iris", "logistic_regression", 0), _zoo("iris", "logistic_regression", 1)
    assert not np.array_equal(a["test"].scores, b["test"].scores)


# ---------------------------------------------------------------------------------------------- errors


def test_unknown_dataset_lists_the_datasets():
    with pytest.raises(CalibInputError, match="unknown zoo dataset") as info:
        zoo_posteriors("mnist", "svm")
    for name in DATASETS:
        assert name in str(info.value)


def test_unknown_model_lists_the_models():
    with pytest.raises(CalibInputError, match="unknown zoo model") as info:
        zoo_posteriors("iris", "xgboost")
    for name in MODELS:
        assert name in str(info.value)


@pytest.mark.parametrize(
    "fractions",
    [(0.5, 0.5), (0.5, 0.25, 0.25, 0.0), (0.6, 0.3, 0.3), (0.5, 0.5, 0.0), (1.2, -0.1, -0.1), (0.2, 0.2, 0.2)],
)
def test_bad_fractions_are_rejected(fractions):
    with pytest.raises(CalibInputError, match=r"fractions .*\(train, cal, test\)"):
        zoo_posteriors("iris", "gaussian_nb", fractions=fractions)


def test_fractions_too_small_for_the_dataset_raise_calib_input_error():
    with pytest.raises(CalibInputError):
        zoo_posteriors("iris", "gaussian_nb", fractions=(0.98, 0.01, 0.01))


def test_zoo_names():
    names = zoo_names()
    assert len(names) == len(DATASETS) * len(MODELS) == len(set(names))
    assert set(names) == {f"zoo/{d}/{m}" for d in DATASETS for m in MODELS}
    for name in names:
        prefix, dataset, model = name.split("/")
        assert prefix == "zoo" and dataset in DATASETS and model in MODELS
    assert _zoo("wine", "gaussian_nb")["cal"].name.rsplit("/", 1)[0] in names


def test_zoo_module_exports_the_two_splits():
    assert zoo.SPLITS == ("cal", "test")


# ---------------------------------------------------------------------------------------------- habits


def test_naive_bayes_is_overconfident_on_digits_while_logistic_regression_is_not():
    nb = _zoo("digits", "gaussian_nb")["test"]
    lr = _zoo("digits", "logistic_regression")["test"]
    nce_nb = cross_entropy(nb.logprobs(), nb.labels, kind="logprobs", normalize=True)
    nce_lr = cross_entropy(lr.logprobs(), lr.labels, kind="logprobs", normalize=True)
    assert nce_nb > 1  # worse than always answering the priors
    assert nce_lr < 0.2
