"""The card's verdicts as one claim, by simulation from models with a known truth, on the quick
card's designs: SIB Method 1's female − male slope at 15 sentence frames × 30 dates and × 20
places (frames with slopes of their own, AR(1) W effects), UnQover's μ on fixed subjects (5
subjects × 3 templates × 4 attributes: about the quick religion run's 12 units per attribute
pair), and LEI's four questions on the quick lei-eval step's own contexts (:mod:`.lei_model`):
μ under ethical interventions against 0 and its paired change from no intervention against 0,
μ under adversarial ones against 1 (where a model at its target scores exactly 0 or 1), and
the change under irrelevant ones against 0. Every interval is biaslens's own
(:func:`trend_interval`, the crossed design's, the paired change's), and the family is
tested by :func:`biaslens.auditing.family.holm`.

* an unbiased model's card (every primary at its no-bias value) shows any "evidence" in at most
  5% of 300 cards (within Monte Carlo error: ≤ 0.05 + 2·0.0126);
* the same cards read without the correction (each question at 95%) show it far more often;
* a clearly biased model is detected on each biased question in ≥ 90% of 300 cards;
* a slope of the card's stated detectable effect is detected 75–85% of the time.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pandas as pd
import pytest

from biaslens.auditing.family import FamilyTest, detectable_effect, holm
from biaslens.methods.qa.lei_eval.table import change_table
from biaslens.methods.qa.metrics.unqover_stream import UnqoverAccumulator, intervals_by
from biaslens.methods.sib.intervals.trend import trend_interval
from biaslens.metrics.intervals import IntervalSpec
from tests.statistics import lei_model
from tests.statistics.coverage import REPLICATIONS
from tests.statistics.unqover_model import UnqoverModel

CARDS = REPLICATIONS
ALPHA = 0.05
FRAMES = 15
DATES, PLACES = np.arange(30, dtype=float), np.arange(20, dtype=float)
FAMILY = 7  # two slopes, UnQover's μ, LEI's four questions


def _ar1(n: int, rho: float, rng) -> np.ndarray:
    e = np.empty(n)
    e[0] = rng.normal() / np.sqrt(1 - rho**2)
    for t in range(1, n):
        e[t] = rho * e[t - 1] + rng.normal()
    return e


def _frames(w: np.ndarray, slope: float, rng) -> np.ndarray:
    """Per-frame female − male pronoun probabilities (percent) along W: the true slope, frame
    slopes and levels of their own, W effects shared by the frames (AR(1), ρ = .4), cell
    noise."""
    own = slope + 0.004 * rng.normal(size=FRAMES)
    level = rng.normal(0, 2.0, FRAMES)
    shared = 0.03 * _ar1(len(w), 0.4, rng)
    return (level[:, None] + own[:, None] * w + shared[None, :]
            + 0.08 * rng.normal(size=(FRAMES, len(w))))  # fmt: skip


def _slope_test(w: np.ndarray, slope: float, rng) -> FamilyTest:
    values = _frames(w, slope, rng)
    return FamilyTest(
        0.0, lambda level: (lambda t: (t.low, t.high))(trend_interval(values, w, level))
    )


UNQOVER_NULL = UnqoverModel(attributes=4, spread=0.0, template_sd=0.02)
UNQOVER_BIASED = UnqoverModel(attributes=4, spread=0.0, spike=0.3, template_sd=0.02)


def _mu_test(model: UnqoverModel, rng, seed: int) -> FamilyTest:
    subjects = model.draw_subjects(5, np.random.default_rng(7))  # the same subjects every card
    scores = model.scores(5, 3, rng, subjects)

    def interval(level: float):
        totals = UnqoverAccumulator((), IntervalSpec(level, seed, "fixed", True))
        totals.add(scores)
        bounds = totals.crossed_intervals(totals.clusters)
        return bounds["mu_ci_low"], bounds["mu_ci_high"]

    return FamilyTest(0.0, interval)


LEI_SETS = ("none", "ethical", "adversarial", "irrelevant")


def _lei_scores(r: int, rng, biased: bool):
    """The quick step's four sets scored by one model: at every question's target (no
    preference anywhere, adversarial advice followed: each subject's own attributes at exactly
    1), or biased (a strong preference with no intervention, sd 0.4 cut at ±0.7, which the
    ethical and irrelevant advice remove but to a clear one, sd 0.08, in the ethical and
    adversarial sets). Template effects are shared by the sets (the same contexts)."""
    contexts = lei_model.rows("quick", LEI_SETS)
    subjects, templates, attributes = lei_model.codes(contexts)[4]
    shape = (subjects, attributes)
    u = rng.normal(0, 0.02, (subjects, templates, attributes))
    if biased:
        clear = rng.normal(0, 0.08, shape)
        strong = np.clip(rng.normal(0, 0.4, shape), -0.7, 0.7)
        b = {"none": strong, "ethical": clear, "adversarial": clear, "irrelevant": 0 * clear}
    else:
        b = {k: np.zeros(shape) for k in LEI_SETS} | {"adversarial": lei_model.saturated(contexts)}
    parts = []
    for name in LEI_SETS:
        exact = name == "adversarial" and not biased  # at μ = 1: scores of exactly 0 and 1
        noise, position, shared = (0.0, 0.0, 0 * u) if exact else (0.03, 0.05, u)
        mine = lei_model.scores(contexts, b[name], rng, noise, position, shared)
        parts.append(mine[np.tile((contexts["set"] == name).to_numpy(), 2)])
    return pd.concat(parts, ignore_index=True)


def _lei_tests(r: int, rng, biased: bool) -> list[FamilyTest]:
    """LEI's four questions: μ under ethical advice against 0, its change from no
    intervention against 0, μ under adversarial advice against 1, and the change under
    irrelevant advice against 0 (the run's own interval functions at each level)."""
    scores = _lei_scores(r, rng, biased)

    def mu(name: str, level: float):
        spec = IntervalSpec(level, r, "fixed")
        bounds = intervals_by(scores[scores["set"] == name], "set", ("intervention_id",), spec)
        return bounds["mu_ci_low"].iloc[0], bounds["mu_ci_high"].iloc[0]

    def change(name: str, level: float):
        kept = scores[scores["set"].isin(["none", name])]
        row = change_table(kept, IntervalSpec(level, r, "fixed")).set_index("set").loc[name]
        return row["mu_change_ci_low"], row["mu_change_ci_high"]

    return [FamilyTest(0.0, partial(mu, "ethical")), FamilyTest(0.0, partial(change, "ethical")),
            FamilyTest(1.0, partial(mu, "adversarial")),
            FamilyTest(0.0, partial(change, "irrelevant"))]  # fmt: skip


def _card(r: int, dates=0.0, places=0.0, unqover=UNQOVER_NULL, lei=False) -> list[FamilyTest]:
    rng = np.random.default_rng([2026, r])
    return [_slope_test(DATES, dates, rng), _slope_test(PLACES, places, rng),
            _mu_test(unqover, rng, r), *_lei_tests(r, rng, lei)]  # fmt: skip


def _any_evidence(tests: list[FamilyTest], corrected: bool) -> bool:
    if corrected:
        holm(tests, ALPHA)
        return any(t.rejected for t in tests)
    return any(not (low <= 0.0 <= high) for low, high in (t.at(1 - ALPHA) for t in tests)
               if low is not None)  # fmt: skip


pytestmark = pytest.mark.usefixtures("full_data")  # LEI's contexts are the release's


def test_an_unbiased_models_card_shows_evidence_at_most_five_percent_of_the_time():
    """Holm's card holds the family-wise error; the same cards read without the correction
    (each question at 95%) fail the same check (each card's data drawn once, read both ways)."""
    false, uncorrected = [], []
    for r in range(CARDS):
        tests = _card(r)
        uncorrected.append(_any_evidence(tests, corrected=False))
        false.append(_any_evidence(tests, corrected=True))
    bound = ALPHA + 2 * np.sqrt(ALPHA * (1 - ALPHA) / CARDS)
    share, without = float(np.mean(false)), float(np.mean(uncorrected))
    print(f"unbiased quick card, Holm: any evidence in {share:.3f} of {CARDS} cards; each "
          f"question at 95%: {without:.3f}")  # fmt: skip
    assert share <= bound
    assert without > bound  # the check has teeth: without the correction it fails


def test_a_clearly_biased_model_is_detected():
    found = []
    for r in range(REPLICATIONS):
        tests = _card(r, dates=0.02, places=0.04, unqover=UNQOVER_BIASED, lei=True)
        holm(tests, ALPHA)
        found.append([t.rejected for t in tests])
    power = np.mean(found, axis=0)
    print(f"clearly biased quick card: power {np.round(power, 3)} (dates, places, μ, LEI × 4)")
    assert (power >= 0.90).all()


def test_the_stated_detectable_effect_is_detected_eighty_percent_of_the_time():
    """The card states, for a question with no evidence, the effect its test detects with 80%
    power; the dates slope's, averaged over unbiased cards, is then put into the model."""
    first_level = 1 - ALPHA / FAMILY
    stated = []
    for r in range(100):
        low, high = _slope_test(DATES, 0.0, np.random.default_rng([99, r])).at(first_level)
        stated.append(detectable_effect(low, high, FAMILY, ALPHA))
    effect = float(np.mean(stated))
    detected = []
    for r in range(REPLICATIONS):  # the first step's test of the dates slope (the power the
        # card states is at that level; Holm's later steps could only add to it)
        test = _slope_test(DATES, effect, np.random.default_rng([2026, r]))
        low, high = test.at(first_level)
        detected.append(not low <= 0.0 <= high)
    share = float(np.mean(detected))
    print(f"dates slope of the stated detectable effect {effect:.4g} pp/step: detected {share:.3f}")
    assert 0.75 <= share <= 0.85
