"""Typed parameters: each experiment kind declares a frozen dataclass, and a composed config becomes one.

A kind's parameters are the fields of its dataclass (``pipeline/papers/<paper>.py``, beside its evaluate
and render functions): the name, the type, the default, and the allowed values as
``Annotated[<type>, <rule>]`` with the rules of :mod:`calib.validation` (:class:`~calib.validation.Integer`,
:class:`~calib.validation.Number`, :class:`~calib.validation.Choice`) or a ``Literal``. Nested blocks are
dataclasses of their own, lists are ``list[...]``, mappings ``dict[str, ...]``. :func:`typed` turns a
config node into the dataclass once, checking every key and value on the way; the evaluator then reads
typed fields. A wrong config stops with one line naming the key path, the problem, what is allowed and
the closest match:

    config error at experiment ferrer2024_fig1.n_boot: must be an integer >= 1; got 0

Example: adding ``n_bins: Count = 15`` to a kind's dataclass is all a config needs to set ``n_bins``.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Iterable
from typing import Annotated, Any, Literal

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from calib.validation import Choice, Integer, Number, closest

# Longer lists of allowed values are cut after this many (the closest match is always suggested).
_LISTED = 30

Count = Annotated[int, Integer(minimum=1)]
Seed = Annotated[int, Integer(minimum=0)]
Positive = Annotated[float, Number(low=0)]
Fraction = Annotated[float, Number(low=0, high=1)]


class ConfigError(SystemExit):
    """A config that cannot run: the message names the key, the value and what is allowed."""


class Invalid(ValueError):
    """Raised by a parameters dataclass's ``__post_init__`` for a rule across fields: ``key`` and ``problem``."""

    def __init__(self, key: str, problem: str):
        super().__init__(problem)
        self.key, self.problem = key, problem


def message(path: str, problem: str, allowed: Iterable | None = None, given=None) -> str:
    """``config error at <path>: <problem>``, with the allowed values and the closest one to ``given``."""
    text = f"config error at {path}: {problem}"
    if allowed is not None:
        allowed = sorted(map(str, allowed))
        shown = allowed if len(allowed) <= _LISTED else [*allowed[:_LISTED], f"... ({len(allowed)} in all)"]
        text += f"; allowed: {', '.join(shown) or '(none)'}"
        close = closest(given, allowed) if given is not None else None
        if close is not None:
            text += f". Did you mean {close!r}?"
    return text


def typed(cls: type, node, path: str):
    """``node`` (a config mapping) as an instance of the dataclass ``cls``, every key and value checked.

    Parameters
    ----------
    cls : type
        A dataclass whose fields declare the keys (see the module docstring).
    node : DictConfig or dict
        The composed config block.
    path : str
        Where the block is, for the messages (``experiment ferrer2024_fig1``).

    Raises
    ------
    ConfigError
        For an unknown or missing key, or a value its field does not allow.

    Examples
    --------
    >>> @dataclasses.dataclass(frozen=True)
    ... class Grid:
    ...     start: float
    ...     num: Count = 10
    >>> typed(Grid, {"start": 0.5}, "grid")
    Grid(start=0.5, num=10)
    """
    if not isinstance(node, DictConfig | dict):
        raise ConfigError(message(path, f"must be a mapping of {', '.join(_field_names(cls))}; got {node!r}"))
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in node:
        if key not in fields:
            raise ConfigError(message(f"{path}.{key}", "unknown key", fields, key))
    hints = _hints(cls)
    values = {}
    for name, field in fields.items():
        if isinstance(node, DictConfig) and OmegaConf.is_missing(node, name):
            raise ConfigError(message(f"{path}.{name}", "is ??? (a value to give): give it one"))
        if name in node:
            try:
                value = node[name]
            except OmegaConfBaseException as exc:  # an interpolation that does not resolve
                raise ConfigError(
                    message(f"{path}.{name}", f"cannot be resolved: {str(exc).splitlines()[0]}")
                ) from None
            values[name] = check_value(hints[name], value, f"{path}.{name}")
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise ConfigError(message(f"{path}.{name}", "missing: this block needs it"))
    try:
        return cls(**values)
    except Invalid as exc:
        raise ConfigError(message(f"{path}.{exc.key}", exc.problem)) from None


