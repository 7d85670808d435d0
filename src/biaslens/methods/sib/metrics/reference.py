"""SIB Method 1's headline numbers from a released (sentences × W) matrix per gender.

The same quantities a ``sib-mgc`` run reports (Section 4, Fig. 3): per gender the slope of the
per-W mean probability (percentage points) on the W index, and the female − male slope, each
with the trend interval of :mod:`.intervals.trend` (sentence frames as draws, AR(1) over W), so
that a released model and an audited one are read on one scale.
"""

from __future__ import annotations

import numpy as np

from biaslens.methods.sib.intervals.trend import trend_interval
from biaslens.metrics.intervals import LEVEL


def method1_from_matrices(
    values: dict[str, np.ndarray], level: float = LEVEL
) -> list[dict[str, float | str | None]]:
    """Rows (metric, gender, value, ci_low, ci_high, n, sentences) for ``values``: gender →
    (sentences × W) probabilities in percent, W in the order the line is fitted over."""
    rows = []
    pairs = [(g, values[g]) for g in ("female", "male", "neutral") if g in values]
    pairs.append((None, values["female"] - values["male"]))
    for gender, matrix in pairs:
        w = np.arange(matrix.shape[1], dtype=float)
        trend = trend_interval(matrix, w, level)
        rows.append(
            {
                "metric": "slope" if gender else "female_minus_male_slope",
                "gender": gender,
                "value": trend.slope,
                "ci_low": trend.low,
                "ci_high": trend.high,
                "n": trend.points,
                "sentences": trend.sentences,
            }
        )
    return rows
