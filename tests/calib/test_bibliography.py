"""The one bibliography, calib/bibliography.toml, and the citations that must resolve to it.

(a) every entry is complete; (b) nothing in calib/, pipeline/, configs/ or the README points a reader
at a paper or note outside the repository ("paper 000", "note 001 §10", ../shared/papers); (c) every
"Source:" paragraph of a calib docstring names works of the bibliography in the form ``cite`` gives.
Each check is a function that returns its findings, tried here on broken input too, so it can fail.
"""

from __future__ import annotations

import ast
import doctest
import re
import tomllib
from pathlib import Path

import pytest

import calib.bibliography
from calib.bibliography import cite, load_bibliography, reference
from pipeline.config import compose
from pipeline.root import typed_root

ROOT = Path(__file__).resolve().parents[2]
BIBLIOGRAPHY = ROOT / "calib" / "bibliography.toml"
PAPER_IDS = ("ferrer2024", "silvafilho2023", "reassessing", "vaicenavicius2019", "ecd2025", "dimitriadis2021")


# --- (a) every entry has authors, year and title ------------------------------------------------

FIELDS = {"authors", "year", "title", "venue", "short_title", "url", "doi", "note"}
AUTHOR = re.compile(r"^[^,]+, (?:[A-Z][a-z]?\.(?:[ -]|$))+$")  # "Family, I." / "van Leeuwen, D. A."


def entry_problems(key: str, table: dict) -> list[str]:
    """What is missing or malformed in one table of the bibliography."""
    problems = [f"{key}: no {field}" for field in ("authors", "year", "title", "venue") if field not in table]
    problems += [f"{key}: unknown field {field!r}" for field in sorted(set(table) - FIELDS)]
    authors = table.get("authors", [])
    if not isinstance(authors, list) or not all(isinstance(a, str) and AUTHOR.match(a) for a in authors):
        problems.append(f"{key}: authors must be a list of 'Family, Initials', got {authors!r}")
    elif not authors and not table.get("short_title"):
        problems.append(f"{key}: a work without authors needs a short_title to be cited by")
    year = table.get("year")
    if not ((isinstance(year, int) and 1800 <= year <= 2030) or year == "n.d."):
        problems.append(f"{key}: year must be a year or 'n.d.', got {year!r}")
    for field in ("title", "venue"):
        if field in table and not (isinstance(table[field], str) and table[field].strip()):
            problems.append(f"{key}: empty {field}")
    return problems


def test_every_entry_has_authors_year_and_title():
    tables = tomllib.loads(BIBLIOGRAPHY.read_text(encoding="utf-8"))
    assert [p for key, table in tables.items() for p in entry_problems(key, table)] == []
    assert len(load_bibliography()) == len(tables) > len(PAPER_IDS)


@pytest.mark.parametrize(
    "table, problem",
    [
        ({"authors": ["Platt, J. C."], "title": "T", "venue": "V"}, "no year"),
        ({"year": 2000, "title": "T", "venue": "V"}, "no authors"),
        ({"authors": ["Platt, J. C."], "year": 2000, "venue": "V"}, "no title"),
        ({"authors": ["J. Platt"], "year": 2000, "title": "T", "venue": "V"}, "Family, Initials"),
        ({"authors": [], "year": 2000, "title": "T", "venue": "V"}, "needs a short_title"),
        ({"authors": ["Platt, J. C."], "year": "2000", "title": "T", "venue": "V"}, "year must be"),
        ({"authors": ["Platt, J. C."], "year": 2000, "title": " ", "venue": "V"}, "empty title"),
        ({"authors": ["Platt, J. C."], "year": 2000, "title": "T", "venue": "V", "pages": "1"}, "unknown field"),
    ],
)
def test_an_incomplete_entry_is_reported(table, problem):
    assert any(problem in p for p in entry_problems("broken", table))


