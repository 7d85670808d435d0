"""Two audited models' fraction of continuations rated biased, paired over the same prompts
(cid-audit, Section 4, Fig. 2).

Both runs decode the same prompts: the same name pairs, in both directions, at the same λ.
Once both are rated (``biaslens cid-ratings``), each prompt of a (group, λ) cell has a verdict
from each model, b_A and b_B (its continuation's rating, 0 or 1). On the prompts both runs
rated the two fractions have the same denominator, so their difference is one ratio,
Σ (b_A − b_B) / n. It estimates the difference of the two models' fractions over names like
these (the names are draws from each group's population of names); what the models share on
a name or a prompt cancels in b_A − b_B, which is what makes its interval narrower than the
two fractions' intervals side by side.

**Its interval** is Student's t on the names' degrees of freedom (the fewer group's names
less one) around the sum of the two groups' delete-one-name jackknifes of the per-prompt
differences (a name pair goes with its name in each: the dyadic jackknife of
:mod:`~biaslens.metrics.intervals.crossed`'s names parts), without the crossed combination's
subtraction of the single prompts' jackknife, so each prompt's own noise counts twice: it is
conservative by construction. A difference of two binary verdicts is mostly zeros, its spread
in the few prompts where the models part; simulated from a model with a known truth
(``tests/statistics/test_cid_paired_fraction.py``'s model, 600 replications), the combination
covered 0.920 at the paper's 10 × 10 names, 0.877 at 6 × 5 and 0.938 at 20 × 20; this sum
0.977, 0.948 and 0.975. A cell where every prompt gets the same verdict from both models has
no spread to build an interval on, and says so.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import sparse

from biaslens.methods.cid.metrics.cid import name_design
from biaslens.methods.cid.ratings import rated_samples, read_rated
from biaslens.metrics.intervals import LEVEL
from biaslens.metrics.intervals.core import t_interval
from biaslens.metrics.intervals.crossed import one_way_variances
from biaslens.store.result import RunResult

PROMPT_KEY = ("group", "lam", "input", "contrast")
"""What names one prompt in both runs: its group and λ, and the two texts decoded."""
UNITS = "prompts both runs rated (name pairs at this λ); Σ (biased A − biased B) / n"


def paired_fraction(a: pd.DataFrame, b: pd.DataFrame, level: float = LEVEL) -> dict:
    """Model A − model B for the fraction rated biased of one (group, λ) cell, from each
    run's rated prompts (:func:`~biaslens.methods.cid.ratings.rated_samples`: ``pair``,
    ``name``, ``contrast_name``, ``biased`` and :data:`PROMPT_KEY`), paired over the prompts in
    both (module docstring)."""
    key = list(PROMPT_KEY)
    both = a[[*key, "pair", "name", "contrast_name", "biased"]].merge(
        b[[*key, "biased"]], on=key, suffixes=("_a", "_b"), validate="one_to_one"
    )
    if both.empty:
        return _none("no prompt was decoded by both runs (other names, template or λ)")
    change = both.assign(biased=both["biased_a"].astype(float) - both["biased_b"].astype(float))
    design, order = name_design(change, "pair")
    per_pair = change.groupby("pair")["biased"].agg(["sum", "size"]).reindex(order)
    sums = {k: sparse.csr_matrix(per_pair[[k]].to_numpy(float)) for k in ("sum", "size")}
    point, per_part = one_way_variances(sums, _ratio, design)
    names = sum(v["0"] for part, v in zip(design.parts, per_part, strict=True)
                if part.name.startswith("subject"))  # fmt: skip
    interval = t_interval(point["0"], names, design.df, level, (-1.0, 1.0))
    return {
        "difference": point["0"],
        "ci_low": interval.low,
        "ci_high": interval.high,
        "note": interval.why_not,
        "n": int(len(both)),
        "units": UNITS,
    }


def _ratio(sums) -> dict[str, np.ndarray]:
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "0": sums["sum"][:, 0] / np.where(sums["size"][:, 0] > 0, sums["size"][:, 0], np.nan)
        }


def _none(why: str) -> dict:
    return {"difference": math.nan, "ci_low": math.nan, "ci_high": math.nan, "note": why,
            "n": 0, "units": UNITS}  # fmt: skip


def _cell(run: RunResult, labels: dict) -> pd.DataFrame | None:
    rated = read_rated(run.run_dir)
    if rated is None:
        return None
    verdicts = rated_samples(run, rated)
    lam = np.isclose(verdicts["lam"].astype(float), float(labels["lam"]))
    return verdicts[(verdicts["group"] == labels["group"]) & lam]


def paired_biased_fraction(
    folder_a: Path, folder_b: Path, labels: dict, metric: str, level: float = LEVEL
) -> dict | None:
    """The audit's paired number of two models' cid-audit runs: :func:`paired_fraction` of the
    cell ``labels`` (group, λ); None for a number without a paired interval."""
    if metric != "fraction_biased" or not {"group", "lam"} <= set(labels):
        return None
    runs = [RunResult.load(folder) for folder in (folder_a, folder_b)]
    decoding = [dict(run.record.settings.get("decoding") or {}) for run in runs]
    if decoding[0] != decoding[1]:
        return _none("the two runs decoded with different settings")
    cells = [_cell(run, labels) for run in runs]
    if any(cell is None for cell in cells):
        return _none("a run has no ratings yet (biaslens cid-ratings RUN_DIR FILE)")
    return paired_fraction(cells[0], cells[1], level)
