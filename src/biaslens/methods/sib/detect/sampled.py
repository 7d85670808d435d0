"""Method 2 (SIB Section 5) from sampled replies: verdicts only where the sampling error allows
one (``--scoring sampled``, :mod:`biaslens.scoring.sampled`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from biaslens.methods.sib.data.pronouns import GENDERS
from biaslens.metrics.intervals import difference_of_shares


def sampled_verdicts(
    table: pd.DataFrame, scored: pd.DataFrame, threshold: float, level: float
) -> pd.DataFrame:
    """Verdicts from sampled replies. The frequency-based |Δ| is biased upward (E|Δ̂| ≥ |Δ|:
    sampling noise alone puts most sentences above a 0.5-point threshold), so a sentence is
    called unspecified only where Newcombe's ``level`` interval of Δ (the two ends' female
    shares, from the pooled pronoun replies at each end) lies wholly beyond ±threshold,
    well-specified only where it lies within, and undecided otherwise: left out of TPR and TNR,
    like a sentence with no pronoun, and counted (``n_undecided``)."""
    pooled = scored.assign(k_pronoun=scored[[f"k_{g}" for g in GENDERS]].sum(axis=1))
    counts = pooled.groupby(["set", "id", "end"])[["k_female", "k_pronoun"]].sum().unstack("end")
    counts.columns = [f"{c}_{end}" for c, end in counts.columns]
    table = table.merge(counts.reset_index(), on=["set", "id"])
    low = np.full(len(table), np.nan)
    high = np.full(len(table), np.nan)
    usable = (table["k_pronoun_latest"] > 0) & (table["k_pronoun_earliest"] > 0)
    if usable.any():
        part = table[usable]
        lo, hi = difference_of_shares(
            part["k_female_latest"].to_numpy(),
            part["k_pronoun_latest"].to_numpy(),
            part["k_female_earliest"].to_numpy(),
            part["k_pronoun_earliest"].to_numpy(),
            level,
        )
        lo, hi = lo * 100, hi * 100
        low[usable.to_numpy()] = np.where(lo > 0, lo, np.where(hi < 0, -hi, 0.0))
        high[usable.to_numpy()] = np.maximum(np.abs(lo), np.abs(hi))
    table["metric_ci_low"], table["metric_ci_high"] = low, high
    flagged, cleared = low > threshold, high <= threshold
    table["rated_metric"] = np.where(flagged, low, np.where(cleared, high, np.nan))
    table["predicted_unspecified"] = flagged
    return table


def undecided_counts(part: pd.DataFrame) -> dict:
    """Sampled scoring: the sentences left without a verdict by the sampling error (counted
    apart from those with no pronoun)."""
    if "metric_ci_low" not in part:
        return {}
    undecided = int((part["rated_metric"].isna() & ~part["no_pronoun"]).sum())
    return {"n_undecided": undecided, "n_no_pronoun": int(part["no_pronoun"].sum())}
