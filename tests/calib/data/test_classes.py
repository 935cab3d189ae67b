"""Matching a table's columns and labels to classes by name (calib.data.classes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calib.data.alignment import classes_in_order, rows_in_order
from calib.data.classes import class_numbers, pick_class_columns, resolve_classes
from calib.data.real import PosteriorSet
from calib.validation import CalibInputError, CalibInputWarning

PATH = Path("t.csv")


@pytest.mark.parametrize(
    ("names", "numbers"),
    [
        (["c0", "c1", "c10", "c11", "c2"], [0, 1, 10, 11, 2]),
        (["prob_1", "prob_2", "prob_3"], [1, 2, 3]),
        (["p1_cal", "p2_cal"], [1, 2]),
        (["0", "1"], [0, 1]),
        (["0.0", "1.0", "2.0"], [0, 1, 2]),
        (["class10", "class11"], [10, 11]),
        (["cat", "dog"], None),
        (["c1", "c01"], None),  # the same number twice
        (["a1", "b2"], None),
        (["x"], None),
    ],
)
def test_class_numbers(names, numbers):
    assert class_numbers(names) == numbers


def test_numbered_columns_come_in_number_order_and_named_ones_as_given():
    frame = pd.DataFrame(np.ones((2, 5)), columns=["c0", "c1", "c10", "c2", "label"])
    assert pick_class_columns(frame, PATH, "label", None) == ["c0", "c1", "c2", "c10"]
    assert pick_class_columns(frame, PATH, "label", "c*") == ["c0", "c1", "c2", "c10"]
    assert pick_class_columns(frame, PATH, "label", ["c10", "c0", "c2", "c1"]) == ["c10", "c0", "c2", "c1"]


def classes_named(labels, columns, label_values="auto", positive_label=None) -> list[str]:
    """The class name each label is read as, for a table with these score ``columns``."""
    frame = pd.DataFrame(np.full((1, len(columns)), 0.5), columns=columns)
    layout = resolve_classes(
        frame, PATH, labels=labels, class_columns=columns, label_values=label_values, positive_label=positive_label
    )
    return [layout.names[k] for k in layout.classes_of(labels)]


def test_numeric_labels_name_the_column_that_carries_their_number():
    labels = pd.Series([10, 0, 2, 1])
    assert classes_named(labels, ["c10", "c0", "c2", "c1"]) == ["c10", "c0", "c2", "c1"]
    # said to be positions (the numbers 0, 1, 2, 10 are not 0..K-1): positions in number order
    assert classes_named(pd.Series([3, 0]), ["c0", "c1", "c2", "c10"], "index") == ["c10", "c0"]
    with pytest.raises(CalibInputError, match=r"labels \[7\] are not among the numbers"):
        classes_named(pd.Series([7, 0]), ["c0", "c1"])


def test_numbers_onto_named_columns_are_positions_with_a_note():
    with pytest.warns(CalibInputWarning, match=r"0: cat, 1: dog"):
        assert classes_named(pd.Series([1, 0]), ["cat", "dog"]) == ["dog", "cat"]


def test_text_labels_holding_the_column_numbers_are_matched_by_number():
    labels = pd.Series(["3", "0"])
    assert classes_named(labels, ["class_0", "class_3"]) == ["class_3", "class_0"]


def test_a_set_is_put_in_another_class_order_by_name():
    pset = PosteriorSet("s", np.array([[0.2, 0.5, 0.3]]), np.array([2]), "probs", class_names=("a", "b", "c"))
    moved = classes_in_order(pset, ["c", "a", "b"], where="s", reference="r")
    assert moved.scores.tolist() == [[0.3, 0.2, 0.5]] and moved.labels.tolist() == [0]
    with pytest.raises(CalibInputError, match=r"missing \['d'\]"):
        classes_in_order(pset, ["a", "b", "d"], where="s", reference="r")


def test_rows_are_paired_by_id_in_any_order_and_type():
    pset = PosteriorSet(
        "s", np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]]), np.array([0, 1, 1]), "probs", ids=[3, 1, 2]
    )
    moved = rows_in_order(pset, np.array(["1", "2", "3"]), where="s", reference="r")  # ids read as text there
    assert moved.labels.tolist() == [1, 1, 0] and moved.scores[:, 0].tolist() == [0.2, 0.5, 0.9]
    with pytest.raises(CalibInputError, match="do not hold the same ids"):
        rows_in_order(pset, np.array([1, 2, 4]), where="s", reference="r")
    with pytest.raises(CalibInputError, match="2 times"):
        rows_in_order(pset, np.array([1, 1, 2]), where="s", reference="r")


def test_the_positive_label_names_the_column_that_carries_it_not_the_second_column():
    assert classes_named(pd.Series([0, 1, 0]), ["p0", "p1"], positive_label="0") == ["p0", "p1", "p0"]
    frame = pd.DataFrame({"p0": [0.7], "p1": [0.3]})
    for flag, positive in (("0", "p0"), ("1", "p1"), ("p0", "p0"), (None, "p1")):
        layout = resolve_classes(frame, PATH, labels=pd.Series([0, 1]), positive_label=flag)
        assert layout.positive == positive == layout.names[1] == layout.columns[1], flag
    one_based = pd.DataFrame({"prob_1": [0.7], "prob_2": [0.3]})
    assert resolve_classes(one_based, PATH, labels=pd.Series([1, 2]), positive_label="1").positive == "prob_1"


@pytest.mark.parametrize(
    "labels",
    [pd.Series([True, False, True]), pd.Series(["true", "false", "true"]), pd.Series(["TRUE", "FALSE", "TRUE"]),
     pd.Series([True, False, True], dtype="boolean"), pd.Series(pd.Categorical(["true", "false", "true"]))],
)  # fmt: skip
def test_boolean_labels_are_the_words_of_columns_so_named(labels):
    assert classes_named(labels, ["true", "false"]) == ["true", "false", "true"]
    assert classes_named(labels, ["true", "false"], label_values="names") == ["true", "false", "true"]
    frame = pd.DataFrame({"true": [0.6], "false": [0.4]})
    assert resolve_classes(frame, PATH, labels=labels).names == ("false", "true")  # false before true


def test_columns_that_are_plainly_not_classes_are_left_out_with_a_note():
    frame = pd.DataFrame({"p0": [0.6], "fold": [0], "p1": [0.4], "is_test": [1]})
    with pytest.warns(CalibInputWarning, match=r"left out the numeric columns \['fold', 'is_test'\]"):
        layout = resolve_classes(frame, PATH, labels=pd.Series([0, 1]))
    assert layout.columns == ("p0", "p1") and "--class-columns p0 fold p1 is_test" in layout.notes[0].cli_message
    kept = resolve_classes(frame, PATH, labels=pd.Series([0, 1]), class_columns=["p0", "p1", "fold"])
    assert kept.names == ("fold", "p0", "p1")  # named: kept, in the order of their names
    words = pd.DataFrame({"dog": [0.4], "cat": [0.6], "n_visits": [3]})
    with pytest.warns(CalibInputWarning, match=r"\['n_visits'\] \(named by no label\)"):
        assert resolve_classes(words, PATH, labels=pd.Series(["cat", "dog"])).names == ("cat", "dog")


def test_classes_come_in_the_order_of_their_names_whatever_the_column_order():
    for columns in (["emu", "cat", "dog"], ["dog", "emu", "cat"]):
        frame = pd.DataFrame(np.full((1, 3), 1 / 3), columns=columns)
        layout = resolve_classes(frame, PATH, labels=pd.Series(["dog", "cat", "emu"]))
        assert layout.names == ("cat", "dog", "emu") and layout.codes.tolist() == [1, 0, 2]
        assert [columns[i] for i in layout.given_order] == list(layout.names)


def test_arrow_tables_and_arrow_labels_are_read_by_name_in_python():
    import pyarrow as pa

    from calib import evaluate

    frame = pd.DataFrame({"dog": [0.2, 0.9, 0.4, 0.3], "cat": [0.8, 0.1, 0.6, 0.7]})
    labels = ["cat", "dog", "dog", "cat"]
    expected = evaluate(frame[["cat", "dog"]], labels, kind="probs", n_boot=0, calibrators=())
    for scores, y in ((pa.Table.from_pandas(frame), labels), (frame, pa.array(labels)),
                      (pa.Table.from_pandas(frame), pa.chunked_array([labels[:2], labels[2:]]))):  # fmt: skip
        found = evaluate(scores, y, kind="probs", n_boot=0, calibrators=())
        assert found.class_names == ("cat", "dog")
        assert {k: m.value for k, m in found.metrics.items()} == {k: m.value for k, m in expected.metrics.items()}


def test_priors_given_in_a_tables_column_order_follow_their_classes():
    from calib import evaluate

    rng = np.random.default_rng(4)
    probs = rng.dirichlet(np.ones(3), 200)
    labels = rng.integers(0, 3, 200)
    frame = pd.DataFrame(probs, columns=["emu", "cat", "dog"])  # evaluated as cat, dog, emu
    priors = [0.5, 0.3, 0.2]  # emu, cat, dog
    by_position = evaluate(frame, frame.columns[labels], kind="probs", priors=priors, n_boot=0, calibrators=())
    by_name = evaluate(frame, frame.columns[labels], kind="probs", priors={"emu": 0.5, "cat": 0.3, "dog": 0.2},
                       n_boot=0, calibrators=())  # fmt: skip
    assert by_position.metrics["NCE"].value == by_name.metrics["NCE"].value
