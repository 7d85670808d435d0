"""Intervals: of the proportions a method reports (statsmodels' implementations), and the
t and bounds intervals built on a variance (:mod:`.crossed`, :mod:`.unqover_intervals`).

* A share of independent units (TPR, TNR): the Jeffreys interval, the Beta(x + ½, n − x + ½)
  quantiles, 0 at x = 0 and 1 at x = n (Brown, Cai & DasGupta 2001, *Statistical Science*
  16(2), who recommend it beside Wilson's for small n). Its exact coverage stays within
  [0.935, 0.98] at n = 12, 36, 200 and p = .5, .75, .95, where Wilson's falls to 0.914
  (n = 12, p = .75).
* The mean of two independent shares (balanced accuracy): the adjusted Wald interval of a
  linear combination of proportions (Agresti & Caffo 2000; Price & Bonett 2004), each share
  taken as (x + 1) / (n + 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from scipy import stats

from biaslens.errors import BiaslensError

LEVEL = 0.95

SubjectsAre = Literal["drawn", "fixed"]
"""What a set's subjects are: ``drawn`` from a population of subjects (first names: a rerun
with other names would differ) or ``fixed``, the population asked about (these religions): see
:class:`~.crossed.Design`."""


@dataclass(frozen=True)
class IntervalSpec:
    """How a run's intervals are made: their ``level``, the ``seed`` of their random splits,
    and whether the subjects are drawn or fixed (:data:`SubjectsAre`)."""

    level: float = 0.95
    seed: int = 0
    subjects: SubjectsAre = "drawn"
    complete_design: bool = False
    """The set is meant to ask every subject pair every attribute (an UnQover question set; not
    LEI's splits, which ask each pair some): where it does not (a prediction file of some
    contexts), a maximum over the attributes present lies below the maximum over all of them,
    so μ, η and θ4 get no interval."""

    @classmethod
    def of(cls, value: IntervalSpec | tuple | None) -> IntervalSpec | None:
        """A spec from a spec, a (level, seed[, subjects]) tuple, or None (no intervals)."""
        if value is None or isinstance(value, IntervalSpec):
            return value
        return cls(*value)


SMALL_N = 20
"""Below this many units, a note says that the interval is wide for want of data."""


def share_interval(successes: int, n: int, level: float = LEVEL) -> tuple[float, float]:
    """Jeffreys interval of ``successes / n`` (NaN, NaN when n is 0)."""
    if n <= 0:
        return math.nan, math.nan
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(successes, n, alpha=1 - level, method="jeffreys")
    # at 0 and n the bounds are exactly 0 and 1 (rounding would leave 3e-17 or step past)
    low = 0.0 if successes == 0 else max(0.0, float(low))
    high = 1.0 if successes == n else min(1.0, float(high))
    return low, high


def mean_of_two_shares(
    x1: int, n1: int, x2: int, n2: int, level: float = LEVEL
) -> tuple[float, float]:
    """Interval of (x1/n1 + x2/n2) / 2 for independent samples (adjusted Wald, see the
    module); NaN, NaN when either n is 0."""
    if n1 <= 0 or n2 <= 0:
        return math.nan, math.nan
    p1, p2 = (x1 + 1) / (n1 + 2), (x2 + 1) / (n2 + 2)
    centre = (p1 + p2) / 2
    spread = math.sqrt(p1 * (1 - p1) / (n1 + 2) + p2 * (1 - p2) / (n2 + 2)) / 2
    z = stats.norm.ppf(0.5 + level / 2)
    return max(0.0, centre - z * spread), min(1.0, centre + z * spread)


MIN_REPLICATES = 200
"""Fewest bootstrap replicates a method takes (0 turns intervals off)."""


@dataclass(frozen=True)
class Interval:
    """An interval, or why there is none (``low``/``high`` NaN); ``conservative`` where it
    covers with at least its stated probability by construction."""

    low: float
    high: float
    why_not: str | None = None
    conservative: bool = False

    @classmethod
    def none(cls, why: str) -> Interval:
        return cls(math.nan, math.nan, why)


def t_quantile(level: float, df: int) -> float:
    return float(stats.t.ppf(0.5 + level / 2, df))


def check_replicates(replicates: int, name: str = "bootstrap") -> None:
    """0 (no interval) or at least :data:`MIN_REPLICATES`: fewer give a spread too noisy to
    build an interval on."""
    if 0 < replicates < MIN_REPLICATES:
        raise BiaslensError(
            f"{name} {replicates}: too few replicates for an interval; use at least "
            f"{MIN_REPLICATES} (0: no interval)"
        )


def _why_not(estimate: float, variance: float, df: int) -> str | None:
    if df < 1:
        return "one name, subject or template only: nothing to tell the spread from"
    if not math.isfinite(estimate):
        return "the value is undefined"
    if not math.isfinite(variance):
        return "the spread is undefined"
    if variance <= 0:
        return "every unit gives the same value: no spread to build an interval on"
    return None


def t_interval(
    estimate: float,
    variance: float,
    df: int,
    level: float,
    clip: tuple[float, float] = (-math.inf, math.inf),
) -> Interval:
    """estimate ± t(level, df) · √variance, cut to ``clip`` (a share's [0, 1])."""
    why = _why_not(estimate, variance, df)
    if why:
        return Interval.none(why)
    half = t_quantile(level, df) * math.sqrt(variance)
    return Interval(max(clip[0], estimate - half), min(clip[1], estimate + half))


def clustered_share_interval(
    successes: float, n: float, variance: float, df: int, level: float
) -> Interval:
    """The Korn–Graubard interval of a share from a clustered design (Korn & Graubard 1998,
    *Survey Methodology* 24(2); the NCHS standard for proportions from complex surveys): the
    Clopper–Pearson interval at the effective sample size n* = p̂(1 − p̂)/variance (at most n:
    a design effect below 1 is not credited), shrunk for the variance's few degrees of freedom
    by (z/t_df)². Where p̂ is 0 or 1 the design effect cannot be told and n* is n (then the
    interval is [0, 1 − (α/2)^(1/n*)]: an upper bound, not [0, 0]). A t interval on the share
    undercovers where it is small (0.86 at a true 1.8% with name effects); this one covers at
    least its level there (0.93 to 0.95 at 1%, 5% and 30%), more where the names have no effect
    (0.99: the few-df shrinkage is then not needed)."""
    if df < 1:
        return Interval.none("one name, subject or template only: nothing to tell the spread from")
    if not (n > 0 and math.isfinite(variance)):
        return Interval.none("the value is undefined" if not n > 0 else "the spread is undefined")
    share = successes / n
    effective = n
    if 0 < share < 1 and variance > 0:
        effective = min(n, share * (1 - share) / variance)
    effective *= (stats.norm.ppf(0.5 + level / 2) / t_quantile(level, df)) ** 2
    hits, tail = share * effective, (1 - level) / 2
    low = 0.0 if successes <= 0 else float(stats.beta.ppf(tail, hits, effective - hits + 1))
    high = 1.0 if share >= 1 else float(stats.beta.ppf(1 - tail, hits + 1, effective - hits))
    return Interval(low, high, conservative=True)


def bounds_interval(
    lower_estimate: float,
    lower_variance: float,
    upper_estimate: float,
    upper_variance: float,
    df: int,
    level: float,
    clip: tuple[float, float] = (0.0, math.inf),
) -> Interval:
    """A conservative interval for θ, a maximum or absolute value of means.

    The plug-in (the max of the estimated means) is biased upwards (Jensen: E max ≥ max E);
    the cross-fitted estimate (the cell chosen on one half of the templates, its value read
    on the other: sample splitting, Chernozhukov et al. 2018, *Econometrics J.* 21(1)) targets
    the value of a chosen cell, at most θ. So the cross-fit's lower t bound at (1 + level)/2
    lies below θ with probability ≥ (1 + level)/2, and the plug-in's upper bound lies above θ
    with at least that probability: together they cover θ with probability ≥ ``level`` —
    about ``level`` where the largest cell stands clear of the rest, more where cells tie
    (near no bias). A lower bound above 0 is a test of "no bias" (θ = 0) at (1 − level)/2:
    under it the cross-fitted estimate has mean 0. Where the cross-fit or its spread is
    undefined (too few templates or partners to split), the lower bound is the floor θ can
    reach (``clip[0]``): still an interval that covers."""
    why = _why_not(upper_estimate, upper_variance, df)
    if why:
        return Interval.none(why)
    t = t_quantile(level, df)
    high = min(clip[1], upper_estimate + t * math.sqrt(upper_variance))
    if _why_not(lower_estimate, lower_variance, df):
        # too small a set to cross-fit (or to tell the cross-fit's spread): θ ≥ the floor
        return Interval(clip[0], high, conservative=True)
    low = max(clip[0], lower_estimate - t * math.sqrt(lower_variance))
    return Interval(low, high, conservative=True)
