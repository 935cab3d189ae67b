"""The zoo: real posterior sets made offline from scikit-learn's bundled datasets and classic classifiers.

Each (dataset, model) pair is trained on a seeded stratified train split; its posteriors on the
calibration split and on the test split are two :class:`~calib.data.real.PosteriorSet` s, so a
calibrator can be trained on held-out data (as Ferrer & Ramos (2024), Sec. 2.4.2, recommend) and
judged on the test. The models have well-known calibration habits: Gaussian naive Bayes pushes
posteriors to 0 and 1; random forests and k-NN give coarse, often exactly-zero probabilities; SVM and
boosting margins are not probabilities at all (their decision functions are declared as logits);
logistic regression and MLPs are fitted by log loss. scikit-learn bundles four classification datasets (breast
cancer, digits, iris, wine); all four are here.

scikit-learn is imported inside the functions that train and split: importing this module (the workflow lists
the zoo's names) does not load it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from calib.data.real import PosteriorSet
from calib.validation import CalibInputError

# scikit-learn is imported where a dataset is loaded or a model made, not here: the workflow names the
# zoo's sets every time it builds its graph, and importing scikit-learn for that would cost more than
# the rest of the graph.


def _load(name: str):
    """scikit-learn's bundled dataset ``name`` (``sklearn.datasets.load_<name>``)."""
    import sklearn.datasets

    return getattr(sklearn.datasets, f"load_{name}")()


DATASETS: dict[str, Callable] = {name: partial(_load, name) for name in ("breast_cancer", "digits", "iris", "wine")}


def _gaussian_nb(seed: int):
    from sklearn.naive_bayes import GaussianNB

    return GaussianNB()


def _logistic_regression(seed: int):
    from sklearn.linear_model import LogisticRegression

    return _standardized(LogisticRegression(max_iter=5000))


def _svm(seed: int):
    from sklearn.svm import SVC

    return _standardized(SVC(random_state=seed))


def _random_forest(seed: int):
    from sklearn.ensemble import RandomForestClassifier

    return RandomForestClassifier(n_estimators=200, random_state=seed, n_jobs=1)


def _boosting(seed: int):
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(random_state=seed)


def _knn(seed: int):
    from sklearn.neighbors import KNeighborsClassifier

    return _standardized(KNeighborsClassifier(n_neighbors=10))


def _mlp(seed: int):
    from sklearn.neural_network import MLPClassifier

    return _standardized(MLPClassifier(hidden_layer_sizes=(64,), max_iter=3000, random_state=seed))


def _standardized(estimator):
    """``estimator`` behind a StandardScaler fitted on the same training features."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), estimator)


# name -> (estimator factory taking a seed, method giving the scores, kind of those scores)
MODELS: dict[str, tuple[Callable[[int], object], str, str]] = {
    "gaussian_nb": (_gaussian_nb, "predict_log_proba", "logprobs"),
    "logistic_regression": (_logistic_regression, "predict_log_proba", "logprobs"),
    "svm": (_svm, "decision_function", "logits"),
    "random_forest": (_random_forest, "predict_proba", "probs"),
    "boosting": (_boosting, "decision_function", "logits"),
    "knn": (_knn, "predict_proba", "probs"),
    "mlp": (_mlp, "predict_proba", "probs"),
}

SPLITS = ("cal", "test")


def _scores(model, method: str, features: np.ndarray) -> np.ndarray:
    scores = getattr(model, method)(features)
    if scores.ndim == 1:  # binary decision function: the log-odds of class 1
        scores = np.column_stack([np.zeros_like(scores), scores])
    return scores


def zoo_posteriors(
    dataset: str, model: str, *, seed: int = 0, fractions: tuple[float, float, float] = (0.5, 0.25, 0.25)
) -> dict[str, PosteriorSet]:
    """Posteriors of ``model`` trained on the train split of ``dataset``, on its cal and test splits."""
    if dataset not in DATASETS:
        raise CalibInputError(f"unknown zoo dataset {dataset!r}; choose from {sorted(DATASETS)}")
    if model not in MODELS:
        raise CalibInputError(f"unknown zoo model {model!r}; choose from {sorted(MODELS)}")
    if len(fractions) != 3 or min(fractions) <= 0 or not np.isclose(sum(fractions), 1.0):
        raise CalibInputError(
            f"fractions must be three positive shares (train, cal, test) summing to 1; got {fractions}"
        )
    from sklearn.model_selection import train_test_split

    bunch = DATASETS[dataset]()
    x, y = bunch.data, bunch.target
    train_share, cal_share, test_share = fractions
    try:
        x_train, x_rest, y_train, y_rest = train_test_split(x, y, train_size=train_share, stratify=y, random_state=seed)
        x_cal, x_test, y_cal, y_test = train_test_split(
            x_rest, y_rest, test_size=test_share / (cal_share + test_share), stratify=y_rest, random_state=seed
        )
    except ValueError as exc:
        raise CalibInputError(
            f"fractions {fractions} leave a split too small for {dataset} ({y.size} samples, "
            f"{np.unique(y).size} classes; each split needs every class): {exc}"
        ) from exc
    factory, method, kind = MODELS[model]
    fitted = factory(seed).fit(x_train, y_train)
    names = tuple(str(c) for c in bunch.target_names)
    out = {}
    for split, features, labels in (("cal", x_cal, y_cal), ("test", x_test, y_test)):
        out[split] = PosteriorSet(
            name=f"zoo/{dataset}/{model}/{split}",
            scores=_scores(fitted, method, features),
            labels=labels,
            kind=kind,
            class_names=names,
            provenance=(
                f"scikit-learn {dataset} dataset, {model} ({method}) trained on a {train_share:.0%} split; "
                f"{split} split, seed {seed}"
            ),
        )
    return out


def zoo_names() -> list[str]:
    """Every zoo pair as ``zoo/<dataset>/<model>`` (sets are these plus ``/cal`` or ``/test``)."""
    return [f"zoo/{d}/{m}" for d in DATASETS for m in MODELS]
