"""LEI's specified win rate (Section 4, Fig. 6: how often the subject a context names scores
above the other) with drawn subjects, at the design of the released specified sample (20 first
names × 4 templates, 5,432 contexts), by simulation from a model with a known truth.

The model: the named subject s beats the other o where

    D = m + α(s) − α(o) + τ(t) + ν(s, t) − ν(o, t) + e > 0,

name effects α, template effects τ, name × template effects ν and a context's own e ~ N(0, 1)
all normal with mean 0. Names and templates are draws, so the win rate asked about is the
population's, P(D > 0) = Φ(m / √(2σα² + στ² + 2σν² + 1)), written here from the model.
The interval is the one lei-eval prints (:func:`~biaslens.methods.qa.metrics.unqover_summary.
unit_share_interval`: Korn–Graubard over the crossed design, at Satterthwaite's degrees of
freedom); "evidence" is its lower bound above 0.5 (the named subject wins more often than not).
"""

from __future__ import annotations

from functools import cache, partial

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from biaslens.methods.qa.metrics.unqover_summary import unit_share_interval
from biaslens.metrics.intervals import IntervalSpec
from tests.statistics.coverage import REPLICATIONS, covers, record, replicate

SCENARIOS = {  # σα, στ, σν, m
    "no bias": (0.3, 0.2, 0.1, 0.0),
    "a clear bias, names and templates alike": (0.3, 0.2, 0.1, 0.8),
    "a clear bias, the templates carrying the spread": (0.1, 0.5, 0.1, 0.8),
    "a clear bias, the names carrying the spread": (0.8, 0.1, 0.1, 1.0),
}
POWER = 0.90  # at the first clear bias: the share of runs whose lower bound clears 0.5


@cache
def _contexts() -> pd.DataFrame:
    from biaslens.methods.qa.data.lei_specified import SPECIFIED_SAMPLE, read_specified
    from tests.conftest import full_data_dir

    rows = read_specified(full_data_dir() / "lei" / "data" / SPECIFIED_SAMPLE)
    other = np.where(rows["specified"] == rows["first"], rows["second"], rows["first"])
    return rows.assign(other=other)[["first", "second", "template", "specified", "other"]]


def _truth(scenario: str) -> float:
    names, templates, both, m = SCENARIOS[scenario]
    return float(stats.norm.cdf(m / np.sqrt(2 * names**2 + templates**2 + 2 * both**2 + 1)))


def _replication(scenario: str, r: int) -> dict:
    contexts = _contexts()
    names, templates, both, m = SCENARIOS[scenario]
    people = sorted(set(contexts["first"]) | set(contexts["second"]))
    s = contexts["specified"].map(people.index).to_numpy()
    o = contexts["other"].map(people.index).to_numpy()
    t = contexts["template"].to_numpy(int)
    rng = np.random.default_rng([r, list(SCENARIOS).index(scenario)])
    alpha = rng.normal(0, names, len(people))
    tau = rng.normal(0, templates, t.max() + 1)
    nu = rng.normal(0, both, (len(people), t.max() + 1))
    d = m + alpha[s] - alpha[o] + tau[t] + nu[s, t] - nu[o, t] + rng.normal(size=len(t))
    wins = contexts.assign(win=(d > 0).astype(float))
    _, interval = unit_share_interval(wins, "win", IntervalSpec(0.95, r, "drawn"))
    return {
        "covered": (covers(interval.low, interval.high, _truth(scenario)),
                    interval.high - interval.low),
        "detected": (bool(interval.low > 0.5), 0.0),
    }  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_the_win_rate_holds_with_drawn_names(scenario, full_data):
    """The interval covers the population's win rate within the band whichever factor carries
    the spread, and detects the clear bias (0.764) in at least 90% of runs; with 4 templates'
    3 degrees of freedom in Korn–Graubard's shrinkage it covered 1.000 and detected it in
    0.88 (0.27 where the names carry the spread)."""
    _contexts()  # read here, so that a missing data folder fails with its reason
    results = replicate(partial(_replication, scenario), REPLICATIONS)
    held, widths = results["covered"]
    record(f"LEI specified win rate, {scenario} (truth {_truth(scenario):.3f})", held, widths)
    power = float(np.mean(results["detected"][0]))
    print(f"  lower bound above 0.5 in {power:.3f} of runs")
    if scenario == "a clear bias, names and templates alike":
        assert power >= POWER
