"""Benchmark: choice scoring (``choice_logprobs``) of generative LEI questions — biaslens vs
the obvious batched transformers script vs lm-evaluation-harness, on the same requests.

Requests: the LEI religion test questions in UnifiedQA format, each with its two subjects as
choices (log p(choice | prompt) summed over the choice's tokens). Approaches:

* biaslens ``--batch-size auto`` (a fresh size memo, so the throughput probe is timed too) and a
  fixed batch of 32: each distinct prompt runs once, the choices are scored from its KV cache;
* a competent transformers script: every (prompt + choice) sequence in right-padded batches of
  32, log-softmax only at the choice's positions;
* lm-evaluation-harness 0.4.13 ``HFLM.loglikelihood`` (the same model folder, fp32) at batch
  sizes 8, 32 and ``auto``.

Prints questions/s, biaslens's speed-up over each, and agreement (max |Δ log p| against
biaslens). Goal: biaslens ``auto`` ≥ 1.5× lm-eval's best batch size.

    python benchmarks/bench_choice_scoring.py --paragraphs 102   # 204 questions
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
import torch  # noqa: E402

from biaslens.data import lei  # noqa: E402
from biaslens.models import (  # noqa: E402
    BackendConfig,
    load_model,
)
from biaslens.scoring.qa import generative_requests  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets" / "lei"


def full_sequences(lm, requests, batch_size: int) -> list[float]:
    """log p(choice | prompt) from one forward pass per (prompt + choice), right-padded
    batches, log-softmax only over the choice's positions."""
    prompts, choices = lm.encode_choice_requests(requests)
    pairs = [(p, c) for p, row in zip(prompts, choices, strict=True) for c in row]
    out = []
    for start in range(0, len(pairs), batch_size):
        batch = pairs[start : start + batch_size]
        ids, mask = lm.pad([p + c for p, c in batch], left=False)
        with torch.inference_mode():
            logits = lm.model(input_ids=ids, attention_mask=mask).logits
        for row, (p, c) in enumerate(batch):
            positions = torch.arange(len(p) - 1, len(p) + len(c) - 1)
            logprobs = logits[row, positions].float().log_softmax(-1)
            out.append(float(logprobs[torch.arange(len(c)), torch.tensor(c)].double().sum()))
    return out


def biaslens_scores(model: str, batch_size, requests) -> tuple[float, list[float], object]:
    lm = load_model(model, BackendConfig(device="cpu", batch_size=batch_size))
    lm.choice_logprobs(requests[:2])  # load and warm up (sizes the probe does not count)
    lm.sizers.clear()
    seconds, results = harness.timed(lambda: lm.choice_logprobs(requests))
    return seconds, [s for r in results for s in r.logprobs], lm


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--paragraphs", type=int, default=102)
    parser.add_argument("--lei-dir", type=Path, default=SHARED)
    parser.add_argument("--no-lm-eval", action="store_true")
    args = parser.parse_args()
    peak = harness.start()

    probe = load_model(args.model, BackendConfig(device="cpu"))
    rows = lei.read_split(lei.split_path("religion/noniid_test", args.lei_dir))
    requests = generative_requests(probe, rows.head(args.paragraphs))
    n = len(requests)
    print(f"{probe.identity.name}: {n} questions, 2 choices each")

    auto_s, reference, lm = biaslens_scores(args.model, "auto", requests)
    from biaslens.models.requests import RequestType

    chosen = lm.sizer(RequestType.CHOICE_LOGPROBS).size
    table = [harness.Row(f"biaslens, batch auto (settled at {chosen})", n, auto_s)]
    fixed_s, fixed, _ = biaslens_scores(args.model, 32, requests)
    table.append(
        harness.Row("biaslens, batch 32", n, fixed_s, harness.max_abs_difference(fixed, reference))
    )
    script_s, script = harness.timed(lambda: full_sequences(lm, requests, 32))
    table.append(
        harness.Row(
            "transformers script, full sequences, batch 32",
            n,
            script_s,
            harness.max_abs_difference(script, reference),
        )
    )
    per_token, per_row = harness.flop_rates(lm.model)
    prompts, choices = lm.encode_choice_requests(requests)
    sequences = [p + c for p, row in zip(prompts, choices, strict=True) for c in row]
    useful = per_token * harness.trie_tokens(sequences) + per_row * sum(
        len(c) for row in choices for c in row
    )
    shares = [("biaslens, batch auto, useful work (shared prompts once)", useful, auto_s)]
    if not args.no_lm_eval and harness.lm_eval_available():
        pairs = [(r.prompt, c) for r in requests for c in r.choices]
        folder = harness.model_folder(args.model)
        for batch in (8, 32, "auto"):
            model = harness.lm_eval_model(folder, batch)
            harness.lm_eval_loglikelihood(model, pairs[:4])  # warm-up
            theirs = harness.ForwardCounter(model.model)
            seconds, scores = harness.timed(lambda m=model: harness.lm_eval_loglikelihood(m, pairs))
            shares.append((f"lm-eval batch {batch}, on the work it runs",
                           per_token * theirs.tokens + per_row * theirs.rows, seconds))  # fmt: skip
            table.append(
                harness.Row(
                    f"lm-eval HFLM.loglikelihood, batch {batch}",
                    n,
                    seconds,
                    harness.max_abs_difference(scores, reference),
                )
            )
            del model
    harness.print_table("LEI generative choice scoring", "questions", table)
    for label, flops, seconds in shares:
        harness.print_share(label, flops, seconds, peak)


if __name__ == "__main__":
    main()
