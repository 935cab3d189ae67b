"""Step: evaluate an experiment and render its figure or table in one process (what the workflow runs).

Same outputs as ``pipeline.evaluate`` followed by ``pipeline.render``, which stay available to rerun
either stage by hand; one process saves the start-up (Python, imports, Hydra) of a second job.
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from pipeline.evaluate import evaluate
from pipeline.render import render
from pipeline.schema import check_config


@hydra.main(version_base=None, config_path="../configs", config_name="config")
def main(cfg: DictConfig) -> None:
    check_config(cfg)
    evaluate(cfg)
    render(cfg)


if __name__ == "__main__":
    main()
