"""The ``calib`` command: evaluate, calibrate and compare posteriors from files.

    calib evaluate FILE [input options] [--out DIR] [--json] [--bootstrap B]
    calib calibrate --method dp --train FILE --apply FILE --out FILE.npz [--save-model MODEL.json]
    calib calibrate --model MODEL.json --apply FILE --out FILE.npz
    calib compare FILE FILE ... [--names A B ...]
    calib --version

Files: ``.npz`` (arrays ``scores`` and ``labels``, or the keys given by --scores-key / --labels-key;
an array ``kind``, as ``calib calibrate`` writes, overrides --kind), ``.npy`` scores with
--labels-file, or ``.csv`` / ``.parquet`` tables with score columns and a label column (see
``calib evaluate --help``). Progress and notes go to stderr (--quiet silences progress); results go
to stdout. Exit status: 0 success, 1 bad input, data or path (one line on stderr says what and how
to fix it), 2 bad command line (argparse's usage message).

JSON output is strict JSON: an infinite or undefined value (e.g. the cross-entropy of a zero
probability on a true label) is written as the string ``"inf"``, ``"-inf"`` or ``"nan"``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import warnings
from pathlib import Path

import numpy as np

# Arrow's default allocator keeps what it frees: after reading a Parquet table, about the table's size
# again. The command reads its tables once, so it takes the system's allocator, which returns freed
# memory (read by Arrow when it is first imported; a value set by the user wins).
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

from calib.data.real import PosteriorSet, load_posteriors
from calib.validation import CalibInputError, CalibInputWarning

KINDS = ("probs", "logprobs", "logits")
# --bootstrap: 0 turns intervals off; fewer than 2 resamples give no interval, and past this many
# the intervals stop changing while the run keeps growing.
MAX_BOOTSTRAP = 100_000


class _Progress:
    """Progress lines on stderr with the elapsed time (silenced by --quiet)."""

    def __init__(self, quiet: bool):
        self.quiet = quiet

    def __call__(self, message: str) -> None:
        if not self.quiet:
            print(f"calib: {message}", file=sys.stderr, flush=True)


def _note(message: str) -> None:
    print(f"calib: note: {message}", file=sys.stderr, flush=True)


def _add_input_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("reading the files")
    group.add_argument("--kind", choices=KINDS, default="probs", help="what the scores hold (default: probs)")
    group.add_argument("--labels", default="label", help="label column of a CSV / Parquet table (default: label)")
    group.add_argument(
        "--class-columns",
        nargs="+",
        metavar="COLUMN",
        help="score columns of a table, by name or pattern (e.g. 'prob_*'); default: every numeric column "
        "but the labels",
    )
    group.add_argument(
        "--label-values",
        nargs="+",
        metavar="HOW",
        help="what the labels of a table hold: index (class indices from 0), names (class column names), "
        "1-based (indices from 1), or LABEL=COLUMN pairs; default: names if text, indices if numbers",
    )
    group.add_argument(
        "--positive-label",
        metavar="LABEL",
        help="binary problems: the label of the positive class (a table may then hold one score column, the "
        "positive class's probability, log-probability or logit)",
    )
    group.add_argument(
        "--renormalize",
        action="store_true",
        help="divide rows of probabilities by their sums when rounding left them off 1 (by at most 0.01)",
    )
    group.add_argument("--labels-file", help="labels .npy file, for scores given as a .npy file")
    group.add_argument("--scores-key", default="scores", help="scores array in an .npz file (default: scores)")
    group.add_argument("--labels-key", default="labels", help="labels array in an .npz file (default: labels)")
    parser.add_argument("--quiet", action="store_true", help="no progress messages on stderr")


def _label_values(values: list[str] | None):
    """--label-values as load_table's ``label_values``: one word, or a mapping from LABEL=COLUMN pairs."""
    if not values:
        return "auto"
    if len(values) == 1 and "=" not in values[0]:
        return values[0]
    pairs = [v.split("=", 1) for v in values]
    if any(len(p) != 2 or not p[0] or not p[1] for p in pairs):
        raise CalibInputError(
            f"--label-values takes one of index, names, 1-based, or LABEL=COLUMN pairs; got {' '.join(values)}"
        )
    return dict(pairs)


