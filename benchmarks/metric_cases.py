"""Metric cases: binned ECE, smooth ECE, SKCE, MMCE, bootstrap CI of the ECE and consistency resampling.

Each case gives calib and its peers the same arrays. Binned ECEs call calib with the preset of the
peer's conventions (:mod:`calib.calibration_errors.presets`), so the values must match; peers that work in float32
(torchmetrics) get a looser tolerance. Where no peer library offers an operation, the peer is a
reference written here (a dense n x n SKCE, the resampling loop a user would write) and is named so.
"""

from __future__ import annotations

from functools import partial

import numpy as np
from harness import Case, Peer, optional_module
from inputs import binary_problem, confidence_problem, draw_labels, multiclass_problem
from scipy.spatial.distance import cdist
from sklearn.calibration import calibration_curve

from calib.calibration_errors.binned import BinnedCalibrationError
from calib.calibration_errors.corp import corp_decomposition
from calib.calibration_errors.kernel_calibration import median_bandwidth, mmce, skce
from calib.calibration_errors.lenses import TopK
from calib.calibration_errors.presets import ece_preset
from calib.calibration_errors.simplex_binning import UniformGrid
from calib.calibration_errors.smoothing import smooth_ece
from calib.resampling.bootstrap import bootstrap_ece
from calib.resampling.significance import miscalibration_resampling

torch = optional_module("torch")
netcal_metrics = optional_module("netcal.metrics")
torchmetrics_classification = optional_module("torchmetrics.functional.classification")
uncertainty_calibration = optional_module("calibration.utils")
relplot = optional_module("relplot")
model_diagnostics_scoring = optional_module("model_diagnostics.scoring")

N_BINS = 15
CLASSES = 10
MMCE_BANDWIDTH = 0.4
EXACT = 1e-12
# torchmetrics bins float32 scores and sums them in float32 (scatter_add): at n = 1e7 its ECE is
# 2.8e-4 off the float64 sums over its own bins, which calib's preset reproduces exactly.
FLOAT32_ECE = 1e-3


def absolute_difference(ours, theirs) -> float:
    return abs(float(ours) - float(theirs))


def relative_difference(ours, theirs) -> float:
    return abs(float(ours) - float(theirs)) / abs(float(theirs))


def not_installed(name: str) -> Peer:
    return Peer(name, note="not installed")


def sklearn_ece(p1: np.ndarray, labels: np.ndarray, n_bins: int) -> float:
    """ECE from scikit-learn's calibration_curve (bin counts recomputed with its searchsorted rule)."""
    prob_true, prob_pred = calibration_curve(labels, p1, n_bins=n_bins)
    counts = np.bincount(np.searchsorted(np.linspace(0, 1, n_bins + 1)[1:-1], p1), minlength=n_bins)
    return float(np.sum(counts[counts > 0] * np.abs(prob_true - prob_pred)) / p1.size)


def torchmetrics_ece(scores: np.ndarray, labels: np.ndarray) -> float:
    """torchmetrics' binary (1-D scores) or multiclass (top-label) L1 calibration error on float32 tensors."""
    preds, target = torch.as_tensor(scores, dtype=torch.float32), torch.as_tensor(labels)
    if preds.ndim == 1:
        return float(torchmetrics_classification.binary_calibration_error(preds, target, n_bins=N_BINS))
    return float(
        torchmetrics_classification.multiclass_calibration_error(
            preds, target, num_classes=preds.shape[1], n_bins=N_BINS
        )
    )


def netcal_ece(scores: np.ndarray, labels: np.ndarray) -> float:
    return float(netcal_metrics.ECE(bins=N_BINS).measure(scores, labels))


def uncertainty_calibration_ece(scores: np.ndarray, labels: np.ndarray) -> float:
    return float(uncertainty_calibration.get_ece(scores, labels, num_bins=N_BINS))


