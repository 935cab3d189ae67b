"""Calibrator cases: fit on (scores, labels), then calibrate the same scores.

Multiclass (synthetic logits, labels drawn at temperature 1.7): temperature scaling, affine / DP,
vector, matrix and Dirichlet scaling. Binary: isotonic, beta, Platt and histogram binning. Every
side gets the same posteriors: calib and the log-domain peers (scikit-learn, psrcal, expected_cost)
the log-probabilities, netcal and betacal the probabilities they take. scikit-learn's logistic
regressions run unpenalized with tol 1e-8, so that both sides reach the optimum.

Agreement of parametric fits is the same minimum of the training log-loss (|Δ| <= 1e-5): the
probabilities are a poor test at K = 100, where the optimum is so flat that two converged fits
(log-losses 8e-10 apart) differ by 3e-4. Isotonic and histogram binning must give the same
probabilities (1e-9).
"""

from __future__ import annotations

from functools import partial

import numpy as np
import sklearn.calibration
from harness import Case, Peer, optional_module
from inputs import binary_problem, multiclass_problem
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

from calib.calibrators import (
    AffineCalibrator,
    BetaCalibrator,
    DirichletCalibrator,
    HistogramBinning,
    IsotonicCalibrator,
    MatrixScaling,
    PlattCalibrator,
    TemperatureScaling,
    VectorScaling,
)

torch = optional_module("torch")
netcal_scaling = optional_module("netcal.scaling")
netcal_binning = optional_module("netcal.binning")
psrcal_calibration = optional_module("psrcal.calibration")
expected_cost_calibration = optional_module("expected_cost.calibration")
betacal = optional_module("betacal")
sklearn_temperature_scaling = getattr(sklearn.calibration, "_TemperatureScaling", None)

HISTOGRAM_BINS = 15


def log_loss(probs, labels: np.ndarray) -> float:
    """Mean log-loss of calibrated probabilities: an (N, K) matrix, or the class-1 vector of a binary problem."""
    probs = np.asarray(probs, dtype=np.float64)
    if probs.ndim == 1:
        probs = np.column_stack([1.0 - probs, probs])
    return float(-np.mean(np.log(probs[np.arange(labels.size), labels])))


def same_optimum(labels: np.ndarray) -> dict:
    """Peer options: agreement is the training log-loss gap <= 1e-5."""

    def gap(ours, theirs) -> float:
        return abs(log_loss(ours, labels) - log_loss(theirs, labels))

    return {"distance": gap, "tolerance": 1e-5, "unit": "abs Δ log-loss"}


def same_probabilities() -> dict:
    """Peer options: agreement is max abs Δp <= 1e-9."""

    def gap(ours, theirs) -> float:
        return float(np.max(np.abs(np.asarray(ours, dtype=np.float64) - np.asarray(theirs, dtype=np.float64))))

    return {"distance": gap, "tolerance": 1e-9, "unit": "max abs Δp"}


def fitted(calibrator, scores: np.ndarray, labels: np.ndarray, kind: str) -> np.ndarray:
    """calib: fit ``calibrator`` and return the calibrated probabilities of the training scores."""
    return calibrator.fit(scores, labels, kind=kind).predict_proba(scores, kind=kind)


