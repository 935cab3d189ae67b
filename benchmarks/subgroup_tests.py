"""Power and size of the subgroups' flags (Cox's score test with Holm's adjustment, calib.evaluation.subgroups)
and of the search for the worst segment (calib.evaluation.segments) on simulated segments with a known truth,
beside what Spiegelhalter's z (Holm-adjusted alike) would flag.

Run: ``python benchmarks/subgroup_tests.py`` (about 25 minutes on 2 cores; writes
``benchmarks/subgroup_tests.md`` and ``.json``), ``--reps R`` for fewer replications.

Each replication draws N rows of a binary model in G segments (uniform over the segments but the planted one):
- "near one half": 2 % of 10^6 rows whose forecasts lie in [0.4, 0.6] while their true probability is 0.2
  higher (forecasts 0.2 below the truth near p = 0.5), the other rows calibrated with forecasts in [0.02, 0.98];
- "over-confident": 2 % of 10^6 rows whose truth is 0.5 + 0.6 (p - 0.5);
- "calibrated, 20 groups" and "calibrated, 100 groups": 10^5 rows, no segment planted;
- "crossing only": 10^5 rows in two columns A and B whose crossings are off by shifts that cancel within each
  value of A and of B (:func:`interaction`): each column alone is calibrated given the forecast, and the
  crossing A=a1 & B=b1 departs the most.
Power is the share of replications that flag the planted segment; size the share that flag any segment of a
calibrated model (the planted cells count a false flag too: any other segment flagged). The search is counted
as finding the planted segment when it names it with a p-value below 0.05; on calibrated data its p-values
should be uniform (a Kolmogorov-Smirnov test over the replications; its p-values are multiples of 1 / 201, a
step far below the test's resolution at 200 replications). Each share has its binomial Monte-Carlo sd. The
flags come from ``calib.evaluate`` (``n_boot=0``: the tests need no resamples).

Source: Cox (1958) (the test); Spiegelhalter (1986) (z); Holm (1979) (the adjustment); Dwass (1957) (the
search's Monte Carlo p-value); Kearns et al. (2018) (miscalibration hidden in a crossing of attributes).
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import numpy as np  # noqa: E402
from scipy.special import ndtr  # noqa: E402
from scipy.stats import kstest  # noqa: E402

import calib  # noqa: E402
from calib.evaluation.subgroups import holm  # noqa: E402

CELLS = {
    "near one half": {"rows": 10**6, "groups": 10, "plant": "near one half"},
    "over-confident": {"rows": 10**6, "groups": 10, "plant": "over-confident"},
    "calibrated, 20 groups": {"rows": 10**5, "groups": 20, "plant": None},
    "calibrated, 100 groups": {"rows": 10**5, "groups": 100, "plant": None},
    "crossing only": {"rows": 10**5, "groups": 4, "plant": "crossing"},
}
REPLICATIONS = 200
PLANTED = "planted"
SHARE = 0.02
# The crossing the "crossing only" cell plants, its columns' segments, and the crossings' shares and shifts.
CROSSING = "A=a1 & B=b1"
MARGINS = ("A=a1", "A=a2", "B=b1", "B=b2")
CROSSING_SHARES = (0.05, 0.45, 0.20, 0.30)
CROSSING_SHIFT = 0.16


def interaction(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A miscalibration that only the crossing of two columns shows: forecasts uniform in [0.2, 0.8], the
    truth the forecast shifted by +d, -d / 9, -d / 4 and +d / 6 in the crossings (a1, b1), (a1, b2), (a2, b1)
    and (a2, b2) of shares 5, 45, 20 and 30 %, so that within each value of A and of B the shifts cancel (each
    column alone is calibrated given the forecast) and (a1, b1) departs the most. Returns the forecasts
    P(y = 1), the outcomes and the (n, 2) columns A, B."""
    rng = np.random.default_rng([seed, 4])
    p = rng.uniform(0.2, 0.8, n)
    cell = rng.choice(4, n, p=list(CROSSING_SHARES))
    d = CROSSING_SHIFT
    truth = p + np.array([d, -d / 9, -d / 4, d / 6])[cell]
    groups = np.column_stack([np.where(cell < 2, "a1", "a2"), np.where(cell % 2 == 0, "b1", "b2")]).astype(object)
    return p, (rng.random(n) < truth).astype(int), groups