def binned_ece_cases(sizes) -> list[Case]:
    return [
        Case(f"binned ECE, {problem}, {N_BINS} bins", n, partial(_binned_ece_setup, n, problem))
        for problem in ("binary", "top-label")
        for n in sizes
    ]


def _binned_ece_setup(n: int, problem: str):
    if problem == "binary":
        probs, labels = binary_problem(n)
        scores = probs[:, 1]  # every peer's binary input is the positive-class probability
    else:
        logp, labels = multiclass_problem(n, CLASSES)
        probs = scores = np.exp(logp)

    def peer(name: str, run, preset: str, tolerance: float = EXACT, **options) -> Peer:
        """``run`` (None: the peer is not installed) against calib's ece_preset with the peer's conventions."""
        if run is None:
            return not_installed(name)
        ours = partial(ece_preset(preset, n_bins=N_BINS), probs, labels, kind="probs")
        return Peer(name, run, ours, absolute_difference, tolerance, note=f"calib preset {preset!r}", **options)

    peers = [
        peer("netcal ECE", netcal_metrics and partial(netcal_ece, scores, labels), "netcal"),
        peer(
            "torchmetrics calibration_error (float32)",
            torchmetrics_classification and partial(torchmetrics_ece, scores, labels),
            "torchmetrics",
            FLOAT32_ECE,
            unit="abs (float32 sums)",
            torch=True,
        ),
        peer(
            "uncertainty-calibration get_ece",
            uncertainty_calibration and partial(uncertainty_calibration_ece, scores, labels),
            "uncertainty_calibration",
        ),
    ]
    if problem == "binary":
        peers.append(peer("scikit-learn calibration_curve", partial(sklearn_ece, scores, labels, N_BINS), "sklearn"))
    else:
        peers.append(Peer("scikit-learn calibration_curve", note="binary only"))
    return None, peers


def smooth_ece_cases(sizes) -> list[Case]:
    return [Case("smooth ECE (bandwidth by fixed point)", n, partial(_smooth_ece_setup, n)) for n in sizes]


def _smooth_ece_setup(n: int):
    confidence, outcome = confidence_problem(n)
    peer = (
        Peer(
            "relplot smECE",
            lambda: float(relplot.smECE(confidence, outcome)),
            distance=absolute_difference,
            tolerance=1e-6,
        )
        if relplot
        else not_installed("relplot")
    )
    return (lambda: smooth_ece(confidence, outcome)), [peer]


def corp_cases(sizes) -> list[Case]:
    return [Case("CORP decomposition of the Brier score (PAV, ties pooled)", n, partial(_corp_setup, n)) for n in sizes]


def _corp_setup(n: int):
    confidence, outcome = confidence_problem(n)
    outcome = outcome.astype(np.float64)

    def theirs():
        row = model_diagnostics_scoring.decompose(
            y_obs=outcome, y_pred=confidence, scoring_function=model_diagnostics_scoring.SquaredError()
        ).row(0, named=True)
        return row["miscalibration"]

    peer = (
        Peer("model-diagnostics decompose", theirs, distance=absolute_difference, tolerance=1e-12)
        if model_diagnostics_scoring
        else not_installed("model-diagnostics")
    )
    return (lambda: corp_decomposition(confidence, outcome).mcb), [peer]


def dense_skce(probs: np.ndarray, labels: np.ndarray, bandwidth: float) -> float:
    """Unbiased SKCE from full n x n matrices: mean over i != j of exp(-|p_i - p_j| / nu) <e_yi - p_i, e_yj - p_j>."""
    residual = np.eye(probs.shape[1])[labels] - probs
    pairs = np.exp(-cdist(probs, probs) / bandwidth) * (residual @ residual.T)
    np.fill_diagonal(pairs, 0.0)
    return float(pairs.sum() / (labels.size * (labels.size - 1)))


def skce_cases(sizes, dense_max: int) -> list[Case]:
    return [
        Case(f"SKCE unbiased, Laplacian kernel, median bandwidth, K={CLASSES}", n, partial(_skce_setup, n, dense_max))
        for n in sizes
    ]


