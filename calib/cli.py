"""The ``calib`` command: evaluate, calibrate and compare posteriors from files.

    calib evaluate FILE [input options] [--out DIR] [--json] [--n-boot B]
    calib calibrate --method dp|auto|... --train FILE --apply FILE --out FILE.npz|.csv [--save-model MODEL.json]
    calib calibrate --model MODEL.json --apply FILE --out FILE.npz|.csv
    calib compare FILE FILE ... [--names A B ...] [--id-column COLUMN]
    calib --version

Files: ``.npz`` (arrays ``scores`` and ``labels``, or the keys given by --scores-key / --labels-key;
arrays ``kind``, ``class_names`` and ``ids``, as ``calib calibrate`` writes them, are read too),
``.npy`` scores with --labels-file, or tables (CSV / TSV, compressed too, Parquet, Feather / Arrow)
with score columns and a label column (see ``calib evaluate --help``). Classes are matched by name
between files and to saved calibrators. Progress and notes go to stderr (--quiet silences progress);
results go to stdout. No output ever replaces an input. Exit status: 0 success, 1 bad input, data or
path (one line on stderr says what and how to fix it), 2 bad command line (argparse's usage message,
or one line naming the option).

JSON output is strict JSON: an infinite or undefined value (e.g. the cross-entropy of a zero
probability on a true label) is written as the string ``"inf"``, ``"-inf"`` or ``"nan"``.

Each command imports what it uses inside the function that runs it (pandas, the report's plots, the chunked
readers, Dask), so a command starts without the others' libraries.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import sys
import warnings
from contextlib import ExitStack
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from calib._internal.json_values import json_float

# Arrow's default allocator keeps what it frees: after reading a Parquet table, about the table's size
# again. The command reads its tables once, so it takes the system's allocator, which returns freed
# memory (read by Arrow when it is first imported; a value set by the user wins).
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

from calib._internal.memory import return_large_arrays_to_the_system
from calib.data.formats import FORMATS, file_format
from calib.data.real import PosteriorSet, load_posteriors, load_table
from calib.data.table_options import SCALES, TableOptions
from calib.validation import KINDS, CalibInputError, CalibInputWarning, MissingFileError, Seed, as_priors

# evaluate reads a Parquet, CSV / TSV or .npy file larger than this in chunks (in bounded memory; the
# results are the same either way).
CHUNKED_FILE_BYTES = 2**27
# What a sample weight means, as the help of --weights and --weights-file says it.
WEIGHT_MEANING = (
    "a number >= 0 per row; a row counts w times (a negative kept 1 in 10 weighs 10; 0 leaves the row out), and "
    "intervals resample rows, each keeping its weight"
)
# What calibrate writes: calibrated log-probabilities (.npz) or probabilities (.csv).
CALIBRATED_SUFFIXES = (".npz", ".csv")


class UsageError(CalibInputError):
    """A command line that asks for something the command cannot do (a value out of range, options
    that exclude each other): exit status 2, like argparse's own errors."""


class _Progress:
    """Progress lines on stderr with the elapsed time (silenced by --quiet)."""

    def __init__(self, quiet: bool):
        self.quiet = quiet

    def __call__(self, message: str) -> None:
        if not self.quiet:
            print(f"calib: {message}", file=sys.stderr, flush=True)


def _note(message: str) -> None:
    print(f"calib: note: {message}", file=sys.stderr, flush=True)


class _Notes:
    """Collects the CalibInputWarnings of a block and prints each as a note on stderr."""

    def __enter__(self):
        self._context = warnings.catch_warnings(record=True)
        self.caught = self._context.__enter__()
        warnings.simplefilter("always", CalibInputWarning)
        return self

    def __exit__(self, *exc_info):
        self._context.__exit__(*exc_info)
        for warning in self.caught:
            if issubclass(warning.category, CalibInputWarning):
                _note(getattr(warning.message, "cli_message", str(warning.message)))
            else:
                warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
        return False


def _add_input_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("reading the files")
    group.add_argument(
        "--kind",
        choices=KINDS,
        help="what the scores hold (default: probs; an .npz written by calib calibrate says it itself)",
    )
    group.add_argument(
        "--scale",
        choices=SCALES,
        default="unit",
        help="percent: probabilities written as percentages (0-100), divided by 100 (default: unit)",
    )
    group.add_argument("--labels", default="label", help="label column of a table (default: label)")
    group.add_argument(
        "--class-columns",
        nargs="+",
        metavar="COLUMN",
        help="score columns of a table, by name (kept in the order given) or pattern (e.g. 'prob_*'); default: "
        "every numeric column but the labels and ids",
    )
    group.add_argument(
        "--label-values",
        nargs="+",
        metavar="HOW",
        help="what the labels of a table hold: index (class indices from 0), names (class column names), "
        "1-based (indices from 1), or LABEL=COLUMN pairs (--label-values=-1=neg,1=pos for labels that start "
        "with '-'); default: names if text, the numbers numbered columns carry, else indices",
    )
    group.add_argument(
        "--positive-label",
        metavar="LABEL",
        help="binary problems: the label of the positive class (a table may then hold one score column, the "
        "positive class's probability, log-probability or logit)",
    )
    group.add_argument("--id-column", metavar="COLUMN", help="a column of row ids (not scores), carried to outputs")
    group.add_argument(
        "--renormalize",
        action="store_true",
        help="divide rows of probabilities by their sums when rounding left them off 1 (by at most 0.01)",
    )
    group.add_argument("--format", choices=FORMATS, help="the files' format when their suffix does not say it")
    group.add_argument("--sep", help="the column separator of a text table (default: , for csv, a tab for tsv)")
    group.add_argument("--decimal", default=".", help="the decimal mark of a text table (default: .)")
    group.add_argument(
        "--labels-file",
        help="labels .npy file, for .npy scores or an .npz without labels; for a table, it replaces the label column",
    )
    group.add_argument(
        "--weights",
        metavar="COLUMN",
        help=f"a column of sample weights (not scores): {WEIGHT_MEANING}; of the file evaluated, of --train "
        "(calibrate: an --apply table may lack it), or of the first file (compare: the same weights for every "
        "system; another file's column of that name must hold the same weights); not with --weights-file",
    )
    group.add_argument(
        "--weights-file",
        metavar="PATH",
        help=f"the rows' sample weights in a file of their own, one per row in the rows' order: a .npy vector, or "
        "a text file of one number per line (a first line that is not a number is a header); the only way for "
        f".npy / .npz scores; {WEIGHT_MEANING}; for the file evaluated, --train, or every file compared",
    )
    group.add_argument("--scores-key", default="scores", help="scores array in an .npz file (default: scores)")
    group.add_argument("--labels-key", default="labels", help="labels array in an .npz file (default: labels)")
    parser.add_argument("--quiet", action="store_true", help="no progress messages on stderr")


