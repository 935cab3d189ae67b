"""Grouped bar charts of metrics per system, optionally with confidence intervals."""

from __future__ import annotations

import numpy as np

from calib.plots.style import SYSTEM_COLORS


def grouped_bars(
    ax, values: dict[str, list[float]], metrics: list[str], *, errors=None, reference_line=None, ylim=None
):
    """Bars of ``values[system][i]`` for each metric i, one colour per system, grouped by metric.

    ``errors[system]`` is a (2, M) array of (low, high) interval ends; ``reference_line`` draws a
    dotted horizontal line (e.g. the naive system's normalized value, 1.0).
    """
    systems = list(values)
    width = 0.8 / len(systems)
    x = np.arange(len(metrics))
    for i, system in enumerate(systems):
        heights = np.asarray(values[system], dtype=float)
        yerr = None
        if errors is not None:
            low, high = np.asarray(errors[system], dtype=float)
            yerr = np.vstack([heights - low, high - heights])
        ax.bar(
            x + (i - (len(systems) - 1) / 2) * width,
            heights,
            width,
            label=system,
            color=SYSTEM_COLORS.get(system),
            yerr=yerr,
            ecolor="black",
        )
    if reference_line is not None:
        ax.axhline(reference_line, color="black", linestyle=":")
    ax.set_xticks(x, metrics)
    if ylim is not None:
        ax.set_ylim(*ylim)
    ax.legend(ncol=len(systems), loc="upper center")
