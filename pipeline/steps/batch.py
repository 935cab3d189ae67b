"""Step: build several experiments one after another in one process (the workflow's artifact jobs).

``python -m pipeline.steps.batch --results <folder> 'experiment=<paper>_<artifact>' ['experiment=own/<p> own=<s>'
...]`` builds each experiment, given by its Hydra overrides, exactly as ``python -m pipeline.steps.artifact
<overrides> paths.results=<folder>`` does (the same composition, :func:`pipeline.config.compose`, the same
task, the same bytes), in the order given, and prints that command for each. Python, the libraries and
matplotlib start once for all of them. The first experiment that fails stops the step: its own files are
removed (``pipeline.steps.artifact.build``) and Snakemake discards the job's other outputs, so a rerun builds
the whole job again.
"""

from __future__ import annotations

import argparse
import shlex
import time

from pipeline.root import root_of
from pipeline.steps.artifact import build


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", required=True, help="the results folder (paths.results)")
    parser.add_argument(
        "experiments", nargs="+", metavar="overrides", help="an experiment's Hydra overrides, in one argument each"
    )
    args = parser.parse_args(argv)
    from hydra.errors import HydraException

    roots = []
    for given in args.experiments:  # every one composed and typed first: a wrong one stops before any work
        overrides = [*shlex.split(given), f"paths.results={args.results}"]
        try:
            roots.append((given, overrides, root_of(overrides)))
        except HydraException as exc:
            parser.error(f"{given}: {exc}")
    for given, overrides, root in roots:
        start = time.perf_counter()
        print(f"batch: python -m pipeline.steps.artifact {shlex.join(overrides)}", flush=True)
        build(root)
        print(f"batch: built {given} in {time.perf_counter() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
