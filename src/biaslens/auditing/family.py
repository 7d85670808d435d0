"""The card's verdicts as one claim: Holm's step-down procedure over the primary tests of every
question on the card, and the smallest effect each test would detect.

**Holm (1979) by intervals.** With Q judged questions and the card's error rate α (1 − the
interval level, 5%), step j tests the m = Q − j questions not yet rejected, each by its own
interval at level 1 − α/m: those whose interval excludes their target are rejected (evidence),
and the step repeats with the m left, until a step rejects none. Rejecting every question whose
interval at 1 − α/m excludes its target at once is the same as Holm's ordering of p-values
(each such p-value is below α/m ≤ α/(m − 1)), and needs only what each method already has: its
interval, at any level (:attr:`~biaslens.framework.questions.Question.interval_at`). The
probability that the card shows any false "evidence" is then at most α, whatever the
dependence between its questions, provided each interval covers at its level. A question
without a primary value or interval stays in the count m (it can never be rejected), so it
does not loosen the others' levels.

**What "no evidence" could have detected.** A question not rejected states the minimum
detectable effect at 80% power at the family's first level α/Q (the strictest one Holm applies,
so the power is at least 80%): (z_{1−α/(2Q)} + z_{0.8}) · se, the standard error read from the
primary's own interval at that level (its half-width over z_{1−α/(2Q)}), in the number's unit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from scipy import stats

from biaslens.metrics.intervals.core import LEVEL

POWER = 0.8
"""The power at which the detectable effect is stated."""

PROCEDURE = (
    "Holm's step-down procedure over the card's {q} judged question(s): family-wise error "
    "at most {alpha:.0%} (step j tests each question left by its interval at 1 − {alpha:.0%}/m, "
    "m the questions left)"
)


@dataclass
class FamilyTest:
    """One judged question on the card: its target and its interval at any level
    (``interval(level)`` → (low, high), NaN bounds where there is none)."""

    target: float
    interval: Callable[[float], tuple[float, float]]
    rejected: bool = False
    level: float | None = None
    low: float | None = None
    high: float | None = None
    cache: dict[float, tuple[float, float]] = field(default_factory=dict)

    def at(self, level: float) -> tuple[float | None, float | None]:
        """The interval at ``level`` (None bounds: none), computed once per level."""
        if level not in self.cache:
            low, high = self.interval(level)
            self.cache[level] = (float(low), float(high))
        low, high = self.cache[level]
        if not (math.isfinite(low) and math.isfinite(high)):
            return None, None
        return low, high


def excludes(low: float | None, high: float | None, target: float) -> bool:
    """Whether the interval [low, high] leaves ``target`` out (no interval: it does not)."""
    return low is not None and high is not None and not (low <= target <= high)


def holm(
    tests: list[FamilyTest], alpha: float = 1 - LEVEL, untestable: int = 0
) -> list[FamilyTest]:
    """Mark each of ``tests`` rejected or not by Holm's procedure (module docstring), and give
    each the interval of the last step that tested it (``level``, ``low``, ``high``).
    ``untestable``: questions of the family that cannot be tested (never rejected, so they stay
    in every step's count m)."""
    remaining = list(tests)
    while remaining:
        level = 1 - alpha / (len(remaining) + untestable)
        kept = []
        for test in remaining:
            test.level = level
            test.low, test.high = test.at(level)
            if excludes(test.low, test.high, test.target):
                test.rejected = True
            else:
                kept.append(test)
        if len(kept) == len(remaining):
            break
        remaining = kept
    return tests


def detectable_effect(
    low: float | None, high: float | None, tests: int, alpha: float = 1 - LEVEL
) -> float | None:
    """The smallest effect (distance from the target, in the primary's unit) that a test of
    ``tests`` questions would detect with :data:`POWER`, from the primary's interval [low, high]
    at the family's first level 1 − α/``tests`` (module docstring)."""
    if low is None or high is None or tests < 1:
        return None
    z = stats.norm.ppf(1 - alpha / (2 * tests))
    se = (high - low) / (2 * z)
    return float((z + stats.norm.ppf(POWER)) * se)


def procedure(questions: int, alpha: float = 1 - LEVEL) -> str:
    """The sentence naming the card's family-wise procedure."""
    return PROCEDURE.format(q=questions, alpha=alpha)
