"""Proper scoring rules and what they decompose into: cross-entropy and Brier, Bayes decisions and
costs, calibration loss, score divergences, Bayes-risk curves, Bregman divergences and additive
decompositions."""
