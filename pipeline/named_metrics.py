"""The metric names of Ferrer & Ramos (2024) (NCE, NBS, NRisk-01, RCL-BS-Dxv, ECEmc, ...) mapped to calib calls.

Names follow the authors' figures: ``NRisk-01`` / ``NRisk-01r`` / ``NRisk-imb`` (0-1 costs, with an
abstain column of cost 0.1, with cost 10 for errors on the last class), ``NCE``, ``NBS``, ``ECE``
(binary; ``ECEbin`` in Table 2), ``ECEmc`` (top-label) and ``RCL-<CE|BS>-<D|T|H|P><xv|tt>`` (relative
calibration loss of an EPSR with affine, temperature, histogram-binning or PAV calibration,
cross-validated or trained on test). Options that the paper fixes come from the experiment config
(``options``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Literal

import numpy as np

from calib.calibration_errors.binned import BinnedCalibrationError
from calib.calibrators import calibrate
from calib.calibrators.histogram import EMPTY_BIN_POLICIES
from calib.calibrators.registry import make_calibrator
from calib.scoring.calibration_losses import calibration_loss_from_posteriors
from calib.scoring.decisions import imbalanced_costs, normalized_risk, zero_one_costs
from calib.scoring.scores import brier, cross_entropy
from calib.validation import Choice, Integer
from pipeline.authors_code import UpstreamAffine, UpstreamHistogramBinning, upstream_ece
from pipeline.parameters import Count, Seed

_RCL = re.compile(r"^RCL-(CE|BS)-([DTHP])(xv|tt)$")
METRIC_NAMES = ("NCE", "NBS", "NRisk-01", "NRisk-01r", "NRisk-imb", "ECE", "ECEbin", "ECEmc")
RCL_NAMES = tuple(f"RCL-{e}-{c}{p}" for e in ("CE", "BS") for c in "DTHP" for p in ("xv", "tt"))
MetricName = Annotated[str, Choice((*METRIC_NAMES, *RCL_NAMES))]


@dataclass(frozen=True)
class EceOptions:
    """The ECE's bins: ``n_bins`` equal-width bins, each ``closed`` on its ``left`` or ``right`` edge."""

    n_bins: Count
    closed: Literal["left", "right"]


@dataclass(frozen=True)
class HistogramOptions:
    """Histogram binning's ``n_bins`` equal-width bins and its policy for a bin empty in training."""

    n_bins: Count
    empty_bin: Annotated[str, Choice(EMPTY_BIN_POLICIES)]


@dataclass(frozen=True)
class MetricOptions:
    """Settings a paper fixes: ECE bins and edge rule, histogram-binning bins and empty-bin policy, folds.

    ``rcl_zero_probability``: what RCL does with posteriors holding an exact 0 (log = -inf). ``smooth``
    (ours) fits the calibrator as it treats exact zeros (:mod:`calib.calibrators.zeros`); ``nan`` reports
    NaN, as the code of Ferrer & Ramos (2024) does (their CE is then infinite, or their float32 affine fit
    returns NaN).

    ``implementation``: ``calib`` (ours: exact float64 fits) or ``authors`` (the float32 L-BFGS fits,
    histogram binning and ECE bins, :mod:`pipeline.authors_code`), used to rerun a cell the way upstream
    computed it when checking the cause of a deviation.
    """

    ece: EceOptions
    histogram: HistogramOptions
    n_folds: Annotated[int, Integer(minimum=2)]
    seed: Seed
    rcl_zero_probability: Literal["smooth", "nan"] = "smooth"
    implementation: Literal["calib", "authors"] = "calib"


# Ferrer & Ramos (2024)'s calibrator letters -> registry names (calib.calibrators.registry).
CALIBRATOR_LETTERS = {"D": "dp", "T": "temperature", "H": "histogram", "P": "isotonic"}


