"""Step: materialize one real posterior set (``real_set=<name>``): a published one or one of the user's own.

A published set's files are read from the mirror (or downloaded), their sizes and sha256 checked; an own set
(``real_set=own/<name> own=<name>``, or ``own/<name>/calibration``) is read from the file its declaration
names (:mod:`pipeline.own_sets`). Either is written as ``<paths.data>/real/<name>.npz`` atomically. Any
missing, truncated or altered file stops the step with a message naming the file and the fix; nothing is
written then.
"""

from __future__ import annotations

import sys

from calib._internal.files import atomic_write  # not pipeline.io's: that one loads pandas, which a fetch does not need
from calib.data.real import save_posterior_set
from calib.data.registry import RealDataError, materialize
from pipeline import own_sets
from pipeline.parameters import ConfigError
from pipeline.real_data import locate_options, real_set_path
from pipeline.root import Root
from pipeline.steps.command_line import step


@step
def main(root: Root) -> None:
    name = root.real_set
    if not name:
        raise SystemExit(
            "fetch needs a set: python -m pipeline.steps.fetch real_set=<name> (see calib/data/registry.py), "
            "or real_set=own/<set> own=<set> for one of your own"
        )
    try:
        if name.startswith(own_sets.PREFIX):
            own, _, split = name.removeprefix(own_sets.PREFIX).partition("/")
            if root.own is None or root.own.name != own:
                raise SystemExit(f"fetch: real_set={name} is an own set: add own={own} (its declaration)")
            pset = own_sets.load(own, root.own.declaration, split or "test")
        else:
            pset = materialize(name, **locate_options(root))
    except (RealDataError, KeyError, ConfigError) as exc:
        print(f"fetch: {exc}", file=sys.stderr)
        raise SystemExit(1) from exc
    path = atomic_write(real_set_path(root.paths.data, name), lambda tmp: save_posterior_set(tmp, pset), checksum=True)
    print(f"fetch: wrote {path} ({pset.n_samples} samples, {pset.n_classes} classes, {pset.kind})")


if __name__ == "__main__":
    main()
