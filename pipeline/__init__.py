"""Workflow glue: Hydra entry points for each step, and the target listing the Snakefile reads.

Each step is single-threaded: Snakemake runs the jobs in parallel, and multi-threaded BLAS inside
many small L-BFGS fits oversubscribes the cores, which slows the fits many times over. Set before NumPy
is imported; an explicit value in the environment wins.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
