"""The experiment kinds: each paper module declares its own, every declared kind runs, every config finds its kind."""

from __future__ import annotations

from collections import Counter

import pytest
from omegaconf import OmegaConf

from pipeline.config import CONFIG_DIR, OWN_PROTOCOLS, compose, group_options
from pipeline.kinds import Kind, Parameters, paper_kinds, papers
from pipeline.sweeps import load_sweep, sweep_names

CONFIGURED = [OmegaConf.load(CONFIG_DIR / "experiment" / f"{name}.yaml") for name in group_options("experiment")]
# The protocols run on a user's own sets (configs/experiment/own/), as Hydra composes them.
PROTOCOLS = [compose([f"experiment=own/{p}"])[0].experiment for p in group_options(OWN_PROTOCOLS)]
SWEPT = [load_sweep(name).experiment for name in sweep_names()]


def test_the_paper_modules_are_the_papers_of_the_configs():
    assert papers() == sorted(compose()[0].papers)
    assert {exp.paper for exp in CONFIGURED} == set(papers())


@pytest.mark.parametrize("paper", [*papers(), None])
def test_a_paper_declares_each_kind_once_with_frozen_parameters(paper):
    module = paper_kinds(paper)
    names = [kind.name for kind in module.values()]
    assert all(isinstance(kind, Kind) for kind in module.values())
    for kind in module.values():
        assert issubclass(kind.parameters, Parameters) and kind.parameters.__dataclass_params__.frozen, kind.name
        assert kind.render is not None or not kind.is_table, kind.name  # a sweep point is never a table
    assert len(names) == len(set(names))


def test_kind_names_are_unique_across_papers():
    counts = Counter(name for paper in [*papers(), None] for name in paper_kinds(paper))
    assert [name for name, n in counts.items() if n > 1] == []


def test_every_declared_kind_is_run_by_a_config():
    run = {(exp.paper, exp.kind) for exp in [*CONFIGURED, *PROTOCOLS]}
    run |= {(exp.get("paper"), exp["kind"]) for exp in SWEPT}
    declared = {(paper, name) for paper in [*papers(), None] for name in paper_kinds(paper)}
    assert declared - run == set()
