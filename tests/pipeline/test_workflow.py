"""End to end: the Snakemake workflow builds every paper's artifacts and reproduces their numbers.

One complete build serves every test here: the one ``CALIB_TEST_BUILD`` names (CI's own
``snakemake --cores 2``, brought up to date), else a new one in a temporary folder (about 3½
minutes on 2 cores). The real posterior sets come from the default mirror, ../shared/real_posteriors. The
tests that change files work on copies, except the second-run test, which deletes one figure and
rebuilds it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support import BUILD_STEP_RULES, artifact_rules, given_build
from upstream_server import closed_port_url

from pipeline.claims import REASSESSING
from pipeline.job_costs import JOBSTEP_MB, costs_from_benchmarks, rule_memory_mb
from pipeline.kinds import Parameters
from pipeline.references import half_unit, published_cells
from pipeline.statuses import STATUSES, VERDICTS
from pipeline.targets import experiments

ROOT = Path(__file__).resolve().parents[2]
# These tests run in one pytest-xdist worker, one after the other: runs of the same job would share its log
# and benchmark files under logs/. (The crash-safety tests, in another worker, build ferrer2024_fig8 only,
# which no test here rebuilds.)
pytestmark = pytest.mark.xdist_group("workflow")


def _typed() -> list[Parameters]:
    """Every listed experiment's typed parameters, as the report compares them."""
    return [e.parameters for e in experiments()]


def _snakemake(results: Path, *extra: str, mirror: str | None = None, expect_ok: bool = True) -> str:
    """A build; with ``mirror``, from that mirror, and offline: the upstream a closed port on the loopback."""
    cmd = ["snakemake", "--cores", "2", *extra, "--config", f"results={results}"]
    env = {**os.environ, "CALIB_REAL_DATA": mirror, "CALIB_REAL_DATA_URL": closed_port_url()} if mirror else None
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False, env=env)
    assert (done.returncode == 0) == expect_ok, done.stderr[-3000:]
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    out = given_build() or tmp_path_factory.mktemp("results")
    _snakemake(out)
    return out


# Per paper, how many published numbers have each status (each counted once). A change to any of
# these is a change to what the project claims: the README states them (test_readme_states_the_summary).
EXPECTED_SUMMARY = {
    #                   published pass deviation fail input informational not-run-here not-reproducible
    "ferrer2024": (558, 513, 10, 0, 0, 0, 35, 0),
    "silvafilho2023": (130, 120, 1, 0, 0, 9, 0, 0),
    "reassessing": (180, 0, 0, 0, 12, 24, 144, 0),
    "vaicenavicius2019": (99, 3, 0, 0, 0, 0, 0, 96),
    "ecd2025": (180, 9, 0, 51, 2, 43, 0, 75),
    "dimitriadis2021": (0, 0, 0, 0, 0, 0, 0, 0),  # beyond the papers: nothing published to compare
}


def test_reproduction_summary(results):
    summary = pd.read_csv(results / "reproduction_summary.csv").set_index("paper")
    assert list(summary.columns) == ["published", *STATUSES]
    assert {paper: tuple(row) for paper, row in summary.iterrows()} == EXPECTED_SUMMARY
    report = pd.read_csv(results / "reproduction.csv")
    assert set(report.status) <= set(STATUSES)
    assert set(report.reading[report.status.isin(VERDICTS)]) == {"primary"}  # second readings are never verdicts


