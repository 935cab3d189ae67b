"""Coverage of the intervals ``calib evaluate`` and ``calib compare`` print, against known population truths.

Run: ``python benchmarks/coverage.py`` (the full study: ``benchmarks/coverage.md`` and
``benchmarks/coverage.json``; about 30 minutes on 2 cores), ``--quick`` (the CI version's three cells),
``--dgp / --k / --n / --binning`` to run part of the grid, ``--truths`` to recompute the cached population
truths (``benchmarks/coverage_truths.json``). ``tests/benchmarks/test_coverage.py`` runs the quick version.

Design. K classes, true logits z = s g with g ~ N(0, I_K) and s = 1.5, true posterior p = softmax(z), label
y ~ Categorical(p). The model under evaluation gives log-posteriors q (:data:`DGPS`): calibrated q = log
softmax(z) (every calibration error is exactly 0), over-confident log softmax(1.8 z), under-confident log
softmax(0.6 z), shifted log softmax(z + 0.7 e_0) (a prior shift toward class 0). Each cell (DGP, K, n,
binning) draws R data sets of n rows and evaluates each with ``calib.evaluate(q, y, kind="logprobs",
n_boot=200, alpha=0.05, binning=..., n_bins=15)`` (with temperature scaling cross-validated in the cells
that check the calibrator gain's interval, no calibrator otherwise); every seed comes from (DGP, K, n,
binning, replication), so the same command writes the same bytes. For each metric a cell reports the
coverage c (the share of replications with low <= truth <= high), its Monte-Carlo sd sqrt(c (1 - c) / R),
the mean interval width and the bias of the point estimate (its mean minus the truth).

Truths, from 10^7 draws of (z, q) in chunks of 10^6, Rao-Blackwellised (p in place of the drawn label
wherever the metric is linear in it); each with its Monte-Carlo error, the sd of its 10 chunk values / sqrt(10):

- accuracy E[p[argmax q]]; NCE E[-sum_k p_k q_k] / H(pi) with pi = E[p] (natural log); NBS
  E[(1/K) sum_k (exp(q_k) - y_k)^2] / (sum_k pi_k (1 - pi_k) / K); NRisk 0-1 (1 - accuracy) / (1 - max_k pi_k)
  (Bayes decisions of 0-1 costs are the argmax; the best constant decision costs 1 - max pi); ECD
  E[-sum_k p_k q_k] - E[-sum_k exp(q_k) q_k];
- binned ECEs sum_b |E[(outcome - score) 1{score in b}]| (right-closed bins, edges k / M for equal width):
  top-label (score max_k exp(q_k), outcome p[argmax q]), positive class for K = 2 (exp(q_1), p_1), class-wise
  for K > 2 (the mean over k of the ECE of (exp(q_k), p_k)); and their squared forms
  sum_b E[(outcome - score) 1_b]^2 / P(b), which the debiased estimates estimate. With equal-mass bins the
  estimand is the population's error in the bins whose edges the data gave (the engine keeps them in the
  resamples), so each replication's truth is computed in its own edges (read from the summary's reliability
  bins) on 4 10^6 population draws, sorted once with cumulative sums (:class:`Population`);
- the smooth ECE: ``calib.calibration_errors.smoothing.smooth_ece`` of the 10^7 top-label confidences against
  p[argmax q] (it accepts outcomes in [0, 1]), at its own fixed-point bandwidth;
- the squared MMCE E[a a' exp(-|c - c'| / nu)] over independent pairs, a = p[argmax q] - c, c the top-label
  confidence, nu = 0.4: the mean of the chunks' U-statistics, each computed here in O(n log n)
  (:func:`kernel_pair_sum`, independent of the library's kernel code);
- the calibrator gain (cells marked ``gains``): the cross-validated temperature scaling's expected gain in log
  loss on new data, E[L(q) - L(T(q))] with T fitted on n (F - 1) / F rows (F = 5 folds), from
  :data:`GAIN_FITS` fits on independent data sets, each scored on 10^6 population rows.

Differences (``calib compare``): the calibrated and the over-confident model of one data set, compared; each
difference's truth is the difference of the two models' truths. The plug-in calibration errors' differences
get no interval from the engine; the study computes the basic interval the engine gave them before
(:func:`former_difference_intervals`) to show why.

The bias comparison (issue 54): on calibrated data at n = 1000, the engine's debiased squared ECEs and unbiased
squared MMCE against the plug-ins of the same estimands computed here from the same data and bins (the squared
binned ECE sum_b (N_b / N) (ybar_b - sbar_b)^2 and the V-statistic MMCE^2, i = j included); the debiased |bias|
should be below a tenth of the plug-in's.

Pass rule: every interval's stated level is 0.95 (two-sided basic intervals for accuracy, NCE, NBS, NRisk, ECD
and the differences; one-sided upper bounds [0, U] for the calibration errors; the corrected resampled t
interval of the gain); a cell passes when c >= 0.95 - 3 sd, and the acceptance floor is c >= 0.93.

Sources: Davison & Hinkley (1997), Sect. 5.2 (basic bootstrap intervals); Efron & Tibshirani (1993), Ch. 13
(percentile bounds); Kumar et al. (2019), Sec. 5 (the debiased squared ECE); Kumar et al. (2018) (the
MMCE); Błasiok & Nakkiran (2023) (smooth ECE); Nadeau & Bengio (2003) (the gain's interval); Ferrer & Ramos
(2024), eqs. 8-9 and Sec. 2.3.1 (NCE, NBS, NRisk).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
from dataclasses import dataclass
from functools import cache
from multiprocessing import Pool
from pathlib import Path

if __name__ == "__main__":  # run as a script: one BLAS thread per process (an importer keeps its own)
    for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from scipy.special import log_softmax  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

import calib  # noqa: E402
from calib.calibration_errors.smoothing import smooth_ece  # noqa: E402
from calib.calibrators.registry import make_calibrator  # noqa: E402
from calib.evaluation.data_pass import run_pass  # noqa: E402
from calib.evaluation.engine import compare  # noqa: E402
from calib.evaluation.settings import EvaluationSettings  # noqa: E402
from calib.resampling.bootstrap import basic_interval  # noqa: E402

HERE = Path(__file__).resolve().parent
TRUTHS_FILE = HERE / "coverage_truths.json"
SCALE = 1.5
DGPS = {
    "calibrated": lambda z: log_softmax(SCALE * z, axis=1),
    "over-confident": lambda z: log_softmax(1.8 * SCALE * z, axis=1),
    "under-confident": lambda z: log_softmax(0.6 * SCALE * z, axis=1),
    "shifted": lambda z: log_softmax(SCALE * z + 0.7 * (np.arange(z.shape[1]) == 0), axis=1),
}
N_BINS = 15
NU = 0.4  # the MMCE's kernel bandwidth (the engine's default mmce_bandwidth, Kumar et al. (2018))
N_BOOT = 200
ALPHA = 0.05
LEVEL = 1 - ALPHA
FLOOR = 0.93
TRUTH_DRAWS, TRUTH_CHUNK = 10**7, 10**6
REPLICATIONS = 200
MID_N_REPLICATIONS = 100  # n = 10^4
BIG_N_REPLICATIONS = 20  # n = 10^5 (one evaluation takes about 6 s)
POPULATION_DRAWS = 4 * 10**6  # the population the equal-mass truths are computed on, in each replication's edges
GAIN_FITS, GAIN_POPULATION, FOLDS = 100, 10**6, 5
GAIN = "gain temperature"
PROCESSES = 2
TASK_SIZE = 10  # replications per task of the pool

SQUARED = "squared ECE {} (debiased)"
MMCE = "squared MMCE (unbiased)"
# The plug-in calibration errors, whose differences calib compare gives no interval.
PLUG_INS = ("ECE top-label", "ECE positive class", "ECE class-wise", "smooth ECE")


@dataclass(frozen=True, order=True)
class Cell:
    """One cell of the study: R data sets of n rows of a DGP with K classes, binned one way; ``compare``: the
    calibrated and the over-confident model of each data set compared instead (calib compare)."""

    dgp: str
    k: int
    n: int
    binning: str
    reps: int
    compare: bool = False

    @property
    def label(self) -> str:
        if self.compare:
            return f"compare over-confident - calibrated, K={self.k}, n={self.n}"
        return f"{self.dgp}, K={self.k}, n={self.n}, {self.binning}"

    @property
    def gains(self) -> bool:
        """Whether the cell checks the calibrator gain's interval (temperature scaling cross-validated)."""
        return not self.compare and self.k <= 3 and self.n <= 10_000 and self.binning == "equal-width"


