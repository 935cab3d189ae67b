"""calib: evaluate and calibrate the posteriors of probabilistic classifiers.

The public API is the names in ``__all__``, grouped as below; everything else is an implementation
detail that may change. Posteriors are passed with an explicit ``kind`` ("probs", "logprobs" or
"logits"); bad input raises :class:`CalibInputError` naming the argument and the fix.

- scoring rules and decisions: :func:`cross_entropy`, :func:`brier`, :func:`normalized_risk`,
  :func:`bayes_decisions`, :func:`zero_one_costs`, :func:`calibration_loss`;
- calibration errors: :class:`BinnedCalibrationError` (every binned ECE / MCE: top-label, binary,
  class-wise or canonical, any binning and norm), :func:`ece_preset` (other libraries' binnings),
  :func:`smooth_ece`, :func:`smooth_ece_top_label`, :func:`ecd`, :func:`skce`, :func:`mmce`;
- CORP (Dimitriadis et al. (2021)): :func:`corp_curve` (the PAV reliability curve),
  :func:`corp_bands`, :func:`corp_decomposition` (S = MCB - DSC + UNC), :func:`mcb_test`,
  :func:`corp_report` (both at once for several scores), :func:`lens_decomposition` (K classes),
  :func:`murphy_diagram` (mean elementary scores over thresholds);
- resampling and tests: :func:`bootstrap`, :func:`bootstrap_ece`, :func:`resampling_test`,
  :func:`skce_asymptotic_test`, :func:`hosmer_lemeshow`, :func:`spiegelhalter_z`;
- calibrators: :class:`TemperatureScaling`, :class:`AffineCalibrator`, :class:`VectorScaling`,
  :class:`MatrixScaling`, :class:`DirichletCalibrator`, :class:`PlattCalibrator`,
  :class:`BetaCalibrator`, :class:`HistogramBinning`, :class:`IsotonicCalibrator`, :class:`OneVsRest`,
  and :func:`calibrate` (train-on-test or cross-validated), :func:`save_calibrator`,
  :func:`load_calibrator`;
- data and summaries: :func:`load_posteriors`, :class:`TableOptions` (how a table is read),
  :func:`evaluate`, :func:`evaluate_chunks`, :func:`evaluate_dataset` (a Parquet data set, here or on a
  Dask cluster);
- diagrams: :func:`reliability_bins` (prepare) and :func:`reliability_bars` (plot).

Names are imported on first use, so ``import calib`` (and the ``calib`` command) loads only what
is used.

Examples
--------
>>> import calib
>>> round(calib.cross_entropy([[0.8, 0.2], [0.3, 0.7]], [0, 1], kind="probs"), 4)
0.2899
>>> ece = calib.BinnedCalibrationError(target="top_label", n_bins=10)
>>> round(ece([[0.8, 0.2], [0.3, 0.7]], [0, 1], kind="probs"), 4)
0.25
"""

from __future__ import annotations

import importlib

_HOMES = {
    "CalibInputError": "calib.validation",
    "cross_entropy": "calib.scoring.scores",
    "brier": "calib.scoring.scores",
    "normalized_risk": "calib.scoring.decisions",
    "bayes_decisions": "calib.scoring.decisions",
    "zero_one_costs": "calib.scoring.decisions",
    "calibration_loss": "calib.scoring.calibration_losses",
    "BinnedCalibrationError": "calib.calibration_errors.binned",
    "reliability_bins": "calib.calibration_errors.binned",
    "ece_preset": "calib.calibration_errors.presets",
    "smooth_ece": "calib.calibration_errors.smoothing",
    "smooth_ece_top_label": "calib.calibration_errors.smoothing",
    "ecd": "calib.calibration_errors.entropic",
    "corp_curve": "calib.calibration_errors.corp",
    "corp_decomposition": "calib.calibration_errors.corp",
    "corp_bands": "calib.calibration_errors.corp_bands",
    "mcb_test": "calib.calibration_errors.corp",
    "corp_report": "calib.calibration_errors.corp",
    "lens_decomposition": "calib.calibration_errors.corp_lenses",
    "murphy_diagram": "calib.scoring.murphy",
    "skce": "calib.calibration_errors.kernel_calibration",
    "mmce": "calib.calibration_errors.kernel_calibration",
    "bootstrap": "calib.resampling.bootstrap",
    "bootstrap_ece": "calib.resampling.bootstrap",
    "resampling_test": "calib.resampling.significance",
    "skce_asymptotic_test": "calib.resampling.significance",
    "hosmer_lemeshow": "calib.resampling.significance",
    "spiegelhalter_z": "calib.resampling.significance",
    "TemperatureScaling": "calib.calibrators",
    "AffineCalibrator": "calib.calibrators",
    "VectorScaling": "calib.calibrators",
    "MatrixScaling": "calib.calibrators",
    "DirichletCalibrator": "calib.calibrators",
    "PlattCalibrator": "calib.calibrators",
    "BetaCalibrator": "calib.calibrators",
    "HistogramBinning": "calib.calibrators",
    "IsotonicCalibrator": "calib.calibrators",
    "OneVsRest": "calib.calibrators",
    "calibrate": "calib.calibrators",
    "save_calibrator": "calib.calibrators",
    "load_calibrator": "calib.calibrators",
    "load_posteriors": "calib.data.real",
    "TableOptions": "calib.data.table_options",
    "evaluate": "calib.evaluation.engine",
    "evaluate_chunks": "calib.evaluation.engine",
    "evaluate_dataset": "calib.evaluation.router",
    "EvaluationSettings": "calib.evaluation.settings",
    "reliability_bars": "calib.plots.reliability",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    """Import a public name from its module on first use (PEP 562)."""
    if name not in _HOMES:
        raise AttributeError(f"module 'calib' has no attribute {name!r}; the public names are calib.__all__")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
