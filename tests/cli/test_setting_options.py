"""The options of the evaluation's settings (calib evaluate / compare) follow the settings' declarations:
``--help`` shows each field's default and bounds, every invalid value the declarations generate that a
command line can spell is one ``calib evaluate: error:`` line naming the option (exit status 2), and the
old name --bootstrap of --n-boot still works, with a note, and the same output."""

from __future__ import annotations

import dataclasses
import json
import math
import re

import numpy as np
import pytest

from calib._internal.declared import hints, invalid_values, option, rules
from calib.cli import COMPARE_SETTINGS, main
from calib.evaluation.settings import EvaluationSettings
from calib.validation import Choice

FIELDS = {field.name: field for field in dataclasses.fields(EvaluationSettings)}


def _spelled(name: str, value) -> str | None:
    """``value`` as the command line writes it, or None when it cannot (a bool, None, a tuple, a number given
    as text, which the command reads as the number; any word for a list of names, checked against the data)."""
    hint = hints(EvaluationSettings)[name]
    if isinstance(value, bool) or not isinstance(value, int | float | str) or "tuple" in str(hint):
        return None
    named = any(isinstance(r, Choice) for r in rules(hint))
    if isinstance(value, str) != named or value == FIELDS[name].metadata["cli_none"]:
        return None
    return str(value)


INVALID = [
    (name, text)
    for name in FIELDS
    for text in dict.fromkeys(_spelled(name, v) for v in invalid_values(hints(EvaluationSettings)[name]))
    if text is not None
]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    path = tmp_path_factory.mktemp("settings") / "tiny.npz"
    p = np.linspace(0.1, 0.9, 40)
    np.savez(path, scores=np.column_stack([1 - p, p]), labels=np.arange(40) % 2)
    return str(path)


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        status = main(list(argv))
    except SystemExit as exc:  # argparse: a value of the wrong type or an unknown choice
        status = exc.code
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_every_setting_is_an_option_of_evaluate_and_compare_takes_its_own():
    assert {name for name, _ in INVALID} >= {n for n in FIELDS if FIELDS[n].type.startswith("Annotated")}
    assert set(COMPARE_SETTINGS) <= set(FIELDS)


@pytest.mark.parametrize(("name", "text"), INVALID, ids=[f"{n}={t}" for n, t in INVALID])
def test_an_invalid_option_value_is_one_error_line_naming_the_option(data, capsys, name, text):
    # The settings are checked before the file is read, so each case costs no evaluation.
    # --option=VALUE: argparse reads a value such as -inf after a space as an option of its own
    status, out, err = _run(capsys, "evaluate", data, "--quiet", f"{option(name)}={text}")
    errors = [line for line in err.splitlines() if line.startswith("calib evaluate: error:")]
    # the declaration's one line with its words and bounds, even for text where a number belongs (never
    # argparse's usage block and "invalid int value")
    assert status == 2 and out == "" and err.splitlines() == errors and len(errors) == 1, err
    assert errors[0].startswith(f"calib evaluate: error: {option(name)} must be "), err


def test_help_shows_each_settings_default_and_bounds(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # no wrapping (argparse wraps at hyphens too)
    status, out, _ = _run(capsys, "evaluate", "--help")
    assert status == 0
    # each option's entry: from its line to the next option's
    entries = {}
    for block in re.split(r"\n(?=  -)", out):
        words = block.split()
        entries[words[0].rstrip(",")] = " ".join(words)
    for name, field in FIELDS.items():
        hint = hints(EvaluationSettings)[name]
        inner = next((a for a in getattr(hint, "__args__", ()) if a is not type(None)), hint)
        bounds = next((r.bounds() for r in rules(inner) + rules(hint) if r.bounds()), "")
        default = f"default {field.default}" if field.default is not None else f"default: {field.metadata['none']}"
        assert bounds in entries[option(name)] and default in entries[option(name)], (name, entries[option(name)])
    assert "--bootstrap" not in out  # the old name works but is not offered


def test_the_old_name_of_n_boot_gives_a_note_and_the_same_output(data, capsys):
    args = ("evaluate", data, "--quiet", "--json", "--calibrators", "none")
    status, new, err = _run(capsys, *args, "--n-boot", "10")
    assert status == 0 and err == ""
    status, old, err = _run(capsys, *args, "--bootstrap", "10")
    assert status == 0 and old == new and err == "calib: note: --bootstrap is deprecated; it is --n-boot now\n"
    assert json.loads(new)["settings"]["bootstrap"] == 10  # the JSON keeps its key
    assert not math.isnan(json.loads(new)["metrics"][0]["high"])

