"""The metric registry: every metric of an evaluation declared once, as sums of per-sample terms.

A :class:`MetricDefinition` names a metric, says what it reads, gives its per-sample terms
(:class:`Terms`: values summed over the samples, optionally within groups such as classes or bins)
and how the summed terms combine into its value. Everything else follows from the declaration:
the value on the data, on each bootstrap resample (the terms weighted by how often the resample
draws each sample), on chunks of a file read one after the other (their sums add), and per subgroup
(:mod:`calib.evaluation.engine`). ``calib.evaluate``, ``calib evaluate`` and ``calib compare`` and
the workflow's named metrics iterate :data:`REGISTRY`; adding a metric is one
:func:`register` call (and its tests).

A metric whose value is not a function of sums (the smooth ECE, whose bandwidth is searched on all
the samples) declares ``terms=None`` and a ``whole`` function of the samples themselves; it is
computed on all samples in memory and, out of core, on a seeded subsample (stated in the output).

Sources: Ferrer & Ramos (2024), eqs. 8-9 (NCE, NBS) and Sec. 2.3.1 (the normalized Bayes risk);
Silva Filho et al. (2023), Defs. 1, 4 and 6 (the binned ECEs); Kumar et al. (2019), Sec. 5 (their
debiased squared forms); "An entropic metric" (2025), eq. 8 (ECD); Błasiok & Nakkiran (2023) (smooth
ECE); Kumar et al. (2018) (the unbiased squared MMCE).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
from scipy.special import entr

from calib.calibration_errors.binned import ReliabilityBins, binned_error
from calib.calibration_errors.binning import strategy_bin_ids, strategy_edges
from calib.calibration_errors.entropic import ecd_terms, single_datum_bound
from calib.calibration_errors.kernel_calibration import ResampledSquaredMmce
from calib.calibration_errors.smoothing import ResampledSmoothEce, smooth_ece
from calib.evaluation.interval_methods import BASIC, UPPER, IntervalMethod
from calib.evaluation.settings import EvaluationSettings
from calib.scoring.decisions import bayes_choices
from calib.scoring.scores import brier_losses
from calib.validation import CalibInputError


@dataclass(frozen=True)
class Terms:
    """Per-sample values of a chunk that an evaluation sums: ``values`` (n,) or (n, m), each within its
    group of ``groups`` (n,) or (n, m) in [0, n_groups) when given. The sum over a set of samples is
    (m,) without groups and (m, n_groups) with them (m = 1 for a vector). ``point_only``: summed on the
    data only, not on resamples (what a figure reads). With sample weights w each row's values are summed
    times w_i ** ``weight_power`` (:func:`calib.evaluation.passes.terms_of`): 1 for a weighted sum, 2 for the
    variance of one, the sum of w_i^2 var_i of independent rows, 0 for a count of rows."""

    values: np.ndarray
    groups: np.ndarray | None = None
    n_groups: int = 1
    point_only: bool = False
    weight_power: int = 1


@dataclass(frozen=True)
class Batch:
    """The samples of one chunk as the metrics read them, each derived once: validated log-posteriors
    (n, K), probabilities, labels, and the top label's confidence, prediction and correctness; ``weights``
    the rows' sample weights (None: every row counts 1), which the pass applies to every term
    (:func:`calib.evaluation.passes.terms_of`), so a terms function never reads them."""

    logp: np.ndarray
    labels: np.ndarray
    weights: np.ndarray | None = None
    probs: np.ndarray = field(init=False)
    confidence: np.ndarray = field(init=False)
    prediction: np.ndarray = field(init=False)
    correct: np.ndarray = field(init=False)

    def __post_init__(self):
        probs = np.exp(self.logp)
        prediction = self.logp.argmax(axis=1)
        object.__setattr__(self, "probs", probs)
        object.__setattr__(self, "prediction", prediction)
        object.__setattr__(self, "confidence", probs[np.arange(prediction.size), prediction])
        object.__setattr__(self, "correct", prediction == self.labels)


@dataclass(frozen=True)
class Context:
    """What an evaluation's metrics share: K, the settings, the cost matrices by name, the priors (None:
    the empirical class frequencies), the bin edges of each binned score (``edges``, from
    :func:`bin_edges`) and the samples equal-mass edges were found on (``edge_rows``; 0 for equal width)."""

    n_classes: int
    settings: EvaluationSettings
    costs: Mapping[str, np.ndarray]
    priors: np.ndarray | None = None
    edges: Mapping[str, np.ndarray] = field(default_factory=dict)
    edge_rows: int = 0


Sums = Mapping[str, np.ndarray]


@dataclass(frozen=True, kw_only=True)
class MetricDefinition:
    """One metric (or a family of them, one per cost matrix): its names, terms and value, each field named.

    ``names(ctx)`` lists the values it reports (default: its ``name``); ``terms(batch, ctx)`` maps term keys
    to :class:`Terms` (a key shared by several metrics is computed once); ``value(sums, ctx)`` maps each name
    to its value for every resample, from the summed terms (each with a trailing resample axis). ``whole(batch,
    ctx)`` replaces both for a metric that needs its samples at once, and its ``resampler(batch, ctx)``
    gives the function of (n, b) count columns that returns its b values on those resamples of the same
    samples (without one, the metric has no interval). ``bounds`` are the values it can
    take (intervals are clipped to them), or a function of the context giving them; ``applies(ctx)``
    whether it is defined for these data;
    ``bins``, for a binned metric, its term key and edges key (:func:`reliability` reads its bins).
    ``interval`` is how its interval is made (:mod:`calib.evaluation.interval_methods`) and ``estimand``
    what the estimate and its interval are of, in words; ``paired`` whether a paired difference of two
    systems' values gets a basic interval (not for a plug-in calibration error: its bias depends on its
    value, so a difference of two is biased by the gap of their biases, and its interval misses).
    """

    name: str
    reads: str
    names: Callable[[Context], list[str]] | None = None
    terms: Callable[[Batch, Context], dict[str, Terms]] | None = None
    value: Callable[[Sums, Context], dict[str, np.ndarray]] | None = None
    bounds: tuple[float, float] | Callable[[Context], tuple[float, float]] = (0.0, np.inf)
    applies: Callable[[Context], bool] = lambda ctx: True
    whole: Callable[[Batch, Context], float] | None = None
    bins: tuple[str, str] | None = None
    resampler: Callable[[Batch, Context], Callable[[np.ndarray], np.ndarray]] | None = None
    interval: IntervalMethod = BASIC
    estimand: str = "its value on the population the samples were drawn from"
    paired: bool = True

    def __post_init__(self):
        if self.names is None:
            object.__setattr__(self, "names", lambda ctx: [self.name])


REGISTRY: dict[str, MetricDefinition] = {}


def register(definition: MetricDefinition) -> MetricDefinition:
    """Add ``definition`` to :data:`REGISTRY` (after the metrics already there; a name is declared once).

    Examples
    --------
    >>> import numpy as np
    >>> mean_confidence = MetricDefinition(
    ...     name="mean confidence", reads="the top label's confidence",
    ...     terms=lambda batch, ctx: {"confidence": Terms(batch.confidence), "n": Terms(np.ones(batch.labels.size))},
    ...     value=lambda sums, ctx: {"mean confidence": sums["confidence"][0] / sums["n"][0]}, bounds=(0.0, 1.0))
    >>> _ = register(mean_confidence)
    >>> "mean confidence" in REGISTRY
    True
    >>> del REGISTRY["mean confidence"]
    """
    if definition.name in REGISTRY:
        raise CalibInputError(f"a metric named {definition.name!r} is declared already")
    if (definition.terms is None) == (definition.whole is None):
        raise CalibInputError(f"metric {definition.name!r} needs terms and a value, or a whole function")
    REGISTRY[definition.name] = definition
    return definition


def selected(ctx: Context) -> list[MetricDefinition]:
    """The registered metrics an evaluation reports, in registry order: those that apply to these data,
    restricted to ``settings.metrics`` when it names some (unknown names are refused with the list)."""
    wanted = ctx.settings.metrics
    if wanted is not None:
        applicable = [d for d in REGISTRY.values() if d.applies(ctx)]
        known = {name for d in applicable for name in d.names(ctx)} | {d.name for d in applicable}
        unknown = [m for m in wanted if m not in known]
        if unknown:
            problem = f"{unknown} are not among the metrics of these data: {sorted(known)}"
            raise CalibInputError(f"metrics {problem}", cli_message=f"--metrics {problem}")
    return [d for d in REGISTRY.values() if d.applies(ctx) and (wanted is None or _wanted(d, ctx, wanted))]


def _wanted(definition: MetricDefinition, ctx: Context, wanted: tuple[str, ...]) -> bool:
    return definition.name in wanted or any(name in wanted for name in definition.names(ctx))


# --- the shared terms ----------------------------------------------------------------------------------


def _ones(batch: Batch) -> Terms:
    return Terms(np.ones(batch.labels.size))


def _by_class(values: np.ndarray, batch: Batch, ctx: Context) -> Terms:
    return Terms(values, batch.labels, ctx.n_classes)


def _class_weights(sums: Sums, ctx: Context) -> tuple[np.ndarray, np.ndarray]:
    """(P, N_h) per resample: the priors (given or the class frequencies), (K, S), and the class counts."""
    counts = sums["class counts"][0]
    priors = counts / counts.sum(axis=0) if ctx.priors is None else np.broadcast_to(ctx.priors[:, None], counts.shape)
    return priors, counts


def _weighted_mean(key: str, sums: Sums, ctx: Context) -> np.ndarray:
    """sum_h P_h S_h / N_h: the mean of a per-sample value with each class weighted to its prior (with the
    empirical priors, S / N)."""
    priors, counts = _class_weights(sums, ctx)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_class = np.where(counts > 0, sums[key][0] / np.maximum(counts, 1), 0.0)
        return np.sum(priors * per_class, axis=0)


def _positive(values: np.ndarray) -> np.ndarray:
    """NaN where a normalizer is 0 (a resample of one class): the metric is undefined there."""
    return np.where(values > 0, values, np.nan)


# --- the metrics ---------------------------------------------------------------------------------------

register(
    MetricDefinition(
        name="accuracy",
        reads="the argmax of the scores against the labels",
        terms=lambda batch, ctx: {"correct": Terms(batch.correct.astype(np.float64)), "n": _ones(batch)},
        value=lambda sums, ctx: {"accuracy": sums["correct"][0] / sums["n"][0]},
        bounds=(0.0, 1.0),
    )
)

register(
    MetricDefinition(
        name="NCE",
        reads="the log-posterior of the true class, against the naive system that outputs the priors",
        terms=lambda batch, ctx: {
            "cross-entropy": _by_class(-batch.logp[np.arange(batch.labels.size), batch.labels], batch, ctx),
            "class counts": _by_class(np.ones(batch.labels.size), batch, ctx),
        },
        value=lambda sums, ctx: {
            "NCE": _weighted_mean("cross-entropy", sums, ctx) / _positive(entr(_class_weights(sums, ctx)[0]).sum(0))
        },
    )
)

register(
    MetricDefinition(
        name="NBS",
        reads="the mean squared distance between posteriors and one-hot labels, against the naive system's",
        terms=lambda batch, ctx: {
            "Brier": _by_class(brier_losses(batch.logp, batch.labels, "mean"), batch, ctx),
            "class counts": _by_class(np.ones(batch.labels.size), batch, ctx),
        },
        value=lambda sums, ctx: {
            "NBS": _weighted_mean("Brier", sums, ctx)
            / _positive(np.sum(_class_weights(sums, ctx)[0] * (1 - _class_weights(sums, ctx)[0]), 0) / ctx.n_classes)
        },
    )
)


def _risk_terms(batch: Batch, ctx: Context) -> dict[str, Terms]:
    terms = {"class counts": _by_class(np.ones(batch.labels.size), batch, ctx)}
    for name, c in ctx.costs.items():
        terms[f"cost {name}"] = _by_class(c[batch.labels, bayes_choices(batch.probs, c)], batch, ctx)
    return terms


def _risk_values(sums: Sums, ctx: Context) -> dict[str, np.ndarray]:
    priors = _class_weights(sums, ctx)[0]
    return {
        f"NRisk {name}": _weighted_mean(f"cost {name}", sums, ctx) / _positive(np.min(priors.T @ c, axis=1))
        for name, c in ctx.costs.items()
    }


register(
    MetricDefinition(
        name="NRisk",
        reads="the cost of Bayes decisions for each cost matrix, against the best constant decision's",
        names=lambda ctx: [f"NRisk {name}" for name in ctx.costs],
        terms=_risk_terms,
        value=_risk_values,
    )
)


def bin_ids(scores: np.ndarray, edges: np.ndarray, settings: EvaluationSettings) -> np.ndarray:
    """The bin in [0, M) of each score (n,) or (n, K) for the settings' binning and its ``edges`` (from
    :func:`bin_edges`): :func:`calib.calibration_errors.binning.strategy_bin_ids`, the bins of
    :class:`calib.calibration_errors.binned.BinnedCalibrationError` (right-closed equal-width bins).

    Examples
    --------
    >>> bin_ids(np.array([0.0, 0.2, 0.21, 1.0]), np.linspace(0, 1, 6), EvaluationSettings()).tolist()
    [0, 0, 1, 4]
    """
    return strategy_bin_ids(scores, edges, strategy=settings.binning)


def bin_edges(
    settings: EvaluationSettings, columns: Mapping[str, np.ndarray], sample_weight: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """The bin edges of each binned score: k / M for equal width; for equal mass, the
    :func:`~calib.calibration_errors.binning.equal_mass_edges` of the scores (``columns``: name -> the
    scores, (n,) or (n, K) for one set of edges per class; None for equal width), equal in the rows'
    ``sample_weight`` when given."""
    return {
        name: strategy_edges(settings.binning, settings.n_bins, scores, sample_weight=sample_weight)
        for name, scores in columns.items()
    }


def _binned(key: str, scores: np.ndarray, outcomes: np.ndarray, edges: np.ndarray, ctx: Context) -> dict[str, Terms]:
    """outcome - score gaps grouped by bin (one column per class when ``scores`` is (n, K)) under ``key``,
    and under "``key`` ..." each bin's count, score sum, outcome sum and, on the data only, sum of squared
    weights (the reliability diagram's; with sample weights, the last gives each bin's effective size)."""
    if scores.ndim == 1:
        scores, outcomes = scores[:, None], outcomes[:, None]
    if edges.ndim == 1:  # one set of edges for every column
        ids = bin_ids(scores.ravel(), edges, ctx.settings).reshape(scores.shape)
    else:
        ids = bin_ids(scores, edges, ctx.settings)
    m = ctx.settings.n_bins
    return {
        key: Terms(outcomes - scores, ids, m),
        f"{key} counts": Terms(np.ones_like(scores), ids, m),
        f"{key} score sums": Terms(scores, ids, m, point_only=True),
        f"{key} outcome sums": Terms(outcomes, ids, m),
        f"{key} weight squares": Terms(np.ones_like(scores), ids, m, point_only=True, weight_power=2),
    }


def reliability(key: str, sums: Sums, edges: np.ndarray) -> list:
    """The reliability bins behind a binned ECE's term ``key`` on the data (column 0 of the sums): one
    :class:`~calib.calibration_errors.binned.ReliabilityBins` per score column (one, or one per class), whose
    counts are the bins' total weights with sample weights (integers where they are whole numbers) and whose
    ``weight_squares`` are the bins' sums of squared weights (for the effective sizes of their frequency
    intervals), None where these equal the counts: no weights, or weights of 0 and 1, which are counts."""

    all_counts, all_scores, all_outcomes = (
        sums[f"{key} {part}"][..., 0] for part in ("counts", "score sums", "outcome sums")
    )
    all_squares = sums[f"{key} weight squares"][..., 0] if f"{key} weight squares" in sums else all_counts
    out = []
    for j in range(all_counts.shape[0]):
        counts, score_sums, outcome_sums = all_counts[j], all_scores[j], all_outcomes[j]
        with np.errstate(invalid="ignore", divide="ignore"):
            mean, frequency = score_sums / counts, outcome_sums / counts
        column_edges = edges if edges.ndim == 1 else edges[:, j]
        whole = np.rint(counts)  # counts of rows (sums of ones), or of weights, which stay as they are
        shown = whole.astype(np.int64) if np.array_equal(whole, counts) else counts
        squares = None if np.array_equal(all_squares[j], counts) else all_squares[j]
        out.append(ReliabilityBins(column_edges, shown, mean, frequency, squares))
    return out


def _ece(key: str, sums: Sums) -> np.ndarray:
    """The L1 :func:`~calib.calibration_errors.binned.binned_error` of the summed gaps of ``key`` (averaged
    over the gap columns: one per class, class-wise)."""
    return binned_error(None, sums["n"][0], gap_sums=sums[key])


def _debiased_squared_ece(key: str, sums: Sums) -> np.ndarray:
    """The debiased squared :func:`~calib.calibration_errors.binned.binned_error` of the bins of ``key``."""
    counts, outcomes = sums[f"{key} counts"], sums[f"{key} outcome sums"]
    return binned_error(counts, sums["n"][0], gap_sums=sums[key], outcome_sums=outcomes, norm="squared", debiased=True)


# What a binned error's estimate and interval are of.
BINNED_ESTIMAND = (
    "the population's binned error in these bins (equal-width, or the equal-mass edges found on the data, "
    "which the resamples keep); 0 for a calibrated model"
)


def binned_ece(
    name: str,
    reads: str,
    key: str,
    edges: str,
    columns: Callable[[Batch, Context], tuple[np.ndarray, np.ndarray]],
    applies: Callable[[Context], bool] = lambda ctx: True,
) -> tuple[MetricDefinition, MetricDefinition]:
    """The declarations of a binned ECE and of its debiased squared form: the scores and outcomes of a chunk
    (``columns(batch, ctx)``, each (n,) or (n, K)), binned on the context's edges ``edges`` in the settings'
    bins, with their gaps, counts and outcomes summed under term ``key``, and the values
    :func:`~calib.calibration_errors.binned.binned_error` of those sums: the L1 ECE (``name``) and
    "squared ``name`` (debiased)".

    The debiased squared ECE sum_m (N_m / N) [(ybar_m - sbar_m)^2 - ybar_m (1 - ybar_m) / (N_m - 1)] removes
    from each bin's squared gap its expected sampling part, so that on a calibrated model it is 0 on average
    (it can be negative) where the plug-in form is positive in every sample; no estimator of the L1 ECE is
    unbiased (none of |mu| is, for a mean mu), which is why the debiased form is the squared one.

    Source: Kumar et al. (2019), Sec. 5 (the debiased estimator of the squared calibration error); Bröcker
    (2012) (the same bias correction of the reliability term).

    Examples
    --------
    >>> ece, debiased = binned_ece("ECE class 0", "P(class 0)", "class-0 gaps", "classes",
    ...                            lambda batch, ctx: (batch.probs[:, 0], (batch.labels == 0) * 1.0))
    >>> ece.bins, debiased.name
    (('class-0 gaps', 'classes'), 'squared ECE class 0 (debiased)')
    """

    def terms(batch: Batch, ctx: Context) -> dict[str, Terms]:
        scores, outcomes = columns(batch, ctx)
        return {**_binned(key, scores, outcomes, ctx.edges[edges], ctx), "n": _ones(batch)}

    squared = f"squared {name} (debiased)"
    return (
        MetricDefinition(
            name=name,
            reads=reads,
            terms=terms,
            value=lambda sums, ctx: {name: _ece(key, sums)},
            bounds=(0.0, 1.0),
            bins=(key, edges),
            applies=applies,
            interval=UPPER,
            estimand=BINNED_ESTIMAND,
            paired=False,
        ),
        MetricDefinition(
            name=squared,
            reads=f"as {name}, each bin's squared gap less its sampling variance",
            terms=terms,
            value=lambda sums, ctx: {squared: _debiased_squared_ece(key, sums)},
            bounds=(0.0, 1.0),
            applies=applies,
            interval=UPPER,
            estimand=BINNED_ESTIMAND.replace("binned error", "squared binned error"),
        ),
    )


_BINNED_ECES = [
    binned_ece(
        "ECE top-label",
        "the top label's confidence against the argmax being right, in the settings' bins",
        "top-label gaps",
        "confidence",
        lambda batch, ctx: (batch.confidence, batch.correct.astype(np.float64)),
    ),
    binned_ece(
        "ECE positive class",
        "P(class 1) against the label being 1, in the settings' bins (two classes)",
        "positive gaps",
        "positive",
        lambda batch, ctx: (batch.probs[:, 1], (batch.labels == 1).astype(np.float64)),
        applies=lambda ctx: ctx.n_classes == 2,
    ),
    binned_ece(
        "ECE class-wise",
        "each class's probability against the label being that class, the mean of the K ECEs",
        "class-wise gaps",
        "classes",
        lambda batch, ctx: (batch.probs, np.eye(ctx.n_classes)[batch.labels]),
        applies=lambda ctx: ctx.n_classes > 2,
    ),
]
for _ece_definition, _ in _BINNED_ECES:
    register(_ece_definition)
for _, _squared_definition in _BINNED_ECES:
    register(_squared_definition)


def _smooth_ece(batch: Batch, ctx: Context) -> float:
    bandwidth = ctx.settings.smooth_bandwidth
    correct = batch.correct.astype(np.float64)
    return float(smooth_ece(batch.confidence, correct, bandwidth=bandwidth, sample_weight=batch.weights))


register(
    MetricDefinition(
        name="smooth ECE",
        reads="the top label's confidence against the argmax being right, kernel-smoothed (no bins)",
        bounds=(0.0, 1.0),
        whole=_smooth_ece,
        resampler=lambda batch, ctx: ResampledSmoothEce(
            batch.confidence, batch.correct, bandwidth=ctx.settings.smooth_bandwidth, sample_weight=batch.weights
        ),
        interval=UPPER,
        estimand="the population's smooth ECE; 0 for a calibrated model",
        paired=False,
    )
)


def _squared_mmce(batch: Batch, ctx: Context) -> ResampledSquaredMmce:
    correct = batch.correct.astype(np.float64)
    return ResampledSquaredMmce(batch.confidence, correct, ctx.settings.mmce_bandwidth, sample_weight=batch.weights)


register(
    MetricDefinition(
        name="squared MMCE (unbiased)",
        reads="the top label's confidence against the argmax being right, kernel-weighted pairs (no bins)",
        bounds=(0.0, 1.0),
        whole=lambda batch, ctx: _squared_mmce(batch, ctx).estimate(),
        resampler=_squared_mmce,
        interval=UPPER,
        estimand="the population's squared MMCE at the settings' mmce_bandwidth; 0 for a calibrated model",
    )
)

register(
    MetricDefinition(
        name="ECD",
        reads="the mean log loss minus the mean entropy of the predictions",
        terms=lambda batch, ctx: {
            "ECD terms": Terms(ecd_terms(batch.logp, batch.labels, kind="logprobs")),
            "n": _ones(batch),
        },
        value=lambda sums, ctx: {"ECD": sums["ECD terms"][0] / sums["n"][0]},
        bounds=lambda ctx: (single_datum_bound(ctx.n_classes)[1], np.inf),  # the least one datum's term can be
    )
)
