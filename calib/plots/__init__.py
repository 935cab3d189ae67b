"""Figures drawn from plain arrays: compute first (elsewhere in calib), then draw here."""
