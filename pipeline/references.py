"""Published numbers (configs/reference/*.csv) set against ours, cell by cell, with an honest status.

This is the comparing step: it reads the published numbers and our values; the steps that compute
our values never read them (a test scans the pipeline for it).

Every published cell gets one status of :mod:`pipeline.statuses`; a ``deviation`` needs a declared
cause whose check is computed here from our values, never assumed (see :data:`CHECKS`); when the
check does not hold, or rests on a reading whose constants were fitted to the same published cells
(its reference block declares ``fitted``), the cell is a ``fail``. A cell whose tolerance is at
least the published value itself is ``informational``: such a comparison has no power. Each printed
number is counted once: an experiment that re-reads a published file in a second reading declares
``reading: second`` (and ``reading_cause``, what the reading is); a cell that repeats a number
printed elsewhere in the paper names it (``repeats``); a number that is not in the paper (e.g. from
a rerun of the authors' code) says where it comes from (``not_printed``). Their lines are
informational, never counted.

The tolerance is derived, never chosen: half a unit of the last digit the paper printed (from the
published text, e.g. ``0.60`` -> 0.005; a ``decimals`` rule states the digits where the file cannot
keep them), plus, for a Monte-Carlo cell, :data:`K_SD` standard deviations measured over seeds (the
evaluator's companion cell ``"<column> [sd]"``, :mod:`pipeline.companions`), plus, for a closed form
of printed inputs, the spread that the inputs' own rounding gives (``"<column> [input rounding]"``).
``tolerance_basis`` says which.

The ``reference`` block of an experiment config, read here as its typed form
(:class:`pipeline.config_blocks.Reference`, the ``reference`` of the experiment's
:class:`pipeline.kinds.Parameters`, from :func:`pipeline.kinds.parameters_of`):

``file``, ``layout`` (``wide``: one row per ``row`` value, one column per metric, ``row`` may list
several key columns joined by spaces; ``long``: one value per line, ``column`` a template over the
file's columns, ``value`` the value column), ``skip_values`` (printed placeholders with no number),
``percent_columns`` (columns printed in percent; ours are fractions), ``reading`` (``primary``, the
default, or ``second``), ``decimals`` (``{row, column, decimals}`` rules), ``exact`` (``{row,
column}``: the paper states the value exactly, e.g. 0; tolerance :data:`EXACT_TOLERANCE`),
``cells`` (``{row, column, status, cause}``: cells that are not verdicts, ``status`` one of
:data:`pipeline.statuses.NON_VERDICTS`), ``deviations`` (``{row, column, cause, check}``),
``second_readings`` (``{row, column, ours, cause}``: the same cell against another of our values,
listed as informational lines whose ``reading`` names that value), ``repeats`` (``{row, column,
of}``: the paper prints the same number at ``of``, "<experiment> <row> / <column>", where it is
counted), ``not_printed`` (``{row, column, source}``) and ``fitted`` (what was fitted to this
file's cells: a ``reading`` check on them is then no evidence). Patterns are fnmatch patterns; the
first matching rule of a list wins; a rule without ``row`` or ``column`` matches every one (``"*"``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pipeline.companions import INPUT_ROUNDING, SD, SHARE_INF, SHARE_NAN, companion
from pipeline.config_blocks import Reference
from pipeline.kinds import Parameters
from pipeline.statuses import VERDICTS

REPORT_COLUMNS = [
    "paper", "artifact", "row", "column", "published", "ours", "difference", "tolerance", "tolerance_basis",
    "status", "cause", "reading",
]  # fmt: skip
# A Monte-Carlo cell is judged within this many of our standard deviations over seeds (about 0.3 % of
# draws fall outside 3 sd of a normal mean), stated once for every experiment.
K_SD = 3
# "Exactly 0" in a paper is judged up to float64 rounding of our computation, not to a printed digit.
EXACT_TOLERANCE = 1e-12


def half_unit(printed: str) -> float:
    """Half a unit of the last printed digit of a number as printed: ``"0.60"`` -> 0.005, ``"75"`` -> 0.5.

    Examples
    --------
    A printed ``inf`` or ``nan`` has no digit: its half unit is 0 (ours must be the same).

    >>> half_unit("0.0074"), half_unit("-3"), half_unit("12.5"), half_unit("nan")
    (5e-05, 0.5, 0.05, 0.0)
    """
    number = Decimal(printed.strip())
    if not number.is_finite():
        return 0.0
    exponent = number.as_tuple().exponent
    return 0.5 * 10.0 ** int(exponent)


def published_cells(ref: Reference, reference_dir: Path) -> pd.DataFrame:
    """The published values as (row, column, published, printed): the number and its printed text.

    Parameters
    ----------
    ref : Reference
        An experiment's typed reference block (``parameters_of(exp).reference``): its ``file``, ``layout``,
        ``row`` (and, for the ``long`` layout, ``column`` and ``value``) and ``skip_values``.
    reference_dir : Path
        The folder of the published files (``paths.references``, configs/reference/).

    Returns
    -------
    pandas.DataFrame
        One line per printed number; placeholders (``skip_values``) are left out.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "t.csv").write_text("system,ECE\\nA,0.60\\nB,-\\n")
    >>> ref = Reference(file="t.csv", layout="wide", row="system", skip_values=["-"])
    >>> published_cells(ref, folder).values.tolist()
    [['A', 'ECE', 0.6, '0.60']]
    """
    path = Path(reference_dir) / ref.file
    if not path.exists():
        raise FileNotFoundError(f"reference file {path} is missing; it ships with the project under configs/reference/")
    keys = [ref.row] if isinstance(ref.row, str) else list(ref.row)
    skip = list(ref.skip_values)
    text = pd.read_csv(path, dtype=str, keep_default_na=False)
    if ref.layout == "wide":
        long = text.melt(id_vars=keys, var_name="column", value_name="printed")
        long = long.assign(row=long[keys].agg(" ".join, axis=1))
    else:
        long = pd.DataFrame(
            {
                "row": text[ref.row],
                "column": [ref.column.format(**rec) for rec in text.to_dict("records")],
                "printed": text[ref.value],
            }
        )
    long = long[~long.printed.isin(skip)]
    return pd.DataFrame(
        {
            "row": long.row.to_numpy(),
            "column": long.column.to_numpy(),
            "published": long.printed.astype(float).to_numpy(),
            "printed": long.printed.to_numpy(),
        }
    )


def _matches(rule: Any, row: str, column: str) -> bool:
    """Whether a rule of a :class:`Reference` list (a dataclass with ``row`` and ``column``) matches a cell;
    a pattern left out (None) is ``"*"``."""
    return fnmatch(row, str("*" if rule.row is None else rule.row)) and fnmatch(
        column, str("*" if rule.column is None else rule.column)
    )


def _first_match(rules: list, row: str, column: str) -> Any:
    """The first rule of ``rules`` (a list of a :class:`Reference`, e.g. its ``cells``) matching the cell, or None."""
    for rule in rules:
        if _matches(rule, row, column):
            return rule
    return None


def _is_percent(ref: Reference, column: str) -> bool:
    return any(fnmatch(column, p) for p in ref.percent_columns)


@dataclass(frozen=True)
class Tolerance:
    """A cell's tolerance in printed units, its printed-digit part, and the sentence that derives it."""

    value: float
    half: float
    basis: str


