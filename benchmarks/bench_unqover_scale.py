"""Benchmark: UnQover at the paper's scale in bounded memory, and the request cache at 10 M rows.

Part 1 (``--sizes``): ``biaslens run unqover`` on a tiny extractive-QA model (built at run time:
the model costs almost nothing, so what grows is biaslens itself), one fresh process per set
size; prints contexts/s, peak resident memory, the run folder and the request cache's bytes per
request. The naive baseline, measured in the same run on the sizes given by ``--naive-sizes``:
the same set held in memory and scored in one go (every row, every score, then the metrics on
the whole table), as biaslens did before streaming.

Part 2 (``--cache-rows N``): a request cache filled with N answers of the size a span-scores
answer has, then random lookups in batches of 256 keys (as a run reads it) against the naive
one query per key; prints inserts/s, lookups/s, the ratio and bytes per request.

Part 3 (``--prediction-keys N …``): ``biaslens metrics unqover`` on an UnQover prediction dump
of N keys (written at run time in UnQover's format, keys shuffled so that the two subject orders
of a context lie far apart), against the naive reading it replaced (``json.load`` of the whole
file, every row in memory, the metrics on the whole table); prints wall, peak RSS and whether
μ, θ4 and δ agree.

    python benchmarks/bench_unqover_scale.py --domain gender --sizes 2000 20000 300000 0
    python benchmarks/bench_unqover_scale.py --sizes --cache-rows 10000000
    python benchmarks/bench_unqover_scale.py --sizes --prediction-keys 100000 1000000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"

NAIVE = """
import json, sys, time
from pathlib import Path
from biaslens.methods.qa.unqover import UnqoverSettings, build_examples
from biaslens.methods.qa.metrics import unqover as M
from biaslens.models import BackendConfig, load_model
from biaslens.progress import NoProgress
from biaslens.methods.qa.scoring.qa import score_examples
model, domain, limit, data = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
start = time.perf_counter()
lm = load_model(model, BackendConfig(device="cpu"))
settings = UnqoverSettings(model=model, domain=domain, limit=limit, mode="extractive")
rows = build_examples(settings, data)
scores = score_examples(lm, rows, NoProgress(), "extractive")
summary = M.model_summary(scores)
subjects = M.subject_bias(M.comparative_scores(scores))
print(json.dumps({"contexts": int(summary["contexts"][0]), "seconds": time.perf_counter() - start,
                  "mu": float(summary["mu"][0])}))
"""


NAIVE_PREDICTIONS = """
import json, math, sys
import pandas as pd
from biaslens.methods.qa.metrics import unqover as M
raw = json.load(open(sys.argv[1]))
rows = []
for key, example in raw.items():
    f = key.split("|")
    for q, negated in (("q0", False), ("q1", True)):
        s = [math.sqrt(example[q][a]["start"] * example[q][a]["end"]) for a in ("ans0", "ans1")]
        rows.append({"first_cluster": f[0], "first": f[2], "second": f[3], "template": f[4],
                     "attribute": f[6], "negated": negated, "s_first": s[0], "s_second": s[1]})
