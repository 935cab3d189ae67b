"""The plain table of several papers' kinds: laid out straight from the tidy values, 4 significant digits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.io import write_table
from pipeline.kinds import Parameters


def _table_from_values(values: pd.DataFrame, index_name: str) -> pd.DataFrame:
    wide = values.pivot(index="row", columns="column", values="value")
    order = list(dict.fromkeys(values.row))
    columns = list(dict.fromkeys(values.column))
    return wide.loc[order, columns].reset_index().rename(columns={"row": index_name})


def render_values_table(exp: Parameters, values: pd.DataFrame, stem: Path) -> list[Path]:
    """A table laid out straight from the tidy values (rows and columns in first-seen order), 4 decimals."""
    table = _table_from_values(values, getattr(exp, "index_name", "row"))
    shown = table.map(lambda v: f"{v:.4g}" if isinstance(v, float) and not np.isnan(v) else ("-" if v != v else v))
    return write_table(stem, shown, exp.title)
