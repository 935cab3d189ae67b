"""The architecture drawing in the README is the real import graph, and calib/ has no import circle.

``python tests/test_architecture.py`` prints the README's diagram (Mermaid) from the code: the modules
of calib/ and pipeline/ grouped into areas, an arrow for every area that imports another.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "pipeline"))
from test_imports import _imported, _module_name, find_cycle, import_graph  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
# Areas in drawing order: (id, label, the module prefixes that belong to it); the first match wins.
AREAS = (
    ("steps", "pipeline.steps: one entry point per rule", ("pipeline.steps",)),
    ("papers", "pipeline.papers: each paper's experiment kinds", ("pipeline.papers",)),
    ("pipeline", "pipeline: config, kinds and their parameters, sources, report", ("pipeline",)),
    ("cli", "calib.cli: the calib command", ("calib.cli", "calib.cli_report")),
    ("evaluation", "calib.evaluation: metric registry, passes, engine", ("calib.evaluation",)),
    ("calibrators", "calib.calibrators: registry, fits, folds, files", ("calib.calibrators",)),
    ("resampling", "calib.resampling: bootstrap, tests", ("calib.resampling",)),
    ("errors", "calib.calibration_errors: binned, smooth, kernel, entropic", ("calib.calibration_errors",)),
    ("scoring", "calib.scoring: scoring rules, decisions, decompositions", ("calib.scoring",)),
    ("data", "calib.data: generators, loaders", ("calib.data",)),
    ("plots", "calib.plots: diagrams", ("calib.plots",)),
    ("core", "calib core: validation, _internal, bibliography", ("calib",)),
)


def area_of(module: str) -> str:
    for key, _, prefixes in AREAS:
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return key
    raise ValueError(f"{module} belongs to no area")


def area_graph() -> dict[str, set[str]]:
    """Area -> the areas its modules import (static imports, those inside functions included)."""
    paths = {
        _module_name(p, ROOT): p for folder in ("calib", "pipeline") for p in sorted((ROOT / folder).rglob("*.py"))
    }
    known = set(paths)
    edges: dict[str, set[str]] = {key: set() for key, _, _ in AREAS}
    for module, path in paths.items():
        for target in _imported(ast.parse(path.read_text()), module, path.name == "__init__.py", known):
            if area_of(target) != area_of(module):
                edges[area_of(module)].add(area_of(target))
    return edges


def mermaid() -> str:
    order = [key for key, _, _ in AREAS]
    lines = ["```mermaid", "flowchart TD"]
    lines += [f'    {key}["{label}"]' for key, label, _ in AREAS]
    edges = area_graph()
    lines += [f"    {key} --> {target}" for key in order for target in sorted(edges[key], key=order.index)]
    return "\n".join([*lines, "```"])


def test_the_readme_draws_the_import_graph_of_the_code():
    drawn = re.search(r"```mermaid\n.*?```", (ROOT / "README.md").read_text(), re.DOTALL)
    assert drawn is not None and drawn.group(0) == mermaid(), "redraw it: python tests/test_architecture.py"


def test_calib_modules_import_each_other_without_a_circle():
    cycle = find_cycle(import_graph(ROOT / "calib"))
    assert cycle == [], "import circle: " + " -> ".join(cycle)


def test_the_areas_import_each_other_without_a_circle():
    cycle = find_cycle(area_graph())
    assert cycle == [], "circle between areas: " + " -> ".join(cycle)


def test_the_library_never_imports_the_pipeline():
    assert all(
        not area.startswith(("steps", "papers", "pipeline"))
        for key, _, prefixes in AREAS
        if prefixes[0].startswith("calib")
        for area in area_graph()[key]
    )


# Private names one module still imports from another: (importing module, imported module, name). None: the
# table reader's rework (issue 53, build 3) made the last two public (calib.data.reading).
PRIVATE_IMPORTS_LEFT: set[tuple[str, str, str]] = set()
# Lines of calib/evaluation/engine.py at most: the API only (issue 53); the pass, the calibrators' evidence,
# the CORP lens, the subgroups and progress each have a module of their own.
ENGINE_LINES = 500


def private_imports() -> set[tuple[str, str, str]]:
    """Each ``from <calib or pipeline module> import _name`` (in functions too): a module's private name
    used by another, which then depends on what its author may change freely."""
    found = set()
    for folder in ("calib", "pipeline"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            module = _module_name(path, ROOT)
            package = module if path.name == "__init__.py" else module.rpartition(".")[0]
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.ImportFrom):
                    continue
                source = node.module or ""
                if node.level:
                    anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    source = f"{anchor}.{source}" if source else anchor
                if source.split(".")[0] not in ("calib", "pipeline"):
                    continue
                found |= {
                    (module, source, alias.name)
                    for alias in node.names
                    if alias.name.startswith("_") and not alias.name.startswith("__")
                }
    return found


def test_no_module_imports_another_modules_private_name():
    found = private_imports()
    assert found - PRIVATE_IMPORTS_LEFT == set(), "make these public (no underscore, with a docstring)"
    assert PRIVATE_IMPORTS_LEFT - found == set(), "no longer imported: remove them from PRIVATE_IMPORTS_LEFT"


def test_the_engine_holds_the_evaluation_api_only():
    lines = len((ROOT / "calib" / "evaluation" / "engine.py").read_text().splitlines())
    assert lines < ENGINE_LINES, f"engine.py has {lines} lines: move a concern into a module of its own"


if __name__ == "__main__":
    print(mermaid())
