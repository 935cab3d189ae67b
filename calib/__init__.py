"""calib: evaluate and calibrate the posteriors of probabilistic classifiers.

The public API is the names in ``__all__``, grouped as below; everything else is an implementation
detail that may change. Posteriors are passed with an explicit ``kind`` ("probs", "logprobs" or
"logits"); bad input raises :class:`CalibInputError` naming the argument and the fix.

- scoring rules and decisions: :func:`cross_entropy`, :func:`brier`, :func:`normalized_risk`,
  :func:`bayes_decisions`, :func:`zero_one_costs`, :func:`calibration_loss`;
- calibration errors: :func:`ece_top_label`, :func:`ece_classwise`, :func:`ece_binary`,
  :func:`preset_ece`, :func:`smooth_ece`, :func:`smooth_ece_top_label`, :func:`ecd`, :func:`skce`,
  :func:`mmce`;
- resampling and tests: :func:`bootstrap`, :func:`bootstrap_ece`, :func:`resampling_test`,
  :func:`skce_asymptotic_test`, :func:`hosmer_lemeshow`;
- calibrators: :class:`TemperatureScaling`, :class:`AffineCalibrator`, :class:`VectorScaling`,
  :class:`MatrixScaling`, :class:`DirichletCalibrator`, :class:`PlattCalibrator`,
  :class:`BetaCalibrator`, :class:`HistogramBinning`, :class:`IsotonicCalibrator`, :class:`OneVsRest`,
  and :func:`calibrate` (train-on-test or cross-validated), :func:`save_calibrator`,
  :func:`load_calibrator`;
- data and summaries: :func:`load_posteriors`, :func:`evaluate`;
- diagrams: :func:`reliability_bins` (prepare) and :func:`reliability_bars` (plot).

Names are imported on first use, so ``import calib`` (and the ``calib`` command) loads only what
is used.

Examples
--------
>>> import calib
>>> round(calib.cross_entropy([[0.8, 0.2], [0.3, 0.7]], [0, 1], kind="probs"), 4)
0.2899
"""

from __future__ import annotations

import importlib

_HOMES = {
    "CalibInputError": "calib.validation",
    "cross_entropy": "calib.scores",
    "brier": "calib.scores",
    "normalized_risk": "calib.decisions",
    "bayes_decisions": "calib.decisions",
    "zero_one_costs": "calib.decisions",
    "calibration_loss": "calib.calibration_losses",
    "ece_top_label": "calib.calibration_error",
    "ece_classwise": "calib.calibration_error",
    "ece_binary": "calib.calibration_error",
    "reliability_bins": "calib.calibration_error",
    "preset_ece": "calib.ece_presets",
    "smooth_ece": "calib.kernel",
    "smooth_ece_top_label": "calib.kernel",
    "ecd": "calib.entropic",
    "skce": "calib.kernel_calibration",
    "mmce": "calib.kernel_calibration",
    "bootstrap": "calib.resampling",
    "bootstrap_ece": "calib.resampling",
    "resampling_test": "calib.significance",
    "skce_asymptotic_test": "calib.significance",
    "hosmer_lemeshow": "calib.significance",
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
    "evaluate": "calib.summary",
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
