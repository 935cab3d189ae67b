"""Power and size of the subgroups' flags (Cox's score test with Holm's adjustment, calib.evaluation.subgroups)
on simulated segments with a known truth, beside what Spiegelhalter's z (Holm-adjusted alike) would flag.

Run: ``python benchmarks/subgroup_tests.py`` (a few minutes on 2 cores; writes ``benchmarks/subgroup_tests.md``
and ``.json``), ``--reps R`` for fewer replications.

Each replication draws N rows of a binary model in G segments (uniform over the segments but the planted one):
- "near one half": 2 % of 10^6 rows whose forecasts lie in [0.4, 0.6] while their true probability is 0.2
  higher (forecasts 0.2 below the truth near p = 0.5), the other rows calibrated with forecasts in [0.02, 0.98];
- "over-confident": 2 % of 10^6 rows whose truth is 0.5 + 0.6 (p - 0.5);
- "calibrated, 20 groups" and "calibrated, 100 groups": 10^5 rows, no segment planted.
Power is the share of replications that flag the planted segment; size the share that flag any segment of a
calibrated model (the planted cells count a false flag too: any other segment flagged). Each share has its
binomial Monte-Carlo sd. The flags come from ``calib.evaluate`` (``n_boot=0``: the tests need no resamples).

Source: Cox (1958) (the test); Spiegelhalter (1986) (z); Holm (1979) (the adjustment).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import numpy as np  # noqa: E402
from scipy.special import ndtr  # noqa: E402

import calib  # noqa: E402
from calib.evaluation.subgroups import holm  # noqa: E402

CELLS = {
    "near one half": {"rows": 10**6, "groups": 10, "plant": "near one half"},
    "over-confident": {"rows": 10**6, "groups": 10, "plant": "over-confident"},
    "calibrated, 20 groups": {"rows": 10**5, "groups": 20, "plant": None},
    "calibrated, 100 groups": {"rows": 10**5, "groups": 100, "plant": None},
}
REPLICATIONS = 100
PLANTED = "planted"
SHARE = 0.02


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
    """Which segments the test flags, and which Spiegelhalter's z (Holm-adjusted alike) would flag."""
    p, y, segment = draw(cell, seed)
    summary = calib.evaluate(np.column_stack([1 - p, p]), y, kind="probs", groups=segment, n_boot=0, calibrators=())
    z_adjusted = holm([float(2 * ndtr(-abs(row.z))) for row in summary.groups])
    return {
        "flagged": [row.group for row in summary.groups if row.flagged],
        "z flagged": [row.group for row, a in zip(summary.groups, z_adjusted, strict=True) if a < 0.05],
    }


def summarize(cell: dict, reps: list[dict]) -> dict:
    """Power (the planted segment flagged) and size (any other segment flagged), with Monte-Carlo sds."""
    out = {}
    for test, key in (("Cox", "flagged"), ("Spiegelhalter's z", "z flagged")):
        found = np.array([PLANTED in r[key] for r in reps], dtype=float)
        false = np.array([any(g != PLANTED for g in r[key]) for r in reps], dtype=float)
        out[test] = {
            "power": float(found.mean()) if cell["plant"] else None,
            "false flag": float(false.mean()),
            "sd": float(np.sqrt(max(found.mean() * (1 - found.mean()), false.mean() * (1 - false.mean())) / len(reps))),
        }
    return out


def study(reps: int = REPLICATIONS, cells: dict = CELLS) -> dict:
    """Every cell's power and size over ``reps`` replications (seeds 0..reps-1)."""
    return {name: summarize(cell, [replicate(cell, seed) for seed in range(reps)]) | {"reps": reps}
            for name, cell in cells.items()}  # fmt: skip


def markdown(result: dict) -> str:
    """The study as a table: per cell and test, the share flagging the planted segment and any false flag."""
    lines = [
        "| cell | replications | Cox: planted flagged | Cox: any false flag | z: planted flagged | z: any false flag |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, row in result.items():
        cox, z = row["Cox"], row["Spiegelhalter's z"]
        power = [f"{t['power']:.3f}" if t["power"] is not None else "" for t in (cox, z)]
        lines.append(
            f"| {name} | {row['reps']} | {power[0]} | {cox['false flag']:.3f} | {power[1]} | {z['false flag']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=REPLICATIONS)
    parser.add_argument("--out", default=str(HERE / "subgroup_tests"), help="prefix of the .md and .json written")
    args = parser.parse_args()
    result = study(args.reps)
    Path(args.out + ".json").write_text(json.dumps(result, indent=1) + "\n")
    Path(args.out + ".md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
