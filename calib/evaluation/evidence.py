"""The calibrators' evidence in an evaluation: each asked-for calibrator cross-validated on the fitting
subsample (at most ``fit_samples`` rows and ``fit_cells`` scores, on shared folds), its relative
calibration loss RCL = (EPSR_raw - EPSR_cal) / EPSR_raw of the log loss and the Brier score
(Ferrer & Ramos (2024), eq. 33), its per-sample gain with a corrected resampled t interval over the folds
(Nadeau & Bengio (2003)), and the recommendation: the calibrator of largest mean gain among those whose
interval lies above 0 (in log loss; in Brier score when the raw log loss is infinite).
"""

from __future__ import annotations

import warnings

import numpy as np

from calib._internal.rows import weighted_mean
from calib._internal.threads import thread_pool
from calib.calibrators.folds import fold_ids
from calib.calibrators.protocols import cross_validated_folds
from calib.calibrators.registry import CALIBRATORS, make_calibrator
from calib.evaluation.passes import Subsample
from calib.evaluation.progress import Phase
from calib.evaluation.results import Metric, Summary
from calib.evaluation.settings import EvaluationSettings, option
from calib.scoring.scores import brier_losses
from calib.validation import CalibInputError, CalibInputWarning

# The maps of logits as given (calib.calibrators.matrix_scaling) by the methods that are the same maps of the
# log-posteriors, which an evaluation cross-validates instead.
LOG_POSTERIOR_FORMS = {"vector": "dirichlet_diagonal", "matrix": "dirichlet"}
# The calibrators' names in the output (their registry names otherwise).
CALIBRATOR_LABELS = {"dp": "DP (affine)", "temperature": "temperature", "vector_clr": "vector scaling (centred)"}


def calibrators_of(settings: EvaluationSettings, n_classes: int) -> tuple[tuple[str, ...], str]:
    """The calibrators to assess for K = ``n_classes`` and the note on any left out; unknown or binary-only
    names for K > 2 are refused.

    Examples
    --------
    >>> calibrators_of(EvaluationSettings(calibrators=("temperature",)), 3)
    (('temperature',), '')
    """
    names, left_out = settings.calibrators_for(n_classes)
    for name in names:
        if name not in CALIBRATORS:
            known = f"unknown {name!r}; known: {', '.join(CALIBRATORS)}"
            raise CalibInputError(f"calibrators: {known}", cli_message=f"--calibrators: {known} (or none)")
        if CALIBRATORS[name].binary_only and n_classes != 2:
            what = f"{name} is for two classes; these scores have {n_classes}"
            raise CalibInputError(f"calibrators: {what}", cli_message=f"--calibrators: {what}; leave it out")
        if make_calibrator(name).fits_logits():
            same = LOG_POSTERIOR_FORMS[name]
            what = (
                f"{name} maps the logits as given, which an evaluation does not keep (it works on log-posteriors, "
                f"from files of any kind and in chunks); its map on the log-posteriors is {same}"
            )
            raise CalibInputError(
                f"calibrators: {what}: ask for {same}, or fit {name} with calibrate(...)",
                cli_message=f"--calibrators: {what}: ask for {same}, or fit it with calib calibrate --method {name}",
            )
    return names, left_out


