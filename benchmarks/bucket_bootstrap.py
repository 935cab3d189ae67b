"""The bucketed Poisson bootstrap against the per-row one, on the coverage study's data with known truths.

Run: ``python benchmarks/bucket_bootstrap.py`` (about 15 minutes on 2 cores; writes
``benchmarks/bucket_bootstrap.md`` and ``.json``), ``--reps R`` for fewer replications.

Each replication draws a data set of a cell of :mod:`coverage` (same DGPs, seeds and truths) and a random
subgroup (0 or 1) per row, and evaluates it twice with the same seed: every row resampled on its own
(``resample_buckets=None``) and bucketed with G = 64 buckets (``resample_buckets=64``: the first 64 x 64 =
4096 rows on their own, the others in 64 buckets by position). G = 64 is the hard case: the engine's default
G = 4096 buckets only start after 262144 rows, where each bucket's sum averages at least as many rows, and a
bootstrap over G units estimates a variance with a relative error of about sqrt(2 / G) (18 % here, 2 % at the
default), which widens the spread of the interval ends. The groups are independent of the data, so each
group's metrics have the population's truths.

For every metric with an interval, overall and in group 0, per bootstrap: the coverage (the share of
replications whose interval holds the truth, a replication's own truth in its equal-mass edges), its Monte-Carlo
sd, and the mean over replications of the bucketed interval's width divided by the per-row one's (paired: the
same data; an upper bound's reach above the estimate), with the sd of that mean. The bucketed bootstrap is
valid where its coverage is the per-row one's and its widths match within Monte-Carlo error.

Source: Chamandy et al. (2012), "Estimating uncertainty for massive data streams" (the bucketed Poisson
bootstrap); Hanley & MacGibbon (2006) (Poisson resamples).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from multiprocessing import Pool
from pathlib import Path

if __name__ == "__main__":  # run as a script: one BLAS thread per process (an importer keeps its own)
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

import numpy as np  # noqa: E402
from coverage import (  # noqa: E402
    SQUARED,
    Cell,
    binned_columns,
    cell_truths,
    draw,
    draw_labels,
    engine_options,
    population,
    seed_of,
    truths_for,
)

import calib  # noqa: E402

STUDY_BUCKETS = 64
MODES = {"per row": None, "bucketed": STUDY_BUCKETS}
REPLICATIONS = 60
PROCESSES = 2


def cells(reps: int = REPLICATIONS) -> list[Cell]:
    """K = 2 at n = 10^4 (equal width and equal mass) and 10^5 (equal width), K = 3 at 10^4, calibrated and
    over-confident; at n = 10^5 a fifth of the replications."""
    out = []
    for dgp in ("calibrated", "over-confident"):
        out += [Cell(dgp, 2, 10_000, binning, reps) for binning in ("equal-width", "equal-mass")]
        out.append(Cell(dgp, 3, 10_000, "equal-width", reps))
        out.append(Cell(dgp, 2, 100_000, "equal-width", max(2, reps // 5)))
    return out


def replicate(task: tuple[Cell, int]) -> dict:
    """One replication: per bootstrap, each metric's (value, low, high) overall and in group 0, and the truths
    the replication has of its own (the binned errors in its equal-mass edges)."""
    cell, r = task
    rng = np.random.default_rng(seed_of(cell.dgp, cell.k, cell.n, cell.binning, r))
    p, q = draw(cell.dgp, cell.k, cell.n, rng)
    y = draw_labels(p, rng)
    groups = np.random.default_rng(seed_of("groups", cell.dgp, cell.k, cell.n, r)).integers(0, 2, cell.n)
    seed = seed_of("boot", cell.dgp, cell.k, cell.n, cell.binning, r) % 2**32
    options = engine_options(cell) | {"calibrators": ()}
    out, own = {}, {}
    for mode, buckets in MODES.items():
        summary = calib.evaluate(q, y, kind="logprobs", seed=seed, groups=groups, resample_buckets=buckets, **options)
        group = next(row for row in summary.groups if row.group == "0")
        for where, metrics in (("", summary.metrics), (" (group 0)", group.metrics)):
            for name, m in metrics.items():
                if m.low is not None and np.isfinite(m.low):
                    out.setdefault(name + where, {})[mode] = (m.value, m.low, m.high, m.method == "upper bound")
        if cell.binning == "equal-mass" and not own:
            for name in binned_columns(cell.k, q[:1], p[:1]):
                edges = [b.edges for b in summary.reliability[f"ECE {name}"]]
                own[f"ECE {name}"], own[SQUARED.format(name)] = population(cell.dgp, cell.k).truths(name, edges)
    return {"cell": cell, "r": r, "metrics": out, "own": own}


def summarize(cell: Cell, reps: list[dict], truth: dict) -> dict:
    """Per metric (overall and group 0): each bootstrap's coverage and sd, and the paired width ratio."""
    out = {}
    for name in sorted(reps[0]["metrics"]):
        base = name.removesuffix(" (group 0)")
        if base not in truth:
            continue
        t = np.array([rep["own"].get(base, truth[base][0]) for rep in reps])
        row = {}
        for mode in MODES:
            value, low, high, upper = np.array([rep["metrics"][name][mode] for rep in reps]).T
            c = float(np.mean((low <= t) & (t <= high)))
            # an upper bound's reach above the estimate (its width from 0 is mostly the estimate itself)
            width = np.where(upper.astype(bool), high - value, high - low)
            row[mode] = {"coverage": c, "sd": float(np.sqrt(c * (1 - c) / len(reps))), "width": width}
        ratios = row["bucketed"]["width"] / row["per row"]["width"]
        ratios = ratios[np.isfinite(ratios)]
        out[name] = {mode: {k: v for k, v in row[mode].items() if k != "width"} for mode in MODES} | {
            "width ratio": float(np.mean(ratios)),
            "width ratio sd": float(np.std(ratios, ddof=1) / np.sqrt(ratios.size)),
        }
    return out


