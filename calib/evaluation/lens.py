"""The CORP lens: the one binary view of K-class posteriors that an evaluation decomposes (CORP), tests per
subgroup (Spiegelhalter's z) and draws, chosen by one rule, :func:`lens_of`
(:func:`calib.calibration_errors.binned.lens_target`): the positive class (class 1) for two classes, else the
top label (its confidence against the argmax being right).

Every part of the evaluation that reads the lens asks these functions, so the rule is written once: the
forecasts and outcomes of a chunk (:func:`lens_forecasts`), their log-odds (:func:`lens_forecast_log_odds`),
the binned ECE of the lens (:func:`lens_ece`) and its CORP summary (:func:`corp_summary`).

Sources: Dimitriadis et al. (2021) (CORP); Guo et al. (2017) (the top-label, or maximum, lens).
"""

from __future__ import annotations

import numpy as np

from calib.calibration_errors.binned import lens_target
from calib.calibration_errors.corp import corp_report
from calib.calibration_errors.corp_lenses import top_log_odds
from calib.evaluation.metrics import REGISTRY, Batch, MetricDefinition
from calib.evaluation.results import CorpSummary
from calib.evaluation.settings import EvaluationSettings

POSITIVE_CLASS = "positive class"
TOP_LABEL = "top label"
# The registered binned ECE of each lens.
LENS_ECES = {POSITIVE_CLASS: "ECE positive class", TOP_LABEL: "ECE top-label"}


def lens_of(n_classes: int) -> str:
    """The lens of K = ``n_classes`` classes: "positive class" (class 1 against the rest) for two classes,
    "top label" (the argmax's confidence against its being right) for more.

    Examples
    --------
    >>> lens_of(2), lens_of(10)
    ('positive class', 'top label')
    """
    return POSITIVE_CLASS if lens_target(n_classes) == "binary" else TOP_LABEL


def lens_forecasts(batch: Batch) -> tuple[np.ndarray, np.ndarray]:
    """Each row's forecast and outcome (0.0 or 1.0) under the lens of ``batch``'s classes: P(class 1) and
    the label being 1, or the top label's confidence and the argmax being right.

    Examples
    --------
    >>> batch = Batch(np.log(np.array([[0.3, 0.7], [0.6, 0.4]])), np.array([1, 1]))
    >>> [values.tolist() for values in lens_forecasts(batch)]
    [[0.7, 0.4], [1.0, 1.0]]
    """
    if lens_of(batch.logp.shape[1]) == POSITIVE_CLASS:
        return batch.probs[:, 1], (batch.labels == 1).astype(np.float64)
    return batch.confidence, batch.correct.astype(np.float64)


def lens_forecast_log_odds(batch: Batch) -> np.ndarray:
    """The log-odds of each row's lens forecast (:func:`lens_forecasts`), from the log-posteriors: CORP's log
    score is computed from them, finite wherever the log-posteriors are (a forecast can round to 0 or 1
    where they do not).

    Examples
    --------
    >>> batch = Batch(np.log(np.array([[0.2, 0.8]])), np.array([1]))
    >>> round(float(lens_forecast_log_odds(batch)[0]), 6)  # log(0.8 / 0.2)
    1.386294
    """
    if lens_of(batch.logp.shape[1]) == POSITIVE_CLASS:
        return batch.logp[:, 1] - batch.logp[:, 0]
    return top_log_odds(batch.logp, batch.prediction)


def lens_ece(n_classes: int) -> MetricDefinition:
    """The registered binned ECE of the lens of K = ``n_classes`` classes: always computed, as the
    reliability figure and the subgroups draw its bins.

    Examples
    --------
    >>> lens_ece(2).name, lens_ece(3).name
    ('ECE positive class', 'ECE top-label')
    """
    return REGISTRY[LENS_ECES[lens_of(n_classes)]]


def corp_summary(
    forecasts: np.ndarray,
    outcomes: np.ndarray,
    log_odds: np.ndarray,
    n_classes: int,
    settings: EvaluationSettings,
    sample_weight: np.ndarray | None = None,
) -> CorpSummary:
    """The CORP decompositions of the Brier and log scores of the lens forecasts of K = ``n_classes``
    classes, with the MCB test on ``settings.n_boot`` resamples of at most ``settings.corp_test_samples``
    rows (:func:`calib.calibration_errors.corp.corp_report`).

    Parameters
    ----------
    forecasts, outcomes, log_odds : arrays of shape (n,)
        Of each row: :func:`lens_forecasts` and :func:`lens_forecast_log_odds`.
    n_classes : int
        K, which chooses the lens.
    settings : EvaluationSettings
        The resamples, seed and test samples.
    sample_weight : array of shape (n,), optional
        The rows' sample weights (None: unweighted): weighted PAV and decompositions.

    Returns
    -------
    CorpSummary

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.1, 0.9, 200)
    >>> y = (rng.random(200) < p).astype(float)
    >>> s = corp_summary(p, y, np.log(p / (1 - p)), 2, EvaluationSettings(n_boot=0))
    >>> s.lens, s.samples, sorted(s.scores)
    ('positive class', 200, ['brier', 'log'])
    """
    tests = {"n_resamples": settings.n_boot, "seed": settings.seed, "test_samples": settings.corp_test_samples}
    report = corp_report(forecasts, outcomes, log_odds=log_odds, sample_weight=sample_weight, **tests)
    tested = min(outcomes.size, settings.corp_test_samples) if settings.n_boot else 0
    return CorpSummary(lens_of(n_classes), report, settings.n_boot, tested, outcomes.size)
