# The artifact jobs (pipeline.targets.jobs): one job per paper builds its artifacts one after another in one
# process, and each artifact of a costly kind (own_job) has a job of its own. A job runs
# `python -m pipeline.steps.batch` with each experiment's Hydra overrides; `python -m pipeline.steps.artifact
# <overrides>` (the command the job's log prints for each) builds one artifact by hand, with the same bytes.
# Each figure and table carries its own caption in the HTML report (written where it is rendered).


for job, members in JOBS.items():

    rule:
        name:
            rule_name(job)
        input:
            sorted({f for e in members for f in experiment_inputs(e)}),
            CODE_STAMP,
        output:
            artifact_outputs(members),
        params:
            experiments=[e.command for e in members],
            # each member's composed config (its sha256): a change reruns the job (Snakemake's params trigger)
            configs=[e.digest for e in members],
            results=results_folder(depth=1 + members[0].folder.count("/")),
        priority: rule_priority(rule_name(job))
        log:
            f"logs/artifacts/{job}.log",
        benchmark:
            f"logs/benchmarks/artifacts/{job}.tsv"
        conda:
            "../envs/calib.yaml"
        threads: 1
        resources:
            mem_mb=rule_memory_mb(rule_name(job)),
            runtime=30,
        shell:
            "python -m pipeline.steps.batch --results {params.results} {params.experiments:q} > {log} 2>&1"
