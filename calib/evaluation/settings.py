"""Every setting of an evaluation, in one typed object (:class:`EvaluationSettings`).

``calib.evaluate``, ``calib evaluate / compare`` and the streaming evaluation read their settings from
here and nowhere else: bins and binning, the smooth ECE's bandwidth, the calibrators and their folds,
the bootstrap, the samples the calibrators and the non-additive metrics may use, threads. The
defaults are the command's.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Annotated

from calib._internal.declared import check_fields, documented, option, setting
from calib.calibration_errors.binning import STRATEGIES
from calib.calibration_errors.kernel_calibration import MIN_PAIR_SUM_BANDWIDTH
from calib.calibrators.registry import CALIBRATORS
from calib.validation import CalibInputError, Choice, Integer, NBins, NFolds, Number, Seed

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
# The bootstrap sums of the binned metrics hold (bins x classes x resamples) numbers; past this many bytes
# an evaluation is refused before it reads the data, with the resamples that fit.
MAX_BINNED_SUMS_BYTES = 2**31
# Numbers the binned sums keep per bin and resample, for each class and lens: 5 (gaps, counts, score sums, outcome
# sums and the squared weights of the frequency intervals' effective sizes; the states of run_pass hold every key
# over all resamples, the point-only ones too: 5 (K + 1) (n_bins + 1) per resample for K > 2, 10 (n_bins + 1) for
# K = 2; counted here as 5 (K + 2) (n_bins + 1), a bound a test checks).
_TERMS_PER_BIN = 5


@documented
@dataclass(frozen=True)
class EvaluationSettings:
    """The settings of one evaluation (all have the ``calib evaluate`` defaults).

    Each is one declared field: its type, default, bounds and help, from which come its check, the command's
    option (``--`` + its name with dashes) and the Parameters below.

    Methods
    -------
    calibrators_for(n_classes)
        The calibrators to cross-validate for K classes, and what the defaults left out.
    fit_rows(n_classes)
        The calibrators' subsample size for K classes.
    replace(**changes)
        A copy with some fields changed (checked again).

    Source: the defaults are those of ``calib evaluate``: 15 equal-width bins (Guo et al. (2017)), the
    smooth ECE's fixed-point bandwidth (Błasiok & Nakkiran (2023)), the MMCE's bandwidth 0.4 (Kumar et al.
    (2018)), 200 bootstrap resamples (Davison & Hinkley (1997), Sect. 5.2).

    Examples
    --------
    >>> EvaluationSettings(n_bins=10).n_bins
    10
    >>> EvaluationSettings(binning="quantile")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calib.validation.CalibInputError: binning must be one of equal-width, equal-mass; got 'quantile'
    """

    n_bins: NBins = setting(15, "bins of the binned ECEs and of the reliability diagram")
    binning: Annotated[str, Choice(STRATEGIES)] = setting(
        "equal-width",
        "equal-width bins on [0, 1] (right-closed), or equal-mass bins (N / M scores each by rank; a tie shares a bin, "
        "on the side of a boundary nearer to it)",
    )
    smooth_bandwidth: Annotated[float, Number(1e-5, 1, closed=True)] | None = setting(
        None, "the smooth ECE's kernel bandwidth", none="the fixed point of Błasiok & Nakkiran (2023)"
    )
    mmce_bandwidth: Annotated[float, Number(MIN_PAIR_SUM_BANDWIDTH, 10)] = setting(
        0.4, "the Laplacian kernel bandwidth of the unbiased squared MMCE (Kumar et al. (2018)'s 0.4)"
    )
    calibrators: tuple[str, ...] | None = setting(
        None,
        f"the calibrators to cross-validate, by name ({', '.join(CALIBRATORS)})",
        none=f"{' and '.join(DEFAULT_CALIBRATORS)}, with {' and '.join(DEFAULT_BINARY_CALIBRATORS)} for two classes "
        f"and {' and '.join(DEFAULT_MULTICLASS_CALIBRATORS)} up to {VECTOR_SCALING_MAX_CLASSES} classes",
        empty="none",
    )
    folds: NFolds = setting(5, "cross-validation folds of the calibrators")
    n_boot: Annotated[int, Integer(2, MAX_BOOTSTRAP, zero="no intervals")] = setting(
        200, "bootstrap resamples of the intervals", deprecated=("bootstrap",)
    )
    alpha: Annotated[float, Number(0, 1)] = setting(0.05, "1 - the level of the intervals")
    seed: Seed = setting(0, "seed of the resamples, the folds and the subsamples")
    fit_samples: Annotated[int, Integer(minimum=10)] | None = setting(
        10**6,
        "the calibrators are cross-validated on at most this many samples (a seeded random subset beyond)",
        none="all samples",
        cli_none=0,
    )
    fit_cells: Annotated[int, Integer(minimum=1000)] | None = setting(
        10**7,
        "... and on at most this many scores (samples x classes), so that a fit's time and memory do not grow "
        "with K: 10000 samples of 1000 classes, all 1000000 samples of up to 10 classes",
        none="no bound",
        cli_none=0,
    )
    sample_limit: Annotated[int, Integer(minimum=100)] = setting(
        10**6,
        "the metrics that need all their samples at once (smooth ECE, MMCE, the CORP decomposition) and the "
        "equal-mass bin edges use a seeded random subsample of at most this many rows",
    )
    corp_test_samples: Annotated[int, Integer(minimum=2)] = setting(
        20_000, "the MCB test resamples at most this many samples (a seeded random subset beyond)"
    )
    resample_buckets: Annotated[int, Integer(64, 65536)] | None = setting(
        4096,
        "the rows after the first 64 x this many are resampled in this many buckets, each row's bucket a hash "
        "of its position (Chamandy et al. (2012)), so that the intervals cost one pass however large the data",
        none="every row resampled on its own",
        cli_none=0,
    )
    threads: Annotated[int, Integer(minimum=1)] = setting(
        2,
        "threads the evaluation runs at once: from 2, the pass over the data draws the next block's resample counts "
        "on a second thread, the calibrators are fitted this many at once and the smooth ECE's and MMCE's resamples "
        "computed this many groups at once; all run BLAS on one thread, so the results do not depend on it (on a "
        "Dask cluster, each partition runs on one worker thread)",
    )
    segment_depth: Annotated[int, Integer(1, 3)] = setting(
        2,
        "with several group columns (--groups A B ...), the segments tested and searched: each column's values and "
        "their crossings of up to this many columns",
    )
    min_segment: Annotated[int, Integer(minimum=1)] = setting(
        100,
        "segments with fewer rows (with sample weights: a smaller Kish effective size) are reported but neither "
        "tested nor searched: a calibration test of a few rows says little, and its chi-squared law is not yet "
        "reached",
    )
    search_draws: Annotated[int, Integer(minimum=19)] = setting(
        200,
        "outcome draws from the forecasts (the calibrated null) behind the p-value of the worst segment found: "
        "its smallest value is 1 / (1 + this)",
    )
    metrics: tuple[str, ...] | None = setting(
        None,
        "the metrics to report, by their names in calib.evaluation.metrics (e.g. NCE 'ECE top-label')",
        none="every metric that applies",
    )

    def __post_init__(self):
        check_fields(self)
        # The one rule across fields: each fold needs two samples to fit on.
        if self.fit_samples is not None and self.fit_samples < 2 * self.folds:
            problem = f"{self.folds} folds need at least {2 * self.folds} samples to fit on; fit_samples is "
            raise CalibInputError(
                f"{problem}{self.fit_samples}: ask for fewer folds or more fit_samples",
                cli_message=f"{problem.replace('fit_samples', option('fit_samples'))}{self.fit_samples}: ask for "
                f"fewer {option('folds')} or more {option('fit_samples')}",
            )

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
        calib.validation.CalibInputError: 20000 resamples of 1000 bins and 3 classes: ... (n_boot=10725) or ...
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
            cli_message=problem + fewer.format(f"{option('n_boot')} {fits}") + f"fewer bins ({option('n_bins')})",
        )

    def binned_sums_bytes(self, n_classes: int, systems: int = 1) -> int:
        """Bytes the binned metrics' sums take for K = ``n_classes`` over the data and every resample (for
        each of ``systems``), counted from above (the module's _TERMS_PER_BIN).

        Examples
        --------
        >>> EvaluationSettings(n_bins=15, n_boot=200).binned_sums_bytes(10)  # 5 x 12 x 16 x 8 bytes x 201
        1543680
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
