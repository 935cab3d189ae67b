"""The inputs an evaluation step reads: synthetic datasets and materialized real posterior sets, and the
config records that name them (:class:`RealSystem`, :data:`RealSet`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated

import numpy as np

from calib.data.real import PosteriorSet, one_vs_other, read_posterior_set, top_label_view
from calib.data.registry import REAL_SETS
from calib.data.synthetic import SYSTEMS
from calib.data.zoo import SPLITS, zoo_names
from calib.validation import Choice, Integer
from pipeline import own_sets
from pipeline.config import group_options
from pipeline.io import load_dataset, require_intact
from pipeline.parameters import Invalid
from pipeline.real_data import real_set_path


@cache
def posterior_sets() -> tuple[str, ...]:
    """Every real posterior set a config may name: the registry's, the zoo's (``zoo/<data>/<model>/<split>``)
    and the user's own (``own/<name>``, :mod:`pipeline.own_sets`)."""
    zoo = (f"{pair}/{split}" for pair in zoo_names() for split in SPLITS)
    return (*REAL_SETS, *zoo, *own_sets.real_set_names())


RealSet = Annotated[str, Choice(posterior_sets)]


def dataset_names() -> list[str]:
    """Every synthetic dataset config, sorted by name (configs/dataset/*.yaml)."""
    return group_options("dataset")


SyntheticDataset = Annotated[str, Choice(dataset_names)]
SyntheticSystem = Annotated[str, Choice(SYSTEMS)]


@dataclass(frozen=True, kw_only=True)
class RealSystem:
    """A real posterior set as a row of a table: its ``label``, its ``set``, and with ``one_vs_other: c`` the
    binary view "class c vs the rest" (Ferrer & Ramos (2024), Sec. 3.5), and with ``top_label: true`` the
    binary view "the top class is right" (:func:`calib.data.real.top_label_view`)."""

    label: str
    set: RealSet
    one_vs_other: Annotated[int, Integer(minimum=0)] | None = None
    top_label: bool = False

    def __post_init__(self):
        if self.top_label and self.one_vs_other is not None:
            raise Invalid("top_label", "a system is seen one way: top_label or one_vs_other, not both")


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


def system_set(system: RealSystem, data: DataSources) -> PosteriorSet:
    """The posterior set of a system entry (``set``), as a one-vs-other view when it asks for one (``one_vs_other``)."""
    pset = data.real(system.set)
    if system.top_label:
        return top_label_view(pset)
    return pset if system.one_vs_other is None else one_vs_other(pset, system.one_vs_other)
