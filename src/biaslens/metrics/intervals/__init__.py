"""Every interval biaslens computes, one module per construction, each with what it estimates
and its reference. The level is always called ``level`` (a method's setting: ``ci_level``,
default :data:`LEVEL`).

* :mod:`.core`: :class:`Interval`; Student's t on a variance; the conservative bounds of a
  maximum (cross-fitted lower, plug-in upper). Every t interval; UnQover's μ, η, θ4.
* :mod:`.shares`: Jeffreys (a share of independent units: SIB's detection rates); adjusted
  Wald (the mean of two shares: balanced accuracy); Korn–Graubard (a share from a clustered
  design: CID's fraction biased, LEI's win rate); Newcombe (a difference of two shares: SIB
  Method 2 from sampled replies).
* :mod:`.crossed`: the design-calibrated delete-one-cluster jackknife of a crossed design of
  subjects (drawn or fixed) × templates: UnQover's δ and ε, CID's name pairs, the audit's
  comparisons.
* :mod:`.unqover`: UnQover's μ, η, θ4, δ, ε over subject pair × template units, with
  cross-fitting (unqover, lei-eval, ``metrics unqover``).
* :mod:`.trend`: a slope over W with AR(1) errors (bootstrap-t) and sentence frames as draws
  (SIB Method 1's slopes and their difference).
* :mod:`.ols`: the least-squares slope's t interval and the band of the mean response (SIB
  Method 1's paper fit and plots).
* :mod:`.median`: the distribution-free order-statistic interval of a median (CID's median λ*).

Each is tested by simulation from a model with a known truth in ``tests/statistics``.
"""

from biaslens.metrics.intervals.core import (
    LEVEL,
    MIN_REPLICATES,
    SMALL_N,
    Interval,
    IntervalSpec,
    SubjectKind,
    bounds_interval,
    check_replicates,
    t_interval,
    t_quantile,
)
from biaslens.metrics.intervals.shares import (
    clustered_share_interval,
    difference_of_shares,
    mean_of_two_shares,
    share_interval,
)

__all__ = [
    "LEVEL",
    "MIN_REPLICATES",
    "SMALL_N",
    "Interval",
    "IntervalSpec",
    "SubjectKind",
    "bounds_interval",
    "check_replicates",
    "clustered_share_interval",
    "difference_of_shares",
    "mean_of_two_shares",
    "share_interval",
    "t_interval",
    "t_quantile",
]
