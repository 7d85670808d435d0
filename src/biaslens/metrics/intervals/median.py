"""The distribution-free interval of a median (CID's median λ*)."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def median_interval(values: np.ndarray, level: float) -> tuple[float, float, str | None]:
    """The distribution-free interval of a median from order statistics (Conover 1999,
    *Practical Nonparametric Statistics*, §3.2): [x₍j₎, x₍n−j+1₎] with the largest j such
    that P(Binomial(n, ½) < j) ≤ (1 − level)/2. It covers the population median with
    probability at least ``level`` for any distribution — more where λ* takes few grid values
    (ties): conservative by construction. A bound may be ∞ (pairs that never cross τ). Fewer
    pairs than an interval at ``level`` needs: NaN bounds and why."""
    ordered = np.sort(np.asarray(values, dtype=float))
    n = len(ordered)
    tail = (1 - level) / 2
    j = int(stats.binom.ppf(tail, n, 0.5))  # P(X <= j - 1) <= tail < P(X <= j)
    while j > 0 and stats.binom.cdf(j - 1, n, 0.5) > tail:
        j -= 1
    if j < 1:
        need = next(m for m in range(1, 60) if 0.5 ** (m - 1) <= 1 - level)
        return (
            math.nan,
            math.nan,
            f"{n} pair(s) cannot give a {level:.0%} interval for a median (it needs {need})",
        )
    return float(ordered[j - 1]), float(ordered[n - j]), None
