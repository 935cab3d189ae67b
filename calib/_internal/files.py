"""Writing files so that a crash never leaves a half-written one, and checking cached files by checksum.

A file is written to a temporary name beside its destination and moved into place with ``os.replace``
(atomic on POSIX): readers see the old file or the complete new one, never a part. A cached file may
carry a ``<name>.sha256`` sidecar, written before the file is moved into place, so that a file that
was later truncated or altered is recognized.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

CHECKSUM_SUFFIX = ".sha256"


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file's bytes (streamed)."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def checksum_path(path: str | Path) -> Path:
    path = Path(path)
    return path.with_name(path.name + CHECKSUM_SUFFIX)


def atomic_write(path: str | Path, write: Callable[[Path], None], *, checksum: bool = False) -> Path:
    """Call ``write(tmp)`` then move ``tmp`` onto ``path``, so a failed or killed step never leaves a half file.

    With ``checksum``, the sidecar ``<path>.sha256`` is written (atomically) before the move.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=path.suffix)
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o644)
        if checksum:
            digest = sha256_file(tmp)
            atomic_write(checksum_path(path), lambda side: side.write_text(f"{digest}  {path.name}\n"))
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def checksum_matches(path: str | Path) -> bool:
    """Whether ``path`` exists, has a sidecar and its bytes hash to the recorded sha256."""
    path, side = Path(path), checksum_path(path)
    if not path.is_file() or not side.is_file():
        return False
    recorded = side.read_text().split()
    return bool(recorded) and recorded[0] == sha256_file(path)
