"""Every calibrator by name: the one place that maps the names used by configs, the command line,
saved model files and :func:`calib.evaluation.engine.evaluate` to the classes.

Other code chooses a calibrator by its name here and, where it needs them, constructor parameters
(e.g. a paper's "HB" row is ``("ova_histogram", {"n_bins": 15})``); it never maps names to classes
itself.
"""

from __future__ import annotations

from calib.calibrators.base import METHOD_NAMES, Calibrator
from calib.calibrators.beta import BetaCalibrator
from calib.calibrators.dirichlet import DirichletCalibrator
from calib.calibrators.histogram import HistogramBinning
from calib.calibrators.isotonic import IsotonicCalibrator
from calib.calibrators.matrix_scaling import MatrixScaling, VectorScaling
from calib.calibrators.platt import PlattCalibrator
from calib.calibrators.scaling import AffineCalibrator, TemperatureScaling
from calib.calibrators.trivial import MeanReplacement, OneVsAllHistogramBinning, OneVsAllIsotonic
from calib.validation import CalibInputError

# name -> (class, the constructor parameters that make it this method). One class can serve several
# methods: each form of vector scaling is a method of its own, named for what it multiplies.
METHODS: dict[str, tuple[type[Calibrator], dict[str, object]]] = {
    "dp": (AffineCalibrator, {}),
    "temperature": (TemperatureScaling, {}),
    "vector": (VectorScaling, {}),  # Guo et al. (2017): on the logits as given
    "vector_clr": (VectorScaling, {"features": "clr"}),  # on centred log-posteriors: kind- and scale-free
    "dirichlet_diagonal": (VectorScaling, {"features": "log_posteriors"}),  # Kull et al. (2019), W diagonal
    "vector_log_ratios": (VectorScaling, {"features": "last_class_ratios"}),  # the survey's (Silva Filho 2023)
    "matrix": (MatrixScaling, {}),  # Guo et al. (2017) on the logits, ODIR chosen by cross-validation
    "matrix_log_ratios": (MatrixScaling, {"features": "last_class_ratios", "reg_lambda": 0.0}),  # the survey's
    "dirichlet": (DirichletCalibrator, {}),  # Kull et al. (2019), ODIR chosen by cross-validation
    "beta": (BetaCalibrator, {}),
    "platt": (PlattCalibrator, {}),
    "isotonic": (IsotonicCalibrator, {}),
    "histogram": (HistogramBinning, {}),
    "ova_histogram": (OneVsAllHistogramBinning, {}),
    "ova_isotonic": (OneVsAllIsotonic, {}),
    "mean_replacement": (MeanReplacement, {}),
}
# Each method's class (for what a class can do, e.g. binary_only).
CALIBRATORS: dict[str, type[Calibrator]] = {name: cls for name, (cls, _) in METHODS.items()}

for _name, (_class, _params) in METHODS.items():  # the command-line names the base class's warnings use
    METHOD_NAMES.setdefault(_class, []).append((_name, _params))

# The calibrators a model file may hold (calib.calibrators.persistence) and `calib calibrate --method` fits.
SAVABLE = (
    "dp",
    "temperature",
    "vector",
    "vector_clr",
    "dirichlet_diagonal",
    "vector_log_ratios",
    "matrix",
    "matrix_log_ratios",
    "dirichlet",
    "beta",
    "isotonic",
    "histogram",
)


def make_calibrator(name: str, **params) -> Calibrator:
    """A new, unfitted calibrator by its registry name.

    Parameters
    ----------
    name : str
        A key of :data:`CALIBRATORS`.
    **params
        Constructor parameters of that class, over those that make it the method ``name``.

    Returns
    -------
    Calibrator
        The method's class with its parameters and ``params``.

    Examples
    --------
    >>> make_calibrator("histogram", n_bins=10)
    HistogramBinning(n_bins=10)
    """
    if name not in METHODS:
        raise CalibInputError(f"unknown calibrator {name!r}; the calibrators are {', '.join(METHODS)}")
    cls, defaults = METHODS[name]
    return cls(**(defaults | params))
