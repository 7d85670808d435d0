"""η where every template gives the same value (subjects fixed, templates drawn): its
jackknife has no spread, and instead of no interval it gets an exact bound from the templates
that agree (:func:`biaslens.methods.qa.intervals.unqover_ceiling.ceiling_interval`).

Simulated from :mod:`tests.statistics.unqover_model` with the fixed subjects' own truth: a
strong preference with almost no noise, so that every sign of C agrees in every template
(η's deletions all equal), and a design where signs do flip between templates but cancel
between a pair's two subjects (η's deletions equal again, its value still uncertain)."""

from __future__ import annotations

from functools import cache, partial

import numpy as np
import pytest

from biaslens.methods.qa.metrics.unqover_stream import UnqoverAccumulator
from tests.statistics.coverage import REPLICATIONS, covers, record, replicate
from tests.statistics.unqover_model import UnqoverModel

DESIGNS = {  # model, subjects, templates, the power its lower bound must reach (None: none)
    "every sign agrees, 14 templates": (
        UnqoverModel(attributes=3, spread=0.3, noise=0.005, template_sd=0.0, position_sd=0.0),
        5, 14, 0.90,
    ),
    "every sign agrees, 6 templates": (
        UnqoverModel(attributes=3, spread=0.3, noise=0.005, template_sd=0.0, position_sd=0.0),
        5, 6, None,
    ),
    "signs flip but cancel, 14 templates": (
        UnqoverModel(attributes=3, spread=0.2, noise=0.02, template_sd=0.01, position_sd=0.0),
        5, 14, None,
    ),
}  # fmt: skip


@cache
def _fixed(design: str):
    model, subjects, _, _ = DESIGNS[design]
    drawn = model.draw_subjects(subjects, np.random.default_rng(777))
    return drawn, model.fixed_truth(drawn)["eta"]


def _replication(design: str, r: int) -> dict:
    model, _, templates, _ = DESIGNS[design]
    subjects, truth = _fixed(design)
    totals = UnqoverAccumulator(intervals=(0.95, r, "fixed"))
    totals.add(model.scores(len(subjects), templates, np.random.default_rng(r), subjects))
    row = totals.summary().iloc[0]
    low, high = row["eta_ci_low"], row["eta_ci_high"]
    return {"eta": (covers(low, high, truth), high - low), "found": (bool(low > 0), 0.0)}


@pytest.mark.parametrize("design", list(DESIGNS))
def test_eta_without_spread_gets_an_exact_bound_that_covers(design):
    results = replicate(partial(_replication, design), REPLICATIONS)
    held, widths = results["eta"]
    assert not np.isnan(widths).any()  # an interval in every run, none refused
    record(f"η, subjects fixed, {design}", held, widths, conservative=True)
    power = float(np.mean(results["found"][0]))
    print(f"  lower bound > 0 in {power:.3f} of runs")
    if DESIGNS[design][3] is not None:
        assert power >= DESIGNS[design][3]