def _label_values(values: list[str] | None):
    """--label-values as load_table's ``label_values``: one word, or a mapping from LABEL=COLUMN pairs
    (given as separate words or joined by commas)."""
    if not values:
        return "auto"
    if len(values) == 1 and "=" not in values[0]:
        return values[0]
    pairs = [pair.split("=", 1) for value in values for pair in value.split(",") if pair]
    if any(len(p) != 2 or not p[0] or not p[1] for p in pairs):
        raise UsageError(
            f"--label-values takes one of index, names, 1-based, or LABEL=COLUMN pairs; got {' '.join(values)}"
        )
    return dict(pairs)


def _table_options(args, fmt: str) -> TableOptions:
    """The options a table of format ``fmt`` is read with, as the command line gives them: the one place
    every command builds them, for a table read whole or in chunks; checked here, an error names the option."""
    return TableOptions(
        kind=args.kind or "probs",
        label_column=args.labels,
        class_columns=args.class_columns,
        label_values=_label_values(args.label_values),
        positive_label=args.positive_label,
        id_column=args.id_column,
        group_column=getattr(args, "groups", None),  # evaluate's option only
        weight_column=args.weights,
        renormalize=args.renormalize,
        scale=args.scale,
        sep=args.sep,
        decimal=args.decimal,
        format=fmt,
    )


def _check_weights(args, path: str) -> None:
    """Refuse weights given twice (--weights and --weights-file), and a column of weights in ``path``, the file
    they are of, when it has no columns (.npz, .npy)."""
    if args.weights and args.weights_file:
        raise UsageError(
            f"--weights {args.weights} and --weights-file {args.weights_file} both give the rows' weights; give one"
        )
    fmt = file_format(Path(path), args.format) if args.weights and not Path(path).is_dir() else None
    if fmt in ("npz", "npy"):
        raise UsageError(
            f"--weights {args.weights}: {path} is .{fmt}, which has no columns; give the weights with "
            "--weights-file WEIGHTS.npy (one per row)"
        )


def _load(
    path: str, args, *, require_labels: bool = True, labels_file: bool = True, weights: bool = True
) -> PosteriorSet:
    """Load ``path`` as the command line says, and validate its scores as log-posteriors, so that a bad
    file stops here, before any computation; loader warnings become notes on stderr. ``weights``: the
    weights (--weights, --weights-file) are this file's; else --weights-file is not read and a table may
    lack the --weights column (read when it has it, never as scores)."""
    file = Path(path)
    fmt = file_format(file, args.format)
    group_column = getattr(args, "groups", None)
    if group_column and fmt in ("npz", "npy"):
        raise UsageError(
            f"--groups {' '.join(group_column)}: groups are read from columns of a table (CSV, Parquet, Feather); "
            f"{path} is .{fmt}: write the scores, labels and groups as one table"
        )
    if weights:
        _check_weights(args, path)
    weights_file = args.weights_file if weights else None
    labels = args.labels_file if labels_file else None
    with _Notes():
        if fmt in ("npz", "npy"):
            options = {"renormalize": args.renormalize, "require_labels": require_labels, "scale": args.scale}
            kind = args.kind
            if fmt == "npz":  # the archive's own kind array, as calib calibrate writes it, else --kind's default
                options |= {"scores_key": args.scores_key, "labels_key": args.labels_key, "default_kind": "probs"}
            else:
                kind = kind or "probs"
            pset = load_posteriors(file, kind=kind, format=fmt, labels=labels, weights_file=weights_file, **options)
        else:
            table = _table_options(args, fmt)
            pset = load_table(file, table, labels=labels, require_labels=require_labels, weights_file=weights_file,
                              require_weights=weights)  # fmt: skip
        pset.logprobs()  # validated now: a bad file stops before any work
    return pset


