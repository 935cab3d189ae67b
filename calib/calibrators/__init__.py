"""Post-hoc calibration transforms (scikit-learn style) and the protocols that train them."""

from calib.calibrators.base import Calibrator
from calib.calibrators.histogram import HistogramBinning
from calib.calibrators.isotonic import IsotonicCalibrator
from calib.calibrators.protocols import calibrate, cross_validate, fold_ids, held_out, train_on_test
from calib.calibrators.scaling import AffineCalibrator, TemperatureScaling

__all__ = [
    "AffineCalibrator",
    "Calibrator",
    "HistogramBinning",
    "IsotonicCalibrator",
    "TemperatureScaling",
    "calibrate",
    "cross_validate",
    "fold_ids",
    "held_out",
    "train_on_test",
]
