"""The interval of a trend over W when neighbouring W values are alike and sentences are draws.

SIB's Method 1 slope is the least-squares slope of the per-W mean (over the MGC sentences) on
the W index (Section 4). **What it estimates**: the linear trend, over W, of the model's mean
pronoun probability on sentences like these — the sentence frames (verb × life stage) are draws,
and so are the particular dates or places, whose own deviations from the line are alike for
neighbours (a real SmolLM2 run's residuals have lag-1 autocorrelation ≈ .37), which the OLS t
interval ignores. Its variance has two parts:

* **over W**: the per-W means' residuals as AR(1) errors. ρ is matched to the residuals' lag-1
  ratio by its exact finite-sample expectation under the fitted line (tr(M R M A) / tr(M R M),
  M the residual maker), corrected once for its remaining bias by a parametric bootstrap
  (ρ̃ = 2ρ̂ − mean ρ̂*), and σ² by E r'r = σ² tr(M R M). The critical value is that of the
  parametric bootstrap-t (Efron & Tibshirani 1993, ch. 12) under AR(1) errors at ρ̃ — the
  slope over its standard error, both estimated as on the data (at ρ̂) — so that the
  uncertainty of ρ itself is counted. It covers within [.92, .98] for ρ up to .7 on 30
  points and less above .9 (a near unit root).
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
BOOTSTRAP_DRAWS = 400
MIN_POINTS = 4
"""Fewest W values a trend interval is given on (two for the line, one for ρ, one to spare)."""


@dataclass(frozen=True)
class _Grid:
    """Per grid ρ: tr(M R M), tr(M R M A)/tr(M R M), c'R c and the Cholesky factor of R."""

    residual_maker: np.ndarray
    lag: np.ndarray
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
    return _Grid(maker, lag, weights, trace, ratio, slope_variance, chol)


def _fit(grid: _Grid, y: np.ndarray):
    """Slope, its AR(1) variance and the matched ρ of each row of y (…, n)."""
    resid = y @ grid.residual_maker
    energy = np.einsum("...i,...i->...", resid, resid)
    with np.errstate(invalid="ignore", divide="ignore"):
        lag_ratio = np.einsum("...i,ij,...j->...", resid, grid.lag, resid) / energy
    rho = np.clip(np.interp(lag_ratio, grid.ratio, RHO_GRID), 0.0, RHO_GRID[-1])
    variance = (
        energy
        / np.interp(rho, RHO_GRID, grid.trace)
        * np.interp(rho, RHO_GRID, grid.slope_variance)
    )
    return y @ grid.weights, variance, rho


def _draws(grid: _Grid, rho: float, rng: np.random.Generator) -> np.ndarray:
    index = min(int(np.searchsorted(RHO_GRID, rho)), len(RHO_GRID) - 1)
    return rng.normal(size=(BOOTSTRAP_DRAWS, grid.chol.shape[1])) @ grid.chol[index].T


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


def trend_interval(values: np.ndarray, x: np.ndarray, level: float, seed: int = 0) -> Trend:
    """The slope of the per-W mean of ``values`` (sentences × W; one row: a series) on ``x``
    and its interval (module docstring)."""
    values = np.atleast_2d(np.asarray(values, dtype=float))
    x = np.asarray(x, dtype=float)
    sentences, n = values.shape
    means = values.mean(axis=0)
    centred = x - x.mean()
    slope = float(centred @ means / (centred**2).sum())
    if n < MIN_POINTS:
        return Trend(slope, math.nan, math.nan, math.nan, math.nan, n, sentences,
                     f"{n} W values: a trend interval needs at least {MIN_POINTS}")  # fmt: skip
    grid = _grid(tuple(x))
    _, w_variance, rho = _fit(grid, means)
    w_variance, rho = float(w_variance), float(rho)
    if not w_variance > 0:
        flat = "the mean lies exactly on a line: no spread to build an interval on"
        return Trend(slope, math.nan, math.nan, 0.0, math.nan, n, sentences, flat)
    rng = np.random.default_rng([seed, n])
    _, _, rho_star = _fit(grid, _draws(grid, rho, rng))
    corrected = float(np.clip(2 * rho - rho_star.mean(), 0.0, RHO_GRID[-1]))
    star_slope, star_variance, _ = _fit(grid, _draws(grid, corrected, rng))
    critical = float(np.quantile(np.abs(star_slope) / np.sqrt(star_variance), level))
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
    return Trend(slope, slope - half, slope + half, math.sqrt(se_squared), corrected, n, sentences)


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


def trend_columns(values: np.ndarray, w: np.ndarray, level: float, seed: int, prefix: str):
    """The trend interval's columns (:mod:`.trend`) under ``prefix``."""
    trend = trend_interval(values, w, level, seed)
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