def full_grid() -> list[Cell]:
    """The default study (about 30 minutes on 2 cores): equal width for every DGP at K = 2 with n in {200, 1000,
    10^4} and K = 3 with n in {1000, 10^4}; K = 10, n = 1000 for the calibrated and over-confident models; equal
    mass for those two at K in {2, 3}, n = 1000, and K = 2, n = 10^4; n = 10^5 for them at K = 2; and calib
    compare of the two at K in {2, 3}, n = 1000."""
    cells = []
    for dgp in DGPS:
        cells += [Cell(dgp, 2, n, "equal-width", REPLICATIONS) for n in (200, 1000)]
        cells.append(Cell(dgp, 3, 1000, "equal-width", REPLICATIONS))
        cells += [Cell(dgp, k, 10_000, "equal-width", MID_N_REPLICATIONS) for k in (2, 3)]
    for dgp in ("calibrated", "over-confident"):
        cells.append(Cell(dgp, 10, 1000, "equal-width", REPLICATIONS))
        cells += [Cell(dgp, k, 1000, "equal-mass", REPLICATIONS) for k in (2, 3)]
        cells.append(Cell(dgp, 2, 10_000, "equal-mass", MID_N_REPLICATIONS))
        cells.append(Cell(dgp, 2, 100_000, "equal-width", BIG_N_REPLICATIONS))
    cells += [Cell("over-confident", k, 1000, "equal-width", MID_N_REPLICATIONS, compare=True) for k in (2, 3)]
    return cells


QUICK_REPLICATIONS = 30


