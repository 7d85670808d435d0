"""The crossed-design interval (:mod:`biaslens.metrics.intervals.crossed`): recomputed densely
on a tiny design, and its coverage by simulation from crossed random-effects models with a known
mean — subjects met in pairs (UnQover's subject pairs × templates) and names crossed across two
groups (CID's name pairs), with and without each kind of effect."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from biaslens.metrics.intervals.crossed import Design, crossed_variances
from biaslens.metrics.intervals.crossed_ratios import ratio_interval
from tests.statistics.coverage import REPLICATIONS, covers, record


def _dyadic(subjects: int, templates: int):
    pairs = np.array(list(itertools.combinations(range(subjects), 2)))
    first = np.repeat(pairs[:, 0], templates)
    second = np.repeat(pairs[:, 1], templates)
    template = np.tile(np.arange(templates), len(pairs))
    return first, second, template


def test_the_variance_is_the_design_calibrated_jackknife_recomputed_densely():
    """4 subjects × 3 templates, the mean of the units: each kind of cluster deleted in turn
    (a subject with every unit it is in), the five jackknifes weighted so that, under each
    random effect alone, their expected combination is the mean's variance — every
    expectation a trace of dense matrices here."""
    first, second, template = _dyadic(4, 3)
    y = np.random.default_rng(0).normal(size=len(first))
    design = Design(first, second, template)
    point, variances = crossed_variances(
        {"y": y[:, None], "one": np.ones((len(y), 1))},
        lambda s: {"mean": s["y"][:, 0] / s["one"][:, 0]},
        design,
    )
    weights, one_way, _ = _dense_jackknifes(first, second, template, y)
    assert point["mean"] == pytest.approx(y.mean())
    assert variances["mean"] == pytest.approx(float(weights @ one_way), rel=1e-9)


def _dense_jackknifes(first, second, template, y):
    """The five one-way jackknifes of the mean of y (subject, template, subject × template,
    pair, unit), the weights that make their combination unbiased under each random effect
    alone, and each kind's number of clusters, from dense matrices."""
    n = len(first)
    subjects, templates = int(max(first.max(), second.max())) + 1, int(template.max()) + 1
    pairs = sorted(set(zip(first.tolist(), second.tolist(), strict=True)))

    def clusters(kind):
        if kind == "subject":
            return [(first == s) | (second == s) for s in range(subjects)]
        if kind == "template":
            return [template == t for t in range(templates)]
        if kind == "cell":
            return [((first == s) | (second == s)) & (template == t)
                    for s in range(subjects) for t in range(templates)]  # fmt: skip
        if kind == "pair":
            return [(first == i) & (second == j) for i, j in pairs]
        return [np.arange(n) == u for u in range(n)]

    kinds = ("subject", "template", "cell", "pair", "unit")
    # deletion means as linear maps of y: row g averages the units outside cluster g
    maps = {k: np.array([(~m) / (~m).sum() for m in clusters(k)]) for k in kinds}

    def jackknife(rows):
        g = len(rows)
        return (g - 1) / g * ((rows - rows.mean(axis=0)) ** 2).sum(axis=0)

    incidence = {
        "subject": np.array([[(first[u] == s) or (second[u] == s) for s in range(subjects)]
                             for u in range(n)], float),
        "template": np.array([[template[u] == t for t in range(templates)] for u in range(n)],
                             float),
        "cell": np.array([[((first[u] == s) or (second[u] == s)) and template[u] == t
                           for s in range(subjects) for t in range(templates)]
                          for u in range(n)], float),
        "pair": np.array([[(first[u], second[u]) == p for p in pairs] for u in range(n)], float),
        "unit": np.eye(n),
    }  # fmt: skip
    mean = np.full(n, 1 / n)
    expected = np.array(
        [
            [np.trace(_quadratic(maps[k], jackknife) @ z @ z.T) for z in incidence.values()]
            for k in kinds
        ]  # fmt: skip
    )
    truth = np.array([mean @ z @ z.T @ mean for z in incidence.values()])
    weights = np.linalg.solve(expected.T, truth)
    one_way = np.array([jackknife(maps[k] @ y) for k in kinds])
    return weights, one_way, np.array([len(maps[k]) for k in kinds])