def _load(path: str, args, *, require_labels: bool = True) -> tuple[PosteriorSet, np.ndarray]:
    """Load ``path`` as the command line says, with its scores as validated log-posteriors (so that a bad
    file stops here, before any computation); loader warnings become notes on stderr."""
    file = Path(path)
    options = {"renormalize": args.renormalize, "require_labels": require_labels}
    kind = args.kind
    suffix = file.suffix.lower()
    if suffix == ".npz":
        options |= {"scores_key": args.scores_key, "labels_key": args.labels_key}
        kind = _kind_in_archive(file) or kind
    elif suffix == ".npy":
        options["labels"] = args.labels_file
    else:
        options |= {
            "label_column": args.labels,
            "class_columns": args.class_columns,
            "label_values": _label_values(args.label_values),
            "positive_label": args.positive_label,
        }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CalibInputWarning)
        pset = load_posteriors(file, kind=kind, **options)
    for warning in caught:
        _note(str(warning.message))
    return pset, pset.logprobs()


def _kind_in_archive(file: Path) -> str | None:
    """The ``kind`` array of an archive written by ``calib calibrate`` (None if absent or unreadable here)."""
    try:
        with np.load(file, allow_pickle=False) as archive:
            return str(archive["kind"]) if "kind" in archive.files else None
    except Exception:  # the loader reads the file again and names what is wrong with it
        return None


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