def test_readme_states_the_summary(results):
    """Every reproduction figure the README states is the build's, so README and report cannot drift apart."""
    readme = (ROOT / "README.md").read_text()
    summary = pd.read_csv(results / "reproduction_summary.csv").set_index("paper")
    stated = re.findall(r"^\| (\w+) \|" + r" (\d+) \|" * 8 + "$", readme, re.M)
    assert {paper: tuple(map(int, counts)) for paper, *counts in stated} == {
        paper: tuple(row) for paper, row in summary.iterrows()
    }
    report = pd.read_csv(results / "reproduction.csv")
    primary = report[report.reading == "primary"]
    deviations = primary[primary.status == "deviation"]
    calh = primary[primary.row.str.endswith(" calh")]
    said = re.search(r"passes (\d+) of the (\d+) calh cells.*?\((\w+) deviations\)\. (\w+) more", readme, re.DOTALL)
    words = {"four": 4, "six": 6}
    assert (int(said.group(1)), int(said.group(2))) == ((calh.status == "pass").sum(), calh.status.isin(VERDICTS).sum())
    assert words[said.group(3)] == (calh.status == "deviation").sum()
    ferrer = deviations[(deviations.paper == "ferrer2024") & ~deviations.row.str.endswith(" calh")]
    assert words[said.group(4).lower()] == len(ferrer)
    logit = primary[(primary.artifact == "table1_logit") & (primary.status == "fail")]
    assert int(re.search(r"misses (\d+) of 99\s+cells", readme).group(1)) == len(logit)
    held, total = map(int, re.search(r"holds\s+in full on (\d+) of our (\d+) tables", readme).groups())
    claims = pd.read_csv(results / "claims.csv").query("paper == 'reassessing'")
    per_table = claims.groupby("artifact").holds.apply(lambda h: (h == "yes").all())
    assert (held, total) == (int(per_table.sum()), len(per_table))


def test_each_published_number_is_counted_once(results):
    report = pd.read_csv(results / "reproduction.csv", keep_default_na=False, na_values=[""])
    primary = report[report.reading == "primary"]
    published = {}
    for exp in _typed():
        if exp.reference is not None and exp.reference.reading == "primary":
            cells = published_cells(exp.reference, ROOT / "configs" / "reference")
            for cell in cells.itertuples(index=False):
                key = (exp.reference.file, cell.row, cell.column)
                assert key not in published, f"{key} is read by two primary readings"
                published[key] = (exp.paper, exp.artifact)
    # every cell of a primary reading has one line: counted (primary), a repeat or a number not printed
    listed = report[(report.reading == "primary") | report.reading.str.startswith("repeat of ")]
    listed = pd.concat([listed, report[report.reading == "not printed"]])
    assert len(listed) == len(published)
    assert not listed.duplicated(["paper", "artifact", "row", "column"]).any()
    # a number the paper prints twice is counted at the place its repeat names, with the same printed value
    repeats = report[report.reading.str.startswith("repeat of ")]
    assert len(repeats) >= 4 and (repeats.status == "informational").all()
    for line in repeats.itertuples(index=False):
        experiment, cell = line.reading.removeprefix("repeat of ").split(" ", 1)
        row, column = cell.split(" / ")
        paper, artifact = experiment.split("_", 1)
        counted = primary[(primary.paper == paper) & (primary.artifact == artifact) & (primary.row == row)]
        assert counted[counted.column == column].published.tolist() == [line.published], line
    # numbers the paper does not print are listed, never counted
    assert (report[report.reading == "not printed"].status == "informational").all()


def test_every_computed_cell_shows_ours_and_every_miss_its_cause(results):
    report = pd.read_csv(results / "reproduction.csv", keep_default_na=False, na_values=[""])
    for status in ("pass", "deviation", "fail", "informational"):
        lines = report[report.status == status]
        # ours is written whenever we computed it (NaN only where the paper prints nan too)
        assert (lines.ours.notna() | lines.published.isna()).all() or status == "fail", status
    for status in ("deviation", "fail", "input", "informational", "not-run-here", "not-reproducible"):
        assert (report[report.status == status].cause.fillna("") != "").all(), status
    misses = pd.read_csv(results / "reproduction_misses.csv")
    assert len(misses) == (report[report.reading == "primary"].status.isin(["deviation", "fail"])).sum()
    markdown = (results / "report.md").read_text()
    assert "## Deviations and fails" in markdown
    for line in misses.itertuples(index=False):
        assert line.cause[:60] in markdown


