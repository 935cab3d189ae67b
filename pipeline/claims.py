"""The papers' claims in words, checked on our data: each holds or does not, and the report says which.

A claim is a sentence of a paper (or a measurable outcome it describes), with where it is made, and a
predicate on our values; numeric thresholds in a predicate (e.g. "ECE below 0.02") are ours, stated in
the claim's text. Claims of one artifact kind (the pattern of "Reassessing calibration" (n.d.) in all
six of its tables) are checked on every artifact they apply to: a claim that fails on some of our models
is a finding, listed as such. The tests assert these outcomes, including exactly which claims fail
where.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

import numpy as np
import pandas as pd

from pipeline.io import read_values, values_path

CLAIM_COLUMNS = ["paper", "artifact", "claim", "source", "holds"]

Values = Callable[[str], pd.DataFrame]  # artifact name -> its tidy values


@dataclass(frozen=True)
class Claim:
    """One claim of ``paper``, checked on each built artifact matching one of ``artifacts`` (fnmatch patterns)."""

    paper: str
    artifacts: tuple[str, ...]
    text: str
    source: str
    holds: Callable[[Values, str], bool]


def _wide(values: pd.DataFrame) -> pd.DataFrame:
    return values[values.x.isna()].pivot(index="row", columns="column", values="value")


def _cell(get: Values, artifact: str, row: str, column: str) -> float:
    return float(_wide(get(artifact)).loc[row, column])


# "Reassessing calibration" (n.d.), Sect. 3 and App. F: the pattern the paper sees in all six of its tables.


def _recalibration(get: Values, artifact: str) -> pd.DataFrame:
    table = _wide(get(artifact))
    return table.drop(index="truth", errors="ignore")[["accuracy", "ECE", "ACE", "SmoothECE", "NLL", "Brier"]]


def _mrr_best_binned(t: pd.DataFrame) -> bool:
    return all(t.loc["MRR", c] <= t[c].min() + 1e-12 for c in ("ECE", "ACE", "SmoothECE"))


def _mrr_worst_finite_nll(t: pd.DataFrame) -> bool:
    finite = t.NLL[np.isfinite(t.NLL)]
    return bool(t.loc["MRR", "NLL"] == finite.max())


REASSESSING = [
    ("MRR has the lowest ECE, ACE and smooth ECE", _mrr_best_binned),
    (
        "HB and IR lower the accuracy",
        lambda t: (
            t.loc["HB", "accuracy"] <= t.loc["baseline", "accuracy"]
            and t.loc["IR", "accuracy"] <= t.loc["baseline", "accuracy"]
        ),
    ),
    (
        "TS has the lowest NLL and Brier",
        lambda t: t.loc["TS", "NLL"] == t.NLL.min() and t.loc["TS", "Brier"] == t.Brier.min(),
    ),
    ("HB and IR have infinite NLL", lambda t: bool(np.isinf(t.loc["HB", "NLL"]) and np.isinf(t.loc["IR", "NLL"]))),
    ("MRR has the worst finite NLL", _mrr_worst_finite_nll),
    ("MRR has the worst Brier", lambda t: t.loc["MRR", "Brier"] == t.Brier.max()),
    (
        "TS improves NLL and Brier over the baseline",
        lambda t: t.loc["TS", "NLL"] < t.loc["baseline", "NLL"] and t.loc["TS", "Brier"] < t.loc["baseline", "Brier"],
    ),
    ("HB's ACE is at least its ECE", lambda t: t.loc["HB", "ACE"] >= t.loc["HB", "ECE"]),
]


def _reassessing_claim(text: str, rule: Callable[[pd.DataFrame], bool]) -> Claim:
    return Claim(
        "reassessing",
        ("table_*",),
        text,
        "Sect. 3 and App. F, on all six of the paper's tables",
        lambda get, artifact: bool(rule(_recalibration(get, artifact))),
    )


# The survey, Silva Filho et al. (2023), Sect. 5: what its synthetic Figs. 12-20 show.

SURVEY_MODELS = ("under", "over", "mlp")


def _survey(get: Values, fig: str, row: str, column: str) -> float:
    return _cell(get, fig, row, column)


SURVEY = [
    Claim(
        "silvafilho2023", ("fig12",), "the under-confident pseudo-model's scores stay barely outside [0.1, 0.9]",
        "Sect. 5.2, Fig. 12",
        lambda get, a: 0.1 < _survey(get, a, "under", "score min") < 0.15
        and 0.85 < _survey(get, a, "under", "score max") < 0.92,
    ),
    Claim(
        "silvafilho2023", ("fig13",), "histogram binning outputs at most as many values as bins (10) on every model",
        "Sect. 5.3.1, Fig. 13",
        lambda get, a: all(_survey(get, a, m, "distinct outputs") <= 10 for m in SURVEY_MODELS),
    ),
    Claim(
        "silvafilho2023", ("fig13", "fig14"),
        "binning and isotonic calibration calibrate all three models (ECE below 0.02)",
        "Sects. 5.3.1-5.3.2, Figs. 13-14",
        lambda get, a: all(_survey(get, a, m, "ECE calibrated") < 0.02 for m in SURVEY_MODELS),
    ),
    Claim(
        "silvafilho2023", ("fig15",), "Platt scaling cannot fix the over-confident model (keeps over half its ECE)",
        "Sect. 5.3.3, Fig. 15",
        lambda get, a: _survey(get, a, "over", "ECE calibrated") > 0.5 * _survey(get, a, "over", "ECE raw"),
    ),
    Claim(
        "silvafilho2023", ("fig15",), "Platt scaling makes the MLP worse", "Sect. 5.3.3, Fig. 15",
        lambda get, a: _survey(get, a, "mlp", "ECE calibrated") > _survey(get, a, "mlp", "ECE raw"),
    ),
    Claim(
        "silvafilho2023", ("fig16",), "beta calibration does better than Platt on the over-confident model",
        "Sect. 5.3.4, Figs. 15-16",
        lambda get, a: _survey(get, a, "over", "ECE calibrated") < _survey(get, "fig15", "over", "ECE calibrated"),
    ),
    Claim(
        "silvafilho2023", ("fig16",), "after beta calibration the two pseudo-models look alike (ECEs within 0.005)",
        "Sect. 5.3.4, Fig. 16",
        lambda get, a: abs(_survey(get, a, "under", "ECE calibrated") - _survey(get, a, "over", "ECE calibrated"))
        < 0.005,
    ),
    Claim(
        "silvafilho2023", ("fig17", "fig18", "fig19", "fig20"), "the multiclass calibrator improves the MLP's log-loss",
        "Sect. 5.4, Figs. 17-20",
        lambda get, a: _survey(get, a, "all", "NLL calibrated") <= _survey(get, a, "all", "NLL raw"),
    ),
    Claim(
        "silvafilho2023", ("fig17",), "temperature scaling keeps the accuracy", "Sect. 5.4.1, Fig. 17",
        lambda get, a: _survey(get, a, "all", "accuracy calibrated") == _survey(get, a, "all", "accuracy raw"),
    ),
]  # fmt: skip


# Vaicenavicius et al. (2019): the Gaussian mixture (Sect. 5.1, Theorem 2) and Tables 3-5.

MODELS_003 = ("resnet20", "vgg19", "repvgg_a2", "resnet50", "lenet5", "wrn16_4")


def _lenet_inflated(get: Values, artifact: str) -> bool:
    tables = {m: _wide(get(f"tables_{m}")) for m in MODELS_003}
    lenet = tables["lenet5"].loc["Canonical TV"]
    others = [tables[m].loc["Canonical TV", "equal_labels_null"] for m in MODELS_003 if m != "lenet5"]
    return bool(
        lenet.equal_labels_null > 5 * max(others)
        and lenet.equal_labels_null > 5 * lenet.dd_labels_null
        and tables["lenet5"].loc["Maximum TV", "equal_labels_null"] < 0.05
    )


def _raw_rejected_scaled_not(get: Values, artifact: str) -> bool:
    raw = all(_wide(get(f"tables_{m}")).loc["Maximum TV", ["equal_p", "dd_p"]].max() < 0.01 for m in MODELS_003)
    scaled = _wide(get("tables_resnet20_ts")).loc["Maximum TV"]
    return bool(raw and min(scaled.equal_p, scaled.dd_p, scaled.equal_labels_p) > 0.05)


def _theorem_2(get: Values, artifact: str) -> bool:
    eta = _wide(get(artifact)).loc["uncalibrated"]
    return bool(
        eta.limit_10 < eta.eta_tv - 0.004
        and abs(eta.estimate_10 - eta.limit_10) < 2e-3
        and abs(eta.estimate_100 - eta.eta_tv) < 2e-3
    )


VAICENAVICIUS = [
    Claim(
        "vaicenavicius2019", ("gmm_eta",),
        "the binned estimator converges to a binning-dependent limit below eta with 10 bins, and reaches eta with 100",
        "Sect. 5.1, Theorem 2", _theorem_2,
    ),
    Claim(
        "vaicenavicius2019", ("tables_lenet5",),
        "under the canonical lens, equal bins alone give a diffuse model (LeNet) a large eta_hat under H0",
        "Sect. 6, Tables 3-5", _lenet_inflated,
    ),
    Claim(
        "vaicenavicius2019", ("tables_resnet20_ts",),
        "consistency tests reject the raw networks under the maximum lens; temperature scaling removes it",
        "Sect. 6", _raw_rejected_scaled_not,
    ),
]  # fmt: skip

CLAIMS: list[Claim] = [_reassessing_claim(text, rule) for text, rule in REASSESSING]
CLAIMS += SURVEY + VAICENAVICIUS


def claims_table(results: str | Path, experiments: list) -> pd.DataFrame:
    """One line per (claim, built artifact it applies to) of ``experiments`` (typed parameters) whose values are
    under the ``results`` folder: whether the claim holds on our values."""
    results = Path(results)
    by_name = {(e.paper, e.artifact): e for e in experiments}
    cache: dict[tuple[str, str], pd.DataFrame] = {}

    def loader(paper: str) -> Values:
        def get(artifact: str) -> pd.DataFrame:
            if (paper, artifact) not in cache:
                cache[(paper, artifact)] = read_values(values_path(results, by_name[(paper, artifact)]))
            return cache[(paper, artifact)]

        return get

    rows = []
    for claim in CLAIMS:
        for paper, artifact in sorted(by_name):
            if paper != claim.paper or not any(fnmatch(artifact, p) for p in claim.artifacts):
                continue
            try:
                holds = claim.holds(loader(paper), artifact)
            except FileNotFoundError:  # an artifact it reads was not built here (real sets not available)
                continue
            rows.append([paper, artifact, claim.text, claim.source, "yes" if holds else "no"])
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)
