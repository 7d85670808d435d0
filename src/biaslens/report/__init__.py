"""The HTML report of run directories (plots are drawn by :mod:`biaslens.plots`)."""
