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
import types
import typing
from collections.abc import Iterable
from typing import Annotated

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from calib._internal.declared import Checker, Refusal, hints
from calib.validation import Integer, Number, closest

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
    declared = hints(cls)
    values = {}
    for name, field in fields.items():
        missing = OmegaConf.is_missing(node, name) if isinstance(node, DictConfig) else node.get(name) == "???"
        if missing:  # OmegaConf's mark of a value to give, in a config or its plain copy
            raise ConfigError(message(f"{path}.{name}", "is ??? (a value to give): give it one"))
        if name in node:
            try:
                value = node[name]
            except OmegaConfBaseException as exc:  # an interpolation that does not resolve
                raise ConfigError(
                    message(f"{path}.{name}", f"cannot be resolved: {str(exc).splitlines()[0]}")
                ) from None
            values[name] = check_value(declared[name], value, f"{path}.{name}")
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise ConfigError(message(f"{path}.{name}", "missing: this block needs it"))
    try:
        return cls(**values)
    except Invalid as exc:
        raise ConfigError(message(f"{path}.{exc.key}", exc.problem)) from None


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
        hint = hints(hint)[name]
    return hint


def _field_names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


class _ConfigChecker(Checker):
    """The library's check of declared values (:class:`calib._internal.declared.Checker`) on a config: lists and
    mappings may be OmegaConf's, a nested dataclass is a block read by :func:`typed`, ``Any`` is plain data."""

    lists = (list, ListConfig)
    mappings = (dict, DictConfig)
    null = "given (null is not allowed here)"

    def plain(self, value):
        return OmegaConf.to_container(value, resolve=True) if isinstance(value, DictConfig | ListConfig) else value

    def record(self, cls: type, value, path: str):
        return typed(cls, value, path)


def check_value(hint, value, path: str):
    """``value`` checked against the type ``hint`` (see :func:`typed`) and made plain Python (lists, dicts,
    dataclasses); ``path`` names it in the error.

    Example: ``check_value(list[Count], [5, 0], "grid.n_bins")`` stops with
    ``config error at grid.n_bins[1]: must be an integer >= 1; got 0``.
    """
    try:
        return _ConfigChecker().check(hint, value, path)
    except Refusal as refusal:
        if refusal.allowed is not None:  # a name: the allowed names and the closest one
            problem = f"{refusal.given!r} is not a known name"
            raise ConfigError(message(refusal.path, problem, refusal.allowed, refusal.given)) from None
        raise ConfigError(message(refusal.path, refusal.problem)) from None
