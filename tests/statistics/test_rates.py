"""Coverage of the detector's rate intervals, computed exactly over every outcome of the
binomial draws (the limit of infinitely many replications): TPR/TNR's Jeffreys interval at
small and large n and rates near 0.5 and near 1, and balanced accuracy's adjusted Wald."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from biaslens.metrics.intervals import mean_of_two_shares, share_interval
from tests.statistics.coverage import BAND


@pytest.mark.parametrize(("n", "p"), list(itertools.product((12, 36, 200), (0.5, 0.75, 0.95))))
def test_a_rate_interval_covers_at_its_level(n, p):
    probability = stats.binom.pmf(np.arange(n + 1), n, p)
    held = [share_interval(x, n)[0] <= p <= share_interval(x, n)[1] for x in range(n + 1)]
    coverage = float(probability[held].sum())
    # a binomial's coverage moves in jumps: the least coverage ≥ the band's floor that any
    # interval could have (the outcomes covering p are a run of x values)
    runs = [probability[i : j + 1].sum() for i in range(n + 1) for j in range(i, n + 1)]
    attainable = min(c for c in runs if c >= BAND[0])
    print(f"rate n={n} p={p}: exact coverage {coverage:.3f} (least attainable {attainable:.3f})")
    assert BAND[0] <= coverage <= max(BAND[1], attainable) + 1e-12


@pytest.mark.parametrize("n", [12, 36, 200])
def test_balanced_accuracy_covers_at_its_level(n):
    p1, p2 = 0.8, 0.6
    pmf1, pmf2 = stats.binom.pmf(np.arange(n + 1), n, p1), stats.binom.pmf(np.arange(n + 1), n, p2)
    coverage = 0.0
    for x1, x2 in itertools.product(range(n + 1), repeat=2):
        low, high = mean_of_two_shares(x1, n, x2, n)
        coverage += pmf1[x1] * pmf2[x2] * (low <= (p1 + p2) / 2 <= high)
    print(f"balanced accuracy n={n}: exact coverage {coverage:.3f}")
    assert BAND[0] <= coverage <= BAND[1]


def test_wilson_would_fail_the_same_check():
    """The check has teeth: Wilson's interval, the one this replaced, covers 0.914 at n = 12,
    p = 0.75."""
    from statsmodels.stats.proportion import proportion_confint

    n, p = 12, 0.75
    x = np.arange(n + 1)
    low, high = proportion_confint(x, n, alpha=0.05, method="wilson")
    coverage = float(stats.binom.pmf(x, n, p)[(low <= p) & (p <= high)].sum())
    assert coverage < BAND[0]