def draw(cell: dict, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One replication: the forecasts P(y = 1) (n,), the outcomes (n,) and each row's segment (n,)."""
    rng = np.random.default_rng([seed, cell["groups"]])
    n = cell["rows"]
    p = rng.uniform(0.02, 0.98, n)
    segment = rng.integers(0, cell["groups"], n).astype(str)
    truth = p.copy()
    if cell["plant"] is not None:
        planted = rng.random(n) < SHARE
        segment[planted] = PLANTED
        if cell["plant"] == "near one half":
            p[planted] = rng.uniform(0.4, 0.6, planted.sum())
            truth[planted] = p[planted] + 0.2
        else:
            truth[planted] = 0.5 + 0.6 * (p[planted] - 0.5)
    return p, (rng.random(n) < truth).astype(int), segment


def replicate(cell: dict, seed: int) -> dict:
    """Which segments the test flags, which Spiegelhalter's z (Holm-adjusted alike) would flag, the segment
    the search names with its p-value, and (crossing only) the columns' own p-values."""
    if cell["plant"] == "crossing":
        p, y, groups = interaction(cell["rows"], seed)
        columns = ("A", "B")
    else:
        p, y, groups = draw(cell, seed)
        columns = "group"
    summary = calib.evaluate(np.column_stack([1 - p, p]), y, kind="probs", groups=groups, group_column=columns,
                             n_boot=0, calibrators=())  # fmt: skip
    z_adjusted = holm([float(2 * ndtr(-abs(row.z))) for row in summary.groups])
    search = summary.multicalibration
    return {
        "flagged": [row.group for row in summary.groups if row.flagged],
        "z flagged": [row.group for row, a in zip(summary.groups, z_adjusted, strict=True) if a < 0.05],
        "searched": search.segment,
        "search p": search.p_value,
        "margins p": [row.p_value for row in summary.groups if row.group in MARGINS],
    }


def _share(hits) -> dict:
    hits = np.asarray(hits, dtype=float)
    return {"share": float(hits.mean()), "sd": float(np.sqrt(hits.mean() * (1 - hits.mean()) / hits.size))}


def summarize(cell: dict, reps: list[dict]) -> dict:
    """Power (the planted segment flagged, and named by the search at p < 0.05) and size (any other segment
    flagged; the search's p-value below 0.05 and its uniformity), with Monte-Carlo sds."""
    planted = {"near one half": PLANTED, "over-confident": PLANTED, "crossing": CROSSING}.get(cell["plant"])
    out = {}
    for test, key in (("Cox", "flagged"), ("Spiegelhalter's z", "z flagged")):
        out[test] = {
            "power": _share([planted in r[key] for r in reps]) if planted else None,
            # in the crossing cell every crossing is off (the shifts that cancel): no flag there is false
            "false flag": _share([any(g != planted for g in r[key]) for r in reps]) if planted != CROSSING else None,
        }
    p_values = [r["search p"] for r in reps]
    out["search"] = {
        "named": _share([r["searched"] == planted and r["search p"] < 0.05 for r in reps]) if planted else None,
        "p < 0.05": _share([p < 0.05 for p in p_values]),
        "uniform KS p": None if planted else float(kstest(p_values, "uniform").pvalue),
    }
    if planted == CROSSING:
        out["columns alone p < 0.05"] = _share([min(r["margins p"]) < 0.05 for r in reps])
    return out


def study(reps: int = REPLICATIONS, cells: dict = CELLS, workers: int = 2) -> dict:
    """Every cell's power and size over ``reps`` replications (seeds 0..reps-1), on ``workers`` processes."""
    jobs = [(name, seed) for name in cells for seed in range(reps)]
    with ProcessPoolExecutor(workers) as pool:
        done = list(pool.map(replicate, [cells[name] for name, _ in jobs], [seed for _, seed in jobs], chunksize=4))
    return {
        name: summarize(cell, [r for (job, _), r in zip(jobs, done, strict=True) if job == name]) | {"reps": reps}
        for name, cell in cells.items()
    }


def _cell(value: dict | None) -> str:
    return "" if value is None else f"{value['share']:.3f}"


def markdown(result: dict) -> str:
    """The study as a table: per cell the share flagging the planted segment and any false flag (Cox's test
    and Spiegelhalter's z), the share the search names it, and the search's p-values on calibrated data."""
    lines = [
        "| cell | replications | Cox: planted flagged | Cox: any false flag | z: planted flagged | z: any false flag "
        "| search: planted named, p < 0.05 | search: p < 0.05 | search p uniform (KS p) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, row in result.items():
        cox, z, search = row["Cox"], row["Spiegelhalter's z"], row["search"]
        ks = "" if search["uniform KS p"] is None else f"{search['uniform KS p']:.2f}"
        lines.append(
            f"| {name} | {row['reps']} | {_cell(cox['power'])} | {_cell(cox['false flag'])} | {_cell(z['power'])} "
            f"| {_cell(z['false flag'])} | {_cell(search['named'])} | {_cell(search['p < 0.05'])} | {ks} |"
        )
    crossing = result.get("crossing only", {}).get("columns alone p < 0.05")
    if crossing is not None:
        lines.append("")
        lines.append(
            f"Crossing only: a column's own segment (A=a1, A=a2, B=b1 or B=b2) reached p < 0.05 before adjustment in "
            f"{crossing['share']:.3f} of the replications (each is calibrated: 0.05 each by chance, at most 0.185 "
            "for the four)."
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=REPLICATIONS)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=str(HERE / "subgroup_tests"), help="prefix of the .md and .json written")
    args = parser.parse_args()
    result = study(args.reps, workers=args.workers)
    Path(args.out + ".json").write_text(json.dumps(result, indent=1) + "\n")
    Path(args.out + ".md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
