"""Where the configs are and how to compose them outside a Hydra app (the Snakefile, the report, tests).

A leaf: it imports nothing of the pipeline, so any module may import it.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from omegaconf import DictConfig, OmegaConf

CONFIG_DIR = Path(__file__).resolve().parent.parent / "configs"
# The groups of the root config's defaults list, in its merge order (after the root's own keys): what a
# command line chooses with ``<group>=<option>``.
ROOT_GROUPS = ("experiment", "dataset", "sweep")


class _ConfigLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """YAML read as OmegaConf reads config files, by libyaml where PyYAML has it: ``1e-3`` is a float (as in
    YAML 1.2, where YAML 1.1 wants ``1.0e-3``), a date stays text, and a key given twice is an error."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key, _ in node.value:
            if key.tag != yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG:
                continue
            if key.value in seen:
                raise yaml.constructor.ConstructorError(None, None, f"found duplicate key {key.value}", key.start_mark)
            seen.add(key.value)
        return super().construct_mapping(node, deep=deep)


_ConfigLoader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in _ConfigLoader.yaml_implicit_resolvers.items()
}
_ConfigLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),  # the exponents YAML 1.1 misses: 1e-3, 1.0e3
    list("-+0123456789."),
)


def _read(path: Path) -> dict:
    """One config file as plain Python data (an empty file is an empty mapping)."""
    return yaml.load(path.read_text(), Loader=_ConfigLoader) or {}


def compose_config(overrides: list[str] | None = None) -> DictConfig:
    """The root config with ``overrides`` applied, exactly as a step would see it (Hydra's compose API)."""
    from hydra import compose, initialize_config_dir  # Hydra starts in ~0.3 s: only callers that need it pay
    from hydra.core.global_hydra import GlobalHydra

    if GlobalHydra.instance().is_initialized():  # inside a Hydra app: reuse its config search path
        return compose(config_name="config", overrides=overrides or [])
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        return compose(config_name="config", overrides=overrides or [])


def experiment_names() -> list[str]:
    """Every experiment config, sorted by name (configs/experiment/*.yaml)."""
    return sorted(p.stem for p in (CONFIG_DIR / "experiment").glob("*.yaml"))


def experiment_files(name: str) -> list[Path]:
    """The files an experiment's config is composed from: its own YAML and the group files of its
    ``defaults`` list (e.g. ``/metric_options@options: calib_defaults``), so editing any of them
    reruns its jobs."""
    path = CONFIG_DIR / "experiment" / f"{name}.yaml"
    files = [path]
    for entry in _read(path).get("defaults", []):
        if isinstance(entry, str) or len(entry) != 1:
            continue
        ((group, option),) = entry.items()
        files.append(CONFIG_DIR / group.lstrip("/").split("@")[0] / f"{option}.yaml")
    return files


def compose_experiment(name: str, results: str | None = None) -> DictConfig:
    """The root config with ``experiment=<name>`` (and ``paths.results=<results>``), as Hydra composes it.

    Hydra's ``compose`` spends ~70 ms per call building its own ``hydra`` node; the workflow composes
    every experiment to build its DAG, its jobs compose theirs and the report all of them, so this
    merges the YAML files itself, following the defaults-list rules the configs use: ``_self_`` (last
    when absent), ``/<group>@<package>: <option>`` (package relative to the including one, ``_here_``
    for the same), a bare name for another config of the same group, and ``null`` options. Any other
    entry raises :class:`UnsupportedDefaults`. The files are merged as plain mappings (as OmegaConf
    merges them: mappings key by key, anything else replaced) and made a config once: making a config of
    each file and merging configs was most of a composition's time. tests/pipeline/test_config.py checks
    that the result equals Hydra's composition for every experiment config.

    Example: ``compose_experiment("ferrer2024_fig1", results="/tmp/out").paths.data`` is ``/tmp/out/data``.
    """
    merged: dict = {}
    for package, node in [("", _root()), *_pieces(CONFIG_DIR / "experiment" / f"{name}.yaml", "experiment")]:
        merged = _merged(merged, _nest(package, node))
    cfg = OmegaConf.create(merged)
    if results is not None:
        cfg.paths.results = results
    OmegaConf.set_struct(cfg, True)
    return cfg


