"""The segments of a subgroup analysis and the search for the worst of them (multicalibration).

With one group column the segments are its values; with several (``--groups A B ...``) they are every value
of each column and every crossing of up to ``segment_depth`` columns (A = a, B = b, A = a & B = b, ...), so a
miscalibration that only a crossing shows is seen where it is. A segment is keyed by its (column index,
value) pairs, which merge across chunks, partitions and workers; its name (:func:`segment_name`) is the one
the text, the JSON, the CSV and the figures print.

The search's p-value. Each segment is tested by Cox's score statistic S (:mod:`calib.evaluation.cox_test`);
the segment searched out is the one with the largest S, and the p-value of that largest S is found by drawing
the outcomes again from the forecasts themselves, B times (``search_draws``): under calibration each row's
outcome is Bernoulli(p_i) whatever the segment, so the largest S over the same segments in the draws is the
null distribution of the largest S observed, overlaps and crossings included, and p = (1 + #{draws at least as
large}) / (1 + B) is valid after the search (a Monte Carlo test of the maximum: Dwass (1957), as in
Kulldorff (1997)'s scan statistic, which names the most significant of many overlapping zones in the same
way). The information of S does not depend on the outcomes, so a draw needs only the two score sums of each
segment: the draws cost one pass of B Bernoulli outcomes per row, summed per segment.

The draws of a row come from a stream keyed by the seed, :data:`SEARCH_STREAM` and the row's block, in row
order (a part of a block skips the rows before it), so a data set cut into chunks or partitions draws the
same outcomes for the same rows.

Sources: Hébert-Johnson et al. (2018) (multicalibration: calibration on every segment of a collection);
Cox (1958) (the per-segment statistic); Dwass (1957) (Monte Carlo tests); Kulldorff (1997) (the maximum over
overlapping segments).
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import combinations

import numpy as np

from calib.validation import CalibInputError

# The random stream of the search's draws (passes.py lists streams 1-6).
SEARCH_STREAM = 7
# Rows drawn at once: (rows, B) doubles, 6.5 MB at B = 200.
DRAW_ROWS = 4096


def group_columns(group_ids: np.ndarray) -> list[np.ndarray]:
    """The group columns of a block: ``group_ids`` is (n,) for one column or (n, c) for c columns."""
    if group_ids.ndim == 1:
        return [group_ids]
    return [group_ids[:, j] for j in range(group_ids.shape[1])]


def as_group_columns(names, n_columns: int) -> tuple[str, ...]:
    """The names of ``n_columns`` group columns from ``names``: one name for one column, a sequence of
    ``n_columns`` names, or the default "group" (numbered "group1", "group2", ... for several).

    Examples
    --------
    >>> as_group_columns("site", 1), as_group_columns(("site", "ward"), 2), as_group_columns("group", 2)
    (('site',), ('site', 'ward'), ('group1', 'group2'))
    """
    if isinstance(names, str):
        if n_columns == 1:
            return (names,)
        if names == "group":
            return tuple(f"group{j + 1}" for j in range(n_columns))
        names = (names,)
    names = tuple(str(name) for name in names)
    if len(names) != n_columns or len(set(names)) != n_columns:
        raise CalibInputError(f"group_column must name each of the {n_columns} group columns once; got {list(names)}")
    return names


def as_groups(groups, names, n: int) -> tuple[np.ndarray, tuple[str, ...]]:
    """The groups of ``n`` samples as the pass reads them, (n,) for one column or (n, c) for c, and the
    columns' names (:func:`as_group_columns`; a DataFrame's column names unless ``names`` says otherwise);
    a sample without a group (None or NaN) is refused with its row.

    Examples
    --------
    >>> ids, columns = as_groups(np.array([["a", 1], ["b", 2]], dtype=object), ("site", "ward"), 2)
    >>> ids.shape, columns
    ((2, 2), ('site', 'ward'))
    """
    if hasattr(groups, "columns") and names == "group":  # a DataFrame: its columns name the groups
        names = tuple(str(c) for c in groups.columns)
    ids = np.asarray(groups)
    if ids.ndim == 2 and ids.shape[1] == 1:
        ids = ids[:, 0]
    if ids.ndim not in (1, 2) or ids.shape[0] != n:
        raise CalibInputError(
            f"groups must hold one group per sample, shape ({n},) (or ({n}, columns) for several group columns); "
            f"got {ids.shape}"
        )
    columns = as_group_columns(names, 1 if ids.ndim == 1 else ids.shape[1])
    missing = _missing(ids).reshape(n, -1).any(axis=1)
    if missing.any():
        raise CalibInputError(
            f"groups: {int(missing.sum())} samples have no group (None or NaN; first at row "
            f"{int(np.flatnonzero(missing)[0])}, counting from 0); fill them in (e.g. with 'unknown') or drop them"
        )
    if ids.ndim == 1:
        return _comparable(ids), columns
    ids = ids.astype(object)
    for j in range(ids.shape[1]):
        ids[:, j] = _comparable(ids[:, j])
    return ids, columns


def _missing(values: np.ndarray) -> np.ndarray:
    """Which values are missing: None, NaN, pandas' NA or NaT (pandas' isna)."""
    import pandas as pd

    return np.asarray(pd.isna(values), dtype=bool)


def _comparable(column: np.ndarray) -> np.ndarray:
    """A group column whose values sort among themselves: a column of objects mixing kinds (1 and "a", as a
    hand-typed spreadsheet gives) is read as text, as the readers of files read it."""
    if column.dtype.kind != "O":
        return column
    try:
        np.unique(column)
    except TypeError:
        return column.astype(str).astype(object)
    return column


def block_segments(group_ids: np.ndarray, depth: int) -> Iterator[tuple[tuple, np.ndarray]]:
    """Every segment of a block's rows: (key, the rows in it, ascending), for each column's values and each
    crossing of up to ``depth`` columns; a key is the tuple of its (column index, value) pairs.

    Examples
    --------
    >>> ids = np.array([["a", "x"], ["b", "x"], ["a", "y"]], dtype=object)
    >>> [(key, rows.tolist()) for key, rows in block_segments(ids, 2)][:3]
    [(((0, 'a'),), [0, 2]), (((0, 'b'),), [1]), (((1, 'x'),), [0, 1])]
    >>> len(list(block_segments(ids, 2)))  # 2 + 2 values and 3 crossings present
    7
    """
    columns = group_columns(group_ids)
    found = [np.unique(column, return_inverse=True) for column in columns]
    for size in range(1, min(depth, len(columns)) + 1):
        for subset in combinations(range(len(columns)), size):
            code = np.zeros(columns[0].size, dtype=np.int64)
            for j in subset:
                code = code * found[j][0].size + found[j][1].reshape(-1)
            codes, inverse = np.unique(code, return_inverse=True)
            inverse = inverse.reshape(-1)
            order = np.argsort(inverse, kind="stable")
            sizes = np.bincount(inverse, minlength=codes.size)
            ends = np.cumsum(sizes)
            starts = ends - sizes
            for g, value in enumerate(codes):
                key, rest = [], int(value)
                for j in reversed(subset):
                    rest, at = divmod(rest, found[j][0].size)
                    key.append((j, _plain(found[j][0][at])))
                yield tuple(reversed(key)), order[starts[g] : ends[g]]


def _plain(value):
    """A numpy scalar as the Python value (so keys compare and print as the column's values do)."""
    return value.item() if hasattr(value, "item") else value


def segment_name(key: tuple, columns: tuple[str, ...]) -> str:
    """A segment's name: its value with one group column, "column=value" pairs joined by " & " with several.

    Examples
    --------
    >>> segment_name(((0, "north"),), ("site",))
    'north'
    >>> segment_name(((0, "north"), (1, 3)), ("site", "ward"))
    'site=north & ward=3'
    """
    if len(columns) == 1:
        return str(key[0][1])
    return " & ".join(f"{columns[j]}={value}" for j, value in key)


def segment_order(key: tuple) -> tuple:
    """The order segments are listed in: each column's values (in the column's order, by value), then the
    crossings of two columns, ..."""
    return len(key), tuple(j for j, _ in key), tuple(value for _, value in key)


def null_residuals(seed: int, block: int, offset: int, forecasts: np.ndarray, weights, draws: int) -> np.ndarray:
    """The residuals w_i (y*_ib - p_i) of ``draws`` outcomes drawn from the forecasts, y*_ib ~ Bernoulli(p_i),
    (n, draws): what the search's score sums add up (those times the log-odds x_i too).

    The rows are those of block ``block`` from its row ``offset``; the block's stream is drawn in row order,
    so a part of a block gets the draws the whole block gives its rows.

    Examples
    --------
    >>> p = np.full(6, 0.5)
    >>> whole = null_residuals(0, 3, 0, p, None, 4)
    >>> bool(np.array_equal(whole[2:], null_residuals(0, 3, 2, p[2:], None, 4)))
    True
    """
    bits = np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(SEARCH_STREAM, block)))
    bits.advance(offset * draws)  # one 64-bit output per double
    rng = np.random.Generator(bits)
    residual = np.empty((forecasts.size, draws))
    for start in range(0, forecasts.size, DRAW_ROWS):
        rows = slice(start, start + DRAW_ROWS)
        p = forecasts[rows, None]
        residual[rows] = (rng.random((p.shape[0], draws)) < p) - p
    if weights is not None:
        residual *= weights[:, None]
    return residual


