"""Benchmark: data-parallel replicas on Ray vs one process, on MGC token distributions.

One process with all the machine's threads against N replicas with an equal share each
(``--data-parallel N``), on the same requests, in one run. Prints requests/s, the ratio, the
largest probability difference, and Ray's overhead per shard (the round trip of an empty call
to a replica). On a CPU the gain is not the point (the cores are shared either way); the
overhead is: with more devices, throughput grows with the replicas.

    python benchmarks/bench_data_parallel.py --prompts 300 --replicas 2
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

from biaslens.methods.sib.data import (
    mgc,  # noqa: E402
    pronouns,  # noqa: E402
)
from biaslens.models import BackendConfig, TokenDistributionRequest, load_model  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--prompts", type=int, default=300)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    import ray
    import torch

    sentences = mgc.build_mgc(("dates", "places"))["sentence"][: args.prompts]
    targets = tuple(w for _, w in pronouns.target_words(fills_slot=False) if w[0] == " ")
    requests = [TokenDistributionRequest(mgc.wrap_in_prompt(s, "A"), targets, 5) for s in sentences]
    print(f"machine: {harness.machine()}; {len(requests)} MGC prompt-A requests")

    one = load_model(args.model, BackendConfig(device="cpu", batch_size=args.batch_size))
    one.token_distribution(requests[:4])
    start = time.perf_counter()
    reference = one.token_distribution(requests)
    single = time.perf_counter() - start
    print(f"one process x {torch.get_num_threads()} threads: {len(requests) / single:8.2f} req/s")
    del one

    started = time.perf_counter()
    replicas = load_model(
        args.model,
        BackendConfig(device="cpu", batch_size=args.batch_size, data_parallel=args.replicas),
    )
    print(
        f"Ray start + {args.replicas} replicas loaded: {time.perf_counter() - started:.1f} s (once)"
    )
    replicas.token_distribution(requests[:4])
    start = time.perf_counter()
    answers = replicas.token_distribution(requests)
    parallel = time.perf_counter() - start
    shards = -(-len(requests) // min(256, max(8, -(-len(requests) // (4 * args.replicas)))))
    calls = 50
    tick = time.perf_counter()
    ray.get([replicas.actors[i % args.replicas].pid.remote() for i in range(calls)])
    overhead = (time.perf_counter() - tick) / calls
    gap = max(
        abs(a - b)
        for r, s in zip(reference, answers, strict=True)
        for a, b in zip(r.target_probs, s.target_probs, strict=True)
    )
    rate = len(requests) / parallel
    print(
        f"{args.replicas} replicas x {max(1, (os.cpu_count() or 1) // args.replicas)} threads: "
        f"{rate:8.2f} req/s = {rate * single / len(requests):.2f}x one process "
        f"({shards} shards; Ray round trip {overhead * 1000:.1f} ms = "
        f"{100 * overhead * shards / parallel:.1f}% of the run); max |Δp| {gap:.1e}"
    )
    replicas.close()
    ray.shutdown()


if __name__ == "__main__":
    main()
