"""Putting two posterior sets in the same order: classes by name, rows by id.

Two files of one test set (two systems to compare, a calibrator's training and target files, a saved
model and the file it is applied to) need not write their class columns, or their rows, in the same
order. :func:`classes_in_order` reorders a set's classes to a given list of names (its scores'
columns and its labels together), refusing sets whose names differ; :func:`rows_in_order` reorders
a set's rows to a given sequence of ids, refusing ids that are missing, repeated or not shared.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from calib.data.real import PosteriorSet
from calib.validation import CalibInputError


def classes_in_order(pset: PosteriorSet, names, *, where: str, reference: str) -> PosteriorSet:
    """``pset`` with its classes in the order of ``names`` (the classes of ``reference``), matched by name.

    Parameters
    ----------
    pset : PosteriorSet
        A set with class names.
    names : sequence of str
        The class names in the wanted order; the same set of names as ``pset``'s.
    where, reference : str
        What ``pset`` and the names come from, for the error (e.g. "--apply test.csv", "the model").

    Returns
    -------
    PosteriorSet
        The same scores and labels with columns permuted (``pset`` itself when already in order).

    Raises
    ------
    CalibInputError
        When the two sets of names differ, naming the names each lacks.

    Examples
    --------
    >>> import numpy as np
    >>> pset = PosteriorSet("s", np.array([[0.3, 0.7]]), np.array([1]), "probs", class_names=("dog", "cat"))
    >>> moved = classes_in_order(pset, ["cat", "dog"], where="s.csv", reference="the model")
    >>> moved.scores.tolist(), moved.labels.tolist(), moved.class_names
    ([[0.7, 0.3]], [0], ('cat', 'dog'))
    """
    names = tuple(str(n) for n in names)
    own = pset.class_names
    if own == names:
        return pset
    if own is None or sorted(own) != sorted(names):
        missing = sorted(set(names) - set(own or ()))
        extra = sorted(set(own or ()) - set(names))
        raise CalibInputError(
            f"{where} has the classes {list(own or [])} but {reference} has {list(names)} (missing {missing}, "
            f"unexpected {extra}); classes are matched by name: give files whose class columns carry the same names"
        )
    order = np.array([own.index(n) for n in names])
    inverse = np.argsort(order)
    labels = None if pset.labels is None else inverse[pset.labels]
    return replace(pset, scores=pset.scores[:, order], labels=labels, class_names=names)


def rows_in_order(pset: PosteriorSet, ids, *, where: str, reference: str) -> PosteriorSet:
    """``pset`` with its rows in the order of ``ids`` (the row ids of ``reference``), matched by id.

    Parameters
    ----------
    pset : PosteriorSet
        A set with row ids (``ids``), each id once.
    ids : array of shape (N,)
        The ids in the wanted order, each once, the same ids as ``pset``'s.
    where, reference : str
        What ``pset`` and the ids come from, for the error.

    Returns
    -------
    PosteriorSet
        The same set with rows permuted.

    Raises
    ------
    CalibInputError
        For a set without ids, ids repeated in either, or ids that only one of them holds.

    Examples
    --------
    >>> import numpy as np
    >>> pset = PosteriorSet("s", np.array([[0.3, 0.7], [0.9, 0.1]]), np.array([1, 0]), "probs", ids=["b", "a"])
    >>> rows_in_order(pset, np.array(["a", "b"]), where="s.csv", reference="t.csv").labels.tolist()
    [0, 1]
    """
    if pset.ids is None:
        raise CalibInputError(f"{where} has no id column to pair its rows by")
    ids, own_ids = np.asarray(ids), pset.ids
    if ids.dtype.kind != own_ids.dtype.kind:  # ids read as numbers in one file and as text in the other
        ids, own_ids = ids.astype(str), own_ids.astype(str)
    for own, name in ((own_ids, where), (ids, reference)):
        values, counts = np.unique(own, return_counts=True)
        if (counts > 1).any():
            raise CalibInputError(
                f"{name} holds the id {values[counts > 1][0].item()!r} {counts.max()} times: ids must name one row each"
            )
    order = np.argsort(own_ids, kind="stable")
    at = np.clip(np.searchsorted(own_ids[order], ids), 0, len(order) - 1)
    found = own_ids[order][at] == ids
    if not found.all() or ids.size != own_ids.size:
        only_reference = ids[~found][:3].tolist()
        only_here = np.setdiff1d(own_ids, ids)[:3].tolist()
        raise CalibInputError(
            f"{where} and {reference} do not hold the same ids (only in {reference}: {only_reference}; only in "
            f"{where}: {only_here}); compare systems scored on the same samples"
        )
    rows = order[at]
    return replace(
        pset,
        scores=pset.scores[rows],
        labels=None if pset.labels is None else pset.labels[rows],
        ids=pset.ids[rows],
        groups=None if pset.groups is None else pset.groups[rows],
        weights=None if pset.weights is None else pset.weights[rows],
    )
