"""Store what the Dirichlet-calibration authors' package (dirichletcal) fits, so the tests can compare without it.

dirichletcal (Kull et al. 2019's reference code) cannot be installed from its registry release (the sdist
is broken) and needs jax, too heavy for CI. This script runs it once, on inputs drawn from a fixed seed
and on a slice of a real model's logits, and writes its fitted weights, its held-out predictions and
where each fit stopped to ``tests/fixtures/peers/dirichletcal.json`` (scalars, settings, meanings) and
``dirichletcal.npz`` (arrays; never pickle). The tests rebuild the inputs with the recipes below (this
file needs only numpy and scipy until ``main`` runs; the peer is imported inside it) and check them
against the recorded ``fingerprint`` before comparing.

Fits, per input (the JSON's ``fits`` records each one's call, the settings their fit actually used and
the meaning of its options; ``conventions`` says what every stored array is):

- ``FullDirichletCalibrator(reg_lambda=l, reg_mu=m)``, package defaults (ref_row=True, reg_norm=False,
  optimizer='auto'), (l, m) = (1e-3, 1e-3), (1e-2, 1e-2), (1e-1, 1e-1); the same with ref_row=False,
  reg_norm=True at (1e-2, 1e-2) (the ODIR penalty with the normalisation that calib's
  DirichletCalibrator follows); and ``FullDirichletCalibrator(reg_lambda=1e-2)`` (reg_mu None: their
  plain L2 on every weight). Inputs: the probabilities (softmax of the logits).
- ``VectorScaling``, ``MatrixScaling`` and ``TemperatureScaling`` with logit_input=True, unregularised
  (Guo et al. 2017's maps on logits). Inputs: the logits themselves.

Inputs: ``synthetic_k3`` and ``synthetic_k10`` (:func:`synthetic_inputs`: 600 fit and 200 held-out
rows of over-confident logits) and ``cifar10_resnet20`` (:func:`cifar10_inputs`: CIFAR-10 ResNet-20
logits of the Ferrer (2024) collection in ``shared/``, rows 0-4999 to fit, 5000-5499 held out).

Rerun after a recipe change, from the repository root, in a scratch virtualenv outside the repository
with the peer's source at the commit recorded in ``PEER`` on PYTHONPATH (its setup.py does not install;
take the source with ``git archive <commit>`` from a clone of the dirichletcal/dirichlet_python
repository)::

    python -m venv /tmp/dcal_venv && /tmp/dcal_venv/bin/pip install numpy scipy scikit-learn jax jaxlib
    git -C <clone> archive b03f65fc6582cad89497b977b3b33a3c4fe48e39 | tar -x -C /tmp/dirichletcal_src
    PYTHONPATH=/tmp/dirichletcal_src /tmp/dcal_venv/bin/python benchmarks/write_dirichletcal_fixtures.py

``main`` checks the git blob ids of the peer's modules against that commit's, so a different checkout
is refused. It takes about three minutes on two cores. The files are written
byte for byte reproducibly (fixed zip timestamps; a rerun on one machine rewrites identical bytes), so
``git diff`` after a rerun shows only what changed.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import platform
import re
import sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
from scipy.special import softmax

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "peers"

PEER = {
    "name": "dirichletcal",
    "version": "0.5.3",
    "repository": "dirichletcal/dirichlet_python",
    "commit": "b03f65fc6582cad89497b977b3b33a3c4fe48e39",
}
# git blob ids of the modules the fits run, at PEER["commit"] (git ls-tree <commit> dirichletcal/)
PEER_BLOBS = {
    "dirichletcal/calib/fulldirichlet.py": "2765a152f3f416d0252381619ce65771f15e2025",
    "dirichletcal/calib/matrixscaling.py": "aed46d9b2ac6cf2744ef1f7be13b48fd48a18b22",
    "dirichletcal/calib/multinomial.py": "962e836f56f8fd4ae0a2ae86524811243f27c8b4",
    "dirichletcal/calib/tempscaling.py": "efead166dad5edd625a6315af3f54708ca4f6655",
    "dirichletcal/calib/vectorscaling.py": "e66a24ce80a33a10703a06f04856bb6571a22103",
    "dirichletcal/utils.py": "d1704e9f8a6040270de9d27002fdea6fa66d78ec",
    "dirichletcal/version.py": "dbbdd8aca5974ecad38b1c6a9316c9f382b5a73d",
}

# --- inputs: each gives fit rows and held-out rows
SYNTHETIC_SIGNAL = 1.5  # logits = SIGNAL * onehot(label) + N(0, 1)
SYNTHETIC_SCALE = 2.5  # scores = SCALE * logits: over-confident
SYNTHETIC = {
    "synthetic_k3": {"k": 3, "n_fit": 600, "n_test": 200, "seed": 3},
    "synthetic_k10": {"k": 10, "n_fit": 600, "n_test": 200, "seed": 10},
}
CIFAR10 = {
    "cifar10_resnet20": {
        "directory": "../shared/real_posteriors/ferrer2024/cifar10_resnet-20",  # from the repository root
        "fit_rows": [0, 5000],
        "test_rows": [5000, 5500],
    }
}
# dirichletcal clips probabilities at float64 tiny before ln; the synthetic inputs keep it a no-op by a margin
MIN_SYNTHETIC_PROBABILITY = 1e-12

# --- the fits: key, dirichletcal class, keyword arguments, what it is given
FITS = (
    ("full_odir_1e-3_1e-3", "FullDirichletCalibrator", {"reg_lambda": 1e-3, "reg_mu": 1e-3}, "probabilities"),
    ("full_odir_1e-2_1e-2", "FullDirichletCalibrator", {"reg_lambda": 1e-2, "reg_mu": 1e-2}, "probabilities"),
    ("full_odir_1e-1_1e-1", "FullDirichletCalibrator", {"reg_lambda": 1e-1, "reg_mu": 1e-1}, "probabilities"),
    (
        "full_odir_1e-2_1e-2_noref_norm",
        "FullDirichletCalibrator",
        {"reg_lambda": 1e-2, "reg_mu": 1e-2, "ref_row": False, "reg_norm": True},
        "probabilities",
    ),
    ("full_l2_1e-2", "FullDirichletCalibrator", {"reg_lambda": 1e-2}, "probabilities"),
    ("vector_scaling", "VectorScaling", {"logit_input": True}, "logits"),
    ("matrix_scaling", "MatrixScaling", {"logit_input": True}, "logits"),
    ("temperature_scaling", "TemperatureScaling", {"logit_input": True}, "logits"),
)
PEER_MODULES = {
    "FullDirichletCalibrator": "dirichletcal.calib.fulldirichlet",
    "VectorScaling": "dirichletcal.calib.vectorscaling",
    "MatrixScaling": "dirichletcal.calib.matrixscaling",
    "TemperatureScaling": "dirichletcal.calib.tempscaling",
}
# a method 'Full' fit whose [features, 1] has a larger condition number gets a note (CIFAR logits: 7.9e5)
ILL_CONDITIONED = 1e4
# fits left out, with the reason (none: every fit above takes at most a few minutes here)
SKIPPED: dict[tuple[str, str], str] = {}

CONVENTIONS = {
    "npz_keys": "'<input>__<fit>__weights', '<input>__<fit>__params', '<input>__<fit>__proba'",
    "weights": "float64 (K, K + 1): calibrator_.weights_ of their fitted MultinomialRegression (for "
    "FullDirichletCalibrator also its .weights property; its own weights_ attribute stays None). Columns "
    "0..K-1 are coef_ (row j: the weights of class j on the K features), column K is intercept_. The "
    "calibrated probabilities are softmax(features @ weights[:, :K].T + weights[:, K]) per row. It is "
    "multinomial._get_weights(params, K, ref_row, method): with ref_row=True the last row is all zero.",
    "params": "float64, the parameter vector their optimizer returned (the point where the objective and "
    "gradient below are taken). method 'Full': the K x (K + 1) matrix R raveled row by row (with ref_row "
    "True, R's last row is a free offset with no effect: weights = R - R[K-1]); 'Diag' (VectorScaling): "
    "(a_1..a_K, b_1..b_K), R = [diag(a) | b]; 'FixDiag' (TemperatureScaling): (t,), R = [t I | 0], "
    "t = 1 / temperature.",
    "proba": "float64 (n_test, K): their predict_proba on the held-out rows (probabilities or logits, as "
    "the fit was given).",
    "features": "FullDirichletCalibrator: ln(clip(p, tiny, 1 - tiny)) of the probabilities it is given "
    "(utils.clip_for_log; tiny = float64 tiny 2.2e-308, so 1 - tiny == 1: a no-op on these inputs, see "
    "each input's min_probability), in fit and predict_proba alike. logit_input=True (VectorScaling, "
    "MatrixScaling, TemperatureScaling): the logits exactly as given, no centring.",
    "probabilities": "scipy.special.softmax(logits, axis=1) of the float64 logits of the recipe.",
    "objective": "multinomial._objective: mean over the fit rows of -ln(clip(q_true, eps, 1 - eps)), "
    "q = softmax(features @ coef.T + intercept) with W = weights (after ref_row), eps = float64 machine "
    "epsilon 2.22e-16 (utils.clip_jax; the gradient is 0 through an active clip: see "
    "fit_rows_true_class_below_eps), plus the penalty. reg_mu given (ODIR): reg_lambda * sum_{i != j} "
    "coef_ij^2 + reg_mu * sum_j intercept_j^2, the diagonal of coef free. reg_mu None: reg_lambda * sum of "
    "the squares of all K (K + 1) weights, coef diagonal and intercept included, toward 0 (reg_format "
    "None; the 'identity' target is not reachable from FullDirichletCalibrator). reg_lambda / reg_mu "
    "here are the values the objective used (reg_used), after reg_norm.",
    "ref_row": "True (their default in FullDirichletCalibrator, VectorScaling, TemperatureScaling and, not "
    "passed by MatrixScaling, MultinomialRegression): the optimizer's matrix R becomes W = R - R[K-1] "
    "(the last row subtracted from every row) before both the softmax and the penalty. The map is the "
    "same family (softmax is shift-invariant), but the penalty then acts on the differences R_ij - "
    "R_(K-1)j, so a regularised fit differs from ref_row=False, where W = R.",
    "reg_norm": "True: MultinomialRegression.fit divides, with K the number of distinct fit labels, "
    "reg_lambda by K (K - 1) and reg_mu by K when reg_mu is given, reg_lambda by K (K + 1) when reg_mu is "
    "None. False: used as given.",
    "vector_scaling_weights": "method 'Diag' with ref_row=True: weights[i, i] = a_i and weights[i, K-1] = "
    "-a_K for i < K-1, weights[K-1] = 0, intercept b_i - b_K: the map softmax(a * z + b), a identifiable, "
    "b up to a common constant.",
    "temperature_scaling_weights": "method 'FixDiag' with ref_row=True: weights = [t I | 0] minus its last "
    "row: the map softmax(t z); params = (t,).",
    "newton": "multinomial._newton_update (optimizer 'auto' takes it for K <= 36): from the identity "
    "params (coef I, intercept 0; a = 1, b = 0; t = 1), each step takes jax's gradient and Hessian, "
    "update = pinv(H) g (FixDiag: g / H), and tries the step sizes 1, 0.9, ..., 0.1, 1e-2, ..., 1e-32, "
    "keeping the first that lowers the objective; it stops when sum |g| < gtol ('gtol'), when each of the "
    "last four objective changes is above -ftol ('ftol'), when no step size lowers it ('loss_increased': "
    "the point before is kept) or after maxiter steps ('maxiter'). newton_steps counts the steps taken.",
    "gradient": "gradient_max_abs and gradient_abs_sum: jax's gradient of their _objective (multinomial."
    "_gradient) at params with the arguments their fit passed, i.e. with respect to the raw params. "
    "For ref_row=True, rows 0..K-2 of it are the gradient with respect to W's free rows and row K-1 is "
    "minus their sum (R's last row moves every row of W). gradient_abs_sum is what their gtol compares.",
    "feature_condition_number": "numpy's 2-norm condition number of the fit rows' [features, 1], the "
    "matrix the fit regresses on; a method 'Full' fit above 1e4 gets a note.",
    "log_loss_fit": "_objective at params with reg_lambda 0 and reg_mu None: the clipped mean log-loss "
    "alone; penalty = objective - log_loss_fit.",
}


def synthetic_inputs(
    k: int, n_fit: int, n_test: int, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(fit logits, fit labels, held-out logits, held-out labels), float64 (n, k) and int64.

    One draw of n_fit + n_test rows from ``default_rng(seed)``: labels uniform on 0..k-1, then logits
    1.5 onehot(label) + N(0, 1), scaled by 2.5 (over-confident); the first n_fit rows are the fit rows.
    """
    rng = np.random.default_rng(seed)
    n = n_fit + n_test
    labels = rng.integers(0, k, size=n)
    logits = SYNTHETIC_SCALE * (SYNTHETIC_SIGNAL * np.eye(k)[labels] + rng.standard_normal((n, k)))
    return logits[:n_fit], labels[:n_fit], logits[n_fit:], labels[n_fit:]


