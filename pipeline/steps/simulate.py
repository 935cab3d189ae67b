"""Step: generate one synthetic dataset (``dataset=<name>``) into ``<paths.data>/<name>.npz``.

In paper-exact mode (``rng: paper``) the file also carries the authors' replayed xv folds,
``folds/<system>/<D|T|H>``, so later steps reproduce their cross-validated numbers.
"""

from __future__ import annotations

from pathlib import Path

from calib.data.ferrer2024_folds import authors_xv_folds
from calib.data.synthetic import gaussian_posteriors
from pipeline.io import save_dataset
from pipeline.root import Root
from pipeline.steps.command_line import step


@step
def main(root: Root) -> None:
    ds = root.dataset  # its generator is gaussian, the only one declared
    if ds is None:
        raise SystemExit(
            "simulate needs a dataset: python -m pipeline.steps.simulate dataset=<name> (see configs/dataset/)"
        )
    name = root.names["dataset"]
    data = gaussian_posteriors(**ds.settings(), seed=ds.seed)
    extras = {}
    if data.legacy_rng is not None:
        folds = authors_xv_folds(data.labels, data.legacy_rng)
        extras = {f"folds/{system}/{letter}": ids for (system, letter), ids in folds.items() if system in data.systems}
    path = save_dataset(Path(root.paths.data) / f"{name}.npz", data.labels, data.systems, extras)
    print(f"simulate: wrote {path} ({data.labels.size} samples, systems {sorted(data.systems)})")


if __name__ == "__main__":
    main()
