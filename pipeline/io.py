"""Reading and writing pipeline files; every write is atomic (temporary file, then rename)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from calib._internal.files import atomic_write, checksum_matches, checksum_path

VALUE_COLUMNS = ["row", "column", "x", "value", "ci_low", "ci_high"]


def artifact_stem(results: str | Path, exp) -> Path:
    """Where the files of experiment ``exp`` (a config, or its typed parameters) go under the ``results``
    folder, without suffix: ``<results>/<folder>/<artifact>``, the folder being the paper's unless the
    experiment names one.

    Example: ``artifact_stem("results", experiment_config("ferrer2024_fig1").experiment)`` is
    ``results/ferrer2024/fig1``.
    """
    return Path(results) / (getattr(exp, "folder", None) or exp.paper) / exp.artifact


def values_path(results: str | Path, exp) -> Path:
    """Where the tidy values of experiment ``exp`` (a config) go under the ``results`` folder."""
    stem = artifact_stem(results, exp)
    return stem.with_name(f"{stem.name}_values.csv")


def save_dataset(path: Path, labels: np.ndarray, systems: dict[str, np.ndarray], extras: dict | None = None) -> Path:
    """Write labels, each system's log-posteriors (``system/<name>``) and extra arrays to an .npz."""
    arrays = {"labels": labels, **{f"system/{k}": v for k, v in systems.items()}, **(extras or {})}
    return atomic_write(path, lambda tmp: np.savez_compressed(tmp, **arrays), checksum=True)


def require_intact(path: Path, what: str) -> Path:
    """``path`` if it exists and matches its sha256 sidecar; otherwise the step stops (SystemExit, no
    traceback) with a message saying how to build it."""
    path = Path(path)
    if not path.exists():
        raise SystemExit(f"{what} {path} is missing: build it with `snakemake {path}`")
    if not checksum_matches(path):
        raise SystemExit(
            f"{what} {path} does not match its checksum {checksum_path(path).name} (truncated, altered or written "
            f"by an interrupted run): `snakemake` discards and rebuilds it (or delete it, then `snakemake {path}`)"
        )
    return path


def discard_corrupt(data_dir: str | Path) -> list[Path]:
    """Delete every cached ``.npz`` under ``data_dir`` that fails its checksum (and its sidecar); return them.

    The workflow calls this before building its DAG, so corrupt cached datasets are rebuilt in the same run.
    """
    bad = [p for p in sorted(Path(data_dir).rglob("*.npz")) if not checksum_matches(p)]
    for path in bad:
        path.unlink(missing_ok=True)
        checksum_path(path).unlink(missing_ok=True)
    return bad


def load_dataset(path: Path) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Inverse of :func:`save_dataset`: (labels, systems, extras), after checking the file's checksum."""
    with np.load(require_intact(path, "dataset file")) as data:
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


def read_values(path: Path) -> pd.DataFrame:
    """A values CSV with its ``row`` and ``column`` names as text (a row named 7 stays "7", as cells name it).

    ``value`` holds numbers, and text where a record stores a word (e.g. the name of a band's method).
    The file is typed whole: by default pandas types each chunk of a large file on its own, and every
    number in the chunk holding a word would come back as a string.
    """
    frame = pd.read_csv(path, dtype={"row": str, "column": str}, low_memory=False)
    if not pd.api.types.is_numeric_dtype(frame.value):  # some word: numbers as floats, words as they are
        numbers = pd.to_numeric(frame.value, errors="coerce")
        frame["value"] = numbers.astype(object).where(numbers.notna() | frame.value.isna(), frame.value)
    return frame


def write_csv(path: Path, frame: pd.DataFrame) -> Path:
    """Atomically write ``frame`` as CSV with full float precision."""
    return atomic_write(path, lambda tmp: frame.to_csv(tmp, index=False, float_format="%.10g"))


def write_text(path: Path, text: str) -> Path:
    """Atomically write a text file."""
    return atomic_write(path, lambda tmp: tmp.write_text(text))


def write_if_changed(path: Path, text: str) -> Path:
    """Atomically write ``text`` unless ``path`` already holds it, so its mtime changes only with its content."""
    path = Path(path)
    try:
        if path.read_text() == text:
            return path
    except (OSError, UnicodeDecodeError):
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_text(path, text)


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
