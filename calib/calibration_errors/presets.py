"""Binned ECE as other libraries compute it: named presets, so numbers can be compared across tools.

The same scores give different ECEs in different libraries because of four choices: the edge rule
(a score on an inner edge goes to the lower bin, "right-closed" (a, b], or the upper bin), how the
edges are computed (k / M exactly, or ``linspace`` with edges such as 0.30000000000000004), where
p = 1.0 lands, and whether a binary problem is read as the positive-class probability or as the
top-label confidence. Read from each library's source (versions as of 2026), and checked bin by bin
against netcal 1.4.0 and torchmetrics 1.9.0 (outputs in tests/fixtures/peers/) and uncertainty-calibration
(kull2019 against a numpy re-implementation of the rule in its tests):

| preset                      | library, function                     | on an edge | edges            | p = 1.0   | M  |
|-----------------------------|---------------------------------------|------------|------------------|-----------|----|
| ``survey``                  | Silva Filho et al. (2023), Sect. 4.1  | lower bin  | k / M            | last bin  | 10 |
| ``sklearn``                 | scikit-learn ``calibration_curve``    | lower bin  | linspace         | last bin  | 5  |
| ``netcal``                  | netcal ``ECE``                        | upper bin  | linspace         | last bin  | 10 |
| ``torchmetrics``            | torchmetrics ``*CalibrationError``    | upper bin  | float32 linspace | extra bin | 15 |
| ``uncertainty_calibration`` | uncertainty-calibration ``get_ece``   | lower bin  | k / M            | last bin  | 15 |
| ``kull2019``                | Kull et al. (2019), ``classwise_ECE`` | upper bin  | linspace         | extra bin | 14 |

"lower bin" is right-closed (a, b]; "upper bin" is left-closed [a, b). Every preset reads a binary
problem (K = 2) as the probability of class 1 and K > 2 as the top-label confidence, except
sklearn, which has no multiclass curve, and kull2019, the class-wise ECE for every K (K = 2
included): the mean over the classes j of the one-vs-rest ECE of q_j against "the label is j".
kull2019 follows the code released with Kull et al. (2019) (``classwise_ECE`` and ``binary_ECE`` in
the repository dirichletcal/experiments_neurips, calib/utils/functions.py), whose "15 bins" are
``np.digitize`` on ``np.linspace(0, 1, 15)``: 14 left-closed bins [k/14, (k+1)/14) of width 1/14 on
float64 linspace edges, a score on an inner edge going to the upper bin, plus a 15th bin holding
p = 1 exactly (a class score of 1.0 never shares the bin of 0.95); bins weighed by their counts,
empty ones skipped. Its ``bins=B`` is ``n_bins=B - 1`` here, and its ``power=2`` is
``norm="squared"``. netcal clips scores to [eps, 1 - eps]; torchmetrics puts
p = 1.0 in an (M + 1)-th bin of its own and bins float32 scores on the edges of a float32
``torch.linspace``, as here. Those are not all k / M rounded to float32: at its default M = 15, six
differ by an ulp, and the scores 0.2, 0.4 and 7/15 fall below their edges (0.2 into [2/15, 3/15)).
All weigh bins by their counts and skip empty ones, and bin scores exactly as given (no edge
tolerance). Each preset is a :class:`~calib.calibration_errors.binned.BinnedCalibrationError` with
these settings. Example (tested): p = (0.45, 0.5, 0.55, 0.95, 1.0)
with labels (1, 0, 1, 1, 0) and 10 bins gives 0.29 for survey, sklearn and uncertainty_calibration,
0.31 for netcal and 0.33 for torchmetrics; kull2019 gives 0.31, the mean of 0.33 for class 1 and 0.29
for class 0.
"""

from __future__ import annotations

import dataclasses

from calib.calibration_errors.binned import BinnedCalibrationError
from calib.validation import Choice, check

