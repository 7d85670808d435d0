"""A forest plot: one value with its interval per line, some lines greyed (known models beside
an audited one), a dashed line at the value that reads as no bias."""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


@dataclass(frozen=True)
class ForestLine:
    """One line: its label, value and interval (None: no interval), greyed or not."""

    label: str
    value: float
    low: float | None = None
    high: float | None = None
    grey: bool = False


def forest_figure(lines: list[ForestLine], title: str, unit: str, no_bias: float | None = 0.0):
    """The figure (the caller writes and closes it)."""
    height = 1.0 + 0.32 * len(lines)
    figure, axis = plt.subplots(figsize=(7.2, height))
    for y, line in enumerate(reversed(lines)):
        color = "0.6" if line.grey else "tab:red"
        if (
            line.low is not None
            and line.high is not None
            and np.isfinite([line.low, line.high]).all()
        ):
            axis.plot([line.low, line.high], [y, y], color=color, linewidth=2)
        axis.plot([line.value], [y], "o", color=color, markersize=5)
    axis.set_yticks(range(len(lines)))
    axis.set_yticklabels([line.label for line in reversed(lines)], fontsize=8)
    if no_bias is not None:
        axis.axvline(no_bias, color="0.3", linestyle="--", linewidth=0.8)
    axis.set_xlabel(unit, fontsize=8)
    axis.set_title(title, fontsize=9)
    axis.tick_params(axis="x", labelsize=8)
    figure.tight_layout()
    return figure
