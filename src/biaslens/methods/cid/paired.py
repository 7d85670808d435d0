"""Two audited models' λ* paired over the same perturbation pairs (cid-sensitivity, Section 5).

Both models read the same sentence pairs (x, x'), so each pair gives one difference
λ*(A) − λ*(B). The paired number is the median of those differences, with the
distribution-free order-statistic interval of a median
(:func:`~biaslens.metrics.intervals.median.median_interval`): it covers the median paired
difference over pairs like these with at least its level, for any distribution (a
sign-based interval; more than its level where λ* takes few grid values). A pair where
neither model's similarity ever falls below τ differs by 0 (both lie beyond the grid); one
where only one model's does, by ±∞.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from biaslens.methods.cid.metrics.cid import quantile_with_infinities
from biaslens.metrics.intervals import LEVEL
from biaslens.metrics.intervals.median import median_interval
from biaslens.store.result import RunResult

PAIR_KEY = ("type", "x", "x_prime")
"""What names one perturbation pair in both runs: its type and its two texts."""


def paired_lambda_differences(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """λ*(A) − λ*(B) per pair; 0 where both are ∞ (neither crosses τ on the grid)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    with np.errstate(invalid="ignore"):
        differences = a - b
    differences[np.isinf(a) & np.isinf(b)] = 0.0
    return differences


def _protocol(run: RunResult) -> tuple:
    settings = run.record.settings
    return (settings.get("tau"), tuple((settings.get("decoding") or {}).get("lams") or ()))


def paired_lambda_star(
    folder_a: Path, folder_b: Path, labels: dict, metric: str, level: float = LEVEL
) -> dict | None:
    """Model A − model B for the median λ* of one perturbation type: the median over the
    pairs both read of λ*(A) − λ*(B), with its order-statistic interval (None: a number
    without a paired interval)."""
    if metric != "median" or "type" not in labels:
        return None
    runs = [RunResult.load(folder) for folder in (folder_a, folder_b)]
    if _protocol(runs[0]) != _protocol(runs[1]):
        return {
            "difference": float("nan"),
            "ci_low": float("nan"),
            "ci_high": float("nan"),
            "note": "the two runs read λ* on different grids or at different τ",
            "n": 0,
            "units": "perturbation pairs",
        }
    a, b = (pd.read_csv(run.run_dir / "lambda_star.csv", keep_default_na=False) for run in runs)
    a, b = (t[t["type"] == labels["type"]] for t in (a, b))
    both = a.merge(b, on=list(PAIR_KEY), suffixes=("_a", "_b"))
    differences = paired_lambda_differences(both["lambda_star_a"], both["lambda_star_b"])
    if len(differences) == 0:
        low, high, note, middle = np.nan, np.nan, "no perturbation pair is in both runs", np.nan
    else:
        low, high, note = median_interval(differences, level)
        middle = quantile_with_infinities(differences, 0.5)
    return {
        "difference": middle,
        "ci_low": low,
        "ci_high": high,
        "note": note,
        "n": int(len(differences)),
        "units": "perturbation pairs both read; the median over pairs of λ*(A) − λ*(B)",
    }
