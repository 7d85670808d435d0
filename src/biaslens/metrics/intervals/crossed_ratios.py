"""Ratios Σ a / Σ b over the units of a crossed design (:mod:`.crossed`) with their intervals:
a t interval on the design's degrees of freedom, or, for a share, Korn–Graubard's at the
degrees of freedom the variance's own parts carry (Satterthwaite).

**Why Satterthwaite for shares.** The crossed variance is a weighted sum of one-way jackknifes,
one per kind of cluster (subjects, templates, subject × template, pairs, units), each with as
many degrees of freedom as it has clusters, less one. The t interval of a mean takes the fewest
(Cameron, Gelbach & Miller's advice): with 4 templates, 3, whatever the templates' share of the
variance. Korn–Graubard's interval shrinks the effective size by (z / t_df)², so at 3 degrees
of freedom by 0.38: LEI's specified win rate over 20 drawn names × 4 templates then covered
1.000 with the power of a third of its data. Satterthwaite's (1946) degrees of freedom,
(Σ c_k)² / Σ c_k² / ν_k for the parts' contributions c_k and their ν_k, are those of the part
that carries the variance: 3 where the templates do, about 19 where the names do, more where a
unit's own noise does. They are never taken below the fewest (a combination with negative
weights can ask for fewer: then the fewest stand), and a design whose variance is the largest
one-way jackknife (incomplete, or a combination that is not positive) keeps the fewest."""

from __future__ import annotations

import math

import numpy as np
from scipy import sparse

from biaslens.metrics.intervals.core import Interval, t_interval
from biaslens.metrics.intervals.crossed import Design, Sums, combined_variance, one_way_variances
from biaslens.metrics.intervals.shares import clustered_share_interval


def satterthwaite_df(one_way: np.ndarray, design: Design) -> float:
    """The degrees of freedom of the combined variance of one statistic, from its parts'
    jackknifes (in :attr:`Design.parts` order; module docstring)."""
    fewest = float(design.df)
    combined = float(design.weights @ one_way)
    if design.df < 1 or not (design.complete and combined > 0 and np.all(np.isfinite(one_way))):
        return fewest
    contributions = design.weights * one_way
    df = np.array([p.membership.shape[0] - len(np.unique(p.strata)) for p in design.parts])
    used = (df > 0) & (contributions != 0)
    if not used.any():
        return fewest
    spread = float((contributions[used] ** 2 / df[used]).sum())
    return max(fewest, combined**2 / spread)


def ratio_interval(
    numerators: np.ndarray,
    denominators: np.ndarray,
    design: Design,
    level: float,
    clip: tuple[float, float] = (-math.inf, math.inf),
    share: bool = False,
) -> tuple[float, Interval]:
    """Σ a / Σ b over the units (one column each, or (units, cells) for many ratios at once:
    then the first cell's) with its crossed-design interval (``clip``, ``share``: as
    :func:`ratio_intervals`)."""
    a = np.reshape(numerators, (len(numerators), -1))
    b = np.reshape(denominators, (len(denominators), -1))
    values, intervals = ratio_intervals(a, b, design, level, clip, share)
    return float(values[0]), intervals[0]


def ratio_intervals(
    numerators: np.ndarray,
    denominators: np.ndarray,
    design: Design,
    level: float,
    clip: tuple[float, float] = (-math.inf, math.inf),
    share: bool = False,
) -> tuple[np.ndarray, list[Interval]]:
    """Σ a / Σ b per cell (both (units, cells)) with the crossed-design interval of each: e.g.
    the biased continuations and all continuations of each name pair per (group, λ). A t
    interval on the design's degrees of freedom; ``share`` (a counts successes among b
    trials): Korn–Graubard's (:func:`~.shares.clustered_share_interval`), which holds small
    shares, at Satterthwaite's degrees of freedom (module docstring)."""
    cells = numerators.shape[1]

    def statistic(sums: Sums) -> dict[str, np.ndarray]:
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = sums["a"] / np.where(sums["b"] > 0, sums["b"], np.nan)
        return {str(c): ratio[:, c] for c in range(cells)}

    point, per_part = one_way_variances(
        {"a": sparse.csr_matrix(numerators), "b": sparse.csr_matrix(denominators)},
        statistic,
        design,
    )
    values = np.array([point[str(c)] for c in range(cells)])
    intervals = []
    for c in range(cells):
        one_way = np.array([p[str(c)] for p in per_part])
        variance = combined_variance(one_way, design)
        if share:
            hits, trials = numerators[:, c].sum(), denominators[:, c].sum()
            df = satterthwaite_df(one_way, design)
            intervals.append(clustered_share_interval(hits, trials, variance, df, level))
        else:
            intervals.append(t_interval(point[str(c)], variance, design.df, level, clip))
    return values, intervals
