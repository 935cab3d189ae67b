"""Resampling and hypothesis tests: bootstrap percentile intervals (batched for additive statistics)
and calibration tests (Pearson, Hosmer-Lemeshow, consistency resampling, SKCE)."""
