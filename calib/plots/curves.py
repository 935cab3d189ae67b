"""Line plots of curves: Bayes-risk curves, PSR losses and expected-divergence curves."""

from __future__ import annotations

import numpy as np


def line_curves(ax, x, curves: dict[str, np.ndarray], *, styles=None, xlabel="", ylabel="", ylim=None, legend=True):
    """Plot each named curve against ``x`` with an optional per-curve style dict."""
    for name, y in curves.items():
        ax.plot(x, y, label=name, **(styles or {}).get(name, {}))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if ylim is not None:
        ax.set_ylim(*ylim)
    if legend:
        ax.legend()


def mark_point(ax, x: float, y: float, **style):
    """A star marker at (x, y), e.g. the mean posterior on an expected-divergence curve."""
    ax.plot([x], [y], marker="*", linestyle="none", markersize=9, **style)
