"""lei-eval's table per intervention set: μ, η, θ4, δ, ε with their intervals, the desired μ
and the gap, and the specified contexts' win rate (LEI Sections 3-4)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from biaslens.methods.qa.data import lei
from biaslens.methods.qa.metrics.unqover import (
    comparative_scores,
    model_summary,
)
from biaslens.methods.qa.metrics.unqover_stream import intervals_by, paired_change
from biaslens.methods.qa.metrics.unqover_summary import (
    gap_intervals,
    sparse_note,
    unit_share_interval,
)
from biaslens.metrics.intervals import IntervalSpec

SETS = ("none", "ethical", "adversarial", "irrelevant")
"""The sets in report order; specified subsets (``specified-female`` …) follow them."""
PAIRING = ("set", "intervention_id")
"""Keys that tell contexts apart: the set (reported) and the intervention (averaged over)."""

CONTEXT = ["first", "second", "template", "attribute"]
"""What identifies a context apart from its intervention."""


def _set_order(name: str) -> tuple[int, str]:
    return (SETS.index(name), "") if name in SETS else (len(SETS), name)


def lei_table(
    scores: pd.DataFrame,
    comparative: pd.DataFrame | None = None,
    intervals: IntervalSpec | tuple | None = None,
    strata: dict[str, str] | None = None,
) -> pd.DataFrame:
    """μ, η, θ4, δ, ε per set with the desired μ and the specified win rate (``comparative``:
    ``comparative_scores(scores, PAIRING)`` when the caller has it); with ``intervals``
    (level, seed), each metric's interval over the set's crossed design of subjects ×
    templates (:mod:`biaslens.methods.qa.intervals.unqover`), the gap's and the win rate's, and
    the units, subjects and templates they rest on.

    The irrelevant set's desired μ is the no-intervention μ *over the same contexts* (its
    interventions are meant to change nothing on those contexts)."""
    if comparative is None:
        comparative = comparative_scores(scores, PAIRING)
    table = model_summary(scores, by=("set",), within=("intervention_id",), comparative=comparative)
    intervals = IntervalSpec.of(intervals)
    if intervals is not None:
        bounds = intervals_by(scores, "set", ("intervention_id",), intervals, strata)
        table = table.merge(bounds, on="set")
        table["caution"] = [sparse_note(float(v)) or "" for v in table["cell_units"]]
    table = table.sort_values("set", key=lambda s: s.map(_set_order)).reset_index(drop=True)
    table["desired_mu"] = table["set"].map(lei.desired_mu)
    if (scores["set"] == "irrelevant").any() and (scores["set"] == "none").any():
        contexts = scores.loc[scores["set"] == "irrelevant", CONTEXT].drop_duplicates()
        same = scores[scores["set"] == "none"].merge(contexts, on=CONTEXT)
        baseline = model_summary(same, within=("intervention_id",))["mu"].iloc[0]
        table.loc[table["set"] == "irrelevant", "desired_mu"] = float(baseline)
    table["desired_mu"] = table["desired_mu"].astype(float)
    table["gap"] = (table["mu"] - table["desired_mu"]).abs()
    if intervals is not None:
        table = gap_intervals(table)
    for name in [s for s in table["set"] if s.startswith("specified")]:
        spec = scores[(scores["set"] == name) & ~scores["negated"].astype(bool)]
        first_named = (spec["specified"] == spec["first"]).to_numpy()
        named = np.where(first_named, spec["s_first"], spec["s_second"])
        other = np.where(first_named, spec["s_second"], spec["s_first"])
        where = table["set"] == name
        table.loc[where, "specified_win_rate"] = float(np.mean(named > other))
        if intervals is not None:
            wins = spec.assign(win=(named > other).astype(float), one=1.0)
            value, interval = unit_share_interval(wins, "win", intervals)
            table.loc[where, "specified_win_rate_ci_low"] = interval.low
            table.loc[where, "specified_win_rate_ci_high"] = interval.high
            table.loc[where, "specified_win_rate_ci_note"] = interval.why_not
    return table


CHANGED = ("ethical", "adversarial", "irrelevant")
"""The intervention sets whose μ is compared with no intervention on the same contexts."""


def _same_contexts(scores: pd.DataFrame, name: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The rows of set ``name`` and the no-intervention rows of the same contexts."""
    part = scores[scores["set"] == name]
    contexts = part[CONTEXT].drop_duplicates()
    return part, scores[scores["set"] == "none"].merge(contexts, on=CONTEXT)


def change_table(
    scores: pd.DataFrame,
    intervals: IntervalSpec | tuple | None = None,
    strata: dict[str, str] | None = None,
) -> pd.DataFrame:
    """Per intervention set: μ there, μ with no intervention over the same contexts, and the
    change (LEI Section 3: ethical advice should lower μ towards 0, irrelevant advice leave it
    as it is), with the paired interval over the crossed design the two share
    (:func:`~biaslens.methods.qa.intervals.unqover_change.paired_intervals`). Empty without a
    no-intervention set."""
    columns = ["set", "mu", "mu_none", "mu_change"]
    intervals = IntervalSpec.of(intervals)
    rows = []
    for name in CHANGED:
        part, same = _same_contexts(scores, name)
        if part.empty or same.empty:
            continue
        within = ("intervention_id",)
        if intervals is None:
            mu = float(model_summary(part, within=within)["mu"].iloc[0])
            mu_none = float(model_summary(same, within=within)["mu"].iloc[0])
            rows.append({"set": name, "mu": mu, "mu_none": mu_none, "mu_change": mu - mu_none})
            continue
        bounds = paired_change(part, same, ("set", *within), intervals, strata)
        row = {"set": name, "mu": bounds["first"], "mu_none": bounds["second"]}
        row.update(
            mu_change=bounds["change"],
            mu_change_ci_low=bounds["change_ci_low"],
            mu_change_ci_high=bounds["change_ci_high"],
            mu_change_ci_note=bounds["change_ci_note"],
            units=bounds["units"],
        )
        rows.append(row)
    return pd.DataFrame(rows, columns=None if rows else columns)
