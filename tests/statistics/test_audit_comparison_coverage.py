"""Coverage of the audit's comparisons across models (:mod:`biaslens.auditing.compare`): the
paired difference of two models' SIB Method 1 slopes (over the sentence frames and W values
both read) and each model's rank interval, simulated from models with known slopes.

Each model's per-sentence probabilities share frame effects, frame slopes and AR(1) W effects
with the other models (the probe's own effects), and add their own frame slopes, AR(1) W
effects and cell noise; the frames are drawn afresh in each replication."""

from __future__ import annotations

import numpy as np
import pandas as pd

from biaslens.auditing.compare import pair_level, rank_intervals
from biaslens.methods.sib.intervals.trend import trend_interval
from biaslens.methods.sib.mgc.audit_role import paired_trend
from tests.statistics.coverage import REPLICATIONS, covers, record

W = np.arange(30)
FRAMES = 12
LABELS = {"prompt": "A", "w_kind": "dates", "gender": "female"}


def _ar1(rho: float, rng, scale: float) -> np.ndarray:
    e = np.empty(len(W))
    e[0] = rng.normal() / np.sqrt(1 - rho**2)
    for t in range(1, len(W)):
        e[t] = rho * e[t - 1] + rng.normal()
    return e * scale


def _models(slopes: list[float], rng) -> list[pd.DataFrame]:
    """One samples table per model (probabilities), female slopes ``slopes`` in pp per step."""
    shared_w = _ar1(0.5, rng, 0.3)
    shared_level = rng.normal(0, 3, FRAMES)
    shared_slope = rng.normal(0, 0.03, FRAMES)
    tables = []
    for slope in slopes:
        own_slope = rng.normal(0, 0.01, FRAMES)
        own_w = _ar1(0.4, rng, 0.1)
        female = (20 + shared_level[:, None] + (slope + shared_slope + own_slope)[:, None] * W
                  + shared_w + own_w + rng.normal(0, 0.2, (FRAMES, len(W))))  # fmt: skip
        male = 30 + 0.01 * W + rng.normal(0, 0.2, (FRAMES, len(W)))
        rows = [
            {"prompt": "A", "w_kind": "dates", "w_index": int(w), "verb": f"v{f}",
             "life_stage": "a child", "p_female": female[f, i] / 100, "p_male": male[f, i] / 100,
             "p_neutral": 0.01}
            for f in range(FRAMES) for i, w in enumerate(W)
        ]  # fmt: skip
        tables.append(pd.DataFrame(rows))
    return tables


def test_the_paired_difference_covers_and_is_sharper_than_the_two_intervals():
    truth = 0.02
    held, widths, apart_widths = [], [], []
    for r in range(REPLICATIONS):
        a, b = _models([0.05, 0.03], np.random.default_rng(r))
        found = paired_trend(a, b, LABELS, "slope", 0.95)
        held.append(covers(found["ci_low"], found["ci_high"], truth))
        widths.append(found["ci_high"] - found["ci_low"])
        own = []
        for table in (a, b):
            wide = table.pivot_table(index="verb", columns="w_index", values="p_female")
            trend = trend_interval(wide.to_numpy() * 100, W.astype(float), 0.95)
            own.append(trend.high - trend.low)
        apart_widths.append(np.hypot(*own))
        if r == 0:
            assert found["frames"] == FRAMES and found["n"] == len(W)
    record("audit: paired female slope difference of two models", held, widths)
    assert np.mean(widths) < 0.5 * np.mean(apart_widths), (np.mean(widths), np.mean(apart_widths))


def test_the_female_minus_male_paired_difference_covers():
    truth = 0.02  # (0.05 − 0.01) − (0.03 − 0.01)
    held, widths = [], []
    for r in range(REPLICATIONS):
        a, b = _models([0.05, 0.03], np.random.default_rng(r))
        found = paired_trend(
            a, b, {"prompt": "A", "w_kind": "dates"}, "female_minus_male_slope", 0.95
        )
        held.append(covers(found["ci_low"], found["ci_high"], truth))
        widths.append(found["ci_high"] - found["ci_low"])
    record("audit: paired female − male slope difference of two models", held, widths)


def test_each_models_rank_interval_holds_its_true_rank():
    slopes = [0.02, 0.04, 0.06, 0.10]
    true_ranks = {f"m{i}": len(slopes) - i for i in range(len(slopes))}  # 1: the largest
    held = {m: [] for m in true_ranks}
    widths = {m: [] for m in true_ranks}
    level = pair_level(len(slopes))
    for r in range(REPLICATIONS):
        tables = dict(zip(true_ranks, _models(slopes, np.random.default_rng(20_000 + r)),
                          strict=True))  # fmt: skip
        names = list(tables)
        pairs, values = {}, {}
        for i, first in enumerate(names):
            wide = tables[first].pivot_table(index="verb", columns="w_index", values="p_female")
            values[first] = trend_interval(wide.to_numpy() * 100, W.astype(float), 0.95).slope
            for second in names[i + 1 :]:
                found = paired_trend(tables[first], tables[second], LABELS, "slope", level)
                pairs[(first, second)] = (found["ci_low"], found["ci_high"])
        for model, (low, high) in rank_intervals(values, pairs).items():
            held[model].append(low <= true_ranks[model] <= high)
            widths[model].append(high - low)
    for model in true_ranks:
        record(f"audit: rank interval of {model} among 4 models", held[model], widths[model],
               conservative=True)  # fmt: skip
    # the intervals say something: the largest model is ranked first in most replications
    assert np.mean([w == 0 for w in widths["m3"]]) > 0.5


def test_rank_intervals_by_hand():
    """Three models, A − B distinguishable above 0, the other pairs not: A is 1–2, B 2–3, C
    1–3."""
    pairs = {("A", "B"): (0.1, 0.5), ("A", "C"): (-0.1, 0.4), ("B", "C"): (-0.3, 0.2)}
    ranks = rank_intervals({"A": 0.3, "B": 0.0, "C": 0.1}, pairs)
    assert ranks == {"A": (1, 2), "B": (2, 3), "C": (1, 3)}
    assert pair_level(3, 0.95) == 1 - 0.05 / 2
