"""A downsampled click log evaluated with and without its sample weights, against the full log.

Run: ``python benchmarks/downsampled_log.py`` (about a minute on 2 cores; writes
``benchmarks/downsampled_log.md`` and ``.json``); ``--rows N`` for another log size.

A log of N = 2e6 impressions is simulated: a latent z ~ N(-4.55, 1.2^2) per row, a click with probability
sigmoid(z) (about 2 % clicks), and a model whose forecast sigmoid(1.25 z + 0.3) is over-confident and too
high. As click logs are stored, every click is kept and each non-click with probability 1/10, with weight 10.
On the full log we compute the positive-class ECE (15 equal-width bins), NBS and NCE (empirical priors) and
the fitted temperature of temperature scaling: the values the downsampled log should recover. On the
downsampled log we compute the same with the weights (``sample_weight``) and without, each with its 95 %
bootstrap interval (the engine's Poisson bootstrap of the rows, 200 resamples; for the temperature, a basic
interval from 200 Poisson-count refits, each refit's weights the counts times the sample weights). A method
recovers a value when the interval holds the full log's. The ECE's interval is a one-sided upper bound, which
any value below a large estimate lies under; its reach above the estimate is the bootstrap's measure of the
estimate's error, so for it the window is that reach either side of the estimate, [2 t - u, u] for the
estimate t and bound u.

The full log's values are themselves estimates from N rows, but of the same rows the downsampled log keeps a
part of: their own noise is far below the downsampled estimate's, which the intervals measure.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import numpy as np  # noqa: E402

import calib  # noqa: E402
from calib.calibrators.registry import make_calibrator  # noqa: E402
from calib.evaluation.interval_methods import UPPER  # noqa: E402
from calib.resampling.bootstrap import basic_interval  # noqa: E402

ROWS = 2_000_000
KEEP_NEGATIVES = 0.1
N_BOOT = 200
SEED = 20261128
METRICS = ("ECE positive class", "NBS", "NCE")
TEMPERATURE = "temperature"


def simulate_log(n_rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A click log: each row's two-class forecast (N, 2) and its click (N,) in {0, 1}."""
    rng = np.random.default_rng(seed)
    z = rng.normal(-4.55, 1.2, n_rows)
    clicks = (rng.random(n_rows) < 1.0 / (1.0 + np.exp(-z))).astype(np.int64)
    forecast = 1.0 / (1.0 + np.exp(-(1.25 * z + 0.3)))
    return np.column_stack([1.0 - forecast, forecast]), clicks


def downsample(clicks: np.ndarray, keep: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows kept (every click, each non-click with probability ``keep``) and their weights (1 / keep for a
    non-click)."""
    rng = np.random.default_rng([seed, 1])
    kept = np.flatnonzero((clicks == 1) | (rng.random(clicks.size) < keep))
    return kept, np.where(clicks[kept] == 1, 1.0, 1.0 / keep)


def temperature(probs: np.ndarray, clicks: np.ndarray, sample_weight=None) -> float:
    """The fitted temperature T = 1 / alpha of temperature scaling (:class:`calib.calibrators.TemperatureScaling`)."""
    model = make_calibrator(TEMPERATURE).fit(probs, clicks, kind="probs", sample_weight=sample_weight)
    return 1.0 / model.scale_


def temperature_interval(probs, clicks, sample_weight, n_boot: int, seed: int, alpha: float = 0.05):
    """A basic bootstrap interval of the fitted temperature: refits on Poisson-count resamples of the rows, each
    row's weight its count times its sample weight."""
    rng = np.random.default_rng([seed, 2])
    weights = np.ones(clicks.size) if sample_weight is None else sample_weight
    estimate = temperature(probs, clicks, sample_weight)
    refits = []
    for _ in range(n_boot):
        counts = rng.poisson(1.0, clicks.size)
        kept = counts > 0
        refits.append(temperature(probs[kept], clicks[kept], counts[kept] * weights[kept]))
    low, high = basic_interval(np.array(refits), estimate, alpha)
    return estimate, float(low), float(high)


def _lower(metric) -> float:
    """The lower end of a metric's window: its interval's, or for an upper bound u of the estimate t, 2 t - u."""
    return 2 * metric.value - metric.high if metric.method == UPPER.name else metric.low


def study(n_rows: int = ROWS, n_boot: int = N_BOOT, seed: int = SEED) -> dict:
    """The full log's values, and the downsampled log's estimates and intervals with and without weights."""
    probs, clicks = simulate_log(n_rows, seed)
    options = {"kind": "probs", "metrics": METRICS, "calibrators": (), "seed": seed}
    full = calib.evaluate(probs, clicks, n_boot=0, **options).metrics
    truth = {name: full[name].value for name in METRICS} | {TEMPERATURE: temperature(probs, clicks)}
    kept, weights = downsample(clicks, KEEP_NEGATIVES, seed)
    sub_probs, sub_clicks = probs[kept], clicks[kept]
    rows = {}
    for method, sample_weight in (("weighted", weights), ("unweighted", None)):
        summary = calib.evaluate(sub_probs, sub_clicks, n_boot=n_boot, sample_weight=sample_weight, **options)
        found = {name: (m.value, _lower(m), m.high) for name, m in summary.metrics.items()}
        found[TEMPERATURE] = temperature_interval(sub_probs, sub_clicks, sample_weight, n_boot, seed)
        rows[method] = {
            name: {"estimate": v, "low": lo, "high": hi, "holds": bool(lo <= truth[name] <= hi)}
            for name, (v, lo, hi) in found.items()
        }
    return {
        "rows": n_rows,
        "clicks": int(clicks.sum()),
        "kept": int(kept.size),
        "n_boot": n_boot,
        "seed": seed,
        "full": truth,
        "downsampled": rows,
    }


def markdown(result: dict) -> str:
    """The study as the README's table."""
    lines = [
        f"Full log: {result['rows']} rows, {result['clicks']} clicks; downsampled: {result['kept']} rows (every "
        f"click, 1 in 10 non-clicks with weight 10); 95 % intervals from {result['n_boot']} resamples (the ECE's: "
        "its upper bound's reach either side of the estimate).",
        "",
        "| value | full log | weighted: estimate [interval] | holds | unweighted: estimate [interval] | holds |",
        "|---|---|---|---|---|---|",
    ]
    for name, truth in result["full"].items():
        cells = []
        for method in ("weighted", "unweighted"):
            r = result["downsampled"][method][name]
            cells += [f"{r['estimate']:.4f} [{r['low']:.4f}, {r['high']:.4f}]", "yes" if r["holds"] else "**no**"]
        lines.append(f"| {name} | {truth:.4f} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=ROWS)
    parser.add_argument("--out", default=str(HERE / "downsampled_log"), help="prefix of the .md and .json written")
    args = parser.parse_args()
    result = study(args.rows)
    Path(args.out + ".json").write_text(json.dumps(result, indent=1) + "\n")
    Path(args.out + ".md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
