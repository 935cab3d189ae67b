"""End to end: the Snakemake workflow builds paper 000's artifacts and reproduces its numbers.

One full build into a temporary results folder (about a minute and a half on 2 cores) serves every
test here; the real posterior sets come from the default mirror, ../shared/real_posteriors.
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

ROOT = Path(__file__).resolve().parent.parent


def _snakemake(results: Path, *extra: str, mirror: str | None = None, expect_ok: bool = True) -> str:
    cmd = ["snakemake", "--cores", "2", *extra, "--config", f"results={results}"]
    env = {**os.environ, "CALIB_REAL_DATA": mirror} if mirror else None
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False, env=env)
    assert (done.returncode == 0) == expect_ok, done.stderr[-3000:]
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
    ferrer = report[report.paper == "ferrer2024"]
    assert set(ferrer.artifact) == {"fig4", "fig6", "table1", "table2"}
    assert len(ferrer) == 8 + 40 + 84 + 442
    survey = report[report.paper == "silvafilho2023"]
    assert set(survey.artifact) == {"table1", "table2", "table4", "table5", "table6", "table7", "table8"} | {
        "ece_summary",
        "fig21",
    }
    judged = report[~report.status.str.startswith(("reported", "not-reproducible"))]
    assert (judged.status == "pass").all(), judged[judged.status != "pass"].to_string()
    assert set(report.status[report.status.str.startswith("not-reproducible")]) == {
        "not-reproducible: scores missing upstream",
        "not-reproducible: printed 75 is a typo: 11 / 15 = 73 %",
        "not-reproducible: the paper's logits are not available",
        "not-reproducible: an input of the closed form",
        "not-reproducible: an input of the closed form (ECE = ACE = SmoothECE = |a - h|)",
        "not-reproducible: the paper's models and test data are not identified",
        "not-reproducible: an input of the weighted-sum check",
    }


def test_table2_acceptance(results):
    # raw / calp to the printed precision, cal / calt within the tolerances (the config's rules);
    # calh reported only, except the inf / nan cells, which the paper-exact histogram policy reproduces.
    report = pd.read_csv(results / "reproduction.csv").query("paper == 'ferrer2024' and artifact == 'table2'")
    sitw = report[report.row.str.startswith("SITW")]
    assert len(sitw) == 35 and (sitw.status == "not-reproducible: scores missing upstream").all()
    calh = report[report.row.str.endswith("calh") & ~report.row.str.startswith("SITW")]
    nonfinite = calh[~pd.Series(calh.published).abs().lt(1e9)]
    assert len(nonfinite) == 9 and (nonfinite.status == "pass").all()
    assert (calh.drop(nonfinite.index).status == "reported").all()
    raw = report[report.row.str.endswith(" raw") & ~report.row.str.startswith("SITW")]
    assert (raw.difference.abs() <= raw.tolerance + 1e-9).all()
    assert (raw.query("column in ['NRisk-01', 'NRisk-01r', 'NRisk-imb', 'NCE']").tolerance == 0.0005).all()
    table = (results / "ferrer2024" / "table2.md").read_text()
    assert re.search(r"SITW XvPLDA\s+\| -", table) and "not reproducible: scores missing upstream" in table
    summary = pd.read_csv(results / "ferrer2024" / "table3.csv").set_index("dataset")
    assert summary.loc["FVCAUS XvPLDA", "samples"] == "114072"
    assert summary.loc["CIFAR-1vsO Resnet-20", "priors"] == "0.99, 0.01"


def test_table1_true_and_tt_rows_match_exactly(results):
    # The acceptance: exact in the true and *tt rows (they do not depend on folds).
    report = pd.read_csv(results / "reproduction.csv").query("paper == 'ferrer2024' and artifact == 'table1'")
    exact = report[~report.row.str.endswith("xv")]
    assert len(exact) == 4 * 12  # true, affcaltt, temcaltt, hiscaltt
    assert (exact.difference == 0).all()
    assert (report.difference.abs() <= 2).all()


def test_fig6_overall_metrics_within_0002(results):
    report = pd.read_csv(results / "reproduction.csv").query("paper == 'ferrer2024' and artifact == 'fig6'")
    overall = report[report.column.isin(["NRisk-01", "NRisk-01r", "NRisk-imb", "NCE", "NBS"])]
    assert len(overall) == 20
    assert (overall.difference.abs() < 0.002).all()


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
    shutil.rmtree(offline / "data" / "real" / "ferrer2024")
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
    assert "real_data.download: true" in report
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


def _survey_scalar(results: Path, fig: str, row: str, column: str) -> float:
    values = pd.read_csv(results / "silvafilho2023" / f"{fig}_values.csv")
    return float(values[(values.row == row) & (values.column == column)].value.iloc[0])


def test_survey_synthetic_figures_show_the_published_outcomes(results):
    # notes/001 Sec. 8.2, the measurable outcomes of Figs. 12-20
    assert 0.1 < _survey_scalar(results, "fig12", "under", "score min") < 0.15  # "barely outside [0.1, 0.9]"
    assert 0.85 < _survey_scalar(results, "fig12", "under", "score max") < 0.92
    for model in ("under", "over", "mlp"):  # binning: at most 10 output values, and it works on every model
        assert _survey_scalar(results, "fig13", model, "distinct outputs") <= 10
        assert _survey_scalar(results, "fig13", model, "ECE calibrated") < 0.02
        assert _survey_scalar(results, "fig14", model, "ECE calibrated") < 0.02  # isotonic works on all three
    platt = {m: _survey_scalar(results, "fig15", m, "ECE calibrated") for m in ("under", "over", "mlp")}
    beta = {m: _survey_scalar(results, "fig16", m, "ECE calibrated") for m in ("under", "over", "mlp")}
    assert platt["over"] > 0.5 * _survey_scalar(results, "fig15", "over", "ECE raw")  # Platt fails on over-confidence
    assert platt["mlp"] > _survey_scalar(results, "fig15", "mlp", "ECE raw")  # ... and makes the MLP worse
    assert beta["over"] < platt["over"]  # beta does better there
    assert abs(beta["under"] - beta["over"]) < 0.005  # after beta the two pseudo-models look alike
    for fig in ("fig17", "fig18", "fig19", "fig20"):  # every multiclass calibrator improves the MLP's log-loss
        assert _survey_scalar(results, fig, "all", "NLL calibrated") <= _survey_scalar(results, fig, "all", "NLL raw")
    # temperature scaling keeps the accuracy
    assert _survey_scalar(results, "fig17", "all", "accuracy calibrated") == _survey_scalar(
        results, "fig17", "all", "accuracy raw"
    )


def _reassessing_tables(results: Path) -> dict[str, pd.DataFrame]:
    tables = {}
    for path in sorted((results / "reassessing").glob("table_*_values.csv")):
        values = pd.read_csv(path)
        table = values.pivot(index="row", columns="column", values="value")
        tables[path.name] = table.drop(index="truth", errors="ignore").drop(columns="fitted scale", errors="ignore")
    return tables


# Where the paper's Sec. 6.8 claims do not hold on our models (the paper saw them hold on its six):
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


def _failed_claims(t: pd.DataFrame) -> set[int]:
    mrr, base, ts, hb, ir = (t.loc[m] for m in ("MRR", "baseline", "TS", "HB", "IR"))
    finite = t.NLL[np.isfinite(t.NLL)]
    holds = {
        1: all(mrr[c] <= t[c].min() + 1e-12 for c in ("ECE", "ACE", "SmoothECE")),
        2: hb["accuracy"] <= base["accuracy"] and ir["accuracy"] <= base["accuracy"],
        3: ts["NLL"] == t.NLL.min() and ts["Brier"] == t.Brier.min(),
        4: bool(np.isinf(hb["NLL"]) and np.isinf(ir["NLL"])),
        5: mrr["NLL"] == finite.max(),
        6: mrr["Brier"] == t.Brier.max(),
        7: ts["NLL"] < base["NLL"] and ts["Brier"] < base["Brier"],
        8: hb["ACE"] >= hb["ECE"],
    }
    return {claim for claim, ok in holds.items() if not ok}


def test_reassessing_tables_show_the_papers_pattern(results):
    tables = _reassessing_tables(results)
    assert len(tables) == 17
    for name, t in tables.items():
        mrr = t.loc["MRR"]
        # by construction: MRR's one confidence value makes ECE = ACE = smooth ECE = |a - h|, and TS, MRR
        # and the baseline keep the argmax
        ece, ace, smooth = mrr["ECE"], mrr["ACE"], mrr["SmoothECE"]
        assert ace == pytest.approx(ece, abs=1e-12) and smooth == pytest.approx(ece, abs=1e-6), name
        assert t.loc["TS", "accuracy"] == t.loc["baseline", "accuracy"] == mrr["accuracy"], name
        model = name.removeprefix("table_").removesuffix("_values.csv")
        assert _failed_claims(t) == PATTERN_EXCEPTIONS.get(model, set()), model


def test_temperature_scaling_recovers_the_synthetic_scale(results):
    # notes/002 Sec. 6.10: model logits = scale * true logits; TS must find 1 / scale. With 4000
    # calibration samples the fitted scale's sd is about 2 % (0.5 % at 50000): tolerance 4 %.
    for name, scale in (("overconfident", 2.0), ("underconfident", 0.5)):
        values = pd.read_csv(results / "reassessing" / f"table_synthetic_{name}_values.csv")
        fitted = values[(values.row == "TS") & (values.column == "fitted scale")].value.iloc[0]
        assert fitted * scale == pytest.approx(1.0, abs=0.04), name


def test_reassessing_published_mrr_rows_follow_their_closed_form(results):
    report = pd.read_csv(results / "reproduction.csv").query("paper == 'reassessing'")
    checked = report[report.status == "pass"]
    assert len(checked) == 12  # NLL and Brier of six tables
    assert set(checked.row) == {"MRR"} and (checked.difference.abs() <= 0.05).all()


def test_fig8_intervals_bracket_plausible_values(results):
    values = pd.read_csv(results / "ferrer2024" / "fig8_values.csv")
    assert (values.ci_low <= values.ci_high).all()
    nbs = values.query("column == 'NBS'")
    assert ((nbs.ci_low <= nbs.value) & (nbs.value <= nbs.ci_high)).all()


def _values(results: Path, artifact: str) -> pd.DataFrame:
    frame = pd.read_csv(results / "vaicenavicius2019" / f"{artifact}_values.csv")
    return frame[frame.x.isna()].pivot(index="row", columns="column", values="value")


def test_gaussian_mixture_eta_and_theorem_2(results):
    # eta by quadrature 0.5638 (paper: about 0.56); 10 equal bins converge below it (Theorem 2), 100 bins
    # match it at n = 10^6 (sampling sd about 5e-4, so 2e-3 is four sds).
    eta = _values(results, "gmm_eta").loc["uncalibrated"]
    assert abs(eta.eta_tv - 0.5638) < 5e-4
    assert eta.limit_10 < eta.eta_tv - 0.004 and abs(eta.estimate_10 - eta.limit_10) < 2e-3
    assert abs(eta.estimate_100 - eta.eta_tv) < 2e-3


MODELS_003 = ("resnet20", "vgg19", "repvgg_a2", "resnet50", "lenet5", "wrn16_4")


def test_equal_canonical_bins_inflate_the_diffuse_lenet(results):
    # The paper's reading of Tables 3-5 on our six CIFAR-10 models: under H0 the equal canonical grid
    # alone gives the diffuse LeNet-5 an eta_hat several times any sharper model's, and several times
    # its own data-dependent-bin value; the maximum lens does not show it.
    tables = {m: _values(results, f"tables_{m}") for m in MODELS_003}
    lenet = tables["lenet5"].loc["Canonical TV"]
    others = [tables[m].loc["Canonical TV", "equal_labels_null"] for m in MODELS_003 if m != "lenet5"]
    assert lenet.equal_labels_null > 5 * max(others)
    assert lenet.equal_labels_null > 5 * lenet.dd_labels_null
    assert tables["lenet5"].loc["Maximum TV", "equal_labels_null"] < 0.05


def test_consistency_tests_separate_raw_from_temperature_scaled(results):
    # Every raw model is rejected under the maximum lens; after temperature scaling ResNet-20 is not.
    for m in MODELS_003:
        assert _values(results, f"tables_{m}").loc["Maximum TV", ["equal_p", "dd_p"]].max() < 0.01
    scaled = _values(results, "tables_resnet20_ts").loc["Maximum TV"]
    assert min(scaled.equal_p, scaled.dd_p, scaled.equal_labels_p) > 0.05


def _ecd_values(results: Path, artifact: str) -> pd.DataFrame:
    return pd.read_csv(results / "ecd2025" / f"{artifact}_values.csv")


def test_ecd_table1_matches_in_one_reading_and_not_in_the_other(results):
    report = pd.read_csv(results / "reproduction.csv")
    ecd = report[report.paper == "ecd2025"]
    assert (ecd[ecd.artifact == "table1"].status == "pass").sum() == 99
    logit = ecd[ecd.artifact == "table1_logit"].set_index(["row", "column"])
    assert (logit.status[logit.index.get_level_values(1).str.startswith("eps=0")] == "pass").all()
    for column in ("sigma=0.5 ECD", "sigma=2 ECD", "sigma=0.5 ECE"):
        cell = logit.loc[("Weighted Sum", column)]
        assert cell.status == "reported" and cell.ours < 0.2 * cell.published
    table2 = ecd[ecd.artifact == "table2"]
    assert (table2.status == "pass").sum() == 9  # ResNet18 bins 7, 8 and the weighted sums
    assert (table2.status.eq("pass") | table2.status.str.startswith("not-reproducible")).all()


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
    # One `figure` job evaluates and renders the artifact; no other artifact, dataset or table reruns.
    assert "Nothing to be done" in _snakemake(results)
    (results / "ferrer2024" / "fig5.png").unlink()
    log = _snakemake(results)
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", log, flags=re.MULTILINE))
    assert jobs.get("figure") == "1"
    assert "table" not in jobs and "simulate" not in jobs
    assert (results / "ferrer2024" / "fig5.png").exists()


def test_same_command_gives_same_bytes(results, tmp_path):
    again = tmp_path / "again"
    shutil.copytree(results / "data", again / "data")
    cmd = ["python", "-m", "pipeline.evaluate", "experiment=ferrer2024_fig8", f"paths.results={again}"]
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
    name = "ferrer2024/fig8_values.csv"
    assert (again / name).read_bytes() == (results / name).read_bytes()


# Artifacts with resampling, calibrator fits, real sets and figures, rebuilt from scratch and compared byte for byte.
REBUILT = ["ferrer2024/fig8", "ferrer2024/fig7", "silvafilho2023/fig10", "vaicenavicius2019/table2", "ecd2025/table1"]


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
    command = re.search(r"Run the tests:\s*```bash\n(.+?)\n```", readme).group(1)
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert command in lines
    # ... inside a virtual environment made for the run, so only what pyproject.toml declares is installed
    venv = next(i for i, line in enumerate(lines) if " -m venv " in line)
    activate = next(i for i, line in enumerate(lines) if line.startswith("source ") and "/bin/activate" in line)
    assert venv < activate < lines.index(command)
