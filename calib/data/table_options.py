"""How to read a user's table: every option of the table readers, declared once and checked once.

A :class:`TableOptions` is what :func:`calib.data.real.load_table` (the whole table) and
:func:`calib.data.chunks.table_chunks` (the table in chunks) read a table with, what
:func:`calib.evaluation.partitioned.evaluate_dataset` passes on, what the ``calib`` command builds from its
options (``--kind``, ``--labels``, ...) and what a workflow's own-set declaration maps onto
(``pipeline/own_sets.py``). Each option is checked when the object is made, so a reader gets checked
options; an error names the option (``cli_message``: the command's ``--option``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from calib.data.classes import check_label_values
from calib.data.formats import check_separators, file_format
from calib.validation import KINDS, CalibInputError

SCALES = ("unit", "percent")


@dataclass(frozen=True, kw_only=True)
class TableOptions:
    """The options a table is read with, checked when made (an error names the option).

    The fields are the options of ``calib evaluate`` of the same names (``--kind``, ``--labels``,
    ``--class-columns``, ...), whose rules :mod:`calib.data.classes` gives.

    Source: the options are calib's own, with no published counterpart; what they read as a posterior (a
    row of K probabilities summing to 1, their logarithms, or logits) is Ferrer & Ramos (2024)'s, Sec. 2.

    Parameters
    ----------
    kind : {"probs", "logprobs", "logits"}
        What the score columns hold; required, never guessed (``--kind``).
    label_column : str, default "label"
        The column of true labels (``--labels``).
    class_columns : str or sequence of str, optional
        The score columns, by name or fnmatch pattern (``"prob_*"``), names kept in the order given; kept
        as a tuple (a string is one name or pattern). Default None: every numeric column but the labels,
        ids and groups (``--class-columns``).
    label_values : {"auto", "index", "names", "1-based"} or mapping, default "auto"
        How labels name classes: class indices from 0, class column names, indices from 1, or a mapping
        from label to class column; ``"auto"`` decides from the labels and the columns
        (:mod:`calib.data.classes`; ``--label-values``).
    positive_label : optional
        For a binary table: the label of the positive class; a table may then hold one score column, the
        positive class's (``--positive-label``).
    id_column : str, optional
        A column of row ids, kept in the set's ``ids``, not read as scores (``--id-column``).
    group_column : str or sequence of str, optional
        A column of subgroups, or several (kept as a tuple), kept in the set's ``groups`` ((N,) for one column,
        (N, c) for c), not read as scores (``--groups``); several are evaluated alone and crossed
        (:mod:`calib.evaluation.segments`).
    weight_column : str, optional
        A column of sample weights, one number >= 0 per row (a row counts w times; a negative kept 1 in 10
        weighs 10), kept in the set's ``weights`` and yielded as the chunks' fourth array, not read as scores
        (``--weights``; :mod:`calib.data.weights`). A table of scores without labels to calibrate may lack it.
    renormalize : bool, default False
        Divide rows of probabilities by their sums when rounding left them off 1 (by at most 0.01)
        (``--renormalize``).
    scale : {"unit", "percent"}, default "unit"
        ``"percent"``: probabilities written as percentages (0-100), divided by 100; only with
        ``kind="probs"`` (``--scale``).
    sep : str, optional
        The column separator of a text table; default None: ``,`` for csv, a tab for tsv, or what a
        first line ``sep=X`` says (``--sep``).
    decimal : str, default "."
        The decimal mark of a text table (``--decimal``).
    format : str, optional
        The file's format when its suffix does not say it, one of :data:`calib.data.formats.FORMATS`;
        default None: from the suffix (``--format``).

    Methods
    -------
    names()
        The options' names.
    taken_from(keywords)
        The options among a function's keywords.

    Examples
    --------
    >>> options = TableOptions(kind="probs", label_column="clicked", class_columns="prob_*")
    >>> options.class_columns, options.scale
    (('prob_*',), 'unit')
    >>> try:
    ...     TableOptions(kind="logits", scale="percent")
    ... except CalibInputError as exc:
    ...     print(exc.cli_message)
    --scale percent is for probabilities written as percentages (--kind probs); got --kind logits
    """

    kind: str
    label_column: str = "label"
    class_columns: tuple | None = None
    label_values: str | Mapping = "auto"
    positive_label: object = None
    id_column: str | None = None
    group_column: str | tuple[str, ...] | None = None
    weight_column: str | None = None
    renormalize: bool = False
    scale: str = "unit"
    sep: str | None = None
    decimal: str = "."
    format: str | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise CalibInputError(
                f"kind must be one of {KINDS}; got {self.kind!r}. Say what the score columns hold.",
                cli_message=f"--kind must be one of {', '.join(KINDS)}; got {self.kind!r}",
            )
        if isinstance(self.class_columns, str):  # one name or pattern
            object.__setattr__(self, "class_columns", (self.class_columns,))
        elif self.class_columns is not None:
            object.__setattr__(self, "class_columns", tuple(self.class_columns))
        if isinstance(self.group_column, str):  # one column of groups, or several whose crossings are searched
            object.__setattr__(self, "group_column", (self.group_column,))
        elif self.group_column is not None:
            object.__setattr__(self, "group_column", tuple(self.group_column))
        if isinstance(self.label_values, Mapping):  # a copy: the caller's dict may change later
            object.__setattr__(self, "label_values", dict(self.label_values))
        else:
            check_label_values(self.label_values)
        self._check_weight_column()
        self._check_group_columns()
        check_scale(self.scale, self.kind)
        check_separators(self.sep, self.decimal)
        if self.format is not None:
            file_format(None, self.format)  # refuses an unknown format naming format= / --format

    def _check_group_columns(self) -> None:
        """Group columns are named once each, and none is the label column: segments of the outcome itself
        would each hold one outcome, and every one would look miscalibrated."""
        columns = self.group_column or ()
        if len(set(columns)) != len(columns):
            twice = sorted({c for c in columns if columns.count(c) > 1})
            raise CalibInputError(
                f"group_column names {twice} more than once; name each group column once",
                cli_message=f"--groups names {' '.join(twice)} more than once; name each group column once",
            )
        if self.label_column in columns:
            raise CalibInputError(
                f"group_column {self.label_column!r} is the label column: a segment of one outcome looks "
                "miscalibrated whatever the forecasts; group by columns known before the outcome",
                cli_message=f"--groups {self.label_column} is the label column (--labels): a segment of one outcome "
                "looks miscalibrated whatever the forecasts; group by columns known before the outcome",
            )

    def _check_weight_column(self) -> None:
        """A weights column is no other column: the labels, ids and groups are read for themselves."""
        others = {"label_column": "--labels", "id_column": "--id-column", "group_column": "--groups"}
        for name, flag in others.items():
            value = getattr(self, name)
            names = value if isinstance(value, tuple) else (value,)  # the group columns are a tuple by now
            if self.weight_column is not None and self.weight_column in names:
                raise CalibInputError(
                    f"weight_column={self.weight_column!r} is also the {name}; name the column of weights",
                    cli_message=f"--weights {self.weight_column} is also {flag}; name the column of weights",
                )

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The options' names, as keyword arguments spell them.

        Examples
        --------
        >>> TableOptions.names()[:3]
        ('kind', 'label_column', 'class_columns')
        """
        return tuple(f.name for f in fields(cls))

    @classmethod
    def taken_from(cls, keywords: dict) -> TableOptions:
        """The options among ``keywords`` (removed from it), for a function that takes them as keywords
        beside its own.

        Examples
        --------
        >>> keywords = {"kind": "probs", "label_column": "y", "n_boot": 0}
        >>> TableOptions.taken_from(keywords).label_column, keywords
        ('y', {'n_boot': 0})
        """
        return cls(**{name: keywords.pop(name) for name in cls.names() if name in keywords})


def check_scale(scale: str, kind: str, path=None) -> None:
    """Refuse a ``scale`` that is not one of :data:`SCALES`, and percentages of anything but probabilities;
    ``path``: the file whose kind it is, named in the message (an ``.npz`` archive says its own kind).

    Examples
    --------
    >>> check_scale("percent", "probs")
    >>> check_scale("percent", "logits", "scores.npz")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calib.validation.CalibInputError: scores.npz: scale='percent' is for probabilities ...; got kind='logits'
    """
    if scale not in SCALES:
        raise CalibInputError(
            f"scale must be one of {SCALES}; got {scale!r}",
            cli_message=f"--scale must be unit or percent; got {scale!r}",
        )
    if scale == "percent" and kind != "probs":
        where = "" if path is None else f"{path}: "
        raise CalibInputError(
            f"{where}scale='percent' is for probabilities written as percentages (kind='probs'); got kind={kind!r}",
            cli_message=f"{where}--scale percent is for probabilities written as percentages (--kind probs); "
            f"got --kind {kind}",
        )
