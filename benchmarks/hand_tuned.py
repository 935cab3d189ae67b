"""Each hand-tuned path of calib against the plain numpy / scipy code it replaces, at the sizes users meet.

Run: ``python benchmarks/hand_tuned.py`` (``--repeats R``, default 5; ``--quick`` for small sizes;
``--only binning|rows|fits|corp``); the last results are in ``benchmarks/hand_tuned.md``. One row per
(path, size): median wall time of the tuned path and of the plain one on the same inputs, their
ratio (plain / tuned, > 1: the tuned path is faster) and whether the results agree (bit for bit
where the plain path is the reference, to the stated tolerance otherwise). A path is kept in calib
only where its row shows at least 1.5x at user-facing sizes (10^5 to 10^7 scores, the calibrator
fits of ``calib evaluate`` on up to 10^6 rows). The machine's own BLAS threads are left as they
are, since one of the paths is the choice of thread count. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack, nullcontext
from functools import partial
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from scipy.special import log_softmax, logsumexp  # noqa: E402

import calib._internal.rows as rows  # noqa: E402
import calib.calibrators.scaling as scaling  # noqa: E402
import calib.calibrators.softmax_regression as softmax_regression  # noqa: E402
from calib.calibration_errors.binning import grid_edges, locate  # noqa: E402
from calib.calibration_errors.corp import calibrated_positives, corp_curve  # noqa: E402
from calib.calibrators import DirichletCalibrator, MatrixScaling, TemperatureScaling, VectorScaling  # noqa: E402


def median_seconds(call: Callable[[], object], repeats: int) -> tuple[float, object]:
    result = call()  # untimed: first-call costs (page faults, imports) are not the path's
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def row(path: str, size: str, tuned, plain, agree: Callable[[object, object], bool], repeats: int) -> dict:
    t_tuned, r_tuned = median_seconds(tuned, repeats)
    t_plain, r_plain = median_seconds(plain, repeats)
    return {
        "path": path,
        "size": size,
        "tuned s": t_tuned,
        "plain s": t_plain,
        "gain": t_plain / t_tuned,
        "agree": agree(r_tuned, r_plain),
    }


def identical(a, b) -> bool:
    return np.array_equal(a, b)


def _scores(n: int, k: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Overconfident log-posteriors: labels drawn from softmax(z / 2), scores softmax(z)."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0.0, 2.0, size=(n, k))
    truth = np.exp(logits / 2 - logsumexp(logits / 2, axis=1, keepdims=True))
    labels = (np.cumsum(truth, axis=1) < rng.random(n)[:, None]).sum(axis=1).clip(max=k - 1)
    return logits - logsumexp(logits, axis=1, keepdims=True), labels


def locate_rows(sizes, repeats) -> list[dict]:
    """Bin location of scores in [0, 1] on 15 equal-width edges (every binned ECE, bootstrap, diagram)."""
    edges = grid_edges(15)
    out = []
    for n in sizes:
        values = np.random.default_rng(1).random(n)
        out.append(
            row(
                "binning.locate (arithmetic, in blocks)",
                f"N={n:.0e}, M=15",
                lambda v=values: locate(edges, v),
                lambda v=values: np.searchsorted(edges, v),
                identical,
                repeats,
            )
        )
    return out


# (path, the tuned function, numpy's, the largest K the tuned path takes, the relative and absolute
# difference the results may show: 0 is bit for bit)
ROW_REDUCTIONS = (
    ("rows.row_sums (column adds)", rows.row_sums, partial(np.sum, axis=1), rows._COLUMN_SUM_MAX_K, 1e-15),
    ("rows.row_max (column maxima)", rows.row_max, partial(np.max, axis=1), rows._COLUMN_MAX_MAX_K, 0.0),
    ("rows.log_softmax_rows (blocked)", rows.log_softmax_rows, partial(log_softmax, axis=1), None, 1e-13),
)


def rows_rows(sizes, repeats) -> list[dict]:
    """Row reductions of (N, K) float64 matrices (input validation of every posterior set)."""
    out = []
    for n in sizes:
        for k in (2, 10):
            arr = np.random.default_rng(2).normal(size=(n, k))
            for path, tuned, plain, max_k, tolerance in ROW_REDUCTIONS:
                if max_k is None or k <= max_k:

                    def close(x, y, tol=tolerance):
                        return np.allclose(x, y, rtol=tol, atol=tol)

                    out.append(row(path, f"N={n:.0e}, K={k}", partial(tuned, arr), partial(plain, arr), close, repeats))
    return out


def _fit(make, logp, labels, *patches):
    """``make().fit`` on the log-posteriors with ``patches`` (``mock.patch.object`` arguments) applied, and
    the fit's training loss (mean cross-entropy)."""
    with ExitStack() as stack:
        for target, name, value in patches:
            stack.enter_context(mock.patch.object(target, name, value))
        fitted = make().fit(logp, labels, kind="logprobs")
    calibrated = fitted.predict_log_proba(logp, kind="logprobs")
    return fitted, -float(np.mean(calibrated[np.arange(labels.size), labels]))


