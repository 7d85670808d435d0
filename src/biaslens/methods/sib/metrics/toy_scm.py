"""Statistics of the SIB toy SCM (Appendix B, Fig. 2): what selection does to W–G and X–Y."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats


def selection_probability(alpha: float) -> float:
    """Analytic P(S = 1): W + G + N(0,1) ~ N(0, α² + α²/4 + 1), thresholded at 2α.

    For α = 10 this is 3.74% (the paper says "about 5%")."""
    scale = np.sqrt(alpha**2 + alpha**2 / 4 + 1)
    return float(stats.norm.sf(2 * alpha / scale))


MIN_FOR_CORRELATION = 3
"""Fewer selected units give no correlation (two points always lie on a line)."""


def pearson(x: pd.Series, y: pd.Series) -> float:
    """Pearson's r; NaN (without numpy's warnings) for fewer than
    :data:`MIN_FOR_CORRELATION` points or a constant variable."""
    if len(x) < MIN_FOR_CORRELATION or x.nunique() < 2 or y.nunique() < 2:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def toy_summary(sample: pd.DataFrame) -> dict[str, float]:
    """Selected fraction and Pearson correlations of W–G and X–Y, before and after selection."""
    selected = sample[sample["S"]]
    return {
        "n": int(len(sample)),
        "selected": int(len(selected)),
        "selected_fraction": float(sample["S"].mean()),
        "corr_WG_all": pearson(sample["W"], sample["G"]),
        "corr_WG_selected": pearson(selected["W"], selected["G"]),
        "corr_XY_all": pearson(sample["X"], sample["Y"]),
        "corr_XY_selected": pearson(selected["X"], selected["Y"]),
    }


def too_few_selected(task: str, summary: dict) -> str | None:
    """A note where selection kept too few units for the selected correlations."""
    if summary["selected"] >= MIN_FOR_CORRELATION:
        return None
    return (
        f"{task}: selection kept {summary['selected']} of {summary['n']} units, too few for a "
        f"correlation after selection (it needs {MIN_FOR_CORRELATION}); raise --n"
    )
