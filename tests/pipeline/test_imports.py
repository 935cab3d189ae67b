"""The modules of pipeline/ import each other without a circle, and a job imports only its own paper.

The graph counts every ``import`` / ``from`` statement, including those inside functions: an import
deferred into a function still closes a circle, it only hides it until that function runs.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "pipeline"


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(tree: ast.AST, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The pipeline modules one module's statements import (``from a import b`` counts a.b when b is a module)."""
    package = module if is_package else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        found |= {name for name in names if name in known}
    return found - {module}


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Each module of ``package`` (a folder) and the modules of that package it imports."""
    paths = {_module_name(p, package.parent): p for p in sorted(package.rglob("*.py"))}
    known = set(paths)
    return {
        name: _imported(ast.parse(path.read_text()), name, path.name == "__init__.py", known)
        for name, path in paths.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle of ``graph`` as a list of modules (first = last), or [] if there is none."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = "open"
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == "open":
                return stack[stack.index(target) :] + [target]
            if target not in state and (cycle := visit(target)):
                return cycle
        state[node] = "done"
        stack.pop()
        return []

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return []


def test_the_pipeline_modules_import_each_other_without_a_circle():
    cycle = find_cycle(import_graph())
    assert cycle == [], "import circle: " + " -> ".join(cycle)


def test_the_scan_sees_imports_inside_functions_and_relative_ones(tmp_path):
    package = tmp_path / "pipeline"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from pipeline.sub import b\n")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "b.py").write_text("from .. import a\n")
    assert find_cycle(import_graph(package)) == ["pipeline.a", "pipeline.sub.b", "pipeline.a"]


def test_the_config_module_imports_only_the_config_errors():
    """Any module may import pipeline.config: it imports only pipeline.parameters (its errors), a leaf."""
    graph = import_graph()
    assert graph["pipeline.config"] == {"pipeline.parameters"} and graph["pipeline.parameters"] == set()


@pytest.mark.parametrize(("paper", "other"), [("ferrer2024", "silvafilho2023"), ("ecd2025", "vaicenavicius2019")])
def test_an_experiment_imports_only_its_own_papers_module(paper, other):
    code = (
        "import sys\n"
        "from pipeline.config import compose\n"
        "from pipeline.kinds import kind_of\n"
        "from pipeline.root import typed_root\n"
        f"root = typed_root(*compose(['experiment={paper}_{dict(ferrer2024='fig1', ecd2025='fig2')[paper]}']))\n"
        "kind_of(root.experiment)\n"
        "print(sorted(m for m in sys.modules if m.startswith('pipeline.papers.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.split() == [f"['pipeline.papers.{paper}']"]
    assert other not in done.stdout


def test_a_resampling_table_job_imports_no_plotting_or_fitting_library():
    # The own jobs of Tables 3-5 (vaicenavicius2019_tables_*) only resample and lay out a table; pyplot,
    # scipy.stats, scipy.integrate and the calibrators are imported where a figure, a quadrature or a fit
    # needs them.
    code = (
        "import sys\n"
        "import pipeline.steps.batch\n"
        "from pipeline.kinds import paper_kinds\n"
        "paper_kinds('vaicenavicius2019')\n"
        "heavy = ('matplotlib.pyplot', 'scipy.stats', 'scipy.integrate', 'calib.calibrators', 'matplotlib.tri')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["[]"]


def test_a_data_step_checks_its_config_without_loading_scipy_or_pandas():
    # A fetch is most of the workflow's short jobs: checking its config reads the config declarations only.
    code = (
        "import sys\n"
        "import pipeline.steps.fetch\n"
        "from pipeline.config import compose\n"
        "from pipeline.root import typed_root\n"
        "typed_root(*compose(['real_set=ferrer2024/sst2_gpt2']))\n"
        "print(sorted(m for m in ('scipy', 'pandas', 'matplotlib') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["[]"]
