"""What an evaluation of weighted rows says about its weights: their total and Kish's effective sample size
(:class:`calib.evaluation.results.Weighting`), the weighted estimand of every metric and interval, the
resampling of rows that keep their weights, and a note when the weights leave less than one effective sample
per bin. The weights themselves enter the sums in one place, :func:`calib.evaluation.passes.terms_of`.

Source: Kish (1965), Survey Sampling (the effective sample size).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from calib.evaluation.results import Summary, Weighting
from calib.validation import effective_size

# What a weighted evaluation's estimates and intervals are of, added to each metric's estimand.
WEIGHTED_ESTIMAND = "with each sample counted by its weight (the rows resampled, each keeping its weight)"
# What the resampling of weighted rows adds to the words of the resampling.
WEIGHTED_RESAMPLING = "each resampled row keeps its sample weight"


def weighting_of(total: float, squares: float) -> Weighting:
    """The :class:`Weighting` of weights that sum to ``total`` and whose squares sum to ``squares``.

    Examples
    --------
    >>> weighting_of(11.0, 101.0).effective_size == 121 / 101
    True
    """
    return Weighting(total, effective_size(total, squares))


def say_weighted(summary: Summary, weight_sums: np.ndarray, n_bins: int) -> None:
    """Say in ``summary`` that its rows were weighted: the total weight and Kish's effective size (from
    ``weight_sums``, each class's weight and then the sum of the squared weights), each metric's estimand,
    the resampling, and a note when the effective size is below ``n_bins``, one sample per bin.

    Parameters
    ----------
    summary : Summary
        Filled in place.
    weight_sums : array of shape (K + 1,)
        As :class:`calib.evaluation.data_pass.Gathered` sums them.
    n_bins : int
        The bins of the binned ECEs.
    """
    summary.weighting = weighting_of(float(weight_sums[:-1].sum()), float(weight_sums[-1]))
    for name, metric in summary.metrics.items():
        if metric.estimand:
            summary.metrics[name] = dataclasses.replace(metric, estimand=f"{metric.estimand}, {WEIGHTED_ESTIMAND}")
    if summary.resampling:
        summary.resampling += f"; {WEIGHTED_RESAMPLING}"
    if summary.weighting.effective_size < n_bins:
        summary.notes.append(
            f"sample weights: Kish's effective sample size is {summary.weighting.effective_size:.3g}, less than one "
            f"per bin ({n_bins} bins): the binned ECEs and their intervals rest on very few effective samples"
        )
