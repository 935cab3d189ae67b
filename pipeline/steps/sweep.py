"""Step: one point of a declared sweep (``sweep=<name> point=<i>``), or its aggregate (``sweep=<name>``).

See :mod:`pipeline.sweeps` for what a sweep declares and what the aggregate draws.
"""

from __future__ import annotations

from pipeline.io import write_csv
from pipeline.root import Root
from pipeline.sources import DataSources
from pipeline.steps.command_line import step
from pipeline.sweeps import aggregate, point_path, run_point, sweep_names


@step
def main(root: Root) -> None:
    sweep = root.sweep
    if sweep is None:
        raise SystemExit(f"sweep needs sweep=<name>; declared sweeps: {sweep_names()}")
    if root.point is None:
        print("sweeps: wrote " + ", ".join(str(p) for p in aggregate(sweep, root.paths.results)))
        return
    frame = run_point(sweep, root.point, DataSources(root.paths.data))
    path = write_csv(point_path(root.paths.results, sweep.name, root.point), frame)
    print(f"sweeps: wrote {path} ({len(frame)} values)")


if __name__ == "__main__":
    main()