def test_no_deterministic_cell_passes_beyond_half_a_unit_of_its_printed_digit(results):
    report = pd.read_csv(results / "reproduction.csv", keep_default_na=False, na_values=[""])
    judged = report[report.status.isin(VERDICTS)]
    assert (judged.tolerance_basis.fillna("") != "").all()
    for exp in _typed():
        if exp.reference is None:
            continue
        printed = {
            (c.row, c.column): half_unit(c.printed)
            for c in published_cells(exp.reference, ROOT / "configs" / "reference").itertuples(index=False)
        }
        mine = judged[(judged.paper == exp.paper) & (judged.artifact == exp.artifact)]
        for line in mine.itertuples(index=False):
            extra = ("sd over seeds", "inputs' rounding", "exactly")
            if not any(word in line.tolerance_basis for word in extra):
                assert line.tolerance == pytest.approx(printed[(line.row, line.column)], rel=1e-9), line
            else:
                assert line.tolerance >= printed[(line.row, line.column)] or "exactly" in line.tolerance_basis


def test_table2_acceptance(results):
    report = pd.read_csv(results / "reproduction.csv").query("paper == 'ferrer2024' and artifact == 'table2'")
    sitw = report[report.row.str.startswith("SITW")]
    assert len(sitw) == 35 and (sitw.status == "not-run-here").all() and sitw.cause.str.contains("recipe").all()
    calh = report[report.row.str.endswith("calh") & ~report.row.str.startswith("SITW")]
    # the authors' folds (seed 0), judged at half a unit of the printed digit; the misses are the float32 ties
    # their code, rerun as written (recorded), lands on
    assert len(calh) == 49 and calh.status.value_counts().to_dict() == {"pass": 43, "deviation": 6}
    assert calh.tolerance_basis.str.startswith("half a unit of the printed digit").all()
    assert calh[calh.status == "deviation"].cause.str.contains("ferrer2024_table2_calh_rerun.csv").all()
    deviations = report[(report.status == "deviation") & ~report.row.str.endswith("calh")]
    assert set(zip(deviations.row, deviations.column, strict=True)) == {
        ("FVCAUS XvPLDA cal", "RCL-CE-Dxv"),
        ("FVCAUS XvPLDA calp", "RCL-CE-Dxv"),
        ("CIFAR100 Vgg19 cal", "ECEmc"),
    }
    assert deviations.cause.str.contains("the upstream rerun gives").all()
    table = (results / "ferrer2024" / "table2.md").read_text()
    assert re.search(r"SITW XvPLDA\s+\| -", table) and "not reproducible: scores missing upstream" in table
    summary = pd.read_csv(results / "ferrer2024" / "table3.csv").set_index("dataset")
    assert summary.loc["FVCAUS XvPLDA", "samples"] == "114072"
    assert summary.loc["CIFAR-1vsO Resnet-20", "priors"] == "0.99, 0.01"


def test_table1_true_and_tt_rows_match_exactly(results):
    # The true and *tt rows do not depend on folds; the xv rows use the authors' replayed folds.
    report = pd.read_csv(results / "reproduction.csv").query("paper == 'ferrer2024' and artifact == 'table1'")
    exact = report[~report.row.str.endswith("xv")]
    assert len(exact) == 4 * 12  # true, affcaltt, temcaltt, hiscaltt
    assert (exact.difference.abs() < 0.5).all() and (report.status == "pass").all()
    assert (report.tolerance == 0.5).all()  # printed as integers


def test_fig6_to_the_printed_digit(results):
    report = pd.read_csv(results / "reproduction.csv").query("paper == 'ferrer2024' and artifact == 'fig6'")
    overall = report[report.column.isin(["NRisk-01", "NRisk-01r", "NRisk-imb", "NCE", "NBS"])]
    assert len(overall) == 20 and (overall.tolerance == 0.00005).all()
    # the NRisk and NCE cells were never printed (a re-run of the authors' code): listed, not counted
    unprinted = overall[overall.reading == "not printed"]
    assert len(unprinted) == 16 and unprinted.cause.str.endswith("; pass").all()
    assert report.status.value_counts().to_dict() == {"pass": 23, "informational": 16, "deviation": 1}