def test_a_share_takes_the_degrees_of_freedom_of_the_parts_that_carry_its_variance():
    """A share's Korn–Graubard interval at Satterthwaite's degrees of freedom, recomputed: 12
    subjects × 4 templates (the fewest clusters: 4 templates, 3 degrees of freedom), wins that
    vary with the first subject, so that the subjects' part carries the variance: ν = (Σ c)² /
    Σ c² / (G − 1) over the parts' weighted jackknifes c, and the interval Clopper–Pearson's at
    n* = p̂(1 − p̂) / v shrunk by (z / t_ν)²."""
    first, second, template = _dyadic(12, 4)
    rng = np.random.default_rng(3)
    strength = rng.normal(0, 1.0, 12)
    wins = (strength[first] + rng.normal(0, 0.5, len(first)) > 0.3) * 1.0
    weights, one_way, clusters = _dense_jackknifes(first, second, template, wins)
    parts = weights * one_way
    df = max(3.0, parts.sum() ** 2 / (parts**2 / (clusters - 1)).sum())
    assert 3.0 < df < len(first) - 1
    p, variance = wins.mean(), parts.sum()
    shrunk = min(len(wins), p * (1 - p) / variance) * (1.96 / stats.t.ppf(0.975, df)) ** 2
    low = stats.beta.ppf(0.025, p * shrunk, shrunk - p * shrunk + 1)
    high = stats.beta.ppf(0.975, p * shrunk + 1, shrunk - p * shrunk)
    value, interval = ratio_interval(wins, np.ones(len(wins)), Design(first, second, template),
                                     0.95, share=True)  # fmt: skip
    assert value == pytest.approx(p)
    assert (interval.low, interval.high) == pytest.approx((low, high), rel=1e-3)


def _quadratic(rows: np.ndarray, jackknife) -> np.ndarray:
    """The matrix Q with jackknife(rows @ y) = yᵀ Q y."""
    g = len(rows)
    centred = rows - rows.mean(axis=0)
    return (g - 1) / g * centred.T @ centred


def _dyadic_mean_coverage(
    subjects, templates, subject_sd, template_sd, cell_sd, pair_sd=0.0, truth=0.3
):
    first, second, template = _dyadic(subjects, templates)
    design = Design(first, second, template)
    held, widths = [], []
    for r in range(REPLICATIONS):
        rng = np.random.default_rng(r)
        a = rng.normal(0, subject_sd, subjects)
        b = rng.normal(0, template_sd, templates)
        ab = rng.normal(0, cell_sd, (subjects, templates))
        pair = rng.normal(0, pair_sd, (subjects, subjects))
        y = (truth + a[first] + a[second] + b[template] + ab[first, template]
             + ab[second, template] + pair[first, second]
             + rng.normal(0, 1, len(first)))  # fmt: skip
        _, interval = ratio_interval(y, np.ones(len(y)), design, 0.95)
        held.append(covers(interval.low, interval.high, truth))
        widths.append(interval.high - interval.low)
    return held, widths


@pytest.mark.parametrize(
    ("design", "subjects", "templates", "effects"),
    [
        ("independent units", 10, 8, (0, 0, 0)),
        ("subject effects", 10, 8, (0.5, 0, 0)),
        ("template effects", 10, 8, (0, 0.5, 0)),
        ("subject × template effects", 10, 8, (0, 0, 0.5)),
        ("subject pair effects", 10, 8, (0, 0, 0, 0.5)),
        ("all effects, 5 subjects × 4 templates", 5, 4, (0.3, 0.3, 0.3)),
        ("all effects, 4 subjects × 14 templates", 4, 14, (0.3, 0.1, 0.1)),
    ],
)
def test_the_mean_of_subject_pairs_over_templates_covers(design, subjects, templates, effects):
    held, widths = _dyadic_mean_coverage(subjects, templates, *effects)
    record(f"pair × template mean, {design}", held, widths)


def test_an_interval_that_ignores_the_templates_fails_the_same_check():
    """The check has teeth: treating every unit as an independent draw (what the old bootstrap
    over pair × template units did) covers far less under template effects."""
    first, second, template = _dyadic(10, 8)
    held = []
    for r in range(REPLICATIONS):
        rng = np.random.default_rng(r)
        y = 0.3 + rng.normal(0, 0.5, 8)[template] + rng.normal(0, 1, len(first))
        iid = Design(np.arange(len(y)))
        _, interval = ratio_interval(y, np.ones(len(y)), iid, 0.95)
        held.append(covers(interval.low, interval.high, 0.3))
    assert np.mean(held) < 0.8


