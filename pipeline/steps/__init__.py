"""The workflow's steps, one Hydra entry point each: ``python -m pipeline.steps.<step> key=value ...``.

simulate, fetch and zoo make the data; evaluate and render one experiment's values and artifact
(artifact does both in one process, as the workflow runs them); sweep runs a sweep point or its
aggregate; report compares every artifact with its published numbers.
"""
