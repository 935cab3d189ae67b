# One job per artifact evaluates the experiment (values CSV) and renders it in the same process:
# `python -m pipeline.steps.evaluate` and `python -m pipeline.steps.render` rerun either stage by hand.
# Captions are relative to this file; the artifact's own text comes from its params.caption.
CAPTION = "../report/artifact.rst"


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
        "../envs/calib.yaml"
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
        "../envs/calib.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    shell:
        "python -m pipeline.steps.artifact experiment={params.experiment} paths.results={params.results} > {log} 2>&1"
