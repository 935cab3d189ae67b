"""Declared fields: a dataclass whose fields say their type, default, allowed values and help once.

A field is ``name: Annotated[<type>, <rule>] = setting(<default>, "<help>")`` with a rule of
:mod:`calib.validation` (:class:`~calib.validation.Integer`, :class:`~calib.validation.Number`,
:class:`~calib.validation.Choice`); ``X | None``, ``Literal``, ``list[...]``, ``tuple[X, ...]``,
``dict[str, ...]`` and nested dataclasses are understood too. From those declarations come

- the check of a value (:class:`Checker`; :func:`check_fields` for a library object, whose error names
  the field for Python and its option for the command, as :class:`~calib.validation.CalibInputError`'s
  ``cli_message``), which the workflow's config check (:mod:`pipeline.parameters`) shares,
- the command's options (:func:`add_options`, :func:`from_options`): ``--`` + the field's name with
  dashes, its default, its bounds and help, and deprecated old names,
- the Parameters section of the class's docstring (:func:`documented`),
- the invalid values of each field (:func:`invalid_values`), from which the tests are generated.

Pattern: scikit-learn's ``_parameter_constraints`` and ``generate_invalid_param_val``.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import sys
import types
import typing
from collections.abc import Iterator
from typing import Annotated, Any, Literal

from calib.validation import Boolean, CalibInputError, Choice, Integer, Number, closest

_NOTHING = object()  # a refusal that shows no value ("must be given")


class Refusal(Exception):
    """A value its declaration does not allow: where it is (``path``), what it must be (``must``), the value
    (``given``) and, for a name, the allowed names (``allowed``)."""

    def __init__(self, path: str, must: str, given=_NOTHING, allowed: tuple | None = None):
        self.path, self.must, self.given, self.allowed = path, must, given, allowed
        super().__init__(self.problem)

    @property
    def problem(self) -> str:
        """``must be <must>; got <given>``."""
        return f"must be {self.must}" + ("" if self.given is _NOTHING else f"; got {self.given!r}")


def rules(hint) -> list:
    """The rules (anything with ``problem``) of an ``Annotated`` hint, [] for others."""
    if typing.get_origin(hint) is not Annotated:
        return []
    return [rule for rule in typing.get_args(hint)[1:] if hasattr(rule, "problem")]


class Checker:
    """Checks a value against a type hint (see the module docstring) and returns it as plain Python (a
    ``tuple[X, ...]`` as a tuple); raises :class:`Refusal` naming the first wrong part by its path.

    The library's values are checked as they are; the workflow's configs (:mod:`pipeline.parameters`)
    override what a list or a mapping may be, how a nested dataclass is read and what a null is called.
    """

    lists: tuple = (list,)
    mappings: tuple = (dict,)
    # What a missing value (None) of a number with a rule is told; None: the rule's own words.
    null: str | None = None

    def plain(self, value):
        """A value of type ``Any``, as it is."""
        return value

    def record(self, cls: type, value, path: str):
        """A value of the dataclass type ``cls``."""
        if not isinstance(value, cls):
            raise Refusal(path, f"a {cls.__name__}", value)
        return value

    def check(self, hint, value, path: str):
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        if origin is Annotated:
            checks = rules(hint)
            # A number's own rule says all a number's check would (and in its words: "an integer >= 1"); a
            # Boolean, all a bool's (and takes numpy's bools too).
            own = {int: Integer | Number, float: Integer | Number, bool: Boolean}.get(args[0])
            if not (own is not None and any(isinstance(r, own) for r in checks)):
                value = self.check(args[0], value, path)
            elif value is None and self.null is not None:
                raise Refusal(path, self.null)
            for rule in checks:
                if rule.problem(value) is not None:
                    allowed = rule.allowed() if isinstance(rule, Choice) else None
                    raise Refusal(path, rule.words(), value, allowed)
            return value
        if hint is Any:
            return self.plain(value)
        if origin in (typing.Union, types.UnionType):
            if value is None and type(None) in args:
                return None
            options = [a for a in args if a is not type(None)]
            for option in options:
                try:
                    return self.check(option, value, path)
                except Refusal as refusal:
                    error = refusal
            if len(options) == 1:
                raise error
            raise Refusal(path, " or ".join(described(option) for option in options), value)
        if value is None:
            raise Refusal(path, self.null) if self.null is not None else Refusal(path, described(hint), value)
        if origin is Literal:
            if not any(value == a and type(value) is type(a) for a in args):
                raise Refusal(path, described(hint), value, args)
            return value
        if dataclasses.is_dataclass(hint):
            return self.record(hint, value, path)
        if origin is list:
            if not isinstance(value, self.lists):
                raise Refusal(path, "a list", value)
            return [self.check(args[0], item, f"{path}[{i}]") for i, item in enumerate(value)]
        if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
            if isinstance(value, str) or not isinstance(value, self.lists + (tuple,)):
                raise Refusal(path, f"a tuple or list of which each item is {described(args[0])}", value)
            return tuple(self.check(args[0], item, f"{path}[{i}]") for i, item in enumerate(value))
        if origin is dict:
            if not isinstance(value, self.mappings):
                raise Refusal(path, "a mapping", value)
            return {
                self.check(args[0], key, f"{path}.{key}"): self.check(args[1], item, f"{path}.{key}")
                for key, item in value.items()
            }
        rule = {int: Integer(), float: Number()}.get(hint)
        if rule is not None:
            if rule.problem(value) is not None:
                raise Refusal(path, rule.words(), value)
            return value
        if origin is not None or not isinstance(hint, type):
            raise TypeError(f"{path}: a parameter of type {hint!r} is not one a declaration may have")
        if not isinstance(value, hint):
            raise Refusal(path, f"a {hint.__name__}", value)
        return value


def described(hint) -> str:
    """What a value of the type ``hint`` is, in words (for the error of a union)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        checks = rules(hint)
        return checks[0].words() if checks else described(args[0])
    if origin is Literal:
        return f"one of {', '.join(map(str, args))}" if len(args) > 1 else str(args[0])
    if dataclasses.is_dataclass(hint):
        return f"a mapping of {', '.join(f.name for f in dataclasses.fields(hint))}"
    return {int: "an integer", float: "a number", str: "a text", bool: "true or false", list: "a list"}.get(
        origin or hint, str(hint)
    )