def tolerance_for(ref: Reference, row: str, column: str, printed: str, ours: pd.Series) -> Tolerance:
    """The derived tolerance of one cell (see the module docstring).

    Parameters
    ----------
    ref : Reference
        The experiment's typed reference block: its ``exact``, ``decimals`` and ``percent_columns`` are read.
    row, column : str
        The published cell.
    printed : str
        The cell's number as printed.
    ours : pandas.Series
        Our values and their companions, indexed by (row, column).

    Examples
    --------
    >>> ref = Reference(file="t.csv", layout="wide", row="system", percent_columns=["ECE"])
    >>> ours = pd.Series({("A", "ECE [sd]"): 0.002})
    >>> tol = tolerance_for(ref, "A", "ECE", "1.2", ours)  # in percent: 0.05 + 3 * 0.2
    >>> round(float(tol.value), 6), tol.basis
    (0.65, "half a unit of the printed digit ('1.2'): 0.05 + 3 sd over seeds (0.2)")
    """
    scale = 100.0 if _is_percent(ref, column) else 1.0
    if _first_match(ref.exact, row, column) is not None:
        return Tolerance(EXACT_TOLERANCE, EXACT_TOLERANCE, "the paper states the value exactly: float64 rounding")
    rule = _first_match(ref.decimals, row, column)
    if rule is not None:
        half, printed_as = 0.5 * 10.0 ** -int(rule.decimals), f"{int(rule.decimals)} decimals"
    else:
        half, printed_as = half_unit(printed), f"'{printed.strip()}'"
    value, basis = half, f"half a unit of the printed digit ({printed_as}): {half:g}"
    sd = ours.get((row, companion(column, SD)), np.nan) * scale
    if np.isfinite(sd):  # a Monte-Carlo cell: its evaluator measured the spread over seeds
        value += K_SD * sd
        basis += f" + {K_SD} sd over seeds ({sd:.3g})"
    spread = ours.get((row, companion(column, INPUT_ROUNDING)), np.nan) * scale
    if np.isfinite(spread):
        value += spread
        basis += f" + the printed inputs' rounding ({spread:.3g})"
    return Tolerance(value, half, basis)


