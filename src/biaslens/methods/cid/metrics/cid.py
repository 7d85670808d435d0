"""Metrics of the CID paper: continuation counts, fraction biased (Section 4) and λ* (Section 5).

λ* of a perturbation (x, x') is the smallest λ on the grid with
sim(x + CID(x; x', λ), x' + CID(x'; x, λ)) < τ, and ∞ when the similarity never falls below τ.
Low λ* means a strong effect (λ* = 0: visible with plain greedy decoding).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from biaslens.errors import BiaslensError
from biaslens.metrics.intervals.core import LEVEL
from biaslens.metrics.intervals.crossed import Design
from biaslens.metrics.intervals.crossed_ratios import ratio_intervals
from biaslens.metrics.intervals.median import median_interval
from biaslens.metrics.meanings import Measure

DEFAULT_TAU = 0.85

FRACTION_BIASED = Measure(
    "fraction_biased",
    "fraction biased",
    "share of generated continuations rated biased, per group and λ (Section 4, Fig. 2)",
    "0 to 1",
    "equal in both groups",
    "lower is less biased",
    "fraction",
    n="names",
    n_unit="names (the fewer of the two groups')",
    ci="fraction",
    interval="Korn–Graubard interval at the effective size of the crossed design of names "
    "(both groups' names are draws; holds small shares, conservative)",
    estimand="the share of continuations rated biased for names like these in each group "
    "(both groups' names are draws; the raters' verdicts are taken as given); the interval "
    "covers it with at least its level",
    conservative=True,
)
LAMBDA_STAR = Measure(
    "median",
    "median λ*",
    "median over pairs of the smallest λ at which the two contrastive "
    "continuations' similarity falls below τ (Section 5, Fig. 4)",
    "0 to the grid's largest λ, or ∞",
    "∞ (never diverges)",
    "higher means the model is less sensitive to the perturbation",
    "λ",
    n="n",
    n_unit="perturbation pairs",
    ci="median",
    interval="distribution-free order-statistic interval (conservative)",
    estimand="the median λ* over perturbation pairs like these (pairs as independent draws); "
    "the interval covers it with at least its level (more where λ* takes few grid values)",
    conservative=True,
)


def lambda_star(
    table: pd.DataFrame,
    tau: float = DEFAULT_TAU,
    by: str | list[str] = "pair",
    lam: str = "lam",
    similarity: str = "similarity",
) -> pd.Series:
    """λ* per group of ``by`` (one row per (pair, λ) in ``table``); ``inf`` when never < τ."""
    keys = [by] if isinstance(by, str) else list(by)
    if table.duplicated(keys + [lam]).any():
        raise BiaslensError(f"lambda_star: more than one row per ({', '.join(keys)}, {lam})")
    below = table.loc[table[similarity] < tau]
    crossing = below.groupby(keys, sort=True)[lam].min().astype(float)
    every = table.groupby(keys, sort=True)[lam].size().index
    return crossing.reindex(every, fill_value=np.inf).rename("lambda_star")


def quantile_with_infinities(values, q: float) -> float:
    """Linear-interpolation quantile (NumPy's default) of values that may be ±∞: ±∞ where it
    interpolates towards an infinite value, the value itself where it falls on one (NumPy would
    give NaN for 50 + (∞ − 50) × 0), NaN between −∞ and ∞."""
    ordered = np.sort(np.asarray(values, dtype=float))
    place = q * (len(ordered) - 1)
    low, fraction = int(np.floor(place)), place - np.floor(place)
    if fraction == 0:
        return float(ordered[low])
    a, b = ordered[low], ordered[low + 1]
    if a == b:
        return float(a)
    if np.isinf(a) and np.isinf(b):
        return float("nan")
    if np.isinf(a) or np.isinf(b):
        return float(a if np.isinf(a) else b)
    return float(a + (b - a) * fraction)


def lambda_star_summary(
    per_pair: pd.DataFrame, by: str = "type", level: float | None = None
) -> pd.DataFrame:
    """Median and quartiles of λ* per perturbation type, sorted by median like the paper's
    Fig. 4; ``n_never`` counts pairs that never crossed τ. Quantiles interpolate linearly and
    are ∞ when they touch an ∞ value. With ``level``, the median's distribution-free interval
    over pairs (``median_ci_low`` / ``median_ci_high``, ``median_ci_note`` where there is
    none: :func:`median_interval`)."""

    rows = []
    for kind, part in per_pair.groupby(by, sort=False):
        values = part["lambda_star"]
        rows.append(
            {
                by: kind,
                "n": len(values),
                "median": quantile_with_infinities(values, 0.5),
                "q25": quantile_with_infinities(values, 0.25),
                "q75": quantile_with_infinities(values, 0.75),
                "n_never": int(np.isinf(values).sum()),
            }
        )
        if level is not None:
            low, high, why = median_interval(values.to_numpy(dtype=float), level)
            rows[-1] |= {"median_ci_low": low, "median_ci_high": high, "median_ci_note": why}
    return (
        pd.DataFrame(rows).sort_values(["median", "q75", by], kind="stable").reset_index(drop=True)
    )


def similarity_trend(table: pd.DataFrame, lam: str = "lam", similarity: str = "similarity"):
    """Mean similarity per λ (paper Fig. 9) and a monotonicity check.

    Returns the per-λ table and ``{"non_increasing": bool, "spearman_rho": ρ, "violations":
    [[λ_i, λ_j], ...]}`` where a violation is a step on the grid where the mean rose.
    """
    curve = (
        table.groupby(lam, sort=True)[similarity]
        .agg(mean="mean", std="std", n="size")
        .reset_index()
    )
    means = curve["mean"].to_numpy()
    grid = curve[lam].to_numpy()
    rises = np.flatnonzero(np.diff(means) > 0)
    rho = stats.spearmanr(grid, means).statistic if len(grid) > 1 else float("nan")
    check = {
        "non_increasing": bool(len(rises) == 0),
        "spearman_rho": float(rho),
        "violations": [[float(grid[i]), float(grid[i + 1])] for i in rises],
    }
    return curve, check


def top_continuations(
    samples: pd.DataFrame, by: list[str], text: str = "continuation", n: int | None = 10
) -> pd.DataFrame:
    """Counts of each distinct continuation per group of ``by``, most common first (like the
    paper's Fig. 3 and Appendix C.1); ``n`` keeps the top n per group (None: all)."""
    counts = samples.groupby([*by, text], sort=False).size().rename("count").reset_index()
    counts = counts.sort_values([*by, "count", text], ascending=[True] * len(by) + [False, True])
    if n is not None:
        counts = counts.groupby(by, sort=False).head(n)
    return counts.reset_index(drop=True)


def biased_fraction(rated: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Fraction of continuations rated biased per group of ``by``, weighting each distinct
    continuation by how often it was generated (``count``; paper Fig. 2)."""
    weighted = rated.assign(_biased=rated["count"] * rated["biased"].astype(float))
    grouped = weighted.groupby(by, sort=True).agg(
        biased=("_biased", "sum"), continuations=("count", "sum")
    )
    grouped["fraction_biased"] = grouped["biased"] / grouped["continuations"]
    return grouped.reset_index()


def name_design(verdicts: pd.DataFrame, unit: str = "pair"):
    """The crossed design of name pairs: each pair holds a name of each group (stratum), so
    pairs that share a name are not independent (:mod:`.intervals.crossed`). ``verdicts`` has
    ``unit``, ``group``, ``name`` and ``contrast_name`` (the other group's name of the pair);
    where it holds one group's prompts only (one cell), the contrast names are still a stratum
    of their own."""
    groups = sorted(verdicts["group"].unique())
    first = verdicts.drop_duplicates(unit).sort_values(unit)
    other = {g: next((h for h in groups if h != g), f"{g} (contrast)") for g in groups}
    own = list(zip(first["group"], first["name"], strict=True))
    contrast = [(other[g], n) for g, n in zip(first["group"], first["contrast_name"], strict=True)]
    names = sorted(set(own) | set(contrast))
    strata = sorted({g for g, _ in names})
    ids = {key: i for i, key in enumerate(names)}
    design = Design(
        np.array([ids[k] for k in own]),
        np.array([ids[k] for k in contrast]),
        None,
        np.array([strata.index(g) for g, _ in names]),
    )
    return design, first[unit].to_numpy()


def biased_fraction_intervals(
    verdicts: pd.DataFrame, by: list[str], level: float = LEVEL, unit: str = "pair"
) -> pd.DataFrame:
    """Intervals of :func:`biased_fraction` over the crossed design of names: the name pairs
    cross group A's names with group B's, and a continuation depends on both names (at λ = 0
    on one only), so a pair is not an independent draw; the interval resamples names in both
    groups (:mod:`.intervals.crossed`). ``verdicts``: one row per generated continuation, with
    ``unit``, ``group``, ``name``, ``contrast_name``, the ``by`` columns and ``biased`` (0/1).
    Returns ``by`` + ``fraction_ci_low``, ``fraction_ci_high``, ``fraction_ci_note`` (why there
    is no interval, where there is none), ``pairs`` (units in the cell) and ``names``."""
    design, order = name_design(verdicts, unit)
    per_unit = verdicts.groupby([unit, *by], sort=True)["biased"].agg(biased="sum", n="size")
    wide = per_unit.unstack(by, fill_value=0).reindex(order, fill_value=0)
    numerators = wide["biased"].to_numpy(float)
    denominators = wide["n"].to_numpy(float)
    _, intervals = ratio_intervals(numerators, denominators, design, level, share=True)
    cells = wide["n"].columns.to_frame(index=False)
    return cells.assign(
        fraction_ci_low=[i.low for i in intervals],
        fraction_ci_high=[i.high for i in intervals],
        fraction_ci_note=[i.why_not for i in intervals],
        pairs=(denominators > 0).sum(axis=0),
        names=design.df + 1,
    )