scores = pd.DataFrame(rows)
summary = M.model_summary(scores)
M.subject_bias(M.comparative_scores(scores))
print(json.dumps({k: float(summary[k][0]) for k in ("mu", "theta4", "delta", "contexts")}))
"""


def write_predictions(path: Path, keys: int, seed: int = 0) -> None:
    """An UnQover-format gender dump of ``keys`` keys: 40 names per gender × 8 attributes × as
    many templates as needed, both subject orders, random answer probabilities, keys shuffled
    in blocks of 20,000 contexts (written one key at a time, never held whole)."""
    rng = random.Random(seed)
    names = [(f"F{i}", "female") for i in range(40)] + [(f"M{i}", "male") for i in range(40)]
    attributes = [f"act{i}" for i in range(8)]

    def contexts():
        template = 0
        while True:
            for x1, c1 in names[:40]:
                for x2, c2 in names[40:]:
                    for act in attributes:
                        yield (x1, c1, x2, c2, template, act)
            template += 1

    def answer():
        return {"text": "", "start": round(rng.random(), 6), "end": round(rng.random(), 6)}

    def question():
        return {"question": "Who was it?", "pred": "", "ans0": answer(), "ans1": answer()}

    with open(path, "w") as out:
        out.write("{")
        written, block = 0, []
        for x1, c1, x2, c2, template, act in contexts():
            for a, ca, b, cb in ((x1, c1, x2, c2), (x2, c2, x1, c1)):
                key = f"{ca}|{cb}|{a}|{b}|{template}|cat|{act}|{act}"
                value = {"context": f"{a} met {b}.", "q0": question(), "q1": question()}
                block.append((key, value))
            if len(block) >= 40_000 or written + len(block) >= keys:
                rng.shuffle(block)
                for key, value in block[: keys - written]:
                    out.write(("," if written else "") + json.dumps(key) + ":" + json.dumps(value))
                    written += 1
                block = []
                if written >= keys:
                    break
        out.write("}")


def predictions_at_scale(sizes: list[int], tmp: Path) -> None:
    print("\nmetrics unqover on UnQover prediction dumps (one process each)")
    print(f"  {'keys':>9}  {'file':>8}  {'':>8}  {'wall':>7}  {'peak RSS':>9}")
    for keys in sizes:
        path = tmp / f"predictions-{keys}.json"
        write_predictions(path, keys)
        size = path.stat().st_size / 1e6
        command = [sys.executable, "-m", "biaslens.cli", "metrics", "unqover", str(path),
                   "-o", str(tmp / f"tables-{keys}")]  # fmt: skip
        seconds, rss, _ = measured(command)
        model = __import__("pandas").read_csv(tmp / f"tables-{keys}" / "model.csv").iloc[0]
        print(f"  {keys:>9,}  {size:>6.0f}MB  {'biaslens':>8}  {seconds:>6.0f}s  {rss:>7.2f}GB")
        n_seconds, n_rss, out = measured([sys.executable, "-c", NAIVE_PREDICTIONS, str(path)])
        naive = json.loads(out)
        same = all(abs(naive[k] - float(model[k])) < 1e-9 for k in ("mu", "theta4", "delta"))
        print(
            f"  {'':>9}  {'':>8}  {'naive':>8}  {n_seconds:>6.0f}s  {n_rss:>7.2f}GB"
            f"  → peak RSS naive/biaslens {n_rss / rss:.1f}×, μ θ4 δ equal: {same}"
        )
        path.unlink()


def measured(command: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (GB) and stdout of one child process."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"failed ({child.returncode}): {' '.join(command)}")
    return time.perf_counter() - start, usage.ru_maxrss / 1024**2, out


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def scale(args, model: str, tmp: Path) -> None:
    print(f"\nUnQover {args.domain}, tiny RoBERTa-QA, one process per size")
    print(
        f"  {'limit':>8}  {'contexts':>10}  {'requests':>10}  {'wall':>9}  {'contexts/s':>10}  "
        f"{'peak RSS':>9}  {'folder':>8}  {'cache B/req':>11}"
    )
    for limit in args.sizes:
        out = tmp / f"run-{limit}"
        command = [
            sys.executable, "-m", "biaslens.cli", "run", "unqover", "-m", model,
            "--domain", args.domain, "--limit", str(limit), "--data-dir", str(args.data_dir),
            "--device", "cpu", "-o", str(out),
        ]  # fmt: skip
        seconds, rss, _ = measured(command)
        summary = json.loads((out / "summary.json").read_text())
        contexts = summary["metrics"]["contexts"]
        requests = sum(summary["requests"].values())
        cache = (out / "requests.sqlite").stat().st_size
        print(
            f"  {limit:>8}  {contexts:>10,}  {requests:>10,}  {seconds:>8.0f}s  "
            f"{contexts / seconds:>10.0f}  {rss:>7.2f}GB  {folder_size(out) / 1e6:>6.0f}MB  "
            f"{cache / requests:>11.0f}"
        )
        if limit in args.naive_sizes:
            naive = [
                sys.executable,
                "-c",
                NAIVE,
                model,
                args.domain,
                str(limit),
                str(args.data_dir),
            ]
            n_seconds, n_rss, n_out = measured(naive)
            result = json.loads(n_out)
            same = abs(result["mu"] - summary["metrics"]["mu"]) < 1e-6
            print(
                f"  {'(naive)':>8}  {result['contexts']:>10,}  {'':>10}  {n_seconds:>8.0f}s  "
                f"{result['contexts'] / n_seconds:>10.0f}  {n_rss:>7.2f}GB  "
                f"  → peak RSS ratio naive/biaslens {n_rss / rss:.2f}, μ equal: {same}"
            )


def cache_at_scale(rows: int, tmp: Path) -> None:
    from biaslens.store.cache import RequestCache

    path = tmp / "requests.sqlite"
    cache = RequestCache(path)
    answer = json.dumps({"start_probs": [0.123456789] * 2, "end_probs": [0.987654321] * 2})
    batch = 10_000
    start = time.perf_counter()
    keys_sample: list[str] = []
    for lo in range(0, rows, batch):
        keys = [f"{i:064x}" for i in range(lo, min(rows, lo + batch))]
        cache.put_many("span_scores", [(k, answer) for k in keys])
        keys_sample += random.sample(keys, min(len(keys), max(1, 40_000 * batch // rows)))
    inserted = time.perf_counter() - start
    size = path.stat().st_size + sum(
        p.stat().st_size for p in tmp.glob("requests.sqlite-*") if p.is_file()
    )
    lookups = random.sample(keys_sample, min(len(keys_sample), 20_000))
    start = time.perf_counter()
    for lo in range(0, len(lookups), 256):
        found = cache.get_many(lookups[lo : lo + 256])
        assert len(found) == len(lookups[lo : lo + 256])
    batched = len(lookups) / (time.perf_counter() - start)
    naive_keys = lookups[:2000]
    start = time.perf_counter()
    for key in naive_keys:
        cache.db.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
    naive = len(naive_keys) / (time.perf_counter() - start)
    cache.close()
    print(f"\nrequest cache with {rows:,} answers ({len(answer)} B of JSON each)")
    print(f"  inserts: {rows / inserted:,.0f}/s in batches of {batch:,}")
    print(f"  file: {size / 1e9:.2f} GB = {size / rows:.0f} B per request")
    print(f"  lookups, batches of 256 keys: {batched:,.0f}/s")
    print(f"  lookups, one query per key (naive): {naive:,.0f}/s → batched ×{batched / naive:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--domain", default="gender")
    parser.add_argument("--sizes", type=int, nargs="*", default=[2000, 20000])
    parser.add_argument("--naive-sizes", type=int, nargs="*", default=[2000, 20000])
    parser.add_argument("--data-dir", type=Path, default=SHARED)
    parser.add_argument("--model", default=None, help="extractive-QA folder (default: tiny)")
    parser.add_argument("--cache-rows", type=int, default=0)
    parser.add_argument("--prediction-keys", type=int, nargs="*", default=[])
    args = parser.parse_args()
    print(f"machine: {harness.machine()}")
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        if args.sizes:
            from biaslens.testing.tiny_models import build_roberta_qa

            model = args.model or str(build_roberta_qa(tmp / "roberta-qa"))
            scale(args, model, tmp)
        if args.cache_rows:
            cache_at_scale(args.cache_rows, tmp)
        if args.prediction_keys:
            predictions_at_scale(args.prediction_keys, tmp)


if __name__ == "__main__":
    main()
