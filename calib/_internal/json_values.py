"""Numbers as strict JSON values: the one rule for NaN and the infinities in every file and output calib writes."""

from __future__ import annotations

import math


def json_float(value) -> float | str:
    """``value`` as a float when finite, else the string "nan", "inf" or "-inf" (strict JSON has neither).

    Examples
    --------
    >>> json_float(0.5), json_float(float("inf")), json_float(float("nan"))
    (0.5, 'inf', 'nan')
    """
    value = float(value)
    if math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
