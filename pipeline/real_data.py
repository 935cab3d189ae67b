"""Where the workflow gets the published real posterior sets: the configured mirror or downloads.

The environment variable ``CALIB_REAL_DATA`` overrides ``real_data.mirror``. Availability is
decided from file presence only (cheap, for the Snakefile); the fetch step verifies checksums.
"""

from __future__ import annotations

import os
from pathlib import Path

from omegaconf import DictConfig

from calib.data.registry import REAL_SETS, RealSet

ENV_MIRROR = "CALIB_REAL_DATA"
HOW_TO_PROVIDE = (
    f"set the environment variable {ENV_MIRROR} (or real_data.mirror in configs/config.yaml) to a directory "
    "laid out like ../shared/real_posteriors, or set real_data.download: true to fetch the files from their "
    "upstream repositories (pinned commits, sha256-checked)"
)


def mirror_dir(cfg: DictConfig) -> Path | None:
    """The mirror directory in effect (environment first), or None."""
    value = os.environ.get(ENV_MIRROR) or cfg.real_data.get("mirror")
    return Path(value) if value else None


def locate_options(cfg: DictConfig) -> dict:
    """Keyword arguments of :func:`calib.data.registry.locate` from the config."""
    rd = cfg.real_data
    return {
        "mirror": mirror_dir(cfg),
        "cache": Path(rd.cache),
        "download": bool(rd.download),
        "url": rd.url,
        "timeout": float(rd.timeout_seconds),
    }


def obtainable(cfg: DictConfig, name: str) -> bool:
    """Whether registered set ``name`` can be materialized: its files are in the mirror, or downloads are on."""
    entry: RealSet = REAL_SETS[name]
    if entry.unavailable:
        return False
    if cfg.real_data.download:
        return True
    mirror = mirror_dir(cfg)
    return mirror is not None and all((mirror / f).is_file() for f in entry.files)


def real_set_path(data_dir: str | Path, name: str) -> Path:
    """Where the materialized real posterior set ``name`` lives under the data folder."""
    return Path(data_dir) / "real" / f"{name}.npz"
