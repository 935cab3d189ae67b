"""Binned expected calibration error (ECE) and the reliability-diagram bins behind it.

Source: Ferrer & Ramos (2024), paper 000, eq. 27 (binary ECE on the posterior of the positive
class H2, index 1) and Sec. 2.5.2 (ECEmc, the top-label / confidence version: confidence = max_k q_k
against the indicator that argmax is the label); Naeini et al. (2015); Guo et al. (2017).
ECE = sum_m (|B_m| / N) |freq(B_m) - mean_conf(B_m)|; empty bins contribute nothing. Values are
fractions (multiply by 100 for the paper's percentages).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calib.binning import equal_width_bin_ids, equal_width_edges
from calib.validation import CalibInputError, check_inputs


@dataclass(frozen=True)
class ReliabilityBins:
    """Per-bin arrays of a reliability diagram; NaN marks the means of empty bins."""

    edges: np.ndarray
    counts: np.ndarray
    mean_confidence: np.ndarray
    frequency: np.ndarray

    def ece(self, norm: str = "l1") -> float:
        """sum_m (n_m / N) |freq_m - conf_m| (``l1``) or its squared-gap version (``l2``, no root)."""
        full = self.counts > 0
        gap = np.abs(self.frequency[full] - self.mean_confidence[full])
        if norm == "l2":
            gap = gap**2
        elif norm != "l1":
            raise CalibInputError(f"norm must be 'l1' or 'l2'; got {norm!r}")
        return float(np.sum(self.counts[full] * gap) / self.counts.sum())


def reliability_bins(confidence, outcome, *, n_bins: int, closed: str) -> ReliabilityBins:
    """Bin ``confidence`` in M equal-width bins and average it and the 0/1 ``outcome`` per bin."""
    conf = np.asarray(confidence, dtype=np.float64)
    hit = np.asarray(outcome, dtype=np.float64)
    if conf.ndim != 1 or hit.shape != conf.shape:
        raise CalibInputError(f"confidence and outcome must be 1-D of equal length; got {conf.shape} and {hit.shape}")
    ids = equal_width_bin_ids(conf, n_bins, closed=closed)
    counts = np.bincount(ids, minlength=n_bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = np.bincount(ids, weights=conf, minlength=n_bins) / counts
        freq = np.bincount(ids, weights=hit, minlength=n_bins) / counts
    return ReliabilityBins(equal_width_edges(n_bins), counts, mean_conf, freq)


def binary_reliability(scores, labels, *, kind: str, n_bins: int, closed: str = "right") -> ReliabilityBins:
    """Reliability bins of q(class 1) against the label being 1 (the positive class, paper's H2)."""
    logp, y = check_inputs(scores, labels, kind)
    if logp.shape[1] != 2:
        raise CalibInputError(
            f"binary ECE needs scores with K = 2 columns; got {logp.shape[1]}. Use top-label ECE for K > 2"
        )
    return reliability_bins(np.exp(logp[:, 1]), y == 1, n_bins=n_bins, closed=closed)


def top_label_reliability(scores, labels, *, kind: str, n_bins: int, closed: str = "right") -> ReliabilityBins:
    """Reliability bins of the confidence max_k q_k against argmax being correct (ECEmc)."""
    logp, y = check_inputs(scores, labels, kind)
    return reliability_bins(np.exp(logp.max(axis=1)), logp.argmax(axis=1) == y, n_bins=n_bins, closed=closed)


def ece_binary(scores, labels, *, kind: str, n_bins: int, closed: str = "right", norm: str = "l1") -> float:
    """Binary ECE on the positive-class posterior (paper 000, eq. 27)."""
    return binary_reliability(scores, labels, kind=kind, n_bins=n_bins, closed=closed).ece(norm)


def ece_top_label(scores, labels, *, kind: str, n_bins: int, closed: str = "right", norm: str = "l1") -> float:
    """Top-label (confidence) ECE, the paper's ECEmc (Sec. 2.5.2)."""
    return top_label_reliability(scores, labels, kind=kind, n_bins=n_bins, closed=closed).ece(norm)
