"""Posterior sets of the user's own, declared by config files and run under the papers' protocols.

A set is one file, ``configs/own/<name>.yaml`` (:class:`OwnSet`), an option of the config group ``own``: the
posteriors file (CSV, TSV, Parquet, Feather, .npz, or .npy with ``labels_file``), read as ``calib evaluate``
reads it, and optionally a held-out ``calibration_file`` and the file's ``sha256``. A protocol is an
experiment of ``configs/experiment/own/``, run on a set with ``experiment=own/<protocol> own=<name>``. The
workflow checks every declaration before any work (:func:`shape`), writes the set as
``<data>/real/own/<name>.npz`` (and ``own/<name>/calibration.npz``, ``python -m pipeline.steps.fetch
real_set=own/<name> own=<name>``), and runs each protocol whose ``own_protocol.classes`` fits the set's number
of classes into ``results/own/<name>/`` (:func:`applies`; a set with sample weights, only under the protocols
that declare ``own_protocol.weights: true``).

A declaration's relative paths are read from the repository's folder; absolute ones as they are.
"""

from __future__ import annotations

import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from calib._internal.files import sha256_file
from calib.data.formats import FORMATS, file_format
from calib.data.real import PosteriorSet, load_posteriors, load_table
from calib.data.table_options import TableOptions
from calib.validation import CalibInputError, CalibInputWarning
from pipeline.config import CONFIG_DIR, OWN_SETS, own_set_names
from pipeline.config_blocks import OwnProtocol
from pipeline.parameters import ConfigError, typed

REPOSITORY = CONFIG_DIR.parent
PREFIX = "own/"  # real-set names of own sets: own/<name>, own/<name>/calibration
CALIBRATION = "calibration"


@dataclass(frozen=True)
class Sha256:
    """A sha256 checksum: 64 hexadecimal digits (what ``sha256sum FILE`` prints first)."""

    def words(self) -> str:
        """What a checksum must be, in the words of an error."""
        return '64 hexadecimal digits in quotes (sha256: "...", as `sha256sum FILE` prints it)'

    def problem(self, value) -> str | None:
        if isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdefABCDEF" for c in value):
            return None
        return f"must be {self.words()}; got {value!r}"


@dataclass(frozen=True, kw_only=True)
class OwnSet:
    """One own posterior set, as ``configs/own/<name>.yaml`` declares it.

    ``file``: the posteriors (relative to the repository, or absolute); ``kind``: what its scores hold;
    ``labels``: the label column of a table (``calib evaluate --labels``); ``class_columns``: the score
    columns (``--class-columns``; default every numeric column but the labels); ``labels_file``: the labels
    of ``.npy`` scores, or of a table in place of its label column (``--labels-file``); ``calibration_file``
    (with ``calibration_labels_file`` for ``.npy``): a held-out split of the same classifier, in the same
    layout; ``label_values``: what a table's labels hold (``--label-values``: ``index``, ``names``,
    ``1-based``, or label -> class column); ``positive_label``: a binary table's positive class
    (``--positive-label``); ``scale``, ``renormalize``, ``sep``, ``decimal``, ``scores_key``, ``labels_key``,
    ``format``: as the options of those names; ``weights``: a column of the rows' sample weights (``--weights``;
    a calibration file in the same layout has it too), or ``weights_file``: a file of one weight per row of
    ``file`` (``--weights-file``; :mod:`calib.data.weights`), kept in the materialized set's ``weights`` (used
    by the protocols that take them, :func:`applies`); ``sha256``: the checksum ``file`` must have; ``label``:
    the set's name in tables (default: the config file's name). A table's keys map onto
    :class:`calib.data.table_options.TableOptions` (:meth:`table_options`).
    """

    file: str
    kind: Literal["probs", "logprobs", "logits"]
    labels: str = "label"
    class_columns: list[str] | None = None
    labels_file: str | None = None
    calibration_file: str | None = None
    calibration_labels_file: str | None = None
    label_values: Literal["auto", "index", "names", "1-based"] | dict[str, str] = "auto"
    positive_label: str | None = None
    scale: Literal["unit", "percent"] = "unit"
    renormalize: bool = False
    sep: str | None = None
    decimal: str = "."
    scores_key: str = "scores"
    labels_key: str = "labels"
    format: Literal[FORMATS] | None = None
    sha256: Annotated[Any, Sha256()] | None = None  # Any: YAML reads unquoted digits as a number, which the rule names
    label: str | None = None
    weights: str | None = None
    weights_file: str | None = None

    def table_options(self, fmt: str) -> TableOptions:
        """The options a table of format ``fmt`` declared here is read with (each key is the command's option
        of that name, ``labels`` its label column), checked as :class:`TableOptions` checks them.

        Example: ``OwnSet(file="s.csv", kind="probs", labels="y").table_options("csv").label_column`` is ``"y"``.
        """
        return TableOptions(
            kind=self.kind,
            label_column=self.labels,
            class_columns=self.class_columns,
            label_values=self.label_values,
            positive_label=self.positive_label,
            weight_column=self.weights,
            renormalize=self.renormalize,
            scale=self.scale,
            sep=self.sep,
            decimal=self.decimal,
            format=fmt,
        )