# --- library objects: one field per setting ---------------------------------------------------------------


def setting(default, help: str, *, none: str = "", cli_none=None, empty: str = "", deprecated: tuple = ()):
    """A declared field: its ``default`` and ``help`` (one phrase, for the docstring and the command's help).

    ``none``: what None means, for a field that may be None; ``cli_none``: the command-line value that stands
    for None (0 for "no bound"); ``empty``: the command-line word for an empty tuple (``--calibrators none``);
    ``deprecated``: old option names, accepted for a release with a note.
    """
    metadata = {"help": help, "none": none, "cli_none": cli_none, "empty": empty, "deprecated": deprecated}
    return dataclasses.field(default=default, metadata=metadata)


def option(name: str) -> str:
    """The command's option for the field ``name``: ``n_boot`` -> ``--n-boot``."""
    return "--" + name.replace("_", "-")


@functools.cache
def hints(cls: type) -> dict:
    """The type hints of the dataclass ``cls``, with their ``Annotated`` rules."""
    return typing.get_type_hints(cls, include_extras=True)


def _optional(hint) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint)


def check_fields(instance) -> None:
    """Check every field of the dataclass ``instance`` against its declaration (its own values made plain:
    a list given for a tuple is stored as a tuple); a wrong one raises a CalibInputError naming the field,
    with the option of the command in its ``cli_message``."""
    cls = type(instance)
    for field in dataclasses.fields(cls):
        value = getattr(instance, field.name)
        try:
            checked = Checker().check(hints(cls)[field.name], value, field.name)
        except Refusal as refusal:
            raise _error(field.name, hints(cls)[field.name], refusal, field.metadata) from None
        if checked is not value:
            object.__setattr__(instance, field.name, checked)


def check_parameters(declared: dict, values: dict) -> None:
    """Check each of ``values`` against its declaration in ``declared`` (name -> type hint, e.g. the
    ``Annotated`` hints of a constructor's parameters), leaving them as they are; the first wrong one raises a
    CalibInputError naming it and what it must be (as :func:`check_fields` words it)."""
    for name, hint in declared.items():
        try:
            Checker().check(hint, values[name], name)
        except Refusal as refusal:
            raise CalibInputError(str(_error(name, hint, refusal, {}))) from None  # no option: Python's words only


def _error(name: str, hint, refusal: Refusal, meta) -> CalibInputError:
    """The error of a refused value of the field or parameter ``name`` (``meta``: a field's metadata)."""
    must, cli_must = refusal.must, refusal.must
    if _optional(hint) and refusal.path == name:  # the whole value is wrong: say that None is allowed
        must += f", or None ({meta['none']})" if meta.get("none") else ", or None"
        if meta.get("cli_none") is not None:
            cli_must += f", or {meta['cli_none']} ({meta['none']})"
    got = "" if refusal.given is _NOTHING else f"; got {refusal.given!r}"
    close = closest(refusal.given, refusal.allowed) if refusal.allowed is not None else None
    hint_text = f". Did you mean {close!r}?" if close is not None else ""
    where = refusal.path.replace(name, option(name), 1)
    return CalibInputError(
        f"{refusal.path} must be {must}{got}{hint_text}", cli_message=f"{where} must be {cli_must}{got}{hint_text}"
    )


def invalid_values(hint) -> Iterator:
    """Values the declaration ``hint`` refuses (each rule's :meth:`invalid`, and wrong types)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        for option_ in args:
            if option_ is not type(None):
                yield from (v for v in invalid_values(option_) if v is not None)
        return
    if origin is Annotated:
        for rule in rules(hint):
            yield from rule.invalid()
        if not _optional(hint):
            yield None
        return
    if origin is tuple:
        yield from ("a name", (1,), 5)
        return
    yield object()


def _field_type(hint) -> str:
    """A field's type in a docstring's words (``int or None``, ``tuple of str``)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        return _field_type(args[0])
    if origin in (typing.Union, types.UnionType):
        return " or ".join("None" if a is type(None) else _field_type(a) for a in args)
    if origin is tuple:
        return f"tuple of {_field_type(args[0])}"
    return getattr(hint, "__name__", str(hint))


