"""Coverage of the median λ*'s distribution-free interval (:func:`biaslens.methods.cid.metrics.cid.
median_interval`): λ* drawn from a fine grid (nearly continuous) and from a coarse λ grid with
pairs that never cross τ (ties and ∞: conservative by construction)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biaslens.methods.cid.metrics.cid import lambda_star_summary
from tests.statistics.coverage import REPLICATIONS, covers, record

FINE = np.round(np.linspace(0, 50, 501), 1)
COARSE = np.array([0.0, 1.0, 5.0, 10.0, 50.0, np.inf])


@pytest.mark.parametrize(
    ("design", "grid", "weights", "pairs", "conservative"),
    [
        ("fine grid", FINE, None, 30, False),
        ("coarse grid with ∞", COARSE, [0.1, 0.15, 0.2, 0.25, 0.2, 0.1], 40, True),
    ],
)
def test_the_median_interval_covers(design, grid, weights, pairs, conservative):
    p = np.full(len(grid), 1 / len(grid)) if weights is None else np.asarray(weights)
    cumulative = np.cumsum(p)
    truth = grid[np.searchsorted(cumulative, 0.5)]  # a population median of the grid draw
    held, widths = [], []
    for r in range(REPLICATIONS):
        stars = np.random.default_rng(r).choice(grid, size=pairs, p=p)
        per_pair = pd.DataFrame({"pair": range(pairs), "type": "t", "lambda_star": stars})
        row = lambda_star_summary(per_pair, level=0.95).iloc[0]
        held.append(covers(row.median_ci_low, row.median_ci_high, truth))
        widths.append(min(row.median_ci_high, 100.0) - row.median_ci_low)
    record(f"median λ*, {design}, {pairs} pairs", held, widths, conservative)
