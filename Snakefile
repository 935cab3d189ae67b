# calib-repro workflow: `snakemake --cores 2` builds every configured paper artifact and the report;
# `snakemake sweeps` builds the declared parameter sweeps.
# Targets come from configs/ (pipeline/targets.py); each rule runs one Hydra step (pipeline/steps/) that can
# also be run by hand. The rules live in pipeline/rules/; pipeline/rules/common.smk holds the shared setup.


configfile: "configs/workflow.yaml"


report: "pipeline/report/workflow.rst"


include: "pipeline/rules/common.smk"


rule all:
    input:
        ARTIFACTS,
        f"{RESULTS}/report.md",
        f"{RESULTS}/reproduction.csv",
        f"{RESULTS}/reproduction_summary.csv",


include: "pipeline/rules/data.smk"
include: "pipeline/rules/artifacts.smk"
include: "pipeline/rules/report.smk"
include: "pipeline/rules/sweeps.smk"


# `snakemake own`: every protocol that applies to each own posterior set (configs/real_systems/own/), and the
# report's section on them (results/own/report.md; the full report carries it too).
rule own:
    input:
        OWN_ARTIFACTS,
        f"{RESULTS}/own/report.md",


# A cluster job killed for going over its memory request fails with no reason given: say so, and how to fix it.
onerror:
    explain_memory_kills(log)
