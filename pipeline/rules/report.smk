# The reproduction report: every artifact set beside its published numbers (pipeline/steps/report.py).


rule report:
    input:
        VALUES,
        TABLES,
        CODE_STAMP,
        references="configs/reference",
    output:
        markdown=f"{RESULTS}/report.md",
        table=report(
            f"{RESULTS}/reproduction.csv", caption="../report/reproduction_cells.rst", category="Reproduction summary"
        ),
        summary=report(
            f"{RESULTS}/reproduction_summary.csv", caption="../report/reproduction.rst", category="Reproduction summary"
        ),
        misses=report(
            f"{RESULTS}/reproduction_misses.csv",
            caption="../report/reproduction_misses.rst",
            category="Reproduction summary",
        ),
        claims=report(f"{RESULTS}/claims.csv", caption="../report/claims.rst", category="Reproduction summary"),
    params:
        results=lambda wildcards, output: Path(output.markdown).parent,
    log:
        "logs/report.log",
    benchmark:
        "logs/benchmarks/report.tsv",
    conda:
        "../envs/calib.yaml"
    threads: 1
    resources:
        mem_mb=rule_memory_mb("report"),
        runtime=10,
    shell:
        "python -m pipeline.steps.report paths.results={params.results} > {log} 2>&1"


# The report's section on the own sets alone (`snakemake own`): it needs only their artifacts.
rule own_report:
    input:
        OWN_ARTIFACTS,
        CODE_STAMP,
    output:
        f"{RESULTS}/own/report.md",
    params:
        results=lambda wildcards, output: Path(output[0]).parents[1],
    log:
        "logs/own_report.log",
    conda:
        "../envs/calib.yaml"
    threads: 1
    resources:
        mem_mb=rule_memory_mb("report"),
        runtime=10,
    shell:
        "python -m pipeline.steps.own_report paths.results={params.results} > {log} 2>&1"
