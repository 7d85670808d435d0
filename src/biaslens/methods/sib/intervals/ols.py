"""The least-squares line's intervals: the slope's t interval and the band of the mean response
(the points independent, as SIB's Method 1 fits them; the trend interval that counts alike
neighbours and sentence draws is :mod:`.trend`)."""

from __future__ import annotations

import numpy as np
from scipy import stats

from biaslens.metrics.intervals.core import LEVEL


def fit_trend(x: np.ndarray, y: np.ndarray, level: float = LEVEL) -> dict[str, float]:
    """Least-squares line y = intercept + slope·x with the slope's ``level`` interval
    (ordinary least squares: the points independent; SIB's own fit, Section 4).

    Returns slope, intercept, r, r2, p_value, slope_stderr, slope_ci_low, slope_ci_high, n.
    Where y does not vary (e.g. no pronoun mass at any W in top-5 scoring) the line is flat
    and exact (slope 0, standard error 0) but r, r² and the p-value are undefined: NaN, never
    a made-up 0 or 1.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    n = len(x)
    if n < 3:
        raise ValueError(f"a trend needs at least 3 points, got {n}")
    fit = stats.linregress(x, y)
    sxx = float(((x - x.mean()) ** 2).sum())
    syy = float(((y - y.mean()) ** 2).sum())
    residuals = y - (fit.intercept + fit.slope * x)
    stderr = float(np.sqrt((residuals**2).sum() / (n - 2) / sxx))
    half = stats.t.ppf(0.5 + level / 2, n - 2) * stderr
    r = float(fit.rvalue) if syy > 0 else float("nan")
    return {
        "slope": float(fit.slope),
        "intercept": float(fit.intercept),
        "r": r,
        "r2": r * r,
        "p_value": float(fit.pvalue) if syy > 0 else float("nan"),
        "slope_stderr": stderr,
        "slope_ci_low": float(fit.slope - half),
        "slope_ci_high": float(fit.slope + half),
        "n": n,
    }


def confidence_band(
    x: np.ndarray, y: np.ndarray, grid: np.ndarray, level: float = LEVEL
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fitted line and ``level`` band of the mean response on ``grid`` (statsmodels OLS)."""
    import statsmodels.api as sm

    model = sm.OLS(np.asarray(y, float), sm.add_constant(np.asarray(x, float))).fit()
    prediction = model.get_prediction(sm.add_constant(np.asarray(grid, float), has_constant="add"))
    low, high = prediction.conf_int(alpha=1 - level).T
    return prediction.predicted_mean, low, high
