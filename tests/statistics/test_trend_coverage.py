"""Coverage of SIB Method 1's slope interval (:mod:`biaslens.methods.sib.intervals.trend`):
sentence frames ×
30 W values, the per-W means' deviations from the line independent or AR(1) over W (a real
SmolLM2 run's residuals have lag-1 autocorrelation ≈ .37), sentence frames with slopes of their
own, and the female − male difference through the method's own fits."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biaslens.methods.sib.intervals.trend import trend_interval
from tests.statistics.coverage import REPLICATIONS, covers, record

W = np.arange(30, dtype=float)
SLOPE = 0.05


def _ar1(rho: float, rng, n: int = len(W)) -> np.ndarray:
    e = np.empty(n)
    e[0] = rng.normal() / np.sqrt(1 - rho**2)
    for t in range(1, n):
        e[t] = rho * e[t - 1] + rng.normal()
    return e


@pytest.mark.parametrize(
    ("design", "rho", "sentences", "slope_sd", "cell_sd"),
    [
        ("independent W, one series", 0.0, 1, 0.0, 0.0),
        ("AR(1) ρ = .4 over W, one series", 0.4, 1, 0.0, 0.0),
        ("AR(1) ρ = .6 over W, one series", 0.6, 1, 0.0, 0.0),
        ("AR(1) ρ = .4, 60 frames with slopes of their own", 0.4, 60, 0.05, 1.0),
        ("independent W, 10 frames with slopes of their own", 0.0, 10, 0.1, 0.5),
    ],
)
def test_the_slope_interval_covers(design, rho, sentences, slope_sd, cell_sd):
    held, widths = [], []
    for r in range(REPLICATIONS):
        rng = np.random.default_rng(r)
        slopes = SLOPE + slope_sd * rng.normal(size=sentences)
        values = (slopes[:, None] * W + _ar1(rho, rng)[None, :]
                  + cell_sd * rng.normal(size=(sentences, len(W))))  # fmt: skip
        trend = trend_interval(values, W, 0.95)
        held.append(covers(trend.low, trend.high, SLOPE))
        widths.append(trend.high - trend.low)
    record(f"MGC slope, {design}", held, widths, conservative=rho == 0)


def test_the_ols_t_interval_would_fail_the_autocorrelated_design():
    """The check has teeth: the OLS t interval the slopes had covers about .81 at ρ = .4."""
    from scipy import stats

    held = []
    for r in range(REPLICATIONS):
        y = SLOPE * W + _ar1(0.4, np.random.default_rng(r))
        fit = stats.linregress(W, y)
        half = stats.t.ppf(0.975, len(W) - 2) * fit.stderr
        held.append(abs(fit.slope - SLOPE) <= half)
    assert np.mean(held) < 0.88


def test_the_female_minus_male_slope_interval_covers_through_the_method_fits():
    """sib-mgc's own path: per-sentence masses → fits and slopes tables; the female − male
    slope's interval holds the true difference (0.03 − 0.01 pp per step, in probability
    0.0002 per step) at the nominal rate, with 6 frames × 30 W and AR(1) W effects."""
    from biaslens.methods.sib.metrics.sib import method1_fits, slope_summary

    truth = 0.02  # percentage points per W step
    frames = [("was", "a child"), ("is", "a kid"), ("became", "an adult"),
              ("will be", "a teenager"), ("has been", "an adolescent"),
              ("becomes", "a grown up")]  # fmt: skip
    held, widths = [], []
    for r in range(REPLICATIONS):
        rng = np.random.default_rng(r)
        rows = []
        shared = _ar1(0.4, rng) * 0.2  # percentage points
        female = 20 + 0.03 * W + shared
        male = 30 + 0.01 * W - shared
        for verb, stage in frames:
            own = rng.normal(0, 0.3, (2, len(W)))
            for i, w in enumerate(W):
                rows.append({"prompt": "A", "w_kind": "dates", "w_index": int(w), "w": str(w),
                             "verb": verb, "life_stage": stage,
                             "p_female": (female[i] + own[0, i]) / 100,
                             "p_male": (male[i] + own[1, i]) / 100, "p_neutral": 0.01})  # fmt: skip
        samples = pd.DataFrame(rows)
        fits = method1_fits(samples)
        row = slope_summary(fits, None, samples=samples).iloc[0]
        held.append(covers(row.female_minus_male_ci_low, row.female_minus_male_ci_high, truth))
        widths.append(row.female_minus_male_ci_high - row.female_minus_male_ci_low)
        assert row.n == 30 and row.sentences == len(frames)
    record("MGC female − male slope (method fits)", held, widths)


@pytest.mark.parametrize("replies", [10])
def test_the_slope_interval_covers_under_sampled_scoring(replies):
    """Sampled scoring: each sentence's masses are the shares of K replies (a multinomial
    draw over female / male / neutral / other) from the model's true probabilities. The
    sampling error is cell noise, independent over sentences and W values, which the
    interval's W residuals and sentence spread count: the female − male slope's interval
    holds the true difference at the nominal rate, with K = 10 (sampling error dominating;
    K = 50 covered 0.953 when last run), 6 frames × 30 W, AR(1) W effects. With cell noise
    dominating, the per-W means are close to independent, where the interval is conservative
    (its critical value is read at ρ's upper bound): 0.983 at K = 10, its floor asserted."""
    from biaslens.methods.sib.metrics.sib import method1_fits, slope_summary

    truth = 0.2  # percentage points per W step
    held, widths = [], []
    for r in range(REPLICATIONS):
        rng = np.random.default_rng([r, replies])
        shared = _ar1(0.4, rng) * 0.5  # percentage points
        female = 20 + 0.3 * W + shared
        male = 30 + 0.1 * W - shared
        rows = []
        for frame in range(6):
            own = rng.normal(0, 1.0, (2, len(W)))
            for i, w in enumerate(W):
                p = np.array([female[i] + own[0, i], male[i] + own[1, i], 5.0]) / 100
                counts = rng.multinomial(replies, [*p, 1 - p.sum()])
                rows.append({"prompt": "A", "w_kind": "dates", "w_index": int(w), "w": str(w),
                             "verb": f"v{frame}", "life_stage": "a child",
                             "p_female": counts[0] / replies, "p_male": counts[1] / replies,
                             "p_neutral": counts[2] / replies})  # fmt: skip
        samples = pd.DataFrame(rows)
        fits = method1_fits(samples)
        row = slope_summary(fits, None, samples=samples).iloc[0]
        held.append(covers(row.female_minus_male_ci_low, row.female_minus_male_ci_high, truth))
        widths.append(row.female_minus_male_ci_high - row.female_minus_male_ci_low)
    record(f"MGC female − male slope, sampled scoring, K = {replies}", held, widths,
           conservative=True)  # fmt: skip


AUDIT_DESIGNS = {  # the audit's MGC steps: sentence frames × W values of each kind, AR(1) ρ
    "quick, 15 frames × 30 dates": (15, 30, 0.4),
    "quick, 15 frames × 20 places": (15, 20, 0.4),
    "standard, 60 frames × 30 dates": (60, 30, 0.4),
    "standard, 60 frames × 20 places": (60, 20, 0.4),
    "standard, 60 frames × 20 places, independent W": (60, 20, 0.0),
    "standard, 60 frames × 20 places, ρ = .6": (60, 20, 0.6),
}


@pytest.mark.parametrize("design", list(AUDIT_DESIGNS))
def test_the_slope_interval_holds_at_the_audits_designs(design):
    """At the audit's own frames × W, with AR(1) W effects, frames with slopes of their own and
    cell noise, the interval covers the trend (the interval is equivariant: the same at any
    true slope, so no trend and a clear one cover alike). At the standard step's 60 frames the
    W part dominates: with the critical value at the estimated ρ (bias-corrected) the
    interval covered 0.893 at 20 places and ρ = .4; read at ρ's 80% upper bound it holds."""
    frames, count, rho = AUDIT_DESIGNS[design]
    w = np.arange(count, dtype=float)
    held, widths = [], []
    for r in range(REPLICATIONS):
        rng = np.random.default_rng([r, frames, count])
        slopes = SLOPE + 0.01 * rng.normal(size=frames)
        values = (slopes[:, None] * w + _ar1(rho, rng, count)[None, :]
                  + rng.normal(size=(frames, count)))  # fmt: skip
        trend = trend_interval(values, w, 0.95)
        held.append(covers(trend.low, trend.high, SLOPE))
        widths.append(trend.high - trend.low)
    record(f"MGC slope at the audit's design, {design}", held, widths, conservative=rho == 0)
