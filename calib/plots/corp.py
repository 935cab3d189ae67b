"""CORP reliability diagrams and Murphy diagrams, drawn the way Dimitriadis et al. (2021) draw them.

The CORP diagram: the PAV-recalibrated curve as a step function of the score, the consistency band
around the diagonal (shaded), the score's decomposition in the lower-right corner and a histogram of
the scores inset at the upper left (:func:`corp_diagram`); its parts can be drawn apart
(:func:`corp_curve_lines`, :func:`score_histogram`) where nothing may cover the curve. Everything
drawn is computed first (:mod:`calib.calibration_errors.corp`,
:mod:`calib.calibration_errors.corp_bands`, :mod:`calib.scoring.murphy`); these functions only draw.
"""

from __future__ import annotations

import numpy as np

from calib.plots.reliability import diagonal
from calib.scoring.murphy import MurphyDiagram

HISTOGRAM_BINS = 20


def corp_diagram(
    ax, points, recalibrated, counts, terms: dict[str, float], *, band=None, band_label="", color="tab:red"
):
    """Draw a CORP reliability diagram on ``ax`` as Dimitriadis et al. (2021) draw it: the curve and band
    (:func:`corp_curve_lines`), the terms in the lower-right corner and the scores' histogram inset at
    the upper left.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes to draw on (set to [0, 1] x [0, 1], equal aspect).
    points, recalibrated, counts : arrays of shape (M,)
        The curve (:class:`calib.calibration_errors.corp.CorpCurve`): distinct scores, their PAV
        values (drawn as a step function) and how many samples hold each (the inset histogram).
    terms : dict of str -> float
        The lines of the corner box, e.g. {"BS": 0.166, "MCB": 0.001, "DSC": 0.08, "UNC": 0.25}.
    band : tuple of three arrays, optional
        (points, low, high) of the consistency band, shaded around the diagonal. Default: none.
    band_label : str, default ""
        Legend label of the band.
    color : color, default "tab:red"
        Colour of the curve.

    Returns
    -------
    None
        The curve, the band, the corner box and the inset histogram are added to ``ax``.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> from calib.calibration_errors.corp import corp_curve
    >>> ax = Figure().add_subplot()
    >>> c = corp_curve([0.1, 0.4, 0.7, 0.9], [0, 1, 0, 1])
    >>> corp_diagram(ax, c.points, c.recalibrated, c.counts, {"BS": 0.2})
    >>> len(ax.lines)  # the curve and the diagonal
    2
    """
    corp_curve_lines(ax, points, recalibrated, band=band, band_label=band_label, color=color)
    box = "\n".join(f"{name} {value:.4f}" for name, value in terms.items())
    ax.text(
        0.97,
        0.03,
        box,
        transform=ax.transAxes,
        ha="right",
        va="bottom",
        family="monospace",
        fontsize=7,
        bbox={"facecolor": "white", "edgecolor": "grey", "alpha": 0.9},
    )
    inset = ax.inset_axes([0.04, 0.66, 0.3, 0.3])
    score_histogram(inset, points, counts)
    inset.set_xticks([])
    inset.set_yticks([])
    inset.set_title("scores", fontsize=6, pad=1)


def corp_curve_lines(ax, points, recalibrated, *, band=None, band_label="", color="tab:red"):
    """The CORP curve as a step function of the score, the diagonal and the consistency band, on
    [0, 1] x [0, 1] with an equal aspect (nothing else, so nothing drawn can hide the curve).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes to draw on.
    points, recalibrated : arrays of shape (M,)
        Distinct scores and their PAV values.
    band, band_label, color
        As for :func:`corp_diagram`.

    Returns
    -------
    None
        The step curve, the diagonal and the band are added to ``ax``.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> ax = Figure().add_subplot()
    >>> corp_curve_lines(ax, [0.1, 0.5, 0.9], [0.0, 0.5, 1.0])
    >>> len(ax.lines), [float(x) for x in ax.get_xlim()]
    (2, [0.0, 1.0])
    """
    if band is not None:
        at, low, high = band
        ax.fill_between(at, low, high, step="post", color="tab:blue", alpha=0.25, linewidth=0, label=band_label)
    ax.step(points, recalibrated, where="post", color=color, linewidth=1.5, label="CORP (PAV) curve")
    diagonal(ax)
    ax.set_ylabel("conditional event probability")


def score_histogram(ax, points, counts):
    """The scores' histogram (HISTOGRAM_BINS bins on [0, 1]) from distinct scores and their counts (the
    summed weights of a weighted curve, :func:`calib.calibration_errors.corp.corp_curve`, whose histogram
    then shows weight).

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> ax = Figure().add_subplot()
    >>> score_histogram(ax, [0.1, 0.9], [3, 1])
    >>> len(ax.patches)
    20
    """
    histogram, edges = np.histogram(points, bins=HISTOGRAM_BINS, range=(0, 1), weights=counts)
    ax.bar(edges[:-1], histogram, width=np.diff(edges), align="edge", color="grey", edgecolor="white")
    ax.set_xlim(0, 1)


def band_label(level: float, method: str) -> str:
    """The legend label of a consistency band."""
    return f"{round(100 * level)} % consistency band ({method})"


def murphy_lines(ax, diagram: MurphyDiagram, *, colors=None):
    """Draw a Murphy diagram: per system its mean elementary score against the threshold (solid) and
    that of its CORP recalibration (dashed, same colour).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes to draw on.
    diagram : MurphyDiagram
        From :func:`calib.scoring.murphy.murphy_diagram`.
    colors : dict of name -> color, optional
        A colour per system (default: matplotlib's cycle).

    Returns
    -------
    None
        Two lines per system (raw and recalibrated) are added to ``ax``.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> from calib.scoring.murphy import murphy_diagram
    >>> ax = Figure().add_subplot()
    >>> murphy_lines(ax, murphy_diagram({"a": [0.1, 0.4, 0.7]}, [0, 1, 1]))
    >>> len(ax.lines)
    2
    """
    for i, name in enumerate(diagram.raw):
        color = (colors or {}).get(name, f"C{i}")
        ax.plot(diagram.thresholds, diagram.raw[name], color=color, label=name)
        ax.plot(
            diagram.thresholds,
            diagram.recalibrated[name],
            color=color,
            linestyle="--",
            label=f"{name}, CORP recalibrated",
        )
    ax.set_xlim(0, 1)
    ax.set_xlabel("threshold theta")
    ax.set_ylabel("mean elementary score")
