"""What an evaluation returns: a metric with its interval, the CORP decompositions, the subgroups' rows,
the :class:`Summary` of :func:`calib.evaluate` and the :class:`Comparison` of :func:`calib.evaluation.engine.compare`.

Plain values only: the engine fills them (:mod:`calib.evaluation.engine`), the command prints and draws
them (:mod:`calib.cli_report`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from calib.calibration_errors.corp import CorpReport
from calib.evaluation.settings import EvaluationSettings


@dataclass(frozen=True)
class Metric:
    """A value with its bootstrap interval (NaN bounds when none was computed) and the interval's method
    (:mod:`calib.evaluation.interval_methods`: "basic", or "upper bound" with the metric's least value as
    ``low``; "" without an interval) and what the interval is for (``estimand``, in words)."""

    value: float
    low: float = float("nan")
    high: float = float("nan")
    method: str = ""
    estimand: str = ""


@dataclass(frozen=True)
class CorpSummary:
    """The CORP decompositions of an evaluation: of the Brier and log scores on one binary ``lens``
    (:func:`calib.evaluation.lens.lens_of`) with the MCB test's p-values (from ``resamples`` resamples of
    at most ``test_samples`` samples) and ``samples`` rows decomposed."""

    lens: str
    scores: dict[str, CorpReport]
    resamples: int
    test_samples: int
    samples: int = 0


@dataclass(frozen=True)
class GroupRow:
    """One subgroup: its value, rows, metrics, the calibration test's statistic (Cox's score statistic,
    :mod:`calib.evaluation.cox_test`) and p-value before and after Holm's adjustment, flagged when the
    adjusted one is below 0.05, the reliability bins of the lens, its total sample weight (its rows when
    unweighted), Spiegelhalter's z and the test's degrees of freedom."""

    group: str
    n: int
    metrics: dict[str, Metric]
    statistic: float
    p_value: float
    p_adjusted: float
    flagged: bool
    reliability: list = field(default_factory=list)
    weight: float = 0.0
    z: float = float("nan")
    degrees: int = 2
    # Tested and searched: at least min_segment rows (a Kish effective size with weights); else its test is
    # NaN and it counts in neither Holm's adjustment nor the search.
    tested: bool = True
    # Its size-weighted calibration error: its weight share times its ECE of the lens.
    error: float = float("nan")
    # Why it is not tested ("" when it is): too few rows, or no information in its forecasts.
    untested: str = ""
    # Its value of each group column it is defined by (one column, or the crossed ones), by column name.
    values: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Multicalibration:
    """The search over the segments (:mod:`calib.evaluation.segments`): the ``segment`` with the largest Cox
    statistic (its rows ``n``, its size-weighted error ``error`` and ``statistic``), the ``p_value`` of that
    largest statistic after the search (Monte Carlo, over ``draws`` outcome draws from the forecasts), the
    statistic the draws' maxima exceed 5 % of the time (``critical``), the segments ``searched`` (and how many
    were too small, and how many had no uncertain forecast: ``untestable``), and the ``largest_error`` over
    the segments searched with its segment."""

    segment: str
    n: int
    error: float
    statistic: float
    p_value: float
    critical: float
    searched: int
    too_small: int
    untestable: int
    draws: int
    largest_error: float
    largest_error_segment: str
    columns: tuple[str, ...]
    depth: int
    min_segment: int


@dataclass(frozen=True)
class Weighting:
    """The rows' sample weights as an evaluation summed them: their ``total``, Kish's ``effective_size``
    (:func:`calib.validation.kish_effective_size`) and the ``column`` (or file) they were read from, where
    the command read them ("" otherwise)."""

    total: float
    effective_size: float
    column: str = ""


@dataclass
class Summary:
    """Everything an evaluation measured, in presentation order."""

    n_samples: int
    n_classes: int
    metrics: dict[str, Metric] = field(default_factory=dict)
    gains: dict[str, Metric] = field(default_factory=dict)
    gain_score: str = "log loss"
    recommended: str = ""
    fit_samples: int = 0
    corp: CorpSummary | None = None
    interval_method: str = "none (no bootstrap resamples)"
    # What the bootstrap resampled: rows, or rows and buckets of rows (calib.evaluation.passes).
    resampling: str = ""
    interval_notes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    groups: list[GroupRow] = field(default_factory=list)
    group_column: str = ""
    # The search for the worst segment (None without groups, or when no segment is large enough to test).
    multicalibration: Multicalibration | None = None
    settings: EvaluationSettings = field(default_factory=EvaluationSettings)
    # The reliability bins of each binned ECE on the data (one per score column), and the CORP lens's
    # scores and outcomes of the rows it decomposed: what the figures draw.
    reliability: dict[str, list] = field(default_factory=dict)
    lens: tuple[np.ndarray, np.ndarray] | None = None
    lens_weights: np.ndarray | None = None  # those rows' sample weights (None: unweighted)
    # The classes' names in the order of the scores' columns, where a table named them (else None).
    class_names: tuple[str, ...] | None = None
    # The rows' sample weights (None: every row counted once).
    weighting: Weighting | None = None

    @property
    def positive_class(self) -> str | None:
        """Of two classes, the positive one (the second: the positive-class ECE and CORP are of it), by name
        where a table named them, else "1"; None for more classes."""
        if self.n_classes != 2:
            return None
        return self.class_names[1] if self.class_names else "1"

    def as_records(self) -> list[dict]:
        """One dict per metric (:func:`metric_records`), e.g. for a CSV."""
        return metric_records(self.metrics)


def metric_records(metrics: dict[str, Metric]) -> list[dict]:
    """One dict per metric of ``metrics``: its name, value, interval, the interval's method ("basic", "upper
    bound", or "" without one) and what the interval is for; the JSON's and the CSV's rows.

    Examples
    --------
    >>> metric_records({"accuracy": Metric(0.8, 0.7, 0.9, "basic", "the population's accuracy")})[0]["interval"]
    'basic'
    """
    return [
        {"metric": k, "value": m.value, "low": m.low, "high": m.high, "interval": m.method, "estimand": m.estimand}
        for k, m in metrics.items()
    ]


@dataclass(frozen=True)
class Comparison:
    """Systems on the same samples: each one's metrics, and each one's differences from the first with
    paired intervals (the same resamples of the same samples for every system), and notes on the
    differences without one; ``weighting``: the samples' weights, the same for every system (None: unweighted)."""

    names: list[str]
    metrics: list[dict[str, float]]
    differences: list[dict[str, Metric]]
    corp: list[CorpSummary]
    interval_method: str
    notes: list[str] = field(default_factory=list)
    weighting: Weighting | None = None
