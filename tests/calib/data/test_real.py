"""Tests of calib.data.real: posterior sets, their loaders and the one-vs-other view."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.special import log_softmax

from calib.data.real import (
    PosteriorSet,
    load_npy_pair,
    load_npz,
    load_posteriors,
    load_table,
    one_vs_other,
    read_posterior_set,
    save_posterior_set,
    top_label_view,
)
from calib.data.table_options import TableOptions
from calib.validation import CalibInputError, CalibInputWarning

MIRROR = Path(__file__).resolve().parents[4] / "shared" / "real_posteriors"

LOGITS = np.array([[2.0, -1.0, 0.5], [0.0, 3.0, 1.0], [-2.0, -2.0, 4.0], [1.0, 1.0, 1.0]])
LABELS = np.array([0, 1, 2, 2])


def _probs(n=40, k=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.ones(k), size=n), rng.integers(0, k, size=n)


# --- PosteriorSet -----------------------------------------------------------------------------


def test_unknown_kind_is_rejected_naming_the_kind():
    with pytest.raises(CalibInputError, match="kind must be one of") as info:
        PosteriorSet("toy", LOGITS, LABELS, "scores")
    assert "'scores'" in str(info.value)
    assert "toy" in str(info.value)


def test_one_dimensional_scores_are_rejected_with_their_shape():
    with pytest.raises(CalibInputError, match=r"shape \(N, K\)") as info:
        PosteriorSet("toy", np.array([0.1, 0.9, 0.5]), np.array([0, 1, 1]), "probs")
    assert "(3,)" in str(info.value)


def test_single_column_scores_are_rejected():
    with pytest.raises(CalibInputError, match="K >= 2"):
        PosteriorSet("toy", np.zeros((3, 1)), np.zeros(3, dtype=int), "logits")


@pytest.mark.parametrize("bad", [[0, 1, 3, 2], [0, -1, 2, 2]])
def test_labels_out_of_range_are_rejected(bad):
    with pytest.raises(CalibInputError, match=r"\[0, 3\)") as info:
        PosteriorSet("toy", LOGITS, np.array(bad), "logits")
    assert "labels of toy" in str(info.value)


def test_labels_of_wrong_length_are_rejected():
    with pytest.raises(CalibInputError, match="4 rows"):
        PosteriorSet("toy", LOGITS, LABELS[:3], "logits")


def test_class_names_of_wrong_length_are_rejected():
    with pytest.raises(CalibInputError, match="class_names") as info:
        PosteriorSet("toy", LOGITS, LABELS, "logits", class_names=("a", "b"))
    assert "2 names for 3 score columns" in str(info.value)


def test_valid_set_stores_int64_labels_and_counts():
    pset = PosteriorSet("toy", LOGITS.astype(np.float32), LABELS.astype(np.uint8), "logits", ("a", "b", "c"))
    assert pset.labels.dtype == np.int64
    assert pset.n_samples == 4
    assert pset.n_classes == 3
    assert pset.class_names == ("a", "b", "c")
    # scores are kept as stored (not converted)
    assert pset.scores.dtype == np.float32


def test_logprobs_of_probs_is_log_of_normalized_probs():
    probs, labels = _probs()
    # a float32-rounding-sized deviation from 1 is tolerated and normalized away
    probs = probs * (1 + 1e-6)
    pset = PosteriorSet("p", probs, labels, "probs")
    logp = pset.logprobs()
    assert logp.dtype == np.float64
    np.testing.assert_allclose(logp, np.log(probs / probs.sum(axis=1, keepdims=True)), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.exp(logp).sum(axis=1), 1.0, rtol=0, atol=1e-12)


def test_logprobs_of_logits_is_log_softmax():
    pset = PosteriorSet("l", LOGITS, LABELS, "logits")
    np.testing.assert_allclose(pset.logprobs(), log_softmax(LOGITS, axis=1), rtol=0, atol=1e-14)
    # the last row has equal logits: uniform posterior
    np.testing.assert_allclose(pset.logprobs()[3], np.log(1 / 3), rtol=0, atol=1e-14)


def test_logprobs_of_logprobs_is_unchanged():
    probs, labels = _probs(seed=3)
    pset = PosteriorSet("lp", np.log(probs), labels, "logprobs")
    np.testing.assert_allclose(pset.logprobs(), np.log(probs), rtol=0, atol=1e-12)


def test_priors_are_class_frequencies():
    labels = np.array([0, 0, 0, 2, 2, 1, 0, 2])
    pset = PosteriorSet("toy", np.zeros((8, 4)), labels, "logits")
    np.testing.assert_array_equal(pset.priors(), [4 / 8, 1 / 8, 3 / 8, 0.0])
    assert pset.priors().sum() == pytest.approx(1.0)


def test_probs_not_summing_to_one_are_refused_on_loading_naming_the_file(tmp_path):
    probs, labels = _probs()
    probs[5] *= 0.8  # row 5 sums to 0.8
    np.save(tmp_path / "scores.npy", probs)
    np.save(tmp_path / "labels.npy", labels)
    with pytest.raises(CalibInputError, match="sum") as info:
        load_npy_pair(tmp_path / "scores.npy", tmp_path / "labels.npy", kind="probs")
    assert "row 5" in str(info.value) and f"scores of {tmp_path / 'scores.npy'}:" in str(info.value)


def test_logits_declared_as_logprobs_fail_suggesting_logits(tmp_path):
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(30, 4)) + 2.0
    logits[:, 0] = np.abs(logits[:, 0]) + 0.5  # surely positive values
    np.save(tmp_path / "scores.npy", logits)
    np.save(tmp_path / "labels.npy", rng.integers(0, 4, size=30))
    with pytest.raises(CalibInputError, match="kind='logits'") as info:
        load_npy_pair(tmp_path / "scores.npy", tmp_path / "labels.npy", kind="logprobs")
    assert "positive" in str(info.value) and "scores.npy" in str(info.value)


# --- load_npy_pair ----------------------------------------------------------------------------


def test_npy_pair_round_trip(tmp_path):
    probs, labels = _probs(n=25, k=4, seed=2)
    folder = tmp_path / "my_model"
    folder.mkdir()
    np.save(folder / "scores.npy", probs.astype(np.float32))
    np.save(folder / "targets.npy", labels.astype(np.uint8))
    pset = load_npy_pair(folder / "scores.npy", folder / "targets.npy", kind="probs", provenance="unit test")
    assert pset.name == "my_model"  # default: the folder of the scores file
    assert pset.kind == "probs"
    assert pset.provenance == "unit test"
    np.testing.assert_array_equal(pset.scores, probs.astype(np.float32))
    np.testing.assert_array_equal(pset.labels, labels)
    assert pset.labels.dtype == np.int64
    named = load_npy_pair(folder / "scores.npy", folder / "targets.npy", kind="probs", name="other")
    assert named.name == "other"


def test_npy_pair_labels_of_wrong_length(tmp_path):
    probs, labels = _probs(n=10)
    np.save(tmp_path / "scores.npy", probs)
    np.save(tmp_path / "labels.npy", labels[:7])
    with pytest.raises(CalibInputError, match=r"\(7,\)") as info:
        load_npy_pair(tmp_path / "scores.npy", tmp_path / "labels.npy", kind="probs")
    assert "(10,)" in str(info.value)


def test_npy_pair_two_dimensional_labels_are_rejected(tmp_path):
    probs, labels = _probs(n=10)
    np.save(tmp_path / "scores.npy", probs)
    np.save(tmp_path / "labels.npy", labels[:, None])
    with pytest.raises(CalibInputError, match="one label per row"):
        load_npy_pair(tmp_path / "scores.npy", tmp_path / "labels.npy", kind="probs")


def test_npy_pair_missing_files_name_the_path(tmp_path):
    probs, labels = _probs(n=10)
    np.save(tmp_path / "scores.npy", probs)
    np.save(tmp_path / "labels.npy", labels)
    missing = tmp_path / "nowhere" / "scores.npy"
    with pytest.raises(FileNotFoundError, match="scores file") as info:
        load_npy_pair(missing, tmp_path / "labels.npy", kind="probs")
    assert str(missing) in str(info.value)
    missing_labels = tmp_path / "labels_typo.npy"
    with pytest.raises(FileNotFoundError, match="labels file") as info:
        load_npy_pair(tmp_path / "scores.npy", missing_labels, kind="probs")
    assert str(missing_labels) in str(info.value)


# --- load_npz ---------------------------------------------------------------------------------


def test_npz_with_custom_keys(tmp_path):
    probs, labels = _probs(n=12, k=5, seed=4)
    path = tmp_path / "archive.npz"
    np.savez(path, predictions=probs, ground_truth=labels, extra=np.arange(3))
    pset = load_npz(path, kind="probs", scores_key="predictions", labels_key="ground_truth")
    assert pset.name == "archive"
    np.testing.assert_array_equal(pset.scores, probs)
    np.testing.assert_array_equal(pset.labels, labels)
    assert pset.n_classes == 5


def test_npz_default_keys(tmp_path):
    probs, labels = _probs(n=12, seed=5)
    path = tmp_path / "plain.npz"
    np.savez(path, scores=probs, labels=labels)
    pset = load_npz(path, kind="probs", name="given")
    assert pset.name == "given"
    np.testing.assert_array_equal(pset.labels, labels)


def test_npz_missing_key_lists_the_archive_keys(tmp_path):
    probs, labels = _probs(n=12)
    path = tmp_path / "archive.npz"
    np.savez(path, predictions=probs, ground_truth=labels)
    with pytest.raises(CalibInputError, match="scores_key") as info:
        load_npz(path, kind="probs")
    message = str(info.value)
    assert "'ground_truth'" in message and "'predictions'" in message
    assert "'scores'" in message and "'labels'" in message  # the missing names


def test_npz_mismatched_lengths_are_rejected(tmp_path):
    probs, labels = _probs(n=12)
    path = tmp_path / "archive.npz"
    np.savez(path, scores=probs, labels=labels[:11])
    with pytest.raises(CalibInputError, match=r"\(11,\)"):
        load_npz(path, kind="probs")


# --- load_table -------------------------------------------------------------------------------


def _frame(n=30, seed=6):
    probs, labels = _probs(n=n, k=3, seed=seed)
    # label column in the middle; class columns deliberately not in alphabetical order
    frame = pd.DataFrame({"c": probs[:, 0], "label": labels, "a": probs[:, 1], "b": probs[:, 2]})
    return frame, probs, labels


def _in_name_order(probs, labels, names=("c", "a", "b")):
    """The scores and labels of a table whose numeric labels are positions in the columns ``names``, with
    the classes put in the order of their names (as load_table puts them)."""
    order = np.argsort(names)
    return probs[:, order], np.argsort(order)[labels]


def test_csv_columns_become_classes_in_name_order_whatever_the_column_order(tmp_path):
    frame, probs, labels = _frame()
    path = tmp_path / "table.csv"
    frame.to_csv(path, index=False)
    with pytest.warns(CalibInputWarning, match="0: c, 1: a, 2: b"):  # numbers onto names: positions, said
        pset = load_table(path, TableOptions(kind="probs"))
    assert pset.class_names == ("a", "b", "c") and pset.given_order == (1, 2, 0)
    assert pset.name == "table"
    probs, labels = _in_name_order(probs, labels)
    np.testing.assert_allclose(pset.scores, probs, rtol=1e-15, atol=0)
    np.testing.assert_array_equal(pset.labels, labels)
    frame[["b", "label", "c", "a"]].assign(label=frame.label.map({0: "c", 1: "a", 2: "b"})).to_csv(path, index=False)
    by_name = load_table(path, TableOptions(kind="probs"))  # the same classes, written another way: the same set
    np.testing.assert_array_equal(by_name.scores, pset.scores)
    np.testing.assert_array_equal(by_name.labels, pset.labels)


def test_csv_with_columns_abc(tmp_path):
    path = tmp_path / "abc.csv"
    path.write_text("a,b,c,label\n0.2,0.3,0.5,2\n0.6,0.3,0.1,0\n0.1,0.8,0.1,1\n")
    pset = load_table(path, TableOptions(kind="probs"))
    assert pset.class_names == ("a", "b", "c")
    np.testing.assert_array_equal(pset.scores, [[0.2, 0.3, 0.5], [0.6, 0.3, 0.1], [0.1, 0.8, 0.1]])
    np.testing.assert_array_equal(pset.labels, [2, 0, 1])
    assert pset.scores.dtype == np.float64


def test_labels_given_as_class_names_map_to_indices(tmp_path):
    path = tmp_path / "named.csv"
    path.write_text("a,b,c,label\n0.2,0.3,0.5,b\n0.6,0.3,0.1,a\n0.1,0.8,0.1,c\n0.3,0.3,0.4,b\n")
    pset = load_table(path, TableOptions(kind="probs"))
    np.testing.assert_array_equal(pset.labels, [1, 0, 2, 1])
    assert pset.labels.dtype == np.int64


def test_labels_that_are_not_class_names_are_rejected(tmp_path):
    path = tmp_path / "named.csv"
    path.write_text("a,b,c,label\n0.2,0.3,0.5,b\n0.6,0.3,0.1,zebra\n")
    with pytest.raises(CalibInputError, match="zebra"):
        load_table(path, TableOptions(kind="probs"))


def test_csv_without_label_column_names_it_and_lists_columns(tmp_path):
    path = tmp_path / "nolabel.csv"
    path.write_text("a,b,c,target\n0.2,0.3,0.5,c\n")
    with pytest.raises(CalibInputError, match="no label column 'label'") as info:
        load_table(path, TableOptions(kind="probs"))
    assert "['a', 'b', 'c', 'target']" in str(info.value)
    # naming the right column works
    pset = load_table(path, TableOptions(kind="probs", label_column="target"))
    assert pset.class_names == ("a", "b", "c")
    np.testing.assert_array_equal(pset.labels, [2])


def test_a_text_column_is_left_out_with_a_warning(tmp_path):
    path = tmp_path / "text.csv"
    path.write_text("id,a,b,label\nx1,0.2,0.8,1\nx2,0.6,0.4,0\n")
    with pytest.warns(CalibInputWarning, match=r"non-numeric columns \['id'\]"):
        pset = load_table(path, TableOptions(kind="probs"))
    assert pset.class_names == ("a", "b")
    np.testing.assert_array_equal(pset.labels, [1, 0])
    with pytest.raises(CalibInputError, match=r"class columns \['id'\] are not numeric"):
        load_table(path, TableOptions(kind="probs", class_columns=["id", "a", "b"]))


@pytest.mark.parametrize("cell", ["0.4x", "0,4", "-"])
def test_a_score_column_with_one_bad_cell_names_the_cell(tmp_path, cell):
    # Leaving the column out would turn a two-class table into a one-column one: stop at the cell.
    path = tmp_path / "typo.csv"
    path.write_text(f'a,b,label\n0.2,0.8,1\n0.6,"{cell}",0\n0.5,0.5,1\n')
    with pytest.raises(CalibInputError, match=f"column 'b' holds numbers but at line 3 it holds '{cell}'"):
        load_table(path, TableOptions(kind="probs"))
    with pytest.raises(CalibInputError, match="line 3"):
        load_table(path, TableOptions(kind="probs", class_columns=["a", "b"]))


def test_absent_class_columns_are_rejected(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b,label\n0.2,0.8,1\n")
    with pytest.raises(CalibInputError, match=r"\['z'\]"):
        load_table(path, TableOptions(kind="probs", class_columns=["a", "z"]))


def test_parquet_read_in_batches_keeps_pandas_index_and_missing_cells(tmp_path):
    # More rows than one batch of 2^16; an index pandas stored as a column is the index again, not a
    # class column; a missing cell reads as NaN, as from a CSV, and is refused when the scores are used.
    frame, probs, labels = _frame(n=70_000, seed=9)
    frame.to_parquet(tmp_path / "big.parquet", index=False)
    big = load_table(tmp_path / "big.parquet", TableOptions(kind="probs"))
    probs, labels = _in_name_order(probs, labels)
    np.testing.assert_array_equal(big.scores, probs)
    np.testing.assert_array_equal(big.labels, labels)
    shuffled = frame.iloc[np.random.default_rng(0).permutation(70_000)[:500]]
    shuffled.to_parquet(tmp_path / "indexed.parquet")
    indexed = load_table(tmp_path / "indexed.parquet", TableOptions(kind="probs"))
    assert indexed.class_names == big.class_names
    np.testing.assert_array_equal(indexed.scores, shuffled[list(big.class_names)].to_numpy())
    holed = frame.head(20).copy()
    holed.iloc[3, 0] = np.nan
    holed.to_parquet(tmp_path / "holed.parquet", index=False)
    holed.to_csv(tmp_path / "holed.csv", index=False)
    column = frame.columns[0]
    for holed_file in ("holed.parquet", "holed.csv"):  # the missing cell is NaN either way, named where it is
        with pytest.raises(
            CalibInputError, match=rf"column '{column}' holds NaN \(an empty or missing score\) at row 3"
        ):
            load_table(tmp_path / holed_file, TableOptions(kind="probs"))


def test_parquet_gives_the_same_set_as_csv(tmp_path):
    frame, probs, labels = _frame(n=50, seed=8)
    frame.to_csv(tmp_path / "set.csv", index=False)
    frame.to_parquet(tmp_path / "set.parquet", index=False)
    from_csv = load_table(tmp_path / "set.csv", TableOptions(kind="probs"))
    from_parquet = load_table(tmp_path / "set.parquet", TableOptions(kind="probs"))
    assert from_parquet.name == from_csv.name == "set"
    assert from_parquet.class_names == from_csv.class_names == ("a", "b", "c")
    probs, labels = _in_name_order(probs, labels)
    np.testing.assert_array_equal(from_parquet.labels, from_csv.labels)
    # the CSV text round trip may differ in the last bit; Parquet is exact
    np.testing.assert_allclose(from_parquet.scores, from_csv.scores, rtol=1e-15, atol=0)
    np.testing.assert_array_equal(from_parquet.scores, probs)
    np.testing.assert_array_equal(from_parquet.labels, labels)


def test_table_with_unknown_suffix_is_rejected(tmp_path):
    path = tmp_path / "table.sav"  # .xlsx is read now (calib.data.formats)
    path.write_text("a,b,label\n0.2,0.8,1\n")
    with pytest.raises(CalibInputError, match="suffix '.sav' says no format calib reads"):
        load_table(path, TableOptions(kind="probs"))


def test_missing_table_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="absent.csv"):
        load_table(tmp_path / "absent.csv", TableOptions(kind="probs"))


# --- load_posteriors --------------------------------------------------------------------------


def test_load_posteriors_dispatches_by_suffix(tmp_path):
    frame, probs, labels = _frame(n=20, seed=9)
    frame.to_csv(tmp_path / "s.csv", index=False)
    frame.to_parquet(tmp_path / "s.PARQUET", index=False)  # suffix matching ignores case
    np.savez(tmp_path / "s.npz", scores=probs, labels=labels)
    np.save(tmp_path / "s.npy", probs)
    np.save(tmp_path / "y.npy", labels)

    from_npz = load_posteriors(tmp_path / "s.npz", kind="probs")
    from_npy = load_posteriors(tmp_path / "s.npy", kind="probs", labels=tmp_path / "y.npy")
    from_csv = load_posteriors(tmp_path / "s.csv", kind="probs")
    from_pq = load_posteriors(tmp_path / "s.PARQUET", kind="probs")
    for pset in (from_npz, from_npy):  # arrays without names: positions
        np.testing.assert_allclose(pset.scores, probs, rtol=1e-15, atol=0)
        np.testing.assert_array_equal(pset.labels, labels)
    for pset in (from_csv, from_pq):  # named columns: in the order of their names
        np.testing.assert_allclose(pset.scores, _in_name_order(probs, labels)[0], rtol=1e-15, atol=0)
        np.testing.assert_array_equal(pset.labels, _in_name_order(probs, labels)[1])
    assert from_csv.class_names == from_pq.class_names == ("a", "b", "c")
    assert from_npz.class_names is None


def test_load_posteriors_passes_options(tmp_path):
    probs, labels = _probs(n=8)
    np.savez(tmp_path / "k.npz", p=probs, y=labels)
    pset = load_posteriors(tmp_path / "k.npz", kind="probs", scores_key="p", labels_key="y", name="opt")
    assert pset.name == "opt"
    np.testing.assert_array_equal(pset.labels, labels)


def test_load_posteriors_npy_without_labels_is_rejected(tmp_path):
    probs, _ = _probs(n=8)
    np.save(tmp_path / "s.npy", probs)
    with pytest.raises(CalibInputError, match="labels="):
        load_posteriors(tmp_path / "s.npy", kind="probs")


def test_load_posteriors_unknown_type_is_rejected(tmp_path):
    path = tmp_path / "s.json"
    path.write_text("{}")
    with pytest.raises(CalibInputError, match="suffix '.json' says no format calib reads .*format="):
        load_posteriors(path, kind="probs")


# --- one_vs_other -----------------------------------------------------------------------------


@pytest.mark.parametrize("positive", [0, 1, 4])
def test_one_vs_other_view(positive):
    rng = np.random.default_rng(10 + positive)
    probs = rng.dirichlet(np.full(5, 0.7), size=200)
    labels = rng.integers(0, 5, size=200)
    names = ("v", "w", "x", "y", "z")
    pset = PosteriorSet("five", np.log(probs), labels, "logprobs", names, provenance="toy")
    view = one_vs_other(pset, positive)

    q = probs[:, positive]
    assert view.kind == "logprobs"
    assert view.scores.shape == (200, 2)
    np.testing.assert_allclose(view.scores[:, 1], np.log(q), rtol=0, atol=1e-12)
    np.testing.assert_allclose(view.scores[:, 0], np.log1p(-q), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(np.exp(view.scores).sum(axis=1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(view.labels, (labels == positive).astype(int))
    assert view.labels.sum() == np.sum(labels == positive) > 0
    assert view.class_names == ("other", names[positive])
    assert view.name == f"five-{positive}vsO"
    assert view.provenance.startswith("toy; ")
    assert str(positive) in view.provenance
    # the view is itself a valid log-posterior set
    np.testing.assert_allclose(view.logprobs(), view.scores, rtol=0, atol=1e-12)


def test_one_vs_other_from_logits_without_class_names():
    pset = PosteriorSet("l", LOGITS, LABELS, "logits")
    view = one_vs_other(pset, 2)
    np.testing.assert_allclose(view.scores[:, 1], log_softmax(LOGITS, axis=1)[:, 2], rtol=0, atol=1e-14)
    np.testing.assert_array_equal(view.labels, [0, 0, 1, 1])
    assert view.class_names == ("other", "2")
    assert view.provenance == "one-vs-other view of class 2"


@pytest.mark.parametrize("bad", [-1, 3, 10])
def test_one_vs_other_bad_class_index(bad):
    pset = PosteriorSet("l", LOGITS, LABELS, "logits")
    with pytest.raises(CalibInputError, match=r"\[0, 3\)"):
        one_vs_other(pset, bad)


@pytest.mark.skipif(not MIRROR.is_dir(), reason="real posterior mirror not available")
def test_cifar100_one_vs_other_has_one_percent_positives():
    from calib.data.registry import materialize

    pset = materialize("ferrer2024/cifar100_resnet-20", mirror=MIRROR)
    assert pset.scores.shape == (10000, 100)
    # CIFAR-100 test set: 100 images per class (paper 000, Table 3: priors 0.99 / 0.01 for CIFAR-XvsO)
    for positive in (1, 2):
        view = one_vs_other(pset, positive)
        assert view.n_samples == 10000
        assert int(view.labels.sum()) == 100
        np.testing.assert_allclose(view.priors(), [0.99, 0.01], rtol=0, atol=1e-12)
        np.testing.assert_allclose(np.exp(view.scores).sum(axis=1), 1.0, rtol=0, atol=1e-9)


# --- save / read ------------------------------------------------------------------------------


def test_save_and_read_round_trip(tmp_path):
    probs, labels = _probs(n=15, k=3, seed=11)
    pset = PosteriorSet(
        "ferrer2024/toy set",
        probs.astype(np.float32),
        labels,
        "probs",
        class_names=("cat", "dog", "émeu"),
        provenance="made up; github.com/x/y @ abc1234",
    )
    path = tmp_path / "saved.npz"
    save_posterior_set(path, pset)
    back = read_posterior_set(path)
    assert back.name == pset.name
    assert back.kind == "probs"
    assert back.class_names == ("cat", "dog", "émeu")
    assert back.provenance == pset.provenance
    assert back.scores.dtype == np.float32
    np.testing.assert_array_equal(back.scores, pset.scores)
    np.testing.assert_array_equal(back.labels, pset.labels)


def test_save_and_read_without_class_names(tmp_path):
    pset = PosteriorSet("plain", LOGITS, LABELS, "logits")
    path = tmp_path / "plain.npz"
    save_posterior_set(path, pset)
    back = read_posterior_set(path)
    assert back.class_names is None
    assert back.provenance == ""
    assert back.kind == "logits"
    np.testing.assert_array_equal(back.scores, LOGITS)


def test_save_to_open_file(tmp_path):
    pset = PosteriorSet("handle", LOGITS, LABELS, "logits", ("a", "b", "c"))
    path = tmp_path / "handle.npz"
    with path.open("wb") as handle:
        save_posterior_set(handle, pset)
    back = read_posterior_set(path)
    assert back.class_names == ("a", "b", "c")
    np.testing.assert_array_equal(back.labels, LABELS)


def test_read_missing_posterior_set(tmp_path):
    with pytest.raises(FileNotFoundError, match="posterior set"):
        read_posterior_set(tmp_path / "none.npz")


def test_numeric_labels_name_the_numbered_column_that_carries_them(tmp_path):
    path = tmp_path / "numbered.csv"
    pd.DataFrame({"1": [0.2, 0.7], "2": [0.3, 0.2], "3": [0.5, 0.1], "label": [1, 2]}).to_csv(path, index=False)
    by_number = load_table(path, TableOptions(kind="probs"))
    by_name = load_table(path, TableOptions(kind="probs", label_values="names"))
    by_index = load_table(path, TableOptions(kind="probs", label_values="index"))
    assert by_number.labels.tolist() == by_name.labels.tolist() == [0, 1]  # "1" is the first column
    assert by_index.labels.tolist() == [1, 2]
    pd.DataFrame({"1": [0.2, 0.7], "2": [0.3, 0.2], "3": [0.5, 0.1], "label": [0, 2]}).to_csv(path, index=False)
    with pytest.raises(CalibInputError, match="label_values='index'"):  # label 0 names no column
        load_table(path, TableOptions(kind="probs"))


def test_saving_to_a_path_without_npz_suffix_is_refused(tmp_path):
    probs, labels = _probs()
    pset = PosteriorSet("s", np.log(probs), labels, "logprobs")
    with pytest.raises(CalibInputError, match=".npz"):
        save_posterior_set(tmp_path / "out.set", pset)
    assert not list(tmp_path.iterdir())


def test_reading_a_plain_archive_as_a_saved_set_says_what_to_use(tmp_path):
    path = tmp_path / "plain.npz"
    probs, labels = _probs()
    np.savez(path, scores=probs, labels=labels)
    with pytest.raises(CalibInputError, match="load_npz"):
        read_posterior_set(path)


def test_zero_samples_are_rejected():
    with pytest.raises(CalibInputError, match="N >= 1"):
        PosteriorSet("empty", np.zeros((0, 3)), np.zeros(0, dtype=int), "probs")


def test_class_names_are_stored_as_a_tuple():
    probs, labels = _probs()
    pset = PosteriorSet("s", probs, labels, "probs", class_names=["a", "b", "c"])
    assert pset.class_names == ("a", "b", "c")


def test_top_label_view_is_each_rows_one_vs_other_view_of_its_top_class():
    """An identity: on the rows whose top class is c, the top-label view is the one-vs-other view of c."""
    rng = np.random.default_rng(3)
    probs = rng.dirichlet(np.ones(4), size=300)
    labels = rng.integers(0, 4, size=300)
    pset = PosteriorSet("toy", probs, labels, "probs")
    view = top_label_view(pset)
    top = probs.argmax(axis=1)
    np.testing.assert_allclose(np.exp(view.logprobs()[:, 1]), probs.max(axis=1), rtol=1e-12)
    np.testing.assert_array_equal(view.labels, (labels == top).astype(int))
    for c in range(4):
        rows = top == c
        np.testing.assert_allclose(view.logprobs()[rows], one_vs_other(pset, c).logprobs()[rows], rtol=1e-12)


def test_top_label_view_keeps_the_other_classes_mass_where_the_top_is_near_one():
    """log(1 - max q) from the other classes: 1e-20 of mass left is kept, where 1 - max q in floats is 0."""
    pset = PosteriorSet("sure", np.log([[1.0, 1e-20, 1e-30]]), np.array([0]), "logprobs")
    other = top_label_view(pset).logprobs()[0, 0]
    assert other == pytest.approx(np.log(1e-20 + 1e-30), rel=1e-12)