def _skce_setup(n: int, dense_max: int):
    logp, labels = multiclass_problem(n, CLASSES)
    probs = np.exp(logp)
    bandwidth = median_bandwidth(probs)
    name = "dense numpy reference (no peer library has SKCE)"
    if n > dense_max:
        peer = Peer(name, note=f"not run above n = {dense_max:.0e}: n x n float64 matrices")
    else:
        peer = Peer(
            name,
            partial(dense_skce, probs, labels, bandwidth),
            distance=relative_difference,
            tolerance=1e-9,
            unit="rel",
            note="netcal, torchmetrics, uncertainty-calibration, relplot: no SKCE",
        )
    calib_call = partial(
        skce, probs, labels, kind="probs", estimator="unbiased", kernel="laplacian", bandwidth=bandwidth
    )
    return calib_call, [peer]


def mmce_cases(sizes, dense_max: int) -> list[Case]:
    return [
        Case(
            f"MMCE (top-label, Laplacian nu={MMCE_BANDWIDTH}, biased, sqrt), K={CLASSES}",
            n,
            partial(_mmce_setup, n, dense_max),
        )
        for n in sizes
    ]


def _mmce_setup(n: int, dense_max: int):
    logp, labels = multiclass_problem(n, CLASSES)
    probs = np.exp(logp)
    if not netcal_metrics:
        peer = not_installed("netcal")
    elif n > dense_max:
        peer = Peer("netcal MMCE", note=f"not run above n = {dense_max:.0e}: it forms n x n float64 matrices")
    else:
        peer = Peer(
            "netcal MMCE",
            lambda: float(netcal_metrics.MMCE().measure(probs, labels)),
            distance=absolute_difference,
            tolerance=1e-10,
        )
    return partial(mmce, probs, labels, kind="probs", bandwidth=MMCE_BANDWIDTH), [peer]


def percentile_loop(metric, probs: np.ndarray, labels: np.ndarray, n_boot: int) -> tuple[float, float]:
    """95% percentile interval of ``metric`` over ``n_boot`` resamples drawn one at a time (a user's loop)."""
    rng = np.random.default_rng(0)
    n = labels.size
    values = [metric(probs[rows], labels[rows]) for rows in (rng.integers(0, n, n) for _ in range(n_boot))]
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)


def uncertainty_calibration_bootstrap(confidence, correct, n_boot: int) -> tuple[float, float]:
    """uncertainty-calibration's bootstrap_uncertainty of its get_ece: the basic interval 2 ECE - q."""
    np.random.seed(0)  # noqa: NPY002 (the peer resamples with numpy's global generator)

    def top_label_ece(sample):
        scores, hits = zip(*sample, strict=True)
        return uncertainty_calibration.get_ece(np.array(scores), np.array(hits), num_bins=N_BINS)

    low, _, high = uncertainty_calibration.bootstrap_uncertainty(
        list(zip(confidence, correct, strict=True)), top_label_ece, num_samples=n_boot, alpha=5.0
    )
    return float(low), float(high)


def _interval(result) -> tuple[float, float]:
    return float(np.ravel(result.low)[0]), float(np.ravel(result.high)[0])


def percentile_gap(result, interval) -> float:
    """Largest endpoint difference between calib's percentile interval and the peer's, in CI widths."""
    low, high = _interval(result)
    return max(abs(low - interval[0]), abs(high - interval[1])) / (high - low)


def basic_gap(result, interval) -> float:
    """As percentile_gap, for calib's basic interval (2 estimate - high, 2 estimate - low)."""
    low, high = _interval(result)
    estimate = float(np.ravel(result.estimate)[0])
    return max(abs(2 * estimate - high - interval[0]), abs(2 * estimate - low - interval[1])) / (high - low)


