"""Grouped bar charts of metrics per system, optionally with confidence intervals."""

from __future__ import annotations

import numpy as np

from calib.plots.style import SYSTEM_COLORS


def grouped_bars(
    ax, values: dict[str, list[float]], metrics: list[str], *, errors=None, reference_line=None, ylim=None
):
    """Bars of ``values[system][i]`` for each metric i, one colour per system, grouped by metric.

    ``errors[system]`` is a (2, M) array of (low, high) interval ends, drawn as a vertical line
    (a percentile interval need not contain the bar's value); ``reference_line`` draws a dotted
    horizontal line (e.g. the naive system's normalized value, 1.0).
    """
    systems = list(values)
    width = 0.8 / len(systems)
    x = np.arange(len(metrics))
    for i, system in enumerate(systems):
        centers = x + (i - (len(systems) - 1) / 2) * width
        ax.bar(centers, np.asarray(values[system], dtype=float), width, label=system, color=SYSTEM_COLORS.get(system))
        if errors is not None:
            low, high = np.asarray(errors[system], dtype=float)
            ax.vlines(centers, low, high, color="black")
    if reference_line is not None:
        ax.axhline(reference_line, color="black", linestyle=":")
    ax.set_xticks(x, metrics)
    if ylim is not None:
        ax.set_ylim(*ylim)
    else:
        bottom, top = ax.get_ylim()
        ax.set_ylim(bottom, top + 0.3 * (top - bottom))  # room for the legend above the bars
    ax.legend(ncol=len(systems) if len(metrics) > 1 else 2, loc="upper center")
