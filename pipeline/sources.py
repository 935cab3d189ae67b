"""The inputs an evaluation step reads: synthetic datasets and materialized real posterior sets."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
from omegaconf import DictConfig

from calib.data.real import PosteriorSet, one_vs_other, read_posterior_set
from pipeline.io import load_dataset, require_intact
from pipeline.real_data import real_set_path


class DataSources:
    """Cached access to ``<data>/<name>.npz`` (synthetic) and ``<data>/real/<name>.npz`` (real sets)."""

    def __init__(self, data_dir: str | Path):
        self.data_dir = Path(data_dir)
        self.dataset = cache(self._dataset)
        self.real = cache(self._real)

    def _dataset(self, name: str) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]]:
        return load_dataset(self.data_dir / f"{name}.npz")

    def _real(self, name: str) -> PosteriorSet:
        return read_posterior_set(require_intact(real_set_path(self.data_dir, name), "real posterior set"))


def system_set(system: DictConfig, data: DataSources) -> PosteriorSet:
    """The posterior set of a system entry (``set``), as a one-vs-other view when it asks for one (``one_vs_other``)."""
    pset = data.real(system.set)
    return one_vs_other(pset, int(system.one_vs_other)) if "one_vs_other" in system else pset
