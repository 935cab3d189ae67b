"""An own set's sample weights (issue 56): a declaration's ``weights: COLUMN`` or ``weights_file: PATH`` is
checked like its other keys (one line naming the key), the set loads with them, and the materialized set
(what the fetch step writes: :func:`calib.data.real.save_posterior_set`) carries them."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from omegaconf import OmegaConf

from calib._internal.files import atomic_write
from calib.data.real import PosteriorSet, read_posterior_set, save_posterior_set
from pipeline import own_sets
from pipeline.config import OWN_PROTOCOLS, compose, group_options
from pipeline.config_blocks import OwnProtocol
from pipeline.own_sets import OwnSet
from pipeline.papers.reassessing import (
    Protocol,
    RecalibrationTable,
    Split,
    recalibration_table,
    reliability_comparison,
    split_set,
    split_weights,
)
from pipeline.papers.silvafilho2023 import EceAgainstBins, ece_against_bins
from pipeline.parameters import ConfigError, typed
from pipeline.real_data import real_set_path
from pipeline.root import Own, typed_root
from pipeline.sources import DataSources
from pipeline.steps import own_report
from pipeline.sweep_kinds import BinnedOnRealSets, ece_binning
from pipeline.targets import Experiment

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


def _declared(name: str, text: str) -> own_sets.OwnSet:
    """The declaration ``text`` of own set ``name`` (configs/own/<name>.yaml), typed as the workflow types it."""
    return own_sets.declared_in(OmegaConf.create(text), name)


@pytest.mark.parametrize(
    "declaration",
    [
        "file: {data}/scores.csv\nkind: probs\nlabels: species\nweights: w\n",
        "file: {data}/scores.csv\nkind: probs\nlabels: species\nclass_columns: [ant, bee, cat]\nweights_file: "
        "{data}/w.npy\n",
        "file: {data}/scores.npz\nkind: probs\nweights_file: {data}/w.npy\n",
    ],
)
def test_a_declared_sets_weights_are_loaded_and_materialized(data, tmp_path, declaration):
    pset = own_sets.load("mine", _declared("mine", declaration.format(data=data)))
    assert np.array_equal(pset.weights, np.load(data / "w.npy"))
    assert pset.n_classes == 3  # the weights are no class
    path = real_set_path(tmp_path / "materialized", "own/mine")
    path.parent.mkdir(parents=True)
    save_posterior_set(path, pset)
    with np.load(path) as archive:
        assert np.array_equal(archive["weights"], pset.weights)
    assert np.array_equal(read_posterior_set(path).weights, pset.weights)


def test_a_set_declared_without_weights_is_materialized_without_them(data, tmp_path):
    path = tmp_path / "mine.npz"
    save_posterior_set(path, own_sets.load("mine", _declared("mine", f"file: {data}/scores.npz\nkind: probs\n")))
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
def test_a_wrong_weights_key_is_one_line_naming_the_file_and_key(data, declaration, key, says):
    with pytest.raises(ConfigError) as error:
        own_sets.load("bad", _declared("bad", declaration.format(data=data)))
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"config error at configs/own/bad.yaml: key {key}: ")
    assert says in message


# Which protocols take the weights (own_protocol.weights), and what the others do on a weighted set ------------

PROTOCOLS = group_options(OWN_PROTOCOLS)


def _protocol(protocol: str, *overrides: str) -> OwnProtocol:
    """The own_protocol block of configs/experiment/own/<protocol>.yaml (with ``overrides``), typed."""
    cfg, _ = compose([f"experiment=own/{protocol}", *overrides])
    return typed(OwnProtocol, cfg.experiment.own_protocol, f"experiment own/{protocol}.own_protocol")


def _takes_weights(protocol: str) -> bool:
    return _protocol(protocol).weights


def _weighted_pair(folder) -> tuple[PosteriorSet, PosteriorSet]:
    """An own set of a CSV with integer weights 0..3 (column ``w``), and the same rows each repeated w times
    (weight 0: left out), unweighted, both loaded as the workflow loads a declaration."""
    rng = np.random.default_rng(1)
    q = rng.dirichlet([2.0, 1.0, 1.0], N)
    frame = pd.DataFrame(q, columns=["ant", "bee", "cat"])
    frame["species"] = np.array(["ant", "bee", "cat"])[rng.integers(0, 3, N)]
    frame["w"] = rng.integers(0, 4, N)
    frame.to_csv(folder / "weighted.csv", index=False)
    frame.loc[frame.index.repeat(frame["w"])].drop(columns="w").to_csv(folder / "repeated.csv", index=False)
    declarations = {
        "weighted": f"file: {folder}/weighted.csv\nkind: probs\nlabels: species\nweights: w\n",
        "repeated": f"file: {folder}/repeated.csv\nkind: probs\nlabels: species\n",
    }
    return tuple(own_sets.load(name, _declared(name, text)) for name, text in declarations.items())


def _materialized(results, *sets: tuple[str, PosteriorSet]) -> DataSources:
    """The sets as the fetch step writes them under ``results`` (with their checksums), read back as a step
    reads them."""
    for name, pset in sets:
        path = real_set_path(results, f"own/{name}")
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, lambda tmp, p=pset: save_posterior_set(tmp, p), checksum=True)
    return DataSources(results)


def test_ece_bins_weighs_the_rows_as_repeating_them_would(tmp_path):
    weighted, repeated = _weighted_pair(tmp_path)
    assert weighted.weights is not None and repeated.weights is None
    data = _materialized(tmp_path / "data", ("weighted", weighted), ("repeated", repeated))
    grid = list(OmegaConf.load(own_sets.CONFIG_DIR / OWN_PROTOCOLS / "ece_bins.yaml").n_bins)
    protocol = {
        name: EceAgainstBins(kind="ece_against_bins", set=f"own/{name}", n_bins=grid)
        for name in ("weighted", "repeated")
    }
    values = {name: pd.DataFrame(ece_against_bins(exp, data)) for name, exp in protocol.items()}
    assert _takes_weights("ece_bins")
    pd.testing.assert_frame_equal(values["weighted"], values["repeated"], rtol=1e-12, atol=1e-12)
    plain = _materialized(tmp_path / "plain", ("weighted", replace(weighted, weights=None)))
    unweighted = ece_against_bins(protocol["weighted"], plain)
    assert not np.allclose(values["weighted"].value, pd.DataFrame(unweighted).value)  # the weights matter here


@pytest.mark.parametrize("protocol", [p for p in PROTOCOLS if not _takes_weights(p)])
def test_a_protocol_that_cannot_take_weights_is_not_run_on_a_weighted_set_and_says_so(protocol):
    declared = _protocol(protocol)
    shape = {"n_classes": 2 if declared.classes == "binary" else 3, "weighted": True}
    assert own_sets.fits(declared, shape)
    assert not own_sets.applies(declared, shape)
    assert own_sets.applies(declared, shape | {"weighted": False})
    line = own_sets.refusal("mine", protocol)
    assert "\n" not in line
    assert line.startswith(f"own set mine (configs/own/mine.yaml) has sample weights, which protocol "
                           f"{protocol} cannot take: not run on it; ")  # fmt: skip


def test_a_protocols_weights_must_be_true_or_false():
    assert _protocol("ece_bins", "experiment.own_protocol.weights=true").weights is True
    with pytest.raises(ConfigError) as error:
        _protocol("ece_bins", "experiment.own_protocol.weights=yes")
    assert str(error.value).startswith("config error at experiment own/ece_bins.own_protocol.weights: ")


def test_the_own_report_says_which_protocols_are_not_run_on_a_weighted_set(tmp_path, monkeypatch):
    settings = typed_root(*compose([f"paths.results={tmp_path}"]))
    own = Own(name="mine", set="own/mine", folder="own/mine", label="Mine", declaration=OwnSet(file="x", kind="probs"))

    def record(artifact: str, weights: bool) -> Experiment:
        exp = EceAgainstBins(
            paper="silvafilho2023", kind="ece_against_bins", folder="own/mine", artifact=artifact, title="T",
            own_protocol=OwnProtocol(classes="any", weights=weights), set="own/mine", n_bins=[5],
        )  # fmt: skip
        root = dataclasses.replace(settings, experiment=exp, own=own, names={"experiment": f"own/{artifact}"})
        return Experiment((f"experiment=own/{artifact}", "own=mine"), root, "")

    records = [record("ece_bins", True), record("table2", False)]
    monkeypatch.setattr(own_report, "experiments", lambda: records)
    shape = {"n_classes": 3, "n_samples": N, "classes": [], "weighted": True}
    monkeypatch.setattr(own_sets, "shape", lambda name, spec: shape)
    lines = own_report.own_section(settings)
    assert own_sets.refusal("mine", "table2") + "." in lines
    assert not any("own set mine" in line and "ece_bins" in line for line in lines)
    assert "#### ece_bins: T" in lines and "#### table2: T" not in lines


def _aligned_weights(n_rows: int, fraction: float, rng) -> np.ndarray:
    """Integer weights 0..3 whose repeated rows split where the rows do: the first ``fraction`` of the
    repeated rows is the repeats of the first ``fraction`` of the rows (a split by rows, as the protocol's,
    and a split of the repeated rows then hold the same data)."""
    w = rng.integers(0, 4, n_rows)
    n_cal = int(fraction * n_rows)
    for row in range(n_cal, n_rows):  # move the test weights' sum into [S/f - S, S/f - S + 1/f) for S the cal sum
        low = w[:n_cal].sum() * (1 / fraction - 1)
        if low <= w[n_cal:].sum() < low + 1 / fraction:
            return w
        w[row] = 3 if w[n_cal:].sum() < low else 0
    raise AssertionError("no aligned weights: draw more rows")


def _split_pair(folder) -> tuple[DataSources, Split]:
    """The weighted set and its repeated rows (weights aligned to the reassessing protocol's split), as a step
    reads them, and that split (configs/reassessing_protocol/paper.yaml)."""
    protocol = OmegaConf.load(own_sets.CONFIG_DIR / "reassessing_protocol" / "paper.yaml").split
    weighted, _ = _weighted_pair(folder)
    weights = _aligned_weights(N, protocol.fraction, np.random.default_rng(2))
    weighted = replace(weighted, weights=weights.astype(float))
    repeated = replace(weighted, scores=weighted.scores.repeat(weights, axis=0), labels=weighted.labels.repeat(weights),
                       weights=None)  # fmt: skip
    data = _materialized(folder / "data", ("weighted", weighted), ("repeated", repeated))
    return data, Split(mode=protocol.mode, fraction=protocol.fraction, seed=protocol.seed)


# baseline needs no fit; the others' weighted fits need branch i56-calibrators (fit(..., sample_weight=))
@pytest.mark.parametrize("method", ["baseline", "HB", "IR"])
def test_reliability_weighs_the_rows_as_repeating_them_would(tmp_path, method):
    data, split = _split_pair(tmp_path)
    values = {
        name: pd.DataFrame(
            reliability_comparison(
                Protocol(kind="reliability_comparison", split=split, methods=[method], n_bins=15, set=f"own/{name}"),
                data,
            )
        )
        for name in ("weighted", "repeated")
    }
    assert _takes_weights("reliability")
    pd.testing.assert_frame_equal(values["weighted"], values["repeated"], rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("method", ["baseline", "TS", "HB", "IR", "MRR"])
def test_the_reassessing_table_weighs_the_rows_as_repeating_them_would(tmp_path, method):
    data, split = _split_pair(tmp_path)
    values = {
        name: pd.DataFrame(
            recalibration_table(
                RecalibrationTable(
                    kind="recalibration_table", split=split, methods=[method], n_bins=15, set=f"own/{name}"
                ),
                data,
            )
        )
        for name in ("weighted", "repeated")
    }
    assert _takes_weights("reassessing_table")
    # TS's L-BFGS fit stops at its gradient tolerance on either data: measured 2e-7 apart (with i56-calibrators)
    pd.testing.assert_frame_equal(values["weighted"], values["repeated"], rtol=1e-6, atol=1e-12)


def test_a_random_split_carries_each_rows_weight_with_it():
    """split_weights indexes the weights by split_set's rows: a row's weight is its own index here."""
    q = np.random.default_rng(3).dirichlet([1.0, 1.0], N)
    pset = PosteriorSet("rows", q, np.arange(N) % 2, "probs", weights=np.arange(N, dtype=float))
    split = Split(mode="random", fraction=0.2, seed=5)
    (cal, _), (test, _) = split_set(pset, split)
    cal_weights, test_weights = split_weights(pset, split)
    assert np.allclose(np.exp(cal), q[cal_weights.astype(int)])
    assert np.allclose(np.exp(test), q[test_weights.astype(int)])
    assert split_weights(replace(pset, weights=None), split) == (None, None)


def test_a_sweep_over_a_weighted_set_is_refused_in_one_line():
    class Data:
        def real(self, name):
            probs = np.array([[0.2, 0.8], [0.6, 0.4], [0.5, 0.5]])
            return PosteriorSet(name, probs, np.array([1, 0, 1]), kind="probs", weights=np.array([1.0, 2.0, 0.5]))

    with pytest.raises(ConfigError) as error:
        ece_binning(BinnedOnRealSets(kind="ece_binning", sets=["own/mine"], n_bins=5), Data())
    assert "\n" not in str(error.value) and "own/mine has sample weights" in str(error.value)