def quick_grid(reps: int = QUICK_REPLICATIONS) -> list[Cell]:
    """The CI version: three cells at n = 1000 (the first with the calibrator gain)."""
    return [
        Cell("calibrated", 2, 1000, "equal-width", reps),
        Cell("over-confident", 3, 1000, "equal-mass", reps),
        Cell("calibrated", 10, 1000, "equal-width", reps),
    ]


def seed_of(*parts) -> int:
    """A 63-bit seed from the parts' text (stable across runs and machines, unlike ``hash``)."""
    return int.from_bytes(hashlib.sha256("|".join(map(str, parts)).encode()).digest()[:8], "little") >> 1


def draw(dgp: str, k: int, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """n rows of the true posterior p and the model's log-posteriors q."""
    z = rng.standard_normal((n, k))
    p = np.exp(log_softmax(SCALE * z, axis=1))  # q of "calibrated" is exactly log p: its ECEs are exactly 0
    return p, DGPS[dgp](z)


def draw_labels(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    u = rng.random((p.shape[0], 1))
    return np.minimum((np.cumsum(p, axis=1) < u).sum(axis=1), p.shape[1] - 1)


# --- binning and kernel sums, written here (independent of the library's) -----------------------------


def equal_mass_edges(scores: np.ndarray, m: int) -> np.ndarray:
    """Edges 0, s_(ceil(j N / M)) for j = 1..M-1, 1 of the sorted scores (the engine's rule), one column each."""
    scores = scores.reshape(scores.shape[0], -1)
    n = scores.shape[0]
    ranks = -(-np.arange(1, m) * n // m) - 1
    inner = np.sort(scores, axis=0)[ranks]
    return np.vstack([np.zeros(scores.shape[1]), inner, np.ones(scores.shape[1])])


def width_edges(m: int, columns: int) -> np.ndarray:
    """The edges k / M of M equal-width bins, one column each."""
    return np.repeat((np.arange(m + 1) / m)[:, None], columns, axis=1)


def bin_index(scores: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Right-closed bins (e_j, e_{j+1}], 0 in the first: column j of ``scores`` (n, m) on ``edges[:, j]``."""
    m = edges.shape[0] - 1
    ids = np.column_stack([np.searchsorted(edges[:, j], scores[:, j], side="left") - 1 for j in range(scores.shape[1])])
    return np.clip(ids, 0, m - 1)


def bin_sums(scores: np.ndarray, outcomes: np.ndarray, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column and bin, the count and the sum of outcome - score, each (columns, M)."""
    m = edges.shape[0] - 1
    ids = bin_index(scores, edges)
    cols = scores.shape[1]
    flat = (ids + m * np.arange(cols)).ravel()
    counts = np.bincount(flat, minlength=cols * m).reshape(cols, m)
    gaps = np.bincount(flat, weights=(outcomes - scores).ravel(), minlength=cols * m).reshape(cols, m)
    return counts.astype(np.float64), gaps


def ece_of(counts: np.ndarray, gaps: np.ndarray) -> float:
    """sum_b |G_b| / N, the mean over columns."""
    return float(np.mean(np.abs(gaps).sum(axis=1) / counts.sum(axis=1)))


def squared_ece_of(counts: np.ndarray, gaps: np.ndarray) -> float:
    """sum_b (N_b / N) (G_b / N_b)^2 = sum_b G_b^2 / (N_b N) over occupied bins, the mean over columns (the
    plug-in on data, the truth on population sums)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        per_bin = np.where(counts > 0, gaps**2 / counts, 0.0)
    return float(np.mean(per_bin.sum(axis=1) / counts.sum(axis=1)))


def kernel_pair_sum(c: np.ndarray, a: np.ndarray, nu: float) -> float:
    """sum_{i, j} a_i a_j exp(-|c_i - c_j| / nu), all pairs (i = j included), in O(n log n).

    Sorted by c, the pairs i <= j contribute exp(-c_j / nu) sum_{i <= j} a_i exp(c_i / nu) and those i > j
    exp(c_j / nu) sum_{i > j} a_i exp(-c_i / nu): cumulative sums, with c shifted by 1/2 so that the
    exponentials stay within e^(+-1 / (2 nu)) (no overflow for nu >= 0.01, c in [0, 1]).
    """
    order = np.argsort(c, kind="stable")
    t, w = (c[order] - 0.5) / nu, a[order]
    up, down = np.exp(t), np.exp(-t)
    left = down * np.cumsum(w * up)  # i <= j
    right_tail = np.cumsum((w * down)[::-1])[::-1]
    right = up * np.concatenate([right_tail[1:], [0.0]])  # i > j
    return float(np.sum(w * (left + right)))


# --- population truths -------------------------------------------------------------------------------------


def binned_columns(k: int, q: np.ndarray, p: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(scores, outcome probabilities) of each binned estimand, (n, columns) each: top-label, and the
    positive class (K = 2) or every class (K > 2)."""
    probs = np.exp(q)
    top = q.argmax(axis=1)
    rows = np.arange(q.shape[0])
    columns = {"top-label": (probs[rows, top][:, None], p[rows, top][:, None])}
    if k == 2:
        columns["positive class"] = (probs[:, 1:2], p[:, 1:2])
    else:
        columns["class-wise"] = (probs, p)
    return columns


def truth_chunk(dgp: str, k: int, chunk: int) -> tuple[np.ndarray, np.ndarray]:
    # The same draws of z for every DGP: a difference of two models' truths has no Monte-Carlo error from them.
    return draw(dgp, k, TRUTH_CHUNK, np.random.default_rng(seed_of("truth", k, chunk)))


def population_edges(dgp: str, k: int, binning: str, m: int) -> dict[str, np.ndarray]:
    if binning == "equal-width":
        return {
            name: width_edges(m, columns)
            for name, columns in (("top-label", 1), ("positive class", 1), ("class-wise", k))
        }
    pooled: dict[str, list] = {}
    for chunk in range(TRUTH_DRAWS // TRUTH_CHUNK):
        p, q = truth_chunk(dgp, k, chunk)
        for name, (scores, _) in binned_columns(k, q, p).items():
            pooled.setdefault(name, []).append(scores)
    return {name: equal_mass_edges(np.concatenate(parts), m) for name, parts in pooled.items()}


def compute_truths(dgp: str, k: int, binning: str, nu: float = NU, m: int = N_BINS) -> dict[str, list[float]]:
    """Each metric's population value and Monte-Carlo error, [value, error], from TRUTH_DRAWS draws."""
    chunks = TRUTH_DRAWS // TRUTH_CHUNK
    edges = population_edges(dgp, k, binning, m)
    per_chunk: dict[str, list[float]] = {}
    totals: dict[str, np.ndarray] = {}
    top_scores, top_outcomes = [], []

    def add(key, value):
        totals[key] = totals.get(key, 0) + np.asarray(value, dtype=np.float64)

    for chunk in range(chunks):
        p, q = truth_chunk(dgp, k, chunk)
        probs = np.exp(q)
        top = q.argmax(axis=1)
        rows = np.arange(q.shape[0])
        s = {
            "n": q.shape[0],
            "right": p[rows, top].sum(),
            "cross-entropy": -(p * q).sum(),
            "Brier": ((probs**2 - 2 * probs * p + p).mean(axis=1)).sum(),  # E over y ~ p of (1/K) sum (q - y)^2
            "entropy": -(probs * q).sum(),
            "priors": p.sum(axis=0),
        }
        for name, (scores, outcomes) in binned_columns(k, q, p).items():
            s[f"{name} counts"], s[f"{name} gaps"] = bin_sums(scores, outcomes, edges[name])
        for key, value in s.items():
            add(key, value)
        for name, value in metric_values(s, k).items():
            per_chunk.setdefault(name, []).append(value)
        conf, outcome = probs[rows, top], p[rows, top]
        a = outcome - conf
        n = conf.size
        per_chunk.setdefault(MMCE, []).append((kernel_pair_sum(conf, a, nu) - np.sum(a * a)) / (n * (n - 1)))
        per_chunk.setdefault("smooth ECE", []).append(smooth_ece(conf, outcome))
        top_scores.append(conf)
        top_outcomes.append(outcome)
    values = metric_values(totals, k)
    values[MMCE] = float(np.mean(per_chunk[MMCE]))
    values["smooth ECE"] = float(smooth_ece(np.concatenate(top_scores), np.concatenate(top_outcomes)))
    return {name: [float(values[name]), float(np.std(per_chunk[name], ddof=1) / np.sqrt(chunks))] for name in values}


def metric_values(s: dict, k: int) -> dict[str, float]:
    """The truths that are functions of the population sums ``s``."""
    n = s["n"]
    pi = np.asarray(s["priors"]) / n
    entropy = -np.sum(pi * np.log(pi))
    accuracy = s["right"] / n
    out = {
        "accuracy": accuracy,
        "NCE": s["cross-entropy"] / n / entropy,
        "NBS": s["Brier"] / n / (np.sum(pi * (1 - pi)) / k),
        "NRisk 0-1": (1 - accuracy) / (1 - pi.max()),
        "ECD": (s["cross-entropy"] - s["entropy"]) / n,
    }
    for name in ("top-label", "positive class" if k == 2 else "class-wise"):
        counts, gaps = s[f"{name} counts"], s[f"{name} gaps"]
        out[f"ECE {name}"] = ece_of(counts, gaps)
        out[SQUARED.format(name)] = squared_ece_of(counts, gaps)
    return {name: float(v) for name, v in out.items()}


def truth_key(dgp: str, k: int, binning: str, nu: float = NU, m: int = N_BINS) -> str:
    return f"{dgp}|K={k}|{binning}|nu={nu}|n_bins={m}|draws={TRUTH_DRAWS}"


def _truth_job(args) -> tuple[str, dict]:
    dgp, k, binning = args
    with threadpool_limits(1):
        return truth_key(dgp, k, binning), compute_truths(dgp, k, binning)


def gain_truth(dgp: str, k: int, n: int) -> list[float]:
    """[value, Monte-Carlo error] of the cross-validated temperature scaling's expected gain in log loss: the
    mean over GAIN_FITS fits, each on an independent data set of a fold's training size, of the raw minus the
    calibrated expected log loss on GAIN_POPULATION population rows (E over y ~ p)."""
    p_pop, q_pop = draw(dgp, k, GAIN_POPULATION, np.random.default_rng(seed_of("gain population", dgp, k)))

    def loss(logq: np.ndarray) -> float:
        return float(-np.sum(p_pop * logq) / p_pop.shape[0])

    raw, gains = loss(q_pop), []
    for fit in range(GAIN_FITS):
        rng = np.random.default_rng(seed_of("gain fit", dgp, k, n, fit))
        p, q = draw(dgp, k, n - n // FOLDS, rng)
        calibrator = make_calibrator("temperature").fit(q, draw_labels(p, rng), kind="logprobs")
        gains.append(raw - loss(calibrator.predict_log_proba(q_pop, kind="logprobs")))
    return [float(np.mean(gains)), float(np.std(gains, ddof=1) / np.sqrt(GAIN_FITS))]


def gain_key(dgp: str, k: int, n: int) -> str:
    return f"gain|{dgp}|K={k}|n={n}|fits={GAIN_FITS}"


def _truth_job(args) -> tuple[str, object]:
    with threadpool_limits(1):
        if args[0] == "gain":
            return gain_key(*args[1:]), gain_truth(*args[1:])
        return truth_key(*args), compute_truths(*args)


def truths_for(cells: list[Cell], processes: int = PROCESSES, recompute: bool = False) -> dict[str, object]:
    """The truths of the cells' (DGP, K, binning) and gains, from the cache file, computing (and caching) the
    missing ones; a compare cell needs both models' truths."""
    cache = {} if recompute or not TRUTHS_FILE.exists() else json.loads(TRUTHS_FILE.read_text())
    wanted = set()
    for c in cells:
        dgps = ("calibrated", "over-confident") if c.compare else (c.dgp,)
        wanted |= {(dgp, c.k, c.binning) for dgp in dgps}
        if c.gains:
            wanted.add(("gain", c.dgp, c.k, c.n))
    key = {w: gain_key(*w[1:]) if w[0] == "gain" else truth_key(*w) for w in wanted}
    missing = sorted(w for w in wanted if key[w] not in cache)
    if missing:
        with Pool(min(processes, len(missing))) as pool:
            cache.update(pool.map(_truth_job, missing, chunksize=1))
        TRUTHS_FILE.write_text(json.dumps(dict(sorted(cache.items())), indent=1) + "\n")
    return {key[w]: cache[key[w]] for w in wanted}


class Population:
    """A population sample of a DGP, each binned column sorted once with the cumulative sums of its
    outcome - score gaps, so that the binned errors in any edges are two searches per edge."""

    def __init__(self, dgp: str, k: int):
        p, q = draw(dgp, k, POPULATION_DRAWS, np.random.default_rng(seed_of("population", dgp, k)))
        self.columns = {}
        for name, (scores, outcomes) in binned_columns(k, q, p).items():
            parts = []
            for j in range(scores.shape[1]):
                order = np.argsort(scores[:, j], kind="stable")
                gaps = np.concatenate([[0.0], np.cumsum(outcomes[order, j] - scores[order, j])])
                parts.append((scores[order, j], gaps))
            self.columns[name] = parts

    def truths(self, name: str, edges: list[np.ndarray]) -> tuple[float, float]:
        """The ECE and squared ECE of column set ``name`` in right-closed bins of ``edges`` (one per column)."""
        eces, squares = [], []
        for (scores, gaps), column_edges in zip(self.columns[name], edges, strict=True):
            at = np.searchsorted(scores, column_edges, side="right")
            at[0], at[-1] = 0, scores.size  # the first bin holds 0, the last 1
            counts, sums = np.diff(at), np.diff(gaps[at])
            eces.append(np.abs(sums).sum() / scores.size)
            squares.append(np.sum(np.where(counts > 0, sums**2 / np.maximum(counts, 1), 0.0)) / scores.size)
        return float(np.mean(eces)), float(np.mean(squares))


@cache
def population(dgp: str, k: int) -> Population:
    return Population(dgp, k)


# --- the replications ------------------------------------------------------------------------------------------


def engine_options(cell: Cell) -> dict:
    """calib.evaluate's options."""
    calibrators = ("temperature",) if cell.gains else ()
    return dict(calibrators=calibrators, n_boot=N_BOOT, alpha=ALPHA, binning=cell.binning, n_bins=N_BINS,
                mmce_bandwidth=NU, folds=FOLDS)  # fmt: skip


def bias_cell(cell: Cell) -> bool:
    """The cells of the plug-in against debiased comparison: calibrated data at n = 1000."""
    return cell.dgp == "calibrated" and cell.n == 1000 and not cell.compare


def plug_ins(k: int, q: np.ndarray, y: np.ndarray, binning: str) -> dict[str, float]:
    """The plug-in estimates, from the data and the engine's bins: squared binned ECEs and the MMCE V-statistic."""
    out = {}
    for name, (scores, outcomes) in binned_columns(k, q, np.eye(k)[y]).items():  # one-hot labels as outcomes
        edges = width_edges(N_BINS, scores.shape[1]) if binning == "equal-width" else equal_mass_edges(scores, N_BINS)
        out[SQUARED.format(name)] = squared_ece_of(*bin_sums(scores, outcomes, edges))
    conf = np.exp(q.max(axis=1))
    a = (q.argmax(axis=1) == y) - conf
    out[MMCE] = kernel_pair_sum(conf, a, NU) / y.size**2
    return out


def replicate(task: tuple[Cell, int, int]) -> list[tuple]:
    """Replications [start, stop) of a cell: each metric's (value, low, high), the plug-ins in a bias cell, and
    the truths that depend on the replication (the binned errors in its equal-mass edges)."""
    cell, start, stop = task
    out = []
    with threadpool_limits(1):
        for r in range(start, stop):
            rng = np.random.default_rng(seed_of(cell.dgp, cell.k, cell.n, cell.binning, r))
            p, q = draw(cell.dgp, cell.k, cell.n, rng)
            y = draw_labels(p, rng)
            seed = seed_of("boot", cell.dgp, cell.k, cell.n, cell.binning, r) % 2**32
            if cell.compare:
                out.append((cell, r, compared(cell, p, y, seed), {}, {}))
                continue
            summary = calib.evaluate(q, y, kind="logprobs", seed=seed, **engine_options(cell))
            metrics = {name: (m.value, m.low, m.high) for name, m in summary.metrics.items()}
            if cell.gains:
                g = summary.gains["temperature"]
                metrics[GAIN] = (g.value, g.low, g.high)
            own = {}
            if cell.binning == "equal-mass":
                for name in binned_columns(cell.k, q[:1], p[:1]):
                    edges = [b.edges for b in summary.reliability[f"ECE {name}"]]
                    own[f"ECE {name}"], own[SQUARED.format(name)] = population(cell.dgp, cell.k).truths(name, edges)
            out.append((cell, r, metrics, plug_ins(cell.k, q, y, cell.binning) if bias_cell(cell) else {}, own))
    return out


def compared(cell: Cell, p: np.ndarray, y: np.ndarray, seed: int) -> dict:
    """calib compare of the calibrated and over-confident models of one data set: each difference's (value,
    low, high), and the basic intervals the plug-in errors' differences had before (from the same resamples)."""
    z_free = np.log(p)  # the calibrated model's log-posteriors; the over-confident one's are 1.8 times its logits
    models = [z_free, log_softmax(1.8 * z_free, axis=1)]
    result = compare(models, y, names=["calibrated", "over-confident"], n_boot=N_BOOT, seed=seed,
                     binning=cell.binning, n_bins=N_BINS, mmce_bandwidth=NU)  # fmt: skip
    metrics = {f"difference {name}": (m.value, m.low, m.high) for name, m in result.differences[0].items()}
    return metrics | former_difference_intervals(models, y, seed, cell)


def former_difference_intervals(models: list[np.ndarray], y: np.ndarray, seed: int, cell: Cell) -> dict:
    """The paired basic intervals of the plug-in errors' differences, as calib compare gave them before issue 54:
    each model's values on the same Poisson resamples, their differences reflected about the data's."""
    wanted = tuple(name for name in PLUG_INS if name != ("ECE class-wise" if cell.k == 2 else "ECE positive class"))
    settings = EvaluationSettings(n_boot=N_BOOT, seed=seed, binning=cell.binning, n_bins=N_BINS, calibrators=(),
                                  metrics=wanted)  # fmt: skip
    draws = [
        run_pass(
            lambda lp=lp: iter([(lp, y, None, None)]),
            n_classes=cell.k,
            n_rows=y.size,
            settings=settings,
            costs=None,
            priors=None,
            grouped=False,
            say=lambda _: None,
            whole_limit=y.size,
        ).draws()  # fmt: skip
        for lp in models
    ]
    out = {}
    for name in wanted:
        diff = draws[1][name] - draws[0][name]
        low, high = basic_interval(diff[1:], float(diff[0]), ALPHA)
        out[f"difference {name} (former basic interval)"] = (float(diff[0]), float(low), float(high))
    return out


def run_study(cells: list[Cell], processes: int = PROCESSES, recompute_truths: bool = False) -> dict:
    """Every cell's per-metric coverage, sd, mean width and bias, and the bias comparison (a JSON-able dict)."""
    truths = truths_for(cells, processes, recompute_truths)
    tasks = [(c, s, min(s + TASK_SIZE, c.reps)) for c in cells for s in range(0, c.reps, TASK_SIZE)]
    with Pool(processes) as pool:
        rows = sorted((row for chunk in pool.imap_unordered(replicate, tasks) for row in chunk), key=lambda x: x[:2])
    results = []
    comparisons = []
    for cell in cells:
        reps = [row for row in rows if row[0] == cell]
        truth = cell_truths(cell, truths)
        results.append(
            {"cell": cell.label, "dgp": cell.dgp, "K": cell.k, "n": cell.n, "binning": cell.binning, "R": cell.reps}
            | {"metrics": summarize(reps, truth)}
        )
        if bias_cell(cell):
            comparisons += compare_bias(cell, reps, truth)
    return {
        "B": N_BOOT,
        "alpha": ALPHA,
        "n_bins": N_BINS,
        "mmce_bandwidth": NU,
        "truth draws": TRUTH_DRAWS,
        "cells": results,
        "bias comparison": comparisons,
    }


def cell_truths(cell: Cell, truths: dict) -> dict[str, list[float]]:
    """The truths of a cell's metrics, [value, Monte-Carlo error] each: a compare cell's differences (the
    over-confident model's truth minus the calibrated one's, errors added in quadrature) under both names."""
    if cell.compare:
        over, calibrated = (truths[truth_key(dgp, cell.k, cell.binning)] for dgp in ("over-confident", "calibrated"))
        out = {}
        for name in over:
            value = [over[name][0] - calibrated[name][0], float(np.hypot(over[name][1], calibrated[name][1]))]
            out[f"difference {name}"] = value
            if name in PLUG_INS:
                out[f"difference {name} (former basic interval)"] = value
        return out
    truth = dict(truths[truth_key(cell.dgp, cell.k, cell.binning)])
    if cell.gains:
        truth[GAIN] = truths[gain_key(cell.dgp, cell.k, cell.n)]
    return truth


def summarize(reps: list, truth: dict) -> dict:
    """Per metric: its coverage, sd, mean width and bias over the replications (the truth of a replication
    where it has its own, e.g. in its equal-mass edges); "printed": whether the tool prints that interval (not
    the former ones, which the study recomputes to show why they went), "interval": whether there is one."""
    out = {}
    for name in sorted(truth):
        reported = [r[2][name] for r in reps if name in r[2]]
        if not reported:
            out[name] = {"reported": False, "truth": truth[name][0], "truth MC error": truth[name][1]}
            continue
        value, low, high = np.array(reported).T
        t = np.array([r[4].get(name, truth[name][0]) for r in reps])
        row = {
            "reported": True,
            "printed": "former" not in name,
            "interval": not np.isnan(low).all(),
            "truth": float(np.mean(t)),
            "truth MC error": truth[name][1],
            "bias": float(np.mean(value - t)),
            "bias sd": float(np.std(value - t, ddof=1) / np.sqrt(len(reported))),
        }
        if row["interval"]:
            c = float(np.mean((low <= t) & (t <= high)))
            row |= {
                "coverage": c,
                "sd": float(np.sqrt(c * (1 - c) / len(reported))),
                "mean width": float(np.mean(high - low)),
            }
        out[name] = row
    return out


def compare_bias(cell: Cell, reps: list, truth: dict) -> list[dict]:
    out = []
    for name in sorted(reps[0][3]):
        t = truth[name][0]
        plug = np.array([r[3][name] for r in reps]) - t
        engine = [r[2][name][0] for r in reps if name in r[2]]
        row = {
            "cell": cell.label,
            "estimand": name,
            "truth": t,
            "R": len(reps),
            "plug-in bias": float(plug.mean()),
            "plug-in bias sd": float(plug.std(ddof=1) / np.sqrt(len(plug))),
        }
        if engine:
            debiased = np.array(engine) - t
            row["debiased bias"] = float(debiased.mean())
            row["debiased bias sd"] = float(debiased.std(ddof=1) / np.sqrt(len(debiased)))
        out.append(row)
    return out


def checked(cell: dict) -> list[tuple[str, dict]]:
    """The metrics of a cell whose printed interval the study checks."""
    return [(name, m) for name, m in cell["metrics"].items() if m["reported"] and m["printed"] and m["interval"]]


def failures(study: dict) -> list[str]:
    """The (cell, metric) pairs of printed intervals whose coverage is below 0.95 - 3 sd, with the numbers."""
    return [
        f"{cell['cell']}: {name} covers {m['coverage']:.3f} (sd {m['sd']:.3f})"
        for cell in study["cells"]
        for name, m in checked(cell)
        if m["coverage"] < LEVEL - 3 * m["sd"]
    ]


# --- the report ---------------------------------------------------------------------------------------------


def markdown(study: dict) -> str:
    """The study as the README shows it: coverage per metric over the cells, the former intervals, the bias."""
    cells = study["cells"]
    names = sorted({name for cell in cells for name in cell["metrics"]})
    lines = [
        f"{len(cells)} cells (DGP, K, n, binning; `calib compare` of two models), {replications(cells)}, "
        f"B = {study['B']} resamples, {study['n_bins']} bins, MMCE bandwidth {study['mmce_bandwidth']}; truths "
        f"from {study['truth draws']:.0e} draws. A cell fails when its coverage c < 0.95 - 3 sd, sd = "
        f"sqrt(c (1 - c) / R), the Monte-Carlo sd (at most {max_sd(study):.3f} here); the acceptance floor is 0.93.",
        "",
        "| interval | cells | pooled ± sd | min coverage ± sd (cell) | median | below 0.95 - 3 sd | below 0.93 |",
        "|:--|--:|--:|:--|--:|--:|--:|",
    ]
    without, former = [], []
    for name in names:
        done = [
            (cell["cell"], cell["metrics"][name]) for cell in cells if cell["metrics"].get(name, {}).get("reported")
        ]
        if done and not done[0][1]["interval"]:
            without.append(name)
            continue
        if not done:
            continue
        worst_label, worst = min(done, key=lambda x: x[1]["coverage"])
        median = statistics.median(m["coverage"] for _, m in done)
        below = sum(m["coverage"] < LEVEL - 3 * m["sd"] for _, m in done)
        floor = sum(m["coverage"] < FLOOR for _, m in done)
        runs = {cell["cell"]: cell["R"] for cell in cells}
        total = sum(runs[label] for label, _ in done)
        pooled = sum(m["coverage"] * runs[label] for label, m in done) / total
        row = (
            f"| {name} | {len(done)} | {pooled:.3f} ± {np.sqrt(pooled * (1 - pooled) / total):.3f} | "
            f"{worst['coverage']:.3f} ± {worst['sd']:.3f} ({worst_label}) | "
            f"{median:.3f} | {below} | {floor} |"
        )
        (lines if done[0][1]["printed"] else former).append(row)
    if without:
        lines += ["", "Printed without an interval (`calib compare`): " + ", ".join(without) + "; the basic intervals"
                  " they had before, recomputed on the same resamples:", "", *lines[2:4], *former]  # fmt: skip
    lines += [
        "",
        "Bias on calibrated data at n = 1000 (truth 0): the plug-in against the engine's debiased estimate of the "
        "same estimand, the mean over R replications ± its Monte-Carlo sd.",
        "",
        "| estimand (cell) | plug-in bias | debiased bias | below a tenth |",
        "|:--|--:|--:|:--|",
    ]
    for row in study["bias comparison"]:
        plug = f"{row['plug-in bias']:.2e} ± {row['plug-in bias sd']:.1e}"
        debiased = f"{row['debiased bias']:.2e} ± {row['debiased bias sd']:.1e}"
        tenth = below_a_tenth(row)
        lines.append(f"| {row['estimand']} ({row['cell']}) | {plug} | {debiased} | {tenth} |")
    worst_ratio = max_truth_error(study)
    lines += ["", f"Largest truth Monte-Carlo error against a mean interval width: {worst_ratio:.1e}.", ""]
    return "\n".join(lines)


def below_a_tenth(row: dict) -> str:
    """Whether the debiased |bias| is below a tenth of the plug-in's: "yes" (or "no") when it is (is not) by
    more than 2 Monte-Carlo sd of the debiased bias, else "within noise"."""
    bound, bias, sd = abs(row["plug-in bias"]) / 10, abs(row["debiased bias"]), row["debiased bias sd"]
    return "yes" if bias + 2 * sd < bound else "no" if bias - 2 * sd > bound else "within noise"


def replications(cells: list[dict]) -> str:
    """ "R = 200 replications a cell" (with the cells of another R named by their n)."""
    counts = sorted({cell["R"] for cell in cells}, key=lambda r: -sum(cell["R"] == r for cell in cells))
    text = f"R = {counts[0]} replications a cell"
    for r in counts[1:]:
        ns = sorted({cell["n"] for cell in cells if cell["R"] == r})
        text += f" ({r} at n = {' and '.join(map(str, ns))})"
    return text


def max_sd(study: dict) -> float:
    return max(m["sd"] for cell in study["cells"] for _, m in checked(cell))


def max_truth_error(study: dict) -> float:
    return max(
        m["truth MC error"] / m["mean width"]
        for cell in study["cells"]
        for _, m in checked(cell)
        if m["mean width"] > 0
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the CI version's three cells at n = 1000")
    parser.add_argument("--dgp", nargs="+", choices=list(DGPS), help="only these DGPs")
    parser.add_argument("--k", nargs="+", type=int, help="only these K")
    parser.add_argument("--n", nargs="+", type=int, help="only these n")
    parser.add_argument("--binning", nargs="+", choices=["equal-width", "equal-mass"], help="only these binnings")
    parser.add_argument(
        "--reps",
        type=int,
        help="replications a cell (default: 200; 100 at n = 10^4 and in compare; 20 at n = 10^5; quick 30)",
    )
    parser.add_argument("--processes", type=int, default=PROCESSES)
    parser.add_argument("--truths", action="store_true", help="recompute the cached truths")
    parser.add_argument("--out", default=str(HERE / "coverage"), help="prefix of the .md and .json written")
    args = parser.parse_args(argv)
    cells = quick_grid() if args.quick else full_grid()
    cells = [
        c if args.reps is None else Cell(c.dgp, c.k, c.n, c.binning, args.reps, c.compare)
        for c in cells
        if (args.dgp is None or c.dgp in args.dgp)
        and (args.k is None or c.k in args.k)
        and (args.n is None or c.n in args.n)
        and (args.binning is None or c.binning in args.binning)
    ]
    study = run_study(cells, args.processes, args.truths)
    Path(args.out + ".json").write_text(json.dumps(study, indent=1) + "\n")
    Path(args.out + ".md").write_text(markdown(study))
    print(markdown(study))
    for line in failures(study):
        print("below 0.95 - 3 sd:", line)


if __name__ == "__main__":
    main()
