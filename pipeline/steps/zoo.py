"""Step: build the zoo posterior sets of one dataset (``zoo_dataset=<name>``), every model, cal and test.

Writes ``<paths.data>/real/zoo/<dataset>/<model>/<split>.npz``, the layout of materialized real sets.
"""

from __future__ import annotations

from calib.data.real import save_posterior_set
from calib.data.zoo import DATASETS, MODELS, zoo_posteriors
from pipeline.io import atomic_write
from pipeline.real_data import real_set_path
from pipeline.root import Root
from pipeline.steps.command_line import step


@step
def main(root: Root) -> None:
    dataset = root.zoo_dataset
    if dataset not in DATASETS:
        raise SystemExit(f"zoo needs zoo_dataset=<one of {sorted(DATASETS)}>; got {dataset!r}")
    for model in MODELS:
        sets = zoo_posteriors(dataset, model, seed=root.zoo.seed, fractions=tuple(root.zoo.fractions))
        for pset in sets.values():
            path = atomic_write(
                real_set_path(root.paths.data, pset.name), lambda tmp, p=pset: save_posterior_set(tmp, p), checksum=True
            )
        print(
            f"zoo: {dataset} / {model}: wrote {path.parent} "
            f"(cal {sets['cal'].n_samples}, test {sets['test'].n_samples})"
        )


if __name__ == "__main__":
    main()