def compose_command_line(overrides: list[str]) -> tuple[DictConfig, dict[str, str]] | None:
    """The root config with Hydra command-line ``overrides``, and the group options they choose, composed
    without starting a Hydra app; None for a command line that needs Hydra itself.

    Hydra's own parser reads the overrides, so every value means what it means to Hydra (``1e-3`` a
    float, ``yes`` a string, ``null`` None). Merged here: ``<group>=<option>`` for the root's groups
    (:data:`ROOT_GROUPS`, by the rules of :func:`compose_experiment`), then ``<dotted.key>=<value>`` with
    a single value for a key the config has that holds no mapping or list. Anything else (``+key``,
    ``~key``, ``key=a,b`` sweeps, lists, an unknown key or option, ``--cfg``, ``--help``, a syntax
    error) returns None: the caller runs Hydra, which applies it or reports it in its own words.
    tests/pipeline/test_config.py checks the result against Hydra's composition.

    Example: ``compose_command_line(["dataset=ferrer2024_k2_n400"])[1]`` is ``{"dataset": "ferrer2024_k2_n400"}``.
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser  # the grammar only, not an app
    from hydra.core.override_parser.types import OverrideType, ValueType
    from hydra.errors import HydraException

    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except HydraException:
        return None
    choices, values = {}, []
    for override in parsed:
        if override.type != OverrideType.CHANGE or override.value_type != ValueType.ELEMENT or override.package:
            return None
        key, value = override.key_or_group, override.value()
        if key in ROOT_GROUPS:
            if not isinstance(value, str) or not (CONFIG_DIR / key / f"{value}.yaml").is_file():
                return None
            choices[key] = value
        elif value is None or isinstance(value, str | int | float | bool):
            values.append((key, value))
        else:
            return None
    merged = _root()
    for group in ROOT_GROUPS:
        if group in choices:
            for package, node in _pieces(CONFIG_DIR / group / f"{choices[group]}.yaml", group):
                merged = _merged(merged, _nest(package, node))
    for key, value in values:
        *parents, leaf = key.split(".")
        node = merged
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if not isinstance(node, dict) or leaf not in node or isinstance(node[leaf], dict | list):
            return None
        node[leaf] = value
    cfg = OmegaConf.create(merged)
    OmegaConf.set_struct(cfg, True)
    return cfg, choices


def _root() -> dict:
    """The root config's own keys (configs/config.yaml without its defaults list and Hydra's settings)."""
    root = _read(CONFIG_DIR / "config.yaml")
    root.pop("defaults", None)
    root.pop("hydra", None)
    return root


class UnsupportedDefaults(ValueError):
    """A defaults-list entry :func:`compose_experiment` does not merge itself (Hydra's ``compose_config`` does)."""


def _pieces(path: Path, package: str) -> list[tuple[str, dict]]:
    """(package, content) of ``path`` and of its defaults list, in Hydra's merge order."""
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: no config of that name under {CONFIG_DIR}")
    node = _read(path)
    entries = list(node.pop("defaults", None) or [])
    if "_self_" not in entries:
        entries.append("_self_")
    out = []
    for entry in entries:
        if entry == "_self_":
            out.append((package, node))
        elif isinstance(entry, str):
            out += _pieces(path.parent / f"{entry}.yaml", package)
        elif isinstance(entry, dict) and len(entry) == 1:
            ((key, option),) = entry.items()
            group, _, target = str(key).partition("@")
            if not group.startswith("/") or not isinstance(option, str | None):
                raise UnsupportedDefaults(f"{path}: defaults entry {entry} (use /<group>@<package>: <option>)")
            if option is not None:
                target = package if target == "_here_" else ".".join(p for p in (package, target) if p)
                out += _pieces(CONFIG_DIR / group.lstrip("/") / f"{option}.yaml", target)
        else:
            raise UnsupportedDefaults(f"{path}: defaults entry {entry} is not one compose_experiment merges")
    return out


def _nest(package: str, node: dict) -> dict:
    """``node`` placed at the dotted ``package`` of an empty root."""
    for key in reversed(package.split(".") if package else []):
        node = {key: node}
    return node


def _merged(base: dict, update: dict) -> dict:
    """``update`` merged into a copy of ``base``: mappings key by key (new keys after the old), any other value
    replaced. Neither argument is changed."""
    out = dict(base)
    for key, value in update.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out