def _same(published: float, value: float) -> bool:
    """Non-finite numbers: nan matches nan, inf matches the same infinity."""
    return (math.isnan(published) and math.isnan(value)) or published == value


def within(published: float, value: float, tol: float, shares: tuple[float, float] | None = None) -> bool:
    """``value`` reproduces ``published``: equal non-finite numbers, or finite and within ``tol``.

    A Monte-Carlo cell passes ``shares`` (the shares of seeds whose draw was +inf and nan): a published
    inf or nan is then within our distribution when at least one seed drew it.
    """
    if shares is not None and not math.isfinite(published):
        share_inf, share_nan = shares
        return share_nan > 0 if math.isnan(published) else published > 0 and share_inf > 0
    if not (math.isfinite(published) and math.isfinite(value)):
        return _same(published, value)
    return abs(value - published) <= tol * (1 + 1e-9)


def _shares(ours: pd.Series, row: str, column: str) -> tuple[float, float] | None:
    inf, nan = (ours.get((row, companion(column, kind)), np.nan) for kind in (SHARE_INF, SHARE_NAN))
    return None if np.isnan(inf) or np.isnan(nan) else (float(inf), float(nan))


# --- deviation checks -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """What a check sees of one published cell."""

    row: str
    column: str
    published: float
    printed: str
    ours: float
    tolerance: Tolerance
    scale: float
    reference_dir: Path


def _check_rerun(check: dict, cell: Cell, ours: pd.Series, verdicts: dict) -> tuple[bool, str]:
    """Our computation rerun the way upstream runs it (e.g. float32 L-BFGS fits) gives the published value."""
    name = check["rerun"]
    rerun = companion(cell.column, f"[{name}]")
    value = ours.get((cell.row, rerun), np.nan) * cell.scale
    sd = ours.get((cell.row, companion(rerun, SD)), np.nan) * cell.scale
    tol, shares = cell.tolerance.value, None
    if np.isfinite(sd):  # a Monte-Carlo rerun: its own spread over seeds
        tol = cell.tolerance.half + K_SD * sd
        shares = _shares(ours, cell.row, rerun)
    holds = within(cell.published, value, tol, shares)
    return holds, f"the {name} rerun gives {_fmt(value)} (tolerance {tol:.3g})"


def _check_reading(check: dict, cell: Cell, ours: pd.Series, verdicts: dict) -> tuple[bool, str]:
    """The same published cell passes in another reading of the artifact (another experiment), whose
    constants were not fitted to these cells (a fitted reading lands on them by construction)."""
    reading = check["reading"]
    other = verdicts.get((reading, cell.row, cell.column))
    if other is None:
        return False, f"experiment {reading} has no verdict on this cell"
    holds, value = other
    measured = f"{reading} gives {_fmt(value)}, {'within' if holds else 'outside'} its tolerance"
    fitted = verdicts.get((FITTED, reading))
    if fitted is not None:
        return False, f"{measured}, but its constants were fitted to these cells ({fitted}): no evidence of a cause"
    return holds, measured


def _check_recorded(check: dict, cell: Cell, ours: pd.Series, verdicts: dict) -> tuple[bool, str]:
    """The authors' own code, rerun as written, gave the printed number: its recorded output (a CSV beside
    the published file, keyed by its leading text columns as the published file is) lands within half a
    unit of the printed digit."""
    recorded = check["recorded"]
    rows = pd.read_csv(cell.reference_dir / recorded, dtype=str, keep_default_na=False)
    numeric = [pd.to_numeric(rows[c], errors="coerce").notna().all() for c in rows.columns]
    keys = list(rows.columns[: numeric.index(True)])
    rows.index = rows[keys].agg(" ".join, axis=1)
    if cell.row not in rows.index or cell.column not in rows.columns:
        return False, f"{recorded} has no value for this cell"
    value = float(rows.loc[cell.row, cell.column])
    holds = within(cell.published, value, cell.tolerance.half)
    return holds, f"their code gave {_fmt(value)} ({recorded})"


