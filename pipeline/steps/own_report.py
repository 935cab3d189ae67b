"""Step: the report's section on the user's own posterior sets, alone (``results/own/report.md``).

``snakemake own`` builds it; the full report (``pipeline.steps.report``) carries the same section. For each
set declared in ``configs/own/``: its shape, then each protocol run on it (its table, or the
path of its figure), the protocols that do not apply to its number of classes, and a line for each protocol
that cannot take the set's sample weights (:func:`pipeline.own_sets.refusal`), which is not run on it.
"""

from __future__ import annotations

from pathlib import Path

from pipeline import own_sets
from pipeline.config import OWN_PROTOCOLS
from pipeline.io import artifact_stem, write_text
from pipeline.root import Root
from pipeline.steps.command_line import step
from pipeline.targets import experiments

TITLE = "Your own posterior sets"


def own_section(root: Root, level: int = 2) -> list[str]:
    """The Markdown lines of the section, its heading at ``level``; empty when no set is declared.

    Example: with ``configs/own/mine.yaml`` declared and built, the section lists
    ``results/own/mine/table2.md``'s table under "mine".
    """
    listed = [e for e in experiments() if e.own_set]
    names = sorted({e.own_set for e in listed})
    if not names:
        return []
    head = "#" * level
    lines = [
        f"{head} {TITLE}",
        "",
        f"Each set declared in `configs/{own_sets.OWN_SETS}/`, under every protocol of `configs/{OWN_PROTOCOLS}/` "
        'that applies to its number of classes (README: "Your own posterior sets").',
        "",
    ]
    for name in names:
        own = next(e.own for e in listed if e.own_set == name)
        shape, label = own_sets.shape(name, own.declaration), own.label
        classes = ", ".join(shape["classes"]) or str(shape["n_classes"])
        lines += [f"{head}# {label} (`{own_sets.declaration_file(name)}`)", ""]
        lines += [f"{shape['n_samples']} samples, {shape['n_classes']} classes ({classes}).", ""]
        mine = [e for e in listed if e.own_set == name]
        skipped = [e.artifact for e in mine if not own_sets.fits(e.parameters.own_protocol, shape)]
        if skipped:
            lines += [f"Not run (for sets of another number of classes): {', '.join(skipped)}.", ""]
        refused = [
            e.artifact
            for e in mine
            if e.artifact not in skipped and not own_sets.applies(e.parameters.own_protocol, shape)
        ]
        lines += [line for artifact in refused for line in (own_sets.refusal(name, artifact) + ".", "")]
        for e in mine:
            if e.artifact in skipped or e.artifact in refused:
                continue
            exp = e.parameters
            stem = artifact_stem(root.paths.results, exp)
            lines += [f"{head}## {e.artifact}: {exp.title}", ""]
            table = Path(f"{stem}.md")
            if e.is_table and table.exists():
                lines += [table.read_text().split("\n", 2)[-1].strip(), ""]
            elif e.is_table:
                lines += [f"Not built: `snakemake {table}`.", ""]
            else:
                lines += [f"Figure: `{stem}.png` (and `.pdf`).", ""]
    return lines


@step
def main(root: Root) -> None:
    lines = own_section(root, level=1) or [f"# {TITLE}", "", f"No set is declared in configs/{own_sets.OWN_SETS}/."]
    path = write_text(root.results / "own" / "report.md", "\n".join(lines) + "\n")
    print(f"own_report: wrote {path}")


if __name__ == "__main__":
    main()