def test_every_artifact_is_written(results):
    for fig in ("fig1", "fig4", "fig5", "fig6", "fig7", "fig8"):
        for suffix in (".pdf", ".png", "_values.csv"):
            assert (results / "ferrer2024" / f"{fig}{suffix}").stat().st_size > 0
    for n in (1, 2, 6, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21):
        assert (results / "silvafilho2023" / f"fig{n}.png").stat().st_size > 0
    for n in range(1, 9):
        assert (results / "silvafilho2023" / f"table{n}.md").stat().st_size > 0
    table = pd.read_csv(results / "ferrer2024" / "table1.csv")
    assert list(table.reference) == ["true", "affcaltt", "affcalxv", "temcaltt", "temcalxv", "hiscaltt", "hiscalxv"]
    assert "\\begin{tabular}" in (results / "ferrer2024" / "table1.tex").read_text()
    assert "## ferrer2024" in (results / "report.md").read_text()


def test_each_rules_memory_request_is_right_for_what_its_jobs_measured(results):
    """Every job of the build (Snakemake's benchmark records, logs/benchmarks/) peaked within its rule's mem_mb
    less what a cluster job adds (JOBSTEP_MB), and no rule asks for more than twice what it needs: the table
    pipeline/rules/job_costs.tsv still describes the code. (Records of rules the workflow no longer has are left
    out.)"""
    rules = artifact_rules() | BUILD_STEP_RULES
    measured = costs_from_benchmarks(ROOT / "logs" / "benchmarks")
    peaks = {rule: cost.peak_mb for rule, cost in measured.items() if rule in rules}
    assert {"simulate", "fetch", "report", "artifacts_ferrer2024", "artifact_ferrer2024_table2"} <= set(peaks)
    for rule, peak in peaks.items():
        need = peak + JOBSTEP_MB
        assert need <= rule_memory_mb(rule) <= 2 * need, (rule, peak, rule_memory_mb(rule))


def test_held_out_and_zoo_tables_are_written(results):
    shift = pd.read_csv(results / "ferrer2024" / "heldout_cifar10.csv")
    assert list(shift.calibrator) == ["raw", "affine (DP)", "temperature"]  # H and P are binary only
    assert {"tst NCE held-out", "tst_p RCL xv"} <= set(shift.columns)
    for dataset in ("breast_cancer", "digits", "iris", "wine"):
        zoo = pd.read_csv(results / "ferrer2024" / f"zoo_{dataset}.csv")
        assert len(set(zoo.system)) == 7
    report = (results / "report.md").read_text()
    assert "### zoo_wine" in report and "No published numbers: this table is ours." in report


def test_without_the_mirror_the_rest_builds_and_the_report_says_how(results, tmp_path):
    offline = tmp_path / "offline"
    shutil.copytree(results, offline)
    for family in ("ferrer2024", "psrcal_splits", "netcal"):  # every published set (the zoo is made offline)
        shutil.rmtree(offline / "data" / "real" / family)
    for name in ("table2", "table3", "heldout_cifar10"):
        for path in (offline / "ferrer2024").glob(f"{name}*"):
            path.unlink()
    (offline / "report.md").unlink()
    log = _snakemake(offline, mirror=str(tmp_path / "no-such-mirror"))
    skipped = re.search(r"so these artifacts are skipped: (.*?)\. To build them", log).group(1).split(", ")
    assert "ferrer2024/heldout_cifar10" in skipped and "ecd2025/table2_adrenal" in skipped
    assert "CALIB_REAL_DATA" in log
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", log, flags=re.MULTILINE))
    assert set(jobs) <= {"all", "report", "total"}, jobs
    report = (offline / "report.md").read_text()
    assert "Not built: the real posterior sets ['ferrer2024/adrenalmnist_resnet50'" in report
    assert "real_data.download: auto (the default) or true" in report
    assert (offline / "ferrer2024" / "zoo_wine.md").exists()


