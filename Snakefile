# calib-repro workflow: `snakemake --cores 2` builds every configured paper artifact and the report.
# Targets come from configs/ (pipeline/targets.py); each rule runs one Hydra step that can also be run by hand.

from pathlib import Path

from pipeline.targets import experiments


configfile: "configs/workflow.yaml"


RESULTS = config["results"]
CODE = sorted(str(p) for p in Path(".").glob("calib/**/*.py")) + sorted(str(p) for p in Path(".").glob("pipeline/*.py"))
EXPERIMENTS = {f"{e.paper}/{e.artifact}": e for e in experiments()}
FIGURES = [key for key, e in EXPERIMENTS.items() if not e.is_table]
TABLES = [key for key, e in EXPERIMENTS.items() if e.is_table]
ARTIFACTS = [f"{RESULTS}/{key}{suffix}" for key, e in EXPERIMENTS.items() for suffix in e.suffixes]


wildcard_constraints:
    figure="|".join(FIGURES) or "^$",
    table="|".join(TABLES) or "^$",


rule all:
    input:
        ARTIFACTS,
        f"{RESULTS}/report.md",
        f"{RESULTS}/reproduction.csv",


rule simulate:
    input:
        CODE,
    output:
        f"{RESULTS}/data/{{dataset}}.npz",
    params:
        results=lambda wildcards, output: Path(output[0]).parents[1],
    log:
        "logs/simulate/{dataset}.log",
    conda:
        "pipeline/envs/calib.yaml"
    resources:
        mem_mb=2000,
    shell:
        "python -m pipeline.simulate dataset={wildcards.dataset} paths.results={params.results} > {log} 2>&1"


def experiment_inputs(wildcards):
    """The datasets an experiment reads."""
    exp = EXPERIMENTS[f"{wildcards.paper}/{wildcards.artifact}"]
    return [f"{RESULTS}/data/{d}.npz" for d in exp.datasets]


rule evaluate:
    input:
        experiment_inputs,
        CODE,
    output:
        f"{RESULTS}/{{paper}}/{{artifact}}_values.csv",
    params:
        results=lambda wildcards, output: Path(output[0]).parents[1],
    log:
        "logs/evaluate/{paper}_{artifact}.log",
    conda:
        "pipeline/envs/calib.yaml"
    resources:
        mem_mb=2000,
    shell:
        "python -m pipeline.evaluate experiment={wildcards.paper}_{wildcards.artifact} paths.results={params.results}"
        " > {log} 2>&1"


rule render_figure:
    input:
        f"{RESULTS}/{{figure}}_values.csv",
    output:
        f"{RESULTS}/{{figure}}.pdf",
        f"{RESULTS}/{{figure}}.png",
    params:
        experiment=lambda wildcards: EXPERIMENTS[wildcards.figure].name,
        results=lambda wildcards, output: Path(output[0]).parents[1],
    log:
        "logs/render/{figure}.log",
    conda:
        "pipeline/envs/calib.yaml"
    shell:
        "python -m pipeline.render experiment={params.experiment} paths.results={params.results} > {log} 2>&1"


rule render_table:
    input:
        f"{RESULTS}/{{table}}_values.csv",
    output:
        f"{RESULTS}/{{table}}.csv",
        f"{RESULTS}/{{table}}.md",
        f"{RESULTS}/{{table}}.tex",
    params:
        experiment=lambda wildcards: EXPERIMENTS[wildcards.table].name,
        results=lambda wildcards, output: Path(output[0]).parents[1],
    log:
        "logs/render/{table}.log",
    conda:
        "pipeline/envs/calib.yaml"
    shell:
        "python -m pipeline.render experiment={params.experiment} paths.results={params.results} > {log} 2>&1"


rule report:
    input:
        [f"{RESULTS}/{key}_values.csv" for key in EXPERIMENTS],
        references="configs/reference",
    output:
        markdown=f"{RESULTS}/report.md",
        table=f"{RESULTS}/reproduction.csv",
    params:
        results=lambda wildcards, output: Path(output.markdown).parent,
    log:
        "logs/report.log",
    conda:
        "pipeline/envs/calib.yaml"
    shell:
        "python -m pipeline.report paths.results={params.results} > {log} 2>&1"
