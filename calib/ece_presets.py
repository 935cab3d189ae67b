"""Binned ECE as other libraries compute it: named presets, so numbers can be compared across tools.

The same scores give different ECEs in different libraries because of four choices: the edge rule
(a score on an inner edge goes to the lower bin, "right-closed" (a, b], or the upper bin), how the
edges are computed (k / M exactly, or ``linspace`` with edges such as 0.30000000000000004), where
p = 1.0 lands, and whether a binary problem is read as the positive-class probability or as the
top-label confidence. Read from each library's source (versions as of 2026), and checked bin by bin
against netcal 1.4.0 and torchmetrics 1.9.0 (outputs in tests/fixtures/peers/) and uncertainty-calibration:

| preset                      | library, function                    | on an edge | edges            | p = 1.0   | M  |
|-----------------------------|--------------------------------------|------------|------------------|-----------|----|
| ``survey``                  | Silva Filho et al. (2023), Sect. 4.1 | lower bin  | k / M            | last bin  | 10 |
| ``sklearn``                 | scikit-learn ``calibration_curve``   | lower bin  | linspace         | last bin  | 5  |
| ``netcal``                  | netcal ``ECE``                       | upper bin  | linspace         | last bin  | 10 |
| ``torchmetrics``            | torchmetrics ``*CalibrationError``   | upper bin  | float32 linspace | extra bin | 15 |
| ``uncertainty_calibration`` | uncertainty-calibration ``get_ece``  | lower bin  | k / M            | last bin  | 15 |

"lower bin" is right-closed (a, b]; "upper bin" is left-closed [a, b). Every preset reads a binary
problem (K = 2) as the probability of class 1 and K > 2 as the top-label confidence, except
sklearn, which has no multiclass curve. netcal clips scores to [eps, 1 - eps]; torchmetrics puts
p = 1.0 in an (M + 1)-th bin of its own and bins float32 scores on the edges of a float32
``torch.linspace``, as here. Those are not all k / M rounded to float32: at its default M = 15, six
differ by an ulp, and the scores 0.2, 0.4 and 7/15 fall below their edges (0.2 into [2/15, 3/15)).
All weigh bins by their counts and skip empty ones. Example (tested): p = (0.45, 0.5, 0.55, 0.95, 1.0)
with labels (1, 0, 1, 1, 0) and 10 bins gives 0.29 for survey, sklearn and uncertainty_calibration,
0.31 for netcal and 0.33 for torchmetrics.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calib.binning import bin_statistics, locate
from calib.calibration_error import NORMS, ReliabilityBins
from calib.validation import CalibInputError, as_labels, as_probs, check_positive_int, top_label


@dataclass(frozen=True)
class EcePreset:
    """One library's binning conventions (see the module table)."""

    library: str
    closed: str
    edges: str
    one_in_extra_bin: bool
    multiclass: bool
    n_bins: int


PRESETS = {
    "survey": EcePreset("Silva Filho et al. (2023)", "right", "exact", False, True, 10),
    "sklearn": EcePreset("scikit-learn calibration_curve", "right", "linspace", False, False, 5),
    "netcal": EcePreset("netcal ECE", "left", "linspace", False, True, 10),
    "torchmetrics": EcePreset("torchmetrics CalibrationError", "left", "float32", True, True, 15),
    "uncertainty_calibration": EcePreset("uncertainty-calibration get_ece", "right", "exact", False, True, 15),
}


def preset_edges(n_bins: int, edges: str) -> np.ndarray:
    """M + 1 edges: ``exact`` k / M, ``linspace`` (float64) or ``float32`` (torchmetrics' float32 linspace)."""
    m = check_positive_int(n_bins, "n_bins")
    if edges == "exact":
        return np.arange(m + 1) / m
    if edges == "linspace":
        return np.linspace(0.0, 1.0, m + 1)
    if edges == "float32":
        return torch_linspace_float32(m)
    raise CalibInputError(f"edges must be 'exact', 'linspace' or 'float32'; got {edges!r}")


