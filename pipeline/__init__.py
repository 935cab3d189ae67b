"""Workflow glue: Hydra entry points for each step, and the target listing the Snakefile reads."""