def test_an_altered_mirror_file_stops_the_fetch_with_a_clear_message(tmp_path):
    mirror = tmp_path / "mirror"
    source = ROOT.parent / "shared" / "real_posteriors" / "ferrer2024" / "sst2_gpt2"
    shutil.copytree(source, mirror / "ferrer2024" / "sst2_gpt2")
    scores = mirror / "ferrer2024" / "sst2_gpt2" / "scores.npy"
    data = bytearray(scores.read_bytes())
    data[-1] ^= 0xFF
    scores.write_bytes(bytes(data))
    target = tmp_path / "results" / "data" / "real" / "ferrer2024" / "sst2_gpt2.npz"
    log = _snakemake(tmp_path / "results", str(target), mirror=str(mirror), expect_ok=False)
    assert "ferrer2024/sst2_gpt2/scores.npy) is altered" in log and "fresh copy" in log
    assert not target.exists()
    assert not target.parent.exists() or not list(target.parent.iterdir())  # no temporary file left either


def _claims(results: Path) -> pd.DataFrame:
    return pd.read_csv(results / "claims.csv")


def test_survey_and_vaicenavicius_claims_hold_on_our_data(results):
    claims = _claims(results)
    for paper, count in (("silvafilho2023", 13), ("vaicenavicius2019", 3)):
        mine = claims[claims.paper == paper]
        assert len(mine) == count, paper
        assert (mine.holds == "yes").all(), mine[mine.holds != "yes"].to_string()
    report = (results / "report.md").read_text()
    assert "## The papers' claims on our data" in report and "Theorem 2" in report


# Where paper 002's Sect. 6.8 claims do not hold on our models (the paper saw them hold on its six):
# a finding, kept exact so that any change shows up. Claim numbers follow notes/002 Sec. 6.8.
PATTERN_EXCEPTIONS = {
    "cifar100_vgg19": {5},
    "cifar10_resnet50": {5},
    "cifar10_vgg19": {3},
    "netcal_lenet5_cifar100": {2, 3},
    "netcal_lenet5_cifar10": {2, 4, 8},
    "netcal_wrn_cifar10": {2, 3},
    "zoo_digits_logistic": {3, 6, 7},
    "zoo_digits_mlp": {1, 3, 6, 7},
    "zoo_digits_random_forest": {5, 6},
    "synthetic_overconfident": {2, 4, 5, 6, 8},
    "synthetic_underconfident": {4, 6},
}


def test_reassessing_tables_show_the_papers_pattern(results):
    tables = sorted((results / "reassessing").glob("table_*_values.csv"))
    assert len(tables) == 17
    for path in tables:
        t = pd.read_csv(path).pivot(index="row", columns="column", values="value")
        mrr = t.loc["MRR"]
        # by construction: MRR's one confidence value makes ECE = ACE = smooth ECE = |a - h|, and TS, MRR
        # and the baseline keep the argmax
        assert mrr["ACE"] == pytest.approx(mrr["ECE"], abs=1e-12)
        assert mrr["SmoothECE"] == pytest.approx(mrr["ECE"], abs=1e-6)
        assert t.loc["TS", "accuracy"] == t.loc["baseline", "accuracy"] == mrr["accuracy"], path.name
    claims = _claims(results)
    claims = claims[claims.paper == "reassessing"]
    assert len(claims) == 17 * 8
    failed = {}
    for line in claims[claims.holds == "no"].itertuples(index=False):
        number = [text for text, _ in REASSESSING].index(line.claim) + 1
        failed.setdefault(line.artifact.removeprefix("table_"), set()).add(number)
    assert failed == PATTERN_EXCEPTIONS
    held_everywhere = 17 - len(PATTERN_EXCEPTIONS)
    assert held_everywhere == 6  # "the pattern holds in full on 6 of our 17 tables" (README)


def test_temperature_scaling_recovers_the_synthetic_scale(results):
    # notes/002 Sec. 6.10: model logits = scale * true logits; TS must find 1 / scale. With 4000
    # calibration samples the fitted scale's sd is about 2 % (0.5 % at 50000): tolerance 4 %.
    for name, scale in (("overconfident", 2.0), ("underconfident", 0.5)):
        values = pd.read_csv(results / "reassessing" / f"table_synthetic_{name}_values.csv")
        fitted = values[(values.row == "TS") & (values.column == "fitted scale")].value.iloc[0]
        assert fitted * scale == pytest.approx(1.0, abs=0.04), name


