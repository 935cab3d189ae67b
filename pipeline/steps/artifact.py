"""Step: evaluate an experiment and render its figure or table in one process (``batch`` runs it per experiment).

Same outputs as ``pipeline.steps.evaluate`` followed by ``pipeline.steps.render``, which stay available to rerun
either stage by hand; one process saves the start-up (Python, imports, Hydra) of a second job. The
artifact is built whole or not at all: if rendering fails or is interrupted (Ctrl-C), the values
and any file already rendered are removed, so no later run mistakes them for a finished job.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.io import artifact_stem
from pipeline.kinds import kind_of
from pipeline.root import Root
from pipeline.steps.command_line import step
from pipeline.steps.evaluate import evaluate
from pipeline.steps.render import render
from pipeline.targets import FIGURE_SUFFIXES, TABLE_SUFFIXES


def build(root: Root) -> None:
    """Evaluate, then render the experiment ``root`` selects; on any failure or interruption, remove what this
    job wrote."""
    values = evaluate(root)
    try:
        render(root)
    except BaseException:
        exp = root.experiment
        stem = artifact_stem(root.paths.results, exp)
        for suffix in TABLE_SUFFIXES if kind_of(exp).is_table else FIGURE_SUFFIXES:
            Path(f"{stem}{suffix}").unlink(missing_ok=True)
        values.unlink(missing_ok=True)
        raise


main = step(build)


if __name__ == "__main__":
    main()
