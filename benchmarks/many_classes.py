"""Calibrators on real networks with many classes: test log-loss, fit time and convergence, 5000 / rest splits.

Run: ``python benchmarks/many_classes.py [--data DIR] [--unpenalized]``; the last results are in
``benchmarks/many_classes.md`` (the README's "Many classes" paragraph quotes them). Each CIFAR-10 and
CIFAR-100 network of the real posterior sets (``ferrer2024/cifar{10,100}_*``, logits of 10000 test images)
is split into its first 5000 rows (calibration) and the other 5000 (test). Every calibrator is fitted on
the calibration rows with ``kind="logits"`` and its test log-loss (mean negative log-likelihood of the
true class, nats) is reported with its ratio to temperature scaling's, the error rate, the fit's wall
time (one process, one BLAS thread as the fits use), ``converged_`` and the gradient norm, and the
penalty chosen. ``auto`` is ``calib calibrate --method auto``'s choice (5-fold cross-validated log-loss on
the calibration rows, :func:`calib.calibrators.selection.choose_calibrator`), then fitted on all of
them. ``--unpenalized`` adds the maximum-likelihood Dirichlet and matrix fits (``reg_lambda=0``), the
overfitting the penalties are there to prevent (minutes each at K = 100). Not part of the test suite.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from calib.calibrators.registry import make_calibrator  # noqa: E402
from calib.calibrators.selection import choose_calibrator  # noqa: E402

NETWORKS = ("resnet-20", "vgg19_bn", "repvgg_a2")
METHODS = ("temperature", "dp", "vector", "matrix", "dirichlet")
N_CALIBRATION = 5000


def fit_and_score(method: str, params: dict, cal, test) -> dict:
    """Fit ``method`` on the calibration logits; its test log-loss, error and the fit's record."""
    (zc, yc), (zt, yt) = cal, test
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as notes:
        warnings.simplefilter("always")
        model = make_calibrator(method, **params).fit(zc, yc, kind="logits")
    seconds = time.perf_counter() - start
    logp = model.predict_log_proba(zt, kind="logits")
    return {
        "nll": float(-np.mean(logp[np.arange(yt.size), yt])),
        "error": float(np.mean(logp.argmax(axis=1) != yt)),
        "seconds": seconds,
        "converged": getattr(model, "converged_", None),
        "gradient": getattr(model, "gradient_norm_", float("nan")),
        "lambda": getattr(model, "reg_lambda_", None),
        "parameters": model.n_parameters_,
        "warnings": len(notes),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = Path(__file__).resolve().parents[1]
    parser.add_argument("--data", default=str(root.parent / "shared" / "real_posteriors"))
    parser.add_argument("--unpenalized", action="store_true")
    parser.add_argument("--out", default=str(root / "benchmarks" / "many_classes.md"))
    args = parser.parse_args()
    rows = []
    for k in (10, 100):
        for network in NETWORKS:
            folder = Path(args.data) / "ferrer2024" / f"cifar{k}_{network}"
            z = np.load(folder / "scores.npy").astype(np.float64)
            y = np.load(folder / "targets.npy")
            cal, test = (z[:N_CALIBRATION], y[:N_CALIBRATION]), (z[N_CALIBRATION:], y[N_CALIBRATION:])
            runs = [(method, {}) for method in METHODS]
            if args.unpenalized:
                runs += [("matrix", {"reg_lambda": 0.0}), ("dirichlet", {"reg_lambda": 0.0})]
            results = {}
            for method, params in runs:
                label = method + (" (lambda = 0)" if params else "")
                results[label] = fit_and_score(method, params, cal, test)
                print(k, network, label, results[label], flush=True)
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                chosen, _ = choose_calibrator(*cal, kind="logits")
            choice = time.perf_counter() - start
            results[f"auto -> {chosen}"] = dict(results[chosen], seconds=choice + results[chosen]["seconds"])
            print(k, network, "auto", chosen, flush=True)
            raw = -np.mean(test[0][np.arange(test[1].size), test[1]] - np.logaddexp.reduce(test[0], axis=1))
            reference = results["temperature"]["nll"]
            rows.append((k, network, "raw (uncalibrated)", {"nll": raw, "error": np.nan}, reference))
            rows += [(k, network, label, result, reference) for label, result in results.items()]
    lines = [
        "# Calibrators on CIFAR networks: 5000 calibration rows, 5000 test rows",
        "",
        f"Written by `python benchmarks/many_classes.py{' --unpenalized' if args.unpenalized else ''}` "
        "(2 cores, one BLAS thread per fit).",
        "NLL: test log-loss in nats; ratio: to temperature scaling's; lambda: the penalty chosen by "
        "cross-validation; auto: the choice of `calib calibrate --method auto`, time including the choice.",
        "",
        "| K | network | calibrator | test NLL | ratio | error | parameters | lambda | fit s | converged | gradient |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for k, network, label, r, reference in rows:
        lam = "" if r.get("lambda") is None else f"{r['lambda']:g}"
        converged = "" if r.get("converged") is None else str(r["converged"])
        gradient = "" if r.get("converged") is None else f"{r['gradient']:.1e}"
        seconds = "" if "seconds" not in r else f"{r['seconds']:.1f}"
        parameters = "" if "parameters" not in r else str(r["parameters"])
        lines.append(
            f"| {k} | {network} | {label} | {r['nll']:.4f} | {r['nll'] / reference:.3f} | {r['error']:.4f} | "
            f"{parameters} | {lam} | {seconds} | {converged} | {gradient} |"
        )
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