def test_reassessing_mrr_rows_are_a_consistency_check_that_holds(results):
    report = pd.read_csv(results / "reproduction.csv").query("paper == 'reassessing'")
    checked = report[report.status == "informational"]
    assert len(checked) == 24 and set(checked.row) == {"MRR"}
    assert set(checked.column) == {"NLL", "Brier", "ACE", "SmoothECE"}
    assert checked.cause.str.endswith("(within tolerance)").all()
    assert checked.tolerance_basis.str.contains("inputs' rounding").all()
    assert set(report.status) == {"informational", "input", "not-run-here"}


def test_fig8_intervals_bracket_plausible_values(results):
    values = pd.read_csv(results / "ferrer2024" / "fig8_values.csv")
    assert (values.ci_low <= values.ci_high).all()
    nbs = values.query("column == 'NBS'")
    assert ((nbs.ci_low <= nbs.value) & (nbs.value <= nbs.ci_high)).all()


def _ecd_values(results: Path, artifact: str) -> pd.DataFrame:
    return pd.read_csv(results / "ecd2025" / f"{artifact}_values.csv")


def test_ecd_table1_primary_reading_misses_are_fails_the_fitted_reading_does_not_explain(results):
    report = pd.read_csv(results / "reproduction.csv")
    ecd = report[report.paper == "ecd2025"]
    second = ecd[ecd.artifact == "table1"]
    assert (second.status == "informational").all() and (second.reading != "primary").all()
    assert second.cause.str.contains("; pass").all()  # every cell within 3 sd in the probability-noise reading
    logit = ecd[ecd.artifact == "table1_logit"].set_index(["row", "column"])
    assert logit.status.value_counts().to_dict() == {"fail": 51, "informational": 39, "pass": 9}
    fails = logit[logit.status == "fail"]
    assert fails.cause.str.contains("were fitted to these cells").all()  # the fitted reading is no evidence
    no_power = logit[logit.status == "informational"]
    assert no_power.cause.str.startswith("no power").all() and (no_power.tolerance >= no_power.published.abs()).all()
    for column in ("sigma=0.5 ECD", "sigma=2 ECD", "sigma=0.5 ECE"):
        cell = logit.loc[("Weighted Sum", column)]
        assert cell.status == "fail" and cell.ours < 0.2 * cell.published
    table2 = ecd[ecd.artifact == "table2"]
    assert table2.status.value_counts().to_dict() == {"not-reproducible": 75, "informational": 4, "input": 2}
    assert table2[table2.status == "informational"].cause.str.endswith("(within tolerance)").all()


def test_expected_ecd_against_temperature(results):
    # 0 at T = 1, over-confident (> 0) below, under-confident (< 0) above with a minimum near T = 3,
    # and back towards 0 as T grows (the branch the paper does not mention).
    curve = _ecd_values(results, "temperature_sweep")
    curve = curve[curve.row == "population"].set_index("x").value
    assert abs(float(np.interp(0.0, np.log(curve.index), curve.to_numpy()))) < 1e-3
    assert (curve[curve.index < 0.99] > 0).all() and (curve[curve.index > 1.01] < 0).all()
    assert 2.0 < curve.idxmin() < 5.0 and abs(curve.iloc[-1]) < 0.01


def test_low_ece_is_not_safe_and_recalibration_fixes_it(results):
    # The paper's point on our Gaussian naive Bayes: raw ECE is small but ECD is large (over-confident
    # errors); DP under cross-validation brings ECD to near 0.
    table = _ecd_values(results, "table2_zoo_breast_cancer_gaussian_nb")
    weighted = table[table.row == "Weighted Sum"].set_index("column").value
    assert weighted["raw ECE"] < 0.1 and weighted["raw ECD"] > 0.5
    assert abs(weighted["DP-xv ECD"]) < 0.1