def _output_file(path: str, flag: str, suffix: str) -> Path:
    """An output file path, checked before any work: the right suffix, not a folder, in a writable folder."""
    out = Path(path)
    if out.suffix.lower() != suffix:
        raise CalibInputError(f"{flag} {out}: give a file name ending in {suffix}")
    if out.is_dir():
        raise CalibInputError(f"{flag} {out} is a folder; give a file name ending in {suffix}")
    folder = out.parent if str(out.parent) else Path(".")
    if not folder.is_dir():
        raise CalibInputError(f"{flag} {out}: the folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise CalibInputError(f"{flag} {out} is not writable; choose another path")
    return out


def _check_run_options(args) -> None:
    if args.seed < 0:
        raise CalibInputError(f"--seed must be 0 or a positive integer; got {args.seed}")
    if getattr(args, "fit_samples", None) and args.fit_samples < 10:
        raise CalibInputError(f"--fit-samples must be 0 (all samples) or at least 10; got {args.fit_samples}")
    if args.bootstrap != 0 and not 2 <= args.bootstrap <= MAX_BOOTSTRAP:
        raise CalibInputError(
            f"--bootstrap must be 0 (no intervals) or between 2 and {MAX_BOOTSTRAP}; got {args.bootstrap}"
        )


def _json_number(value):
    """A float as strict JSON: itself when finite, else "inf", "-inf" or "nan"."""
    value = float(value)
    if math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


def _strict_json(document) -> str:
    def clean(node):
        if isinstance(node, dict):
            return {k: clean(v) for k, v in node.items()}
        if isinstance(node, list | tuple):
            return [clean(v) for v in node]
        if isinstance(node, float | np.floating):
            return _json_number(node)
        if isinstance(node, np.integer):
            return int(node)
        return node

    return json.dumps(clean(document), indent=2, allow_nan=False)


def _evaluate(args) -> int:
    _check_run_options(args)
    progress = _Progress(args.quiet)
    out = _output_dir(args.out) if args.out else None
    progress(f"reading {args.file}")  # the imports and a large file take seconds: say so first
    from calib.cli_report import evaluation_document, summary_text, write_outputs
    from calib.scoring.decisions import zero_one_costs
    from calib.summary import evaluate

    pset, logp = _load(args.file, args)
    labels, n_classes = pset.labels, pset.n_classes
    progress(f"loaded {args.file}: {pset.n_samples} samples, {n_classes} classes")
    # Only the reliability figure reads the scores as stored: without --out they go now, before the metrics.
    figure_source = pset if out is not None else None
    del pset
    costs = {"0-1": zero_one_costs(n_classes)}
    if args.abstain is not None:
        costs["0-1 + abstain"] = zero_one_costs(n_classes, abstention=args.abstain)
    if args.costs:
        costs[Path(args.costs).stem] = _read_costs(args.costs)
    summary = evaluate(
        logp,
        labels,
        kind="logprobs",
        costs=costs,
        priors=args.priors,
        n_boot=args.bootstrap,
        seed=args.seed,
        progress=progress,
        overwrite=True,  # logp is ours and not read again
        **({} if args.fit_samples is None else {"fit_samples": args.fit_samples or None}),
    )
    document = evaluation_document(args.file, summary)
    print(_strict_json(document) if args.json else summary_text(args.file, summary))
    if figure_source is not None:
        for path in write_outputs(out, figure_source, summary, _strict_json(document), progress, seed=args.seed):
            progress(f"wrote {path}")
    return 0


def _read_costs(path: str) -> np.ndarray:
    """A cost matrix from a CSV without header: row i = true class i, column j = decision j."""
    try:
        return np.loadtxt(path, delimiter=",", ndmin=2)
    except (OSError, ValueError) as exc:
        raise CalibInputError(f"--costs {path}: not a CSV of numbers, one row per class ({exc})") from exc


def _calibrate(args) -> int:
    from calib._internal.files import atomic_write
    from calib.calibrators.persistence import METHODS, load_calibrator, save_calibrator

    progress = _Progress(args.quiet)
    out = _output_file(args.out, "--out", ".npz")
    saved = _output_file(args.save_model, "--save-model", ".json") if args.save_model else None
    if args.model:
        if args.method or args.train or args.save_model:
            raise CalibInputError("--model applies a saved calibrator: drop --method, --train and --save-model")
        model, method = load_calibrator(args.model)
        progress(f"loaded a {method} calibrator from {args.model}")
    else:
        if not args.train or not args.method:
            raise CalibInputError("give --method and --train FILE to fit a calibrator, or --model FILE to apply one")
        if args.method not in METHODS:
            raise CalibInputError(f"--method {args.method!r} is not a calibrator; use one of {', '.join(METHODS)}")
        train, train_logp = _load(args.train, args)
        _warn_about_training_data(train, args.method)
        progress(f"fitting {args.method} on {args.train} ({train.n_samples} samples)")
        model = METHODS[args.method]().fit(train_logp, train.labels, kind="logprobs")
        if saved is not None:
            save_calibrator(model, saved, method=args.method)
            progress(f"saved the calibrator to {saved}")
    target, target_logp = _load(args.apply, args, require_labels=False)
    calibrated = model.predict_log_proba(target_logp, kind="logprobs")
    arrays = {"scores": calibrated, "kind": np.array("logprobs")}
    if target.labels is not None:
        arrays["labels"] = target.labels
    atomic_write(out, lambda tmp: np.savez_compressed(tmp, **arrays))
    what = "calibrated log-probabilities" + ("" if target.labels is not None else " (no labels: scores only)")
    progress(f"wrote the {what} of {args.apply} to {out}")
    return 0


def _warn_about_training_data(train: PosteriorSet, method: str) -> None:
    """Notes when a calibrator is fitted on data too small, or missing classes, to be trusted."""
    counts = np.bincount(train.labels, minlength=train.n_classes)
    absent = [train.class_names[k] if train.class_names else k for k in np.flatnonzero(counts == 0)]
    if absent:
        _note(f"--train has no sample of class {absent}: {method} learns nothing about it")
    if counts.min() < 20:
        _note(
            f"--train has only {counts.min()} samples of its smallest class: a {method} fit on so few is noisy; "
            "check it on held-out data (calib evaluate)"
        )


def _compare(args) -> int:
    from calib.cli_report import compare_text

    _check_run_options(args)
    if len(args.files) < 2:
        raise CalibInputError("compare needs at least two files (systems scored on the same labels)")
    names = args.names or args.files
    if len(names) != len(args.files):
        raise CalibInputError(f"--names gives {len(names)} names for {len(args.files)} files; give one per file")
    progress = _Progress(args.quiet)
    sets = [_load(f, args)[0] for f in args.files]
    labels = sets[0].labels
    for f, s in zip(args.files[1:], sets[1:], strict=True):
        if s.labels.shape != labels.shape or np.any(s.labels != labels):
            raise CalibInputError(
                f"{f}: its labels differ from those of {args.files[0]}; compare systems on one test set"
            )
    print(compare_text(names, sets, n_boot=args.bootstrap, seed=args.seed, progress=progress))
    return 0


class _Version(argparse.Action):
    """--version, reading the installed version only when asked (no other command needs importlib.metadata)."""

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib.metadata import version

        print(f"calib {version('calib-repro')}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``calib`` command (its ``--help`` is the command's reference)."""
    parser = argparse.ArgumentParser(prog="calib", description="Evaluate and calibrate probabilistic classifiers.")
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    commands = parser.add_subparsers(dest="command", required=True)

    ev = commands.add_parser("evaluate", help="metrics, intervals and a reliability diagram of one posteriors file")
    ev.add_argument("file")
    _add_input_options(ev)
    ev.add_argument("--out", help="folder for metrics.json, metrics.csv and reliability.png / .pdf")
    ev.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    ev.add_argument("--priors", type=float, nargs="+", help="class priors for NCE, NBS and the risks (one per class)")
    ev.add_argument(
        "--abstain", type=float, help="also the Bayes risk of 0-1 costs with an abstain decision of this cost"
    )
    ev.add_argument(
        "--costs", help="also the Bayes risk of this cost matrix (CSV, row = true class, column = decision)"
    )
    ev.add_argument(
        "--bootstrap", type=int, default=200, help=f"bootstrap resamples (0: no intervals; else 2..{MAX_BOOTSTRAP})"
    )
    ev.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and of the folds (default 0)")
    ev.add_argument(
        "--fit-samples",
        type=int,
        help="cross-validate the calibrators on at most this many samples, a seeded random subset beyond it "
        "(default 1000000; 0: all samples)",
    )
    ev.set_defaults(run=_evaluate)

    ca = commands.add_parser("calibrate", help="fit a calibrator on one file and apply it to another")
    ca.add_argument(
        "--method", help="dp, temperature, vector, matrix, dirichlet, beta, isotonic or histogram (to fit one)"
    )
    ca.add_argument("--train", help="posteriors and labels to fit the calibrator on")
    ca.add_argument("--apply", required=True, help="posteriors to calibrate (labels optional)")
    ca.add_argument("--out", required=True, help=".npz file for the calibrated log-probabilities")
    ca.add_argument("--save-model", help="write the fitted calibrator to this .json file")
    ca.add_argument("--model", help="apply a calibrator saved with --save-model (a .json file) instead of fitting one")
    _add_input_options(ca)
    ca.set_defaults(run=_calibrate)

    co = commands.add_parser("compare", help="several systems on the same labels, with paired bootstrap intervals")
    co.add_argument("files", nargs="+")
    co.add_argument("--names", nargs="+", help="one short name per file")
    co.add_argument("--bootstrap", type=int, default=200, help=f"paired bootstrap resamples (2..{MAX_BOOTSTRAP})")
    co.add_argument("--seed", type=int, default=0)
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
        return 1
    except BrokenPipeError:  # the reader closed the pipe (e.g. `| head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(f"calib {args.command}: interrupted; every file is written whole or not at all", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
