"""How an evaluation's intervals are made, per metric: one declaration of each method, its words and source.

Each metric declares its method (:attr:`calib.evaluation.metrics.MetricDefinition.interval`), chosen by the
coverage study (``benchmarks/coverage.py``, its table in the README): a two-sided basic bootstrap interval
for the metrics that are smooth functions of means (accuracy, NCE, NBS, the risks, ECD), and a one-sided
upper bound for the calibration errors. A calibration error is 0 for a calibrated model and its estimate
is biased upward near 0 (the binned and smooth ECEs of a calibrated model are positive in every sample),
so an interval reflected about it misses 0: the study measured 0 to 66 % coverage there. Its upper
bound, the (1 - alpha) percentile of the resampled estimates, lies above the estimate's own upward bias and
covers; a lower bound is what the calibration test (the MCB p-value of CORP) answers instead.

Sources: Davison & Hinkley (1997), Sect. 5.2 (basic bootstrap intervals); Efron & Tibshirani (1993),
Ch. 13 (percentile intervals, one-sided at level 1 - alpha).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class IntervalMethod:
    """An interval method: its ``name`` (as the JSON gives it), whether it is two-sided, and its words."""

    name: str
    two_sided: bool
    words: str


BASIC = IntervalMethod(
    "basic",
    True,
    "two-sided basic bootstrap interval, the resamples' (B + 1)(alpha / 2)-th and (B + 1)(1 - alpha / 2)-th "
    "values reflected about the estimate (Davison & Hinkley (1997), Sect. 5.2)",
)
UPPER = IntervalMethod(
    "upper bound",
    False,
    "one-sided upper bound, the (B + 1)(1 - alpha)-th of the resampled estimates (a percentile bound, Efron & "
    "Tibshirani (1993), Ch. 13), with the metric's least value (0) below",
)