def test_the_papers_ids_are_bibliography_keys_and_cite_as_documented():
    assert tuple(compose()[0].papers) == PAPER_IDS
    assert set(PAPER_IDS) <= set(load_bibliography())
    assert cite("ferrer2024") == "Ferrer & Ramos (2024)"
    assert cite("vaicenavicius2019") == "Vaicenavicius et al. (2019)"
    assert cite("platt2000") == "Platt (2000)"
    assert cite("reassessing") == '"Reassessing calibration" (n.d.)'
    with pytest.raises(KeyError, match="no work 'nobody1999'"):
        cite("nobody1999")


def test_the_bibliography_examples_run():
    result = doctest.testmod(calib.bibliography)
    assert result.attempted > 0 and result.failed == 0


def test_the_readme_lists_the_papers_as_the_bibliography_gives_them():
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert [key for key in PAPER_IDS if " ".join(reference(key).split()) not in readme] == []


def test_the_report_headings_come_from_the_bibliography(monkeypatch):
    import pipeline.steps.report as report

    monkeypatch.setattr(report, "listed_experiments", lambda: [])  # headings only: no artifact is read
    _, _, text = report.build(typed_root(*compose()))
    headings = [line for line in text.splitlines() if line.startswith("## ") and ": " in line]
    assert headings == [f"## {key}: {reference(key)}" for key in PAPER_IDS]


# --- (b) no pointer to a paper or note outside the repository -----------------------------------

# "paper 000", "Paper 004's", "paper-002 authors", "note 001 §10", "notes/003", "notes to paper 000",
# any "§", and prose that sends the reader to ../shared/papers or ../shared/notes. The configurable data
# paths (``real_data.mirror: ../shared/real_posteriors``, the authors' figures under
# ../shared/reference) are not citations and stay allowed.
UNREACHABLE = re.compile(
    r"\bpapers?[\s_-]*00\d|\bnotes?[\s/_-]*(?:00\d|to paper|§)|§|shared/(?:papers|notes)\b", re.IGNORECASE
)
TEXT_SUFFIXES = {".py", ".yaml", ".yml", ".smk", ".rst", ".md", ".toml", ".txt", ".tsv"}


def unreachable_citations(text: str) -> list[str]:
    """Every line of ``text`` that cites a paper or note by its number outside the repository."""
    return [line.strip() for line in text.splitlines() if UNREACHABLE.search(line)]


def _scoped_files() -> list[Path]:
    files = [ROOT / "README.md"]
    for folder in ("calib", "pipeline", "configs"):
        files += [p for p in (ROOT / folder).rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES]
    return sorted(files)


def test_no_citation_points_outside_the_repository():
    found = [
        f"{path.relative_to(ROOT)}: {line}"
        for path in _scoped_files()
        for line in unreachable_citations(path.read_text(encoding="utf-8"))
    ]
    assert found == []


@pytest.mark.parametrize(
    "line",
    [
        "Source: paper 000, eq. 33",
        "# Paper 004, Table I",
        "the paper-002 authors' code",
        "(note 001 §10 item 2)",
        "(notes/003 Sect. 2.5)",
        "a re-run of the authors' code (notes to paper 000, Sect. 3.4)",
        "Survey (paper 001), Fig. 1",
        "the paper is not among ../shared/papers, so no equation numbers",
        "see ../shared/notes/001_survey_silvafilho2023.md",
    ],
)
def test_an_unreachable_citation_is_found(line):
    assert unreachable_citations(f"ok\n{line}\nok") == [line]


@pytest.mark.parametrize(
    "line",
    [
        "  mirror: ../shared/real_posteriors",
        '"laid out like ../shared/real_posteriors, or set real_data.download: true"',
        'AUTHOR_FIGURES = "../shared/reference/figures"',
        "Source: Ferrer & Ramos (2024), eq. 33",
        "notes are printed on stderr; 1000 papers",
    ],
)
def test_data_paths_and_author_year_citations_are_allowed(line):
    assert unreachable_citations(line) == []


def test_the_real_posteriors_data_path_is_still_configured():
    assert compose()[0].real_data.mirror == "../shared/real_posteriors"


# --- (c) every "Source:" of a calib docstring names works of the bibliography --------------------