def run(reps: int = REPLICATIONS, processes: int = PROCESSES) -> dict:
    study_cells = cells(reps)
    truths = truths_for(study_cells, processes)
    tasks = [(cell, r) for cell in study_cells for r in range(cell.reps)]
    with Pool(processes) as pool:
        done = pool.map(replicate, tasks, chunksize=5)
    results = []
    for cell in study_cells:
        reps = [d for d in done if d["cell"] == cell]
        metrics = summarize(cell, reps, cell_truths(cell, truths))
        results.append({"cell": cell.label, "R": cell.reps, "metrics": metrics})
    return {"buckets": STUDY_BUCKETS, "cells": results}


def markdown(study: dict) -> str:
    """Per metric over the cells: the pooled coverage of each bootstrap, and the range of the paired width ratios."""
    names = sorted({name for cell in study["cells"] for name in cell["metrics"]})
    lines = [
        f"{len(study['cells'])} cells, G = {study['buckets']} buckets; coverage pooled over the cells ± its "
        "Monte-Carlo sd; width ratio: bucketed / per-row interval width on the same data (an upper bound's reach "
        "above the estimate), the mean per cell "
        "(the cells' lowest and highest, and the largest distance from 1 in Monte-Carlo sds).",
        "",
        "| metric | cells | per row | bucketed | width ratio (min-max) | largest distance from 1 (sd) |",
        "|:--|--:|--:|--:|:--|--:|",
    ]
    for name in names:
        rows = [(cell["R"], cell["metrics"][name]) for cell in study["cells"] if name in cell["metrics"]]
        total = sum(r for r, _ in rows)
        pooled = {}
        for mode in MODES:
            c = sum(r * m[mode]["coverage"] for r, m in rows) / total
            pooled[mode] = f"{c:.3f} ± {np.sqrt(c * (1 - c) / total):.3f}"
        ratios = [m["width ratio"] for _, m in rows]
        spread = [abs(m["width ratio"] - 1) / m["width ratio sd"] for _, m in rows if m["width ratio sd"] > 0]
        distance = f"{max(spread):.1f}" if spread else "(equal widths)"
        lines.append(
            f"| {name} | {len(rows)} | {pooled['per row']} | {pooled['bucketed']} | "
            f"{min(ratios):.3f}-{max(ratios):.3f} | {distance} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=REPLICATIONS, help="replications a cell at n = 10^4")
    parser.add_argument("--processes", type=int, default=PROCESSES)
    parser.add_argument("--out", default=str(HERE / "bucket_bootstrap"), help="prefix of the .md and .json written")
    args = parser.parse_args(argv)
    study = run(args.reps, args.processes)
    Path(args.out + ".json").write_text(json.dumps(study, indent=1) + "\n")
    Path(args.out + ".md").write_text(markdown(study))
    print(markdown(study))


if __name__ == "__main__":
    main()
