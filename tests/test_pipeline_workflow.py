"""End to end: the Snakemake workflow builds paper 000's artifacts and reproduces its numbers.

One full build into a temporary results folder (about a minute on 2 cores) serves every test here.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent


def _snakemake(results: Path, *extra: str) -> str:
    cmd = ["snakemake", "--cores", "2", "--config", f"results={results}", *extra]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("results")
    _snakemake(out)
    return out


def test_every_published_number_is_reproduced(results):
    report = pd.read_csv(results / "reproduction.csv")
    assert list(report.columns) == [
        "paper",
        "artifact",
        "row",
        "column",
        "published",
        "ours",
        "difference",
        "tolerance",
        "status",
    ]
    assert set(report.artifact) == {"fig4", "fig6", "table1"}
    assert len(report) == 8 + 40 + 84
    assert (report.status == "pass").all(), report[report.status != "pass"].to_string()


def test_table1_true_and_tt_rows_match_exactly(results):
    # The acceptance: exact in the true and *tt rows (they do not depend on folds).
    report = pd.read_csv(results / "reproduction.csv").query("artifact == 'table1'")
    exact = report[~report.row.str.endswith("xv")]
    assert len(exact) == 4 * 12  # true, affcaltt, temcaltt, hiscaltt
    assert (exact.difference == 0).all()
    assert (report.difference.abs() <= 2).all()


def test_fig6_overall_metrics_within_0002(results):
    report = pd.read_csv(results / "reproduction.csv").query("artifact == 'fig6'")
    overall = report[report.column.isin(["NRisk-01", "NRisk-01r", "NRisk-imb", "NCE", "NBS"])]
    assert len(overall) == 20
    assert (overall.difference.abs() < 0.002).all()


def test_every_artifact_is_written(results):
    for fig in ("fig1", "fig4", "fig5", "fig6", "fig7", "fig8"):
        for suffix in (".pdf", ".png", "_values.csv"):
            assert (results / "ferrer2024" / f"{fig}{suffix}").stat().st_size > 0
    table = pd.read_csv(results / "ferrer2024" / "table1.csv")
    assert list(table.reference) == ["true", "affcaltt", "affcalxv", "temcaltt", "temcalxv", "hiscaltt", "hiscalxv"]
    assert "\\begin{tabular}" in (results / "ferrer2024" / "table1.tex").read_text()
    assert "## ferrer2024" in (results / "report.md").read_text()


def test_fig8_intervals_bracket_plausible_values(results):
    values = pd.read_csv(results / "ferrer2024" / "fig8_values.csv")
    assert (values.ci_low <= values.ci_high).all()
    nbs = values.query("column == 'NBS'")
    assert ((nbs.ci_low <= nbs.value) & (nbs.value <= nbs.ci_high)).all()


def test_second_run_has_nothing_to_do_and_one_deleted_figure_rebuilds_alone(results):
    assert "Nothing to be done" in _snakemake(results)
    (results / "ferrer2024" / "fig5.png").unlink()
    log = _snakemake(results)
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", log, flags=re.MULTILINE))
    assert jobs.get("render_figure") == "1"
    assert "evaluate" not in jobs and "simulate" not in jobs
    assert (results / "ferrer2024" / "fig5.png").exists()


def test_same_command_gives_same_bytes(results, tmp_path):
    again = tmp_path / "again"
    shutil.copytree(results / "data", again / "data")
    cmd = ["python", "-m", "pipeline.evaluate", "experiment=ferrer2024_fig8", f"paths.results={again}"]
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
    name = "ferrer2024/fig8_values.csv"
    assert (again / name).read_bytes() == (results / name).read_bytes()


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    command = re.search(r"Run the tests:\s*```bash\n(.+?)\n```", readme).group(1)
    assert command in (ROOT / ".ci" / "run").read_text().splitlines()