def declaration_file(name: str) -> str:
    """The declaration of own set ``name``, relative to the repository."""
    return f"configs/{OWN_SETS}/{name}.yaml"


def real_set_names() -> list[str]:
    """The real-set names an own set may have (``own/<name>``, and ``own/<name>/calibration``: its calibration
    split, which :func:`load` refuses for a set that declares no ``calibration_file``), as experiments and
    sweeps name them."""
    return [f"{PREFIX}{name}{split}" for name in own_set_names() for split in ("", f"/{CALIBRATION}")]


def declared_in(node, name: str) -> OwnSet:
    """The declaration of own set ``name`` (its composed config ``node``), every key and value checked (a
    :class:`ConfigError` naming the config file and key otherwise)."""
    where = declaration_file(name)
    try:
        return typed(OwnSet, node, where)
    except ConfigError as exc:
        raise ConfigError(str(exc).replace(f"{where}.", f"{where}: key ", 1)) from None


def resolve(path: str) -> Path:
    """A declared path: absolute as given, relative from the repository's folder."""
    return Path(path) if Path(path).is_absolute() else REPOSITORY / path


def error(name: str, key: str, problem: str) -> ConfigError:
    return ConfigError(f"config error at {declaration_file(name)}: key {key}: {problem}")


def load(name: str, spec: OwnSet, split: str = "test") -> PosteriorSet:
    """The own set ``name`` declared by ``spec`` (``split`` "test": its ``file``; "calibration": its
    ``calibration_file``), read as
    ``calib evaluate`` reads it and checked: the file exists, has the declared ``sha256``, and its scores and
    labels are valid posteriors of its classes; a :class:`ConfigError` naming the config file and key
    otherwise.

    Example: ``load("mine", root.own.declaration).n_classes`` is the number of classes of
    ``configs/own/mine.yaml``'s file (``root``: :func:`pipeline.root.typed_root` of a config with ``own=mine``).
    """
    key, labels_key = ("file", "labels_file") if split == "test" else ("calibration_file", "calibration_labels_file")
    given, labels_file = getattr(spec, key), getattr(spec, labels_key)
    if given is None:
        raise error(name, key, "not declared")
    if spec.weights is not None and spec.weights_file is not None:
        raise error(name, "weights_file", f"weights: {spec.weights} names a column of weights already; give one")
    # weights_file weighs the rows of file only: a calibration split is weighed by a column, if at all
    weights_file = None if split != "test" or spec.weights_file is None else resolve(spec.weights_file)
    if weights_file is not None and not weights_file.is_file():
        raise error(name, "weights_file", f"{weights_file} does not exist (a relative path is read from {REPOSITORY})")
    path = resolve(given)
    if not path.is_file():
        raise error(name, key, f"{path} does not exist (a relative path is read from {REPOSITORY})")
    if split == "test" and spec.sha256 is not None and sha256_file(path) != spec.sha256.lower():
        raise error(
            name, "sha256", f"{path} has sha256 {sha256_file(path)}, not the declared {spec.sha256}: the file changed"
        )
    try:
        fmt = file_format(path, spec.format)
    except CalibInputError as exc:
        raise error(name, "format", _declaration_words(exc)) from None
    # a table's label column too, as --labels-file replaces it
    labels = None if labels_file is None else resolve(labels_file)
    if labels is None and fmt == "npy":
        raise error(name, labels_key, f"{path} holds scores only: give the .npy file of its labels")
    if spec.weights is not None and fmt in ("npz", "npy"):
        raise error(name, "weights", f"{path} is .{fmt}, which has no columns: give the weights as weights_file:")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CalibInputWarning)
            if fmt in ("npz", "npy"):
                options: dict = {"scale": spec.scale, "renormalize": spec.renormalize}
                if fmt == "npz":
                    options |= {"scores_key": spec.scores_key, "labels_key": spec.labels_key}
                pset = load_posteriors(path, kind=spec.kind, format=fmt, labels=labels, weights_file=weights_file,
                                       **options)  # fmt: skip
            else:
                pset = load_table(path, spec.table_options(fmt), labels=labels, weights_file=weights_file)
            pset.logprobs()  # validated here: wrong scores stop before any work
    except CalibInputError as exc:
        blamed = _blamed_key(exc, fmt, key)
        raise error(name, blamed, _declaration_words(exc)) from None
    for warning in caught:  # how the file was read, said once in a line, as `calib evaluate` says it
        print(f"note: {declaration_file(name)}: {_declaration_words(warning.message)}", file=sys.stderr)
    return pset