# name -> (whose conventions, the estimator that follows them at the library's default M)
PRESETS = {
    "survey": ("Silva Filho et al. (2023)", BinnedCalibrationError("auto", 10, edge_tolerance=0.0)),
    "sklearn": (
        "scikit-learn calibration_curve",
        BinnedCalibrationError("binary", 5, edges="linspace", edge_tolerance=0.0),
    ),
    "netcal": (
        "netcal ECE",
        BinnedCalibrationError("auto", 10, closed="left", edges="linspace", edge_tolerance=0.0),
    ),
    "torchmetrics": (
        "torchmetrics CalibrationError",
        BinnedCalibrationError("auto", 15, closed="left", edges="float32", edge_tolerance=0.0, one_in_extra_bin=True),
    ),
    "uncertainty_calibration": (
        "uncertainty-calibration get_ece",
        BinnedCalibrationError("auto", 15, edge_tolerance=0.0),
    ),
    # np.digitize(p, np.linspace(0, 1, 15)): 14 bins [a, b) on linspace edges, and p = 1 in a 15th
    "kull2019": (
        "Kull et al. (2019) classwise_ECE",
        BinnedCalibrationError(
            "classwise", 14, closed="left", edges="linspace", edge_tolerance=0.0, one_in_extra_bin=True
        ),
    ),
}


def ece_preset(name: str, *, n_bins: int | None = None, norm: str = "l1") -> BinnedCalibrationError:
    """The binned ECE as a named library computes it, to compare numbers across tools.

    ECE = sum_m (|B_m| / N) |ybar(B_m) - sbar(B_m)| over the non-empty bins, as every preset weighs
    them, on the probability of class 1 for K = 2 and on the top-label confidence for K > 2, except
    "kull2019": the mean over the K classes of each class's one-vs-rest ECE (class-wise). The
    presets differ in the edge rule, how the edges are computed, where p = 1.0 lands and the default
    M (see the table of :mod:`calib.calibration_errors.presets`), so the same scores can give
    different values. Call the returned estimator on posteriors; O(N K + M) time.

    Source: Silva Filho et al. (2023), Sect. 4.1, for the "survey" preset; "kull2019" follows the
    code released with Kull et al. (2019); the others follow the code of the libraries they are
    named after (scikit-learn, netcal, torchmetrics, uncertainty-calibration), as tabulated in
    :mod:`calib.calibration_errors.presets`.

    Parameters
    ----------
    name : {"survey", "sklearn", "netcal", "torchmetrics", "uncertainty_calibration", "kull2019"}
        Whose binning to use. "sklearn" is binary only (it has no multiclass curve).
    n_bins : int, optional
        M; default None, the preset's own default (10, 5, 10, 15, 15 and 14 in the order above;
        kull2019's 14 bins of width 1/14 plus the bin of p = 1 are its code's "15 bins").
    norm : {"l1", "l2", "squared", "max"}, default "l1"
        "l1" is the ECE, "l2" its root-mean-square form (with the root), "squared" the same without
        the root, "max" the largest bin gap (MCE).

    Returns
    -------
    BinnedCalibrationError
        The configured estimator; call it as ``estimator(scores, labels, kind=...)``.

    Raises
    ------
    CalibInputError
        For an unknown ``name`` or ``norm``, or an invalid ``n_bins``.

    Examples
    --------
    >>> p1 = [0.45, 0.5, 0.55, 0.95, 1.0]
    >>> scores, labels = [[1 - p, p] for p in p1], [1, 0, 1, 1, 0]
    >>> [round(ece_preset(name, n_bins=10)(scores, labels, kind="probs"), 4)
    ...  for name in ("survey", "netcal", "torchmetrics", "kull2019")]
    [0.29, 0.31, 0.33, 0.31]
    """
    check(name, Choice(tuple(sorted(PRESETS))), "preset")
    estimator = PRESETS[name][1]  # replace() validates n_bins and norm as the estimator's constructor does
    return dataclasses.replace(estimator, n_bins=estimator.n_bins if n_bins is None else n_bins, norm=norm)
