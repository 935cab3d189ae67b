"""Property-based tests of calib.data.real: posterior sets, their file loaders and the one-vs-other view.

Properties: a loaded set's log-posteriors are valid (rows of probabilities summing to 1 within 1e-9)
and its priors a distribution; every file format (.npz archive, .npy pair, CSV, Parquet, saved set)
returns what was written, bit for bit; writing the rows in another order loads them in that order
(so metrics of the set are unchanged, 1e-12); a float32 file gives the same log-posteriors as the
same numbers in float64 (1e-6); files of probabilities, log-probabilities and logits of the same
posteriors give the same log-posteriors and one-vs-other views (1e-9). Duplication vs weighting:
the loaders take no weights; a set with every row repeated has the same priors (checked).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st
from strategies import (
    FLOAT32_TOL,
    KIND_TOL,
    KINDS,
    ORDER_TOL,
    PROPERTY,
    ROW_SUM_TOL,
    assert_close,
    assert_probability_rows,
    permutations_of,
    samples,
)

from calib.data.real import (
    PosteriorSet,
    load_npy_pair,
    load_npz,
    load_posteriors,
    load_table,
    one_vs_other,
    read_posterior_set,
    save_posterior_set,
)
from calib.data.table_options import TableOptions
from calib.scoring.scores import cross_entropy

FORMATS = ("npz", "npy", "csv", "parquet", "saved")


def _class_names(k: int) -> list[str]:
    return [f"class_{j}" for j in range(k)]


def _write_and_load(folder: Path, scores: np.ndarray, labels: np.ndarray, kind: str, fmt: str) -> PosteriorSet:
    """Write (scores, labels) in ``fmt`` under ``folder`` and load them back through calib."""
    if fmt == "npz":
        path = folder / "set.npz"
        np.savez(path, scores=scores, labels=labels)
        return load_posteriors(path, kind=kind)
    if fmt == "npy":
        np.save(folder / "scores.npy", scores)
        np.save(folder / "labels.npy", labels)
        return load_posteriors(folder / "scores.npy", kind=kind, labels=folder / "labels.npy")
    if fmt in ("csv", "parquet"):
        frame = pd.DataFrame(scores, columns=_class_names(scores.shape[1]))
        frame["label"] = labels
        path = folder / f"set.{fmt}"
        if fmt == "csv":
            frame.to_csv(path, index=False)
        else:
            frame.to_parquet(path, index=False)
        return load_posteriors(path, kind=kind)
    path = folder / "saved.npz"
    save_posterior_set(path, PosteriorSet("drawn", scores, labels, kind, tuple(_class_names(scores.shape[1]))))
    return read_posterior_set(path)


def _check_valid(pset: PosteriorSet) -> None:
    logp = pset.logprobs()
    assert logp.dtype == np.float64 and not np.any(np.isnan(logp)) and np.all(logp <= 0.0)
    assert_probability_rows(np.exp(logp), "logprobs")
    priors = pset.priors()
    assert np.all(priors >= 0.0) and abs(priors.sum() - 1.0) <= ROW_SUM_TOL, priors
    for c in range(pset.n_classes):
        view = one_vs_other(pset, c)
        assert view.kind == "logprobs" and view.n_classes == 2 and set(np.unique(view.labels)) <= {0, 1}
        assert_probability_rows(np.exp(view.logprobs()), f"one-vs-other {c}")
        assert np.array_equal(view.labels, (pset.labels == c).astype(np.int64))


@PROPERTY
@given(sample=samples(zeros=True, max_n=20), data=st.data())
def test_loaders_round_trip_valid_and_ordered(sample, data):
    """Every format loads what was written (bit for bit), as a valid set; permuted files load permuted."""
    kind = data.draw(st.sampled_from(KINDS), label="kind")
    fmt = data.draw(st.sampled_from(FORMATS), label="format")
    scores = sample.as_kind(kind)
    perm = permutations_of(data, sample.n)
    with tempfile.TemporaryDirectory() as tmp:
        pset = _write_and_load(Path(tmp), scores, sample.labels, kind, fmt)
    assert pset.kind == kind
    assert np.array_equal(pset.scores, scores) and np.array_equal(pset.labels, sample.labels), "round trip"
    _check_valid(pset)
    with tempfile.TemporaryDirectory() as tmp:
        moved = _write_and_load(Path(tmp), scores[perm], sample.labels[perm], kind, fmt)
    assert np.array_equal(moved.logprobs(), pset.logprobs()[perm]), "order"
    assert_close(moved.priors(), pset.priors(), ORDER_TOL, "order: priors")
    ce = cross_entropy(pset.logprobs(), pset.labels, kind="logprobs")
    assert_close(cross_entropy(moved.logprobs(), moved.labels, kind="logprobs"), ce, ORDER_TOL, "order: CE")
    doubled = PosteriorSet("doubled", np.repeat(scores, 2, axis=0), np.repeat(sample.labels, 2), kind)
    assert_close(doubled.priors(), pset.priors(), ORDER_TOL, "duplication: priors")


@PROPERTY
@given(sample=samples(max_n=20), data=st.data())
def test_loaders_float32_files(sample, data):
    """A float32 file gives the log-posteriors (and CE) of the same numbers in float64, to 1e-6."""
    kind = data.draw(st.sampled_from(KINDS), label="kind")
    fmt = data.draw(st.sampled_from(("npz", "npy", "parquet", "saved")), label="format")  # CSV stores text
    single = sample.as_kind(kind, float32=True)
    with tempfile.TemporaryDirectory() as tmp:
        p32 = _write_and_load(Path(tmp), single, sample.labels, kind, fmt)
    with tempfile.TemporaryDirectory() as tmp:
        p64 = _write_and_load(Path(tmp), single.astype(np.float64), sample.labels, kind, fmt)
    assert p32.scores.dtype == np.float32 or fmt == "parquet"
    assert_close(p32.logprobs(), p64.logprobs(), FLOAT32_TOL, "float32 logprobs")
    assert_close(
        cross_entropy(p32.scores, p32.labels, kind=kind),
        cross_entropy(p64.scores, p64.labels, kind=kind),
        FLOAT32_TOL,
        "float32 CE",
    )


@PROPERTY
@given(sample=samples(zeros=True, max_n=20), data=st.data())
def test_loaders_kinds_agree(sample, data):
    """Files of probs, logprobs and logits of the same posteriors give the same sets (log-posteriors, views)."""
    fmt = data.draw(st.sampled_from(FORMATS), label="format")
    sets = {}
    for kind in KINDS:
        with tempfile.TemporaryDirectory() as tmp:
            sets[kind] = _write_and_load(Path(tmp), sample.as_kind(kind), sample.labels, kind, fmt)
    for kind in ("logprobs", "logits"):
        assert_close(np.exp(sets[kind].logprobs()), np.exp(sets["probs"].logprobs()), KIND_TOL, kind)
        assert_close(sets[kind].logprobs(), sets["probs"].logprobs(), KIND_TOL, f"{kind} (log)")
        for c in range(sample.k):
            assert_close(
                one_vs_other(sets[kind], c).logprobs(),
                one_vs_other(sets["probs"], c).logprobs(),
                KIND_TOL,
                f"{kind} one-vs-other {c}",
            )


@PROPERTY
@given(sample=samples(max_n=15), kind=st.sampled_from(KINDS))
def test_table_label_names_equal_indices(sample, kind):
    """A CSV whose labels are class names loads like the one with class indices."""
    names = _class_names(sample.k)
    frame = pd.DataFrame(sample.as_kind(kind), columns=names)
    with tempfile.TemporaryDirectory() as tmp:
        frame.assign(label=sample.labels).to_csv(Path(tmp) / "idx.csv", index=False)
        frame.assign(label=[names[i] for i in sample.labels]).to_csv(Path(tmp) / "names.csv", index=False)
        by_index = load_table(Path(tmp) / "idx.csv", TableOptions(kind=kind))
        by_name = load_table(Path(tmp) / "names.csv", TableOptions(kind=kind))
        npz = Path(tmp) / "s.npz"
        np.savez(npz, s=sample.as_kind(kind), y=sample.labels)
        keyed = load_npz(npz, kind=kind, scores_key="s", labels_key="y")
        np.save(Path(tmp) / "a.npy", sample.as_kind(kind))
        np.save(Path(tmp) / "b.npy", sample.labels)
        pair = load_npy_pair(Path(tmp) / "a.npy", Path(tmp) / "b.npy", kind=kind)
    for other in (by_name, keyed, pair):
        assert np.array_equal(other.labels, by_index.labels) and np.array_equal(other.scores, by_index.scores)
    assert by_name.class_names == tuple(names)
