"""Benchmark: what a plain forward of a causal LM's body reaches on this machine, eager and
compiled — the ceiling that biaslens's useful share of the matmul peak is read against.

One forward of the base model on ``--rows`` × ``--tokens`` random token ids (no mask, no cache,
no padding, no repeated token: nothing wasted), in fp32, timed as the best of ``--repeats``
after a warm-up; then the same under ``torch.compile`` (its compile time printed apart, then
timed the same way). Each prints its FLOP/s (2 · non-embedding parameters per token) as a share
of the fp32 matmul peak measured in the same run, and the compiled one its ratio to eager.

    python benchmarks/bench_forward_ceiling.py                 # SmolLM2, 5 rows × 256 tokens
    python benchmarks/bench_forward_ceiling.py --no-compile
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402


def best_seconds(forward, ids, repeats: int) -> float:
    """The fastest of ``repeats`` timed forwards of ``ids``."""
    return min(harness.time_it(lambda: forward(input_ids=ids)) for _ in range(repeats))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default", help="registered name or folder")
    parser.add_argument("--rows", type=int, default=5, help="rows per forward")
    parser.add_argument("--tokens", type=int, default=256, help="tokens per row")
    parser.add_argument("--repeats", type=int, default=5, help="timed forwards per variant")
    parser.add_argument("--no-compile", action="store_true", help="eager only")
    args = parser.parse_args()

    import torch
    from transformers import AutoModelForCausalLM

    peak = harness.start()
    model = AutoModelForCausalLM.from_pretrained(
        harness.model_folder(args.model), dtype=torch.float32
    ).eval()
    per_token, _ = harness.flop_rates(model)
    ids = torch.randint(0, model.config.vocab_size, (args.rows, args.tokens))
    flops = per_token * ids.numel()
    print(f"{args.rows} rows × {args.tokens} tokens, fp32, base model only")
    with torch.inference_mode():
        model.base_model(input_ids=ids)  # warm-up
        eager = best_seconds(model.base_model, ids, args.repeats)
        harness.print_share("eager", flops, eager, peak)
        if args.no_compile:
            return
        compiled = torch.compile(model.base_model)
        compile_seconds = harness.time_it(lambda: compiled(input_ids=ids))
        print(f"  torch.compile: {compile_seconds:.1f} s to compile this one shape")
        fused = best_seconds(compiled, ids, args.repeats)
        harness.print_share("compiled", flops, fused, peak)
        print(f"  compiled / eager: {eager / fused:.2f}×")


if __name__ == "__main__":
    main()