def _check_difference(check: dict, cell: Cell, ours: pd.Series, verdicts: dict) -> tuple[bool, str]:
    """The paper printed the difference of two printed (rounded) cells of the same row, not the rounded
    difference: ours of ``total`` and ``minus``, each rounded to the cell's printed digits, subtract to it."""
    digits = -Decimal(cell.printed.strip()).as_tuple().exponent
    parts = check["difference"]
    total = round(_our_value(ours, cell.row, parts["total"], cell.scale), digits)
    minus = round(_our_value(ours, cell.row, parts["minus"], cell.scale), digits)
    holds = math.isclose(total - minus, cell.published, abs_tol=1e-9)
    return holds, f"ours rounded to {digits} decimals: {total:g} - {minus:g} = {total - minus:.{digits}f}"


# Each check takes the deviation's ``check`` (a one-key mapping, e.g. ``{"rerun": "upstream"}``), the cell, our
# values and the verdicts so far.
CHECKS: dict[str, Callable[[dict, Cell, pd.Series, dict], tuple[bool, str]]] = {
    "rerun": _check_rerun,
    "reading": _check_reading,
    "difference": _check_difference,
    "recorded": _check_recorded,
}
# The key under which ``verdicts`` records what an experiment's constants were fitted to.
FITTED = "fitted"


def consults_other_experiments(exp: Parameters) -> bool:
    """Whether a ``reading`` check of ``exp`` (an experiment's typed parameters) looks up the verdicts of another
    experiment; an experiment without a reference block consults none."""
    ref = exp.reference
    return ref is not None and any(_check_kind(rule.check) == "reading" for rule in ref.deviations)


def _check_kind(check: str | dict) -> str:
    if isinstance(check, str):
        return check
    (kind,) = [k for k in check if k in CHECKS]
    return kind


def _fmt(value: float) -> str:
    return "nan" if pd.isna(value) else f"{value:.6g}"


def _our_value(ours: pd.Series, row: str, column: str, scale: float) -> float:
    return float(ours.get((row, column), np.nan)) * scale


def compare(
    exp: Parameters,
    values: pd.DataFrame | None,
    reference_dir: Path,
    verdicts: dict | None = None,
    *,
    missing: str = "",
) -> pd.DataFrame:
    """One line per published cell of ``exp``: ours, difference, derived tolerance, status and cause.

    Parameters
    ----------
    exp : Parameters
        The experiment's typed parameters (:func:`pipeline.kinds.parameters_of`); its ``paper``, ``artifact``
        and ``reference`` (which must be given) are read.
    values : pandas.DataFrame or None
        Our tidy values (``row``, ``column``, ``x``, ``value``; curve points, with ``x``, are not cells), or None
        when the artifact could not be built here.
    reference_dir : Path
        The folder of the published files.
    verdicts : dict, optional
        Maps (experiment, row, column) to (within tolerance, ours) for the experiments compared so far; it is
        updated with this one's, so a ``reading`` check can consult another reading.
    missing : str
        Why ``values`` is None: the undeclared cells are then ``not-run-here`` with this cause.

    Returns
    -------
    pandas.DataFrame
        The lines, with the columns :data:`REPORT_COLUMNS`.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "t.csv").write_text("system,NCE\\nA,0.500\\n")
    >>> ref = Reference(file="t.csv", layout="wide", row="system")
    >>> exp = Parameters(paper="p000", kind="table", artifact="table1", reference=ref)
    >>> values = pd.DataFrame({"row": ["A"], "column": ["NCE"], "x": [np.nan], "value": [0.5004]})
    >>> compare(exp, values, folder)[["row", "column", "status", "tolerance"]].values.tolist()
    [['A', 'NCE', 'pass', 0.0005]]
    """
    ref = exp.reference
    verdicts = {} if verdicts is None else verdicts
    name = f"{exp.paper}_{exp.artifact}"
    if ref.fitted:
        verdicts[(FITTED, name)] = ref.fitted
    if values is None:
        values = pd.DataFrame({"row": [], "column": [], "x": [], "value": []})
    ours = values[values.x.isna()].set_index(["row", "column"]).value
    primary = ref.reading == "primary"
    lines = []
    for cell in published_cells(ref, reference_dir).itertuples(index=False):
        scale = 100.0 if _is_percent(ref, cell.column) else 1.0
        value = _our_value(ours, cell.row, cell.column, scale)
        declared = _first_match(ref.cells, cell.row, cell.column)
        compared = declared is None or declared.status in ("informational", "input")  # shown with a tolerance
        tol = None
        if compared and (cell.row, cell.column) in ours.index:
            tol = tolerance_for(ref, cell.row, cell.column, cell.printed, ours)
        inside = tol is not None and within(cell.published, value, tol.value, _shares(ours, cell.row, cell.column))
        if declared is not None:
            status, cause = declared.status, declared.cause
            if tol is not None and status == "informational":
                cause += f" ({'within' if inside else 'outside'} tolerance)"
        elif missing:
            status, cause = "not-run-here", missing
        elif tol is None:
            status, cause = "fail", "ours is missing: the evaluator wrote no value for this cell"
        else:
            verdicts[(name, cell.row, cell.column)] = (inside, value)
            status, cause = "pass", ""
            if not inside:
                judged = Cell(cell.row, cell.column, cell.published, cell.printed, value, tol, scale, reference_dir)
                status, cause = _explain(ref, judged, ours, verdicts)
        reading, said = _reading(ref, primary, cell.row, cell.column)
        if reading != "primary" and status in VERDICTS:
            status, cause = "informational", f"{said}; {status}" + (f" ({cause})" if cause else "")
        if status in VERDICTS and tol is not None and 0 < abs(cell.published) <= tol.value:
            status, cause = "informational", _no_power(tol, cell.published, inside, cause)
        lines.append(_line(exp, cell, value, tol, status, cause, reading))
        lines += _second_readings(exp, cell, ours, scale)
    return pd.DataFrame(lines, columns=REPORT_COLUMNS)


