"""Confidence intervals of the proportions a method reports (statsmodels' implementations).

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

from scipy import stats

LEVEL = 0.95
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
