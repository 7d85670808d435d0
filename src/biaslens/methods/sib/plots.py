"""Plots of the SIB paper's figures, drawn from result tables (no model work here)."""

from __future__ import annotations

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from biaslens.methods.sib.data.pronouns import GENDERS  # noqa: E402
from biaslens.methods.sib.intervals.ols import confidence_band  # noqa: E402
from biaslens.methods.sib.metrics.sib import r2_text  # noqa: E402
from biaslens.methods.sib.metrics.toy_scm import pearson  # noqa: E402

GENDER_COLORS = {"female": "tab:red", "male": "tab:blue", "neutral": "tab:gray"}


def mgc_trend_figure(means: pd.DataFrame, fits: pd.DataFrame, w_kind: str, title: str):
    """Like the paper's Fig. 3(c)/6(c): one panel per prompt, per-W mean probability (%) for
    each gender with its fitted line and 95% confidence band."""
    part = means[means["w_kind"] == w_kind]
    prompts = list(dict.fromkeys(part["prompt"]))
    fig, axes = plt.subplots(
        1, len(prompts), figsize=(5.2 * len(prompts), 4.2), squeeze=False, sharey=False
    )
    for ax, prompt in zip(axes[0], prompts, strict=True):
        data = part[part["prompt"] == prompt].sort_values("w_index")
        x = data["w_index"].to_numpy(float)
        grid = np.linspace(x.min(), x.max(), 100)
        for gender in GENDERS:
            y = data[f"p_{gender}_pct"].to_numpy(float)
            fit = fits[(fits.w_kind == w_kind) & (fits.prompt == prompt) & (fits.gender == gender)]
            label = gender
            if len(fit):
                row = fit.iloc[0]
                label = f"{gender}: slope {row.slope:+.3f}, r² {row.r2:.2f}"
            color = GENDER_COLORS[gender]
            ax.scatter(x, y, s=14, color=color, label=label)
            line, low, high = confidence_band(x, y, grid)
            ax.plot(grid, line, color=color, linewidth=1.2)
            ax.fill_between(grid, low, high, color=color, alpha=0.18, linewidth=0)
        ticks = data["w_index"].to_numpy()
        labels = data["w"].tolist()
        step = max(1, len(ticks) // 10) if w_kind == "dates" else 1
        ax.set_xticks(ticks[::step])
        ax.set_xticklabels(
            labels[::step], rotation=60 if w_kind == "places" else 45, ha="right", fontsize=7
        )
        ax.set_title(f"prompt {prompt}" if prompt != "mask" else "masked slot", fontsize=10)
        ax.set_xlabel("date (W)" if w_kind == "dates" else "place (W), WEF 2021 rank order")
        ax.set_ylabel("mean pronoun probability (%)")
        ax.legend(fontsize=7, loc="best")
        ax.grid(alpha=0.3)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def toy_scm_figure(samples: pd.DataFrame, max_points: int = 4000):
    """Like the paper's Fig. 2(c)/(d): per task, W vs G and X vs Y for all samples and for the
    selected (S = 1) samples, each panel titled with its Pearson r."""
    tasks = list(dict.fromkeys(samples["task"]))
    fig, axes = plt.subplots(len(tasks), 4, figsize=(15, 3.6 * len(tasks)), squeeze=False)
    panels = [("W", "G", False), ("W", "G", True), ("X", "Y", False), ("X", "Y", True)]
    for row, task in zip(axes, tasks, strict=True):
        data = samples[samples["task"] == task]
        for ax, (x, y, selected) in zip(row, panels, strict=True):
            part = data[data["S"]] if selected else data
            r = pearson(part[x], part[y])
            shown = part.iloc[:max_points]
            ax.scatter(
                shown[x], shown[y], s=3, alpha=0.4, color="tab:orange" if selected else "tab:blue"
            )
            which = "selected (S=1)" if selected else "all"
            said = f"r = {r:+.2f}" if r == r else f"r: none ({len(part)} points)"
            ax.set_title(f"{task}: {x} vs {y}, {which}\n{said}", fontsize=9)
            ax.set_xlabel(x)
            ax.set_ylabel(y)
            ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def detector_figure(sentences: pd.DataFrame, threshold: float, title: str):
    """Like the paper's Fig. 5: the specification metric of every sentence per occupation,
    occupations ordered by BLS % female, well-specified sentences marked, threshold drawn."""
    order = (
        sentences.groupby("occupation")["bls_pct_female"].first().sort_values(kind="stable").index
    )
    position = {occupation: i for i, occupation in enumerate(order)}
    x = sentences["occupation"].map(position).to_numpy(float)
    fig, ax = plt.subplots(figsize=(max(8, 0.22 * len(order)), 4.5))
    ws = sentences["well_specified"].to_numpy(bool)
    ax.scatter(
        x[~ws],
        sentences["metric"][~ws],
        s=12,
        color="tab:gray",
        alpha=0.7,
        label="unspecified (ground truth)",
    )
    ax.scatter(
        x[ws],
        sentences["metric"][ws],
        s=28,
        marker="^",
        color="tab:green",
        label="well-specified (ground truth)",
    )
    ax.axhline(
        threshold, color="tab:red", linewidth=1, linestyle="--", label=f"threshold {threshold}"
    )
    ax.set_yscale("symlog", linthresh=0.1)
    ax.set_ylim(bottom=0)
    ax.set_xticks(range(len(order)))
    ax.set_xticklabels(order, rotation=90, fontsize=6)
    ax.set_xlabel("occupation (ordered by BLS 2015 % female)")
    ax.set_ylabel("specification metric (pp)")
    missing = int(sentences["metric"].isna().sum())
    if missing:  # no pronoun predicted: no metric, no point; said rather than dropped silently
        title += f"\n{missing} of {len(sentences)} sentences not shown: no pronoun predicted"
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def cross_model_figure(table: pd.DataFrame, title: str):
    """Like the paper's Fig. 3(b): parameter count (log) vs the female−male slope difference,
    marker size by mean r², one labelled point per model."""
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    sizes = 30 + 600 * table["mean_r2"].clip(0, 1).fillna(0)  # r² undefined (flat): smallest
    ax.scatter(table["num_parameters"], table["female_minus_male_slope"], s=sizes, alpha=0.6)
    for row in table.itertuples():
        ax.annotate(
            f"{row.model}\n" + r2_text(row.mean_r2, getattr(row, "flat_fits", 0)),
            (row.num_parameters, row.female_minus_male_slope),
            fontsize=7,
            xytext=(5, 5),
            textcoords="offset points",
        )
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    params = sorted(set(table["num_parameters"]))
    ax.set_xlim(params[0] / 1.6, params[-1] * 1.6)
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xticks(params, [f"{p / 1e6:.3g}M" for p in params])
    ax.set_xlabel("parameters")
    ax.set_ylabel("female − male slope (pp per W step), mean over prompts")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def date_sweep_figure(curve: pd.DataFrame, title: str):
    """Like the paper's Fig. 4: the female (and male, neutral) share of one sentence's pronoun
    mass at every date of the grid."""
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for gender in GENDERS:
        ax.plot(
            curve["date"],
            curve[f"pct_{gender}"],
            marker="o",
            markersize=3,
            color=GENDER_COLORS[gender],
            label=gender,
        )
    ax.set_xlabel("injected date")
    ax.set_ylabel("share of pronoun mass (%)")
    ax.set_title(title if len(title) < 90 else title[:87] + "…", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
