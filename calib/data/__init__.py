"""Data sets: synthetic generators of every paper and loaders of real posterior sets."""
