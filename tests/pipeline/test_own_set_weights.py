"""An own set's sample weights (issue 56): a declaration's ``weights: COLUMN`` or ``weights_file: PATH`` is
checked like its other keys (one line naming the key), the set loads with them, and the materialized set
(what the fetch step writes: :func:`calib.data.real.save_posterior_set`) carries them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from calib.data.real import read_posterior_set, save_posterior_set
from pipeline import own_sets
from pipeline.parameters import ConfigError
from pipeline.real_data import real_set_path

N = 120


@pytest.fixture
def data(tmp_path):
    """scores.csv (three species, labels in ``species``, weights in ``w``), scores.npz and weights files."""
    rng = np.random.default_rng(0)
    q = rng.dirichlet([1.0, 1.0, 1.0], N)
    frame = pd.DataFrame(q, columns=["ant", "bee", "cat"])
    frame["species"] = np.array(["ant", "bee", "cat"])[rng.integers(0, 3, N)]
    frame["w"] = rng.integers(0, 4, N) + 0.5
    frame.to_csv(tmp_path / "scores.csv", index=False)
    np.savez(tmp_path / "scores.npz", scores=q, labels=rng.integers(0, 3, N))
    np.save(tmp_path / "w.npy", frame["w"].to_numpy())
    np.save(tmp_path / "short.npy", frame["w"].to_numpy()[:-1])
    frame.assign(w=frame["w"].where(frame.index != 9, -1)).to_csv(tmp_path / "negative.csv", index=False)
    return tmp_path


def _declare(monkeypatch, text: str) -> None:
    monkeypatch.setattr(own_sets, "own_set_config", lambda name: OmegaConf.create(text))


@pytest.mark.parametrize(
    "declaration",
    [
        "file: {data}/scores.csv\nkind: probs\nlabels: species\nweights: w\n",
        "file: {data}/scores.csv\nkind: probs\nlabels: species\nclass_columns: [ant, bee, cat]\nweights_file: "
        "{data}/w.npy\n",
        "file: {data}/scores.npz\nkind: probs\nweights_file: {data}/w.npy\n",
    ],
)
def test_a_declared_sets_weights_are_loaded_and_materialized(data, monkeypatch, tmp_path, declaration):
    _declare(monkeypatch, declaration.format(data=data))
    pset = own_sets.load("mine")
    assert np.array_equal(pset.weights, np.load(data / "w.npy"))
    assert pset.n_classes == 3  # the weights are no class
    path = real_set_path(tmp_path / "materialized", "own/mine")
    path.parent.mkdir(parents=True)
    save_posterior_set(path, pset)
    with np.load(path) as archive:
        assert np.array_equal(archive["weights"], pset.weights)
    assert np.array_equal(read_posterior_set(path).weights, pset.weights)


def test_a_set_declared_without_weights_is_materialized_without_them(data, monkeypatch, tmp_path):
    _declare(monkeypatch, f"file: {data}/scores.npz\nkind: probs\n")
    path = tmp_path / "mine.npz"
    save_posterior_set(path, own_sets.load("mine"))
    with np.load(path) as archive:
        assert "weights" not in archive.files
    assert read_posterior_set(path).weights is None


@pytest.mark.parametrize(
    ("declaration", "key", "says"),
    [
        ("file: {data}/scores.csv\nkind: probs\nlabels: species\nweights: w\nweights_file: {data}/w.npy\n",
         "weights_file", "weights: w names a column of weights already; give one"),
        ("file: {data}/scores.csv\nkind: probs\nlabels: species\nweights: 3\n", "weights", "must be a str"),
        ("file: {data}/scores.csv\nkind: probs\nlabels: species\nweights: nowhere\n", "weights",
         "has no column 'nowhere' (weights:)"),
        ("file: {data}/negative.csv\nkind: probs\nlabels: species\nweights: w\n", "weights",
         "must be >= 0; found -1 at line 11"),
        ("file: {data}/scores.npz\nkind: probs\nweights: w\n", "weights", "give the weights as weights_file:"),
        ("file: {data}/scores.npz\nkind: probs\nweights_file: {data}/nowhere.npy\n", "weights_file",
         "nowhere.npy does not exist"),
        ("file: {data}/scores.npz\nkind: probs\nweights_file: {data}/short.npy\n", "weights_file",
         f"are {N - 1} for {N} rows of scores"),
    ],
)  # fmt: skip
def test_a_wrong_weights_key_is_one_line_naming_the_file_and_key(data, monkeypatch, declaration, key, says):
    _declare(monkeypatch, declaration.format(data=data))
    with pytest.raises(ConfigError) as error:
        own_sets.load("bad")
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"config error at configs/real_systems/own/bad.yaml: key {key}: ")
    assert says in message