def torch_linspace_float32(m: int) -> np.ndarray:
    """``torch.linspace(0, 1, m + 1, dtype=torch.float32)`` (torchmetrics' bin edges), as float64.

    torch takes step = 1 / m in float32, computes the first half as step * k and the second as
    1 - step * (m - k), and its vectorized CPU kernels (AVX2, AVX512) round each once to float32 (a
    fused multiply-add): identical to torch 2.13 with either kernel for every m <= 3000 and at 10^4,
    10^5 and 10^6. torch's scalar fallback (``ATEN_CPU_CAPABILITY=default``) rounds step * (m - k)
    first, which moves a few upper edges by one float32 ulp (m = 15: 0.8 -> 0.79999995).
    """
    step = np.float64(np.float32(1.0) / np.float32(m))
    k = np.arange(m + 1)
    # step has 24 significant bits, so both products and 1 - step * (m - k) are exact in float64 for
    # m < 2^24: the cast below is the one rounding that torch's fused multiply-add makes.
    edges = np.where(k < (m + 1) // 2, step * k, 1.0 - step * (m - k))
    return edges.astype(np.float32).astype(np.float64)


def preset_reliability(scores, labels, *, kind: str, preset: str, n_bins: int | None = None) -> ReliabilityBins:
    """Reliability bins of ``scores`` as library ``preset`` forms them (positive class for K = 2, else top-label)."""
    if preset not in PRESETS:
        raise CalibInputError(f"preset must be one of {sorted(PRESETS)}; got {preset!r}")
    spec = PRESETS[preset]
    probs = as_probs(scores, kind)
    y = as_labels(labels, probs.shape[0], probs.shape[1])
    if probs.shape[1] != 2 and not spec.multiclass:
        raise CalibInputError(
            f"preset {preset!r} ({spec.library}) is binary only: scores need K = 2 columns, got {probs.shape[1]}"
        )
    m = spec.n_bins if n_bins is None else check_positive_int(n_bins, "n_bins")
    edges = preset_edges(m, spec.edges)
    n_slots = m + 1 if spec.one_in_extra_bin else m
    stats = _statistics(probs, y, edges, n_slots, spec)
    if spec.one_in_extra_bin:
        edges = np.r_[edges, 1.0]
    return ReliabilityBins(edges, stats.counts, stats.mean_score, stats.frequency)


def preset_ece(scores, labels, *, kind: str, preset: str, n_bins: int | None = None, norm: str = "l1") -> float:
    """Binned ECE computed with the binning conventions of a named library, to compare numbers across tools.

    ECE = sum_m (|B_m| / N) |ybar(B_m) - sbar(B_m)| over the non-empty bins, as every preset weighs
    them, on the probability of class 1 for K = 2 and on the top-label confidence for K > 2. The
    presets differ in the edge rule, how the edges are computed, where p = 1.0 lands and the default
    M (see the table of :mod:`calib.ece_presets`), so the same scores can give different values.
    O(N K + M) time.

    Source: Silva Filho et al. (2023), Sect. 4.1, for the "survey" preset; the others follow the
    code of the libraries they are named after (scikit-learn, netcal, torchmetrics,
    uncertainty-calibration), as tabulated in :mod:`calib.ece_presets`.

    Parameters
    ----------
    scores : array_like of shape (N, K)
        Posteriors of N samples, of kind ``kind``.
    labels : array_like of shape (N,)
        The true class of each sample, integers in [0, K).
    kind : {"probs", "logprobs", "logits"}
        What ``scores`` hold; nothing is guessed from the values.
    preset : {"survey", "sklearn", "netcal", "torchmetrics", "uncertainty_calibration"}
        Whose binning to use. "sklearn" is binary only (it has no multiclass curve).
    n_bins : int, optional
        M; default None, the preset's own default (10, 5, 10, 15 and 15 in the order above).
    norm : {"l1", "l2", "squared", "max"}, default "l1"
        "l1" is the ECE, "l2" its root-mean-square form (with the root), "squared" the same without
        the root, "max" the largest bin gap (MCE).

    Returns
    -------
    float
        The binned calibration error, a fraction.

    Raises
    ------
    CalibInputError
        For invalid inputs, an unknown ``preset`` or ``norm``, an invalid ``n_bins``, or K != 2
        with the binary-only "sklearn" preset.

    Examples
    --------
    >>> p1 = [0.45, 0.5, 0.55, 0.95, 1.0]
    >>> scores, labels = [[1 - p, p] for p in p1], [1, 0, 1, 1, 0]
    >>> [round(preset_ece(scores, labels, kind="probs", preset=name, n_bins=10), 4)
    ...  for name in ("survey", "netcal", "torchmetrics")]
    [0.29, 0.31, 0.33]
    """
    if norm not in NORMS:
        raise CalibInputError(f"norm must be one of {NORMS}; got {norm!r}")
    return preset_reliability(scores, labels, kind=kind, preset=preset, n_bins=n_bins).ece(norm)


def _statistics(probs: np.ndarray, y: np.ndarray, edges: np.ndarray, n_slots: int, spec: EcePreset):
    if probs.shape[1] == 2:
        score, outcome = probs[:, 1], y == 1
    else:
        score, top = top_label(probs)
        outcome = top == y
    if spec.edges == "float32":  # torchmetrics bins float32 tensors on float32 edges
        score = score.astype(np.float32).astype(np.float64)
    ids = locate(edges, score, side="right" if spec.closed == "left" else "left")
    ids -= 1
    np.clip(ids, 0, n_slots - 1, out=ids)
    return bin_statistics(ids, score, outcome, n_slots)
