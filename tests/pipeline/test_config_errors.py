"""Config errors stop a run before any work, naming the key and listing what is allowed."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf, open_dict

from pipeline import named_metrics
from pipeline.config import compose
from pipeline.papers.dimitriadis2021 import CorpRankings
from pipeline.parameters import ConfigError, Count, typed
from pipeline.root import typed_root
from pipeline.sweeps import load_sweep, sweep_names

ROOT = Path(__file__).resolve().parents[2]


def _experiment(name: str, **changes):
    """The composed root config of ``experiment=<name>`` with ``changes``, and its choices."""
    cfg, choices = compose([f"experiment={name}"])
    with open_dict(cfg):
        for key, value in changes.items():
            OmegaConf.update(cfg, key, value, force_add=True)
    return cfg, choices


def _error(composed) -> str:
    with pytest.raises(ConfigError) as caught:
        typed_root(*composed)
    return str(caught.value)


@pytest.mark.parametrize("name", sweep_names())
def test_every_shipped_sweep_passes(name):
    load_sweep(name)


def test_every_listed_metric_name_computes_and_others_do_not():
    rng = np.random.default_rng(0)
    logp = np.log(rng.dirichlet(np.ones(2), size=60))
    labels = np.arange(60) % 2
    options = named_metrics.MetricOptions(
        named_metrics.EceOptions(15, "right"), named_metrics.HistogramOptions(15, "identity"), 5, 0
    )
    for name in (*named_metrics.METRIC_NAMES, *named_metrics.RCL_NAMES):
        assert not np.isnan(named_metrics.compute(name, logp, labels, options)), name  # HB can give CE = inf
    with pytest.raises(ValueError, match="unknown metric name"):
        named_metrics.compute("RCL-CE-Xxv", logp, labels, options)


def test_an_unknown_experiment_key_is_named_with_the_allowed_keys_and_the_closest():
    text = _error(_experiment("ferrer2024_fig8", **{"experiment.n_bots": 10}))
    assert "experiment ferrer2024_fig8.n_bots: unknown key" in text
    assert "allowed: alpha, artifact, calibration" in text and "Did you mean 'n_boot'?" in text


def test_an_unknown_root_key_is_named():
    assert "config.reslts: unknown key" in _error(_experiment("ferrer2024_fig8", reslts="x"))


def test_an_unknown_kind_lists_the_kinds_of_its_paper():
    text = _error(_experiment("ferrer2024_fig8", **{"experiment.kind": "bootstrap_panel"}))
    assert "unknown experiment kind 'bootstrap_panel' of paper ferrer2024" in text
    assert "Did you mean 'bootstrap_panels'?" in text and "heldout_table" in text and "toy_diagrams" not in text


def test_a_kind_of_another_paper_is_refused():
    text = _error(_experiment("ferrer2024_fig8", **{"experiment.kind": "toy_diagrams"}))
    assert "unknown experiment kind 'toy_diagrams' of paper ferrer2024" in text


def test_an_unknown_paper_lists_the_papers():
    text = _error(_experiment("ferrer2024_fig8", **{"experiment.paper": "ferrer2042"}))
    assert (
        "experiment ferrer2024_fig8.paper: unknown paper 'ferrer2042'" in text and "Did you mean 'ferrer2024'?" in text
    )


def test_a_sweep_only_kind_is_refused_as_an_experiment():
    text = _error(_experiment("ecd2025_fig2", **{"experiment.kind": "ecd_temperature"}))
    assert "unknown experiment kind 'ecd_temperature' of paper ecd2025" in text


@pytest.mark.parametrize(
    ("name", "key", "value", "expected"),
    [
        ("ferrer2024_fig8", "experiment.calibration", ["RCL-BS-Dxx"], "ferrer2024_fig8.calibration[0]: 'RCL-BS-Dxx'"),
        ("ferrer2024_fig8", "experiment.overall", ["NBS", "NCEE"], "Did you mean 'NCE'?"),
        ("silvafilho2023_fig12", "experiment.calibrator", "isotonik", "Did you mean 'isotonic'?"),
        ("ferrer2024_fig8", "experiment.n_boot", 0, "ferrer2024_fig8.n_boot: must be an integer >= 1; got 0"),
        ("ferrer2024_fig8", "experiment.alpha", 1.5, "strictly between 0 and 1; got 1.5"),
        ("ferrer2024_fig8", "experiment.options.ece.n_bins", 0, "options.ece.n_bins: must be an integer >= 1"),
        ("ferrer2024_fig8", "experiment.options.n_folds", 1, "options.n_folds: must be an integer >= 2"),
        ("ferrer2024_fig8", "experiment.options.ece.closed", "rigth", "allowed: left, right"),
        ("ferrer2024_fig8", "experiment.options.histogram.n_bins", 2.5, "must be an integer >= 1; got 2.5"),
        ("ferrer2024_fig8", "experiment.datasets", ["ferrer2024_k2_n4000"], "Did you mean 'ferrer2024_k2_n400'?"),
        ("ferrer2024_fig8", "experiment.options.bins", 10, "options.bins: unknown key"),
        ("silvafilho2023_table4", "experiment.target", -1, "must be an integer >= 0 or confidence; got -1"),
        ("ecd2025_temperature_sweep", "experiment.temperatures.start", 0, "temperatures.start: must be a finite"),
        ("ecd2025_fig2", "experiment.grid.stop", 1.0, "grid.stop: must be a number strictly between 0 and 1"),
        ("ferrer2024_fig8", "experiment.n_boot", "???", "ferrer2024_fig8.n_boot: is ??? (a value to give)"),
        ("ferrer2024_fig8", "experiment.title", "${nowhere}", "experiment.title: cannot be resolved"),
        (
            "ferrer2024_table2",
            "experiment.options.rcl_zero_probability",
            "clip",
            "options.rcl_zero_probability: 'clip' is not a known name; allowed: nan, smooth",
        ),
    ],
)
def test_impossible_values_and_misspelled_names_are_rejected(name, key, value, expected):
    assert expected in _error(_experiment(name, **{key: value}))


def test_a_real_set_protocol_without_its_set_is_refused():
    cfg, choices = _experiment("reassessing_reliability_cifar100_resnet20")
    with open_dict(cfg):
        del cfg.experiment["set"]
    assert "reassessing_reliability_cifar100_resnet20.set: missing: this block needs it" in _error((cfg, choices))


def test_a_dataset_prior_outside_the_unit_interval_is_rejected():
    composed = compose(["dataset=ferrer2024_k2_n200", "dataset.prior1=1.0"])
    assert "dataset.prior1: must be a number strictly between 0 and 1; got 1.0" in _error(composed)


@pytest.mark.parametrize(
    ("name", "change", "expected"),
    [
        ("smooth_ece_bandwidth", {"grid.bandwidth": [0.05, -0.1]}, "grid.bandwidth[1]: must be a finite number > 0"),
        ("ece_bins", {"grid.n_bins": [0, 10]}, "grid.n_bins[0]: must be an integer >= 1; got 0"),
        ("gaussian_prior1", {"grid": {"generator.prior1": [0.5, 1.2]}}, "strictly between 0 and 1; got 1.2"),
        ("calibrator_protocol", {"grid.calibrator": ["dp", "plat"]}, "'plat' is not a known name; allowed: beta, d"),
        ("gaussian_variance", {"grid": {"generator.varience": [0.1]}}, "Did you mean 'generator.variance'?"),
        ("ece_bins", {"experiment.n_binz": 3}, "unknown key"),
    ],
)
def test_sweep_grids_are_checked_point_by_point(name, change, expected):
    cfg, choices = compose([f"sweep={name}"])
    with open_dict(cfg):
        for key, value in change.items():
            OmegaConf.update(cfg.sweep, key, value, merge=False, force_add=True)
    with pytest.raises(ConfigError, match="config error") as caught:
        typed_root(cfg, choices)
    assert expected in str(caught.value) and f"sweep {name}" in str(caught.value)


def test_a_step_stops_before_any_work_with_the_message(tmp_path):
    cmd = [sys.executable, "-m", "pipeline.steps.evaluate", "experiment=ferrer2024_fig8", "+experiment.n_binz=3"]
    done = subprocess.run([*cmd, f"paths.results={tmp_path}"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 1
    assert "config error at experiment ferrer2024_fig8.n_binz: unknown key" in done.stderr
    assert "Traceback" not in done.stderr and not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("patch", "expected"),
    [
        ({"tolerances": [{"tol": 0.1}]}, "reference.tolerances: unknown key"),
        ({"layout": "tall"}, "reference.layout: 'tall' is not a known name; allowed: long, wide"),
        ({"cells": [{"status": "pass", "cause": "looked fine"}]}, r"cells\[0\].status: not a status a config may"),
        ({"cells": [{"status": "input"}]}, r"cells\[0\].cause: every declared status"),
        ({"deviations": [{"cause": "c", "check": {"tolerance": 1}}]}, r"deviations\[0\].check: unknown check"),
        ({"reading": "second"}, "reading_cause: a second reading needs"),
    ],
)
def test_a_reference_block_is_checked(patch, expected):
    cfg, choices = compose(["experiment=ferrer2024_fig4"])
    with open_dict(cfg):
        cfg.experiment.reference.merge_with(OmegaConf.create(patch))
    with pytest.raises(ConfigError, match=expected):
        typed_root(cfg, choices)


def test_a_new_parameter_is_one_field_of_the_kinds_dataclass():
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class WithWidth(CorpRankings):
        width: Count = 3

    exp = compose(["experiment=dimitriadis2021_rankings"])[0].experiment
    assert typed(WithWidth, exp, "experiment").width == 3
    with open_dict(exp):
        exp.width = 5
    assert typed(WithWidth, exp, "experiment").width == 5
    exp.width = 0
    with pytest.raises(ConfigError, match=r"^config error at experiment.width: must be an integer >= 1; got 0$"):
        typed(WithWidth, exp, "experiment")
    with open_dict(exp):
        exp.widht = 4
    with pytest.raises(ConfigError, match=r"experiment.widht: unknown key; allowed: .*\. Did you mean 'width'\?$"):
        typed(WithWidth, exp, "experiment")
