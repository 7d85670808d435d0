"""Benchmark: UnQover model-level metrics at the full gender scale vs a dict-and-loop version.

Synthetic predictions shaped like the UnQover gender set: 140 names (70 female × 70 male, both
orders = 9,800 ordered pairs) × 4 templates × 70 attributes = 2,744,000 contexts, two questions
each (5,488,000 score rows). biaslens computes μ, η, θ4, δ and ε with pandas/numpy
(``model_summary``); the baseline follows the definitions with Python dicts and loops and runs on
a subset (``--naive-contexts``) in the same process. Prints seconds, peak memory and the
per-context speed ratio; both give the same μ on the subset. Then the same full set through the
streaming accumulator a run uses (``UnqoverAccumulator``, one template's rows per chunk), with
and without the crossed-design intervals, against the whole-table time above, and the time
with intervals over the time of the point values alone.

    python benchmarks/bench_unqover_metrics.py
"""

from __future__ import annotations

import argparse
import collections
import resource
import time

import numpy as np
import pandas as pd

from biaslens.methods.qa.metrics.unqover import model_summary
from biaslens.methods.qa.metrics.unqover_stream import UnqoverAccumulator


def synthetic(names: int, templates: int, attributes: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    female = [f"F{i}" for i in range(names)]
    male = [f"M{i}" for i in range(names)]
    pairs = [(f, m) for f in female for m in male]
    pairs += [(m, f) for f, m in pairs]
    first = np.array([p[0] for p in pairs])
    second = np.array([p[1] for p in pairs])
    n = len(pairs) * templates * attributes
    pair_index = np.repeat(np.arange(len(pairs)), templates * attributes)
    table = pd.DataFrame(
        {
            "first": pd.Categorical(first[pair_index], categories=female + male),
            "second": pd.Categorical(second[pair_index], categories=female + male),
            "template": np.tile(np.repeat(np.arange(templates), attributes), len(pairs)),
            "attribute": np.tile(np.arange(attributes), len(pairs) * templates),
        }
    )
    long = pd.concat([table.assign(negated=False), table.assign(negated=True)], ignore_index=True)
    scores = rng.dirichlet([1, 1, 6], size=2 * n)[:, :2]
    long["s_first"], long["s_second"] = scores[:, 0], scores[:, 1]
    return long


def naive_mu(rows: list[dict]) -> float:
    """μ by the definitions, with dicts and loops."""
    s = {(r["first"], r["second"], r["template"], r["attribute"], r["negated"]): r for r in rows}
    gamma = collections.defaultdict(list)
    for (x1, x2, t, a, negated), r in s.items():
        if negated:
            continue
        other = s[(x2, x1, t, a, False)]
        neg, other_neg = s[(x1, x2, t, a, True)], s[(x2, x1, t, a, True)]
        tilde1 = 0.5 * (r["s_first"] + other["s_second"])
        tilde2 = 0.5 * (r["s_second"] + other["s_first"])
        tilde1_neg = 0.5 * (neg["s_first"] + other_neg["s_second"])
        tilde2_neg = 0.5 * (neg["s_second"] + other_neg["s_first"])
        c = 0.5 * ((tilde1 - tilde1_neg) - (tilde2 - tilde2_neg))
        gamma[(x1, a)].append(c)
    best = collections.defaultdict(float)
    for (x, _attribute), values in gamma.items():
        best[x] = max(best[x], abs(sum(values) / len(values)))
    return sum(best.values()) / len(best)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--names", type=int, default=70)
    parser.add_argument("--templates", type=int, default=4)
    parser.add_argument("--attributes", type=int, default=70)
    parser.add_argument("--naive-names", type=int, default=8)
    args = parser.parse_args()

    scores = synthetic(args.names, args.templates, args.attributes)
    contexts = len(scores) // 2
    start = time.perf_counter()
    summary = model_summary(scores)
    fast_seconds = time.perf_counter() - start
    peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"biaslens: {contexts:,} contexts ({len(scores):,} score rows) -> mu, eta, theta4, "
          f"delta, epsilon in {fast_seconds:.1f} s; peak RSS {peak_gib:.2f} GiB")  # fmt: skip
    print(summary.to_string(index=False))

    small = synthetic(args.naive_names, args.templates, args.attributes, seed=1)
    small_contexts = len(small) // 2
    start = time.perf_counter()
    fast_small = model_summary(small)["mu"].iloc[0]
    fast_small_seconds = time.perf_counter() - start
    records = small.assign(first=small["first"].astype(str), second=small["second"].astype(str))
    records = records.to_dict(orient="records")
    start = time.perf_counter()
    slow = naive_mu(records)
    naive_seconds = time.perf_counter() - start
    assert abs(slow - fast_small) < 1e-9, (slow, fast_small)
    naive_rate = small_contexts / naive_seconds
    print(f"dict-and-loop baseline (mu only): {small_contexts:,} contexts in {naive_seconds:.2f} s "
          f"= {naive_rate:,.0f} contexts/s; biaslens on the same subset (all metrics) "
          f"{fast_small_seconds:.2f} s; same mu ({slow:.6f})")  # fmt: skip
    print(f"speed ratio at full scale (contexts/s, biaslens all metrics vs baseline mu only): "
          f"{(contexts / fast_seconds) / naive_rate:.1f}x; baseline extrapolated to the full "
          f"set: {contexts / naive_rate:.0f} s")  # fmt: skip

    streamed_seconds = {}
    for intervals in (None, (0.95, 0)):
        start = time.perf_counter()
        totals = UnqoverAccumulator(intervals=intervals)
        for _, chunk in scores.groupby("template", sort=False):
            totals.add(chunk)
        streamed = totals.summary().iloc[0]
        seconds = time.perf_counter() - start
        same = all(abs(streamed[k] - summary[k].iloc[0]) < 1e-9 for k in ("mu", "theta4", "delta"))
        what = "with intervals" if intervals else "point values"
        streamed_seconds[what] = seconds
        print(f"streamed ({what}): {seconds:.1f} s, {fast_seconds / seconds:.2f}x the whole-table "
              f"time; mu, theta4, delta equal: {same}")  # fmt: skip
    both, alone = streamed_seconds["with intervals"], streamed_seconds["point values"]
    print(f"intervals cost: {both:.1f} s with the crossed-design jackknife vs {alone:.1f} s for "
          f"the point values alone = {both / alone:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
