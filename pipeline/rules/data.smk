# The data the experiments read: the code stamp, synthetic datasets, published real posterior sets and the zoo.


rule code_stamp:
    input:
        CODE,
    output:
        CODE_STAMP,
    localrule: True
    priority: start_priority(CODE_STAMP)
    log:
        "logs/code_stamp.log",
    conda:
        "../envs/calib.yaml"
    threads: 1
    resources:
        mem_mb=200,
        runtime=1,
    shell:
        "python -m pipeline.code_stamp {output} {input} > {log} 2>&1"


rule simulate:
    input:
        CODE_STAMP,
    output:
        f"{RESULTS}/data/{{dataset}}.npz",
    priority:
        lambda wildcards: start_priority(f"{RESULTS}/data/{wildcards.dataset}.npz")
    params:
        results=lambda wildcards, output: Path(output[0]).parents[1],
    log:
        "logs/simulate/{dataset}.log",
    benchmark:
        "logs/benchmarks/simulate/{dataset}.tsv",
    conda:
        "../envs/calib.yaml"
    threads: 1
    resources:
        mem_mb=rule_memory_mb("simulate"),
        runtime=10,
    shell:
        "python -m pipeline.steps.simulate dataset={wildcards.dataset} paths.results={params.results} > {log} 2>&1"


rule fetch:
    input:
        "calib/data/real_checksums.tsv",
    output:
        f"{RESULTS}/data/real/{{real_set}}.npz",
    priority:
        lambda wildcards: start_priority(f"{RESULTS}/data/real/{wildcards.real_set}.npz")
    params:
        results=lambda wildcards, output: Path(output[0]).parents[2 + wildcards.real_set.count("/")],
    log:
        "logs/fetch/{real_set}.log",
    benchmark:
        "logs/benchmarks/fetch/{real_set}.tsv",
    conda:
        "../envs/calib.yaml"
    threads: 1
    resources:
        mem_mb=rule_memory_mb("fetch"),
        runtime=10,
    shell:
        "python -m pipeline.steps.fetch real_set={wildcards.real_set} paths.results={params.results} > {log} 2>&1"
        " || (cat {log} >&2; exit 1)"


rule zoo:
    input:
        CODE_STAMP,
    output:
        [f"{RESULTS}/data/real/zoo/{{zoo_dataset}}/{model}/{split}.npz" for model in ZOO_MODELS for split in ZOO_SPLITS],
    priority:
        lambda wildcards: start_priority(
            *(f"{RESULTS}/data/real/zoo/{wildcards.zoo_dataset}/{m}/{s}.npz" for m in ZOO_MODELS for s in ZOO_SPLITS)
        )
    params:
        results=lambda wildcards, output: Path(output[0]).parents[5],
    log:
        "logs/zoo/{zoo_dataset}.log",
    benchmark:
        "logs/benchmarks/zoo/{zoo_dataset}.tsv",
    conda:
        "../envs/calib.yaml"
    threads: 1
    resources:
        mem_mb=rule_memory_mb("zoo"),
        runtime=15,
    shell:
        "python -m pipeline.steps.zoo zoo_dataset={wildcards.zoo_dataset} paths.results={params.results} > {log} 2>&1"


# An own set (configs/own/<name>.yaml, own_set=<name>) read from the file it declares, or its calibration split
# (own_set=<name>/calibration) from its calibration_file.
rule own_set:
    input:
        own_set_files,
    output:
        f"{RESULTS}/data/real/own/{{own_set}}.npz",
    priority:
        lambda wildcards: start_priority(f"{RESULTS}/data/real/own/{wildcards.own_set}.npz")
    params:
        results=lambda wildcards, output: Path(output[0]).parents[3 + wildcards.own_set.count("/")],
        own=lambda wildcards: wildcards.own_set.partition("/")[0],
    log:
        "logs/own_set/{own_set}.log",
    conda:
        "../envs/calib.yaml"
    threads: 1
    resources:
        mem_mb=rule_memory_mb("fetch"),
        runtime=10,
    shell:
        "python -m pipeline.steps.fetch real_set=own/{wildcards.own_set} own={params.own} paths.results={params.results}"
        " > {log} 2>&1"
        " || (cat {log} >&2; exit 1)"