def segment_score_sums(residual: np.ndarray, log_odds: np.ndarray, rows: list[np.ndarray]) -> np.ndarray:
    """The two score sums (sum r*, sum r* x) of each segment (its ``rows``) in every draw: (segments, 2, B).
    A forecast of 0 or 1 (x infinite) draws its own outcome, so its residual is 0 and it adds nothing.

    Examples
    --------
    >>> r = np.array([[1.0], [2.0], [4.0]])
    >>> segment_score_sums(r, np.array([0.0, 1.0, -1.0]), [np.array([0, 1]), np.array([2])])[:, :, 0].tolist()
    [[3.0, 2.0], [4.0, -4.0]]
    """
    from scipy.sparse import csr_matrix

    x = np.where(np.isfinite(log_odds), log_odds, 0.0)
    members = np.concatenate(rows)
    starts = np.concatenate([[0], np.cumsum([r.size for r in rows])])
    shape = (len(rows), residual.shape[0])
    plain = csr_matrix((np.ones(members.size), members, starts), shape=shape)
    scaled = csr_matrix((x[members], members, starts), shape=shape)
    return np.stack([plain @ residual, scaled @ residual], axis=1)


def null_statistics(scores: np.ndarray, information: np.ndarray, degrees: np.ndarray) -> np.ndarray:
    """Cox's statistic of every segment in every draw: ``scores`` (segments, 2, B) the drawn score sums,
    ``information`` (segments, 3) the segments' I_00, I_01, I_11 and ``degrees`` (segments,) 1 or 2 (as
    :func:`calib.evaluation.cox_test.cox_statistic` decided from the data); (segments, B).

    Examples
    --------
    >>> u = np.array([[[2.0, 0.0], [0.0, 1.0]]])  # one segment, two draws
    >>> null_statistics(u, np.array([[4.0, 0.0, 1.0]]), np.array([2])).tolist()
    [[1.0, 1.0]]
    """
    u0, u1 = scores[:, 0], scores[:, 1]
    i00, i01, i11 = (information[:, j, None] for j in range(3))
    with np.errstate(divide="ignore", invalid="ignore"):
        two = (u0 * u0 * i11 - 2.0 * u0 * u1 * i01 + u1 * u1 * i00) / (i00 * i11 - i01 * i01)
        one = u0 * u0 / i00
    # a segment without information (every forecast 0 or 1) draws its outcomes without error: no evidence
    return np.nan_to_num(np.where(degrees[:, None] == 2, two, one), nan=0.0)


def search_p_value(observed: float, null_maxima: np.ndarray) -> float:
    """The Monte Carlo p-value of the largest statistic: (1 + #{null maxima >= observed}) / (1 + B).

    Examples
    --------
    >>> search_p_value(5.0, np.array([1.0, 6.0, 2.0, 5.0]))
    0.6
    """
    return float((1 + np.count_nonzero(null_maxima >= observed)) / (1 + null_maxima.size))
