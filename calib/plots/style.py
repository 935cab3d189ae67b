"""One house style, applied through a context (never by mutating global rcParams)."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import matplotlib

from calib._internal.files import atomic_write

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

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


@contextmanager
def figure_style():
    """Apply the house matplotlib style inside a ``with`` block."""
    with plt.rc_context(_RC):
        yield


def save_figure(fig, stem: Path) -> list[Path]:
    """Write ``stem``.pdf and ``stem``.png atomically, with fixed metadata (byte-identical reruns); close the figure."""
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_suffix(".pdf"), stem.with_suffix(".png")]
    pdf_metadata = {"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None}
    atomic_write(paths[0], lambda tmp: fig.savefig(tmp, format="pdf", metadata=pdf_metadata))
    atomic_write(paths[1], lambda tmp: fig.savefig(tmp, format="png", metadata={"Software": None}))
    plt.close(fig)
    return paths
