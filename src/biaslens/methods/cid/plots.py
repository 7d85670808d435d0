"""Plots of the CID paper's figures (Fig. 2, 4 and 9), drawn from result tables."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def biased_heatmap(fractions: pd.DataFrame, title: str):
    """Fraction of biased continuations per name group (rows) and λ (columns), like Fig. 2."""
    table = fractions.pivot(index="group", columns="lam", values="fraction_biased")
    fig, ax = plt.subplots(figsize=(1.4 * len(table.columns) + 2.5, 0.8 * len(table) + 1.6))
    image = ax.imshow(table.to_numpy(float), cmap="Reds", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(table.columns)), [f"{v:g}" for v in table.columns])
    ax.set_yticks(range(len(table)), list(table.index))
    ax.set_xlabel("λ")
    for (row, col), value in np.ndenumerate(table.to_numpy(float)):
        if not np.isnan(value):
            color = "white" if value > 0.6 else "black"
            ax.text(col, row, f"{value:.2f}", ha="center", va="center", color=color)
    fig.colorbar(image, ax=ax, label="fraction biased")
    ax.set_title(title)
    fig.tight_layout()
    return fig


def lambda_star_boxplot(
    per_pair: pd.DataFrame, order: list[str], grid: list[float], tau: float, title: str
):
    """λ* per perturbation type, sorted by median (Fig. 4). Pairs that never crossed τ are
    drawn at a separate "never" position right of the largest λ."""
    finite_max = max(grid)
    never = finite_max * 2 if finite_max > 0 else 1.0
    data = [
        per_pair.loc[per_pair["type"] == kind, "lambda_star"].replace(np.inf, never).to_numpy()
        for kind in order
    ]
    fig, ax = plt.subplots(figsize=(7.5, 0.55 * len(order) + 1.8))
    ax.boxplot(data, orientation="horizontal", whis=(0, 100), widths=0.6)
    ax.set_yticks(range(1, len(order) + 1), order)
    ax.set_xscale("symlog", linthresh=1)
    grid = sorted(grid)
    ax.set_xticks([*grid, never], [f"{t:g}" for t in grid] + ["never"])
    ax.set_xlim(-0.3, never * 1.4)
    ax.set_xlabel(f"λ*  (τ = {tau:g})")
    ax.invert_yaxis()
    ax.set_title(title)
    fig.tight_layout()
    return fig


def similarity_curve(curve: pd.DataFrame, tau: float, title: str):
    """Mean similarity of the two contrastive texts vs λ (Fig. 9), with ±1 std and τ."""
    fig, ax = plt.subplots(figsize=(6, 4))
    x = np.arange(len(curve))
    mean, std = curve["mean"].to_numpy(float), curve["std"].fillna(0).to_numpy(float)
    ax.plot(x, mean, marker="o")
    ax.fill_between(x, mean - std, mean + std, alpha=0.2)
    ax.axhline(tau, color="tab:red", linestyle="--", label=f"τ = {tau:g}")
    ax.set_xticks(x, [f"{v:g}" for v in curve["lam"]])
    ax.set_xlabel("λ")
    ax.set_ylabel("similarity (mean ± std)")
    ax.legend()
    ax.set_title(title)
    fig.tight_layout()
    return fig
