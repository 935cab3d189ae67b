"""Sweep kinds no paper owns: the experiments only declared sweeps run (configs/sweep/), one per point.

Each point's values are drawn by the sweep's aggregate (:func:`pipeline.sweeps.aggregate`), so these
kinds have no renderer. A sweep may also run any paper's kind by naming its ``paper``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

import numpy as np

from calib.validation import Choice
from pipeline.config_blocks import GaussianSystems
from pipeline.kinds import Kind, Parameters
from pipeline.parameters import ConfigError, Count, Positive, Seed, message
from pipeline.sources import DataSources, RealSet, SyntheticSystem

# The library is imported inside each kind, when a sweep point runs it: the workflow imports this module
# to check the sweep configs every time it builds its graph, and needs only the kinds' parameters.


def _calibrator_names() -> tuple[str, ...]:
    """The calibrators a sweep may vary: every name of the registry (calib.calibrators.registry)."""
    from calib.calibrators.registry import CALIBRATORS

    return tuple(CALIBRATORS)


@dataclass(frozen=True, kw_only=True)
class BinnedOnRealSets(Parameters):
    """A binned metric with ``n_bins`` bins on each of ``sets``."""

    sets: list[RealSet]
    n_bins: Count


@dataclass(frozen=True, kw_only=True)
class SmoothOnRealSets(Parameters):
    """The smooth ECE at the kernel ``bandwidth`` on each of ``sets``."""

    sets: list[RealSet]
    bandwidth: Positive


@dataclass(frozen=True, kw_only=True)
class CalibratorProtocol(Parameters):
    """NCE and NBS after ``calibrator`` under ``protocol`` (tt or xv) on each of ``sets``."""

    sets: list[RealSet]
    calibrator: Annotated[str, Choice(_calibrator_names)]
    protocol: Literal["tt", "xv"]


@dataclass(frozen=True, kw_only=True)
class SyntheticMetrics(Parameters):
    """NCE, ECE and RCL of the Gaussian ``systems`` drawn with the ``generator``'s settings."""

    generator: GaussianSystems
    systems: list[SyntheticSystem]
    seed: Seed


def _sets(exp: BinnedOnRealSets | SmoothOnRealSets | CalibratorProtocol, data: DataSources):
    """Each set's name, log-posteriors and labels; a set with sample weights is refused, as the sweeps compute
    unweighted values (never in silence on weighted rows, issue 56)."""
    for name in exp.sets:
        pset = data.real(name)
        if pset.weights is not None:
            raise ConfigError(message(
                "sets", f"{name} has sample weights, which the sweeps cannot take (they compute unweighted values); "
                "name a declaration of the set without weights: (or weights_file:)",
            ))  # fmt: skip
        yield name.split("/")[-1], pset.logprobs(), pset.labels


def ece_binning(exp: BinnedOnRealSets, data: DataSources) -> list[dict]:
    """Top-label ECE with ``n_bins`` equal-width and equal-mass bins on each real set."""
    from calib.calibration_errors.binned import BinnedCalibrationError

    return [
        {
            "row": label,
            "column": f"ECE ({short})",
            "value": BinnedCalibrationError("top_label", n_bins=exp.n_bins, strategy=strategy)(
                logp, y, kind="logprobs"
            ),
        }
        for label, logp, y in _sets(exp, data)
        for short, strategy in (("width", "equal-width"), ("mass", "equal-mass"))
    ]


def ece_against_mcb(exp: BinnedOnRealSets, data: DataSources) -> list[dict]:
    """Binned ECE of P(class 1) with ``n_bins`` equal-width bins, and the CORP miscalibration (MCB) of the
    Brier score, which needs no bins, on each binary real set (Dimitriadis et al. (2021))."""
    from calib.calibration_errors.binned import BinnedCalibrationError
    from calib.calibration_errors.corp import corp_decomposition

    records = []
    for label, logp, y in _sets(exp, data):
        ece = BinnedCalibrationError("binary", n_bins=exp.n_bins)(logp, y, kind="logprobs")
        mcb = corp_decomposition(np.exp(logp[:, 1]), y == 1).mcb
        records += [{"row": label, "column": "binned ECE", "value": ece}, {"row": label, "column": "MCB", "value": mcb}]
    return records


def smooth_ece_bandwidth(exp: SmoothOnRealSets, data: DataSources) -> list[dict]:
    """Top-label smooth ECE at a fixed kernel ``bandwidth`` on each real set (relplot's estimator)."""
    from calib.calibration_errors.smoothing import smooth_ece

    records = []
    for label, logp, y in _sets(exp, data):
        confidence, correct = np.exp(logp.max(axis=1)), (logp.argmax(axis=1) == y).astype(float)
        records.append(
            {"row": label, "column": "smooth ECE", "value": smooth_ece(confidence, correct, bandwidth=exp.bandwidth)}
        )
    return records


def synthetic_metrics(exp: SyntheticMetrics, data: DataSources) -> list[dict]:
    """NCE, top-label ECE and the RCL of DP (xv) of the Gaussian systems of Ferrer & Ramos (2024) at these
    generator settings."""
    from calib.calibration_errors.binned import BinnedCalibrationError
    from calib.calibrators import calibrate
    from calib.calibrators.registry import make_calibrator
    from calib.data.synthetic import gaussian_posteriors
    from calib.scoring.scores import cross_entropy

    dataset = gaussian_posteriors(**exp.generator.settings(), seed=exp.seed)
    records = []
    for system in exp.systems:
        logp, y = dataset.systems[system], dataset.labels
        calibrated = calibrate(make_calibrator("dp"), logp, y, kind="logprobs", protocol="xv", seed=exp.seed)
        raw_ce = cross_entropy(logp, y, kind="logprobs")
        metrics = {
            "NCE": cross_entropy(logp, y, kind="logprobs", normalize=True),
            "ECE": BinnedCalibrationError("top_label", n_bins=15)(logp, y, kind="logprobs"),
            "RCL-CE-Dxv": (raw_ce - cross_entropy(calibrated, y, kind="logprobs")) / raw_ce,
        }
        records += [{"row": system, "column": m, "value": v} for m, v in metrics.items()]
    return records


def calibrator_protocol(exp: CalibratorProtocol, data: DataSources) -> list[dict]:
    """Cross-entropy and Brier score after ``calibrator`` under ``protocol`` (tt or xv) on each real set."""
    from calib.calibrators import calibrate
    from calib.calibrators.registry import make_calibrator
    from calib.scoring.scores import brier, cross_entropy

    records = []
    for label, logp, y in _sets(exp, data):
        cal = calibrate(make_calibrator(exp.calibrator), logp, y, kind="logprobs", protocol=exp.protocol, seed=0)
        records.append({"row": label, "column": "NCE", "value": cross_entropy(cal, y, kind="logprobs", normalize=True)})
        records.append(
            {"row": label, "column": "NBS", "value": brier(cal, y, kind="logprobs", scaling="mean", normalize=True)}
        )
    return records


KINDS = (
    Kind("ece_binning", BinnedOnRealSets, ece_binning),
    Kind("smooth_ece_bandwidth", SmoothOnRealSets, smooth_ece_bandwidth),
    Kind("ece_against_mcb", BinnedOnRealSets, ece_against_mcb),
    Kind("synthetic_metrics", SyntheticMetrics, synthetic_metrics),
    Kind("calibrator_protocol", CalibratorProtocol, calibrator_protocol),
)
