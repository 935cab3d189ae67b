# The setup every file in pipeline/rules/ shares (the results folder, the code stamp, the targets derived
# from configs/ by pipeline/targets.py, the wildcard constraints) and the input functions of several rules.
# Each rule declares threads, memory (mem_mb, from the measured peaks of pipeline/job_costs.py) and runtime
# (minutes) for cluster profiles (profiles/); the build's jobs declare a start order (priority, from the
# measured seconds of pipeline/job_costs.py).

import os
import re
import sys
from pathlib import Path

from calib.bibliography import cite, load_bibliography
from calib.data.registry import REAL_SETS
from calib.data.zoo import DATASETS as ZOO_DATASETS, MODELS as ZOO_MODELS, SPLITS as ZOO_SPLITS
from pipeline.cluster_failures import explain_memory_kills
from pipeline.config import group_options, remember
from pipeline.io import corrupt_files, values_path
from pipeline.job_costs import input_priorities, rule_memory_mb, rule_priority
from pipeline.own_sets import applies, declaration_file, fits, refusal, resolve, shape as own_shape
from pipeline.own_sets import real_set_names as own_real_sets
from pipeline.real_data import HOW_TO_PROVIDE, obtainable
from pipeline.sweeps import load_sweep, points, sweep_names
from pipeline.targets import artifact_files, caption_path, experiments, jobs, own_sets, real_sets, rule_name, settings


RESULTS = config["results"]
# Every job inherits these. By default glibc's malloc gives each freed array of more than ~128 KB back to the
# kernel and maps fresh zero-filled pages for the next one, so numpy code that makes large temporaries in a
# loop (the resampling tables and figures, the upstream L-BFGS fits) pays page faults on every iteration.
# Served from a heap that is neither unmapped nor trimmed (mallopt(3): M_MMAP_THRESHOLD, M_TRIM_THRESHOLD;
# 1 GiB because some arrays exceed 32 MiB), the jobs compute the same bytes with far less time in the kernel,
# at the price of peaks that stay at their high-water mark (pipeline/rules/job_costs.tsv is measured with it).
# Other C libraries ignore the variables; a value the caller set is kept.
os.environ.setdefault("MALLOC_MMAP_THRESHOLD_", str(2**30))
os.environ.setdefault("MALLOC_TRIM_THRESHOLD_", str(2**30))
CODE = sorted(str(p) for folder in ("calib", "pipeline") for p in Path(".").glob(f"{folder}/**/*.py"))
# One file stands for all the code: jobs depend on it rather than on ~90 modules each (fewer files for the
# scheduler to stat), and it records which code built the results.
CODE_STAMP = f"{RESULTS}/code.sha256"
SETTINGS = settings(RESULTS)
# Reading the workflow writes and deletes nothing: a cached data set that fails its sha256 check is named with
# the command that makes it again (and what was made from it); a job that reads it stops with the same advice.
CORRUPT = [str(p) for p in corrupt_files(f"{RESULTS}/data")] if workflow.is_main_process else []
if CORRUPT:
    print(
        f"calib-repro: {', '.join(CORRUPT)} failed the sha256 check (truncated, altered, or written by an interrupted "
        f"run); make them again with: snakemake --cores 2 --forcerun {' '.join(CORRUPT)}",
        file=sys.stderr,
    )
# The user's own posterior sets (configs/own/): each declaration and file checked before any work.
OWN = own_sets()
OWN_SHAPES = {name: own_shape(name, own.declaration) for name, own in OWN.items()}
ALL_EXPERIMENTS = {
    e.key: e
    for e in experiments()
    # a protocol runs where the set's classes fit, on a set with sample weights only if it takes them
    if not e.own_set or applies(e.parameters.own_protocol, OWN_SHAPES[e.own_set])
}
for e in experiments() if workflow.is_main_process else ():  # said here, and in the own report
    shape = OWN_SHAPES.get(e.own_set)
    if shape and fits(e.parameters.own_protocol, shape) and not applies(e.parameters.own_protocol, shape):
        print(f"calib-repro: {refusal(e.own_set, e.artifact)}", file=sys.stderr)
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
OWN_ARTIFACTS = [str(f) for e in EXPERIMENTS.values() if e.own_set for f in artifact_files(RESULTS, e)]
BUILT_BY_NAME = {e.name: e for e in EXPERIMENTS.values() if not e.own_set}
ARTIFACTS = [str(f) for e in EXPERIMENTS.values() for f in artifact_files(RESULTS, e)]
VALUES = [str(values_path(RESULTS, e.parameters)) for e in EXPERIMENTS.values()]
TABLES = [str(f) for e in EXPERIMENTS.values() if e.is_table for f in artifact_files(RESULTS, e) if f.suffix == ".md"]
JOBS = jobs(list(EXPERIMENTS.values()))
PAPER_TITLES = {paper: f"{cite(paper)}, {load_bibliography()[paper].title}" for paper in SETTINGS.papers}
FETCHABLE = [name for name, entry in REAL_SETS.items() if not entry.unavailable]
DATASETS = group_options("dataset")
SWEEPS = {name: load_sweep(name) for name in sweep_names()}