def _blamed_key(exc: CalibInputError, fmt: str, key: str) -> str:
    """The declaration's key a loader's refusal of the file of ``key`` is about: the weights' keys, ``labels``
    for a table's labels, else ``key``."""
    told = exc.cli_message
    if "--weights-file" in told:
        return "weights_file"
    if "--weights" in told:
        return "weights"
    return "labels" if fmt not in ("npz", "npy") and "label" in str(exc).lower() else key


def _declaration_words(problem) -> str:
    """A loader's message in the declaration's words: its command-line wording (``cli_message``), each
    ``--some-option`` written as the key ``some_option:`` (the declaration's keys are the options' names)."""
    text = str(getattr(problem, "cli_message", problem)).splitlines()[0]
    return re.sub(r"--([a-z][a-z-]*)", lambda m: m.group(1).replace("-", "_") + ":", text)


def shape(name: str, spec: OwnSet) -> dict:
    """The shape of own set ``name`` declared by ``spec`` (``n_classes``, ``n_samples``, ``classes``,
    ``calibration``, and ``weighted``: whether it declares sample weights), after :func:`load` checked its
    files (both splits, which must hold the same classes)."""
    pset = load(name, spec)
    found = {"n_classes": pset.n_classes, "n_samples": pset.n_samples, "classes": list(pset.class_names or ())}
    found["calibration"] = spec.calibration_file is not None
    found["weighted"] = spec.weights is not None or spec.weights_file is not None
    if found["calibration"]:
        held_out = load(name, spec, CALIBRATION)
        if (held_out.n_classes, held_out.class_names) != (pset.n_classes, pset.class_names):
            raise error(
                name,
                "calibration_file",
                f"its classes {held_out.class_names or held_out.n_classes} are not the file's "
                f"{pset.class_names or pset.n_classes}: both splits must hold the same classes",
            )
    return found


def fits(protocol: OwnProtocol, shape: dict) -> bool:
    """Whether a protocol for ``protocol.classes`` ("any", "binary": K = 2, "multiclass": K > 2) fits a set of
    ``shape``."""
    return protocol.classes == "any" or (protocol.classes == "binary") == (shape["n_classes"] == 2)


def applies(protocol: OwnProtocol, shape: dict) -> bool:
    """Whether ``protocol`` runs on a set of ``shape``: its classes fit, and a set with sample weights runs only
    under a protocol that takes them (``protocol.weights``), never unweighted in silence (issue 56);
    :func:`refusal` says why otherwise."""
    return fits(protocol, shape) and (protocol.weights or not shape["weighted"])


def refusal(name: str, protocol: str) -> str:
    """The line that says protocol ``protocol`` does not run on own set ``name``, whose sample weights it
    cannot take, and what to do."""
    return (
        f"own set {name} ({declaration_file(name)}) has sample weights, which protocol {protocol} cannot take: "
        f"not run on it; to run it unweighted, declare the set a second time without weights: (or weights_file:)"
    )
