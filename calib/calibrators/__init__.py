"""Post-hoc calibration transforms (scikit-learn style) and the protocols that train them."""

from calib.calibrators.base import Calibrator
from calib.calibrators.beta import BetaCalibrator
from calib.calibrators.dirichlet import DirichletCalibrator
from calib.calibrators.folds import fold_ids
from calib.calibrators.histogram import HistogramBinning
from calib.calibrators.isotonic import IsotonicCalibrator
from calib.calibrators.matrix_scaling import MatrixScaling, VectorScaling
from calib.calibrators.one_vs_rest import OneVsRest
from calib.calibrators.persistence import load_calibrator, save_calibrator
from calib.calibrators.platt import PlattCalibrator
from calib.calibrators.protocols import (
    calibrate,
    cross_validate,
    cross_validated_folds,
    held_out,
    train_on_test,
)
from calib.calibrators.scaling import AffineCalibrator, TemperatureScaling
from calib.calibrators.selection import choose_calibrator, compare_calibrators
from calib.calibrators.trivial import (
    MeanReplacement,
    OneVsAllHistogramBinning,
    OneVsAllIsotonic,
    mrr_metrics,
)

__all__ = [
    "AffineCalibrator",
    "BetaCalibrator",
    "Calibrator",
    "DirichletCalibrator",
    "HistogramBinning",
    "IsotonicCalibrator",
    "MatrixScaling",
    "OneVsRest",
    "PlattCalibrator",
    "TemperatureScaling",
    "VectorScaling",
    "calibrate",
    "choose_calibrator",
    "compare_calibrators",
    "cross_validate",
    "cross_validated_folds",
    "fold_ids",
    "held_out",
    "load_calibrator",
    "save_calibrator",
    "train_on_test",
    "MeanReplacement",
    "OneVsAllHistogramBinning",
    "OneVsAllIsotonic",
    "mrr_metrics",
]
