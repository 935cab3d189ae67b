"""Where the workflow gets the published real posterior sets: the configured mirror or downloads.

``real_data.download`` decides: ``auto`` (the default) takes a file from the mirror when it holds it
and downloads it from its upstream repository at the pinned commit otherwise, provided the upstream
answers (one probe per process, within ``timeout_seconds``); ``true`` always downloads what the
mirror lacks; ``false`` never downloads. The environment variables ``CALIB_REAL_DATA`` and
``CALIB_REAL_DATA_URL`` override ``real_data.mirror`` and ``real_data.url``. Availability is decided
from file presence and that probe only (cheap, for the Snakefile); the fetch step verifies sizes and
checksums.
"""

from __future__ import annotations

import functools
import http.client
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

from calib.data.registry import REAL_SETS, RealSet, upstream_url

if TYPE_CHECKING:
    from pipeline.root import Root

ENV_MIRROR = "CALIB_REAL_DATA"
ENV_URL = "CALIB_REAL_DATA_URL"
HOW_TO_PROVIDE = (
    f"set the environment variable {ENV_MIRROR} (or real_data.mirror in configs/config.yaml) to a directory "
    "laid out like ../shared/real_posteriors, or let the machine reach the upstream repositories: with "
    "real_data.download: auto (the default) or true, the files are fetched from them (pinned commits, "
    "sha256-checked)"
)
# The probe of an upstream answers within this many seconds or counts as unreachable (at most timeout_seconds).
PROBE_SECONDS = 10.0


def mirror_dir(root: Root) -> Path | None:
    """The mirror directory in effect (environment first), or None."""
    value = os.environ.get(ENV_MIRROR) or root.real_data.mirror
    return Path(value) if value else None


def url_template(root: Root) -> str:
    """The download address template in effect (environment first): ``{repo}``, ``{commit}``, ``{path}``."""
    return os.environ.get(ENV_URL) or root.real_data.url


def locate_options(root: Root) -> dict:
    """Keyword arguments of :func:`calib.data.registry.locate` from the config."""
    rd = root.real_data
    return {
        "mirror": mirror_dir(root),
        "cache": Path(rd.cache),
        "download": root.real_data.download is not False,
        "url": url_template(root),
        "timeout": float(rd.timeout_seconds),
    }


def obtainable(root: Root, name: str) -> bool:
    """Whether registered set ``name`` can be materialized: it is materialized already, or its files are in
    the mirror or the download cache, or downloads are on (``auto``: and the upstream answers)."""
    entry: RealSet = REAL_SETS[name]
    if entry.unavailable:
        return False
    if real_set_path(root.paths.data, name).is_file():
        return True
    mirror = mirror_dir(root)
    local = [mirror / f for f in entry.files] if mirror is not None else []
    if local and all(p.is_file() for p in local):
        return True
    mode = root.real_data.download
    if mode is False:
        return False
    if mode is True or all((Path(root.real_data.cache) / f).is_file() for f in entry.files):
        return True
    probe = upstream_url(_family_file(entry.family), url_template(root))  # one probe per upstream repository
    return upstream_answers(probe, float(root.real_data.timeout_seconds))


def _family_file(family: str) -> str:
    """The first registered file of a family (every set of the family probes its upstream with it)."""
    return min(f for entry in REAL_SETS.values() if entry.family == family for f in entry.files)


@functools.cache
def upstream_answers(url: str, timeout: float) -> bool:
    """Whether the server of ``url`` answers a HEAD request within min(``timeout``, PROBE_SECONDS) (any
    HTTP status counts: a server that answers 404 is reachable, and the fetch then says what is missing)."""
    request = urllib.request.Request(url, method="HEAD")
    try:
        with urllib.request.urlopen(request, timeout=min(timeout, PROBE_SECONDS)):
            return True
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError):
        return False


def real_set_path(data_dir: str | Path, name: str) -> Path:
    """Where the materialized real posterior set ``name`` lives under the data folder."""
    return Path(data_dir) / "real" / f"{name}.npz"