def _cid_like(names: int, effect_a: float, effect_b: float, greedy: bool, p: float = 0.3):
    """Each name pair's continuations (8 per pair) are rated biased with a probability that
    depends on both names (logit scale); greedy λ = 0: one continuation per pair, decided by
    group A's name alone."""
    a, b = np.meshgrid(np.arange(names), np.arange(names), indexing="ij")
    first, second = a.ravel(), b.ravel() + names
    design = Design(first, second, None, np.r_[np.zeros(names, int), np.ones(names, int)])
    held, widths = [], []
    for r in range(REPLICATIONS):
        rng = np.random.default_rng(r)
        if greedy:
            biased = (rng.random(names) < p)[first].astype(float)
            _, interval = ratio_interval(biased, np.ones(len(first)), design, 0.95, (0, 1))
        else:
            logit = (stats.logistic.ppf(p) + rng.normal(0, effect_a, names)[first]
                     + rng.normal(0, effect_b, names)[b.ravel()])  # fmt: skip
            hits = rng.binomial(8, stats.logistic.cdf(logit)).astype(float)
            _, interval = ratio_interval(hits, np.full(len(first), 8.0), design, 0.95, (0, 1))
        held.append(
            covers(interval.low, interval.high, truth := _cid_truth(p, effect_a, effect_b, greedy))
        )
        widths.append(interval.high - interval.low)
    return held, widths, truth


def _cid_truth(p, effect_a, effect_b, greedy) -> float:
    """E over names of the probability a continuation is rated biased (by quadrature)."""
    if greedy:
        return p
    spread = np.hypot(effect_a, effect_b)
    z = np.linspace(-8, 8, 4001)
    weights = stats.norm.pdf(z)
    values = stats.logistic.cdf(stats.logistic.ppf(p) + spread * z)
    return float((values * weights).sum() / weights.sum())


@pytest.mark.parametrize(
    ("design", "effects", "greedy", "names"),
    [
        ("independent", (0.0, 0.0), False, 10),
        ("name effects in both groups", (0.8, 0.8), False, 10),
        ("name effects in one group", (1.0, 0.0), False, 10),
        ("greedy λ = 0 (the continuation is group A's name's)", (0.0, 0.0), True, 20),
    ],
)
def test_the_fraction_of_biased_continuations_over_name_pairs_covers(
    design, effects, greedy, names
):
    held, widths, _ = _cid_like(names, *effects, greedy)
    record(f"CID fraction biased, {names}×{names} names, {design}", held, widths)


def _rare(p: float, share: bool, r: int):
    """One replication of a CID cell whose continuations are rarely rated biased: 10 × 10
    names, 8 continuations per pair, name effects of sd 0.8 (logit) in both groups."""
    names = 10
    a, b = np.meshgrid(np.arange(names), np.arange(names), indexing="ij")
    first, second = a.ravel(), b.ravel() + names
    design = Design(first, second, None, np.r_[np.zeros(names, int), np.ones(names, int)])
    rng = np.random.default_rng([r, int(p * 1000)])
    logit = (stats.logistic.ppf(p) + rng.normal(0, 0.8, names)[first]
             + rng.normal(0, 0.8, names)[b.ravel()])  # fmt: skip
    hits = rng.binomial(8, stats.logistic.cdf(logit)).astype(float)
    _, interval = ratio_interval(hits, np.full(len(first), 8.0), design, 0.95, (0, 1), share)
    truth = _cid_truth(p, 0.8, 0.8, False)
    return covers(interval.low, interval.high, truth), interval.high - interval.low


@pytest.mark.parametrize("p", [0.01, 0.05, 0.3])
def test_a_rare_verdicts_share_interval_covers(p):
    """CID's fraction biased is often a few per cent: Korn–Graubard's interval at the design's
    effective size covers at least its level at 1%, 5% and 30% with name effects."""
    rows = [_rare(p, True, r) for r in range(REPLICATIONS)]
    record(f"CID fraction biased, {p:.0%} biased, name effects", [c for c, _ in rows],
           [w for _, w in rows], conservative=True)  # fmt: skip


def test_the_t_interval_would_fail_the_rare_verdicts_check():
    """The check has teeth: the t interval on the same share leaves the truth out (mostly
    above its upper bound) far more than 5% of the time at 1% biased."""
    rows = [_rare(0.01, False, r) for r in range(REPLICATIONS)]
    assert np.mean([c for c, _ in rows]) < 0.9


def test_no_biased_continuation_gives_an_upper_bound():
    """0 of 400 continuations biased: [0, 1 − (α/2)^(1/n*)], n* = 400 · (z/t_df)² (the design
    effect cannot be told from all zeros), not [0, 0]."""
    a, b = np.meshgrid(np.arange(5), np.arange(5), indexing="ij")
    design = Design(a.ravel(), b.ravel() + 5, None, np.r_[np.zeros(5, int), np.ones(5, int)])
    value, interval = ratio_interval(
        np.zeros(25), np.full(25, 16.0), design, 0.95, (0, 1), share=True
    )
    size = 400 * (stats.norm.ppf(0.975) / stats.t.ppf(0.975, 4)) ** 2
    assert value == 0 and interval.low == 0
    assert interval.high == pytest.approx(1 - 0.025 ** (1 / size))
    assert 0.005 < interval.high < 0.05
