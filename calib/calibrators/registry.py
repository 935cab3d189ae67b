"""Every calibrator by name: the one place that maps the names used by configs, the command line,
saved model files and :func:`calib.evaluation.engine.evaluate` to the classes.

Other code chooses a calibrator by its name here and, where it needs them, constructor parameters
(e.g. a paper's "HB" row is ``("ova_histogram", {"n_bins": 15})``); it never maps names to classes
itself.
"""

from __future__ import annotations

from calib.calibrators.base import METHOD_NAMES, Calibrator
from calib.calibrators.beta import BetaCalibrator
from calib.calibrators.dirichlet import DirichletCalibrator, DirichletCalibratorCV
from calib.calibrators.histogram import HistogramBinning
from calib.calibrators.isotonic import IsotonicCalibrator
from calib.calibrators.matrix_scaling import MatrixScaling, VectorScaling
from calib.calibrators.platt import PlattCalibrator
from calib.calibrators.scaling import AffineCalibrator, TemperatureScaling
from calib.calibrators.trivial import MeanReplacement, OneVsAllHistogramBinning, OneVsAllIsotonic
from calib.validation import CalibInputError

CALIBRATORS: dict[str, type[Calibrator]] = {
    "dp": AffineCalibrator,
    "temperature": TemperatureScaling,
    "vector": VectorScaling,
    "matrix": MatrixScaling,
    "dirichlet": DirichletCalibrator,
    "dirichlet_cv": DirichletCalibratorCV,
    "beta": BetaCalibrator,
    "platt": PlattCalibrator,
    "isotonic": IsotonicCalibrator,
    "histogram": HistogramBinning,
    "ova_histogram": OneVsAllHistogramBinning,
    "ova_isotonic": OneVsAllIsotonic,
    "mean_replacement": MeanReplacement,
}

for _name, _class in CALIBRATORS.items():  # the command-line names the base class's warnings use
    METHOD_NAMES.setdefault(_class, _name)

# The calibrators a model file may hold (calib.calibrators.persistence) and `calib calibrate --method` fits.
SAVABLE = ("dp", "temperature", "vector", "matrix", "dirichlet", "beta", "isotonic", "histogram")


def make_calibrator(name: str, **params) -> Calibrator:
    """A new, unfitted calibrator by its registry name.

    Parameters
    ----------
    name : str
        A key of :data:`CALIBRATORS`.
    **params
        Constructor parameters of that class.

    Returns
    -------
    Calibrator
        ``CALIBRATORS[name](**params)``.

    Examples
    --------
    >>> make_calibrator("histogram", n_bins=10)
    HistogramBinning(n_bins=10)
    """
    if name not in CALIBRATORS:
        raise CalibInputError(f"unknown calibrator {name!r}; the calibrators are {', '.join(CALIBRATORS)}")
    return CALIBRATORS[name](**params)
