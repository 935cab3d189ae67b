"""Step: the reproduction report, ``results/report.md``, ``reproduction.csv`` and its summaries.

For every experiment with a ``reference`` block, each published number is set beside ours with the
difference, the derived tolerance and its basis, one status of :data:`pipeline.references.STATUSES`
and its cause (:mod:`pipeline.references`). The report opens with the per-paper counts, then lists
every deviation and fail with its cause, then the claims the papers make in words and whether they
hold on our data (:mod:`pipeline.claims`), then each paper's artifacts. Artifacts without published
numbers are listed with the authors' figure to compare by eye.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from calib.bibliography import reference
from calib.data.registry import REAL_SETS
from pipeline.claims import CLAIM_COLUMNS, claims_table
from pipeline.io import artifact_stem, read_values, values_path, write_csv, write_text
from pipeline.kinds import Parameters
from pipeline.real_data import HOW_TO_PROVIDE, obtainable
from pipeline.references import REPORT_COLUMNS, compare, consults_other_experiments
from pipeline.root import Root
from pipeline.statuses import NON_VERDICTS, STATUSES, VERDICTS
from pipeline.steps.command_line import step
from pipeline.steps.own_report import own_section
from pipeline.targets import experiments as listed_experiments
from pipeline.targets import real_sets

AUTHOR_FIGURES = "../shared/reference/figures"
SUMMARY_COLUMNS = ["paper", "published", *STATUSES]


def _fmt(value: float) -> str:
    return "" if pd.isna(value) and not isinstance(value, float) else "nan" if pd.isna(value) else f"{value:.6g}"


def _values(root: Root, exp: Parameters) -> tuple[pd.DataFrame | None, str]:
    """Our values of ``exp``, or None and why they are missing (real sets this machine cannot obtain)."""
    path = values_path(root.results, exp)
    if path.exists():
        return read_values(path), ""
    missing = [s for s in real_sets(exp) if s in REAL_SETS and not obtainable(root, s)]
    if not missing:
        raise SystemExit(f"{path} is missing: build it with `snakemake {path}`")
    return None, f"the real posterior sets {missing} are not available here; {HOW_TO_PROVIDE}"


def _name(exp: Parameters) -> str:
    return f"{exp.paper}_{exp.artifact}"


def _as_config(exp: Parameters) -> DictConfig:
    """Typed parameters ``exp`` as the config :mod:`pipeline.references` reads (``.get`` on its blocks), a field
    left unset (None) absent, as it was in the file."""

    def plain(value):
        if dataclasses.is_dataclass(value):
            value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        if isinstance(value, Mapping):
            return {k: plain(v) for k, v in value.items() if v is not None}
        if isinstance(value, list | tuple):
            return [plain(v) for v in value]
        return value

    return OmegaConf.create(plain(exp))


def comparisons(root: Root, experiments: list[Parameters], loaded: Mapping | None = None) -> pd.DataFrame:
    """Every published cell of every experiment, compared.

    ``loaded`` maps each experiment's ``<paper>_<artifact>`` to :func:`_values` of it (read here when not
    given). A ``reading`` check consults the verdicts of another experiment, which may come later: the
    experiments that declare one are compared again once every verdict is known.
    """
    loaded = loaded or {}
    inputs = {
        _name(e): (_as_config(e), *(loaded.get(_name(e)) or _values(root, e))) for e in experiments if e.reference
    }
    verdicts: dict = {}
    references = Path(root.paths.references)
    frames = {
        name: compare(exp, values, references, verdicts, missing=why) for name, (exp, values, why) in inputs.items()
    }
    for name, (exp, values, why) in inputs.items():
        if consults_other_experiments(exp):
            frames[name] = compare(exp, values, references, verdicts, missing=why)
    return pd.concat(frames.values(), ignore_index=True) if frames else pd.DataFrame(columns=REPORT_COLUMNS)


def summary(frame: pd.DataFrame, papers: list[str]) -> pd.DataFrame:
    """Per paper: how many published numbers, and how many have each status (each number counted once)."""
    primary = frame[frame.reading == "primary"]
    counts = pd.crosstab(primary.paper, primary.status).reindex(index=papers, columns=list(STATUSES), fill_value=0)
    counts.insert(0, "published", counts.sum(axis=1))
    return counts.rename_axis("paper").reset_index()[SUMMARY_COLUMNS]


def misses(frame: pd.DataFrame) -> pd.DataFrame:
    """Every deviation and fail (primary readings), with its cause."""
    shown = frame[(frame.reading == "primary") & frame.status.isin(["deviation", "fail"])]
    return shown[[c for c in REPORT_COLUMNS if c not in ("tolerance_basis", "reading")]]


def _table(frame: pd.DataFrame) -> str:
    shown = frame.assign(
        published=frame.published.map(_fmt),
        ours=frame.ours.map(_fmt),
        difference=frame.difference.map(_fmt),
        tolerance=frame.tolerance.map(lambda t: "" if pd.isna(t) else f"{t:.3g}"),
    )
    return shown.to_markdown(index=False)


def _claims_section(claims: pd.DataFrame) -> list[str]:
    """Per paper: which claim holds (yes / no) on which of our artifacts, then what each claim says."""
    lines = []
    for paper, mine in claims.groupby("paper", sort=False):
        texts = list(dict.fromkeys(mine.claim))
        number = {text: str(i) for i, text in enumerate(texts, 1)}
        grid = mine.assign(claim=mine.claim.map(number)).pivot(index="artifact", columns="claim", values="holds")
        grid = grid.reindex(columns=[number[t] for t in texts]).fillna("")
        lines += [f"### {paper}", "", grid.reset_index().to_markdown(index=False), ""]
        sources = mine.drop_duplicates("claim").set_index("claim").source
        lines += [f"{number[t]}. {t} ({sources[t]})" for t in texts] + [""]
    return lines


def _artifact_section(root: Root, exp: Parameters, frame: pd.DataFrame, values, why: str, is_table: bool):
    results = root.results
    lines = [f"### {exp.artifact}: {exp.title}", ""]
    if exp.note is not None:
        lines += [f"Note: {exp.note}", ""]
    if values is None:
        lines += [f"Not built: {why}.", ""]
    if exp.reference is not None:
        mine = frame[(frame.paper == exp.paper) & (frame.artifact == exp.artifact)]
        counts = mine.status.value_counts()
        lines += [", ".join(f"{s}: {counts[s]}" for s in STATUSES if s in counts), ""]
        lines += [_table(mine.drop(columns=["paper", "artifact", "tolerance_basis"])), ""]
    elif values is not None:
        stem = artifact_stem(results, exp)
        if is_table:
            table = Path(f"{stem}.md")
            shown = table.read_text().split("\n", 2)[-1] if table.exists() else f"(see `{table}`)"
            lines += ["No published numbers: this table is ours.", "", shown, ""]
        else:
            theirs = sorted(Path(AUTHOR_FIGURES).glob(f"{exp.paper}_{exp.artifact.split('_')[0]}*"))
            where = ", ".join(f"`{p}`" for p in theirs) or "the paper, if it has one (no image is stored)"
            lines += [f"No published numbers; compare `{stem}.png` with the authors' figure in {where}.", ""]
    return lines


def build(root: Root) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """The cell-by-cell comparison, the claims table and the Markdown report."""
    papers_experiments = [e for e in listed_experiments() if e.own is None]  # own sets: their own section
    experiments = [e.parameters for e in papers_experiments]
    loaded = {_name(e): _values(root, e) for e in experiments}
    tables = {e.name for e in papers_experiments if e.is_table}
    frame = comparisons(root, experiments, loaded)
    claims = claims_table(root.results, experiments)
    papers = list(root.papers)
    counts = summary(frame, papers)
    lines = [
        "# Reproduction report",
        "",
        "Each published number beside ours; `difference` = ours - published, in the printed units. "
        f"Verdicts: {', '.join(VERDICTS)}; not verdicts: {', '.join(NON_VERDICTS)} (see pipeline/statuses.py). "
        "Each published number is counted once; second readings are listed, not counted.",
        "",
        counts.to_markdown(index=False),
        "",
        "## Deviations and fails",
        "",
    ]
    missed = misses(frame)
    lines += [_table(missed), ""] if len(missed) else ["None.", ""]
    lines += ["## The papers' claims on our data", ""]
    lines += _claims_section(claims) if len(claims) else ["No claims are checked.", ""]
    for paper in root.papers:
        lines += [f"## {paper}: {reference(paper)}", ""]
        mine = [e for e in experiments if e.paper == paper]
        if not mine:
            lines += ["No experiments of this paper are configured yet.", ""]
        for exp in mine:
            lines += _artifact_section(root, exp, frame, *loaded[_name(exp)], is_table=_name(exp) in tables)
    lines += own_section(root)
    return frame, claims, "\n".join(lines)


@step
def main(root: Root) -> None:
    frame, claims, text = build(root)
    results = root.results
    write_csv(results / "reproduction.csv", frame)
    write_csv(results / "reproduction_summary.csv", summary(frame, list(root.papers)))
    write_csv(results / "reproduction_misses.csv", misses(frame))
    write_csv(results / "claims.csv", claims.reindex(columns=CLAIM_COLUMNS))
    write_text(results / "report.md", text)
    counted = frame[frame.reading == "primary"].status.value_counts().to_dict()
    print(f"report: {len(frame)} lines, published numbers by status: {counted}")


if __name__ == "__main__":
    main()
