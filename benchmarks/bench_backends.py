"""Benchmark: the same MGC and LEI requests through the hf, vllm and openai (→ vllm serve)
backends, in one run, with requests/s, ratios, agreement with hf, and the cost of a rerun from
the request cache.

Run it in the vLLM virtualenv (``bash scripts/install.sh --vllm``)::

    .venv-vllm/bin/python benchmarks/bench_backends.py --mgc 120 --lei 60

It starts ``vllm serve`` on the converted SmolLM2 itself (127.0.0.1, a free port), and stops
it at the end. ``openai`` runs at concurrency 1, 8 and 32. The baseline for the served backends
is the in-process ``vllm`` engine (the goal: ``openai`` at concurrency 32 within 1.5x of it);
``hf`` is the in-process transformers backend on the same machine.
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent))

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import harness  # noqa: E402

from biaslens.methods.qa.data import lei  # noqa: E402
from biaslens.methods.qa.scoring.qa import generative_requests  # noqa: E402
from biaslens.methods.sib.data import (
    mgc,  # noqa: E402
    pronouns,  # noqa: E402
)
from biaslens.models import BackendConfig, TokenDistributionRequest, load_model  # noqa: E402
from biaslens.store.cache import CachedLM, RequestCache  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "datasets"


def workloads(hf, n_mgc: int, n_lei: int):
    sentences = mgc.build_mgc(("dates", "places"))["sentence"]
    targets = tuple(w for _, w in pronouns.target_words(fills_slot=False) if w[0] == " ")
    mgc_requests = [
        TokenDistributionRequest(mgc.wrap_in_prompt(s, "A"), targets, 5) for s in sentences[:n_mgc]
    ]
    rows = lei.read_split(lei.split_path("religion/noniid_test", DATA / "lei"))
    lei_requests = generative_requests(hf, rows.head(max(1, n_lei // 2)))[:n_lei]
    return {"MGC token_distribution": mgc_requests, "LEI choice_logprobs": lei_requests}


def timed(lm, requests):
    method = getattr(lm, type(requests[0]).request_type.value)
    method(requests[:2])  # warm-up
    start = time.perf_counter()
    answers = method(requests)
    return time.perf_counter() - start, answers


def gap(reference, answers) -> float:
    if hasattr(reference[0], "target_probs"):
        pairs = [
            (math.log(a), math.log(b))
            for r, s in zip(reference, answers, strict=True)
            for a, b in zip(r.target_probs, s.target_probs, strict=True)
        ]
    else:
        pairs = [
            (a, b)
            for r, s in zip(reference, answers, strict=True)
            for a, b in zip(r.logprobs, s.logprobs, strict=True)
        ]
    return max(abs(a - b) for a, b in pairs)


def main() -> None:
    args = harness.workload_arguments(
        __doc__.split("\n")[0], 120, 60, "MGC prompts (8 targets each)",
        "LEI questions (2 choices each)",
    )  # fmt: skip
    print(f"machine: {harness.machine()}; model SmolLM2-135M-Instruct, float32")
    hf = load_model("default", BackendConfig(device="cpu", batch_size=32))
    engine = load_model("default", BackendConfig(backend="vllm", device="cpu"))
    with harness.vllm_server() as server:
        loads = workloads(hf, args.mgc, args.lei)
        header = ("workload", "backend", "requests/s", "vs vllm", "max |Δ log p|")
        print(f"{header[0]:26} {header[1]:22} {header[2]:>11} {header[3]:>8} {header[4]:>14}")
        for label, requests in loads.items():
            seconds, reference = timed(hf, requests)
            rates = {"hf": len(requests) / seconds}
            seconds, answers = timed(engine, requests)
            rates["vllm"] = len(requests) / seconds
            gaps = {"hf": 0.0, "vllm": gap(reference, answers)}
            for concurrency in (1, 8, 32):
                remote = harness.served_model(server, concurrency)
                seconds, answers = timed(remote, requests)
                name = f"openai c={concurrency}"
                rates[name] = len(requests) / seconds
                gaps[name] = gap(reference, answers)
                if concurrency == 32:
                    with tempfile.TemporaryDirectory() as tmp:
                        cache = RequestCache(Path(tmp) / "requests.sqlite")
                        cached = CachedLM(remote, cache)
                        first = time.perf_counter()
                        getattr(cached, type(requests[0]).request_type.value)(requests)
                        first = time.perf_counter() - first
                        again = time.perf_counter()
                        getattr(cached, type(requests[0]).request_type.value)(requests)
                        again = time.perf_counter() - again
                        cache.close()
                remote.close()
            for name, rate in rates.items():
                print(
                    f"{label:26} {name:22} {rate:11.2f} {rate / rates['vllm']:7.2f}x "
                    f"{gaps[name]:14.2e}"
                )
            print(
                f"{label:26} {'rerun from the cache':22} {len(requests) / again:11.0f} "
                f"(first {first:.1f} s, rerun {again * 1000:.1f} ms = {100 * again / first:.2f}%)"
            )
    engine.close()


if __name__ == "__main__":
    main()
