"""The works this repository cites, read from ``calib/bibliography.toml``.

Docstrings, comments, configs and the README cite a work by the short form :func:`cite` gives (e.g.
"Ferrer & Ramos (2024), eq. 33"); :func:`reference` gives the full entry, and the reproduction report
takes its paper headings from here, so the TOML file is the one place a citation is resolved.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources

__all__ = ["Reference", "cite", "load_bibliography", "reference"]

FILE = "bibliography.toml"


@dataclass(frozen=True)
class Reference:
    """One cited work, as its table in ``bibliography.toml`` gives it.

    Attributes
    ----------
    key : str
        The citation key (the table name), e.g. ``"ferrer2024"``.
    authors : tuple of str
        ``"Family, Initials"`` in the work's order; empty when the text names no authors.
    year : int or str
        Year of the work, or ``"n.d."`` when the text carries no date.
    title, venue : str
        Title and where the work appeared.
    short_title : str
        The name :func:`cite` uses in place of the authors when there are none; else ``""``.
    url, doi, note : str
        Locator and remarks, ``""`` when absent.
    """

    key: str
    authors: tuple[str, ...]
    year: int | str
    title: str
    venue: str
    short_title: str = ""
    url: str = ""
    doi: str = ""
    note: str = ""


@cache
def load_bibliography() -> dict[str, Reference]:
    """Every entry of ``calib/bibliography.toml``, keyed by citation key.

    Returns
    -------
    dict of str to Reference
        In file order; the result is cached, so treat it as read-only.

    Examples
    --------
    >>> bib = load_bibliography()
    >>> bib["vaicenavicius2019"].year
    2019
    >>> bib["platt2000"].authors
    ('Platt, J. C.',)
    """
    with resources.files("calib").joinpath(FILE).open("rb") as handle:
        tables = tomllib.load(handle)
    return {key: Reference(key=key, **{**entry, "authors": tuple(entry["authors"])}) for key, entry in tables.items()}


def _entry(key: str) -> Reference:
    try:
        return load_bibliography()[key]
    except KeyError:
        raise KeyError(f"no work {key!r} in calib/{FILE}") from None


def _family(author: str) -> str:
    return author.split(",", 1)[0].strip()


def cite(key: str) -> str:
    """The short author-year citation of a work, the form the code's docstrings and comments use.

    One author gives "Family (year)", two "Family & Family (year)", three or more "Family et al.
    (year)". A work whose text names no authors is cited by its short title in double quotes.

    Parameters
    ----------
    key : str
        A citation key of ``bibliography.toml``.

    Returns
    -------
    str
        The short citation.

    Raises
    ------
    KeyError
        If no work has that key.

    Examples
    --------
    >>> cite("ferrer2024")
    'Ferrer & Ramos (2024)'
    >>> cite("silvafilho2023")
    'Silva Filho et al. (2023)'
    >>> cite("brummer2006")
    'Brümmer & van Leeuwen (2006)'
    >>> print(cite("reassessing"))
    "Reassessing calibration" (n.d.)
    """
    entry = _entry(key)
    families = [_family(a) for a in entry.authors]
    if not families:
        who = f'"{entry.short_title}"'
    elif len(families) == 1:
        who = families[0]
    elif len(families) == 2:
        who = f"{families[0]} & {families[1]}"
    else:
        who = f"{families[0]} et al."
    return f"{who} ({entry.year})"


def reference(key: str) -> str:
    """The full reference of a work: authors, year, title, venue, then its DOI or URL if known.

    Parameters
    ----------
    key : str
        A citation key, as for :func:`cite`.

    Returns
    -------
    str
        One line, e.g. for the report's paper headings.

    Raises
    ------
    KeyError
        As :func:`cite`, if no work has that key.

    Examples
    --------
    >>> print(reference("kull2015"))  # doctest: +NORMALIZE_WHITESPACE
    Kull, M. and Flach, P. (2015). Novel decompositions of proper scoring rules for classification:
    score adjustment as precursor to calibration. Joint European Conference on Machine Learning and
    Knowledge Discovery in Databases (ECML PKDD), Springer, 68–85.
    >>> print(reference("ecd2025"))  # doctest: +NORMALIZE_WHITESPACE
    An Entropic Metric for Measuring Calibration of Machine Learning Models (2025). Preprint (version 1,
    binary classification only).
    """
    entry = _entry(key)
    if len(entry.authors) > 1:
        authors = ", ".join(entry.authors[:-1]) + " and " + entry.authors[-1]
        head = f"{authors} ({entry.year}). {entry.title}."
    elif entry.authors:
        head = f"{entry.authors[0]} ({entry.year}). {entry.title}."
    else:
        head = f"{entry.title} ({entry.year})."
    parts = [head, f"{entry.venue}."]
    if entry.doi:
        parts.append(f"https://doi.org/{entry.doi}")
    elif entry.url:
        parts.append(entry.url)
    return " ".join(parts)
