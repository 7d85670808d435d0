"""CID metrics against hand-computed values."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from biaslens.errors import BiaslensError
from biaslens.methods.cid.metrics.cid import (
    biased_fraction,
    lambda_star,
    lambda_star_summary,
    similarity_trend,
    top_continuations,
)


def stub_similarity_table(crossings: dict[int, float], grid=(0, 1, 5, 10, 50)) -> pd.DataFrame:
    """sim(λ) = 1 − 0.15·λ/c for pair crossing τ = 0.85 exactly at λ = c (∞: stays at 0.9)."""
    rows = []
    for pair, c in crossings.items():
        for lam in grid:
            sim = 0.9 if math.isinf(c) else 1 - 0.15 * lam / c
            rows.append({"pair": pair, "lam": lam, "similarity": sim})
    return pd.DataFrame(rows)


def test_lambda_star_on_stub_similarity_with_known_crossings():
    # Crossing at c means sim < 0.85 for λ > c: λ* is the first grid value above c.
    table = stub_similarity_table({0: 0.5, 1: 3.0, 2: 10.0, 3: 20.0, 4: math.inf})
    table.loc[(table.pair == 0) & (table.lam == 0), "similarity"] = 0.5  # λ* = 0: greedy differs
    stars = lambda_star(table, tau=0.85)
    assert stars.to_dict() == {0: 0.0, 1: 5.0, 2: 50.0, 3: 50.0, 4: math.inf}
    # At exactly τ the similarity is not below τ (pair 2 has sim = 0.85 at λ = 10).
    assert table.loc[(table.pair == 2) & (table.lam == 10), "similarity"].item() == pytest.approx(
        0.85
    )
    assert lambda_star(table, tau=0.95).loc[4] == 0.0


def test_lambda_star_refuses_duplicate_rows():
    table = stub_similarity_table({0: 1.0})
    with pytest.raises(BiaslensError, match="more than one row"):
        lambda_star(pd.concat([table, table]))


def test_summary_sorted_by_median_with_infinite_values():
    per_pair = pd.DataFrame(
        {
            "type": ["a", "a", "a", "b", "b", "c"],
            "lambda_star": [5.0, 10.0, 50.0, 0.0, 1.0, math.inf],
        }
    )
    table = lambda_star_summary(per_pair)
    assert table["type"].tolist() == ["b", "a", "c"]
    b, a, c = table.to_dict(orient="records")
    assert (b["median"], b["q25"], b["q75"]) == (0.5, 0.25, 0.75)
    assert (a["median"], a["q25"], a["q75"]) == (10.0, 7.5, 30.0)
    assert math.isinf(c["median"]) and c["n_never"] == 1 and a["n_never"] == 0


def test_similarity_trend_and_monotonicity():
    table = pd.DataFrame(
        {"lam": [0, 0, 5, 5, 50, 50], "similarity": [1.0, 0.8, 0.7, 0.9, 0.6, 0.4]}
    )
    curve, check = similarity_trend(table)
    assert curve["mean"].tolist() == pytest.approx([0.9, 0.8, 0.5])
    assert check["non_increasing"] and check["violations"] == []
    assert check["spearman_rho"] == pytest.approx(-1.0)
    rising = table.assign(similarity=[0.5, 0.5, 0.9, 0.9, 0.1, 0.1])
    _, check = similarity_trend(rising)
    assert not check["non_increasing"] and check["violations"] == [[0.0, 5.0]]


def test_top_continuations_and_biased_fraction():
    samples = pd.DataFrame(
        {
            "group": ["A"] * 4 + ["B"] * 3,
            "lam": [0] * 7,
            "continuation": ["x", "y", "x", "x", "z", "z", "w"],
        }
    )
    counts = top_continuations(samples, ["group", "lam"])
    assert counts[["group", "continuation", "count"]].values.tolist() == [
        ["A", "x", 3], ["A", "y", 1], ["B", "z", 2], ["B", "w", 1],
    ]  # fmt: skip
    assert len(top_continuations(samples, ["group", "lam"], n=1)) == 2
    rated = counts.assign(biased=[1, 0, 0, 1])
    fractions = biased_fraction(rated, ["group", "lam"]).set_index("group")
    assert fractions.loc["A", "fraction_biased"] == pytest.approx(3 / 4)
    assert fractions.loc["B", "fraction_biased"] == pytest.approx(1 / 3)


def test_the_median_lambda_star_interval_is_the_order_statistic_interval():
    """Recomputed from the rule (Conover §3.2): with n pairs, the bounds are the j-th smallest
    and j-th largest values for the largest j whose binomial tail P(X < j), X ~ Bin(n, ½), is
    at most (1 − level)/2 — summed here from the binomial coefficients."""
    stars = [1.0, 5.0, 5.0, 10.0, math.inf, 50.0, 0.0, 5.0, 10.0, 1.0, 50.0, 10.0]
    per_pair = pd.DataFrame({"pair": range(12), "type": "t", "lambda_star": stars})
    level = 0.9
    table = lambda_star_summary(per_pair, level=level).iloc[0]

    n = len(stars)
    tail = [sum(math.comb(n, i) for i in range(j)) / 2**n for j in range(n + 1)]
    j = max(j for j in range(n + 1) if tail[j] <= (1 - level) / 2)
    ordered = sorted(stars)
    assert j == 3  # P(X ≤ 2) = 79/4096 ≤ 0.05 < P(X ≤ 3) = 299/4096
    assert (table["median_ci_low"], table["median_ci_high"]) == (ordered[j - 1], ordered[n - j])
    assert table["median_ci_low"] <= table["median"] <= table["median_ci_high"]
    assert "median_ci_low" not in lambda_star_summary(per_pair)


def test_too_few_pairs_for_a_median_interval_say_so():
    """Five pairs: even [min, max] covers the median with 1 − 2/32 < 0.95."""
    per_pair = pd.DataFrame({"pair": range(5), "type": "t", "lambda_star": [1.0, 2.0, 3.0, 4, 5]})
    row = lambda_star_summary(per_pair, level=0.95).iloc[0]
    assert math.isnan(row["median_ci_low"]) and "cannot give" in row["median_ci_note"]


def test_a_quantile_that_falls_on_a_finite_value_beside_an_infinite_one_is_that_value():
    """[1, 2, ∞]: the median is 2 (NumPy's interpolation gives 2 + (∞ − 2) × 0 = NaN); the 75th
    percentile lies between 2 and ∞: ∞."""
    per_pair = pd.DataFrame({"pair": range(3), "type": "t", "lambda_star": [1.0, 2.0, math.inf]})
    row = lambda_star_summary(per_pair).iloc[0]
    assert row["median"] == 2.0 and row["q25"] == 1.5 and math.isinf(row["q75"])
