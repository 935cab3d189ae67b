"""Reliability diagrams (survey conventions; deviations with consistency bars), simplex maps and arrows.

Silva Filho et al. (2023), Sect. 4.1 and Figs. 1, 6-10, 12-20: a bar per bin up to the observed
frequency, a red gap from the frequency to the bin's mean score, the marker at the mean score
(not the bin centre: Fig. 6; Bröcker & Smith (2007)), the diagonal, a histogram of scores below,
and optional per-bin intervals. Simplex maps colour the change g_j(s) - s_j of one class over
the probability simplex (red up, blue down, white unchanged). Everything drawn is computed first
(:class:`calib.calibration_errors.binned.ReliabilityBins`); these functions only draw.

matplotlib's triangulation and colour tools are imported inside the functions that use them: a command or job
that never calls them starts without loading them.
"""

from __future__ import annotations

import numpy as np

from calib.calibration_errors.binned import ReliabilityBins
from calib.validation import as_sample_weights


def reliability_bars(ax, bins: ReliabilityBins, *, intervals=None, color="tab:blue", gap_color="red", label=None):
    """Draw a reliability diagram: bars to the observed frequency, red gaps and markers at the mean score.

    For each non-empty bin B_m, a bar spans the bin's width up to its observed frequency ybar(B_m),
    a red vertical segment joins ybar(B_m) and the mean score sbar(B_m) at x = sbar(B_m) (the gap
    |ybar(B_m) - sbar(B_m)| whose count-weighted mean is the ECE), and a black marker sits at
    (sbar(B_m), ybar(B_m)): at the mean score, not the bin centre. The diagonal is drawn and the axes
    are set to [0, 1] x [0, 1] with an equal aspect. Everything drawn is computed beforehand (by
    :func:`calib.calibration_errors.binned.reliability_bins`); this only draws. O(M) artists.

    Source: Silva Filho et al. (2023), Sect. 4.1 and Fig. 6 (the marker at the mean score); Bröcker
    & Smith (2007).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes to draw on.
    bins : ReliabilityBins
        Bins with edges (equal-width or preset bins): equal-mass bins, whose ``edges`` are None,
        cannot be drawn as bars.
    intervals : tuple of two arrays of shape (M,), optional
        Per-bin (low, high) bounds of the frequency, drawn as thin black bars at the mean score, e.g.
        ``bins.frequency_intervals(0.95)`` (Clopper-Pearson). Default None: none drawn.
    color : color, default "tab:blue"
        Colour of the frequency bars.
    gap_color : color, default "red"
        Colour of the gap segments (legend label "gap").
    label : str, optional
        Legend label of the frequency bars.

    Returns
    -------
    None
        The bars, the gap segments, the markers, the intervals (if given) and the diagonal are added to ``ax``.

    Examples
    --------
    >>> from matplotlib.backends.backend_agg import FigureCanvasAgg
    >>> from matplotlib.figure import Figure
    >>> from calib.calibration_errors.binned import reliability_bins
    >>> bins = reliability_bins([0.1, 0.2, 0.8, 0.9], [0, 1, 1, 1], n_bins=5)
    >>> figure = Figure()
    >>> canvas = FigureCanvasAgg(figure)  # the Agg backend, without pyplot
    >>> ax = figure.add_subplot()
    >>> reliability_bars(ax, bins, intervals=bins.frequency_intervals())
    >>> len(ax.patches)  # one bar per non-empty bin
    3
    """
    full = bins.occupied
    left, right = bins.edges[:-1][full], bins.edges[1:][full]
    freq, conf = bins.frequency[full], bins.mean_confidence[full]
    ax.bar(left, freq, width=right - left, align="edge", color=color, alpha=0.6, edgecolor="white", label=label)
    ax.vlines(conf, np.minimum(freq, conf), np.maximum(freq, conf), color=gap_color, linewidth=2, label="gap")
    ax.plot(conf, freq, "o", color="black", markersize=3)
    if intervals is not None:
        low, high = intervals
        ax.vlines(conf, low[full], high[full], color="black", linewidth=0.8)
    diagonal(ax)


