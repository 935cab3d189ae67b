"""Step: generate one synthetic dataset (``dataset=<name>``) into ``<paths.data>/<name>.npz``.

In paper-exact mode (``rng: paper``) the file also carries the authors' replayed xv folds,
``folds/<system>/<D|T|H>``, so later steps reproduce their cross-validated numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from omegaconf import DictConfig

from calib.data.ferrer2024_folds import authors_xv_folds
from calib.data.synthetic import gaussian_posteriors
from pipeline.config_blocks import Dataset
from pipeline.config_checks import check_config
from pipeline.io import save_dataset
from pipeline.parameters import typed
from pipeline.steps.command_line import step


@step
def main(cfg: DictConfig, choices: Mapping[str, str]) -> None:
    check_config(cfg)
    name = choices.get("dataset")
    if cfg.get("dataset") is None or name is None:
        raise SystemExit(
            "simulate needs a dataset: python -m pipeline.steps.simulate dataset=<name> (see configs/dataset/)"
        )
    ds = typed(Dataset, cfg.dataset, "dataset")  # its generator is gaussian, the only one declared
    data = gaussian_posteriors(**ds.settings(), seed=ds.seed)
    extras = {}
    if data.legacy_rng is not None:
        folds = authors_xv_folds(data.labels, data.legacy_rng)
        extras = {f"folds/{system}/{letter}": ids for (system, letter), ids in folds.items() if system in data.systems}
    path = save_dataset(Path(cfg.paths.data) / f"{name}.npz", data.labels, data.systems, extras)
    print(f"simulate: wrote {path} ({data.labels.size} samples, systems {sorted(data.systems)})")


if __name__ == "__main__":
    main()