def _same_optimum(a, b) -> bool:
    """Both fits reach the same training loss to 1e-12 relative: the minimum of a convex problem, which
    each reaches from a different start (their parameters may differ along nearly flat directions)."""
    return abs(a[1] - b[1]) <= 1e-12 * abs(b[1])


def _exact_hessian_newton(problem, theta, max_iter=100, tol=1e-15, curvature=None):
    """Newton with the exact Hessian at every iterate, whatever ``curvature`` the caller offers."""
    return _NEWTON(problem, theta, max_iter=max_iter, tol=tol)


_NEWTON = softmax_regression._newton
NO_WARM_START = (softmax_regression, "warm_start_rows", lambda *args: None)
NO_BFGS = (softmax_regression, "_newton", _exact_hessian_newton)
DEFAULT_THREADS = (softmax_regression, "one_blas_thread", nullcontext)
# The Newton fits timed, one each (the forms benchmarked before issue 52: unpenalized, vector scaling on centred
# log-posteriors, matrix scaling on log-ratios to the last class); name -> factory.
NEWTON_FITS = {
    "TemperatureScaling": TemperatureScaling,
    "VectorScaling": partial(VectorScaling, features="clr"),
    "MatrixScaling": partial(MatrixScaling, features="last_class_ratios", reg_lambda=0.0),
    "DirichletCalibrator": partial(DirichletCalibrator, reg_lambda=0.0),
}


def newton_rows(sizes, repeats) -> list[dict]:
    """The Newton fits (temperature, vector and matrix scaling, Dirichlet) on N x 10 log-posteriors."""
    out = []
    for n in sizes:
        logp, labels = _scores(n, 10)
        for name, make in NEWTON_FITS.items():
            size = f"N={n:.0e}, K=10, {name}"
            tuned = partial(_fit, make, logp, labels)
            module = scaling if make is TemperatureScaling else softmax_regression
            patches = [("one BLAS thread in the fits (vs the default threads)", (module, *DEFAULT_THREADS[1:]))]
            if make is not TemperatureScaling:  # one parameter: no warm start, exact Newton throughout
                patches += [
                    ("warm start + BFGS-refined Newton (vs exact Newton)", NO_WARM_START),
                    ("BFGS refinement after the warm start (vs exact Hessians)", NO_BFGS),
                ]
            for path, patch in patches:
                out.append(row(path, size, tuned, partial(_fit, make, logp, labels, patch), _same_optimum, repeats))
    return out


def _binomial_moments(draws: np.ndarray) -> tuple[float, float]:
    return float(draws.mean()), float(draws.var())


def corp_draw_rows(sizes, repeats) -> list[dict]:
    """CORP's draws under calibration (200 resamples): uniform < x for scores held by one sample against
    numpy's binomial for every score. Different streams, so "same result" compares the draws' mean and
    variance (both within 1 % of each other at these sizes)."""
    out = []
    for n in sizes:
        x = np.random.default_rng(0).uniform(size=n)
        curve = corp_curve(x, np.zeros(n))
        counts = curve.counts

        def tuned(curve=curve):
            return np.array([d.sum() for d in calibrated_positives(curve, 200, np.random.default_rng(1))])

        def plain(curve=curve, counts=counts):
            rng = np.random.default_rng(1)
            return np.array([rng.binomial(counts, curve.points).sum() for _ in range(200)], dtype=np.float64)

        def agree(a, b):
            (ma, va), (mb, vb) = _binomial_moments(a), _binomial_moments(b)
            return abs(ma / mb - 1) < 0.01 and abs(va / vb - 1) < 0.3

        out.append(row("CORP draws under calibration, 200 resamples", f"{n:.0e} scores", tuned, plain, agree, repeats))
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="small sizes and one repeat")
    parser.add_argument("--only", choices=("binning", "rows", "fits", "corp"), help="one group of paths")
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else args.repeats
    big = [10**5] if args.quick else [10**5, 10**6, 10**7]
    fits = [10**4] if args.quick else [10**5, 10**6]
    groups = {
        "binning": lambda: locate_rows(big, repeats),
        "rows": lambda: rows_rows(big, repeats),
        "fits": lambda: newton_rows(fits, repeats),
        "corp": lambda: corp_draw_rows(big[:2], repeats),
    }
    found = [r for name, group in groups.items() if args.only in (None, name) for r in group()]
    print("| path | size | tuned s | plain s | gain (plain / tuned) | same result |")
    print("|---|---|---|---|---|---|")
    for r in found:
        print(
            f"| {r['path']} | {r['size']} | {r['tuned s']:.4f} | {r['plain s']:.4f} | {r['gain']:.2f}x | {r['agree']} |"
        )


if __name__ == "__main__":
    main()