# The compositions read above are kept for the next reading (pipeline.config): written when a run starts (and its
# cluster jobs read the workflow again), never by a dry run.
onstart:
    remember()


wildcard_constraints:
    real_set="|".join(re.escape(name) for name in FETCHABLE),
    own_set="|".join(re.escape(name.removeprefix("own/")) for name in own_real_sets()) or "^$",
    dataset="|".join(DATASETS),
    zoo_dataset="|".join(ZOO_DATASETS),
    sweep="|".join(SWEEPS) or "^$",
    point=r"\d+",


def experiment_inputs(exp):
    """The synthetic datasets and real posterior sets an experiment reads (its config is a param of its job)."""
    data = [f"{RESULTS}/data/{d}.npz" for d in exp.datasets] + [f"{RESULTS}/data/real/{s}.npz" for s in exp.real_sets]
    beside = BUILT_BY_NAME.get(exp.beside)  # an own set's table shows its rows beside a paper's, when built here
    joined = [str(values_path(RESULTS, beside.parameters))] if beside else []
    return data + joined


# The longest artifact jobs start first, and each file they read (a data set, the code stamp) is made before
# the shorter jobs' (pipeline/job_costs.py).
INPUT_PRIORITY = input_priorities(
    {rule_name(job): [CODE_STAMP, *(f for e in members for f in experiment_inputs(e))] for job, members in JOBS.items()}
)


def start_priority(*files):
    """The priority of a job that makes ``files``: the highest among the artifact jobs that read them."""
    return max((INPUT_PRIORITY.get(f, 0) for f in files), default=0)


def results_folder(depth):
    """A ``params`` function: the results folder, ``depth`` folders above a job's first output (a paper's
    artifacts are one below it, an own set's two: results/own/<set>/)."""
    return lambda wildcards, output: Path(output[0]).parents[depth]


def paper_title(exp):
    """The report category of an artifact: its paper, or the own set it was run on."""
    return f"Own set: {exp.own_set}" if exp.own_set else PAPER_TITLES.get(exp.paper, exp.paper)


def own_set_files(wildcards):
    """The declaration of an own set and the files it names (editing any of them rebuilds the set)."""
    name, _, split = wildcards.own_set.partition("/")
    spec = OWN[name].declaration
    named = (spec.calibration_file, spec.calibration_labels_file) if split else (spec.file, spec.labels_file)
    return [declaration_file(name), *(str(resolve(f)) for f in named if f)]


def sweep_sets(wildcards):
    """The real posterior sets a sweep's experiment reads."""
    return [f"{RESULTS}/data/real/{s}.npz" for s in real_sets(SWEEPS[wildcards.sweep].experiment)]


def sweep_points(wildcards):
    """Every point file of a sweep, in grid order."""
    return [f"{RESULTS}/sweeps/{wildcards.sweep}/point_{i}.csv" for i in range(len(points(SWEEPS[wildcards.sweep])))]


def artifact_outputs(members):
    """Every file a job writes: each member's values CSV, then its figure or table files marked for the report
    (the table's CSV or the figure's PNG), each with its caption (written where the artifact is rendered)."""
    out = []
    for e in members:
        out.append(str(values_path(RESULTS, e.parameters)))
        section = "Tables" if e.is_table else "Figures"
        caption = str(caption_path(e.parameters))
        for path in map(str, artifact_files(RESULTS, e)):
            shown = path.endswith(".csv" if e.is_table else ".png")
            out.append(report(path, caption=caption, category=paper_title(e), subcategory=section) if shown else path)
    return out