def calibrator_for(letter: str, options: MetricOptions):
    """D = affine (eq. 23), T = temperature scaling, H = histogram binning, P = PAV (isotonic)."""
    if options.implementation == "authors" and letter in "DTH":
        return (
            UpstreamHistogramBinning(options.histogram.n_bins) if letter == "H" else UpstreamAffine(bias=letter == "D")
        )
    if letter not in CALIBRATOR_LETTERS:
        raise ValueError(f"unknown calibrator letter {letter!r}; known: {', '.join(CALIBRATOR_LETTERS)}")
    if letter != "H":
        return make_calibrator(CALIBRATOR_LETTERS[letter])
    return make_calibrator(
        "histogram", n_bins=options.histogram.n_bins, closed=options.ece.closed, empty_bin=options.histogram.empty_bin
    )


def compute(
    name: str,
    logp: np.ndarray,
    labels: np.ndarray,
    options: MetricOptions,
    *,
    folds=None,
    groups=None,
    cache: dict | None = None,
) -> float:
    """Value of metric ``name`` (a fraction, never a percentage) for log-posteriors ``logp``.

    ``folds`` maps a calibrator letter to explicit xv fold ids (the authors' replayed folds);
    ``cache`` memoizes calibrated posteriors across metrics that share them.
    """
    k = logp.shape[1]
    if options.implementation == "authors" and name in ("ECE", "ECEbin", "ECEmc"):
        return upstream_ece(logp, labels, n_bins=options.ece.n_bins, binary=name != "ECEmc")
    simple = {
        "NCE": lambda: cross_entropy(logp, labels, kind="logprobs", normalize=True),
        "NBS": lambda: brier(logp, labels, kind="logprobs", scaling="mean", normalize=True),
        "NRisk-01": lambda: normalized_risk(logp, labels, zero_one_costs(k), kind="logprobs"),
        "NRisk-01r": lambda: normalized_risk(logp, labels, zero_one_costs(k, abstention=0.1), kind="logprobs"),
        "NRisk-imb": lambda: normalized_risk(logp, labels, imbalanced_costs(k), kind="logprobs"),
        "ECE": lambda: BinnedCalibrationError("binary", n_bins=options.ece.n_bins, closed=options.ece.closed)(
            logp, labels, kind="logprobs"
        ),
        "ECEbin": lambda: simple["ECE"](),
        "ECEmc": lambda: BinnedCalibrationError("top_label", n_bins=options.ece.n_bins, closed=options.ece.closed)(
            logp, labels, kind="logprobs"
        ),
    }
    if name in simple:
        return simple[name]()
    match = _RCL.match(name)
    if not match:
        raise ValueError(f"unknown metric name {name!r}; known: {sorted(simple)} and RCL-<CE|BS>-<D|T|H|P><xv|tt>")
    epsr, letter, protocol = match.groups()
    if options.rcl_zero_probability == "nan" and np.isneginf(logp).any():
        return float("nan")
    calibrated = calibrated_posteriors(letter, protocol, logp, labels, options, folds=folds, groups=groups, cache=cache)
    return calibration_loss_from_posteriors(
        logp, calibrated, labels, kind="logprobs", metric="ce" if epsr == "CE" else "brier"
    )


def calibrated_posteriors(
    letter: str,
    protocol: str,
    logp,
    labels,
    options: MetricOptions,
    *,
    folds=None,
    groups=None,
    cache: dict | None = None,
) -> np.ndarray:
    """Log-posteriors calibrated by calibrator ``letter`` under ``protocol`` (memoized in ``cache``)."""
    key = (letter, protocol)
    if cache is not None and key in cache:
        return cache[key]
    fold_ids = None if folds is None or protocol == "tt" else folds.get(letter)
    out = calibrate(
        calibrator_for(letter, options),
        logp,
        labels,
        kind="logprobs",
        protocol=protocol,
        n_folds=options.n_folds,
        seed=options.seed,
        groups=groups,
        folds=fold_ids,
    )
    if cache is not None:
        cache[key] = out
    return out