def _bounds(hint) -> str:
    if _optional(hint):
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    return next((rule.bounds() for rule in rules(hint) if rule.bounds()), "")


def documented(cls: type) -> type:
    """Class decorator: the Parameters section of ``cls``'s docstring written from its fields (type,
    default, help, bounds), before its Methods, Attributes or Examples."""
    lines = ["Parameters", "----------"]
    for field in dataclasses.fields(cls):
        hint, meta = hints(cls)[field.name], field.metadata
        default = f"default {field.default!r}" if field.default is not None else "optional"
        said = "; ".join(s for s in (_bounds(hint), f"None: {meta['none']}" if meta.get("none") else "") if s)
        text = meta["help"][0].upper() + meta["help"][1:] + (f" ({said})" if said else "")
        lines += [f"{field.name} : {_field_type(hint)}, {default}", f"    {text}."]
    doc = cls.__doc__ or ""
    heads = [f"\n    {title}\n" for title in ("Methods", "Attributes", "Examples")]
    at = min((doc.find(head) for head in heads if head in doc), default=len(doc))
    section = "\n".join(f"    {line}" if line else "" for line in lines)
    cls.__doc__ = f"{doc[:at].rstrip()}\n\n{section}\n\n{doc[at:].lstrip(chr(10))}"
    return cls


# --- the command's options --------------------------------------------------------------------------------


class _Deprecated(argparse.Action):
    """An old option name: stores the value like the new one, with one note on stderr."""

    def __init__(self, *args, new: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.new = new

    def __call__(self, parser, namespace, values, option_string=None):
        # "calib: note: ...", as the command's other notes
        command = parser.prog.split()[0]
        print(f"{command}: note: {option_string} is deprecated; it is {self.new} now", file=sys.stderr, flush=True)
        setattr(namespace, self.dest, values)


def _read_as(kind: type):
    """The argparse type of an option whose field is of type ``kind``: its text as a ``kind`` where it is one,
    else the text itself, for the field's declaration to refuse in one line with its words and bounds
    (argparse would print its usage and "invalid int value")."""
    if kind not in (int, float):
        return kind

    def read(text: str):
        try:
            return kind(text)
        except ValueError:
            return text

    read.__name__ = kind.__name__  # argparse names the type in its messages
    return read


def add_options(group, cls: type, names) -> None:
    """The command's options for the fields ``names`` of ``cls``, on the parser (or group) ``group``:
    ``--`` + the name with dashes, the field's default, its help with its bounds and default, an argparse
    type, choices for a :class:`Choice`, several values for a tuple; hidden deprecated names."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for name in names:
        field, hint = fields[name], hints(cls)[name]
        meta, base = field.metadata, hint
        if _optional(hint):
            base = next(a for a in typing.get_args(hint) if a is not type(None))
        kwargs: dict[str, Any] = {"dest": name}
        if typing.get_origin(base) is tuple:
            kwargs |= {"nargs": "+", "metavar": name.upper().rstrip("S")}
        else:
            kind = typing.get_args(base)[0] if typing.get_origin(base) is Annotated else base
            kwargs["type"] = _read_as(kind)
            choice = next((r for r in rules(base) if isinstance(r, Choice)), None)
            if choice is not None:
                # shown as argparse shows choices, but refused by the declaration, in one line with its words
                kwargs["metavar"] = "{" + ",".join(map(str, choice.allowed())) + "}"
            kwargs["default"] = field.default
        said = [_bounds(hint)]
        if field.default is None:
            said.append(f"default: {meta['none']}" if meta.get("none") else "")
        else:
            said.append(f"default {field.default}")
            if meta.get("cli_none") is not None:
                said.append(f"{meta['cli_none']}: {meta['none']}")
        if meta.get("empty"):
            said.append(f"{meta['empty']}: none of them")
        said = [s for s in said if s]
        kwargs["help"] = meta["help"] + (f" ({'; '.join(said)})" if said else "")
        group.add_argument(option(name), **kwargs)
        for old in meta.get("deprecated", ()):
            group.add_argument(
                f"--{old}", dest=name, type=kwargs.get("type"), help=argparse.SUPPRESS, action=_Deprecated,
                new=option(name),
            )  # fmt: skip


def from_options(cls: type, args: argparse.Namespace, names):
    """An instance of ``cls`` from the command's options ``names`` (the rest at their defaults): a field's
    ``cli_none`` becomes None, its ``empty`` word the empty tuple."""
    values = {}
    for field in dataclasses.fields(cls):
        if field.name not in names:
            continue
        value, meta = getattr(args, field.name), field.metadata
        if meta.get("cli_none") is not None and value == meta["cli_none"]:
            value = None
        if meta.get("empty") and isinstance(value, list) and [v.lower() for v in value] == [meta["empty"]]:
            value = ()
        values[field.name] = value
    return cls(**values)
