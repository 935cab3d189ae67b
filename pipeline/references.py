"""Published numbers (configs/reference/*.csv) set against ours, cell by cell.

An experiment's ``reference`` block says how to read its published file: ``layout: wide`` (one
row per ``row`` value, one column per metric) or ``long`` (one published value per line, with
``column`` a template over the file's columns); ``percent_columns`` are patterns of columns the
paper prints in percent; ``round`` rounds ours as the paper printed; ``tolerances`` is a list of
``{row, column, tol}`` patterns, first match wins.
"""

from __future__ import annotations

from fnmatch import fnmatch
from pathlib import Path

import numpy as np
import pandas as pd
from omegaconf import DictConfig

REPORT_COLUMNS = ["paper", "artifact", "row", "column", "published", "ours", "difference", "tolerance", "status"]


def published_cells(ref: DictConfig, reference_dir: Path) -> pd.DataFrame:
    """The published values as (row, column, published)."""
    path = Path(reference_dir) / ref.file
    if not path.exists():
        raise FileNotFoundError(f"reference file {path} is missing; it ships with the project under configs/reference/")
    table = pd.read_csv(path, dtype={ref.row: str})
    if ref.layout == "wide":
        long = table.melt(id_vars=[ref.row], var_name="column", value_name="published")
        return long.rename(columns={ref.row: "row"})
    return pd.DataFrame(
        {
            "row": table[ref.row].astype(str),
            "column": [ref.column.format(**rec) for rec in table.to_dict("records")],
            "published": table[ref.value],
        }
    )


def tolerance_for(ref: DictConfig, row: str, column: str) -> float:
    """The first matching tolerance rule."""
    for rule in ref.tolerances:
        if fnmatch(row, rule.get("row", "*")) and fnmatch(column, rule.get("column", "*")):
            return float(rule.tol)
    raise ValueError(f"no tolerance rule matches cell ({row}, {column}); add a catch-all rule")


def compare(exp: DictConfig, values: pd.DataFrame, reference_dir: Path) -> pd.DataFrame:
    """One report line per published cell: ours (as printed), difference, tolerance and status."""
    ref = exp.reference
    ours = values[values.x.isna()].set_index(["row", "column"]).value
    lines = []
    for cell in published_cells(ref, reference_dir).itertuples(index=False):
        value = ours.get((cell.row, cell.column), np.nan)
        if any(fnmatch(cell.column, p) for p in ref.get("percent_columns", [])):
            value = 100 * value
        if "round" in ref and np.isfinite(value):
            value = round(value, int(ref["round"]))
        tol = tolerance_for(ref, cell.row, cell.column)
        published = float(cell.published)
        diff = value - published
        if not np.isfinite(published):
            status = "not-reproducible"
        elif np.isfinite(diff):
            status = "pass" if abs(diff) <= tol + 1e-9 else "fail"
        else:
            status = "fail"
        lines.append([exp.paper, exp.artifact, cell.row, cell.column, published, value, diff, tol, status])
    return pd.DataFrame(lines, columns=REPORT_COLUMNS)
