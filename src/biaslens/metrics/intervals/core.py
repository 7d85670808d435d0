"""What every interval shares: the :class:`Interval` (or why there is none), the level's
default, how a run's intervals are made (:class:`IntervalSpec`), Student's t interval on a
variance and the conservative bounds of a maximum (:func:`bounds_interval`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from scipy import stats

from biaslens.errors import BiaslensError

LEVEL = 0.95

SubjectKind = Literal["drawn", "fixed"]
"""What a set's subjects are: ``drawn`` from a population of subjects (first names: a rerun
with other names would differ) or ``fixed``, the population asked about (these religions): see
:class:`~.crossed.Design`."""


@dataclass(frozen=True)
class IntervalSpec:
    """How a run's intervals are made: their ``level``, the ``seed`` of their random splits,
    and whether the subjects are drawn or fixed (:data:`SubjectKind`)."""

    level: float = LEVEL
    seed: int = 0
    subjects: SubjectKind = "drawn"
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