def calibrator_evidence(
    summary: Summary, names, fitting: Subsample, settings: EvaluationSettings, say, sample_weight=None
) -> None:
    """Fill ``summary`` with the evidence on the calibrators ``names``: RCL of the log loss and the Brier
    score of each (in ``summary.metrics``), cross-validated on the ``fitting`` subsample (its arrays: the
    log-posteriors and labels), each one's mean gain per sample with its interval (``summary.gains``), and the
    recommendation; ``say`` receives progress messages.

    Parameters
    ----------
    summary : Summary
        The evaluation's summary so far (its ``n_samples``), filled in place.
    names : sequence of str
        The calibrators (:func:`calibrators_of`); none: the recommendation says none was asked for.
    fitting : Subsample
        The rows the calibrators are cross-validated on.
    settings : EvaluationSettings
        Folds, threads, resamples, seed and alpha.
    say : callable
        Receives progress messages.
    sample_weight : array of shape (n,), optional
        The fitting rows' sample weights: each calibrator is fitted with them, and every mean loss, gain
        and fold mean is weighted (None: unweighted).

    Raises
    ------
    CalibInputError
        When no class has as many samples as there are folds.
    """
    if not names:
        summary.recommended = "none assessed: no calibrator was asked for"
        return
    logp, y = fitting.arrays[0], fitting.arrays[1]
    summary.fit_samples = y.size
    if y.size < summary.n_samples:
        bound = "fit_samples" if y.size == settings.fit_samples else f"fit_cells: {settings.fit_cells} scores"
        summary.notes.append(
            f"calibrators: cross-validated on a seeded random {y.size} of the {summary.n_samples} samples ({bound})"
        )
    largest = int(np.bincount(y).max())
    if largest < settings.folds:
        problem = (
            f"labels: the calibrators are cross-validated in {settings.folds} folds, which needs a class with at "
            f"least {settings.folds} samples; the largest class here has {largest}. Ask for fewer folds"
        )
        fewer = f" (folds={largest})" if largest >= 2 else ""
        raise CalibInputError(
            f"{problem}{fewer}, evaluate more samples, or no calibrator (calibrators=())",
            cli_message=f"{problem}{fewer.replace('folds=', '--folds ')}, evaluate more samples, or no calibrator "
            "(--calibrators none)",
        )
    if sample_weight is not None and not sample_weight.any():
        raise CalibInputError(
            f"sample_weight: the {y.size} rows the calibrators are fitted on all have weight 0; fit on more rows "
            "(fit_samples) or assess no calibrator (calibrators=())",
            cli_message=f"--weights: the {y.size} rows the calibrators are fitted on all have weight 0; fit on "
            f"more rows ({option('fit_samples')}) or assess no calibrator (--calibrators none)",
        )
    raw = {score: _per_sample_loss(logp, y, score) for score in ("log loss", "Brier")}
    score = "log loss" if np.isfinite(raw["log loss"][_counted(sample_weight, y.size)]).all() else "Brier"
    raw_means = {name: weighted_mean(values, sample_weight) for name, values in raw.items()}
    gains = {}
    folds = fold_ids(y, n_folds=settings.folds, seed=settings.seed).astype(np.min_scalar_type(settings.folds - 1))
    with warnings.catch_warnings(record=True) as notes:
        warnings.simplefilter("always", CalibInputWarning)
        for name, own in _cross_validated(logp, y, folds, names, settings, say, sample_weight):
            label = CALIBRATOR_LABELS.get(name, name)
            for short, loss in (("CE", "log loss"), ("BS", "Brier")):
                relative = _relative_loss(raw_means[loss], weighted_mean(own[loss], sample_weight))
                summary.metrics[f"RCL-{short} {label}"] = Metric(relative)
            with np.errstate(invalid="ignore"):  # inf - inf on a row of weight 0, which counts nothing
                gains[label] = np.where(_counted(sample_weight, y.size), raw[score] - own[score], 0.0)
    _retell(notes, len(names) * settings.folds)
    summary.gain_score = score
    for label, gain in gains.items():
        bounds = cross_validated_interval(gain, folds, settings.alpha, sample_weight) if settings.n_boot else ()
        how = {"method": GAIN_INTERVAL, "estimand": GAIN_ESTIMAND} if bounds else {}
        summary.gains[label] = Metric(weighted_mean(gain, sample_weight), *bounds, **how)
    summary.recommended = _recommendation(summary.gains, score, settings)


# The method of the gains' intervals, as the output names it, and what they are for.
GAIN_INTERVAL = "corrected resampled t (Nadeau & Bengio (2003))"
GAIN_ESTIMAND = "the expected gain on new data of the calibrator fitted on a fold's training rows"


