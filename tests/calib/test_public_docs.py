"""Documentation that runs: every public name of ``calib`` (``calib.__all__``) has a numpydoc docstring
with its source, its parameters, what it returns (functions) or what fitting sets (classes), and an
example that runs.

``CalibInputError`` is the one exception: an exception class, with no formula and nothing fitted. The
examples also run with the suite as doctests (``--doctest-modules``); here each public name must have
at least one, so a docstring cannot pass by having none. Each check is a function that returns its
findings, tried on broken docstrings too, so it can fail. That every "Source:" resolves to the
bibliography is tests/calib/test_bibliography.py's check.
"""

from __future__ import annotations

import doctest
import inspect
import re

import pytest

import calib

EXEMPT = {"CalibInputError"}
PUBLIC = [name for name in calib.__all__ if name not in EXEMPT]
SECTION = re.compile(r"^(?P<title>[A-Z][A-Za-z ]+)\n-+$", re.MULTILINE)
SOURCE = re.compile(r"^Sources?:", re.MULTILINE)
ENTRY = re.compile(r"^(?P<names>\*{0,2}\w+(?:, \*{0,2}\w+)*)(?: : .*)?$")


def sections(docstring: str) -> dict[str, str]:
    """The numpydoc sections of a docstring ("Parameters", "Returns", ...) and their text: a title line
    underlined by dashes of the same length, up to the next such title."""
    found = [m for m in SECTION.finditer(docstring) if len(m.group(0).splitlines()[1]) == len(m.group("title"))]
    ends = [m.start() for m in found[1:]] + [len(docstring)]
    return {m.group("title"): docstring[m.end() : end] for m, end in zip(found, ends, strict=True)}


def entries(section: str) -> list[str]:
    """The names an entry list documents: every unindented line "name : type" or "name" ("a_, b_ : float"
    gives two)."""
    names = []
    for line in section.splitlines():
        if line and not line[0].isspace() and (match := ENTRY.match(line)):
            names += match.group("names").split(", ")
    return names


def signature_names(obj) -> list[str]:
    """The parameters a caller passes to a function or a class (its constructor's, ``self`` left out);
    ``*args`` and ``**kwargs`` spelled with their stars."""
    names = []
    for name, parameter in inspect.signature(obj).parameters.items():
        stars = {parameter.VAR_POSITIONAL: "*", parameter.VAR_KEYWORD: "**"}.get(parameter.kind, "")
        names.append(stars + name)
    return names


def doc_problems(docstring: str | None, *, is_class: bool, parameters: list[str]) -> list[str]:
    """What the docstring of a public name lacks: a one-line summary, a "Source:" paragraph, the
    sections Parameters, Returns (functions) or, for classes, Attributes (what fitting sets, names
    ending in "_") or Methods (a configured estimator without fitted state), and Examples, and an
    entry for every parameter and none for a parameter that does not exist. A constructor without
    parameters documents that with a single entry "None"."""
    if not docstring:
        return ["no docstring"]
    problems = []
    summary = docstring.split("\n\n", 1)[0]
    if "\n" in summary.strip() or not summary.strip():
        problems.append("no one-line summary")
    if not SOURCE.search(docstring):
        problems.append('no "Source:" paragraph')
    found = sections(docstring)
    required = ["Parameters", "Returns", "Examples"]
    if is_class:
        required[1] = "Methods" if "Methods" in found else "Attributes"
    problems += [f"no {title} section" for title in required if title not in found]
    if "Parameters" in found:
        documented = entries(found["Parameters"])
        if not parameters and documented == ["None"]:
            documented = []
        problems += [f"parameter {name} not documented" for name in parameters if name not in documented]
        problems += [f"documents {name}, which is no parameter" for name in documented if name not in parameters]
    if is_class and "Attributes" in found:
        problems += [
            f"attribute {name} does not end in _" for name in entries(found["Attributes"]) if not name.endswith("_")
        ]
    if "Examples" in found and ">>> " not in found["Examples"]:
        problems.append("no example in the Examples section")
    return problems


