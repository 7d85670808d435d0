"""The intervals beside the detector's rates, recomputed from their textbook formulas, and
their coverage checked by simulation on data with a known rate."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from biaslens.metrics.intervals import mean_of_two_shares, share_interval

Z = 1.959963984540054  # the standard normal's 97.5% quantile


def jeffreys_by_hand(x: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Jeffreys: the Beta(x + ½, n − x + ½) posterior's equal tails, 0 at x = 0 and 1 at n."""
    tail = (1 - level) / 2
    posterior = stats.beta(x + 0.5, n - x + 0.5)
    return (0.0 if x == 0 else posterior.ppf(tail), 1.0 if x == n else posterior.ppf(1 - tail))


@pytest.mark.parametrize(("x", "n"), [(7, 9), (0, 6), (18, 18), (3, 50), (1, 3)])
def test_the_share_interval_is_jeffreys(x, n):
    assert share_interval(x, n) == pytest.approx(jeffreys_by_hand(x, n), abs=1e-12)
    low, high = share_interval(x, n)
    assert 0 <= low <= x / n <= high <= 1


def test_the_mean_of_two_shares_matches_the_adjusted_wald_formula():
    x1, n1, x2, n2 = 7, 9, 6, 18
    p1, p2 = (x1 + 1) / (n1 + 2), (x2 + 1) / (n2 + 2)
    half = Z * math.sqrt(p1 * (1 - p1) / (n1 + 2) + p2 * (1 - p2) / (n2 + 2)) / 2
    expected = ((p1 + p2) / 2 - half, (p1 + p2) / 2 + half)
    assert mean_of_two_shares(x1, n1, x2, n2) == pytest.approx(expected, abs=1e-12)


def test_no_unit_means_no_interval():
    assert all(math.isnan(v) for v in (*share_interval(0, 0), *mean_of_two_shares(1, 2, 0, 0)))


def test_about_95_of_200_intervals_cover_the_true_rate():
    rng = np.random.default_rng(0)
    n, p = 40, 0.3
    covered = [
        low <= p <= high
        for low, high in (share_interval(int(x), n) for x in rng.binomial(n, p, 200))
    ]
    assert 0.90 <= np.mean(covered) <= 0.99
    p1, p2, n1, n2 = 0.8, 0.4, 30, 25
    xs = zip(rng.binomial(n1, p1, 200), rng.binomial(n2, p2, 200), strict=True)
    both = [mean_of_two_shares(int(a), n1, int(b), n2) for a, b in xs]
    assert 0.90 <= np.mean([lo <= (p1 + p2) / 2 <= hi for lo, hi in both]) <= 0.99


def test_detection_rates_carry_the_intervals_of_the_sentences_they_rest_on():
    from biaslens.methods.sib.metrics.sib import detection_rates

    # 6 unspecified (metric > 0.5 flags): 4 flagged, one without a pronoun (NaN) -> 4 of 5;
    # 4 well-specified: 3 cleared -> 3 of 4
    metric = [0.9, 0.7, 0.6, 0.8, 0.1, float("nan"), 0.2, 0.3, 0.4, 0.9]
    well_specified = [False] * 6 + [True] * 4
    rates = detection_rates(metric, well_specified)
    assert (rates["n_tpr"], rates["n_tnr"]) == (5, 4)
    assert (rates["tpr_ci_low"], rates["tpr_ci_high"]) == pytest.approx(jeffreys_by_hand(4, 5))
    assert (rates["tnr_ci_low"], rates["tnr_ci_high"]) == pytest.approx(jeffreys_by_hand(3, 4))
    low, high = rates["balanced_accuracy_ci_low"], rates["balanced_accuracy_ci_high"]
    assert low < rates["balanced_accuracy"] < high


def test_the_detector_intervals_follow_the_requested_level():
    """--ci-level 0.8: z is the normal's 90% quantile (1.2816), in every rate's interval."""
    from biaslens.methods.sib.metrics.sib import detection_rates

    metric = [0.9, 0.7, 0.6, 0.8, 0.1, 0.2, 0.3, 0.4, 0.9]
    well_specified = [False] * 5 + [True] * 4
    rates = detection_rates(metric, well_specified, level=0.8)
    z80 = 1.2815515655446004
    assert (rates["tpr_ci_low"], rates["tpr_ci_high"]) == pytest.approx(
        jeffreys_by_hand(4, 5, 0.8), abs=1e-12
    )
    assert (rates["tnr_ci_low"], rates["tnr_ci_high"]) == pytest.approx(
        jeffreys_by_hand(3, 4, 0.8), abs=1e-12
    )
    p1, p2 = 5 / 7, 4 / 6  # (x + 1) / (n + 2)
    half = z80 * math.sqrt(p1 * (1 - p1) / 7 + p2 * (1 - p2) / 6) / 2
    expected = ((p1 + p2) / 2 - half, (p1 + p2) / 2 + half)
    got = (rates["balanced_accuracy_ci_low"], rates["balanced_accuracy_ci_high"])
    assert got == pytest.approx(expected, abs=1e-12)