def cross_validated_interval(
    values: np.ndarray, folds: np.ndarray, alpha: float, sample_weight=None
) -> tuple[float, float]:
    """An interval for the expected value of a cross-validated per-sample quantity (``values``, each sample's
    held-out gain, on the ``folds`` it was held out in): the corrected resampled t interval.

    With the K fold means G_k, their sample variance s^2 and the mean G of all values, the interval is
    G -/+ t_{K-1}(1 - alpha/2) sqrt((1/K + n_test/n_train) s^2), n_test/n_train = 1/(K - 1) for K folds:
    the 1/K of a t interval over independent folds, plus the correlation that the folds' overlapping
    training sets give their means. A bootstrap of the samples with the fitted models held fixed leaves
    the fits' own variation out (it covered a calibrated model's expected gain in 0.90 of 150 data sets
    in a check before this interval replaced it; ``benchmarks/coverage.py`` measures this one). An infinite
    mean is its own interval.

    Source: Nadeau & Bengio (2003) (the corrected resampled t test, its variance correction).

    Parameters
    ----------
    values : array of shape (N,)
        The per-sample values.
    folds : array of shape (N,)
        Each sample's fold in [0, K), K >= 2.
    alpha : float
        1 - the level.
    sample_weight : array of shape (N,), optional
        The samples' weights: G and the fold means are weighted means (None: plain means).

    Returns
    -------
    (float, float)

    Examples
    --------
    >>> values = np.array([0.1, 0.3, 0.2, 0.4, 0.0, 0.2])
    >>> low, high = cross_validated_interval(values, np.array([0, 0, 1, 1, 2, 2]), 0.05)
    >>> round(low, 4), round(high, 4)
    (-0.1928, 0.5928)
    """
    mean = weighted_mean(values, sample_weight)
    if not np.isfinite(mean):
        return mean, mean
    n_folds = int(folds.max()) + 1
    w = np.ones(values.size) if sample_weight is None else sample_weight
    fold_means = np.bincount(folds, weights=w * values, minlength=n_folds) / np.bincount(folds, w, n_folds)
    spread = np.sqrt((1 / n_folds + 1 / (n_folds - 1)) * np.var(fold_means, ddof=1))
    from scipy.stats import t as student_t  # here: an evaluation without calibrators does not load scipy.stats

    half = float(student_t.ppf(1 - alpha / 2, n_folds - 1) * spread)
    return mean - half, mean + half


def _cross_validated(logp, y, folds, names, settings: EvaluationSettings, say, sample_weight):
    """Each calibrator's per-sample log loss and Brier score, cross-validated on the shared ``folds``,
    ``threads`` calibrators at a time on small problems (BLAS on one thread: the same bits however they run)."""
    fits = Phase("cross-validated fits", len(names) * settings.folds, say)
    threads = settings.threads

    def fit_folds(name: str) -> dict[str, np.ndarray]:
        say(f"{name}: {settings.folds}-fold cross-validated fit")
        losses = {"log loss": np.empty(y.size), "Brier": np.empty(y.size)}
        folded = cross_validated_folds(make_calibrator(name), logp, y, kind="logprobs", folds=folds,
                                       sample_weight=sample_weight)  # fmt: skip
        for test, calibrated in folded:
            for score, values in losses.items():
                values[test] = _per_sample_loss(calibrated, y[test], score)
            fits.advance()
        return losses

    with thread_pool(threads) as pool:
        running = [(name, pool.submit(fit_folds, name)) for name in names]
        for name, fitted in running:
            yield name, fitted.result()


def _per_sample_loss(logp: np.ndarray, y: np.ndarray, score: str) -> np.ndarray:
    return -logp[np.arange(y.size), y] if score == "log loss" else brier_losses(logp, y, "mean")


def _relative_loss(raw_mean: float, calibrated_mean: float) -> float:
    """RCL = (raw - calibrated) / raw of two mean losses (Ferrer & Ramos (2024), eq. 33); NaN when the raw
    loss is infinite."""
    if not np.isfinite(raw_mean) or raw_mean <= 0:
        return float("nan")
    return (raw_mean - calibrated_mean) / raw_mean


def _counted(sample_weight, n: int) -> np.ndarray:
    """The rows that count: all, or those of positive weight."""
    return np.ones(n, dtype=bool) if sample_weight is None else sample_weight > 0


def _retell(notes: list, n_fits: int) -> None:
    """The calibrators' notes of the cross-validated fits, once: how many fits gave one, and the first."""
    fits = [n for n in notes if issubclass(n.category, CalibInputWarning)]
    if fits:
        first = fits[0].message
        head = f"{len(fits)} of the {n_fits} cross-validated calibrator fits noted: "
        warnings.warn(
            CalibInputWarning(head + str(first), cli_message=head + getattr(first, "cli_message", str(first))),
            stacklevel=4,
        )
    for other in notes:
        if not issubclass(other.category, CalibInputWarning):
            warnings.warn_explicit(other.message, other.category, other.filename, other.lineno)


def _recommendation(gains: dict[str, Metric], score: str, settings: EvaluationSettings) -> str:
    """The calibrator with the largest mean gain among those whose interval of the gain lies above 0."""
    if not settings.n_boot:
        return "none assessed: the evidence needs intervals, which n_boot = 0 turns off"
    better = {name: g.value for name, g in gains.items() if g.low > 0}
    if not better:
        level = round(100 * (1 - settings.alpha))
        return f"none: no calibrator lowers the {score} beyond noise (its {level} % interval includes 0)"
    return max(better, key=better.get)
