"""The ``calib`` command: evaluate, calibrate and compare posteriors from files.

    calib evaluate FILE [--kind probs|logprobs|logits] [--labels COL] [--out DIR] [--json]
    calib calibrate --method dp --train FILE --apply FILE --out FILE [--save-model M | --model M]
    calib compare FILE FILE ... [--names A B ...]

Files: ``.npz`` (arrays ``scores`` and ``labels``, or the keys given by --scores-key/--labels-key;
an array ``kind``, as ``calib calibrate`` writes, overrides --kind),
``.npy`` scores with --labels-file, or ``.csv`` / ``.parquet`` tables with one column per class and a
label column (--labels, default ``label``). Progress goes to stderr (silenced by --quiet); results
go to stdout. Exit status: 0 success, 1 bad input or data (one line on stderr says what and how to
fix it), 2 bad command line (argparse).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
from pathlib import Path

import numpy as np

from calib.bootstrap import percentile_interval, resample_blocks
from calib.calibrators import (
    AffineCalibrator,
    BetaCalibrator,
    DirichletCalibrator,
    HistogramBinning,
    IsotonicCalibrator,
    MatrixScaling,
    TemperatureScaling,
    VectorScaling,
)
from calib.data.real import PosteriorSet, load_posteriors
from calib.decisions import zero_one_costs
from calib.files import atomic_write
from calib.summary import Summary, evaluate, point_metrics, resampled_metrics
from calib.validation import CalibInputError

KINDS = ("probs", "logprobs", "logits")
METHODS = {
    "dp": AffineCalibrator,
    "temperature": TemperatureScaling,
    "vector": VectorScaling,
    "matrix": MatrixScaling,
    "dirichlet": DirichletCalibrator,
    "beta": BetaCalibrator,
    "isotonic": IsotonicCalibrator,
    "histogram": HistogramBinning,
}
COMPARED = ("accuracy", "NCE", "NBS", "ECE top-label", "ECD")
MODEL_FORMAT = "calib-calibrator-1"


class _Progress:
    def __init__(self, quiet: bool):
        self.quiet = quiet

    def __call__(self, message: str) -> None:
        if not self.quiet:
            print(f"calib: {message}", file=sys.stderr, flush=True)


def _add_input_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kind", choices=KINDS, default="probs", help="what the scores hold (default: probs)")
    parser.add_argument("--labels", default="label", help="label column of a CSV / Parquet file (default: label)")
    parser.add_argument("--labels-file", help="labels .npy file, for scores given as a .npy file")
    parser.add_argument("--scores-key", default="scores", help="scores array in an .npz file (default: scores)")
    parser.add_argument("--labels-key", default="labels", help="labels array in an .npz file (default: labels)")
    parser.add_argument("--quiet", action="store_true", help="no progress messages on stderr")


def _load(path: str, args) -> PosteriorSet:
    file = Path(path)
    if not file.exists():
        raise CalibInputError(f"{path}: no such file")
    suffix = file.suffix.lower()
    if suffix == ".npz":
        with np.load(file, allow_pickle=False) as archive:  # files written by `calib calibrate` carry their kind
            kind = str(archive["kind"]) if "kind" in archive.files else args.kind
        return load_posteriors(file, kind=kind, scores_key=args.scores_key, labels_key=args.labels_key)
    if suffix == ".npy":
        if not args.labels_file:
            raise CalibInputError(f"{path} holds scores only: give the labels with --labels-file LABELS.npy")
        return load_posteriors(file, kind=args.kind, labels=args.labels_file)
    return load_posteriors(file, kind=args.kind, label_column=args.labels)


def _read_costs(path: str) -> np.ndarray:
    """A cost matrix from a CSV without header: row i = true class i, column j = decision j."""
    try:
        return np.loadtxt(path, delimiter=",", ndmin=2)
    except (OSError, ValueError) as exc:
        raise CalibInputError(f"--costs {path}: not a CSV of numbers, one row per class ({exc})") from exc


def _summary_text(name: str, summary: Summary) -> str:
    lines = [f"{name}: {summary.n_samples} samples, {summary.n_classes} classes"]
    for metric, m in summary.metrics.items():
        interval = "" if np.isnan(m.low) else f"   [{m.low:.4f}, {m.high:.4f}]"
        lines.append(f"  {metric:<28s} {m.value:9.4f}{interval}")
    lines.append(f"  recommended calibrator: {summary.recommended}")
    return "\n".join(lines)


def _write_outputs(out: Path, pset: PosteriorSet, summary: Summary, progress) -> list[Path]:
    import pandas as pd

    from calib.calibration_error import top_label_reliability
    from calib.plots.reliability import reliability_bars
    from calib.plots.style import figure_style, save_figure

    out.mkdir(parents=True, exist_ok=True)
    records = summary.as_records()
    document = {
        "n_samples": summary.n_samples,
        "n_classes": summary.n_classes,
        "recommended": summary.recommended,
        "metrics": records,
    }
    atomic_write(out / "metrics.json", lambda tmp: tmp.write_text(json.dumps(document, indent=2, allow_nan=True)))
    frame = pd.DataFrame(records)
    atomic_write(out / "metrics.csv", lambda tmp: frame.to_csv(tmp, index=False, float_format="%.10g"))
    progress("drawing the reliability diagram")
    import matplotlib.pyplot as plt

    with figure_style():
        fig, ax = plt.subplots(figsize=(3.6, 3.6), layout="constrained")
        reliability_bars(ax, top_label_reliability(pset.logprobs(), pset.labels, kind="logprobs", n_bins=15))
        ax.set_xlabel("confidence (top-label), 15 bins")
        ax.set_ylabel("accuracy")
        ax.set_title(f"ECE {summary.metrics['ECE top-label'].value:.4f}", fontsize=9)
        figures = save_figure(fig, out / "reliability")
    return [out / "metrics.json", out / "metrics.csv", *figures]


def _evaluate(args) -> int:
    progress = _Progress(args.quiet)
    pset = _load(args.file, args)
    progress(f"loaded {args.file}: {pset.n_samples} samples, {pset.n_classes} classes")
    costs = {"0-1": zero_one_costs(pset.n_classes)}
    if args.abstain is not None:
        costs["0-1 + abstain"] = zero_one_costs(pset.n_classes, abstention=args.abstain)
    if args.costs:
        costs[Path(args.costs).stem] = _read_costs(args.costs)
    summary = evaluate(
        pset.logprobs(),
        pset.labels,
        kind="logprobs",
        costs=costs,
        priors=args.priors,
        n_boot=args.bootstrap,
        seed=args.seed,
        progress=progress,
    )
    if args.json:
        print(json.dumps({"file": args.file, "recommended": summary.recommended, "metrics": summary.as_records()}))
    else:
        print(_summary_text(args.file, summary))
    if args.out:
        for path in _write_outputs(Path(args.out), pset, summary, progress):
            progress(f"wrote {path}")
    return 0


def _save_model(path: Path, model, method: str) -> None:
    saved = {"format": MODEL_FORMAT, "method": method, "model": model}
    atomic_write(path, lambda tmp: tmp.write_bytes(pickle.dumps(saved)))


def _load_model(path: str):
    try:
        with Path(path).open("rb") as handle:
            saved = pickle.load(handle)  # noqa: S301 - the user's own file, written by `calib calibrate`
    except Exception as exc:  # unpickling arbitrary bytes can fail in any way
        raise CalibInputError(f"{path}: not a calibrator saved by `calib calibrate --save-model` ({exc})") from exc
    if not isinstance(saved, dict) or saved.get("format") != MODEL_FORMAT:
        raise CalibInputError(f"{path}: not a calibrator saved by `calib calibrate --save-model`")
    return saved["model"]


def _calibrate(args) -> int:
    progress = _Progress(args.quiet)
    out = Path(args.out)
    if out.suffix.lower() != ".npz":
        raise CalibInputError(f"--out {out}: write calibrated log-probabilities to an .npz file")
    if args.model:
        model = _load_model(args.model)
    else:
        if not args.train or not args.method:
            raise CalibInputError("give --method and --train FILE to fit a calibrator, or --model FILE to load one")
        train = _load(args.train, args)
        progress(f"fitting {args.method} on {args.train} ({train.n_samples} samples)")
        model = METHODS[args.method]().fit(train.logprobs(), train.labels, kind="logprobs")
        if args.save_model:
            _save_model(Path(args.save_model), model, args.method)
            progress(f"saved the calibrator to {args.save_model}")
    target = _load(args.apply, args)
    calibrated = model.predict_log_proba(target.logprobs(), kind="logprobs")
    arrays = {"scores": calibrated, "labels": target.labels, "kind": np.array("logprobs")}
    atomic_write(out, lambda tmp: np.savez_compressed(tmp, **arrays))
    progress(f"wrote calibrated log-probabilities of {args.apply} to {out} (read them with --kind logprobs)")
    return 0


def _compare(args) -> int:
    progress = _Progress(args.quiet)
    names = args.names or args.files
    if len(names) != len(args.files):
        raise CalibInputError(f"--names gives {len(names)} names for {len(args.files)} files")
    sets = [_load(f, args) for f in args.files]
    labels = sets[0].labels
    for f, s in zip(args.files[1:], sets[1:], strict=True):
        if s.labels.shape != labels.shape or np.any(s.labels != labels):
            raise CalibInputError(
                f"{f}: its labels differ from those of {args.files[0]}; compare systems on one test set"
            )
    costs = {"0-1": zero_one_costs(sets[0].n_classes)}
    logps = [s.logprobs() for s in sets]
    point = [point_metrics(lp, labels, costs) for lp in logps]
    progress(f"paired bootstrap over {args.bootstrap} resamples")
    diffs = []
    for rows in resample_blocks(labels.size, n_boot=args.bootstrap, seed=args.seed):
        values = [resampled_metrics(lp, labels, costs, None, rows) for lp in logps]
        diffs.append(np.array([[_difference(v[m], values[0][m]) for m in COMPARED] for v in values[1:]]))
    diffs = np.concatenate(diffs, axis=-1)  # (S - 1, M, B)
    point_diffs = np.array([[_difference(p[m], point[0][m]) for m in COMPARED] for p in point[1:]])
    undefined = np.isnan(point_diffs) | np.isnan(diffs).any(axis=-1)
    low, high = percentile_interval(np.where(undefined[..., None], 0.0, diffs).transpose(2, 0, 1), 0.05)
    lines = ["metric".ljust(16) + "".join(n[:18].rjust(20) for n in names)]
    for m in COMPARED:
        lines.append(m.ljust(16) + "".join(f"{p[m]:20.4f}" for p in point))
    lines.append(f"\ndifferences from {names[0]} (paired bootstrap 95 % interval):")
    for i, name in enumerate(names[1:]):
        for j, m in enumerate(COMPARED):
            head = f"  {name} - {names[0]}: {m:<16s}"
            if undefined[i, j]:
                lines.append(f"{head} undefined: infinite for both (a zero probability on a true label)")
            else:
                lines.append(f"{head} {point_diffs[i, j]:+.4f} [{low[i, j]:+.4f}, {high[i, j]:+.4f}]")
    print("\n".join(lines))
    return 0


def _difference(a, b):
    """a - b, NaN where both are the same infinity (e.g. two infinite cross-entropies), without a warning."""
    with np.errstate(invalid="ignore"):
        return np.subtract(a, b)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="calib", description="Evaluate and calibrate probabilistic classifiers.")
    commands = parser.add_subparsers(dest="command", required=True)

    ev = commands.add_parser("evaluate", help="metrics, intervals and a reliability diagram of one posteriors file")
    ev.add_argument("file")
    _add_input_options(ev)
    ev.add_argument("--out", help="directory for metrics.json, metrics.csv and reliability.png / .pdf")
    ev.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    ev.add_argument("--priors", type=float, nargs="+", help="class priors for NCE, NBS and the risks (one per class)")
    ev.add_argument(
        "--abstain", type=float, help="also the Bayes risk of 0-1 costs with an abstain decision of this cost"
    )
    ev.add_argument(
        "--costs", help="also the Bayes risk of this cost matrix (CSV, row = true class, column = decision)"
    )
    ev.add_argument("--bootstrap", type=int, default=200, help="bootstrap resamples for the intervals (0: none)")
    ev.add_argument("--seed", type=int, default=0)
    ev.set_defaults(run=_evaluate)

    ca = commands.add_parser("calibrate", help="fit a calibrator on one file and apply it to another")
    ca.add_argument("--method", choices=sorted(METHODS))
    ca.add_argument("--train", help="posteriors and labels to fit the calibrator on")
    ca.add_argument("--apply", required=True, help="posteriors to calibrate")
    ca.add_argument("--out", required=True, help=".npz file for the calibrated log-probabilities")
    ca.add_argument("--save-model", help="write the fitted calibrator to this file")
    ca.add_argument("--model", help="apply a calibrator saved with --save-model instead of fitting one")
    _add_input_options(ca)
    ca.set_defaults(run=_calibrate)

    co = commands.add_parser("compare", help="several systems on the same labels, with paired bootstrap intervals")
    co.add_argument("files", nargs="+")
    co.add_argument("--names", nargs="+", help="one short name per file")
    co.add_argument("--bootstrap", type=int, default=200)
    co.add_argument("--seed", type=int, default=0)
    _add_input_options(co)
    co.set_defaults(run=_compare)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (CalibInputError, FileNotFoundError) as exc:
        print(f"calib {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # the reader closed the pipe (e.g. `| head`): stop quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
