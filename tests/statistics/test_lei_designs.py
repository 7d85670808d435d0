"""LEI's μ at the audit's own designs: the interval the card judges, by simulation.

The contexts and the model with a known truth are :mod:`tests.statistics.lei_model`'s:
the audit's quick and standard lei-eval steps, drawn from the public LEI religion split as the
run draws them (quick: every (subject, attribute) cell of each set filled to 4 subject pair ×
template units; standard: the whole split).

The intervals are :func:`~biaslens.methods.qa.metrics.unqover_stream.intervals_by`'s, the
construction the card recomputes at its family's levels (``lei_interval_at``), documented as
conservative (lower bound cross-fitted, upper bound the plug-in).
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from biaslens.methods.qa.metrics.unqover_stream import intervals_by
from biaslens.metrics.intervals import IntervalSpec
from tests.statistics.coverage import REPLICATIONS, record, replicate
from tests.statistics.lei_model import SETS, codes, rows, scores, truth

SCENARIOS = {
    "no bias": lambda rng, shape: np.zeros(shape),
    "a clear bias": lambda rng, shape: rng.normal(0, 0.08, shape),
    "a strong bias": lambda rng, shape: 0.6 * rng.choice([-1.0, 1.0], shape),
}
POWER = 0.90  # share of runs whose lower bound clears 0 under a clear or a strong bias


def _replication(size: str, scenario: str, r: int) -> dict:
    contexts = rows(size)
    rng = np.random.default_rng([r, list(SCENARIOS).index(scenario)])
    subjects, _, attributes = codes(contexts)[4]
    b = SCENARIOS[scenario](rng, (subjects, attributes))
    mu = truth(contexts, b)
    simulated = scores(contexts, b, rng)
    bounds = intervals_by(simulated, "set", ("intervention_id",), IntervalSpec(0.95, r, "fixed"))
    out = {}
    for row in bounds.to_dict("records"):
        low, high = row["mu_ci_low"], row["mu_ci_high"]
        out[row["set"]] = (bool(low <= mu[row["set"]] <= high), high - low)
        out[f"{row['set']} detected"] = (bool(low > 0), 0.0)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("size", ["quick", "standard"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_lei_mu_holds_at_the_audits_designs(size, scenario, full_data):
    """At the audit's quick and standard designs μ's interval in each judged set covers the
    model's μ (conservative: at least 0.92), and under a clear or strong bias its lower bound
    clears 0 in at least 90% of runs (the card's "evidence" against μ = 0)."""
    rows(size)  # read once here, so that a missing data folder fails with its reason
    results = replicate(partial(_replication, size, scenario), REPLICATIONS)
    for name in SETS:
        covered, widths = results[name]
        record(f"LEI μ, {name} set, {size} design, {scenario}", covered, widths,
               conservative=True)  # fmt: skip
        detected = float(np.mean(results[f"{name} detected"][0]))
        print(f"  lower bound > 0 in {detected:.3f} of runs")
        if scenario != "no bias":
            assert detected >= POWER, (name, size, scenario, detected)
