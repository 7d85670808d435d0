"""Two models' λ* paired over the same perturbation pairs
(:mod:`biaslens.methods.cid.paired`): the median paired difference's order-statistic interval
covers the population median of λ*(A) − λ*(B), on a fine grid (nearly continuous: exact) and on
a coarse grid with pairs that never cross τ (ties and ∞: conservative, as documented); with the
pairing broken (model B's pairs shuffled) it no longer covers."""

from __future__ import annotations

import numpy as np
import pytest

from biaslens.methods.cid.paired import paired_lambda_differences
from biaslens.metrics.intervals.median import median_interval
from tests.statistics.coverage import REPLICATIONS, covers, record

FINE = np.round(np.linspace(0, 50, 501), 1)
COARSE = np.array([0.0, 1.0, 5.0, 10.0, 50.0, np.inf])


def draw(grid: np.ndarray, pairs: int, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """λ* of two models on the same pairs: a pair's difficulty is shared (a latent normal,
    wide), and model A's λ* is one step above B's on most pairs and four steps below on the
    rest (give or take half a step), so the median paired difference (near one step up) is
    far from what unpaired draws give
    (the between-pair spread swamps it)."""
    spread = len(grid) - 1
    step = max(1, round(0.04 * spread))
    b = np.round(0.45 * spread + 0.2 * spread * rng.normal(size=pairs))
    a = b + np.where(rng.random(pairs) < 0.8, step, -4 * step)
    a = np.round(a + 0.5 * step * rng.normal(size=pairs))  # continuous on a fine grid
    a, b = (np.clip(x, 0, spread).astype(int) for x in (a, b))
    return grid[a], grid[b]


def by_hand(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The rule written again: A − B, and 0 where both never cross (both ∞)."""
    out = []
    for x, y in zip(a, b, strict=True):
        out.append(0.0 if np.isinf(x) and np.isinf(y) else float(x) - float(y))
    return np.array(out)


def population_median(grid: np.ndarray, pairs: int) -> float:
    """The median of λ*(A) − λ*(B) over a large draw of pairs (the estimand)."""
    a, b = draw(grid, 400_000 // pairs * pairs, np.random.default_rng(10_000))
    differences = np.sort(by_hand(a, b))
    return float(differences[len(differences) // 2])


@pytest.mark.parametrize(
    ("design", "grid", "pairs", "conservative"),
    [("fine grid", FINE, 60, False), ("coarse grid with ∞", COARSE, 60, True)],
)
def test_the_paired_median_interval_covers(design, grid, pairs, conservative):
    truth = population_median(grid, pairs)
    held, widths = [], []
    for r in range(REPLICATIONS):
        rng = np.random.default_rng(r)
        a, b = draw(grid, pairs, rng)
        low, high, _ = median_interval(paired_lambda_differences(a, b), 0.95)
        held.append(covers(low, high, truth))
        widths.append(min(high, 100.0) - max(low, -100.0))
    record(f"median paired λ* difference, {design}, {pairs} pairs", held, widths, conservative)


def test_a_broken_pairing_misses_the_paired_difference():
    """The same λ* values with model B's pairs shuffled: the differences of unrelated pairs
    (the between-pair spread swamps the one-step difference) no longer hold the median paired
    difference."""
    truth = population_median(FINE, 400)
    held = []
    for r in range(REPLICATIONS):
        rng = np.random.default_rng(r)
        a, b = draw(FINE, 400, rng)
        low, high, _ = median_interval(paired_lambda_differences(a, rng.permutation(b)), 0.95)
        held.append(covers(low, high, truth))
    assert np.mean(held) < 0.85, np.mean(held)  # far below the band of a paired interval


def test_the_differences_follow_the_rule_written_again():
    a = np.array([np.inf, 1.0, np.inf, 2.0, 0.0, 5.0])
    b = np.array([np.inf, np.inf, 1.0, 2.0, 5.0, 0.0])
    assert paired_lambda_differences(a, b).tolist() == by_hand(a, b).tolist()
    assert by_hand(a, b).tolist() == [0.0, -np.inf, np.inf, 0.0, -5.0, 5.0]
