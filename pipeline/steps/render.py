"""Step: draw an experiment's figure (PDF + PNG) or lay out its table (CSV + Markdown + LaTeX).

Beside them it writes the artifact's caption for the workflow's HTML report
(:func:`pipeline.targets.caption_path`): where the outputs are written, so that reading the workflow writes nothing.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd

from pipeline import own_sets
from pipeline.io import artifact_stem, values_path, write_if_changed
from pipeline.kinds import kind_of
from pipeline.root import Root, root_of
from pipeline.steps.command_line import step
from pipeline.steps.evaluate import experiment_of
from pipeline.targets import caption, caption_path


def render(root: Root) -> list[Path]:
    """Draw or lay out the experiment ``root`` selects from its values CSV; the paths written."""
    exp = experiment_of(root, "render")
    source = values_path(root.paths.results, exp)
    if not source.exists():
        command = " ".join(f"{group}={option}" for group, option in root.names.items())
        raise SystemExit(f"{source} is missing: run `python -m pipeline.steps.evaluate {command}`")
    values, parameters = _beside(root, pd.read_csv(source))
    paths = kind_of(exp).render(parameters, values, artifact_stem(root.paths.results, exp))
    write_if_changed(caption_path(exp), caption(exp))
    print("render: wrote " + ", ".join(str(p) for p in paths))
    return paths


def _beside(root: Root, values: pd.DataFrame):
    """An own set's table ``values`` and parameters with the rows of the paper's experiment it sits beside
    (``own_protocol.beside``, a config whose kind lists ``systems``) first, when that experiment's values are
    built; unchanged otherwise (not an own set's table, or the paper's table not built here).

    Example: the ``table2`` protocol on own set ``mine`` shows Table 2's systems, then ``mine``'s rows.
    """
    parameters = root.experiment
    name = parameters.own_protocol.beside if parameters.own_protocol is not None else None
    if not name:
        return values, parameters
    theirs = root_of([f"experiment={name}", f"paths.results={root.paths.results}"]).experiment
    path = values_path(root.paths.results, theirs)
    if not path.exists():
        return values, parameters
    clash = {s.label for s in theirs.systems} & {s.label for s in parameters.systems}
    if clash:
        problem = f"{sorted(clash)} is also a system of {name}: give the set another label"
        raise own_sets.error(root.own.name, "label", problem)
    joined = replace(parameters, systems=[*theirs.systems, *parameters.systems])
    return pd.concat([pd.read_csv(path), values], ignore_index=True), joined


main = step(render)


if __name__ == "__main__":
    main()
