"""Step: build several experiments one after another in one process (the workflow's artifact jobs).

``python -m pipeline.steps.batch --results <folder> <paper>_<artifact> [...]`` builds each named
experiment exactly as ``python -m pipeline.steps.artifact experiment=<paper>_<artifact>`` does
(evaluate, then render; the same bytes), in the order given. Python, the libraries and matplotlib
start once for all of them, and each config is read from the cache of composed experiments
(``pipeline.config.experiment_config``). The first experiment that fails stops the step: its own
files are removed (``pipeline.steps.artifact.build``) and Snakemake discards the job's other
outputs, so a rerun builds the whole job again.
"""

from __future__ import annotations

import argparse
import sys
import time

from pipeline.config import experiment_config, experiment_names
from pipeline.config_checks import check_config
from pipeline.parameters import ConfigError
from pipeline.steps.artifact import build


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", required=True, help="the results folder (paths.results)")
    parser.add_argument("experiments", nargs="+", metavar="experiment", help="<paper>_<artifact> config names")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.experiments) - set(experiment_names()))
    if unknown:
        parser.error(f"no config configs/experiment/<name>.yaml for {unknown}; see `ls configs/experiment`")
    for name in args.experiments:
        start = time.perf_counter()
        cfg = experiment_config(name, results=args.results)
        try:
            parameters = check_config(cfg)
        except ConfigError as exc:
            sys.exit(f"batch: configs/experiment/{name}.yaml: {exc}")
        build(cfg, parameters)
        print(f"batch: built {name} in {time.perf_counter() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main()
