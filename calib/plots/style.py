"""One house style, applied through a context (never by mutating global rcParams).

``matplotlib.pyplot`` is imported on first use, not with this module: a job that only lays out
tables imports the paper modules that draw, and should not pay for importing pyplot.

pyplot is imported inside the function that makes figures: importing this module (its styles) does not start
matplotlib's backend.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import matplotlib

from calib._internal.files import atomic_write

matplotlib.use("Agg")

SYSTEM_COLORS = {"cal": "blue", "mcp": "red", "mcs": "green", "mcps": "gold"}

_RC = {
    "figure.dpi": 100,
    "savefig.dpi": 150,
    "font.size": 9,
    "axes.titlesize": 10,
    "legend.fontsize": 8,
    "svg.hashsalt": "calib",
    "pdf.compression": 6,
}


def pyplot():
    """``matplotlib.pyplot``, imported on the first call (with the non-interactive Agg backend).

    Examples
    --------
    >>> pyplot().__name__
    'matplotlib.pyplot'
    """
    import matplotlib.pyplot as plt

    return plt


def subplots(*args, **kwargs):
    """``matplotlib.pyplot.subplots``: a new figure and its axes.

    Parameters
    ----------
    *args, **kwargs
        As for ``matplotlib.pyplot.subplots`` (rows, columns, ``figsize``, ``layout``, ...).

    Examples
    --------
    >>> with figure_style():
    ...     fig, ax = subplots(figsize=(2, 2))
    >>> pyplot().close(fig)
    """
    return pyplot().subplots(*args, **kwargs)


@contextmanager
def figure_style():
    """Apply the house matplotlib style inside a ``with`` block."""
    with pyplot().rc_context(_RC):
        yield


def save_figure(fig, stem: Path) -> list[Path]:
    """Write ``stem``.pdf and ``stem``.png atomically, with fixed metadata (byte-identical reruns); close the figure."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".pdf"), stem.with_suffix(".png")]
    pdf_metadata = {"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None}
    atomic_write(paths[0], lambda tmp: fig.savefig(tmp, format="pdf", metadata=pdf_metadata))
    atomic_write(paths[1], lambda tmp: fig.savefig(tmp, format="png", metadata={"Software": None}))
    pyplot().close(fig)
    return paths
