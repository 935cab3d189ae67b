"""Calibration errors and the binnings behind them: binned ECE (one configured estimator and the other
libraries' presets), smooth ECE and kernel regression, SKCE / MMCE, the entropic ECD, lenses and the
expected miscalibration over partitions of the simplex."""
