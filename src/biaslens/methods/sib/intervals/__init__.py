"""Intervals of SIB Method 1's slopes: least squares with the W values' own correlation."""
