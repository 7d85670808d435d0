"""The interval of a trend over W when neighbouring W values are alike and sentences are draws.

SIB's Method 1 slope is the least-squares slope of the per-W mean (over the MGC sentences) on
the W index (Section 4). **What it estimates**: the linear trend, over W, of the model's mean
pronoun probability on sentences like these — the sentence frames (verb × life stage) are draws,
and so are the particular dates or places, whose own deviations from the line are alike for
neighbours (a real SmolLM2 run's residuals have lag-1 autocorrelation ≈ .37), which the OLS t
interval ignores. Its variance has two parts:

* **over W**: the per-W means' residuals as AR(1) errors. ρ is matched to the residuals' lag-1
  ratio by its exact finite-sample expectation under the fitted line (tr(M R M A) / tr(M R M),
  M the residual maker), and σ² by E r'r = σ² tr(M R M). The critical value is that of the
  parametric bootstrap-t (Efron & Tibshirani 1993, ch. 12) under AR(1) errors — the slope over
  its standard error, both estimated as on the data — read at **ρ's one-sided 80% upper
  confidence bound** (the largest ρ under which a matched ρ as low as the data's has chance
  ≥ .2), the largest critical value over [0, that bound]. ρ is underestimated most where the
  standard error is, so a critical value at the estimate (even bias-corrected) covered 0.893 on
  20 W values at ρ = .4; at the bound it covers 0.93–0.98 for ρ from 0 to .8 on 20 to 50 W
  values, conservative near ρ = 0 (Berger & Boos's supremum over a 99% set covered ≥ .99: too
  wide). The draws are a table per W grid, drawn once with a fixed seed, so the interval is a
  function of the data.
  The reported ρ is the median-unbiased one (the ρ under which the data's is the median).
* **over sentences**: the spread of the per-sentence slopes (the slope of the mean is their
  mean), less the cell noise that the W part already counts (the residual of sentence lines
  and W effects), with Student's t on S − 1 degrees of freedom.

The two are added (half-widths in quadrature). One sentence: the W part alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy import stats

RHO_GRID = np.linspace(-0.95, 0.98, 300)
BOOTSTRAP_DRAWS = 4000
"""Draws per tabled ρ (the ρ̂ distribution and the bootstrap-t quantiles)."""
RHO_BOUND = 0.8
"""One-sided confidence of the upper bound on ρ the critical value is read at."""
MIN_POINTS = 4
"""Fewest W values a trend interval is given on (two for the line, one for ρ, one to spare)."""


@dataclass(frozen=True)
class _Grid:
    """Per grid ρ: tr(M R M), tr(M R M A)/tr(M R M), c'R c and the Cholesky factor of R."""

    residual_maker: np.ndarray
    weights: np.ndarray  # c: slope = c @ y
    trace: np.ndarray
    ratio: np.ndarray
    slope_variance: np.ndarray
    chol: np.ndarray


@lru_cache(maxsize=16)
def _grid(x_key: tuple[float, ...]) -> _Grid:
    x = np.asarray(x_key)
    n = len(x)
    design = np.column_stack([np.ones(n), x])
    maker = np.eye(n) - design @ np.linalg.solve(design.T @ design, design.T)
    distance = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
    lag = (distance == 1).astype(float) / 2
    centred = x - x.mean()
    weights = centred / (centred**2).sum()
    correlations = RHO_GRID[:, None, None] ** distance[None]
    mrm = np.einsum("ij,gjk,kl->gil", maker, correlations, maker)
    trace = np.trace(mrm, axis1=1, axis2=2)
    ratio = np.einsum("gij,ji->g", mrm, lag) / trace
    slope_variance = np.einsum("i,gij,j->g", weights, correlations, weights)
    chol = np.linalg.cholesky(correlations + 1e-12 * np.eye(n))
    return _Grid(maker, weights, trace, ratio, slope_variance, chol)


def _fit(grid: _Grid, y: np.ndarray):
    """Slope, its AR(1) variance and the matched ρ of each row of y (…, n)."""
    resid = y @ grid.residual_maker
    energy = (resid * resid).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        lag_ratio = (resid[..., 1:] * resid[..., :-1]).sum(axis=-1) / energy  # r'Ar
    rho = np.clip(np.interp(lag_ratio, grid.ratio, RHO_GRID), 0.0, RHO_GRID[-1])
    variance = (
        energy
        / np.interp(rho, RHO_GRID, grid.trace)
        * np.interp(rho, RHO_GRID, grid.slope_variance)
    )
    return y @ grid.weights, variance, rho


@dataclass(frozen=True)
class _Table:
    """Under AR(1) errors at each tabled ρ (the grid's ρ ≥ 0): the sorted matched ρ̂ and the
    sorted |slope − truth| / standard error of :data:`BOOTSTRAP_DRAWS` parametric draws."""

    rho: np.ndarray
    matched: np.ndarray  # (tabled ρ, draws), sorted along draws
    pivot: np.ndarray  # (tabled ρ, draws), sorted along draws

    def chance_at_most(self, rho: float) -> np.ndarray:
        """P(ρ̂ ≤ ``rho``) under each tabled ρ."""
        below = [np.searchsorted(row, rho, side="right") for row in self.matched]
        return np.asarray(below) / self.matched.shape[1]

    def critical(self, level: float) -> np.ndarray:
        """The ``level`` quantile of |t| under each tabled ρ."""
        index = min(max(math.ceil(level * self.pivot.shape[1]) - 1, 0), self.pivot.shape[1] - 1)
        return self.pivot[:, index]


