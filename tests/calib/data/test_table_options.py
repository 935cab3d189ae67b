"""calib.data.table_options: the table-reading options are checked once, when made, each error one line naming
the option (``--option`` on the command line), and a declaration's keywords become the object."""

import pytest

from calib.data.table_options import TableOptions
from calib.validation import CalibInputError


@pytest.mark.parametrize(
    ("fields", "python", "command"),
    [
        ({"kind": "scores"}, "kind must be one of", "--kind must be one of probs, logprobs, logits; got 'scores'"),
        ({"scale": "permille"}, "scale must be one of", "--scale must be unit or percent; got 'permille'"),
        ({"kind": "logits", "scale": "percent"}, "scale='percent' is for probabilities", "--scale percent is for"),
        ({"label_values": "2-based"}, "label_values must be one of", "--label-values must be one of"),
        ({"format": "xls"}, "format must be one of", "--format must be one of"),
    ],
)
def test_a_bad_option_is_refused_when_made_naming_it(fields, python, command):
    with pytest.raises(CalibInputError) as info:
        TableOptions(**{"kind": "probs", **fields})
    assert str(info.value).startswith(python) and info.value.cli_message.startswith(command)
    assert "\n" not in str(info.value) and "\n" not in info.value.cli_message


def test_class_columns_and_label_values_are_kept_as_given_in_values_that_do_not_change():
    mapping = {"-1": "neg", "1": "pos"}
    options = TableOptions(kind="probs", class_columns=["neg", "pos"], label_values=mapping)
    mapping["0"] = "neg"  # the caller's dict changed later: the options keep what was given
    assert options.class_columns == ("neg", "pos") and options.label_values == {"-1": "neg", "1": "pos"}
    assert TableOptions(kind="probs", class_columns="prob_*").class_columns == ("prob_*",)


def test_keywords_that_are_options_are_taken_out_and_the_others_left():
    keywords = {"kind": "logits", "sep": ";", "n_boot": 0, "settings": None}
    options = TableOptions.taken_from(keywords)
    assert (options.kind, options.sep, keywords) == ("logits", ";", {"n_boot": 0, "settings": None})
    named = {"kind", "label_column", "class_columns", "label_values", "positive_label", "id_column", "group_column"}
    assert set(TableOptions.names()) >= named | {"renormalize", "scale", "sep", "decimal", "format"}