def reliability_points(ax, bins: ReliabilityBins, *, marker_at: str = "mean", style=None, label=None):
    """Observed frequency per non-empty bin against its mean score (or its centre: the Fig. 6 pitfall)."""
    full = bins.occupied
    if marker_at == "mean":
        x = bins.mean_confidence[full]
    elif marker_at == "centre":
        x = ((bins.edges[:-1] + bins.edges[1:]) / 2)[full]
    else:
        raise ValueError(f"marker_at must be 'mean' or 'centre'; got {marker_at!r}")
    ax.plot(x, bins.frequency[full], marker="o", label=label, **(style or {}))
    diagonal(ax)


def score_histogram(ax, scores, edges, *, color="tab:blue", sample_weight=None):
    """Histogram of the scores on the diagram's bins: counts, or with ``sample_weight`` (one weight >= 0 per
    score, :func:`calib.validation.as_sample_weights`) each bin's summed weight.

    Parameters
    ----------
    ax : matplotlib Axes
    scores : array_like of shape (N,)
    edges : array_like of shape (M + 1,)
        The bins' edges (e.g. :attr:`ReliabilityBins.edges`).
    color : str, default "tab:blue"
    sample_weight : array_like of shape (N,), optional
        None counts every score once.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> ax = Figure().add_subplot()
    >>> score_histogram(ax, [0.1, 0.2, 0.8], [0.0, 0.5, 1.0], sample_weight=[2.5, 1, 0])
    >>> [float(patch.get_height()) for patch in ax.patches]
    [3.5, 0.0]
    """
    values = np.asarray(scores)
    w = as_sample_weights(sample_weight, values.size)
    ax.hist(values, bins=np.asarray(edges), weights=w, color=color, alpha=0.6, edgecolor="white")
    ax.set_xlim(0, 1)
    ax.set_ylabel("count" if w is None else "weight")


def reliability_curve(ax, x, y, *, label=None, **style):
    """A smoothed or fine-binned reliability curve (e.g. the 'true' diagrams of Fig. 12)."""
    ax.plot(x, y, label=label, **style)
    diagonal(ax)


def diagonal(ax):
    """The reference of every reliability diagram: the diagonal, dashed grey, on [0, 1] x [0, 1] with an
    equal aspect.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes to draw on.

    Returns
    -------
    None
        The line is added to ``ax`` and its limits and aspect are set.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> ax = Figure().add_subplot()
    >>> diagonal(ax)
    >>> len(ax.lines), ax.get_aspect()
    (1, 1.0)
    """
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=0.8)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_aspect("equal", adjustable="box")


def simplex_grid(resolution: int = 60) -> np.ndarray:
    """Points of the 2-simplex on a triangular lattice strictly inside it, shape (P, 3)."""
    steps = np.arange(1, resolution)
    i, j = np.meshgrid(steps, steps, indexing="ij")
    keep = i + j < resolution
    a, b = i[keep] / resolution, j[keep] / resolution
    return np.column_stack([a, b, 1.0 - a - b])


