# calib-repro workflow: `snakemake --cores 2` builds every configured paper artifact and the report.
# Targets come from configs/ (pipeline/targets.py); each rule runs one Hydra step (pipeline/steps/) that can
# also be run by hand.
# Each rule declares threads, memory (mem_mb) and runtime (minutes) for cluster profiles (profiles/).

import re
import sys
from pathlib import Path

from calib.data.registry import REAL_SETS
from calib.data.zoo import DATASETS as ZOO_DATASETS, MODELS as ZOO_MODELS, SPLITS as ZOO_SPLITS
from pipeline.config import compose_config
from pipeline.io import discard_corrupt, write_code_stamp
from pipeline.real_data import HOW_TO_PROVIDE, obtainable
from pipeline.sweeps import load_sweep, points, sweep_names
from pipeline.targets import experiments


configfile: "configs/workflow.yaml"


report: "pipeline/html/workflow.rst"


RESULTS = config["results"]
CODE = sorted(str(p) for p in Path(".").glob("calib/**/*.py")) + sorted(str(p) for p in Path(".").glob("pipeline/**/*.py"))
# One file stands for all the code: jobs depend on it rather than on ~80 modules each (fewer files for the
# scheduler to stat), and it records which code built the results.
CODE_STAMP = f"{RESULTS}/code.sha256"
SETTINGS = compose_config()
for corrupt in discard_corrupt(f"{RESULTS}/data") if workflow.is_main_process else ():  # rebuilt in this run
    print(f"calib-repro: {corrupt} failed its sha256 check (truncated or altered); rebuilding it", file=sys.stderr)
ALL_EXPERIMENTS = {f"{e.paper}/{e.artifact}": e for e in experiments()}
MISSING = {
    key: [s for s in e.real_sets if s in REAL_SETS and not obtainable(SETTINGS, s)] for key, e in ALL_EXPERIMENTS.items()
}
if any(MISSING.values()):
    print(
        "calib-repro: real posterior sets are not available, so these artifacts are skipped: "
        + ", ".join(key for key, sets in MISSING.items() if sets)
        + f". To build them, {HOW_TO_PROVIDE}.",
        file=sys.stderr,
    )
EXPERIMENTS = {key: e for key, e in ALL_EXPERIMENTS.items() if not MISSING[key]}
FIGURES = [key for key, e in EXPERIMENTS.items() if not e.is_table]
TABLES = [key for key, e in EXPERIMENTS.items() if e.is_table]
ARTIFACTS = [f"{RESULTS}/{key}{suffix}" for key, e in EXPERIMENTS.items() for suffix in e.suffixes]
PAPER_TITLES = dict(SETTINGS.papers)
CAPTION = "pipeline/html/artifact.rst"
FETCHABLE = [name for name, entry in REAL_SETS.items() if not entry.unavailable]
DATASETS = sorted(p.stem for p in Path("configs/dataset").glob("*.yaml"))
SWEEPS = {name: load_sweep(name) for name in sweep_names()}


wildcard_constraints:
    figure="|".join(FIGURES) or "^$",
    table="|".join(TABLES) or "^$",
    real_set="|".join(re.escape(name) for name in FETCHABLE),
    dataset="|".join(DATASETS),
    zoo_dataset="|".join(ZOO_DATASETS),
    sweep="|".join(SWEEPS) or "^$",
    point=r"\d+",


rule all:
    input:
        ARTIFACTS,
        f"{RESULTS}/report.md",
        f"{RESULTS}/reproduction.csv",
        f"{RESULTS}/reproduction_summary.csv",


rule code_stamp:
    input:
        CODE,
    output:
        CODE_STAMP,
    localrule: True
    log:
        "logs/code_stamp.log",
    threads: 1
    resources:
        mem_mb=200,
        runtime=1,
    run:
        write_code_stamp(input, output[0])


