"""Fig. 4-style bar chart of μ per LEI set with the desired value of each."""

from __future__ import annotations

import math

import pandas as pd

LABELS = {
    "none": "no intervention",
    "ethical": "ethical",
    "adversarial": "adversarial",
    "irrelevant": "irrelevant",
    "specified": "specified context",
}


def lei_mu_figure(table: pd.DataFrame, title: str):
    """Bars: measured μ per set; black ticks: desired μ (0, 1, the no-intervention μ, 1)."""
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 3.8))
    names = [LABELS.get(s, s) for s in table["set"]]
    positions = range(len(table))
    colors = ["#8c8c8c", "#4c9a5f", "#c44e52", "#dd8452", "#4c72b0"]
    axis.bar(positions, table["mu"], color=colors[: len(table)], width=0.6, label="measured μ")
    first = True
    for x, desired in zip(positions, table["desired_mu"], strict=True):
        if desired is None or (isinstance(desired, float) and math.isnan(desired)):
            continue
        axis.hlines(
            desired,
            x - 0.38,
            x + 0.38,
            colors="black",
            linewidth=2.5,
            label="desired μ" if first else None,
        )
        first = False
    for x, mu in zip(positions, table["mu"], strict=True):
        axis.text(x, mu + 0.02, f"{mu:.3f}", ha="center", fontsize=8)
    axis.set_xticks(list(positions), names, rotation=15)
    axis.set_ylim(0, 1.1)
    axis.set_ylabel("μ (UnQover)")
    axis.set_title(title, fontsize=10)
    axis.legend(loc="upper left", fontsize=8)
    figure.tight_layout()
    return figure
