"""Step: the reproduction report, ``results/report.md`` and ``results/reproduction.csv``.

For every experiment with a ``reference`` block, each published number is set beside ours with
the difference, the tolerance and pass / fail; artifacts without published numbers are listed with
the authors' figure to compare by eye.
"""

from __future__ import annotations

from pathlib import Path

import hydra
import pandas as pd
from omegaconf import DictConfig

from calib.data.registry import REAL_SETS
from pipeline.config import experiment_names, load_experiment
from pipeline.io import values_path, write_csv, write_text
from pipeline.real_data import HOW_TO_PROVIDE, obtainable
from pipeline.references import REPORT_COLUMNS, compare
from pipeline.renderers import TABLE_KINDS
from pipeline.schema import check_config
from pipeline.targets import real_sets

AUTHOR_FIGURES = "../shared/reference/figures"


def _fmt(value: float) -> str:
    return "nan" if pd.isna(value) else f"{value:.6g}"


def build(cfg: DictConfig) -> tuple[pd.DataFrame, str]:
    """The reproduction table and the Markdown report for every configured experiment."""
    results = Path(cfg.paths.results)
    frames, sections = (
        [],
        [
            "# Reproduction report",
            "",
            "Each published number beside ours; `difference` = ours - published, in the printed units.",
            "",
        ],
    )
    experiments = [load_experiment(name) for name in experiment_names()]
    for paper, title in cfg.papers.items():
        sections += [f"## {paper}: {title}", ""]
        mine = [e.experiment for e in experiments if e.experiment.paper == paper]
        if not mine:
            sections += ["No experiments of this paper are configured yet.", ""]
        for exp in mine:
            sections += [f"### {exp.artifact}: {exp.title}", ""]
            path = values_path(results, exp)
            if not path.exists():
                missing = [s for s in real_sets(exp) if s in REAL_SETS and not obtainable(cfg, s)]
                if not missing:
                    raise SystemExit(f"{path} is missing: build it with `snakemake {path}`")
                sections += [f"Not built: the real posterior sets {missing} are not available; {HOW_TO_PROVIDE}.", ""]
                continue
            values = pd.read_csv(path)
            if "note" in exp:
                sections += [f"Note: {exp.note}", ""]
            if "reference" not in exp:
                stem = results / paper / exp.artifact
                if exp.kind in TABLE_KINDS:
                    table = Path(f"{stem}.md")
                    shown = table.read_text().split("\n", 2)[-1] if table.exists() else f"(see `{table}`)"
                    sections += ["No published numbers: this table is ours.", "", shown, ""]
                else:
                    theirs = sorted(Path(AUTHOR_FIGURES).glob(f"{paper}_{exp.artifact.split('_')[0]}*"))
                    where = ", ".join(f"`{p}`" for p in theirs) or "the paper, if it has one (no image is stored)"
                    sections += [f"No published numbers; compare `{stem}.png` with the authors' figure in {where}.", ""]
                continue
            table = compare(exp, values, Path(cfg.paths.references))
            frames.append(table)
            counts = table.status.value_counts().to_dict()
            sections += [", ".join(f"{k}: {v}" for k, v in sorted(counts.items())), ""]
            shown = table.drop(columns=["paper", "artifact"]).assign(
                published=table.published.map(_fmt), ours=table.ours.map(_fmt), difference=table.difference.map(_fmt)
            )
            sections += [shown.to_markdown(index=False), ""]
    frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=REPORT_COLUMNS)
    total = frame.status.value_counts().to_dict()
    per_paper = summary(frame, list(cfg.papers)).to_markdown(index=False)
    sections.insert(4, "Overall: " + ", ".join(f"{k}: {v}" for k, v in sorted(total.items())) + "\n")
    sections.insert(5, per_paper + "\n")
    return frame, "\n".join(sections)


def summary(frame: pd.DataFrame, papers: list[str]) -> pd.DataFrame:
    """Per paper: published numbers compared, and how many pass, fail, are reported or not reproducible."""
    status = frame.status.str.replace(r"^not-reproducible.*", "not reproducible", regex=True)
    counts = pd.crosstab(frame.paper, status).reindex(index=papers, fill_value=0)
    columns = ["pass", "fail", "reported", "not reproducible"]
    counts = counts.reindex(columns=columns, fill_value=0)
    return counts.assign(published=counts.sum(axis=1))[["published", *columns]].rename_axis("paper").reset_index()


@hydra.main(version_base=None, config_path="../configs", config_name="config")
def main(cfg: DictConfig) -> None:
    check_config(cfg)
    frame, text = build(cfg)
    results = Path(cfg.paths.results)
    write_csv(results / "reproduction.csv", frame)
    write_csv(results / "reproduction_summary.csv", summary(frame, list(cfg.papers)))
    write_text(results / "report.md", text)
    print(f"report: {len(frame)} published numbers compared: {frame.status.value_counts().to_dict()}")


if __name__ == "__main__":
    main()