@pytest.mark.parametrize("name", PUBLIC)
def test_public_name_has_a_complete_docstring(name):
    obj = getattr(calib, name)
    docstring = inspect.getdoc(obj)
    assert doc_problems(docstring, is_class=inspect.isclass(obj), parameters=signature_names(obj)) == []


@pytest.mark.parametrize("name", PUBLIC)
def test_public_examples_run(name):
    obj = getattr(calib, name)
    module = inspect.getmodule(obj)
    tests = [t for t in doctest.DocTestFinder(recurse=False).find(obj, name, module=module) if t.examples]
    assert tests, f"{name} has no doctest"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in tests:
        test.globs = dict(vars(module))
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_every_public_name_but_the_exception_is_checked():
    assert set(calib.__all__) - set(PUBLIC) == EXEMPT and len(PUBLIC) == len(calib.__all__) - 1


GOOD_FUNCTION = """Brier score of two things.

BS = (1/N) sum_t (q - y)^2.

Source: Brier (1950).

Parameters
----------
scores : array_like
    The scores.
**options
    More.

Returns
-------
float
    The score.

Examples
--------
>>> 1 + 1
2
"""

GOOD_CLASS = """A calibrator.

Source: Platt (2000).

Parameters
----------
None
    No arguments.

Attributes
----------
a_, b_ : float
    The fitted numbers.

Examples
--------
>>> 1
1
"""


def test_a_complete_docstring_passes():
    assert doc_problems(GOOD_FUNCTION, is_class=False, parameters=["scores", "**options"]) == []
    assert doc_problems(GOOD_CLASS, is_class=True, parameters=[]) == []


@pytest.mark.parametrize(
    "docstring, is_class, parameters, problem",
    [
        (None, False, [], "no docstring"),
        (
            GOOD_FUNCTION.replace("Brier score of two things.", "Brier score\nof two things."),
            False,
            ["scores", "**options"],
            "no one-line summary",
        ),
        (
            GOOD_FUNCTION.replace("Source: Brier (1950).", "After Brier (1950)."),
            False,
            ["scores", "**options"],
            'no "Source:" paragraph',
        ),
        (GOOD_FUNCTION.replace("Returns\n-------", "Returns"), False, ["scores", "**options"], "no Returns section"),
        (
            GOOD_FUNCTION.replace("Examples\n--------", "Examples\n-----"),
            False,
            ["scores", "**options"],
            "no Examples section",
        ),
        (GOOD_FUNCTION.replace(">>> 1 + 1\n2", "See the tests."), False, ["scores", "**options"], "no example"),
        (GOOD_FUNCTION, False, ["scores", "kind", "**options"], "parameter kind not documented"),
        (GOOD_FUNCTION, False, ["scores", "**binning"], "parameter **binning not documented"),
        (GOOD_FUNCTION, False, ["scores"], "documents **options, which is no parameter"),
        (GOOD_FUNCTION, True, ["scores", "**options"], "no Attributes section"),
        (GOOD_CLASS, True, ["reg"], "parameter reg not documented"),
        (GOOD_CLASS.replace("a_, b_ : float", "a_, b : float"), True, [], "attribute b does not end in _"),
        (
            GOOD_CLASS.replace("Parameters\n----------\nNone\n    No arguments.\n\n", ""),
            True,
            [],
            "no Parameters section",
        ),
    ],
)
def test_an_incomplete_docstring_is_reported(docstring, is_class, parameters, problem):
    assert any(problem in p for p in doc_problems(docstring, is_class=is_class, parameters=parameters))


def test_parameters_are_read_from_the_signature():
    assert signature_names(calib.bootstrap)[:2] == ["statistic", "*arrays"]
    assert signature_names(calib.load_posteriors)[-1] == "**options"
    assert signature_names(calib.MatrixScaling)[:4] == ["features", "reg_lambda", "reg_mu", "penalty"]
    assert signature_names(calib.VectorScaling) == ["features"]
