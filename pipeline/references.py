"""Published numbers (configs/reference/*.csv) set against ours, cell by cell.

An experiment's ``reference`` block says how to read its published file: ``layout: wide`` (one
row per ``row`` value, one column per metric; ``row`` may list several key columns, joined with
spaces) or ``long`` (one published value per line, with ``column`` a template over the file's
columns); ``skip_values`` are printed placeholders with no number (e.g. "-"); ``percent_columns``
are patterns of columns the paper prints in percent; ``round`` rounds ours as the paper printed;
``not_reproducible`` lists ``{row, column, reason}`` patterns of cells we cannot recompute;
``tolerances`` is a list of ``{row, column, tol}`` patterns, first match wins; ``tol: null`` reports
the difference without judging it, and ``sd_factor: k`` allows k of our own sds (column "<col> sd").
A published ``inf`` or ``nan`` passes only if ours is the same.
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
    keys = [ref.row] if isinstance(ref.row, str) else list(ref.row)
    text = pd.read_csv(path, dtype=str, keep_default_na=False)
    table = pd.read_csv(path, dtype=dict.fromkeys(keys, str), na_values=list(ref.get("skip_values", [])))
    if ref.layout == "wide":
        long = table.melt(id_vars=keys, var_name="column", value_name="published")
        printed = text.melt(id_vars=keys, var_name="column", value_name="printed").printed
        long = long.assign(row=long[keys].astype(str).agg(" ".join, axis=1))
        kept = ~printed.isin(list(ref.get("skip_values", [])))
        return long.loc[kept, ["row", "column", "published"]].reset_index(drop=True)
    keep = ~text[ref.value].isin(list(ref.get("skip_values", [])))
    table = table[keep]
    return pd.DataFrame(
        {
            "row": table[ref.row].astype(str),
            "column": [ref.column.format(**rec) for rec in table.to_dict("records")],
            "published": table[ref.value],
        }
    ).reset_index(drop=True)


def _first_match(rules, row: str, column: str):
    for rule in rules:
        if fnmatch(row, rule.get("row", "*")) and fnmatch(column, rule.get("column", "*")):
            return rule
    return None


def tolerance_for(ref: DictConfig, row: str, column: str, ours: pd.Series | None = None) -> float | None:
    """The first matching tolerance rule (None: report the difference, do not judge it).

    A rule ``{sd_factor: k}`` allows k times our own standard deviation of the cell, read from our
    value in column "<column> sd" (e.g. the spread over seeds of a simulation the paper ran once).
    """
    rule = _first_match(ref.tolerances, row, column)
    if rule is None:
        raise ValueError(f"no tolerance rule matches cell ({row}, {column}); add a catch-all rule")
    if "sd_factor" in rule:
        sd = np.nan if ours is None else ours.get((row, f"{column} sd"), np.nan)
        if not np.isfinite(sd):
            raise ValueError(f"rule sd_factor for cell ({row}, {column}) needs our value in column '{column} sd'")
        percent = any(fnmatch(column, p) for p in ref.get("percent_columns", []))
        return float(rule.sd_factor) * float(sd) * (100.0 if percent else 1.0)
    return None if rule.tol is None else float(rule.tol)


def _status(published: float, value: float, tol: float | None) -> str:
    if not np.isfinite(published):
        same = (np.isnan(published) and np.isnan(value)) or published == value
        return "pass" if same else "fail"
    if tol is None:
        return "reported"
    diff = value - published
    return "pass" if np.isfinite(diff) and abs(diff) <= tol + 1e-9 else "fail"


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
        published = float(cell.published)
        unreproducible = _first_match(ref.get("not_reproducible", []), cell.row, cell.column)
        if unreproducible is not None:
            tol, status, value = None, f"not-reproducible: {unreproducible.reason}", np.nan
        else:
            tol = tolerance_for(ref, cell.row, cell.column, ours)
            status = _status(published, value, tol)
        with np.errstate(invalid="ignore"):
            diff = value - published
        lines.append([exp.paper, exp.artifact, cell.row, cell.column, published, value, diff, tol, status])
    return pd.DataFrame(lines, columns=REPORT_COLUMNS)