def test_html_report_has_every_artifact_with_its_caption(results, tmp_path):
    html = tmp_path / "report.html"
    done = subprocess.run(
        ["snakemake", "--report", str(html), "--config", f"results={results}"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    text = html.read_text()
    assert "Reproduction summary" in text and "reproduction_summary.csv" in text
    for artifact in ("vaicenavicius2019/fig14.png", "ecd2025/table1.csv", "ferrer2024/fig6.png"):
        assert artifact in text, artifact


def test_second_run_has_nothing_to_do_and_one_deleted_figure_rebuilds_alone(results):
    # The job of ferrer2024's cheap artifacts rebuilds them; no other artifact job and no dataset reruns.
    assert "Nothing to be done" in _snakemake(results)
    (results / "ferrer2024" / "fig5.png").unlink()
    log = _snakemake(results)
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", log, flags=re.MULTILINE))
    assert [rule for rule in jobs if rule.startswith("artifact")] == ["artifacts_ferrer2024"]
    assert jobs["artifacts_ferrer2024"] == "1" and "simulate" not in jobs and "fetch" not in jobs
    assert (results / "ferrer2024" / "fig5.png").exists()


def test_same_command_gives_same_bytes(results, tmp_path):
    again = tmp_path / "again"
    shutil.copytree(results / "data", again / "data")
    cmd = ["python", "-m", "pipeline.steps.evaluate", "experiment=ferrer2024_fig8", f"paths.results={again}"]
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
    name = "ferrer2024/fig8_values.csv"
    assert (again / name).read_bytes() == (results / name).read_bytes()


# Artifacts with resampling, calibrator fits, real sets and figures, rebuilt from scratch and compared byte
# for byte: jobs of their own (a resampled null, consistency resamples with partition refits on a real set,
# MCB tests on the real sets) and the job of ferrer2024's cheap artifacts (calibrator fits, figures).
# ferrer2024/fig8's bootstrap is the crash-safety tests' to rebuild.
REBUILT = [
    "ferrer2024/fig7",
    "silvafilho2023/fig21",
    "vaicenavicius2019/tables_resnet20_ts",
    "dimitriadis2021/decompositions",
]


@pytest.mark.parametrize("cores", ["1", "2"])
def test_rebuilding_gives_the_same_bytes_under_one_or_two_cores(results, tmp_path, cores):
    """The full build ran with --cores 2; these artifacts, rebuilt in a copy with --cores 1 (and again with 2),
    must be byte-identical: tables, value CSVs and figures (which carry no timestamps)."""
    copy = tmp_path / "copy"
    shutil.copytree(results, copy, symlinks=True)
    files = [f for key in REBUILT for f in sorted((results / key).parent.glob(f"{Path(key).name}[._]*"))]
    assert len(files) >= 3 * len(REBUILT)
    for file in files:
        (copy / file.relative_to(results)).unlink()
    _snakemake(copy, "--cores", cores, *(str(copy / f.relative_to(results)) for f in files))
    changed = [
        str(f.relative_to(results)) for f in files if (copy / f.relative_to(results)).read_bytes() != f.read_bytes()
    ]
    assert changed == []


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    command = re.search(r"Run the tests.*?```bash\n(.+?)\n```", readme, flags=re.DOTALL).group(1)
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert command in lines
    # ... inside a virtual environment made for the run, so only what pyproject.toml declares is installed,
    venv = next(i for i, line in enumerate(lines) if " -m venv " in line)
    activate = next(i for i, line in enumerate(lines) if line.startswith("source ") and "/bin/activate" in line)
    install = lines.index('pip install -e ".[test]"')
    # ... after a complete build whose folder the end-to-end tests are given to check
    build = next(i for i, line in enumerate(lines) if line.startswith("snakemake --cores 2 "))
    handed = next(i for i, line in enumerate(lines) if line.startswith("export CALIB_TEST_BUILD="))
    assert venv < activate < install < build < lines.index(command) and handed < build
    assert '--config results="$CALIB_TEST_BUILD"' in lines[build]
