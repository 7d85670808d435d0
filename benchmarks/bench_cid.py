"""Benchmark: batched Contrastive Input Decoding vs plain batched greedy and a sequential loop.

Same model, same N (x, x') triples and the same number of new tokens (EOS disabled so every
method decodes exactly T tokens per row), measured in one run:

(a) biaslens CID: x and x' as two rows of one batch with one KV cache, all N triples batched;
(b) plain batched greedy decoding of the same 2N rows with ``model.generate`` (the floor: CID
    should cost at most ~1.2x this);
(c) a sequential implementation in the style of transformers' unbatched classifier-free
    guidance: one triple at a time, two forwards per step (x and x', each with its own cache).

    python benchmarks/bench_cid.py
    python benchmarks/bench_cid.py --models smollm2 --n 32 --tokens 20
"""

from __future__ import annotations

import argparse
import tempfile

import torch
from harness import model_path, time_it

from biaslens.decoding.contrastive import ContrastiveDecoder, contrastive_scores
from biaslens.methods.cid.data.cid_audit import fill_template, load_name_groups, load_templates
from biaslens.models import BackendConfig, load_model


def triples(n: int) -> tuple[list[str], list[str]]:
    """N distinct (x, x') audit inputs: US vs Egypt male names, numbered so none repeats."""
    groups = load_name_groups()
    template = load_templates()["software-developer"]
    us, egypt = groups["us-male"].names, groups["egypt-male"].names
    xs = [f"Case {k}: " + fill_template(template, us[k % 10], "male") for k in range(n)]
    x_primes = [f"Case {k}: " + fill_template(template, egypt[k % 10], "male") for k in range(n)]
    return xs, x_primes


def sequential_cid(model, x: list[int], x_prime: list[int], lam: float, steps: int) -> list[int]:
    """Two forwards per step (x then x'), batch size 1, each with its own KV cache."""
    generated: list[int] = []
    caches = [None, None]
    inputs = [torch.tensor([x]), torch.tensor([x_prime])]
    for _ in range(steps):
        logprobs = []
        for side in (0, 1):
            out = model(input_ids=inputs[side], past_key_values=caches[side], use_cache=True)
            caches[side] = out.past_key_values
            logprobs.append(out.logits[:, -1].float().log_softmax(-1))
        token = contrastive_scores(logprobs[0], logprobs[1], torch.tensor([lam]), 50).argmax(-1)
        generated.append(int(token))
        inputs = [token[:, None], token[:, None]]
    return generated


def bench(name: str, path: str, n: int, tokens: int, naive_limit: int) -> None:
    lm = load_model(path, BackendConfig(device="cpu"))
    model, tokenizer = lm.model, lm.tokenizer
    xs, x_primes = triples(n)
    enc_x = [tokenizer(t)["input_ids"] for t in xs]
    enc_xp = [tokenizer(t)["input_ids"] for t in x_primes]
    decoder = ContrastiveDecoder(model, tokenizer, eos_token_ids=())

    def cid():
        return decoder.decode(enc_x, enc_xp, [5.0] * n, max_new_tokens=tokens)

    rows = [t for pair in zip(xs, x_primes, strict=True) for t in pair]
    tokenizer.padding_side = "left"
    batch = tokenizer(rows, return_tensors="pt", padding=True)

    def greedy():
        with torch.inference_mode():
            return model.generate(
                **batch, do_sample=False, max_new_tokens=tokens, min_new_tokens=tokens,
                pad_token_id=tokenizer.pad_token_id, eos_token_id=None,
            )  # fmt: skip

    def sequential():
        with torch.inference_mode():
            return [
                sequential_cid(model, a, b, 5.0, tokens)
                for a, b in zip(enc_x[:naive_limit], enc_xp[:naive_limit], strict=True)
            ]

    decoder.decode(enc_x[:2], enc_xp[:2], [5.0] * 2, max_new_tokens=2)  # warm-up
    cid_s = min(time_it(cid) for _ in range(2))
    greedy_s = min(time_it(greedy) for _ in range(2))
    sequential_s = time_it(sequential) * n / naive_limit
    check = sequential_cid(model, enc_x[0], enc_xp[0], 5.0, tokens)
    same = list(cid()[0].token_ids) == check
    generated = n * tokens
    print(f"\n== {name} ({lm.identity.num_parameters / 1e6:.2f}M params), {n} triples x "
          f"{tokens} tokens, λ = 5 ==")  # fmt: skip
    print(f"CID batched (2N rows, one cache)  : {cid_s:7.2f} s  {generated / cid_s:8.1f} tok/s")
    print(f"plain batched greedy of 2N rows   : {greedy_s:7.2f} s  (CID / greedy = "
          f"{cid_s / greedy_s:.2f}x; goal <= 1.2x)")  # fmt: skip
    print(f"sequential two-forward CFG style  : {sequential_s:7.2f} s  (timed on {naive_limit}, "
          f"scaled; CID is {sequential_s / cid_s:.1f}x faster; goal >= 5x)")  # fmt: skip
    print(f"first triple identical to the sequential implementation: {same}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", nargs="+", default=["tiny-llama", "smollm2"])
    parser.add_argument("--n", type=int, default=None, help="triples (tiny 128, SmolLM2 32)")
    parser.add_argument("--tokens", type=int, default=20)
    parser.add_argument("--naive-limit", type=int, default=None, help="triples timed in (c)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            path, tiny = model_path(name, tmp)
            n = args.n or (128 if tiny else 32)
            bench(name, path, n, args.tokens, min(n, args.naive_limit or (32 if tiny else 8)))


if __name__ == "__main__":
    main()
