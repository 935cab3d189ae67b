"""The code stamp: one file that stands for all the code the results are built with.

``python -m pipeline.code_stamp <out> <file> [...]`` writes ``sha256  path`` for every file, sorted by
path (the format of ``sha256sum``, so ``sha256sum -c <out>`` checks a checkout against it). The
workflow's jobs depend on this file rather than on each module, and it records which code built the
results. It imports nothing heavy: the workflow runs it before any other job can start.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from calib._internal.files import atomic_write


def write_code_stamp(paths, out: str | Path) -> Path:
    """Write ``sha256  path`` for every file of ``paths`` into ``out`` (atomically), sorted by path.

    Example: ``write_code_stamp(["calib/__init__.py"], "results/code.sha256")``.
    """
    lines = "".join(f"{hashlib.sha256(Path(p).read_bytes()).hexdigest()}  {p}\n" for p in sorted(map(str, paths)))
    return atomic_write(out, lambda tmp: tmp.write_text(lines))


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) < 2:
        raise SystemExit("usage: python -m pipeline.code_stamp <out> <file> [<file> ...]")
    out, *paths = args
    print(f"code_stamp: wrote {write_code_stamp(paths, out)} ({len(paths)} files)")


if __name__ == "__main__":
    main()
