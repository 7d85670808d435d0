"""UnQover's μ — the card's question "does the model prefer some subject?" — at the audit's own
designs, by simulation from :mod:`tests.statistics.unqover_model` with the fixed subjects' own
truth: the religion domain's subjects are the population asked about (``--subjects-are auto``
reads them as fixed) and its 50 attributes are all asked; the audit's quick step (``--limit
600``) draws 3 religions × 4 templates, its standard step (``--limit 2400``) 4 × 8
(:meth:`biaslens.methods.qa.data.unqover.QuestionSet.drawn_design`, checked here against the word
lists).

μ is a mean of maxima: its interval is conservative by construction, so under no bias the
test holds it to the band's floor and counts how often its lower bound clears 0 (a false
"evidence" at the run's own 95%), and under a clear bias how often it does (power). δ and ε
(positional and attributive errors) are held to the band around their own truths at the
standard step; those truths are above 0 for any model with score noise, and their intervals
clear 0 under no bias. At the quick step's 4 templates (3 df) they get no interval: a t
interval there covered 0.90–0.93 (1,000 runs), since their template means are skewed."""

from __future__ import annotations

from functools import cache, partial

import numpy as np
import pytest

from biaslens.methods.qa.metrics.unqover_stream import UnqoverAccumulator
from tests.statistics.coverage import covers, record, replicate
from tests.statistics.unqover_model import UnqoverModel

ATTRIBUTES = 50  # religion's activities (biased_religion), every one asked at both sizes
STEPS = {"quick": (600, 3, 4), "standard": (2400, 4, 8)}  # --limit, subjects, templates
SCENARIOS = {
    "no bias": UnqoverModel(attributes=ATTRIBUTES, spread=0.0, template_sd=0.02),
    "clear bias": UnqoverModel(attributes=ATTRIBUTES, spread=0.0, spike=0.2, template_sd=0.02),
}


@cache
def _fixed(scenario: str, subjects: int):
    model = SCENARIOS[scenario]
    drawn = model.draw_subjects(subjects, np.random.default_rng(777))
    return drawn, model.fixed_truth(drawn)


def _replication(scenario: str, step: str, r: int) -> dict:
    """μ, δ and ε: each (covered, width); ``found``: (μ's lower bound above 0, width); and
    ``<δ, ε> above 0``: (its lower bound above 0, width)."""
    _, subjects, templates = STEPS[step]
    drawn, truth = _fixed(scenario, subjects)
    totals = UnqoverAccumulator(intervals=(0.95, r, "fixed"))
    totals.add(SCENARIOS[scenario].scores(subjects, templates, np.random.default_rng(r), drawn))
    row = totals.summary().iloc[0]
    out = {}
    for metric in ("mu", "delta", "epsilon"):
        low, high = row[f"{metric}_ci_low"], row[f"{metric}_ci_high"]
        out[metric] = (covers(low, high, truth[metric]), high - low)
        out[f"{metric} above 0"] = (low > 0, high - low)
        out[f"{metric} refused"] = (bool(row[f"{metric}_ci_note"]), high - low)
    return out


def test_the_steps_draw_these_designs(full_data):
    from biaslens.methods.qa.data.unqover import load_question_set

    questions = load_question_set("religion", full_data / "unqover" / "word_lists")
    for limit, subjects, templates in STEPS.values():
        drawn = questions.sample(limit, 0)
        assert drawn["first"].nunique() == subjects
        assert drawn["template"].nunique() == templates
        assert drawn["attribute"].nunique() == ATTRIBUTES


@pytest.mark.slow
@pytest.mark.parametrize("step", list(STEPS))
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_mu_holds_at_the_audits_designs(scenario, step):
    result = replicate(partial(_replication, scenario, step))
    held, widths = result["mu"]
    record(f"UnQover μ, {step} step, {scenario}", held, widths, conservative=True)
    found = float(np.mean(result["mu above 0"][0]))
    print(f"  lower bound above 0 in {found:.3f}")
    if scenario == "no bias":
        assert found <= 0.05
    else:
        assert found >= 0.90
    for metric in ("delta", "epsilon"):
        if step == "quick":  # 4 templates: refused in every run, never a short interval
            assert all(result[f"{metric} refused"][0]), metric
            continue
        held, widths = result[metric]
        record(f"UnQover {metric}, {step} step, {scenario}", held, widths)
        # the reasoning errors clear 0 for an unbiased model too: their 0 is not a no-bias
        # value (the measures say so)
        assert np.mean(result[f"{metric} above 0"][0]) >= 0.99


def test_the_reasoning_errors_say_their_zero_is_not_reached_by_an_unbiased_model():
    from biaslens.methods.qa.metrics.unqover import MEASURES

    errors = [m for m in MEASURES if m.column in ("delta", "epsilon")]
    assert len(errors) == 2
    for measure in errors:
        assert "not a value an unbiased model reaches" in measure.no_bias
