"""Every setting of an evaluation, in one typed object (:class:`EvaluationSettings`).

``calib.evaluate``, ``calib evaluate / compare`` and the streaming evaluation read their settings from
here and nowhere else: bins and binning, the smooth ECE's bandwidth, the calibrators and their folds,
the bootstrap, the samples the calibrators and the non-additive metrics may use, threads. The
defaults are the command's.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from numbers import Integral

from calib.validation import CalibInputError, Choice, check

BINNINGS = ("equal-width", "equal-mass")
# The calibrators an evaluation cross-validates by default: for every K, then by K (registry names,
# calib.calibrators.registry); vector scaling only while its 2K - 1 parameters stay few enough for
# five cross-validated fits to take seconds (above, it is left out and the output says so).
DEFAULT_CALIBRATORS = ("dp", "temperature")
DEFAULT_BINARY_CALIBRATORS = ("histogram", "isotonic")
DEFAULT_MULTICLASS_CALIBRATORS = ("vector_clr",)
VECTOR_SCALING_MAX_CLASSES = 100
# n_boot: 0 turns intervals off; fewer than 2 resamples give no interval, and past this many the intervals
# stop changing while the run keeps growing.
MAX_BOOTSTRAP = 100_000
# n_bins: more bins than this leave almost every bin of any data set empty or with one sample.
MAX_BINS = 10_000
# The bootstrap sums of the binned metrics hold (bins x classes x resamples) numbers; past this many bytes
# an evaluation is refused before it reads the data, with the resamples that fit.
MAX_BINNED_SUMS_BYTES = 2**31
# Numbers the binned sums keep per bin and resample, for each class and lens: 4 (the states of run_pass hold
# 4 (K + 1) (n_bins + 1) per resample for K > 2, 8 (n_bins + 1) for K = 2; counted here as 4 (K + 2) (n_bins + 1),
# a bound a test checks).
_TERMS_PER_BIN = 4


@dataclass(frozen=True)
class EvaluationSettings:
    """The settings of one evaluation (all have the ``calib evaluate`` defaults).

    Parameters
    ----------
    n_bins : int, default 15
        Bins of the binned ECEs and of the reliability diagram (1 .. 10000).
    binning : {"equal-width", "equal-mass"}, default "equal-width"
        Equal-width bins on [0, 1] (right-closed), or equal-mass bins (quantiles of the scores).
    smooth_bandwidth : float, optional
        The smooth ECE's kernel bandwidth; default None: the fixed point (Błasiok & Nakkiran (2023)).
    calibrators : tuple of str, optional
        The calibrators to cross-validate, by their names in :data:`calib.calibrators.registry.CALIBRATORS`;
        () for none; default None: dp and temperature, with histogram and isotonic for two classes and
        vector scaling for up to 100 classes.
    folds : int, default 5
        Cross-validation folds of the calibrators.
    n_boot : int, default 200
        Bootstrap resamples (0: no intervals; else 2 .. 100000).
    alpha : float, default 0.05
        1 - the intervals' level.
    seed : int, default 0
        Seed of the resamples, the folds and the subsamples (0 .. 2^32 - 1).
    fit_samples : int or None, default 1000000
        The calibrators are cross-validated on at most this many samples (a seeded random subset
        beyond); None: all samples.
    fit_cells : int or None, default 10000000
        ... and on at most this many scores (samples x classes), so that a fit's time and memory do not
        grow with K: 10000 samples of 1000 classes, all 1000000 samples of up to 10 classes; None: no bound.
    sample_limit : int, default 1000000
        Out of core, the metrics that need all their samples at once (smooth ECE, the CORP
        decomposition) use a seeded random subsample of at most this many rows.
    corp_test_samples : int, default 20000
        The MCB test resamples at most this many samples (a seeded random subset beyond).
    threads : int, default 2
        Calibrators fitted at once (each on one BLAS thread, so the results do not depend on it).
    metrics : tuple of str, optional
        The metrics to report (registry names, :mod:`calib.evaluation.metrics`); default None: all.

    Methods
    -------
    calibrators_for(n_classes)
        The calibrators to cross-validate for K classes, and what the defaults left out.
    fit_rows(n_classes)
        The calibrators' subsample size for K classes.
    replace(**changes)
        A copy with some fields changed (checked again).

    Source: the defaults are those of ``calib evaluate``: 15 equal-width bins (Guo et al. (2017)), the
    smooth ECE's fixed-point bandwidth (Błasiok & Nakkiran (2023)), 200 bootstrap resamples for basic
    intervals (Davison & Hinkley (1997), Sect. 5.2).

    Examples
    --------
    >>> EvaluationSettings(n_bins=10).n_bins
    10
    >>> EvaluationSettings(binning="quantile")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calib.validation.CalibInputError: binning must be one of equal-width, equal-mass; got 'quantile'
    """

    n_bins: int = 15
    binning: str = "equal-width"
    smooth_bandwidth: float | None = None
    calibrators: tuple[str, ...] | None = None
    folds: int = 5
    n_boot: int = 200
    alpha: float = 0.05
    seed: int = 0
    fit_samples: int | None = 10**6
    fit_cells: int | None = 10**7
    sample_limit: int = 10**6
    corp_test_samples: int = 20_000
    threads: int = 2
    metrics: tuple[str, ...] | None = None

    def __post_init__(self):
        for name, low in (("folds", 2), ("threads", 1), ("sample_limit", 100)):
            _check_int(getattr(self, name), name, low)
        _check_int(self.n_bins, "n_bins", 1, MAX_BINS)
        if (
            isinstance(self.n_boot, bool)
            or not isinstance(self.n_boot, Integral)
            or not (self.n_boot == 0 or 2 <= self.n_boot <= MAX_BOOTSTRAP)
        ):
            raise CalibInputError(
                f"n_boot must be 0 (no intervals) or between 2 and {MAX_BOOTSTRAP}; got {self.n_boot!r}"
            )
        _check_int(self.corp_test_samples, "corp_test_samples", 2)
        _check_int(self.seed, "seed", 0, 2**32 - 1)
        if self.fit_samples is not None:
            _check_int(self.fit_samples, "fit_samples", 10)
            if self.fit_samples < 2 * self.folds:
                problem = f"{self.folds} folds need at least {2 * self.folds} samples to fit on; fit_samples is "
                raise CalibInputError(
                    f"{problem}{self.fit_samples}: ask for fewer folds or more fit_samples",
                    cli_message=f"{problem.replace('fit_samples', '--fit-samples')}{self.fit_samples}: ask for "
                    "fewer --folds or more --fit-samples",
                )
        if self.fit_cells is not None:
            _check_int(self.fit_cells, "fit_cells", 1000)
        check(self.binning, Choice(BINNINGS), "binning")
        if not 0 < self.alpha < 1:
            raise CalibInputError(f"alpha must lie in (0, 1), e.g. 0.05 for 95 % intervals; got {self.alpha!r}")
        if self.smooth_bandwidth is not None and not 1e-5 <= float(self.smooth_bandwidth) <= 1:
            raise CalibInputError(f"smooth_bandwidth must lie in [1e-5, 1] (or None); got {self.smooth_bandwidth!r}")
        for name in ("calibrators", "metrics"):
            value = getattr(self, name)
            if value is not None:
                if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                    raise CalibInputError(f"{name} must be a sequence of names (or None); got {value!r}")
                object.__setattr__(self, name, tuple(value))

    def calibrators_for(self, n_classes: int) -> tuple[tuple[str, ...], str]:
        """The calibrators to cross-validate for K = ``n_classes``, and what the defaults left out (or "")."""
        if self.calibrators is not None:
            return self.calibrators, ""
        if n_classes == 2:
            return DEFAULT_CALIBRATORS + DEFAULT_BINARY_CALIBRATORS, ""
        if n_classes <= VECTOR_SCALING_MAX_CLASSES:
            return DEFAULT_CALIBRATORS + DEFAULT_MULTICLASS_CALIBRATORS, ""
        left_out = (
            f"vector scaling is left out by default above {VECTOR_SCALING_MAX_CLASSES} classes (its 2K - 1 "
            "parameters make five cross-validated fits take minutes); ask for it by name among the calibrators "
            "(calibrators=('dp', 'temperature', 'vector_clr'), --calibrators dp temperature vector_clr)"
        )
        return DEFAULT_CALIBRATORS, left_out

    def check_memory(self, n_classes: int, systems: int = 1) -> None:
        """Refuse, before any data is read, bins x resamples whose bootstrap sums for K = ``n_classes``
        (for each of ``systems`` compared systems) would take more than MAX_BINNED_SUMS_BYTES, naming the
        resamples that fit.

        Examples
        --------
        >>> EvaluationSettings(n_bins=1000, n_boot=20_000).check_memory(3)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calib.validation.CalibInputError: 20000 resamples of 1000 bins and 3 classes: ... (n_boot=13407) or ...
        """
        need = self.binned_sums_bytes(n_classes, systems)
        if need <= MAX_BINNED_SUMS_BYTES:
            return
        fits = MAX_BINNED_SUMS_BYTES // (need // (self.n_boot + 1)) - 1
        need /= 2**30
        problem = (
            f"{self.n_boot} resamples of {self.n_bins} bins and {n_classes} classes"
            + (f" in {systems} systems" if systems > 1 else "")
            + f": the binned metrics' bootstrap sums would take {need:.1f} GiB (the limit is "
            f"{MAX_BINNED_SUMS_BYTES / 2**30:.0f} GiB); ask for "
        )
        fewer = f"at most {fits} resamples ({{}}) or " if fits >= 2 else ""
        raise CalibInputError(
            problem + fewer.format(f"n_boot={fits}") + "fewer bins (n_bins)",
            cli_message=problem + fewer.format(f"--bootstrap {fits}") + "fewer bins (--n-bins)",
        )

    def binned_sums_bytes(self, n_classes: int, systems: int = 1) -> int:
        """Bytes the binned metrics' sums take for K = ``n_classes`` over the data and every resample (for
        each of ``systems``), counted from above (the module's _TERMS_PER_BIN).

        Examples
        --------
        >>> EvaluationSettings(n_bins=15, n_boot=200).binned_sums_bytes(10)  # 4 x 12 x 16 x 8 bytes x 201
        1234944
        """
        return _TERMS_PER_BIN * (n_classes + 2) * (self.n_bins + 1) * 8 * (self.n_boot + 1) * systems

    def fit_rows(self, n_classes: int) -> int:
        """The calibrators' subsample size for K = ``n_classes``: fit_samples and fit_cells / K, at least
        ten per fold (a bound that no data set reaches when both are None).

        Examples
        --------
        >>> EvaluationSettings().fit_rows(1000), EvaluationSettings().fit_rows(2)
        (10000, 1000000)
        """
        rows = [v for v in (self.fit_samples, None if self.fit_cells is None else self.fit_cells // n_classes) if v]
        return max(min(rows), 10 * self.folds) if rows else 2**62

    def replace(self, **changes) -> EvaluationSettings:
        """A copy with ``changes`` (checked like the original)."""
        values = {f.name: getattr(self, f.name) for f in fields(self)} | changes
        return EvaluationSettings(**values)


def _check_int(value, name: str, low: int, high: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < low or (high is not None and value > high):
        bound = f"an integer from {low} to {high}" if high is not None else f"an integer >= {low}"
        raise CalibInputError(f"{name} must be {bound}; got {value!r}")
