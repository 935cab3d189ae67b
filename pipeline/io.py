"""Reading and writing pipeline files; every write is atomic (temporary file, then rename)."""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

VALUE_COLUMNS = ["row", "column", "x", "value", "ci_low", "ci_high"]


def values_path(results: str | Path, exp) -> Path:
    """Where the tidy values of experiment ``exp`` go under the ``results`` folder."""
    return Path(results) / exp.paper / f"{exp.artifact}_values.csv"


def atomic_write(path: Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp)`` then move ``tmp`` onto ``path``, so a failed step never leaves a half file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def save_dataset(path: Path, labels: np.ndarray, systems: dict[str, np.ndarray], extras: dict | None = None) -> Path:
    """Write labels, each system's log-posteriors (``system/<name>``) and extra arrays to an .npz."""
    arrays = {"labels": labels, **{f"system/{k}": v for k, v in systems.items()}, **(extras or {})}
    return atomic_write(path, lambda tmp: np.savez_compressed(tmp, **arrays))


def load_dataset(path: Path) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Inverse of :func:`save_dataset`: (labels, systems, extras)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"dataset file {path} is missing: build it with `snakemake {path}`")
    with np.load(path) as data:
        labels = data["labels"]
        systems = {k.split("/", 1)[1]: data[k] for k in data.files if k.startswith("system/")}
        extras = {k: data[k] for k in data.files if k != "labels" and not k.startswith("system/")}
    return labels, systems, extras


def values_frame(records: list[dict]) -> pd.DataFrame:
    """A tidy values table (columns :data:`VALUE_COLUMNS`) from dicts with at least row/column/value."""
    frame = pd.DataFrame.from_records(records)
    for col in VALUE_COLUMNS:
        if col not in frame:
            frame[col] = np.nan
    return frame[VALUE_COLUMNS]


def write_csv(path: Path, frame: pd.DataFrame) -> Path:
    """Atomically write ``frame`` as CSV with full float precision."""
    return atomic_write(path, lambda tmp: frame.to_csv(tmp, index=False, float_format="%.10g"))


def write_text(path: Path, text: str) -> Path:
    """Atomically write a text file."""
    return atomic_write(path, lambda tmp: tmp.write_text(text))


def write_table(stem: Path, table: pd.DataFrame, caption: str) -> list[Path]:
    """Write a presentation table as ``stem``.csv, .md and .tex."""
    stem = Path(stem)
    write_csv(stem.with_suffix(".csv"), table)
    write_text(stem.with_suffix(".md"), f"{caption}\n\n{table.to_markdown(index=False, disable_numparse=True)}\n")
    write_text(stem.with_suffix(".tex"), latex_table(table, caption, f"tab:{stem.name}"))
    return [stem.with_suffix(s) for s in (".csv", ".md", ".tex")]


def _latex_escape(text) -> str:
    return "".join("\\" + c if c in "&%$#_{}" else c for c in str(text))


def latex_table(table: pd.DataFrame, caption: str, label: str) -> str:
    """A booktabs LaTeX table of ``table`` (plain strings; no jinja2 needed)."""
    header = " & ".join(_latex_escape(c) for c in table.columns) + r" \\"
    body = "\n".join(" & ".join(_latex_escape(v) for v in row) + r" \\" for row in table.itertuples(index=False))
    spec = "l" * len(table.columns)
    return (
        "\\begin{table}\n\\centering\n"
        f"\\caption{{{_latex_escape(caption)}}}\n\\label{{{label}}}\n"
        f"\\begin{{tabular}}{{{spec}}}\n\\toprule\n{header}\n\\midrule\n{body}\n\\bottomrule\n"
        "\\end{tabular}\n\\end{table}\n"
    )


def write_code_stamp(paths, out: str | Path) -> Path:
    """Write ``sha256  path`` for every code file (``sha256sum`` format): the code the results were built with."""
    lines = "".join(f"{hashlib.sha256(Path(p).read_bytes()).hexdigest()}  {p}\n" for p in sorted(map(str, paths)))
    return write_text(out, lines)