rule simulate:
    input:
        CODE_STAMP,
    output:
        f"{RESULTS}/data/{{dataset}}.npz",
    params:
        results=lambda wildcards, output: Path(output[0]).parents[1],
    log:
        "logs/simulate/{dataset}.log",
    benchmark:
        "logs/benchmarks/simulate/{dataset}.tsv",
    conda:
        "pipeline/envs/calib.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "python -m pipeline.steps.simulate dataset={wildcards.dataset} paths.results={params.results} > {log} 2>&1"


rule fetch:
    input:
        "calib/data/real_checksums.tsv",
    output:
        f"{RESULTS}/data/real/{{real_set}}.npz",
    params:
        results=lambda wildcards, output: Path(output[0]).parents[2 + wildcards.real_set.count("/")],
    log:
        "logs/fetch/{real_set}.log",
    benchmark:
        "logs/benchmarks/fetch/{real_set}.tsv",
    conda:
        "pipeline/envs/calib.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "python -m pipeline.steps.fetch real_set={wildcards.real_set} paths.results={params.results} > {log} 2>&1"
        " || (cat {log} >&2; exit 1)"


rule zoo:
    input:
        CODE_STAMP,
    output:
        [f"{RESULTS}/data/real/zoo/{{zoo_dataset}}/{model}/{split}.npz" for model in ZOO_MODELS for split in ZOO_SPLITS],
    params:
        results=lambda wildcards, output: Path(output[0]).parents[5],
    log:
        "logs/zoo/{zoo_dataset}.log",
    benchmark:
        "logs/benchmarks/zoo/{zoo_dataset}.tsv",
    conda:
        "pipeline/envs/calib.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=15,
    shell:
        "python -m pipeline.steps.zoo zoo_dataset={wildcards.zoo_dataset} paths.results={params.results} > {log} 2>&1"


def artifact_key(wildcards):
    """The ``<paper>/<artifact>`` an artifact job builds."""
    return getattr(wildcards, "figure", None) or wildcards.table


def experiment_inputs(wildcards):
    """The config files, synthetic datasets and real posterior sets an experiment reads."""
    exp = EXPERIMENTS[artifact_key(wildcards)]
    data = [f"{RESULTS}/data/{d}.npz" for d in exp.datasets] + [f"{RESULTS}/data/real/{s}.npz" for s in exp.real_sets]
    return list(exp.configs) + data


def paper_title(wildcards):
    """The report category of an artifact: its paper."""
    exp = EXPERIMENTS[artifact_key(wildcards)]
    return PAPER_TITLES.get(exp.paper, exp.paper)


# One job per artifact evaluates the experiment (values CSV) and renders it in the same process:
# `python -m pipeline.steps.evaluate` and `python -m pipeline.steps.render` rerun either stage by hand.
rule figure:
    input:
        experiment_inputs,
        CODE_STAMP,
    output:
        f"{RESULTS}/{{figure}}_values.csv",
        f"{RESULTS}/{{figure}}.pdf",
        report(f"{RESULTS}/{{figure}}.png", caption=CAPTION, category=paper_title, subcategory="Figures"),
    params:
        caption=lambda wildcards: EXPERIMENTS[wildcards.figure].caption,
        experiment=lambda wildcards: EXPERIMENTS[wildcards.figure].name,
        results=lambda wildcards, output: Path(output[0]).parents[1],
    log:
        "logs/artifacts/{figure}.log",
    benchmark:
        "logs/benchmarks/figure/{figure}.tsv",
    conda:
        "pipeline/envs/calib.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    shell:
        "python -m pipeline.steps.artifact experiment={params.experiment} paths.results={params.results} > {log} 2>&1"