def softmax_regression(features: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """scikit-learn's unpenalized multinomial logistic regression; probabilities of the training rows."""
    return LogisticRegression(C=np.inf, tol=1e-8, max_iter=10_000).fit(features, labels).predict_proba(features)


def psrcal_affine(logp: np.ndarray, labels: np.ndarray, bias: bool) -> np.ndarray:
    """psrcal's AffineCalLogLoss (float64 tensors), calibrated probabilities of the training scores."""
    scores = torch.as_tensor(logp)
    calibrated, _ = psrcal_calibration.calibrate(
        scores, torch.as_tensor(labels), scores, psrcal_calibration.AffineCalLogLoss, bias=bias
    )
    return torch.exp(calibrated).detach().numpy()


def expected_cost_affine(logp: np.ndarray, labels: np.ndarray, bias: bool) -> np.ndarray:
    calibrated = expected_cost_calibration.calibration_train_on_test(logp, labels, calparams={"bias": bias})
    return np.exp(calibrated)


def not_installed(name: str) -> Peer:
    return Peer(name, note="not installed")


def _affine_peers(logp: np.ndarray, labels: np.ndarray, bias: bool) -> list[Peer]:
    """psrcal and expected_cost, the authors' packages for affine (bias) and temperature (no bias) scaling."""
    peers = []
    if psrcal_calibration:
        peers.append(
            Peer(
                f"psrcal AffineCalLogLoss(bias={bias})",
                partial(psrcal_affine, logp, labels, bias),
                torch=True,
                **same_optimum(labels),
            )
        )
    else:
        peers.append(not_installed("psrcal"))
    if expected_cost_calibration:
        peers.append(
            Peer(
                f"expected_cost calibration_train_on_test(bias={bias})",
                partial(expected_cost_affine, logp, labels, bias),
                torch=True,
                note="trains in float32",
                **same_optimum(labels),
            )
        )
    else:
        peers.append(not_installed("expected_cost"))
    return peers


def _temperature_setup(logp, probs, labels):
    peers = []
    if sklearn_temperature_scaling:
        peers.append(
            Peer(
                "scikit-learn _TemperatureScaling",
                lambda: sklearn_temperature_scaling().fit(logp, labels).predict(logp),
                note="private; what CalibratedClassifierCV(method='temperature') fits",
                **same_optimum(labels),
            )
        )
    else:
        peers.append(Peer("scikit-learn", note="no temperature scaling in this version"))
    if netcal_scaling:
        peers.append(
            Peer(
                "netcal TemperatureScaling",
                lambda: netcal_scaling.TemperatureScaling().fit(probs, labels).transform(probs),
                torch=True,
                **same_optimum(labels),
            )
        )
    peers += _affine_peers(logp, labels, bias=False)
    return partial(fitted, TemperatureScaling(), logp, labels, "logprobs"), peers


def _affine_setup(logp, probs, labels):
    return partial(fitted, AffineCalibrator(), logp, labels, "logprobs"), _affine_peers(logp, labels, bias=True)


def _vector_setup(logp, probs, labels):
    peer = (
        Peer(
            "netcal LogisticCalibration",
            lambda: netcal_scaling.LogisticCalibration().fit(probs, labels).transform(probs),
            torch=True,
            note="the same model: on log-probabilities calib's vector scaling scales log p too",
        )
        if netcal_scaling
        else not_installed("netcal")
    )
    return partial(fitted, VectorScaling(), logp, labels, "logprobs"), [peer]


def _matrix_setup(logp, probs, labels):
    peers = [
        Peer(
            "scikit-learn LogisticRegression on log(p / p_K)",
            lambda: softmax_regression((logp - logp[:, -1:])[:, :-1], labels),
            **same_optimum(labels),
        ),
        Peer("netcal", note="no matrix scaling (LogisticCalibration is vector scaling for K > 2)"),
    ]
    survey = MatrixScaling(features="last_class_ratios", reg_lambda=0.0)  # the peer's model: unpenalized
    return partial(fitted, survey, logp, labels, "logprobs"), peers


def _dirichlet_setup(logp, probs, labels):
    peers = [
        Peer(
            "scikit-learn LogisticRegression on log p",
            partial(softmax_regression, logp, labels),
            note="= unregularized Dirichlet calibration",
            **same_optimum(labels),
        ),
        Peer("dirichletcal", note="does not install (broken setup.py); compared in the tests by stored fixtures"),
    ]
    return partial(fitted, DirichletCalibrator(reg_lambda=0.0), logp, labels, "logprobs"), peers


MULTICLASS_SETUPS = {
    "temperature scaling": _temperature_setup,
    "affine / DP scaling": _affine_setup,
    "vector scaling": _vector_setup,
    "matrix scaling": _matrix_setup,
    "Dirichlet calibration (unregularized)": _dirichlet_setup,
}


def multiclass_cases(n: int, classes) -> list[Case]:
    return [
        Case(f"{method}, K={k}", n, partial(_multiclass_setup, setup, n, k))
        for k in classes
        for method, setup in MULTICLASS_SETUPS.items()
    ]


def _multiclass_setup(setup, n: int, k: int):
    logp, labels = multiclass_problem(n, k)
    return setup(logp, np.exp(logp), labels)


def positive_class(calibrator, probs: np.ndarray, labels: np.ndarray) -> np.ndarray:
    return fitted(calibrator, probs, labels, "probs")[:, 1]


def _isotonic_setup(probs, labels):
    p1 = probs[:, 1]
    peers = [
        Peer(
            "scikit-learn IsotonicRegression",
            lambda: IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(p1, labels).predict(p1),
            **same_probabilities(),
        ),
        Peer(
            "netcal IsotonicRegression",
            lambda: netcal_binning.IsotonicRegression().fit(p1, labels).transform(p1),
            **same_probabilities(),
        )
        if netcal_binning
        else not_installed("netcal"),
    ]
    return partial(positive_class, IsotonicCalibrator(clip=0.0), probs, labels), peers


def _beta_setup(probs, labels):
    p1 = probs[:, 1]
    peers = [
        Peer(
            "betacal BetaCalibration('abm')",
            lambda: betacal.BetaCalibration("abm").fit(p1, labels).predict(p1),
            note="its LogisticRegression stops at sklearn's default tol 1e-4",
            **same_optimum(labels),
        )
        if betacal
        else not_installed("betacal"),
        Peer(
            "netcal BetaCalibration",
            lambda: netcal_scaling.BetaCalibration().fit(p1, labels).transform(p1),
            torch=True,
            **same_optimum(labels),
        )
        if netcal_scaling
        else not_installed("netcal"),
    ]
    return partial(positive_class, BetaCalibrator(), probs, labels), peers


def _platt_setup(probs, labels):
    p1 = probs[:, 1]

    def sklearn_platt():
        log_odds = np.log(p1 / (1.0 - p1))[:, None]
        return LogisticRegression(C=np.inf, tol=1e-8).fit(log_odds, labels).predict_proba(log_odds)[:, 1]

    peers = [
        Peer("scikit-learn LogisticRegression on log-odds", sklearn_platt, **same_optimum(labels)),
        Peer(
            "netcal LogisticCalibration",
            lambda: netcal_scaling.LogisticCalibration().fit(p1, labels).transform(p1),
            torch=True,
            **same_optimum(labels),
        )
        if netcal_scaling
        else not_installed("netcal"),
    ]
    return partial(positive_class, PlattCalibrator(), probs, labels), peers


def _histogram_setup(probs, labels):
    p1 = probs[:, 1]
    peer = (
        Peer(
            "netcal HistogramBinning",
            lambda: netcal_binning.HistogramBinning(bins=HISTOGRAM_BINS).fit(p1, labels).transform(p1),
            **same_probabilities(),
        )
        if netcal_binning
        else not_installed("netcal")
    )
    return partial(positive_class, HistogramBinning(n_bins=HISTOGRAM_BINS), probs, labels), [peer]


def binary_cases(isotonic_n: int, n: int) -> list[Case]:
    setups = [
        ("isotonic (PAV)", isotonic_n, _isotonic_setup),
        ("beta calibration (abm)", n, _beta_setup),
        ("Platt scaling on log-odds", n, _platt_setup),
        (f"histogram binning, {HISTOGRAM_BINS} bins", n, _histogram_setup),
    ]
    return [Case(f"{name}, binary", size, partial(_binary_setup, setup, size)) for name, size, setup in setups]


def _binary_setup(setup, n: int):
    return setup(*binary_problem(n))
