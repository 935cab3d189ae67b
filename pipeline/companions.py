"""Companion cells: what our values carry beside a cell so the report can derive its tolerance.

A value cell ``(row, column)`` may have companions ``(row, "<column> [<kind>]")``:

- ``[sd]``: the standard deviation over seeds of a Monte-Carlo cell, whose value is the mean over
  those seeds (the report allows a fixed number of these sds, ``pipeline.references.K_SD``);
- ``[share inf]`` / ``[share nan]``: the shares of seeds whose draw was +inf or nan (the mean and sd
  are then over the finite draws);
- ``[input rounding]``: for a closed form of printed inputs, half the spread of its value over the
  inputs' rounding intervals;
- ``[upstream]`` (and its own ``[sd]`` / shares): the cell recomputed the way the paper's authors'
  code computes it (:mod:`pipeline.authors_code`), to test the cause of a deviation.

The evaluators write companions; only the report reads published numbers.
"""

from __future__ import annotations

import numpy as np

SD, SHARE_INF, SHARE_NAN = "[sd]", "[share inf]", "[share nan]"
INPUT_ROUNDING, UPSTREAM = "[input rounding]", "[upstream]"


def companion(column: str, kind: str) -> str:
    """The column name of a companion of ``column``.

    Examples
    --------
    >>> companion("ECEmc", SD), companion(companion("NCE", UPSTREAM), SD)
    ('ECEmc [sd]', 'NCE [upstream] [sd]')
    """
    return f"{column} {kind}"


def monte_carlo_records(row: str, column: str, draws) -> list[dict]:
    """The value of a Monte-Carlo cell and its companions from its draws over seeds.

    The value is the mean of the finite draws (+inf or nan when every draw is), ``[sd]`` their sample
    standard deviation, and ``[share inf]`` / ``[share nan]`` how often a draw was +inf or nan.

    Examples
    --------
    >>> [r["value"] for r in monte_carlo_records("a", "NCE", [1.0, 3.0, float("inf"), 2.0])]
    [2.0, 1.0, 0.25, 0.0]
    """
    draws = np.asarray(draws, dtype=np.float64)
    finite = draws[np.isfinite(draws)]
    share_inf, share_nan = float(np.mean(draws == np.inf)), float(np.mean(np.isnan(draws)))
    value = float(np.mean(finite)) if finite.size else (np.inf if share_inf >= share_nan else np.nan)
    sd = float(np.std(finite, ddof=1)) if finite.size > 1 else 0.0
    return [
        {"row": row, "column": column, "value": value},
        {"row": row, "column": companion(column, SD), "value": sd},
        {"row": row, "column": companion(column, SHARE_INF), "value": share_inf},
        {"row": row, "column": companion(column, SHARE_NAN), "value": share_nan},
    ]
