"""The card's family-wise procedure (:mod:`biaslens.auditing.family`) against Holm's procedure
written out here from its definition (Holm 1979: order the p-values; reject H(1) … H(k) while
p(j) ≤ α / (Q − j + 1)), on normal intervals whose p-values are known exactly, and the
detectable effect against its formula worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from biaslens.auditing.family import FamilyTest, detectable_effect, holm


def _normal_test(estimate: float, se: float, target: float = 0.0) -> FamilyTest:
    def interval(level: float):
        half = stats.norm.ppf(0.5 + level / 2) * se
        return estimate - half, estimate + half

    return FamilyTest(target, interval)


def _textbook_holm(p_values: list[float], alpha: float, untestable: int = 0) -> list[bool]:
    """Holm's step-down rule on p-values, as the 1979 paper states it."""
    family = len(p_values) + untestable
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    rejected = [False] * len(p_values)
    for step, index in enumerate(order):
        if p_values[index] <= alpha / (family - step):
            rejected[index] = True
        else:
            break
    return rejected


def test_holm_by_intervals_rejects_what_holm_by_p_values_rejects():
    # z = 3.0 (p .0027), 2.4 (p .0164), 2.2 (p .0278), 1.0 (p .317): Holm at 5% with Q = 4
    # rejects the first (≤ .0125) and the second (≤ .0167), then stops at .0278 > .025
    estimates = [3.0, 2.4, 2.2, 1.0]
    tests = [_normal_test(e, 1.0) for e in estimates]
    holm(tests, 0.05)
    p_values = [2 * stats.norm.sf(e) for e in estimates]
    assert [t.rejected for t in tests] == _textbook_holm(p_values, 0.05) == [
        True, True, False, False,
    ]  # fmt: skip
    # the questions left were last tested at 1 − .05/2
    assert tests[2].level == pytest.approx(0.975) and tests[3].level == pytest.approx(0.975)


@pytest.mark.parametrize("seed", range(40))
def test_holm_matches_the_textbook_rule_on_random_families(seed):
    rng = np.random.default_rng(seed)
    q = int(rng.integers(1, 9))
    estimates = rng.normal(0, 2.5, q)
    targets = rng.normal(0, 0.3, q)
    untestable = int(rng.integers(0, 3))
    tests = [_normal_test(e, 1.0, t) for e, t in zip(estimates, targets, strict=True)]
    holm(tests, 0.05, untestable=untestable)
    p_values = [2 * stats.norm.sf(abs(e - t)) for e, t in zip(estimates, targets, strict=True)]
    assert [t.rejected for t in tests] == _textbook_holm(p_values, 0.05, untestable)


def test_an_untestable_question_stays_in_the_count():
    # p .0164 alone would be rejected at 5% (Q = 1), not with a second, untestable question
    # (threshold .025 … then still .025: it is rejected); at p .03 it is not (> .025)
    assert holm([_normal_test(2.4, 1.0)], 0.05, untestable=1)[0].rejected
    assert not holm([_normal_test(2.17, 1.0)], 0.05, untestable=1)[0].rejected
    assert holm([_normal_test(2.17, 1.0)], 0.05)[0].rejected


def test_the_detectable_effect_is_its_formula():
    # se 0.5, Q = 4, α 5%: z = Φ⁻¹(1 − .05/8) = 2.4977, z_.8 = 0.8416 → 1.6697
    z = stats.norm.ppf(1 - 0.05 / 8)
    low, high = 1.0 - z * 0.5, 1.0 + z * 0.5
    assert detectable_effect(low, high, 4, 0.05) == pytest.approx((2.4977 + 0.8416) * 0.5, 1e-3)
    assert detectable_effect(None, 1.0, 4) is None


def test_a_missing_interval_is_never_evidence():
    test = FamilyTest(0.0, lambda level: (math.nan, math.nan))
    assert not holm([test], 0.05)[0].rejected and test.low is None
