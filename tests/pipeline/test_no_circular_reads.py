"""No step that computes our numbers reads the published ones (the report compares; nothing else looks).

Two scans: the code (only the comparing modules may open configs/reference/ or read an experiment's
``reference`` block), and the experiment configs (a published number may appear in an experiment's
own parameters only as a declared ``input`` of its comparison).
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from pipeline.references import _first_match, published_cells
from pipeline.targets import experiments

ROOT = Path(__file__).resolve().parents[2]
# The comparing step, and the declaration of a reference block (it checks the block's keys and opens no file).
NOT_COMPUTING = {"pipeline/references.py", "pipeline/steps/report.py", "pipeline/config_blocks.py"}
SOURCES = sorted(str(p.relative_to(ROOT)) for folder in ("calib", "pipeline") for p in (ROOT / folder).rglob("*.py"))


def _presence_checks(tree: ast.AST) -> set[int]:
    """The ``x.reference`` nodes only compared with None (``exp.reference is not None``: whether an experiment
    has published numbers, as a caption says; typed parameters always have the field), which read no number."""
    return {
        id(node.left)
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare)
        and all(isinstance(op, ast.Is | ast.IsNot) for op in node.ops)
        and all(isinstance(c, ast.Constant) and c.value is None for c in node.comparators)
    }


def _reads_published(tree: ast.AST) -> list[str]:
    found = []
    presence = _presence_checks(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and "configs/reference" in node.value:
            found.append(f"the path {node.value!r}")
        elif isinstance(node, ast.Attribute) and node.attr == "reference" and id(node) not in presence:
            found.append("an experiment's .reference block")
        elif (
            isinstance(node, ast.Attribute)
            and node.attr == "references"
            and getattr(node.value, "attr", "") in ("paths",)
        ):
            found.append("paths.references")
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "get" and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and first.value == "reference":
                found.append('.get("reference")')
        elif isinstance(node, ast.ImportFrom) and node.module == "pipeline.references":
            found.append("an import from pipeline.references")
    return found


@pytest.mark.parametrize("source", [s for s in SOURCES if s not in NOT_COMPUTING])
def test_computing_code_never_reads_published_numbers(source):
    tree = ast.parse((ROOT / source).read_text())
    assert _reads_published(tree) == [], source


def test_the_scan_finds_a_planted_read():
    planted = "v = cfg.paths.references\nexp.reference.file\nopen('configs/reference/x.csv')\nexp.get('reference')"
    assert len(_reads_published(ast.parse(planted))) == 4
    assert len(_reads_published(ast.parse("from pipeline.references import compare"))) == 1


def _float_leaves(node, path="experiment"):
    """Every float of typed parameters ``node`` (dataclasses, mappings, lists), but in its reference block."""
    if dataclasses.is_dataclass(node):
        items = ((f.name, getattr(node, f.name)) for f in dataclasses.fields(node))
    else:
        items = node.items() if isinstance(node, dict) else enumerate(node)
    for key, value in items:
        here = f"{path}.{key}"
        if key == "reference" and path == "experiment":
            continue
        if dataclasses.is_dataclass(value) or isinstance(value, dict | list | tuple):
            yield from _float_leaves(value, here)
        elif isinstance(value, float):
            yield here, value


# Every listed experiment's typed parameters (by its config's name), as the workflow types them.
TYPED = {e.name: e.parameters for e in experiments()}
WITH_REFERENCE = [name for name, exp in TYPED.items() if exp.reference is not None]


@pytest.mark.parametrize("name", WITH_REFERENCE)
def test_experiment_parameters_hold_no_published_result(name):
    exp = TYPED[name]
    ref = exp.reference  # typed: the comparing step reads it so
    cells = published_cells(ref, ROOT / "configs" / "reference")
    inputs, results = set(), set()
    for c in cells.itertuples(index=False):
        declared = _first_match(ref.cells, c.row, c.column)
        (inputs if getattr(declared, "status", None) == "input" else results).add(float(c.published))

    def matches(value, numbers):
        return any(abs(value - n) < 1e-12 for n in numbers)

    # a value printed both as an input and as a result (MRR keeps the baseline's accuracy) is an input
    leaked = [(path, v) for path, v in _float_leaves(exp) if matches(v, results) and not matches(v, inputs)]
    assert leaked == [], f"{name}: published results among its parameters: {leaked}"
