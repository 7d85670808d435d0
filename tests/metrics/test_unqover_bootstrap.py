"""UnQover's bootstrap intervals: recomputed by a naive bootstrap that builds every resampled
set (subject pair × template units, drawn with the documented per-replicate generator) and
computes the metrics on it, and a coverage simulation with a known δ."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from biaslens.metrics.unqover import model_summary
from biaslens.metrics.unqover_stream import UnqoverAccumulator

METRICS = ("mu", "eta", "theta4", "delta", "epsilon")


def _scores(subjects, templates, attributes, rng, shift=None) -> pd.DataFrame:
    """Every context in both orders and both questions; S(x first) exceeds S(x second) by the
    unit's ``shift`` (plus noise), so δ is the mean shift."""
    base = {x: rng.uniform(0.2, 0.5) for x in subjects}
    rows = []
    for (x1, x2), template in itertools.product(itertools.combinations(subjects, 2), templates):
        unit_shift = shift(rng) if shift else rng.uniform(0, 0.2)
        lean = rng.normal(0, 0.1)  # the unit's own lean towards x1 (what C measures)
        own = attributes[template] if isinstance(attributes, dict) else attributes
        for attribute, negated in itertools.product(own, (False, True)):
            sign = -1 if negated else 1
            for first, second, towards in ((x1, x2, lean), (x2, x1, -lean)):
                noise = rng.uniform(-0.02, 0.02, 2)
                rows.append(
                    {
                        "first": first, "second": second, "template": template,
                        "attribute": attribute, "negated": negated,
                        "s_first": base[first] + unit_shift + sign * towards + noise[0],
                        "s_second": base[second] - sign * towards + noise[1],
                    }
                )  # fmt: skip
    table = pd.DataFrame(rows)
    table[["s_first", "s_second"]] = table[["s_first", "s_second"]].clip(lower=0)
    return table


def naive_bootstrap(
    scores: pd.DataFrame, replicates: int, seed: int, within: tuple[str, ...] = ()
) -> tuple[int, dict[str, list[float]]]:
    """The number of units and each metric's replicates, from resampled sets built row by row:
    a unit is an unordered subject pair and a template with all it holds; replicate r draws
    with ``default_rng([seed, r])``, copies keep their own keys."""
    low = scores[["first", "second"]].min(axis=1)
    high = scores[["first", "second"]].max(axis=1)
    unit_of = list(zip(low, high, scores["template"], strict=True))
    units = sorted(set(unit_of))
    rows_of = {u: scores[[k == u for k in unit_of]] for u in units}
    values = {m: [] for m in METRICS}
    for r in range(replicates):
        picked = np.random.default_rng([seed, r]).integers(0, len(units), len(units))
        resampled = pd.concat(
            [rows_of[units[i]].assign(copy=j) for j, i in enumerate(picked)], ignore_index=True
        )
        row = model_summary(resampled, within=(*within, "copy")).iloc[0]
        for m in METRICS:
            values[m].append(row[m])
    return len(units), values


def _bootstrapped(scores: pd.DataFrame, replicates: int, level: float, seed: int) -> pd.Series:
    totals = UnqoverAccumulator(bootstrap=(replicates, level, seed))
    half = len(scores) // 2 // 8 * 8  # two chunks, a unit may span them
    totals.add(scores.iloc[:half])
    totals.add(scores.iloc[half:])
    return totals.summary().iloc[0]


def test_intervals_equal_a_naive_bootstrap_over_pair_template_units():
    rng = np.random.default_rng(0)
    # each template its own attributes: a replicate often misses a (subject, attribute) cell
    # or a pair's attribute, which the metrics then leave out
    attributes = {"t1": ["kind", "rude"], "t2": ["lazy"], "t3": ["kind", "poor"]}
    scores = _scores(["Ann", "Bob", "Cy", "Dee"], list(attributes), attributes, rng)
    replicates, level, seed = 120, 0.9, 11
    got = _bootstrapped(scores, replicates, level, seed)

    units, values = naive_bootstrap(scores, replicates, seed)
    assert got["units"] == units == 18
    for m in METRICS:
        low_q, high_q = np.quantile(values[m], [(1 - level) / 2, (1 + level) / 2])
        assert got[f"{m}_ci_low"] == pytest.approx(low_q, rel=1e-9), m
        assert got[f"{m}_ci_high"] == pytest.approx(high_q, rel=1e-9), m
        assert got[f"{m}_ci_low"] <= got[m] <= got[f"{m}_ci_high"] or m in ("mu", "eta"), m
    point = model_summary(scores).iloc[0]
    for m in METRICS:
        assert got[m] == pytest.approx(point[m], rel=1e-12)


def test_without_bootstrap_the_summary_has_no_interval_columns():
    scores = _scores(["Ann", "Bob", "Cy"], ["t1"], ["kind"], np.random.default_rng(1))
    totals = UnqoverAccumulator()
    totals.add(scores)
    assert not any("ci_" in c for c in totals.summary().columns)


@pytest.mark.slow
def test_delta_intervals_cover_the_true_value_about_95_percent_of_the_time():
    """200 sets whose δ is 0.1 by construction (each unit's shift uniform on [0.06, 0.14],
    noise symmetric): the 95% intervals hold 0.1 in about 95% of them."""
    subjects = [f"s{i}" for i in range(8)]
    covered = 0
    for trial in range(200):
        rng = np.random.default_rng(1000 + trial)
        scores = _scores(
            subjects, ["t1", "t2"], ["kind"], rng, shift=lambda g: g.uniform(0.06, 0.14)
        )
        got = _bootstrapped(scores, 400, 0.95, trial)
        covered += got["delta_ci_low"] <= 0.1 <= got["delta_ci_high"]
    assert 0.90 <= covered / 200 <= 0.99, covered


def test_lei_sets_each_get_a_naive_bootstrap_over_their_own_units():
    """LEI's table bootstraps each set on its own; a unit holds every intervention sentence of
    its subject pair and template."""
    from biaslens.methods.qa.lei_eval.method import lei_table

    rng = np.random.default_rng(3)
    parts = []
    for name, interventions in (("none", ["-"]), ("ethical", ["e1", "e2"])):
        for intervention in interventions:
            part = _scores(["Ann", "Bob", "Cy"], ["t1", "t2"], ["kind", "rude"], rng)
            parts.append(part.assign(set=name, intervention_id=intervention))
    scores = pd.concat(parts, ignore_index=True)
    replicates, level, seed = 80, 0.9, 5
    table = lei_table(scores, bootstrap=(replicates, level, seed)).set_index("set")

    for name, part in scores.groupby("set"):
        units, values = naive_bootstrap(part, replicates, seed, ("intervention_id",))
        assert table.loc[name, "units"] == units == 6
        for m in METRICS:
            low_q, high_q = np.quantile(values[m], [(1 - level) / 2, (1 + level) / 2])
            assert table.loc[name, f"{m}_ci_low"] == pytest.approx(low_q, rel=1e-9), (name, m)
            assert table.loc[name, f"{m}_ci_high"] == pytest.approx(high_q, rel=1e-9), (name, m)
