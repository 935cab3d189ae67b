"""Step: compute an experiment's values (``experiment=<paper>_<artifact>``) into a tidy CSV.

Writes ``<paths.results>/<paper>/<artifact>_values.csv``; the rendered figure or table sits beside it.
"""

from __future__ import annotations

import time
from pathlib import Path

from pipeline.io import values_frame, values_path, write_csv
from pipeline.kinds import Parameters, kind_of
from pipeline.root import Root
from pipeline.sources import DataSources
from pipeline.steps.command_line import step


def experiment_of(root: Root, step_name: str) -> Parameters:
    """The experiment ``root`` selects; without one, the step stops saying how to select one."""
    if root.experiment is None:
        raise SystemExit(
            f"{step_name} needs an experiment: python -m pipeline.steps.{step_name} experiment=<paper>_<artifact> "
            "(configs/experiment/), or experiment=own/<protocol> own=<set>"
        )
    return root.experiment


def evaluate(root: Root) -> Path:
    """Compute the values of the experiment ``root`` selects and write them; the path written."""
    exp = experiment_of(root, "evaluate")
    start = time.perf_counter()
    frame = values_frame(kind_of(exp).evaluate(exp, DataSources(root.paths.data)))
    path = write_csv(values_path(root.paths.results, exp), frame)
    print(f"evaluate: wrote {path} ({len(frame)} values) in {time.perf_counter() - start:.1f} s")
    return path


main = step(evaluate)


if __name__ == "__main__":
    main()