@lru_cache(maxsize=8)
def _table(x_key: tuple[float, ...]) -> _Table:
    grid = _grid(x_key)
    tabled = np.flatnonzero(RHO_GRID >= 0)
    noise = np.random.default_rng([20230601, len(x_key)]).normal(size=(BOOTSTRAP_DRAWS, len(x_key)))
    matched, pivot = [], []
    for index in tabled:
        slope, variance, rho = _fit(grid, noise @ grid.chol[index].T)
        matched.append(np.sort(rho))
        pivot.append(np.sort(np.abs(slope) / np.sqrt(variance)))
    return _Table(RHO_GRID[tabled], np.array(matched), np.array(pivot))


@dataclass(frozen=True)
class Trend:
    """A slope, its interval (NaN with ``why_not`` where there is none), its standard error,
    the AR(1) ρ of the W residuals, the W values and sentences it rests on."""

    slope: float
    low: float
    high: float
    se: float
    rho: float
    points: int
    sentences: int
    why_not: str | None = None


def trend_interval(values: np.ndarray, x: np.ndarray, level: float) -> Trend:
    """The slope of the per-W mean of ``values`` (sentences × W; one row: a series) on ``x``
    and its interval (module docstring)."""
    values = np.atleast_2d(np.asarray(values, dtype=float))
    x = np.asarray(x, dtype=float)
    sentences, n = values.shape
    means = values.mean(axis=0)
    centred = x - x.mean()
    slope = float(centred @ means / (centred**2).sum())
    if n < MIN_POINTS:
        return Trend(
            slope,
            math.nan,
            math.nan,
            math.nan,
            math.nan,
            n,
            sentences,
            f"{n} W values: a trend interval needs at least {MIN_POINTS}",
        )
    grid = _grid(tuple(x))
    _, w_variance, rho = _fit(grid, means)
    w_variance, rho = float(w_variance), float(rho)
    if not w_variance > 0:
        flat = "the mean lies exactly on a line: no spread to build an interval on"
        return Trend(slope, math.nan, math.nan, 0.0, math.nan, n, sentences, flat)
    table = _table(tuple(x))
    chance = table.chance_at_most(rho)
    plausible = chance >= 1 - RHO_BOUND  # [0, ρ's upper bound]: chance falls as ρ grows
    criticals = table.critical(level)
    critical = float(criticals[plausible].max() if plausible.any() else criticals[0])
    median = chance >= 0.5
    median_unbiased = float(table.rho[median].max() if median.any() else 0.0)
    half_squared = critical**2 * w_variance
    se_squared = w_variance
    if sentences > 1:
        per_sentence = values @ grid.weights
        between = per_sentence.var(ddof=1) / sentences
        line = values - values.mean(axis=1, keepdims=True) - np.outer(per_sentence, centred)
        cell = line - line.mean(axis=0, keepdims=True)
        noise = (cell**2).sum() / max((sentences - 1) * (n - 2), 1)
        own = max(0.0, between - noise * (grid.weights**2).sum() / sentences)
        half_squared += stats.t.ppf(0.5 + level / 2, sentences - 1) ** 2 * own
        se_squared += own
    half = math.sqrt(half_squared)
    return Trend(
        slope, slope - half, slope + half, math.sqrt(se_squared), median_unbiased, n, sentences
    )


SENTENCE = ("verb", "life_stage")
"""What tells MGC's sentence frames apart (the same frame is injected with every W)."""


def sentence_matrix(part: pd.DataFrame, column: str) -> tuple[np.ndarray, np.ndarray]:
    """(sentence frames × W) values of ``column`` (percent) and the W indices, for one prompt
    and W kind; frames missing at some W are left out (the trend is then over the complete
    ones), and samples without frame columns give the per-W means as one series."""
    keys = [c for c in SENTENCE if c in part]
    if not keys:
        series = part.groupby("w_index", sort=True)[column].mean()
        return series.to_numpy()[None, :] * 100.0, series.index.to_numpy(float)
    wide = part.pivot_table(index=keys, columns="w_index", values=column, aggfunc="mean")
    complete = wide.dropna(axis=0, how="any")
    if complete.empty:
        complete = wide.mean(axis=0).to_frame().T
    return complete.to_numpy(float) * 100.0, complete.columns.to_numpy(float)


def trend_columns(values: np.ndarray, w: np.ndarray, level: float, prefix: str):
    """The trend interval's columns (:mod:`.trend`) under ``prefix``."""
    trend = trend_interval(values, w, level)
    return {
        f"{prefix}_ci_low": trend.low,
        f"{prefix}_ci_high": trend.high,
        f"{prefix}_ci_note": trend.why_not,
        f"{prefix}_se": trend.se,
        f"{prefix}_rho": trend.rho,
        "sentences": trend.sentences,
    }


def without_empty_notes(table: pd.DataFrame) -> pd.DataFrame:
    """Drop the ``*_ci_note`` columns no row has a note in (a table of numbers reads back from
    its CSV as it was)."""
    empty = [c for c in table.columns if c.endswith("_ci_note") and table[c].isna().all()]
    return table.drop(columns=empty)
