"""Choosing lei-train's checkpoints: the LEI criterion on dev, the top k per train size, and
the mean ± std of the selected (LEI Section 3, ``model_select.py``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from biaslens.errors import BiaslensError

CRITERION_TYPES = ("ethical", "adversarial", "irrelevant")


def lei_criterion(table: pd.DataFrame, selection: str = "gap") -> float:
    """The dev criterion, lower is better (from :func:`lei_table`).

    ``gap``: Σ over ethical, adversarial, irrelevant of |μ − desired μ|. ``theta4``: the
    reference's ``model_select.py``, (1 − adversarial θ4) + ethical θ4 (irrelevant left out)."""
    by_set = table.set_index("set")
    needed = CRITERION_TYPES if selection == "gap" else ("ethical", "adversarial")
    missing = [t for t in needed if t not in by_set.index]
    if missing:
        raise BiaslensError(f"the dev evaluation lacks the set(s) {missing}")
    if selection == "theta4":
        return float((1 - by_set.loc["adversarial", "theta4"]) + by_set.loc["ethical", "theta4"])
    return float(sum(by_set.loc[t, "gap"] for t in CRITERION_TYPES))


def select_top(grid: pd.DataFrame, k: int) -> pd.DataFrame:
    """The ``k`` cells with the lowest criterion per train size (ties: smaller learning rate,
    then fewer epochs)."""
    ordered = grid.sort_values(["train_size", "criterion", "learning_rate", "epochs"])
    return ordered.groupby("train_size", sort=True).head(k).reset_index(drop=True)


def summarize_selected(evaluations: pd.DataFrame, selected: pd.DataFrame) -> pd.DataFrame:
    """Mean ± std (over the selected checkpoints) of μ and the gap per train size, evaluation
    split and set; the zero-shot model as train size 0."""
    chosen = evaluations.merge(selected[["checkpoint", "train_size"]], on="checkpoint")
    zero = evaluations[evaluations["checkpoint"] == "zero-shot"].assign(train_size=0)
    table = pd.concat([zero, chosen], ignore_index=True)
    metrics = [c for c in ("mu", "gap", "specified_win_rate", "exact_match", "f1") if c in table]
    if "desired_mu" not in table:
        table = table.assign(desired_mu=np.nan)
    grouped = table.groupby(["train_size", "evaluation", "set"], sort=True)[metrics]
    out = grouped.agg(["mean", "std"])
    out.columns = [f"{m}_{s}" for m, s in out.columns]
    out["models"] = grouped.size()
    desired = table.groupby(["train_size", "evaluation", "set"])["desired_mu"].mean()
    return out.join(desired.rename("desired_mu_mean")).reset_index()
