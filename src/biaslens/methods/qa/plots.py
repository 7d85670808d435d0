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


def subject_bias_figure(subjects: pd.DataFrame, title: str, top: int = 20):
    """Horizontal bars: the subjects with the largest max |γ| over attributes, signed by γ at
    that attribute (positive: the attribute is attached to the subject)."""
    import matplotlib.pyplot as plt

    part = subjects.sort_values("max_abs_gamma", ascending=False).head(top).iloc[::-1]
    figure, axis = plt.subplots(figsize=(6.4, 0.3 * len(part) + 1.4))
    colors = ["#c44e52" if g > 0 else "#4c72b0" for g in part["top_gamma"]]
    axis.barh(range(len(part)), part["top_gamma"], color=colors)
    labels = [f"{s} — {a}" for s, a in zip(part["subject"], part["top_attribute"], strict=True)]
    axis.set_yticks(range(len(part)), labels, fontsize=7)
    axis.axvline(0, color="black", linewidth=0.8)
    axis.set_xlabel("γ(x, a) at the subject's most biased attribute")
    axis.set_title(title, fontsize=10)
    figure.tight_layout()
    return figure


SERIES = {"ethical": "#4c9a5f", "adversarial": "#c44e52", "irrelevant": "#dd8452"}


def training_size_figure(results: pd.DataFrame, title: str):
    """Fig. 5 style: μ (mean ± std over the selected checkpoints) per intervention type against
    the number of training examples (0 = the zero-shot model); dotted: desired μ; the
    specified-context μ (Fig. 6) when the evaluation has it."""
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(6.4, 3.8))
    sizes = sorted(results["train_size"].unique())
    positions = {size: i for i, size in enumerate(sizes)}
    colors = {**SERIES, "none": "#8c8c8c", "specified": "#4c72b0"}
    for name, color in colors.items():
        part = results[results["set"] == name].sort_values("train_size")
        if not len(part):
            continue
        x = [positions[s] for s in part["train_size"]]
        axis.errorbar(
            x,
            part["mu_mean"],
            yerr=part["mu_std"].fillna(0),
            color=color,
            marker="o",
            capsize=3,
            label=LABELS.get(name, name),
        )
        desired = part["desired_mu_mean"]
        if name in ("ethical", "adversarial", "specified") and desired.notna().any():
            axis.axhline(float(desired.dropna().iloc[0]), color=color, linestyle=":", linewidth=1)
    axis.set_xticks(range(len(sizes)), ["zero-shot" if s == 0 else str(s) for s in sizes])
    axis.set_xlabel("training examples")
    axis.set_ylabel("μ (UnQover)")
    axis.set_ylim(0, 1.05)
    axis.set_title(title, fontsize=10)
    axis.legend(fontsize=8, loc="best")
    figure.tight_layout()
    return figure
