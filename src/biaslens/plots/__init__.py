"""Figures: pure functions from result tables to matplotlib figures (like the papers' figures).

The experiments draw them; the run store writes them. Importing a module here does not start
matplotlib's GUI backend (``Agg`` is used).
"""