def bootstrap_cases(n: int, n_boot: int) -> list[Case]:
    operation = f"bootstrap 95% CI of top-label ECE, {N_BINS} bins, B={n_boot}, K={CLASSES}"
    return [Case(operation, n, partial(_bootstrap_setup, n, n_boot))]


def _bootstrap_setup(n: int, n_boot: int):
    logp, labels = multiclass_problem(n, CLASSES)
    probs = np.exp(logp)
    confidence, correct = probs.max(axis=1), (probs.argmax(axis=1) == labels).astype(np.int64)
    within = {"tolerance": 0.1, "unit": "x CI width"}
    peers = []
    if netcal_metrics:
        peers.append(
            Peer(
                f"loop of {n_boot} netcal ECE calls",
                partial(percentile_loop, netcal_ece, probs, labels, n_boot),
                distance=percentile_gap,
                **within,
            )
        )
    if torchmetrics_classification:
        peers.append(
            Peer(
                f"loop of {n_boot} torchmetrics calls",
                partial(percentile_loop, torchmetrics_ece, probs, labels, n_boot),
                distance=percentile_gap,
                torch=True,
                **within,
            )
        )
    if uncertainty_calibration:
        peers += [
            Peer(
                "uncertainty-calibration bootstrap_uncertainty(get_ece)",
                partial(uncertainty_calibration_bootstrap, confidence, correct, n_boot),
                distance=basic_gap,
                note="basic interval 2 ECE - q; compared with calib's basic interval",
                **within,
            ),
            Peer(
                "uncertainty-calibration get_calibration_error_uncertainties",
                note="not this ECE: l2 error on 15 equal-mass bins, 100 resamples, alpha in percent",
            ),
        ]
    calib_call = partial(
        bootstrap_ece,
        probs,
        labels,
        kind="probs",
        estimator=BinnedCalibrationError(n_bins=N_BINS),
        n_boot=n_boot,
        seed=0,
        alpha=0.05,
    )
    return calib_call, peers


def consistency_loop(probs: np.ndarray, labels: np.ndarray, n_resamples: int) -> tuple[float, np.ndarray]:
    """(observed, resampled) top-label ECE on 10 left-closed bins: resample predictions, draw labels from them."""

    def ece(p, y):
        return BinnedCalibrationError("top_label", n_bins=10, closed="left")(p, y, kind="probs")

    rng = np.random.default_rng(0)
    n = labels.size
    resampled = []
    for _ in range(n_resamples):
        resampled_probs = probs[rng.integers(0, n, n)]
        resampled.append(ece(resampled_probs, draw_labels(resampled_probs, rng)))
    return ece(probs, labels), np.array(resampled)


def null_gap(result, reference) -> float:
    """|difference of the null means| in null standard deviations (inf if the observed values differ)."""
    observed, resampled = reference
    if abs(float(result.observed[0]) - observed) > EXACT:
        return np.inf
    return abs(float(result.mean[0]) - resampled.mean()) / float(result.sd[0])


def consistency_cases(n: int, n_resamples: int) -> list[Case]:
    operation = f"consistency resampling, TopK(1) lens, UniformGrid(10), R={n_resamples}, K={CLASSES}"
    return [Case(operation, n, partial(_consistency_setup, n, n_resamples))]


def _consistency_setup(n: int, n_resamples: int):
    logp, labels = multiclass_problem(n, CLASSES)
    probs = np.exp(logp)
    calib_call = partial(
        miscalibration_resampling,
        probs,
        labels,
        kind="probs",
        binning=UniformGrid(10),
        lens=TopK(1),
        method="consistency",
        n_resamples=n_resamples,
        seed=0,
    )
    peer = Peer(
        f"loop reference: {n_resamples} x calib BinnedCalibrationError('top_label')",
        partial(consistency_loop, probs, labels, n_resamples),
        distance=null_gap,
        tolerance=0.2,
        unit="null sd (means); observed to 1e-12",
        note="no peer library offers consistency resampling",
    )
    return calib_call, [peer]
