"""The zoo: real posterior sets made offline from scikit-learn's bundled datasets and classic classifiers.

Each (dataset, model) pair is trained on a seeded stratified train split; its posteriors on the
calibration split and on the test split are two :class:`~calib.data.real.PosteriorSet` s, so a
calibrator can be trained on held-out data (as Ferrer & Ramos (2024), Sec. 2.4.2, recommend) and
judged on the test. The models have well-known calibration habits: Gaussian naive Bayes pushes
posteriors to 0 and 1; random forests and k-NN give coarse, often exactly-zero probabilities; SVM and
boosting margins are not probabilities at all (their decision functions are declared as logits);
logistic regression and MLPs are fitted by log loss. scikit-learn bundles four classification datasets (breast
cancer, digits, iris, wine); all four are here.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine
from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB
from sklearn.neighbors import KNeighborsClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from calib.data.real import PosteriorSet
from calib.validation import CalibInputError

DATASETS: dict[str, Callable] = {
    "breast_cancer": load_breast_cancer,
    "digits": load_digits,
    "iris": load_iris,
    "wine": load_wine,
}

# name -> (estimator factory taking a seed, method giving the scores, kind of those scores)
MODELS: dict[str, tuple[Callable[[int], object], str, str]] = {
    "gaussian_nb": (lambda seed: GaussianNB(), "predict_log_proba", "logprobs"),
    "logistic_regression": (
        lambda seed: make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)),
        "predict_log_proba",
        "logprobs",
    ),
    "svm": (lambda seed: make_pipeline(StandardScaler(), SVC(random_state=seed)), "decision_function", "logits"),
    "random_forest": (
        lambda seed: RandomForestClassifier(n_estimators=200, random_state=seed, n_jobs=1),
        "predict_proba",
        "probs",
    ),
    "boosting": (
        lambda seed: HistGradientBoostingClassifier(random_state=seed),
        "decision_function",
        "logits",
    ),
    "knn": (
        lambda seed: make_pipeline(StandardScaler(), KNeighborsClassifier(n_neighbors=10)),
        "predict_proba",
        "probs",
    ),
    "mlp": (
        lambda seed: make_pipeline(
            StandardScaler(), MLPClassifier(hidden_layer_sizes=(64,), max_iter=3000, random_state=seed)
        ),
        "predict_proba",
        "probs",
    ),
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