rule table:
    input:
        experiment_inputs,
        CODE_STAMP,
    output:
        f"{RESULTS}/{{table}}_values.csv",
        report(f"{RESULTS}/{{table}}.csv", caption=CAPTION, category=paper_title, subcategory="Tables"),
        f"{RESULTS}/{{table}}.md",
        f"{RESULTS}/{{table}}.tex",
    params:
        caption=lambda wildcards: EXPERIMENTS[wildcards.table].caption,
        experiment=lambda wildcards: EXPERIMENTS[wildcards.table].name,
        results=lambda wildcards, output: Path(output[0]).parents[1],
    log:
        "logs/artifacts/{table}.log",
    benchmark:
        "logs/benchmarks/table/{table}.tsv",
    conda:
        "pipeline/envs/calib.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    shell:
        "python -m pipeline.steps.artifact experiment={params.experiment} paths.results={params.results} > {log} 2>&1"


rule report:
    input:
        [f"{RESULTS}/{key}_values.csv" for key in EXPERIMENTS],
        [f"{RESULTS}/{key}.md" for key in TABLES],
        CODE_STAMP,
        references="configs/reference",
    output:
        markdown=f"{RESULTS}/report.md",
        table=report(
            f"{RESULTS}/reproduction.csv", caption="pipeline/html/reproduction_cells.rst", category="Reproduction summary"
        ),
        summary=report(
            f"{RESULTS}/reproduction_summary.csv", caption="pipeline/html/reproduction.rst", category="Reproduction summary"
        ),
        misses=report(
            f"{RESULTS}/reproduction_misses.csv",
            caption="pipeline/html/reproduction_misses.rst",
            category="Reproduction summary",
        ),
        claims=report(f"{RESULTS}/claims.csv", caption="pipeline/html/claims.rst", category="Reproduction summary"),
    params:
        results=lambda wildcards, output: Path(output.markdown).parent,
    log:
        "logs/report.log",
    benchmark:
        "logs/benchmarks/report.tsv",
    conda:
        "pipeline/envs/calib.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "python -m pipeline.steps.report paths.results={params.results} > {log} 2>&1"


# Declared sweeps (configs/sweep/): `snakemake sweeps` builds every point and each aggregate figure.
rule sweeps:
    input:
        [f"{RESULTS}/sweeps/{name}.png" for name in SWEEPS],


def sweep_sets(wildcards):
    """The real posterior sets a sweep's experiment reads."""
    return [f"{RESULTS}/data/real/{s}.npz" for s in SWEEPS[wildcards.sweep].experiment.get("sets", [])]


rule sweep_point:
    input:
        sweep_sets,
        CODE_STAMP,
        "configs/sweep/{sweep}.yaml",
    output:
        f"{RESULTS}/sweeps/{{sweep}}/point_{{point}}.csv",
    params:
        results=lambda wildcards, output: Path(output[0]).parents[2],
    log:
        "logs/sweeps/{sweep}_{point}.log",
    benchmark:
        "logs/benchmarks/sweeps/{sweep}_{point}.tsv",
    conda:
        "pipeline/envs/calib.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    shell:
        "python -m pipeline.steps.sweep sweep={wildcards.sweep} point={wildcards.point} paths.results={params.results}"
        " > {log} 2>&1"


rule sweep_aggregate:
    input:
        lambda wildcards: [
            f"{RESULTS}/sweeps/{wildcards.sweep}/point_{i}.csv" for i in range(len(points(SWEEPS[wildcards.sweep])))
        ],
        "configs/sweep/{sweep}.yaml",
    output:
        f"{RESULTS}/sweeps/{{sweep}}.csv",
        f"{RESULTS}/sweeps/{{sweep}}.pdf",
        report(f"{RESULTS}/sweeps/{{sweep}}.png", caption=CAPTION, category="Sweeps"),
    params:
        caption=lambda wildcards: f"**Sweep {wildcards.sweep}**: {SWEEPS[wildcards.sweep].title}.",
        results=lambda wildcards, output: Path(output[0]).parents[1],
    log:
        "logs/sweeps/{sweep}.log",
    benchmark:
        "logs/benchmarks/sweeps/{sweep}.tsv",
    conda:
        "pipeline/envs/calib.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=10,
    shell:
        "python -m pipeline.steps.sweep sweep={wildcards.sweep} paths.results={params.results} > {log} 2>&1"
