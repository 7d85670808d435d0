"""Benchmark: generative LEI scoring (``choice_logprobs``), shared prompt vs full sequences.

biaslens runs each distinct prompt once and scores the two subject choices from its KV cache.
The baseline is the previous approach: every (prompt + choice) sequence run in full, in
right-padded batches of the same size. Both score the same LEI religion test questions in
UnifiedQA format; the script prints questions/s, the ratio and the largest log-probability
difference between the two. Default model: SmolLM2 (``--model`` for another causal model).

    python benchmarks/bench_choice_scoring.py --paragraphs 60
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402

from biaslens.data import lei  # noqa: E402
from biaslens.experiments.qa_scoring import _generative_requests  # noqa: E402
from biaslens.models import BackendConfig, load_model  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "lei"


def full_sequences(lm, requests, batch_size: int) -> list[float]:
    """log p(choice | prompt) from one full forward pass per (prompt + choice)."""
    prompts, choices = lm.encode_choice_requests(requests)
    pairs = [(p, c) for p, row in zip(prompts, choices, strict=True) for c in row]
    out = []
    for start in range(0, len(pairs), batch_size):
        batch = pairs[start : start + batch_size]
        ids, mask = lm._pad([p + c for p, c in batch], left=False)
        with torch.inference_mode():
            logprobs = lm.model(input_ids=ids, attention_mask=mask).logits.float().log_softmax(-1)
        for row, (p, c) in enumerate(batch):
            positions = torch.arange(len(p) - 1, len(p) + len(c) - 1)
            out.append(float(logprobs[row, positions, torch.tensor(c)].double().sum()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--paragraphs", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=16, help="sequences per batch")
    parser.add_argument("--lei-dir", type=Path, default=SHARED)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    lm = load_model(args.model, BackendConfig(device="cpu", batch_size=args.batch_size // 2))
    rows = lei.read_split(lei.split_path("religion/noniid_test", args.lei_dir))
    requests = _generative_requests(lm, rows.head(args.paragraphs))
    lm.choice_logprobs(requests[:4])  # warm-up
    start = time.perf_counter()
    shared = [s for r in lm.choice_logprobs(requests) for s in r.logprobs]
    fast = len(requests) / (time.perf_counter() - start)
    start = time.perf_counter()
    full = full_sequences(lm, requests, args.batch_size)
    naive = len(requests) / (time.perf_counter() - start)
    difference = max(abs(a - b) for a, b in zip(shared, full, strict=True))
    print(
        f"{lm.identity.name}: {len(requests)} questions, shared prompt {fast:.2f} questions/s, "
        f"full sequences {naive:.2f} questions/s, ratio {fast / naive:.1f}x "
        f"(max |Δ log p| {difference:.1e})"
    )


if __name__ == "__main__":
    main()
