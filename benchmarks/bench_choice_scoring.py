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

biaslens (``auto`` and 32) and lm-eval at batch 32 run in ``--repeats`` rounds (A B C A B C …),
their medians compared; the other approaches run once. Before every run the fp32 matmul peak is
measured again, so that each run's useful FLOP/s is read against the machine as it was then.

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

from biaslens.methods.qa.data import lei  # noqa: E402
from biaslens.methods.qa.scoring.qa import generative_requests  # noqa: E402
from biaslens.models import (  # noqa: E402
    BackendConfig,
    load_model,
)

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--paragraphs", type=int, default=102)
    parser.add_argument("--lei-dir", type=Path, default=SHARED)
    parser.add_argument("--no-lm-eval", action="store_true")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of the timed approaches")
    args = parser.parse_args()
    harness.start()

    auto = load_model(args.model, BackendConfig(device="cpu", batch_size="auto"))
    fixed = load_model(args.model, BackendConfig(device="cpu", batch_size=32))
    rows = lei.read_split(lei.split_path("religion/noniid_test", args.lei_dir))
    requests = generative_requests(auto, rows.head(args.paragraphs))
    n = len(requests)
    print(f"{auto.identity.name}: {n} questions, 2 choices each")
    for lm in (auto, fixed):
        lm.choice_logprobs(requests[:2])  # load and warm up (sizes the probe does not count)

    def fresh_auto():  # each run starts unmeasured: its size probe is timed too
        harness.forget_batch_sizes(auto)
        return auto.choice_logprobs(requests)

    approaches = {"auto": fresh_auto, "fixed": lambda: fixed.choice_logprobs(requests)}
    theirs, lm_eval = None, None
    pairs = [(r.prompt, c) for r in requests for c in r.choices]
    if not args.no_lm_eval and harness.lm_eval_available():
        lm_eval = harness.lm_eval_model(harness.model_folder(args.model), 32)
        harness.lm_eval_loglikelihood(lm_eval, pairs[:4])  # warm-up
        theirs = harness.ForwardCounter(lm_eval.model)
        approaches["lm-eval"] = lambda: (
            theirs.reset(), harness.lm_eval_loglikelihood(lm_eval, pairs))[1]  # fmt: skip
    timings = harness.alternate(approaches, args.repeats)

    from biaslens.models.requests import RequestType

    chosen = auto.sizer(RequestType.CHOICE_LOGPROBS).size
    reference = [s for r in timings["auto"].result for s in r.logprobs]
    rounds = f"median of {args.repeats}"
    table = [harness.Row(f"biaslens, batch auto (fresh each run; {rounds}; last at {chosen})",
                         n, timings["auto"].median)]  # fmt: skip
    scores = [s for r in timings["fixed"].result for s in r.logprobs]
    table.append(harness.Row(f"biaslens, batch 32 ({rounds})", n, timings["fixed"].median,
                             harness.max_abs_difference(scores, reference)))  # fmt: skip
    script_s, script = harness.timed(lambda: full_sequences(auto, requests, 32))
    table.append(
        harness.Row(
            "transformers script, full sequences, batch 32",
            n,
            script_s,
            harness.max_abs_difference(script, reference),
        )
    )
    per_token, per_row = harness.flop_rates(auto.model)
    prompts, choices = auto.encode_choice_requests(requests)
    sequences = [p + c for p, row in zip(prompts, choices, strict=True) for c in row]
    timings["auto"].flops = per_token * harness.trie_tokens(sequences) + per_row * sum(
        len(c) for row in choices for c in row
    )
    shares = [("biaslens, batch auto, useful work (shared prompts once)", timings["auto"])]
    if lm_eval is not None:
        timings["lm-eval"].flops = per_token * theirs.tokens + per_row * theirs.rows
        table.append(harness.Row(f"lm-eval HFLM.loglikelihood, batch 32 ({rounds})", n,
                                 timings["lm-eval"].median,
                                 harness.max_abs_difference(timings["lm-eval"].result,
                                                            reference)))  # fmt: skip
        shares.append(("lm-eval batch 32, on the work it runs", timings["lm-eval"]))
        lm_eval = None  # its memory back before the next lm-eval model loads
        for batch in (8, "auto"):  # once each: the slower settings
            model = harness.lm_eval_model(harness.model_folder(args.model), batch)
            harness.lm_eval_loglikelihood(model, pairs[:4])  # warm-up
            seconds, scores = harness.timed(lambda m=model: harness.lm_eval_loglikelihood(m, pairs))
            worst = harness.max_abs_difference(scores, reference)
            table.append(
                harness.Row(f"lm-eval HFLM.loglikelihood, batch {batch}", n, seconds, worst)
            )
            del model
    harness.print_table("LEI generative choice scoring", "questions", table)
    for label, timing in shares:
        harness.print_repeated_share(label, timing)


if __name__ == "__main__":
    main()