def _output_dir(path: str) -> Path:
    """--out DIR, created now and checked writable, so a long run never ends in a failed write."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise CalibInputError(f"--out {out} is a file; give a folder for metrics.json, metrics.csv and the figures")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CalibInputError(f"--out {out} cannot be created ({exc.strerror}); choose a writable folder") from exc
    if not os.access(out, os.W_OK):
        raise CalibInputError(f"--out {out} is not writable; choose a writable folder")
    return out


def _output_file(path: str, flag: str, suffixes: tuple[str, ...]) -> Path:
    """An output file path, checked before any work: a suffix of ``suffixes``, not a folder, in a writable folder."""
    out = Path(path)
    if out.suffix.lower() not in suffixes:
        raise UsageError(f"{flag} {out}: give a file name ending in {' or '.join(suffixes)}")
    if out.is_dir():
        raise CalibInputError(f"{flag} {out} is a folder; give a file name ending in {' or '.join(suffixes)}")
    folder = out.parent if str(out.parent) else Path(".")
    if not folder.is_dir():
        raise CalibInputError(f"{flag} {out}: the folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise CalibInputError(f"{flag} {out} is not writable; choose another path")
    return out


def _refuse_overwriting(outputs: dict[str, Path], inputs: dict[str, str | None]) -> None:
    """Stop, before any work, when an output would replace an input (or another output)."""
    seen = {os.path.realpath(p): f"{flag} {p}" for flag, p in inputs.items() if p}
    for flag, path in outputs.items():
        key = os.path.realpath(path)
        if key in seen:
            raise UsageError(
                f"{flag} {path} is also {seen[key]}: writing it would destroy that file; give another output path"
            )
        seen[key] = f"{flag} {path}"


def _check_declared(args, declared: dict) -> None:
    """The options ``declared`` (name -> the library's declaration, e.g. ``{"seed": Seed}``) checked by those
    declarations; a wrong one is a command-line error naming its option."""
    from calib._internal.declared import check_parameters, option

    try:
        check_parameters(declared, {name: getattr(args, name) for name in declared})
    except CalibInputError as error:
        name = str(error).split(" ", 1)[0]
        raise UsageError(str(error).replace(name, option(name), 1)) from None


def _settings(args):
    """The evaluation settings the command line asks for (:class:`calib.evaluation.settings.EvaluationSettings`),
    checked before any file is read; a setting out of range is reported with its option's name."""
    from calib._internal.declared import from_options
    from calib.evaluation.settings import EvaluationSettings

    try:
        return from_options(EvaluationSettings, args, _setting_names(args.command))
    except CalibInputError as exc:  # in the command's words (the settings name their options)
        raise UsageError(exc.cli_message) from None


# The settings compare takes from its options (evaluate takes every one; the others keep their defaults).
COMPARE_SETTINGS = ("metrics", "n_bins", "binning", "n_boot", "seed")


def _setting_names(command: str) -> tuple[str, ...]:
    """The settings ``command`` takes from its options."""
    from dataclasses import fields

    from calib.evaluation.settings import EvaluationSettings

    return tuple(f.name for f in fields(EvaluationSettings)) if command == "evaluate" else COMPARE_SETTINGS


def _strict_json(document) -> str:
    def clean(node):
        if isinstance(node, dict):
            return {k: clean(v) for k, v in node.items()}
        if isinstance(node, list | tuple):
            return [clean(v) for v in node]
        if isinstance(node, float | np.floating):
            return json_float(node)
        if isinstance(node, np.integer):
            return int(node)
        return node

    return json.dumps(clean(document), indent=2, allow_nan=False)


def _evaluate(args) -> int:
    settings = _settings(args)
    progress = _Progress(args.quiet)
    if args.out:
        written = {f"--out {args.out} ({name})": Path(args.out) / name for name in _report_files(args.groups)}
        inputs = {"FILE": args.file, "--labels-file": args.labels_file, "--weights-file": args.weights_file}
        _refuse_overwriting(written, inputs | {"--costs": args.costs})
    created = bool(args.out) and not Path(args.out).exists()
    out = _output_dir(args.out) if args.out else None
    _check_weights(args, args.file)
    progress(f"reading {args.file}")  # the imports and a large file take seconds: say so first
    try:
        with ExitStack() as cluster:
            map_reduce = cluster.enter_context(_cluster(args, progress)) if args.scheduler else None
            table = _chunked(args, map_reduce)
            return _evaluated(args, settings, progress, out, table, map_reduce)
    except BaseException:
        if created and not any(out.iterdir()):  # a failed run leaves no folder of its own behind
            out.rmdir()
        raise


def _evaluated(args, settings, progress, out: Path | None, table, map_reduce) -> int:
    """Evaluate the file (loaded whole, read in chunks, or by partitions on a cluster) and write the outputs."""
    from calib.cli_report import evaluation_document, summary_text, write_outputs
    from calib.evaluation.router import Loaded, evaluate_read
    from calib.scoring.decisions import zero_one_costs

    data = table
    if table is not None:
        return_large_arrays_to_the_system()  # a long run's memory is what it holds, not its past peaks
        n_classes, names, reading_notes, given = table.n_classes, table.class_names, table.notes, table.given_order
        size = "" if table.n_samples is None else f"{table.n_samples} samples, "
        if map_reduce is None:
            progress(f"reading {args.file} in chunks: {size}{n_classes} classes")
        else:
            from calib.data.chunks import PARTITION_ROWS

            parts = len(table.partitions(PARTITION_ROWS))
            progress(f"evaluating {args.file} on the Dask cluster at {args.scheduler}: {size}{n_classes} classes, "
                     f"{parts} partitions")  # fmt: skip
    else:
        pset = _load(args.file, args)
        data = Loaded(pset.logprobs(), pset.labels, pset.groups, pset.weights)  # the log-posteriors: overwritten
        n_classes, names, reading_notes, given = pset.n_classes, pset.class_names, pset.notes, pset.given_order
        progress(f"loaded {args.file}: {pset.n_samples} samples, {n_classes} classes")
        del pset  # the scores as stored: the log-posteriors are all that is read from now on
    costs = {"0-1": zero_one_costs(n_classes)}
    if args.abstain is not None:
        try:
            costs["0-1 + abstain"] = zero_one_costs(n_classes, abstention=args.abstain)
        except CalibInputError as exc:
            raise UsageError(f"--abstain: {exc}") from None
    if args.costs:
        costs[Path(args.costs).stem] = _read_costs(args.costs, names, n_classes, given)
    shared = {
        "settings": settings,
        "costs": costs,
        "priors": _priors(args.priors, names, n_classes, given),
        "group_column": tuple(args.groups or ("group",)),
        "progress": progress,
    }
    with _Notes():
        summary = evaluate_read(data, map_reduce=map_reduce, grouped=bool(args.groups), **shared)
    if summary.weighting is not None:
        summary.weighting = _named_weights(summary.weighting, args)
    # How the file's columns and labels were read, where it was not by name, first among the notes.
    summary.notes[:0] = [note.cli_message for note in reading_notes]
    document = _strict_json(evaluation_document(args.file, summary, names))
    print(document if args.json else summary_text(args.file, summary, names))
    if out is not None:
        for path in write_outputs(out, summary, document, progress, names):
            progress(f"wrote {path}")
    return 0


def _named_weights(weighting, args):
    """``weighting`` naming where the weights were read: the --weights column, or the --weights-file."""
    return dataclasses.replace(weighting, column=args.weights or str(args.weights_file))


def _cluster(args, progress):
    """The Dask cluster of ``--scheduler`` as a map_reduce (Dask is imported only here), once FILE is known to
    be a Parquet file or folder."""
    file = Path(args.file)
    if not file.is_dir() and not file.exists():
        raise MissingFileError(f"FILE {file} does not exist; check the path")
    if not file.is_dir() and (file_format(file, args.format) != "parquet" or not file.is_file()):
        raise UsageError(
            f"--scheduler: FILE {file} is not a Parquet file or folder; a cluster reads Parquet data sets by their "
            "row groups (write the table with pandas' to_parquet, or leave out --scheduler)"
        )
    try:
        from calib.evaluation.dask_cluster import on_cluster
    except ImportError as exc:
        raise UsageError(
            f"--scheduler needs Dask, which is not installed here ({exc}): pip install 'calib-repro[dask]'"
        ) from None
    return on_cluster(args.scheduler, say=progress)


def _chunked(args, map_reduce=None):
    """The file as a :class:`calib.data.chunks.ChunkedSet` when it is read in chunks: a folder of Parquet
    files, or a Parquet, CSV / TSV or .npy file (not a pipe) larger than CHUNKED_FILE_BYTES; else None
    (the file is loaded whole). Either way the evaluation is the same (:mod:`calib.evaluation.engine`).
    With a cluster's ``map_reduce`` (``--scheduler``): the Parquet file or folder, whatever its size."""
    from calib.data.chunks import npy_chunks, table_chunks

    file = Path(args.file)
    if file.is_dir():
        fmt = args.format or "parquet"
        if fmt != "parquet":
            raise UsageError(f"FILE {file} is a folder: a folder is read as Parquet files (--format parquet)")
    else:
        fmt = file_format(file, args.format)
        whole = fmt not in ("parquet", "csv", "tsv", "npy") or not file.is_file()
        if map_reduce is None and (whole or file.stat().st_size <= CHUNKED_FILE_BYTES):
            return None
    if fmt != "npy" and args.labels_file:
        raise UsageError(
            f"--labels-file {args.labels_file}: {file} is read in chunks (it is over "
            f"{CHUNKED_FILE_BYTES >> 20} MiB), and a table read in chunks takes its labels from a column: add the "
            "labels to it as a column (--labels COLUMN), or give the scores as .npy beside --labels-file"
        )
    with _Notes():
        if fmt == "npy":
            if not args.labels_file or not Path(args.labels_file).is_file():
                return None  # loaded whole, which names what is missing
            kind = args.kind or "probs"
            return npy_chunks(file, args.labels_file, kind=kind, renormalize=args.renormalize, scale=args.scale,
                              weights_file=args.weights_file)  # fmt: skip
        return table_chunks(file, _table_options(args, fmt), map_reduce=map_reduce, weights_file=args.weights_file)


def _report_files(groups) -> tuple[str, ...]:
    from calib.cli_report import GROUP_FILES, REPORT_FILES

    return REPORT_FILES + (GROUP_FILES if groups else ())


def _priors(values: list[str] | None, names, n_classes: int, given_order=None):
    """--priors as a vector in class order: NAME=VALUE pairs matched by name, or K numbers in the order the
    file gives its class columns (``given_order``: each class's place there)."""
    if not values:
        return None
    if all("=" in v for v in values):
        given = dict(v.split("=", 1) for v in values)
        classes = list(names) if names else [str(k) for k in range(n_classes)]
        if sorted(given) != sorted(classes):
            raise UsageError(f"--priors names {sorted(given)}, but the classes are {classes}: give one NAME=VALUE each")
        values = [given[c] for c in classes]
    elif given_order is not None and len(values) == n_classes:
        values = [values[i] for i in given_order]
    try:
        numbers = [float(v) for v in values]
    except ValueError:
        raise UsageError(
            f"--priors takes one number per class (in the order of the file's class columns) or NAME=VALUE pairs; "
            f"got {values}"
        ) from None
    try:
        return as_priors(numbers, n_classes)
    except CalibInputError as exc:
        raise UsageError(f"--{exc}") from None  # "priors must ..." as the option says it


def _read_costs(path: str, names, n_classes: int, given_order=None) -> np.ndarray:
    """A cost matrix from a CSV: row = true class, column = decision. A first column of class names puts
    the rows in class order by name, else the rows follow the order the file gives its class columns
    (``given_order``: each class's place there); a header row of decision names is skipped."""
    import pandas as pd

    try:
        frame = pd.read_csv(path, header=None, dtype=str, keep_default_na=False)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise CalibInputError(f"--costs {path}: not a CSV of numbers, one row per class ({exc})") from exc
    if frame.empty:
        raise CalibInputError(f"--costs {path} is empty: give one row of costs per true class")

    def numeric(cells) -> bool:
        return bool(pd.to_numeric(cells, errors="coerce").notna().all())

    if pd.to_numeric(frame.iloc[0, 1:], errors="coerce").isna().all():  # a header: decision names, no number
        frame = frame.iloc[1:]
    if not numeric(frame.iloc[:, 0]):  # the classes by name
        classes = list(names) if names else [str(k) for k in range(n_classes)]
        rows = frame.iloc[:, 0].str.strip().tolist()
        if sorted(rows) != sorted(classes):
            raise CalibInputError(f"--costs {path}: its rows name the classes {rows}, but the classes are {classes}")
        frame = frame.set_index(0).loc[classes]
    elif given_order is not None and len(frame) == n_classes:
        frame = frame.iloc[list(given_order)]
    try:
        costs = frame.to_numpy(dtype=np.float64)
    except ValueError as exc:
        raise CalibInputError(f"--costs {path}: not a CSV of numbers, one row per class ({exc})") from exc
    bad = np.argwhere(~(np.isfinite(costs) & (costs >= 0)))
    if bad.size:
        row, column = bad[0]
        raise CalibInputError(
            f"--costs {path}: the cost of true class {names[row] if names else row} and decision {column} is "
            f"{float(costs[row, column])!r}; costs must be finite numbers >= 0"
        )
    return costs


def _calibrate(args) -> int:
    from calib._internal.files import atomic_write
    from calib.calibrators.persistence import METHODS, read_calibrator, save_calibrator
    from calib.calibrators.registry import make_calibrator
    from calib.data.alignment import classes_in_order

    progress = _Progress(args.quiet)
    if args.model and (args.method or args.train or args.save_model):
        raise UsageError("--model applies a saved calibrator: drop --method, --train and --save-model")
    if not args.model and (not args.train or not args.method):
        raise UsageError("give --method and --train FILE to fit a calibrator, or --model FILE to apply one")
    if args.method and args.method != "auto" and args.method not in METHODS:
        raise UsageError(f"--method {args.method!r} is not a calibrator; use auto or one of {', '.join(METHODS)}")
    if args.folds < 2:
        raise UsageError(f"--folds must be an integer >= 2; got {args.folds}")
    _check_declared(args, {"seed": Seed})
    penalty = _penalty_options(args)
    out = _output_file(args.out, "--out", CALIBRATED_SUFFIXES)
    saved = _output_file(args.save_model, "--save-model", (".json",)) if args.save_model else None
    outputs = {"--out": out} | ({"--save-model": saved} if saved else {})
    inputs = {"--train": args.train, "--apply": args.apply, "--model": args.model, "--labels-file": args.labels_file}
    inputs["--weights-file"] = args.weights_file
    _refuse_overwriting(outputs, inputs)
    if args.model and (args.weights or args.weights_file):
        raise UsageError("--weights and --weights-file weigh the rows of a fit (--train); drop them with --model")
    if args.model:
        with _Notes():
            model_file = read_calibrator(args.model)
        model, names, fitted_kind, method = model_file.model, model_file.class_names, model_file.kind, model_file.method
        progress(f"loaded a {model_file.method} calibrator from {args.model}")
        report = _fit_report(model, method, model_file.cross_validation)
    else:
        train = _load(args.train, args)
        if args.method != "auto" and METHODS[args.method].binary_only and train.n_classes != 2:
            raise CalibInputError(
                f"--method {args.method} is for two classes and --train {args.train} has {train.n_classes}; for "
                "more classes use --method auto, temperature, dp, vector, matrix or dirichlet"
            )
        method, comparison = _chosen_method(args, train, progress)
        _warn_about_training_data(train, method)
        progress(f"fitting {method} on {args.train} ({train.n_samples} samples)")
        with _Notes():
            calibrator = make_calibrator(method, **penalty)
            model = calibrator.fit(train.scores, train.labels, kind=train.kind, sample_weight=train.weights)
        _note_zero_treatment(model, args.train)
        comparison = _checked_against_baselines(args, train, method, penalty, comparison, progress)
        names, fitted_kind = train.class_names, train.kind
        del train
        report = _fit_report(model, method, None if comparison is None else comparison.as_record())
    progress(_fit_text(report))
    # --labels-file and the weights are --train's (the file the calibrator learns from), never the file it is
    # applied to
    target = _load(args.apply, args, require_labels=False, labels_file=False, weights=False)
    target = _matched_to_model(target, names, fitted_kind, args, classes_in_order)
    if saved is not None:
        save_calibrator(
            model,
            saved,
            method=method,
            class_names=names,
            kind=fitted_kind,
            cross_validation=report["cross_validation"],
        )
        progress(f"saved the calibrator to {saved}")
    with _Notes():
        calibrated = model.predict_log_proba(target.scores, kind=target.kind)
    if out.suffix.lower() == ".csv":
        _write_calibrated_csv(out, target, calibrated, args, atomic_write)
    else:
        arrays = {"scores": calibrated, "kind": np.array("logprobs")}
        if target.labels is not None:
            arrays["labels"] = target.labels
        if target.class_names is not None:
            arrays["class_names"] = np.array(target.class_names, dtype=str)
        if target.ids is not None:
            arrays["ids"] = target.ids
        atomic_write(out, lambda tmp: np.savez_compressed(tmp, **arrays))
    what = "calibrated posteriors" + ("" if target.labels is not None else " (no labels: scores only)")
    progress(f"wrote the {what} of {args.apply} to {out}")
    if args.json:
        print(json.dumps(report, sort_keys=True, indent=1, allow_nan=False))
    return 0


# The command-line options of the penalized maps (calib.calibrators.penalized), by parameter name.
PENALTY_OPTIONS = {"reg_lambda": "--reg-lambda", "reg_mu": "--reg-mu", "penalty": "--penalty"}


def _penalty_options(args) -> dict[str, object]:
    """The penalty parameters given on the command line, checked against the method they apply to."""
    from calib.calibrators.penalized import PenalizedSoftmaxMap, RegLambda
    from calib.calibrators.registry import CALIBRATORS

    given = {name: getattr(args, name) for name in PENALTY_OPTIONS if getattr(args, name) is not None}
    if not given:
        return {}
    options = " and ".join(PENALTY_OPTIONS[name] for name in given)
    penalized = " or ".join(name for name, cls in CALIBRATORS.items() if issubclass(cls, PenalizedSoftmaxMap))
    if args.model:
        raise UsageError(f"{options} set the penalty of a fit; a saved model (--model) is applied as it is: drop them")
    if args.method == "auto" or not issubclass(CALIBRATORS[args.method], PenalizedSoftmaxMap):
        raise UsageError(f"{options} set the penalty of --method {penalized}; drop them for --method {args.method}")
    weights = [name for name in ("reg_lambda", "reg_mu") if name in given]
    for name in weights:
        # a number stays the text given when it is none, for its declaration to refuse as given
        with contextlib.suppress(ValueError):
            given[name] = given[name] if given[name] == "cv" else float(given[name])
    _check_declared(SimpleNamespace(**given), {name: RegLambda for name in weights})
    if given.get("reg_mu") == "cv":
        raise UsageError("--reg-mu must be a number >= 0 (with --reg-lambda cv, mu is chosen with lambda)")
    return given


def _chosen_method(args, train: PosteriorSet, progress):
    """(--method, None), or for --method auto the cross-validated best and its comparison."""
    if args.method != "auto":
        return args.method, None
    from calib.calibrators.selection import choose_calibrator

    folds = _folds(args, train)
    if folds < 2:
        raise CalibInputError(
            f"--method auto chooses by cross-validation, which needs a class with at least 2 rows of --train "
            f"{args.train}; name the method (--method temperature has one parameter)"
        )
    progress(f"choosing a calibrator by {folds}-fold cross-validated log-loss on {args.train}")
    with _Notes():
        chosen, comparison = choose_calibrator(
            train.scores, train.labels, kind=train.kind, n_folds=folds, seed=args.seed, sample_weight=train.weights
        )
    return chosen, comparison


def _folds(args, train: PosteriorSet) -> int:
    """--folds, or fewer when the largest class of --train has fewer rows (with a note)."""
    from calib.calibrators.folds import usable_folds

    folds = usable_folds(train.labels, args.folds)
    if 2 <= folds < args.folds:
        _note(f"cross-validating in {folds} folds, not {args.folds}: the largest class of --train has {folds} rows")
    return folds


def _checked_against_baselines(args, train: PosteriorSet, method: str, penalty: dict, comparison, progress):
    """The comparison of the fitted method with the raw scores and temperature scaling (computed here unless
    --method auto computed it), and a note when the method is worse than either on held-out folds."""
    from calib.calibrators.selection import BASELINES, compare_calibrators

    if comparison is None:
        folds = _folds(args, train)
        if folds < 2:
            _note(
                f"{method} is not checked against the raw scores and temperature scaling: cross-validation needs "
                f"a class with at least 2 rows of --train {args.train}"
            )
            return None
        progress(f"checking {method} against the raw scores and temperature scaling ({folds}-fold)")
        methods = [name for name in (method, *BASELINES) if name != "raw"]
        with _Notes():
            comparison = compare_calibrators(
                list(dict.fromkeys(methods)),
                train.scores,
                train.labels,
                kind=train.kind,
                n_folds=folds,
                seed=args.seed,
                params={method: penalty},
                sample_weight=train.weights,
            )
    for name, reason in (comparison.failures or {}).items():
        _note(f"{name} could not be cross-validated on --train {args.train}: {reason}")
    worse = comparison.worse_than_baselines(method)
    if worse and method == "temperature":
        _note(
            f"temperature scaling is worse than the raw scores on held-out folds of --train ({comparison.n_folds}-fold "
            f"cross-validated log-loss {comparison.losses[method]:.6g}; the raw scores "
            f"{comparison.losses['raw']:.6g}): the scores may need no calibration; check on held-out data "
            "(calib evaluate)"
        )
    elif worse:
        named = {"raw": "the raw scores", "temperature": "temperature scaling"}
        losses = ", ".join(f"{named[name]} {comparison.losses[name]:.6g}" for name in worse)
        _note(
            f"{method} is worse than {' and '.join(named[name] for name in worse)} on held-out folds of --train "
            f"({comparison.n_folds}-fold cross-validated log-loss {comparison.losses[method]:.6g}; {losses}): prefer "
            "--method temperature, or --method auto to choose by this test"
        )
    return comparison


def _fit_report(model, method: str, cross_validation: dict | None) -> dict:
    """What the fit did, as plain JSON values: the method, its size, convergence, penalty and comparison."""
    report = {
        "method": method,
        "calibrator": type(model).__name__,
        "n_parameters": getattr(model, "n_parameters_", None),
        "n_fit_rows": getattr(model, "n_fit_rows_", None),
        "cross_validation": cross_validation,
    }
    if hasattr(model, "converged_"):
        report["converged"] = bool(model.converged_)
        report["gradient_norm"] = json_float(float(getattr(model, "gradient_norm_", math.nan)))
    if hasattr(model, "reg_lambda_"):
        report["penalty"] = {
            "form": model.penalty,
            "lambda": model.reg_lambda_,
            "mu": model.reg_mu_,
            "chosen_by_cross_validation": model.reg_lambda == "cv",
            "grid": model.cv_grid_.tolist() if model.reg_lambda == "cv" else None,
            "grid_log_loss": [json_float(float(v)) for v in model.cv_losses_] if model.reg_lambda == "cv" else None,
        }
    if hasattr(model, "features_"):
        report["features"] = model.features_
    return report


def _fit_text(report: dict) -> str:
    """The fit report in a few lines for stderr."""
    count = report["n_parameters"]
    lines = [f"{report['method']}: {count} parameter{'' if count == 1 else 's'} fitted on {report['n_fit_rows']} rows"]
    if "features" in report:
        lines[0] += f", on {report['features'].replace('_', ' ')}"
    if "converged" in report:
        state = "converged" if report["converged"] else "NOT converged"
        norm = report["gradient_norm"]
        lines.append(f"  {state} (largest gradient entry {norm if isinstance(norm, str) else f'{norm:.3g}'})")
    if "penalty" in report:
        pen = report["penalty"]
        how = "chosen by cross-validation" if pen["chosen_by_cross_validation"] else "given"
        lines.append(f"  {pen['form']} penalty lambda = {pen['lambda']:g}, mu = {pen['mu']:g} ({how})")
    record = report["cross_validation"]
    if record:
        lines.append(f"  {record['n_folds']}-fold cross-validated log-loss on the training file:")
        for name, loss in sorted(record["log_loss"].items(), key=lambda item: _sort_key(item[1])):
            mark = "  <- chosen" if name == record.get("chosen") else ""
            if name == record.get("lowest") and name != record.get("chosen"):
                mark = "  (lowest; not chosen: see the rule of --method auto)"
            lines.append(f"    {name:<20} {loss if isinstance(loss, str) else f'{loss:.6f}'}{mark}")
    return "\n".join(lines)


def _sort_key(loss) -> float:
    return float(loss) if not isinstance(loss, str) else (math.inf if loss != "-inf" else -math.inf)


def _matched_to_model(target: PosteriorSet, names, fitted_kind, args, classes_in_order) -> PosteriorSet:
    """The --apply set with its classes in the calibrator's order, matched by name (by position, with a
    note, when either side has no names)."""
    source = f"the calibrator ({args.model or args.train})"
    if target.n_classes != (len(names) if names else target.n_classes):
        named = ""
        if target.class_names is not None:
            missing = [n for n in names if n not in target.class_names]
            extra = [n for n in target.class_names if n not in names]
            named = " (" + ", ".join(f"{w} {v}" for w, v in (("missing", missing), ("unexpected", extra)) if v) + ")"
        raise CalibInputError(
            f"--apply {args.apply} has {target.n_classes} classes but {source} was fitted on {len(names)}{named}: "
            "give it the calibrator's classes, or fit one on its own"
        )
    if names is not None and target.class_names is not None:
        return classes_in_order(target, names, where=f"--apply {args.apply}", reference=source)
    if names is not None or target.class_names is not None:
        _note(
            f"--apply {args.apply} and {source}: one of them has no class names, so classes are matched by "
            "position: check that the columns come in the same order"
        )
    if fitted_kind is not None and target.kind != fitted_kind:
        _note(f"{source} was fitted on {fitted_kind} and --apply {args.apply} is read as {target.kind}: check --kind")
    return target


def _write_calibrated_csv(out: Path, target: PosteriorSet, calibrated: np.ndarray, args, atomic_write) -> None:
    """The calibrated probabilities as a table: the ids, one column per class (named), the labels (as
    class names), so that ``calib evaluate`` reads it back as it is."""
    import pandas as pd

    names = list(target.class_names or [f"class_{k}" for k in range(target.n_classes)])
    frame = pd.DataFrame(np.exp(calibrated), columns=names, copy=False)
    if target.ids is not None:
        frame.insert(0, args.id_column or "id", target.ids)
    if target.labels is not None:
        frame[args.labels] = np.asarray(names)[target.labels]
    atomic_write(out, lambda tmp: frame.to_csv(tmp, index=False, float_format="%.17g"))


def _note_zero_treatment(model, train_path: str) -> None:
    eps = getattr(model, "zero_smoothing_", 0.0)
    if eps:
        _note(
            f"--train {train_path} holds probabilities of exactly 0: every score is smoothed at the scores' "
            f"resolution before the logarithm (Laplace, eps = {eps:.3g}; see the README, 'Exact zeros')"
        )


def _warn_about_training_data(train: PosteriorSet, method: str) -> None:
    """Notes when a calibrator is fitted on data too small, or missing classes, to be trusted."""
    counts = np.bincount(train.labels, minlength=train.n_classes)
    absent = [train.class_names[k] if train.class_names else int(k) for k in np.flatnonzero(counts == 0)]
    if absent:
        _note(f"--train has no sample of class {', '.join(map(str, absent))}: {method} learns nothing about it")
    if counts.min() < 20:
        _note(
            f"--train has only {int(counts.min())} samples of its smallest class: a {method} fit on so few is noisy; "
            "check it on held-out data (calib evaluate)"
        )


def _compare(args) -> int:
    from calib.cli_report import compare_text
    from calib.data.alignment import classes_in_order, rows_in_order
    from calib.evaluation.engine import compare

    settings = _settings(args)
    if len(args.files) < 2:
        raise UsageError("compare needs at least two files (systems scored on the same labels)")
    names = args.names or args.files
    if len(names) != len(args.files):
        raise UsageError(f"--names gives {len(names)} names for {len(args.files)} files; give one per file")
    progress = _Progress(args.quiet)
    # The weights are the first file's (its column, or --weights-file in its row order), the same for every system.
    sets = [_load(f, args, weights=i == 0) for i, f in enumerate(args.files)]
    first, reference = sets[0], args.files[0]
    for i, (f, s) in enumerate(zip(args.files[1:], sets[1:], strict=True), start=1):
        if first.class_names is not None and s.class_names is not None:
            s = classes_in_order(s, first.class_names, where=f, reference=reference)
        if args.id_column:
            s = rows_in_order(s, _ids(first, reference), where=f, reference=reference)
            _check_same_labels(first, s, reference, f, "by id")
        else:
            _check_paired_by_position(first, s, reference, f)
        _check_same_weights(first, s, reference, f, args.weights)
        sets[i] = s
    systems = [s.logprobs() for s in sets]
    comparison = compare(systems, first.labels, names=names, settings=settings, sample_weight=first.weights,
                         progress=progress)  # fmt: skip
    if comparison.weighting is not None:
        comparison = dataclasses.replace(comparison, weighting=_named_weights(comparison.weighting, args))
    print(compare_text(comparison))
    return 0


def _ids(pset: PosteriorSet, path: str) -> np.ndarray:
    if pset.ids is None:
        raise CalibInputError(f"{path} has no id column to pair rows by; name it with --id-column")
    return pset.ids


def _check_paired_by_position(first: PosteriorSet, other: PosteriorSet, reference: str, path: str) -> None:
    """Without --id-column, rows are paired by position: refuse files that disagree on anything checkable."""
    if other.n_samples != first.n_samples:
        raise CalibInputError(
            f"{path} has {other.n_samples} rows and {reference} {first.n_samples}: compare systems on one test set"
        )
    if first.ids is not None and other.ids is not None and not np.array_equal(first.ids, other.ids):
        raise CalibInputError(
            f"{path} and {reference} hold their rows in another order (their ids differ): pair the rows by id with "
            "--id-column COLUMN ('Unnamed: 0' for the index pandas writes)"
        )
    _check_same_labels(first, other, reference, path, "row by row")


def _check_same_weights(first: PosteriorSet, other: PosteriorSet, reference: str, path: str, column) -> None:
    """Systems are compared with one set of weights, the first file's: another file's column of weights (read
    when it has the --weights column, its rows paired with the first's) must hold the same weights."""
    if other.weights is None:
        return
    differ = np.flatnonzero(other.weights != first.weights)
    if differ.size:
        raise CalibInputError(
            f"{path}: its --weights column {column} differs from that of {reference} in {differ.size} rows (first at "
            f"row {int(differ[0])} of {reference}, counting from 0); systems are compared with the weights of "
            f"{reference}: give the same weights, or drop the column {column} from {path}"
        )


def _check_same_labels(first: PosteriorSet, other: PosteriorSet, reference: str, path: str, how: str) -> None:
    """Systems are compared on one test set: the rows paired ``how`` must hold the same labels."""
    differ = np.flatnonzero(other.labels != first.labels)
    if differ.size:
        advice = "pair them by id with --id-column, or " if how == "row by row" else ""
        raise CalibInputError(
            f"{path}: the labels of {differ.size} rows paired {how} differ from those of {reference} (first at row "
            f"{int(differ[0])} of {reference}, counting from 0); compare systems on one test set: {advice}check that "
            "both files read their labels alike (--labels, --label-values)"
        )


def _add_setting_options(parser: argparse.ArgumentParser, command: str) -> None:
    """The options of the evaluation's settings ``command`` takes, built from their declarations
    (:class:`calib.evaluation.settings.EvaluationSettings`)."""
    from calib._internal.declared import add_options
    from calib.evaluation.settings import EvaluationSettings

    add_options(parser.add_argument_group("the evaluation's settings"), EvaluationSettings, _setting_names(command))


class _Version(argparse.Action):
    """--version, reading the installed version only when asked (no other command needs importlib.metadata)."""

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib.metadata import version

        print(f"calib {version('calib-repro')}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``calib`` command (its ``--help`` is the command's reference)."""
    # Every command fits or checks calibrators, so the registry (which names them) costs a command nothing extra.
    from calib.calibrators.registry import SAVABLE

    parser = argparse.ArgumentParser(prog="calib", description="Evaluate and calibrate probabilistic classifiers.")
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    commands = parser.add_subparsers(dest="command", required=True)

    ev = commands.add_parser("evaluate", help="metrics, intervals and a reliability diagram of one posteriors file")
    ev.add_argument("file")
    _add_input_options(ev)
    ev.add_argument("--out", help="folder for metrics.json, metrics.csv and reliability.png / .pdf")
    ev.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    ev.add_argument(
        "--priors",
        nargs="+",
        metavar="PRIOR",
        help="class priors for NCE, NBS and the risks: NAME=VALUE per class, or one number per class in the order "
        "of the file's class columns",
    )
    ev.add_argument(
        "--abstain", type=float, help="also the Bayes risk of 0-1 costs with an abstain decision of this cost"
    )
    ev.add_argument(
        "--costs",
        help="also the Bayes risk of this cost matrix (CSV, row = true class, column = decision; a first column of "
        "class names matches rows by name, else rows follow the file's class columns; a header row of decision "
        "names is skipped)",
    )
    _add_setting_options(ev, "evaluate")
    ev.add_argument(
        "--groups",
        metavar="COLUMN",
        nargs="+",
        help="columns of subgroups (a segment, a site, an attribute): every summed metric (not the smooth ECE nor "
        "RCL) and Cox's calibration test per value of each column and per crossing of up to --segment-depth "
        "columns (at most 1000 segments), Holm-adjusted over the segments of at least --min-segment rows, and the "
        "worst segment found with a p-value valid after the search",
    )
    ev.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="evaluate a Parquet file or folder on this Dask cluster (tcp://HOST:8786), each partition on a worker, "
        "with the same result as here; needs pip install 'calib-repro[dask]'; an address that does not answer in "
        "10 s is an error",
    )
    ev.set_defaults(run=_evaluate)

    ca = commands.add_parser("calibrate", help="fit a calibrator on one file and apply it to another")
    ca.add_argument(
        "--method",
        help=f"the calibrator to fit and save: {', '.join(SAVABLE)}; or auto: temperature unless dp, vector, matrix "
        "or dirichlet (two classes: dp, beta, isotonic, histogram) beats it significantly in cross-validated "
        "log-loss, then the simplest of those within one standard error of the lowest",
    )
    ca.add_argument(
        "--reg-lambda",
        dest="reg_lambda",
        metavar="LAMBDA",
        help="matrix / dirichlet: the weight of the penalty on W, a number >= 0 or cv (the default: chosen by "
        "cross-validated log-loss)",
    )
    ca.add_argument(
        "--reg-mu",
        dest="reg_mu",
        metavar="MU",
        help="matrix / dirichlet: the weight of the penalty on the biases (default: equal to lambda)",
    )
    ca.add_argument(
        "--penalty",
        choices=("odir", "l2"),
        help="matrix / dirichlet: odir (default) leaves the "
        "diagonal of W free; l2 shrinks all of W toward the identity",
    )
    ca.add_argument(
        "--folds",
        type=int,
        default=5,
        help="cross-validation folds of the check against the raw "
        "scores and temperature scaling, and of --method auto (default 5)",
    )
    ca.add_argument("--seed", type=int, default=0, help="seed of those folds (default 0)")
    ca.add_argument(
        "--json",
        action="store_true",
        help="print the fit report (size, convergence, penalty, cross-validated comparison) as one JSON object",
    )
    ca.add_argument("--train", help="posteriors and labels to fit the calibrator on")
    ca.add_argument("--apply", required=True, help="posteriors to calibrate (labels optional)")
    ca.add_argument(
        "--out",
        required=True,
        help=".npz file for the calibrated log-probabilities, or .csv for the probabilities (with class names, ids "
        "and labels)",
    )
    ca.add_argument("--save-model", help="write the fitted calibrator to this .json file")
    ca.add_argument("--model", help="apply a calibrator saved with --save-model (a .json file) instead of fitting one")
    _add_input_options(ca)
    ca.set_defaults(run=_calibrate)

    co = commands.add_parser("compare", help="several systems on the same labels, with paired bootstrap intervals")
    co.add_argument("files", nargs="+")
    co.add_argument("--names", nargs="+", help="one short name per file")
    _add_setting_options(co, "compare")
    _add_input_options(co)
    co.set_defaults(run=_compare)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line; 0 on success, 1 for bad input (one line on stderr), 2 for a bad command line."""
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except CalibInputError as exc:
        print(f"calib {args.command}: error: {exc.cli_message}", file=sys.stderr)
        return 2 if isinstance(exc, UsageError) else 1
    except BrokenPipeError:  # the reader closed the pipe (e.g. `| head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(f"calib {args.command}: interrupted; every file is written whole or not at all", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
