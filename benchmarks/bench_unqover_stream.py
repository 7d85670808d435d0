"""Benchmark: UnQover's streaming accumulator with intervals at growing size, one process each.

A synthetic gender-like set (80 names: 40 × 40 pairs in both orders, 8 attributes, one template
per chunk of 51,200 score rows) goes through ``UnqoverAccumulator(intervals=(0.95, 0))`` chunk
by chunk; per size it prints the seconds spent adding, the seconds of the summary (μ, η, θ4, δ,
ε and their crossed-design intervals), the process's peak RSS and μ with its interval. The
baseline, in the same run: the whole-table ``model_summary`` (point values only) of the same
set in its own process (its "adding" is building the table), whose μ must equal the streamed
one. ``--compare-src DIR`` also runs the
streaming accumulator of another checkout's ``src`` folder (e.g. a worktree of an earlier
commit), for a before/after on the same machine. Last, the small set the coverage simulations
repeat 300 times (``tests/statistics``: 8 subjects × 6 templates × 3 attributes, with
intervals): seconds per set, averaged over ``--small-sets`` sets.

    python benchmarks/bench_unqover_stream.py --templates 40 160
    git worktree add /tmp/before <commit>
    python benchmarks/bench_unqover_stream.py --templates 40 160 --compare-src /tmp/before/src
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

SOURCE = str(Path(__file__).resolve().parents[1] / "src")
NAMES, ATTRIBUTES = 40, 8


def chunk(template: int, rng):
    """One template's score rows: every ordered (female, male) pair × attribute × question."""
    import numpy as np
    import pandas as pd

    female = [f"F{i}" for i in range(NAMES)]
    male = [f"M{i}" for i in range(NAMES)]
    pairs = [(f, m) for f in female for m in male] + [(m, f) for f in female for m in male]
    first = np.repeat([p[0] for p in pairs], ATTRIBUTES * 2)
    second = np.repeat([p[1] for p in pairs], ATTRIBUTES * 2)
    attribute = np.tile(np.repeat([f"act{a}" for a in range(ATTRIBUTES)], 2), len(pairs))
    negated = np.tile([False, True], len(pairs) * ATTRIBUTES)
    n = len(first)
    return pd.DataFrame(
        {"first": first, "second": second, "template": f"t{template}", "attribute": attribute,
         "negated": negated, "s_first": rng.random(n), "s_second": rng.random(n)}
    )  # fmt: skip


def small_sets(count: int) -> dict:
    """Seconds per small set of the coverage simulations, with intervals (the first set, which
    computes the design's weights, not counted)."""
    import numpy as np

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from biaslens.methods.qa.metrics.unqover_stream import UnqoverAccumulator
    from tests.statistics.unqover_model import UnqoverModel

    model = UnqoverModel(attributes=3, spike=0.2)
    sets = [model.scores(8, 6, np.random.default_rng(r)) for r in range(count + 1)]
    start = 0.0
    for r, scores in enumerate(sets):
        if r == 1:
            start = time.perf_counter()
        totals = UnqoverAccumulator(intervals=(0.95, r))
        totals.add(scores)
        totals.summary()
    return {"per_set": (time.perf_counter() - start) / count}


def worker(mode: str, templates: int) -> None:
    """Runs in the child process: prints one JSON line."""
    import numpy as np

    rng = np.random.default_rng(0)
    if mode == "small":
        print(json.dumps(small_sets(templates)))
        return
    if mode == "whole":
        import pandas as pd

        from biaslens.methods.qa.metrics.unqover import model_summary

        start = time.perf_counter()
        table = pd.concat([chunk(t, rng) for t in range(templates)], ignore_index=True)
        built = time.perf_counter()
        summary = model_summary(table).iloc[0]
        out = {"add": built - start, "summary": time.perf_counter() - built}
    else:
        from biaslens.methods.qa.metrics.unqover_stream import UnqoverAccumulator

        totals = UnqoverAccumulator(intervals=(0.95, 0))
        adding = 0.0
        for t in range(templates):
            rows = chunk(t, rng)
            start = time.perf_counter()
            totals.add(rows)
            adding += time.perf_counter() - start
        start = time.perf_counter()
        summary = totals.summary().iloc[0]
        out = {"add": adding, "summary": time.perf_counter() - start}
        out["ci"] = [float(summary["mu_ci_low"]), float(summary["mu_ci_high"])]
    out["mu"] = float(summary["mu"])
    out["rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    print(json.dumps(out))


def run(mode: str, templates: int, source: str) -> dict:
    env = {**os.environ, "PYTHONPATH": source, "OMP_NUM_THREADS": "1"}
    command = [sys.executable, __file__, "--worker", mode, "--templates", str(templates)]
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--templates", type=int, nargs="+", default=[40, 160])
    parser.add_argument("--compare-src", help="another checkout's src folder, run alike")
    parser.add_argument("--small-sets", type=int, default=100)
    parser.add_argument("--worker", choices=["stream", "whole", "small"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.templates[0])
        return
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import harness

    print(f"machine: {harness.machine()}")
    print(
        f"  {'rows':>10}  {'what':<28}  {'adding':>7}  {'summary':>8}  {'peak RSS':>8}  μ [95% CI]"
    )
    approaches = [("streamed, with intervals", "stream", SOURCE)]
    if args.compare_src:
        approaches.append(("streamed, --compare-src", "stream", args.compare_src))
    approaches.append(("whole table, point values", "whole", SOURCE))
    for templates in args.templates:
        rows = templates * NAMES * NAMES * 2 * ATTRIBUTES * 2
        results = {}
        for label, mode, source in approaches:
            r = results[label] = run(mode, templates, source)
            ci = f" [{r['ci'][0]:.6f}, {r['ci'][1]:.6f}]" if "ci" in r else ""
            print(f"  {rows:>10,}  {label:<28}  {r['add']:>6.1f}s  {r['summary']:>7.1f}s  "
                  f"{r['rss']:>6.2f}GB  {r['mu']:.6f}{ci}")  # fmt: skip
        same = len({round(r["mu"], 12) for r in results.values()}) == 1
        streamed = results["streamed, with intervals"]
        line = f"  → μ equal across approaches: {same}"
        if args.compare_src:
            before = results["streamed, --compare-src"]
            line += (
                f"; streamed vs --compare-src: adding {before['add'] / streamed['add']:.1f}× "
                f"faster, peak RSS {before['rss']:.2f} → {streamed['rss']:.2f} GB"
            )
        print(line)
    sources = [("this checkout", SOURCE)]
    if args.compare_src:
        sources.append(("--compare-src", args.compare_src))
    times = {label: run("small", args.small_sets, source)["per_set"] for label, source in sources}
    print(f"\ncoverage simulations' small set (8 subjects × 6 templates, with intervals), one "
          f"thread, mean of {args.small_sets}:")  # fmt: skip
    for label, seconds in times.items():
        print(f"  {label:<14} {seconds:.4f} s per set")
    if args.compare_src:
        print(f"  → {times['--compare-src'] / times['this checkout']:.1f}× faster")


if __name__ == "__main__":
    main()