def cifar10_inputs(
    directory, fit_rows=(0, 5000), test_rows=(5000, 5500)
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(fit logits, fit labels, held-out logits, held-out labels) from ``directory``'s scores.npy / targets.npy.

    The float32 logits (10000 x 10) become float64; rows [start, stop) of ``fit_rows`` and ``test_rows``.
    """
    directory = Path(directory)
    logits = np.load(directory / "scores.npy", allow_pickle=False).astype(np.float64)
    labels = np.load(directory / "targets.npy", allow_pickle=False).astype(np.int64)
    fit, test = slice(*fit_rows), slice(*test_rows)
    return logits[fit], labels[fit], logits[test], labels[test]


def probabilities(logits: np.ndarray) -> np.ndarray:
    """What the Dirichlet fits are given: the softmax of the float64 logits."""
    return softmax(np.asarray(logits, dtype=np.float64), axis=1)


def fingerprint(logits: np.ndarray, labels: np.ndarray) -> dict:
    """Shape, column sums of the logits and of their softmax, label counts, smallest probability.

    Sums rather than a hash: numpy's exp may differ by an ulp between CPUs, which moves no result here
    but would change every hash.
    """
    probs = probabilities(logits)
    return {
        "shape": list(logits.shape),
        "logit_column_sums": logits.sum(axis=0).tolist(),
        "probability_column_sums": probs.sum(axis=0).tolist(),
        "label_counts": np.bincount(labels, minlength=logits.shape[1]).tolist(),
        "min_probability": float(probs.min()),
    }


def _git_blob_id(path: Path) -> str:
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _check_peer_source() -> Path:
    import dirichletcal

    source = Path(dirichletcal.__file__).resolve().parents[1]
    found = {name: _git_blob_id(source / name) for name in PEER_BLOBS}
    wrong = {name: blob for name, blob in found.items() if blob != PEER_BLOBS[name]}
    if wrong or dirichletcal.__version__ != PEER["version"]:
        raise SystemExit(f"dirichletcal at {source} is not {PEER['version']} at {PEER['commit']}: {wrong}")
    return source


def _environment() -> dict:
    return {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "numpy": np.__version__,
        "scipy": version("scipy"),
        "scikit-learn": version("scikit-learn"),
        "jax": version("jax"),
        "jaxlib": version("jaxlib"),
    }


class _NewtonLog(logging.Handler):
    """The debug lines _newton_update writes to the root logger: its step count and why it stopped."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.name == "root":
            self.messages.append(record.getMessage())

    def summary(self, method: str, maxiter: int) -> dict:
        steps = sum(1 for m in self.messages if re.match(rf"{method}: after \d+ iterations log-loss", m))
        final = [m for m in self.messages if re.match(rf"{method}: after \d+ iterations final", m)]
        assert len(final) == 1, self.messages
        last = int(re.match(rf"{method}: after (\d+) iterations", final[0]).group(1))
        if any("not enough changes" in m for m in self.messages):
            reason = "ftol"
        elif any("loss increased" in m for m in self.messages):
            reason = "loss_increased"
        elif any("is NaN" in m for m in self.messages):
            reason = "nan"
        elif steps == last:  # the gtol break comes before that step's line
            reason = "gtol"
        else:
            assert steps == maxiter, self.messages
            reason = "maxiter"
        return {"newton_steps": steps, "termination": reason}


def _run_fit(cls, kwargs: dict, fit_input, fit_labels, test_input) -> tuple[dict, dict]:
    """Fit one dirichletcal calibrator, recording the call to _newton_update and its debug log."""
    from dirichletcal.calib import multinomial

    original = multinomial._newton_update
    defaults = {
        name: p.default
        for name, p in inspect.signature(original).parameters.items()
        if name in ("maxiter", "ftol", "gtol")
    }
    calls = []

    def recording(*args, **kw):
        result = original(*args, **kw)
        calls.append((args, kw, result))
        return result

    log = _NewtonLog()
    root = logging.getLogger()
    level = root.level
    root.addHandler(log)
    root.setLevel(logging.DEBUG)
    multinomial._newton_update = recording
    try:
        model = cls(**kwargs).fit(fit_input, fit_labels)
    finally:
        multinomial._newton_update = original
        root.removeHandler(log)
        root.setLevel(level)
    assert len(calls) == 1, f"{cls.__name__} ran {len(calls)} Newton fits"
    (_, x_, xxt, target, k, method), kw, params = calls[0]
    # _objective's arguments after params, as _newton_update passes them
    lam, mu = kw["reg_lambda"], kw["reg_mu"]  # after reg_norm
    args = (x_, xxt, target, k, method, lam, mu, kw["ref_row"], kw["initializer"], kw["reg_format"])
    params = np.asarray(params, dtype=np.float64)
    weights = np.asarray(model.calibrator_.weights_, dtype=np.float64)
    np.testing.assert_array_equal(weights, np.asarray(multinomial._get_weights(params, k, kw["ref_row"], method)))

    objective = float(multinomial._objective(params, *args))
    unpenalised = args[:5] + (0.0, None) + args[7:9] + (None,)
    log_loss = float(multinomial._objective(params, *unpenalised))
    gradient = np.asarray(multinomial._gradient(params, *args), dtype=np.float64)
    outputs = np.asarray(multinomial._calculate_outputs(weights, x_), dtype=np.float64)
    true = (np.asarray(target) * outputs).sum(axis=1)
    eps = np.finfo(np.float64).eps
    proba = np.asarray(model.predict_proba(test_input), dtype=np.float64)

    record = {
        "method": method,
        "optimizer": "newton",
        "ref_row": bool(kw["ref_row"]),
        "reg_used": {"reg_lambda": float(lam), "reg_mu": None if mu is None else float(mu)},
        "reg_format": kw["reg_format"],
        "initializer": kw["initializer"],
        "newton_settings": defaults,
        **log.summary(method, defaults["maxiter"]),
        "objective": objective,
        "log_loss_fit": log_loss,
        "penalty": objective - log_loss,
        "gradient_max_abs": float(np.abs(gradient).max()),
        "gradient_abs_sum": float(np.abs(gradient).sum()),
        "fit_rows_true_class_below_eps": int((true < eps).sum()),
        "fit_rows_true_class_above_1_minus_eps": int((true > 1.0 - eps).sum()),
        "feature_condition_number": float(np.linalg.cond(np.asarray(x_, dtype=np.float64))),
        "weights_shape": list(weights.shape),
        "params_shape": list(params.shape),
        "proba_shape": list(proba.shape),
    }
    if method == "FixDiag":
        record["t"] = float(params[0])
        record["temperature"] = 1.0 / float(params[0])
    if method == "Full" and record["feature_condition_number"] > ILL_CONDITIONED:
        record["note"] = (
            "ill-conditioned: [features, 1] is nearly collinear (logits whose row sums are nearly constant: see "
            "the input's logit_row_sums), so the loss is nearly flat along coef + c 1^T with the intercept moved "
            "to match (a direction the diagonal maps of VectorScaling and TemperatureScaling do not have). Their "
            f"Newton step (pinv of the Hessian) reached the minimum with |weights| up to {np.abs(weights).max():.3g}, "
            "fitting the small spread of those sums. Compare predictions, or weights relative to their size; "
            "precondition a refit (e.g. whiten [features, 1]): plain L-BFGS from the identity on these features "
            "stops far from this minimum."
        )
    return record, {"weights": weights, "params": params, "proba": proba}


def _inputs() -> dict[str, dict]:
    cases = {}
    for name, recipe in SYNTHETIC.items():
        arrays = synthetic_inputs(**recipe)
        cases[name] = {"recipe": {"function": "synthetic_inputs", "arguments": recipe}, "arrays": arrays}
    for name, recipe in CIFAR10.items():
        arrays = cifar10_inputs(ROOT / recipe["directory"], recipe["fit_rows"], recipe["test_rows"])
        cases[name] = {"recipe": {"function": "cifar10_inputs", "arguments": recipe}, "arrays": arrays}
    return cases


def main() -> None:
    """Run the peer on every input and write dirichletcal.json / .npz."""
    import time

    source = _check_peer_source()
    logging.getLogger("jax").setLevel(logging.WARNING)  # only multinomial's own debug lines are read
    import dirichletcal.calib.fulldirichlet
    import dirichletcal.calib.matrixscaling
    import dirichletcal.calib.tempscaling
    import dirichletcal.calib.vectorscaling  # noqa: F401  (the four modules of PEER_MODULES)

    tiny = np.finfo(np.float64).tiny
    inputs, fits, outputs = {}, [], {}
    for name, case in _inputs().items():
        fit_logits, fit_labels, test_logits, test_labels = case["arrays"]
        k = fit_logits.shape[1]
        assert np.array_equal(np.unique(fit_labels), np.arange(k)), "their K is the number of distinct fit labels"
        fit_print, test_print = fingerprint(fit_logits, fit_labels), fingerprint(test_logits, test_labels)
        smallest = min(fit_print["min_probability"], test_print["min_probability"])
        if name in SYNTHETIC:
            assert smallest >= MIN_SYNTHETIC_PROBABILITY, smallest
        inputs[name] = {
            **case["recipe"],
            "k": k,
            "fit": fit_print,
            "test": test_print,
            "logit_row_sums": {
                "fit_mean": float(fit_logits.sum(axis=1).mean()),
                "fit_std": float(fit_logits.sum(axis=1).std()),
            },
            "probabilities_below_float64_tiny": int(
                (probabilities(fit_logits) < tiny).sum() + (probabilities(test_logits) < tiny).sum()
            ),
            "note": "min_probability >= float64 tiny: dirichletcal's clip before ln changes nothing"
            if smallest >= tiny
            else "some probabilities are below float64 tiny: dirichletcal clipped them before ln",
        }
        given = {
            "probabilities": (probabilities(fit_logits), probabilities(test_logits)),
            "logits": (fit_logits, test_logits),
        }
        for key, cls_name, kwargs, kind in FITS:
            call = f"{cls_name}({', '.join(f'{a}={v!r}' for a, v in kwargs.items())})"
            if (name, key) in SKIPPED:
                fits.append({"input": name, "fit": key, "call": call, "skipped": SKIPPED[name, key]})
                continue
            cls = getattr(sys.modules[PEER_MODULES[cls_name]], cls_name)
            started = time.perf_counter()
            record, arrays = _run_fit(cls, kwargs, given[kind][0], fit_labels, given[kind][1])
            print(
                f"{name} {key}: {time.perf_counter() - started:.1f} s, {record['newton_steps']} steps, "
                f"{record['termination']}, max |grad| {record['gradient_max_abs']:.2e}",
                file=sys.stderr,
            )
            fits.append(
                {
                    "input": name,
                    "fit": key,
                    "call": f"{PEER_MODULES[cls_name]}.{call}.fit(fit {kind}, fit labels); "
                    f"predict_proba(held-out {kind})",
                    "given": kind,
                    "arguments": kwargs,
                    **record,
                }
            )
            for what, array in arrays.items():
                outputs[f"{name}__{key}__{what}"] = array
    meta = {
        "peer": PEER["name"],
        "version": PEER["version"],
        "repository": PEER["repository"],
        "commit": PEER["commit"],
        "source_blobs": PEER_BLOBS,
        "how": "source at the commit on PYTHONPATH (not installed); see benchmarks/write_dirichletcal_fixtures.py",
        "environment": _environment(),
        "recipe": "benchmarks/write_dirichletcal_fixtures.py: synthetic_inputs(**arguments) / cifar10_inputs("
        "ROOT / directory, fit_rows, test_rows), each giving (fit logits, fit labels, held-out logits, held-out "
        "labels); probabilities(logits) for the Dirichlet fits; fingerprint(logits, labels) checks them",
        "synthetic": {"signal": SYNTHETIC_SIGNAL, "scale": SYNTHETIC_SCALE},
        "conventions": CONVENTIONS,
        "inputs": inputs,
        "fits": fits,
    }
    print(f"peer source: {source}", file=sys.stderr)
    FIXTURES.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from write_peer_fixtures import write_json, write_npz  # the one byte-stable writer of the fixtures

    write_json(FIXTURES / "dirichletcal.json", meta)
    write_npz(FIXTURES / "dirichletcal.npz", outputs)


if __name__ == "__main__":
    main()
