"""The cached experiment list: identical to a fresh composition, rebuilt when configs change or the cache is bad."""

from __future__ import annotations

import shutil

import pytest

from pipeline import targets


@pytest.fixture
def composed(monkeypatch, tmp_path):
    """The real experiment list, with composition counted and the cache moved to a temporary folder."""
    real = targets.experiments()
    calls = []
    monkeypatch.setattr(targets, "composed_experiments", lambda: calls.append(1) or list(real))
    monkeypatch.setattr(targets, "CACHE_DIR", tmp_path / "cache")
    return real, calls


def test_cache_round_trips_every_experiment_exactly(composed):
    real, calls = composed
    assert targets.experiments() == real and len(calls) == 1
    assert targets.experiments() == real and len(calls) == 1  # second call reads the cache
    assert len(list(targets.CACHE_DIR.glob("experiments-*.json"))) == 1


@pytest.mark.parametrize("damage", ["truncate", "garbage", "wrong_fields"])
def test_a_damaged_cache_is_recomposed_not_trusted(composed, damage):
    real, calls = composed
    targets.experiments()
    (path,) = targets.CACHE_DIR.glob("experiments-*.json")
    text = path.read_text()
    path.write_text({"truncate": text[: len(text) // 2], "garbage": "\0\1", "wrong_fields": '[{"nom": 1}]'}[damage])
    assert targets.experiments() == real and len(calls) == 2
    assert path.read_text() == text  # rewritten whole


def test_editing_any_config_file_changes_the_key(monkeypatch, tmp_path):
    configs = tmp_path / "configs"
    shutil.copytree(targets.CONFIG_DIR, configs)
    monkeypatch.setattr(targets, "CONFIG_DIR", configs)
    before = targets._list_key()
    with (configs / "metric_options" / "calib_defaults.yaml").open("a") as file:
        file.write("# edited\n")
    assert targets._list_key() != before


def test_the_cached_list_equals_a_fresh_composition():
    assert targets.experiments() == targets.composed_experiments()