YEAR = re.compile(r"\((?:\d{4}|n\.d\.)\)")
# An author-year citation not in the form cite() gives: "Guo et al. 2017", "Kull & Flach 2015", "Platt 2000".
BARE = re.compile(r"\b[A-Z][\w'-]*(?: et al\.| & [A-Za-z][\w'-]*)?,? (?:1[89]\d\d|20[0-3]\d)\b(?!\))")


def source_paragraphs(docstring: str) -> list[str]:
    """Each "Source:" / "Sources:" of a docstring, from the marker to the end of its paragraph (or of
    the list that follows a bare "Sources:")."""
    found = []
    for match in re.finditer(r"\bSources?:", docstring):
        paragraphs = re.split(r"\n\s*\n", docstring[match.start() :], maxsplit=2)
        bare = paragraphs[0].strip() == match.group(0) and len(paragraphs) > 1
        found.append(" ".join(" ".join(paragraphs[: 2 if bare else 1]).split()))
    return found


def unresolved_citations(source: str, known: set[str]) -> list[str]:
    """The citations of one Source paragraph that do not resolve to a work of the bibliography.

    Every "(year)" must close a short citation ``cite`` gives ("Ferrer & Ramos (2024)", "Silva Filho et
    al. (2023)", "Platt (2000)", '"Reassessing calibration" (n.d.)'); an author-year without the
    parentheses is not that form; and a Source must name at least one work.
    """
    problems = []
    named = 0
    for match in YEAR.finditer(source):
        before = source[: match.end()]
        if any(before.endswith(c) for c in known):
            named += 1
        else:
            problems.append(f"not in the bibliography: ...{before[-40:]}")
    problems += [f"not the cite() form: {m.group(0)}" for m in BARE.finditer(source)]
    if not named:
        problems.append(f"names no work: {source[:80]}")
    return problems


def _docstrings(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=True)
            if doc:
                yield getattr(node, "lineno", 1), doc


KNOWN = {cite(key) for key in load_bibliography()}


def test_every_source_in_calib_names_works_of_the_bibliography():
    checked, found = 0, []
    for path in sorted((ROOT / "calib").rglob("*.py")):
        for line, doc in _docstrings(path):
            for source in source_paragraphs(doc):
                checked += 1
                found += [f"{path.relative_to(ROOT)}:{line}: {p}" for p in unresolved_citations(source, KNOWN)]
    assert found == []
    assert checked > 40


@pytest.mark.parametrize(
    "docstring, problem",
    [
        ("Source: paper 000, eq. 33.", "names no work"),
        ("Source: Ferrer & Ramos (2023), eq. 33.", "not in the bibliography"),
        ("Source: Smith & Jones (2020), Sect. 2.", "not in the bibliography"),
        ("Sources: Ferrer & Ramos (2024), eq. 8; Guo et al. 2017.", "not the cite() form: Guo et al. 2017"),
        ("Source: Ferrer & Ramos (2024), after Efron & Tibshirani 1993.", "not the cite() form"),
        ('Source: "Reassessing" (n.d.), eq. 4.1.', "not in the bibliography"),
        ("Source: Widmann, Lindsten & Zachariah (2019).", "not in the bibliography"),
        ("Text.\n\nSource: Platt (2000) and\nKull et al. (2016).\n\nMore.", "not in the bibliography"),
        ("Sources:\n\n- Platt (2000), eq. 1.\n- Guo et al. 2017.", "not the cite() form"),
        ("Sources:\n\n- the authors' code.", "names no work"),
    ],
)
def test_a_source_that_does_not_resolve_is_reported(docstring, problem):
    problems = [p for s in source_paragraphs(docstring) for p in unresolved_citations(s, KNOWN)]
    assert any(problem in p for p in problems), problems


def test_a_source_in_the_cite_form_resolves():
    doc = (
        'Sources: Ferrer & Ramos (2024), eq. 8; Silva Filho et al. (2023), Def. 1; "Reassessing calibration"\n'
        "(n.d.), eq. 4.8, and Brümmer & van Leeuwen (2006).\n\nNot a source: (1999)."
    )
    (source,) = source_paragraphs(doc)
    assert unresolved_citations(source, KNOWN) == []