def _to_plane(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Barycentric (s1, s2, s3) to the plane: s1 at the bottom left, s2 at the bottom right, s3 on top."""
    x = points[:, 1] + 0.5 * points[:, 2]
    y = points[:, 2] * np.sqrt(3) / 2
    return x, y


def simplex_map(ax, points: np.ndarray, change: np.ndarray, *, limit: float | None = None, cmap="RdBu_r"):
    """Colour ``change`` (e.g. g_j(s) - s_j) over simplex ``points``; white line where it is 0."""
    from matplotlib.tri import Triangulation

    x, y = _to_plane(points)
    tri = Triangulation(x, y)
    limit = float(np.max(np.abs(change))) if limit is None else limit
    limit = limit if limit > 0 else 1.0
    image = ax.tripcolor(tri, change, cmap=cmap, vmin=-limit, vmax=limit, shading="gouraud")
    if np.min(change) < 0 < np.max(change):
        ax.tricontour(tri, change, levels=[0.0], colors="white", linewidths=1.0)
    corners = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, np.sqrt(3) / 2], [0.0, 0.0]])
    ax.plot(corners[:, 0], corners[:, 1], color="black", linewidth=0.8)
    for (cx, cy), name in zip(corners[:3], ("$s_1$", "$s_2$", "$s_3$"), strict=True):
        ax.annotate(name, (cx, cy), textcoords="offset points", xytext=(0, -10 if cy == 0 else 4), ha="center")
    ax.set_aspect("equal")
    ax.axis("off")
    return image


def deviation_diagram(ax, mean_prediction, deviation, *, low=None, high=None, share=None, extent=None, xlabel=""):
    """Vaicenavicius et al. (2019), Sect. 4.4: deviation r_i - g_i (crosses) against the mean prediction
    g_i, red consistency bars [low, high] and, on a second axis, blue bars of each cell's share
    spanning the cell's predictions (``extent`` (L, 2)). Returns the share axis (or None)."""
    ax.axhline(0.0, color="grey", linewidth=0.8, linestyle="--")
    if low is not None:
        ax.vlines(mean_prediction, low, high, color="red", linewidth=1.5, label="5-95 % consistency")
    ax.plot(mean_prediction, deviation, "x", color="black", markersize=5, label="observed deviation")
    ax.set_xlim(0, 1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("frequency - mean prediction")
    if share is None:
        return None
    bars = ax.twinx()
    left, right = np.asarray(extent)[:, 0], np.asarray(extent)[:, 1]
    bars.bar(left, share, width=np.maximum(right - left, 0.004), align="edge", color="tab:blue", alpha=0.25)
    bars.set_ylim(0, 4 * max(float(np.max(share)), 1e-9))
    bars.set_ylabel("share of predictions", color="tab:blue")
    ax.set_zorder(bars.get_zorder() + 1)
    ax.patch.set_visible(False)
    return bars


def simplex_arrows(ax, tails, heads, *, names=("1", "2", "3"), cells=None, share=None, marks=False, cmap="Blues"):
    """Multidimensional reliability diagram (Vaicenavicius et al. (2019), Sect. 4.4): an arrow from each
    mean prediction (``tails``, (L, 3)) to its outcome frequency (``heads``), to scale in the simplex.
    With ``cells`` (C, 3, 3) and ``share`` (C,), each triangle is coloured by its share of the
    predictions (log scale, empty cells blank), arrows of rarer cells are fainter, and the colour
    mapping is returned for a colour bar; ``marks`` puts a dot on each tail. ``tails`` and ``heads``
    then list the occupied cells in order."""
    from matplotlib.collections import PolyCollection
    from matplotlib.colors import LogNorm

    mapping = None
    if cells is not None:
        share = np.asarray(share, dtype=np.float64)
        occupied = share > 0
        polygons = [np.column_stack(_to_plane(v)) for v in np.asarray(cells)[occupied]]
        norm = LogNorm(vmin=max(float(share[occupied].min()), 1e-6), vmax=float(share.max()))
        mapping = PolyCollection(polygons, cmap=cmap, norm=norm, edgecolors="white", linewidths=0.5)
        mapping.set_array(share[occupied])
        ax.add_collection(mapping)
    x0, y0 = _to_plane(np.asarray(tails, dtype=np.float64))
    x1, y1 = _to_plane(np.asarray(heads, dtype=np.float64))
    colors = np.zeros((x0.size, 4))
    if cells is not None:  # arrows of rare cells (noisy frequencies) fade: opacity grows with log share
        colors[:, 3] = 0.25 + 0.75 * np.clip(mapping.norm(share[occupied]), 0.0, 1.0)
    else:
        colors[:, 3] = 1.0
    ax.quiver(x0, y0, x1 - x0, y1 - y0, angles="xy", scale_units="xy", scale=1, color=colors, width=0.004)
    if marks:
        ax.plot(x0, y0, "o", color="tab:blue", markersize=4)
    corners = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, np.sqrt(3) / 2], [0.0, 0.0]])
    ax.plot(corners[:, 0], corners[:, 1], color="black", linewidth=0.8)
    for (cx, cy), name in zip(corners[:3], names, strict=True):
        ax.annotate(name, (cx, cy), textcoords="offset points", xytext=(0, -12 if cy == 0 else 4), ha="center")
    ax.set_aspect("equal")
    ax.axis("off")
    return mapping
