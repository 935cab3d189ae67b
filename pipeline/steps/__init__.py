"""The workflow's steps: ``python -m pipeline.steps.<step> key=value ...`` (Hydra's command line, read by
``command_line``), and ``batch``.

simulate, fetch and zoo make the data; evaluate and render one experiment's values and artifact
(artifact does both in one process); batch builds several experiments as artifact does, one after
another in one process, which is what the workflow's artifact jobs run (``--results`` and config
names, no Hydra); sweep runs a sweep point or its aggregate; report compares every artifact with its
published numbers.
"""
