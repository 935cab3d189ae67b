"""The compiled single-pass loops of calib.single_pass against the numpy paths they stand in for.

Large inputs (COMPILED_MIN_VALUES entries on) are validated and binned by the compiled loops; the
tests lower that threshold so both paths see the same small inputs, and require the same bins bit
for bit: counts, mean scores and frequencies, on scores placed exactly on, just beside and at the
float32 rounding of bin edges, with ties for the top label.
"""

from __future__ import annotations

import subprocess
import sys
from contextlib import contextmanager
from functools import partial

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_properties_strategies import PROPERTY, samples

from calib import binning, ece_presets, validation
from calib.binning import EDGE_RULES
from calib.calibration_error import class_reliability, ece_top_label, top_label_reliability
from calib.ece_presets import PRESETS, preset_ece, preset_reliability
from calib.single_pass import probability_rows_summary
from calib.validation import CalibInputError, as_probs

MODULES = (validation, binning, ece_presets)


@contextmanager
def compiled_from(threshold: int):
    """Within the block, the compiled loops take inputs of ``threshold`` entries on."""
    with pytest.MonkeyPatch.context() as patch:
        for module in MODULES:
            patch.setattr(module, "COMPILED_MIN_VALUES", threshold)
        yield


NUMPY_ONLY, COMPILED_ONLY = 1 << 62, 1


def both_paths(compute):
    """(result of the numpy path, result of the compiled path)."""
    with compiled_from(NUMPY_ONLY):
        numpy_result = compute()
    with compiled_from(COMPILED_ONLY):
        return numpy_result, compute()


def assert_same_bins(a, b) -> None:
    assert np.array_equal(a.counts, b.counts)
    assert np.array_equal(a.mean_confidence, b.mean_confidence, equal_nan=True)
    assert np.array_equal(a.frequency, b.frequency, equal_nan=True)


def edge_probs(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Softmax rows; for K = 2 the positive class sits on, beside (1e-13, 5e-13) and at float32 of
    edges j / 30, for K > 2 some rows are uniform (a K-way tie) or one-hot."""
    rng = np.random.default_rng(seed)
    x = 2.0 * rng.normal(size=(n, k))
    probs = np.exp(x - x.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    if k == 2:
        grid = np.arange(31) / 30
        planted = np.concatenate([grid, grid + 1e-13, grid - 5e-13, grid.astype(np.float32)]).clip(0.0, 1.0)
        probs[: planted.size, 1] = planted
        probs[: planted.size, 0] = 1.0 - planted
    else:
        probs[:20] = 1.0 / k
        probs[20:40] = np.eye(k)[rng.integers(0, k, 20)]
    return probs, rng.integers(0, k, n)


@pytest.mark.parametrize("k", [2, 3, 10])
@pytest.mark.parametrize("n_bins", [1, 7, 10, 15, 30])
def test_compiled_bins_equal_numpy_bins_bit_for_bit(k, n_bins):
    probs, labels = edge_probs(3000, k, seed=k * 100 + n_bins)
    options = {"kind": "probs", "n_bins": n_bins}
    computations = [partial(top_label_reliability, probs, labels, closed=closed, **options) for closed in EDGE_RULES]
    if k == 2:
        computations += [
            partial(class_reliability, probs, labels, 1, closed=closed, **options) for closed in EDGE_RULES
        ]
    computations += [
        partial(preset_reliability, probs, labels, preset=preset, **options)
        for preset, spec in PRESETS.items()
        if k == 2 or spec.multiclass
    ]
    for compute in computations:
        assert_same_bins(*both_paths(compute))


@PROPERTY
@given(sample=samples(max_k=5, max_n=60), n_bins=st.integers(1, 20), preset=st.sampled_from(sorted(PRESETS)))
def test_compiled_and_numpy_ece_agree_on_any_sample(sample, n_bins, preset):
    probs = sample.probs()
    same = both_paths(lambda: ece_top_label(probs, sample.labels, kind="probs", n_bins=n_bins))
    assert same[0] == same[1]
    if probs.shape[1] == 2 or PRESETS[preset].multiclass:
        ece = lambda: preset_ece(probs, sample.labels, kind="probs", preset=preset, n_bins=n_bins)  # noqa: E731
        numpy_ece, compiled_ece = both_paths(ece)
        assert numpy_ece == compiled_ece


def test_published_example_through_the_compiled_path():
    """The module example of calib.ece_presets (0.29 / 0.31 / 0.33), binned by the compiled loops."""
    p = np.array([0.45, 0.5, 0.55, 0.95, 1.0])
    scores, labels = np.column_stack([1 - p, p]), np.array([1, 0, 1, 1, 0])
    expected = {"survey": 0.29, "uncertainty_calibration": 0.29, "netcal": 0.31, "torchmetrics": 0.33}
    with compiled_from(COMPILED_ONLY):
        for preset, value in expected.items():
            # 1e-7: the torchmetrics preset bins and averages float32-rounded scores (errors ~1e-8)
            assert preset_ece(scores, labels, kind="probs", preset=preset, n_bins=10) == pytest.approx(value, abs=1e-7)


def test_probability_rows_summary_is_min_max_and_row_sum_range():
    probs, _ = edge_probs(500, 4, seed=3)
    probs[7] = [0.5, 0.5, 0.25, 0.0]  # a row summing to 1.25
    lo, hi, low_sum, high_sum = probability_rows_summary(probs)
    sums = probs.sum(axis=1)
    assert (lo, hi) == (probs.min(), probs.max())
    # numpy sums the 4 columns in another order: at most 3 ulps apart; 1.25 is exact in any order
    assert low_sum == pytest.approx(sums.min(), abs=1e-15) and high_sum == 1.25
    probs[3, 2] = np.nan
    assert np.isnan(probability_rows_summary(probs)).all()


def test_validation_gives_the_same_answer_and_errors_on_both_paths():
    probs, _ = edge_probs(200, 3, seed=5)
    probs[10] *= 1.0 + 1e-9  # renormalized by either path
    a, b = both_paths(lambda: as_probs(probs, "probs"))
    assert np.array_equal(a, b) and abs(b[10].sum() - 1.0) < 1e-15
    for bad, message in [(np.nan, "contains NaN"), (-0.1, "probabilities"), (1.5, "probabilities")]:
        broken = probs.copy()
        broken[4, 1] = bad
        errors = []
        for threshold in (NUMPY_ONLY, COMPILED_ONLY):
            with compiled_from(threshold), pytest.raises(CalibInputError, match=message) as caught:
                as_probs(broken, "probs")
            errors.append(str(caught.value))
        assert errors[0] == errors[1]


def test_a_small_input_does_not_load_numba():
    code = (
        "import sys, numpy as np; from calib.calibration_error import ece_top_label; "
        "ece_top_label(np.full((100, 4), 0.25), np.zeros(100, int), kind='probs', n_bins=10); "
        "print('numba' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