def _reading(ref: Reference, primary: bool, row: str, column: str) -> tuple[str, str]:
    """What a published cell's line is, as the ``reading`` column and the cause says it: "primary"
    (counted), a second reading, a repeat of a number printed elsewhere in the paper (counted there) or
    a number the paper does not print."""
    if not primary:
        return ref.reading_cause, f"second reading: {ref.reading_cause}"
    repeat = _first_match(ref.repeats, row, column)
    if repeat is not None:
        return f"repeat of {repeat.of}", f"repeats the number printed at {repeat.of} (counted there)"
    unprinted = _first_match(ref.not_printed, row, column)
    if unprinted is not None:
        return "not printed", f"not printed in the paper: {unprinted.source}"
    return "primary", ""


def _no_power(tol: Tolerance, published: float, inside: bool, cause: str) -> str:
    """The cause of a comparison whose tolerance is at least the published value: it cannot fail a zero."""
    where = "within" if inside else "outside"
    said = f"no power: the tolerance {tol.value:.3g} ({tol.basis}) is at least the published value itself "
    return said + f"({abs(published):.3g}); ours is {where} it" + (f" ({cause})" if cause else "")


def _line(exp: Parameters, cell, value: float, tol: Tolerance | None, status: str, cause: str, reading: str) -> list:
    with np.errstate(invalid="ignore"):
        diff = value - cell.published
    return [
        exp.paper, exp.artifact, cell.row, cell.column, cell.published, value, diff,
        None if tol is None else tol.value, "" if tol is None else tol.basis, status, cause, reading,
    ]  # fmt: skip


def _second_readings(exp: Parameters, cell, ours: pd.Series, scale: float) -> list[list]:
    """Informational lines for the same published cell against our value in another reading.

    A rule ``{row, column, ours, cause}`` names our value by a template over the cell's ``column``
    (e.g. ``"{column} exact"``); a reading with no value for this cell adds no line.
    """
    lines = []
    for rule in exp.reference.second_readings:
        if not _matches(rule, cell.row, cell.column):
            continue
        column = rule.ours.format(column=cell.column)
        if (cell.row, column) not in ours.index:
            continue
        value = _our_value(ours, cell.row, column, scale)
        tol = tolerance_for(exp.reference, cell.row, column, cell.printed, ours)
        inside = within(cell.published, value, tol.value)
        cause = f"second reading: {rule.cause} ({'within' if inside else 'outside'} tolerance)"
        lines.append(_line(exp, cell, value, tol, "informational", cause, column))
    return lines


def _explain(ref: Reference, cell: Cell, ours: pd.Series, verdicts: dict) -> tuple[str, str]:
    """``deviation`` with the cause and its measurement when a declared cause's check holds, else ``fail``."""
    rule = _first_match(ref.deviations, cell.row, cell.column)
    if rule is None:
        return "fail", "no verified cause"
    holds, measured = CHECKS[_check_kind(rule.check)](rule.check, cell, ours, verdicts)
    if holds:
        return "deviation", f"{rule.cause}: {measured}"
    return "fail", f"declared cause not confirmed ({rule.cause}): {measured}"