@functools.cache
def _hints(cls: type) -> dict:
    return typing.get_type_hints(cls, include_extras=True)


def field_type(cls: type, dotted: str):
    """The type of the field ``dotted`` (``generator.prior1``) of the dataclass ``cls`` and its nested
    dataclasses, or None if it has no such field.

    Example: ``field_type(SyntheticMetrics, "generator.prior1")`` is :data:`Fraction`.
    """
    hint = cls
    for name in dotted.split("."):
        while typing.get_origin(hint) in (typing.Union, types.UnionType):
            hint = next((a for a in typing.get_args(hint) if dataclasses.is_dataclass(a)), None)
        if not (dataclasses.is_dataclass(hint) and name in _field_names(hint)):
            return None
        hint = _hints(hint)[name]
    return hint


def _field_names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def check_value(hint, value, path: str):
    """``value`` checked against the type ``hint`` (see :func:`typed`) and made plain Python (lists, dicts,
    dataclasses); ``path`` names it in the error.

    Example: ``check_value(list[Count], [5, 0], "grid.n_bins")`` stops with
    ``config error at grid.n_bins[1]: must be an integer >= 1; got 0``.
    """
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        # A number's own rule says all a number's check would (and in its words: "an integer >= 1").
        if not (args[0] in (int, float) and any(isinstance(r, Integer | Number) for r in args[1:])):
            value = check_value(args[0], value, path)
        elif value is None:
            raise ConfigError(message(path, "must be given (null is not allowed here)"))
        for rule in args[1:]:
            if isinstance(rule, Choice) and rule.problem(value) is not None:
                raise ConfigError(message(path, f"{value!r} is not a known name", rule.allowed(), value))
            if rule.problem(value) is not None:
                raise ConfigError(message(path, rule.problem(value)))
        return value
    if hint is Any:  # unchecked: plain data
        return OmegaConf.to_container(value, resolve=True) if isinstance(value, DictConfig | ListConfig) else value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        for option in options:
            try:
                return check_value(option, value, path)
            except ConfigError as exc:
                error = exc
        if len(options) == 1:
            raise error
        forms = " or ".join(_described(option) for option in options)
        raise ConfigError(message(path, f"must be {forms}; got {value!r}"))
    if value is None:
        raise ConfigError(message(path, "must be given (null is not allowed here)"))
    if origin is Literal:
        if not any(value == a and type(value) is type(a) for a in args):
            raise ConfigError(message(path, f"{value!r} is not a known name", args, value))
        return value
    if dataclasses.is_dataclass(hint):
        return typed(hint, value, path)
    if origin is list:
        if not isinstance(value, ListConfig | list):
            raise ConfigError(message(path, f"must be a list; got {value!r}"))
        return [check_value(args[0], item, f"{path}[{i}]") for i, item in enumerate(value)]
    if origin is dict:
        if not isinstance(value, DictConfig | dict):
            raise ConfigError(message(path, f"must be a mapping; got {value!r}"))
        return {
            check_value(args[0], key, f"{path}.{key}"): check_value(args[1], item, f"{path}.{key}")
            for key, item in value.items()
        }
    rule = {int: Integer(), float: Number()}.get(hint)
    if rule is not None:
        problem = rule.problem(value)
        if problem is not None:
            raise ConfigError(message(path, problem))
        return value
    if origin is not None or not isinstance(hint, type):
        raise TypeError(f"{path}: a parameter of type {hint!r} is not one typed() checks (see its docstring)")
    if not isinstance(value, hint):
        raise ConfigError(message(path, f"must be a {hint.__name__}; got {value!r}"))
    return value


def _described(hint) -> str:
    """What a value of the type ``hint`` is, in words (for the error of a union)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        rule = args[1]
        if isinstance(rule, Choice):
            return f"one of {', '.join(map(str, rule.allowed()))}"
        return rule.problem(None).removeprefix("must be ").split(";")[0]  # the rule's own words
    if origin is Literal:
        return f"one of {', '.join(map(str, args))}"
    if dataclasses.is_dataclass(hint):
        return f"a mapping of {', '.join(_field_names(hint))}"
    return {int: "an integer", float: "a number", str: "a text", bool: "true or false", list: "a list"}.get(
        origin or hint, str(hint)
    )
