"""The inputs an evaluation step reads: synthetic datasets and materialized real posterior sets."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np

from calib.data.real import PosteriorSet, read_posterior_set
from pipeline.io import load_dataset, require_intact


class DataSources:
    """Cached access to ``<data>/<name>.npz`` (synthetic) and ``<data>/real/<name>.npz`` (real sets)."""

    def __init__(self, data_dir: str | Path):
        self.data_dir = Path(data_dir)
        self.dataset = cache(self._dataset)
        self.real = cache(self._real)

    def _dataset(self, name: str) -> tuple[np.ndarray, dict[str, np.ndarray], dict[str, np.ndarray]]:
        return load_dataset(self.data_dir / f"{name}.npz")

    def _real(self, name: str) -> PosteriorSet:
        return read_posterior_set(require_intact(self.data_dir / "real" / f"{name}.npz", "real posterior set"))
