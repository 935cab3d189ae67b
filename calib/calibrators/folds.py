"""Cross-validation folds: one fold id per sample, shuffled, seeded, stratified by label or grouped.

The splits are scikit-learn's (``StratifiedKFold``, ``KFold``, ``StratifiedGroupKFold``,
``GroupKFold`` with ``shuffle=True``): the papers' numbers were computed with them, so the same seed
must give the same folds. The two ungrouped splits are computed here, from the same random stream,
so that a command need not import scikit-learn; tests check them fold for fold against
scikit-learn. The grouped splits with labels that vary within a group are left to scikit-learn.
"""

from __future__ import annotations

import warnings

import numpy as np

from calib.validation import CalibInputError, as_class_indices, check_positive_int


def usable_folds(labels, n_folds: int) -> int:
    """The most folds, up to ``n_folds``, that a stratified split of ``labels`` allows: the size of the largest
    class (:func:`fold_ids` needs a class with a row in every fold). Below 2, no cross-validation is possible.

    Examples
    --------
    >>> usable_folds([0, 0, 0, 1, 1], 5)
    3
    """
    counts = np.bincount(as_class_indices(labels))
    return int(min(n_folds, counts.max(initial=0)))


def fold_ids(labels, *, n_folds: int, seed, groups=None, stratified: bool = True) -> np.ndarray:
    """Fold index (0 .. n_folds - 1) of every sample: shuffled, stratified by label, grouped if ``groups``.

    Parameters
    ----------
    labels : int array of shape (N,)
        Class index of each sample.
    n_folds : int
        Number of folds, at least 2.
    seed : int or numpy.random.RandomState
        Seed of the shuffle; a ``RandomState`` is used as is, so the shuffle continues its stream.
    groups : array of shape (N,), optional
        Group id of each sample; a group never straddles two folds (e.g. bootstrap copies of a sample).
    stratified : bool
        Keep each class's share about equal across folds (scikit-learn's ``StratifiedKFold``);
        False: plain shuffled folds (``KFold``).

    Returns
    -------
    int64 array of shape (N,)
        The fold of each sample, as ``enumerate(splitter.split(X, labels, groups))`` numbers the test sets.

    Examples
    --------
    >>> fold_ids([0, 0, 0, 1, 1, 1], n_folds=3, seed=0).tolist()
    [2, 1, 0, 2, 0, 1]
    """
    y = as_class_indices(labels)
    n_folds = check_positive_int(n_folds, "n_folds", minimum=2)
    if groups is not None:
        groups = np.asarray(groups)
        if groups.shape != y.shape:
            raise CalibInputError(f"groups needs one id per sample, shape {y.shape}; got {groups.shape}")
        if np.unique(groups).size < n_folds:
            raise CalibInputError(f"groups has fewer distinct ids than n_folds={n_folds}")
    elif y.size < n_folds:
        raise CalibInputError(f"labels has {y.size} samples; cross-validation needs at least n_folds={n_folds}")
    if groups is not None and stratified and _single_label_groups(y, groups):
        # Each group holds one label (e.g. bootstrap duplicates of one sample): stratify the distinct
        # groups and let every copy follow its group. Same guarantee as StratifiedGroupKFold, much faster.
        _, first, inverse = np.unique(groups, return_index=True, return_inverse=True)
        return fold_ids(y[first], n_folds=n_folds, seed=seed)[inverse.ravel()]
    if stratified and groups is None and np.unique(y, return_counts=True)[1].max() < n_folds:
        raise CalibInputError(
            f"stratified cross-validation with n_folds={n_folds} needs a class with at least {n_folds} samples; "
            f"the largest class of these {y.size} labels has fewer. Use fewer folds or stratified=False."
        )
    if groups is not None:
        return _grouped_folds(y, groups, n_folds, seed, stratified)
    rng = seed if isinstance(seed, np.random.RandomState) else np.random.RandomState(seed)
    return _stratified_folds(y, n_folds, rng) if stratified else _shuffled_folds(y.size, n_folds, rng)


def _stratified_folds(y: np.ndarray, n_folds: int, rng: np.random.RandomState) -> np.ndarray:
    """``StratifiedKFold(n_folds, shuffle=True)``'s folds.

    Classes are taken in order of first appearance. Laid out one after another in that order, the
    samples are dealt to the folds like cards (position p to fold p mod F): that fixes how many of
    each class every fold receives. Each class's fold ids, in fold order, are shuffled (one shuffle
    per class, in the same order) and given to its samples in sample order.
    """
    _, first, inverse = np.unique(y, return_index=True, return_inverse=True)
    appearance = np.empty(first.size, dtype=np.int64)
    appearance[np.argsort(first, kind="stable")] = np.arange(first.size)
    encoded = appearance[inverse.ravel()]
    counts = np.bincount(encoded, minlength=first.size)
    ends = np.cumsum(counts)
    starts = ends - counts
    folds = np.arange(n_folds)[:, None]

    def dealt_below(x: np.ndarray) -> np.ndarray:
        """(F, K): positions below x dealt to fold f, ceil((x - f) / F) for x > f, else 0."""
        return np.maximum(0, x - folds + n_folds - 1) // n_folds

    dealt = dealt_below(ends) - dealt_below(starts)
    per_class = []
    for k in range(first.size):
        ids = np.repeat(np.arange(n_folds), dealt[:, k])
        rng.shuffle(ids)
        per_class.append(ids)
    out = np.empty(y.size, dtype=np.int64)
    out[np.argsort(encoded, kind="stable")] = np.concatenate(per_class)
    return out


def _shuffled_folds(n_samples: int, n_folds: int, rng: np.random.RandomState) -> np.ndarray:
    """``KFold(n_folds, shuffle=True)``'s folds: a shuffled order cut into F consecutive runs, the
    first N mod F of them one sample longer."""
    order = np.arange(n_samples)
    rng.shuffle(order)
    sizes = np.full(n_folds, n_samples // n_folds)
    sizes[: n_samples % n_folds] += 1
    out = np.empty(n_samples, dtype=np.int64)
    out[order] = np.repeat(np.arange(n_folds), sizes)
    return out


def _grouped_folds(y: np.ndarray, groups: np.ndarray, n_folds: int, seed, stratified: bool) -> np.ndarray:
    """scikit-learn's ``StratifiedGroupKFold`` / ``GroupKFold`` folds (imported only here)."""
    from sklearn.model_selection import GroupKFold, StratifiedGroupKFold

    splitter = (StratifiedGroupKFold if stratified else GroupKFold)(n_splits=n_folds, shuffle=True, random_state=seed)
    ids = np.empty(y.size, dtype=np.int64)
    with warnings.catch_warnings():  # a class smaller than n_folds is simply absent from some folds
        warnings.filterwarnings("ignore", message="The least populated class", category=UserWarning)
        for fold, (_, test) in enumerate(splitter.split(np.zeros(y.size), y, groups)):
            ids[test] = fold
    return ids


def _single_label_groups(labels: np.ndarray, groups: np.ndarray) -> bool:
    """Whether every group's samples share one label."""
    order = np.lexsort((labels, groups))
    g, lab = groups[order], labels[order]
    same_group = g[1:] == g[:-1]
    return bool(np.all(lab[1:][same_group] == lab[:-1][same_group]))
