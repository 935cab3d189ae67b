"""The config's blocks besides an experiment kind's own parameters, declared as dataclasses: a dataset, a
sweep, an experiment's reference (its published numbers), an own-set protocol's block (the root's keys are
:class:`pipeline.root.Root`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Annotated, Any, Literal

from calib.validation import Choice, Integer
from pipeline.parameters import Count, Fraction, Invalid, Positive, Seed
from pipeline.statuses import NON_VERDICTS

DEVIATION_CHECKS = ("rerun", "reading", "difference", "recorded")


def _rng_modes() -> tuple[str, ...]:
    """The generator's random-number modes (read when a value is checked: the generator loads SciPy, which a
    step that only reads this module's declarations, such as a fetch, does not need)."""
    from calib.data.synthetic import RNG_MODES

    return RNG_MODES


@dataclass(frozen=True, kw_only=True)
class GaussianSystems:
    """The settings of the Gaussian systems of Ferrer & Ramos (2024), Sec. 4
    (:func:`calib.data.synthetic.gaussian_posteriors`); one left out (None) takes that function's default."""

    n_classes: Annotated[int, Integer(minimum=2)]
    n_samples: Count
    prior1: Fraction
    variance: Positive
    scale: Positive
    mismatch_prior: Fraction | None = None
    rng: Annotated[str, Choice(_rng_modes)] | None = None

    def settings(self) -> dict:
        """The keyword arguments of :func:`calib.data.synthetic.gaussian_posteriors` that are given."""
        names = [f.name for f in fields(GaussianSystems)]
        return {name: getattr(self, name) for name in names if getattr(self, name) is not None}


@dataclass(frozen=True, kw_only=True)
class Dataset(GaussianSystems):
    """A synthetic dataset (configs/dataset/): the Gaussian systems drawn with ``seed``."""

    generator: Literal["gaussian"]
    seed: Seed = 0


@dataclass(frozen=True, kw_only=True)
class Grid:
    """Evenly spaced values from ``start``: ``num`` of them up to ``stop`` included, or one every ``step``
    below ``stop``."""

    start: float
    stop: float
    num: Count | None = None
    step: Positive | None = None

    def __post_init__(self):
        if (self.num is None) == (self.step is None):
            raise Invalid("num", "give either num (values from start to stop) or step (their spacing)")


# --- an experiment's reference block (read by pipeline/references.py) -------------------------------------


@dataclass(frozen=True, kw_only=True)
class _Cells:
    row: Any = None
    column: Any = None


@dataclass(frozen=True, kw_only=True)
class _Decimals(_Cells):
    decimals: Annotated[int, Integer(minimum=0)]


@dataclass(frozen=True, kw_only=True)
class _Caused(_Cells):
    cause: str = ""

    def __post_init__(self):
        if not self.cause:
            raise Invalid("cause", "every declared status or deviation needs its cause")


@dataclass(frozen=True, kw_only=True)
class _DeclaredStatus(_Caused):
    status: str

    def __post_init__(self):
        super().__post_init__()
        if self.status not in NON_VERDICTS:
            raise Invalid("status", f"not a status a config may declare; allowed: {', '.join(NON_VERDICTS)}")


@dataclass(frozen=True, kw_only=True)
class _Deviation(_Caused):
    check: Any

    def __post_init__(self):
        super().__post_init__()
        check = self.check if isinstance(self.check, str) else next(iter(self.check), None) if self.check else None
        if check not in DEVIATION_CHECKS:
            raise Invalid("check", f"unknown check {check!r}; allowed: {', '.join(DEVIATION_CHECKS)}")


@dataclass(frozen=True, kw_only=True)
class _SecondReading(_Caused):
    ours: Any


@dataclass(frozen=True, kw_only=True)
class _Repeat(_Cells):
    of: str


@dataclass(frozen=True, kw_only=True)
class _NotPrinted(_Cells):
    source: str


@dataclass(frozen=True, kw_only=True)
class Reference:
    """Where an experiment's published numbers are (configs/reference/) and what is declared about cells."""

    file: str
    layout: Literal["wide", "long"]
    row: Any = None
    column: Any = None
    value: Any = None
    skip_values: list[str] = field(default_factory=list)
    percent_columns: list[str] = field(default_factory=list)
    reading: Literal["primary", "second"] = "primary"
    reading_cause: str | None = None
    decimals: list[_Decimals] = field(default_factory=list)
    exact: list[_Cells] = field(default_factory=list)
    cells: list[_DeclaredStatus] = field(default_factory=list)
    deviations: list[_Deviation] = field(default_factory=list)
    second_readings: list[_SecondReading] = field(default_factory=list)
    repeats: list[_Repeat] = field(default_factory=list)
    not_printed: list[_NotPrinted] = field(default_factory=list)
    fitted: str | None = None

    def __post_init__(self):
        if self.reading == "second" and not self.reading_cause:
            raise Invalid("reading_cause", "a second reading needs a reading_cause")


# --- sweeps and the root ----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Plot:
    """How a sweep's aggregate figure shows its points: the value columns shown (``y``; every one if None),
    a logarithmic x axis, the y axis's label."""

    y: list[str] | None = None
    log_x: bool = False
    ylabel: str = "value"


@dataclass(frozen=True, kw_only=True)
class Sweep:
    """A declared sweep (configs/sweep/, :mod:`pipeline.sweeps`): an experiment and a grid of its keys."""

    title: str
    experiment: Any
    grid: dict[str, list[Any]]
    plot: Plot = field(default_factory=Plot)
    name: str | None = None


@dataclass(frozen=True, kw_only=True)
class OwnProtocol:
    """What a protocol of configs/experiment/own/ runs on: sets of ``classes`` ("any", "binary": K = 2,
    "multiclass": K > 2); whether it takes a set's sample ``weights``; the paper's experiment whose rows its
    table shows first (``beside``); a declaration key the set must give (``needs``)."""

    classes: Literal["any", "binary", "multiclass"]
    weights: bool = False
    beside: str | None = None
    needs: Literal["calibration_file"] | None = None
