"""One module per paper, named by the paper key of its experiment configs; each declares ``KINDS``.

See :mod:`pipeline.kinds` for what a kind declares and how a job imports only its own paper's module.
"""
