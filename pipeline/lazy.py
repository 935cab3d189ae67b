"""Registries of step functions named as "module:function", imported only when a job needs one.

Each workflow job runs one experiment kind; importing every paper's module (scikit-learn, scipy.stats,
matplotlib, ...) for each of some 300 jobs cost about a second per job.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable


def resolve(entry: str | Callable) -> Callable:
    """The function an entry names ("package.module:function"), or the entry itself if it is one."""
    if callable(entry):
        return entry
    module, _, name = entry.partition(":")
    return getattr(importlib.import_module(module), name)
