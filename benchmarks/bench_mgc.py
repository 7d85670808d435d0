"""Benchmark: MGC Method 1 scoring of a causal LM — biaslens vs the obvious batched
transformers script vs lm-evaluation-harness vs the paper code's approach, on the same prompts.

Requests: MGC sentences wrapped in instruction prompt A (Appendix D.2), each scored for the
paper's gendered target words. Two modes:

**Exact** (biaslens's default: the next-token distribution after the prompt):

* biaslens ``--batch-size auto`` (a fresh size memo, so its throughput probe is timed too):
  length-sorted batches whose shared token prefixes run once (``models/backends/hf/prefix.py``);
* a competent transformers script: length-sorted, left-padded batches of 64, one forward pass
  per prompt with ``logits_to_keep=1``;
* lm-evaluation-harness 0.4.13 ``HFLM.loglikelihood`` of every (prompt, target) pair (batch
  32), on a subset;
* the paper code's approach, one ``generate(max_new_tokens=20, output_scores=True)`` call per
  prompt, on a subset (different work: shown because it is what the published numbers cost).

biaslens and lm-eval run in ``--repeats`` rounds (A B A B …), their medians compared; the
others run once. Before every run the fp32 matmul peak is measured again, so that each run's
useful FLOP/s is read against the machine as it was then.

**Paper** (up to 20 greedy steps with the top-5 at every step):

* biaslens ``generate``: its own greedy loop continuing from the shared-prefix KV cache;
* the previous implementation: ``model.generate`` on left-padded batches of 256;
* the paper code: ``generate`` per prompt, on a subset.

Agreement: exact mode, max |Δ p(target)| against biaslens; paper mode, the share of prompts
with identical greedy text and max |Δ| of the step top-5 probabilities. Exact mode also prints
its executed and nominal FLOP/s (2·non-embedding parameters per token run, padding included,
plus the LM head per scored row) against the fp32 matmul peak measured in the same run, and
against the ceiling of its own matmuls: every linear layer's call in the biaslens run is
recorded (rows × in × out) and replayed alone on random tensors of the same shapes, so the
rate a dense square matmul reaches is not mistaken for what this workload's small matrices can
reach (``--no-ceiling`` skips it).

Goals on a CPU with SmolLM2: exact ≥ 5× the script and ≥ 80% of the matmul peak (of the ceiling
of its own matmul shapes, printed after it, where that is below the square peak); paper ≥ 3×
the previous implementation.

**bf16** (``--bf16 auto|on|off``): the bf16 and fp32 matmul rates measured here, whether the CPU
has bf16 matrix units (AVX-512 BF16 / AMX), and — where it has them, or with ``--bf16 on`` on
``--bf16-prompts`` prompts — exact mode with the model in bf16: its rate and its agreement with
fp32 (max |Δ p(target)|, the share of prompts whose most probable target word is the same, and
Method 1's female − male slope per W kind in both dtypes), so a user can judge whether bf16 is
good enough for the metrics.

    python benchmarks/bench_mgc.py                            # SmolLM2, 1200 prompts
    python benchmarks/bench_mgc.py --prompts 3000 --subset 64
    python benchmarks/bench_mgc.py --mode exact --prompts 3000 --bf16 on --no-baselines
    python benchmarks/bench_mgc.py --mode exact --prompts 3000 --no-baselines --bf16 off \
        --batch-size 128                                     # the matmul ceiling at batch 128
    python benchmarks/bench_mgc.py --mode exact --no-baselines --bf16 off --no-ceiling \
        --compare-attention            # grouped-query attention vs transformers' sdpa
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
import torch  # noqa: E402

from biaslens.methods.sib.data import mgc  # noqa: E402
from biaslens.methods.sib.data.pronouns import target_words  # noqa: E402
from biaslens.models import (  # noqa: E402
    BackendConfig,
    GenerateRequest,
    ModelKind,
    TokenDistributionRequest,
    load_model,
)
from biaslens.models.backends.hf import generation  # noqa: E402
from biaslens.models.requests import RequestType  # noqa: E402


def linear_shapes(model, fn) -> Counter:
    """Calls of every ``nn.Linear`` of ``model`` while ``fn`` runs, by (rows, in, out)."""
    shapes: Counter = Counter()

    def record(module, inputs, output) -> None:
        x = inputs[0]
        shapes[(x.numel() // x.shape[-1], module.in_features, module.out_features)] += 1

    handles = [
        m.register_forward_hook(record) for m in model.modules() if isinstance(m, torch.nn.Linear)
    ]
    try:
        fn()
    finally:
        for handle in handles:
            handle.remove()
    return shapes


def replay_seconds(shapes: Counter, dtype: torch.dtype = torch.float32) -> float:
    """Seconds the recorded linear calls take alone: each shape timed (best of three, on up to
    four calls) on random tensors, times its number of calls."""
    total = 0.0
    with torch.inference_mode():
        for (rows, k, n), count in shapes.items():
            x, w = torch.randn(rows, k, dtype=dtype), torch.randn(n, k, dtype=dtype)
            torch.nn.functional.linear(x, w)
            reps = min(count, 4)

            def calls(x=x, w=w, reps=reps) -> None:
                for _ in range(reps):
                    torch.nn.functional.linear(x, w)

            best = min(harness.time_it(calls) for _ in range(3))
            total += best / reps * count
    return total


def print_ceiling(lm, requests, biaslens_s: float, executed: int, peak: float) -> None:
    """The matmul ceiling of this workload's own shapes (module doc) and where biaslens is."""
    lm.sizers.clear()
    shapes = linear_shapes(lm.model, lambda: lm.token_distribution(requests))
    flops = sum(2 * rows * k * n * count for (rows, k, n), count in shapes.items())
    alone = replay_seconds(shapes)
    ceiling = flops / alone
    print(
        f"  its linear layers: {sum(shapes.values())} calls of {len(shapes)} shapes, "
        f"{flops / 1e9:.0f} GFLOP; alone, at these shapes, they run at {ceiling / 1e9:.1f} "
        f"GFLOP/s = {ceiling / peak:.0%} of the square-matmul peak (the ceiling of this "
        f"workload's matmuls); they take {alone:.1f} s of biaslens's {biaslens_s:.1f} s "
        f"({alone / biaslens_s:.0%}); biaslens reaches {executed / biaslens_s / ceiling:.0%} of "
        f"that ceiling"
    )


def transformers_sdpa_row(lm, requests, reference) -> harness.Row:
    """biaslens with transformers' own ``sdpa`` attention (the KV heads repeated per query
    head), at the batch size biaslens settled on: the baseline of
    ``models/backends/hf/attention.py``."""
    size = lm.sizer(RequestType.TOKEN_DISTRIBUTION).size
    implementation = lm.model.config._attn_implementation
    batch_size = lm.config.options.batch_size
    harness.set_batch_size(lm, size)
    lm.model.set_attn_implementation("sdpa")
    try:
        seconds, results = harness.timed(lambda: lm.token_distribution(requests))
    finally:
        lm.model.set_attn_implementation(implementation)
        harness.set_batch_size(lm, batch_size)
    return harness.Row(
        f"biaslens, transformers' sdpa attention (batch {size})",
        len(requests),
        seconds,
        harness.max_abs_difference(
            harness.flat([list(r.target_probs) for r in results]), harness.flat(reference)
        ),
    )


def script_exact(lm, prompts: list[list[int]], target_ids: list[int], batch_size: int):
    """p(target) per prompt: length-sorted left-padded batches, ``logits_to_keep=1``."""
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    out: list[list[float] | None] = [None] * len(prompts)
    ids_tensor = torch.tensor(target_ids)
    for start in range(0, len(order), batch_size):
        batch = order[start : start + batch_size]
        ids, mask = lm.pad([prompts[i] for i in batch], left=True)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        with torch.inference_mode():
            logits = lm.model(
                input_ids=ids, attention_mask=mask, position_ids=positions, logits_to_keep=1
            ).logits[:, -1]
        probs = logits.float().softmax(-1)[:, ids_tensor].double()
        for row, i in enumerate(batch):
            out[i] = probs[row].tolist()
    return out


def paper_code(lm, prompts: list[list[int]]):
    """The paper code's approach: one ``generate(20, output_scores=True)`` call per prompt."""
    tokens, values = [], []
    for prompt in prompts:
        ids = torch.tensor([prompt])
        with torch.inference_mode():
            out = lm.model.generate(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=20,
                do_sample=False,
                output_scores=True,
                return_dict_in_generate=True,
                pad_token_id=lm.pad_id,
            )
        tokens.append(out.sequences[0, ids.shape[1] :])
        values.append(torch.stack(out.scores, 1)[0].float().softmax(-1).topk(5).values)
    return tokens, values


def previous_generate(lm, prompts: list[list[int]], requests, batch_size: int = 256):
    """The previous paper mode: ``model.generate`` on length-sorted batches of 256."""
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    out = [None] * len(prompts)
    for start in range(0, len(order), batch_size):
        batch = order[start : start + batch_size]
        tokens, top_values, top_ids = generation.hf_generate(lm, [prompts[i] for i in batch], 20, 5)
        for i, result in zip(
            batch,
            generation._results(lm, [requests[i] for i in batch], tokens, top_values, top_ids),
            strict=True,
        ):
            out[i] = result
    return out


def generation_agreement(results, reference) -> tuple[float, float]:
    """(share of identical texts, max |Δ| of the step top-5 probabilities over shared steps)."""
    same = sum(a.text == b.text for a, b in zip(results, reference, strict=True))
    worst = 0.0
    for a, b in zip(results, reference, strict=True):
        for pa, pb in zip(a.step_top_probs, b.step_top_probs, strict=False):
            worst = max(worst, max(abs(x - y) for x, y in zip(pa, pb, strict=True)))
    return same / len(results), worst


def gender_slopes(sentences, results, genders) -> dict[str, float]:
    """Method 1's female − male slope (points per W step) per W kind, from exact target
    probabilities (the gender mass is the sum over that gender's target words)."""
    import pandas as pd

    from biaslens.methods.sib.data.pronouns import GENDERS
    from biaslens.methods.sib.metrics.sib import method1_fits, slope_summary

    samples = sentences[["w_kind", "w_index", "w"]].reset_index(drop=True).assign(prompt="A")
    for gender in GENDERS:
        samples[f"p_{gender}"] = [
            sum(p for p, g in zip(r.target_probs, genders, strict=True) if g == gender)
            for r in results
        ]
    kinds = samples.groupby("w_kind")["w_index"].nunique()
    samples = samples[samples["w_kind"].isin(kinds[kinds >= 3].index)]
    summary = slope_summary(method1_fits(samples)) if len(samples) else pd.DataFrame()
    return dict(
        zip(summary.get("w_kind", []), summary.get("female_minus_male_slope", []), strict=True)
    )


def bf16_mode(args, texts, sentences, reference, fp32_seconds) -> None:
    """bf16 against fp32 on the same prompts: rate and agreement (see the module doc)."""
    from biaslens.models.backends.hf.loading import cpu_has_bf16_units, cpu_matrix_flags

    fp32_peak = harness.matmul_peak(torch.float32, args.device, n=512, repeats=2)
    bf16_peak = harness.matmul_peak(torch.bfloat16, args.device, n=512, repeats=2)
    units = args.device != "cpu" or cpu_has_bf16_units()
    print(
        f"\nbf16: matmul {bf16_peak / 1e9:.1f} GFLOP/s vs fp32 {fp32_peak / 1e9:.1f} "
        f"({bf16_peak / fp32_peak:.2f}×); bf16 matrix units: "
        f"{'yes' if units else 'no'} [{'/'.join(cpu_matrix_flags()) or 'flags unknown'}]"
    )
    if args.bf16 == "off" or (args.bf16 == "auto" and not units):
        why = "--bf16 off" if args.bf16 == "off" else "no bf16 units"
        print(f"  bf16 scoring not run ({why}; --bf16 on runs it on --bf16-prompts)")
        return
    n = len(texts) if units else min(args.bf16_prompts, len(texts))
    targets = tuple(word for _, word in target_words(fills_slot=False) if word[0] == " ")
    genders = [gender for gender, word in target_words(fills_slot=False) if word[0] == " "]
    picked = sorted({round(i * (len(texts) - 1) / max(n - 1, 1)) for i in range(n)})  # every W
    n = len(picked)
    requests = [TokenDistributionRequest(texts[i], targets, 5) for i in picked]
    lm = load_model(args.model, BackendConfig(device=args.device, dtype="bfloat16"))
    lm.token_distribution(requests[:2])  # load, warm up
    seconds, results = harness.timed(lambda: lm.token_distribution(requests))
    fp32 = [reference[i] for i in picked]
    worst = harness.max_abs_difference(
        harness.flat([r.target_probs for r in results]),
        harness.flat([r.target_probs for r in fp32]),
    )
    same_top = sum(
        max(range(len(targets)), key=a.target_probs.__getitem__)
        == max(range(len(targets)), key=b.target_probs.__getitem__)
        for a, b in zip(results, fp32, strict=True)
    )
    fp32_rate = len(reference) / fp32_seconds
    print(
        f"  exact mode, {n} prompts: bf16 {n / seconds:.2f} prompts/s vs fp32 "
        f"{fp32_rate:.2f} ({n / seconds / fp32_rate:.2f}×); max |Δ p(target)| {worst:.1e}; "
        f"same most probable target word {same_top / n:.1%}"
    )
    slopes_fp32 = gender_slopes(sentences.iloc[picked], fp32, genders)
    slopes_bf16 = gender_slopes(sentences.iloc[picked], results, genders)
    if not slopes_fp32:
        print("  Method 1 slopes need 3 W values of a kind among the prompts: not computed")
    for kind, slope in slopes_fp32.items():
        print(
            f"  Method 1 female − male slope, {kind}: fp32 {slope:+.4f}, bf16 "
            f"{slopes_bf16[kind]:+.4f} points per W step (Δ {slopes_bf16[kind] - slope:+.1e})"
        )


def exact_mode(args, lm, texts, counter, peak):
    targets = tuple(word for _, word in target_words(fills_slot=False) if word[0] == " ")
    requests = [TokenDistributionRequest(t, targets, 5) for t in texts]
    target_ids = [lm.encode_continuation(t) for t in targets]
    assert all(len(ids) == 1 for ids in target_ids), "benchmark targets must be single tokens"
    target_ids = [ids[0] for ids in target_ids]
    prompts = lm.encode_prompts(texts)
    n, subset = len(texts), min(args.subset, len(texts))
    per_token, per_row = harness.flop_rates(lm.model)
    nominal = per_token * sum(len(p) for p in prompts) + per_row * n

    def biaslens_run():  # auto starts unmeasured in every run: its size probe is timed too
        if lm.config.options.batch_size == "auto":
            harness.forget_batch_sizes(lm)
        counter.reset()
        return lm.token_distribution(requests)

    approaches = {"biaslens": biaslens_run}
    lm_eval, theirs = None, None
    pairs = [(text, target) for text in texts[:subset] for target in targets]
    if not args.no_baselines and not args.no_lm_eval and harness.lm_eval_available():
        lm_eval = harness.lm_eval_model(harness.model_folder(args.model), 32)
        harness.lm_eval_loglikelihood(lm_eval, pairs[:4])  # warm-up
        theirs = harness.ForwardCounter(lm_eval.model)
        approaches["lm-eval"] = lambda: (
            theirs.reset(), harness.lm_eval_loglikelihood(lm_eval, pairs))[1]  # fmt: skip
    timings = harness.alternate(approaches, args.repeats, args.device)
    ours = timings["biaslens"]
    results, seconds = ours.result, ours.median
    reference = [list(r.target_probs) for r in results]
    executed = per_token * counter.tokens + per_row * counter.rows
    ours.flops = per_token * harness.trie_tokens(prompts) + per_row * n
    chosen = lm.sizer(RequestType.TOKEN_DISTRIBUTION)
    settled = f"settled at {chosen.size}" if chosen.settled else f"probing, at {chosen.size}"
    if lm.config.options.batch_size != "auto":
        settled = "fixed"
    rounds = f"median of {args.repeats}"
    fresh = "fresh each run, " if lm.config.options.batch_size == "auto" else ""
    table = [harness.Row(f"biaslens, batch {lm.config.options.batch_size} ({fresh}{rounds}; "
                         f"last {settled})", n, seconds)]  # fmt: skip
    if args.compare_attention:
        table.append(transformers_sdpa_row(lm, requests, reference))
    if args.no_baselines:
        harness.print_table(f"MGC exact mode, {n} prompt-A prompts", "prompts", table)
        harness.print_repeated_share("biaslens, useful work (shared prefixes once)", ours)
        if not args.no_ceiling:
            print_ceiling(lm, requests, seconds, executed, peak)
        return results, seconds

    counter.reset()
    script_s, script = harness.timed(lambda: script_exact(lm, prompts, target_ids, 64))
    script_flops = per_token * counter.tokens + per_row * counter.rows
    table.append(
        harness.Row(
            "transformers script, batch 64, logits_to_keep=1",
            n,
            script_s,
            harness.max_abs_difference(harness.flat(script), harness.flat(reference)),
        )
    )
    if lm_eval is not None:
        timings["lm-eval"].flops = per_token * theirs.tokens + per_row * theirs.rows
        table.append(
            harness.Row(
                f"lm-eval loglikelihood per (prompt, target), batch 32 ({subset} prompts, "
                f"{rounds})",
                subset,
                timings["lm-eval"].median,
                harness.max_abs_difference(
                    [math.exp(x) for x in timings["lm-eval"].result],
                    harness.flat(reference[:subset]),
                ),
            )
        )
        lm_eval = None  # its memory back before the paper code runs
    paper_s, _ = harness.timed(lambda: paper_code(lm, prompts[:subset]))
    label = f"paper code: generate(20) per prompt ({subset} prompts)"
    table.append(harness.Row(label, subset, paper_s))
    harness.print_table(f"MGC exact mode, {n} prompt-A prompts", "prompts", table)
    print(
        f"  biaslens executed {executed / seconds / 1e9:.1f} GFLOP/s = "
        f"{executed / seconds / peak:.0%} of the matmul peak; nominal (every prompt in "
        f"full) {nominal / seconds / 1e9:.1f} GFLOP/s = {nominal / seconds / peak:.0%}; "
        f"shared prefixes cut the work run by {nominal / executed:.1f}x (median run, against "
        "the peak measured at the start)"
    )
    print(
        f"  script executed {script_flops / script_s / 1e9:.1f} GFLOP/s = "
        f"{script_flops / script_s / peak:.0%} of the matmul peak"
    )
    harness.print_repeated_share("biaslens, useful work (shared prefixes once)", ours)
    if "lm-eval" in timings:
        harness.print_repeated_share(
            "lm-eval, on the work it runs (every pair in full)", timings["lm-eval"]
        )
    if not args.no_ceiling:
        print_ceiling(lm, requests, seconds, executed, peak)
    return results, seconds


def paper_mode(args, lm, texts) -> None:
    n, subset = min(args.paper_prompts, len(texts)), min(args.subset, len(texts))
    texts = texts[:n]
    requests = [GenerateRequest(t, 20, 5) for t in texts]
    prompts = lm.encode_prompts(texts)
    seconds, results = harness.timed(lambda: lm.generate(requests))
    chosen = lm.sizer(RequestType.GENERATE)
    label = f"biaslens greedy loop, batch {lm.config.options.batch_size} (at {chosen.size})"
    table = [harness.Row(label, n, seconds)]
    seconds, previous = harness.timed(lambda: previous_generate(lm, prompts, requests))
    same, worst = generation_agreement(previous, results)
    table.append(harness.Row("previous: model.generate, batch 256", n, seconds, worst))
    seconds, (tokens, values) = harness.timed(lambda: paper_code(lm, prompts[:subset]))
    paper_worst = 0.0
    paper_same = 0
    for result, toks, vals in zip(results[:subset], tokens, values, strict=False):
        steps = torch.tensor(result.step_top_probs)
        k = min(len(steps), len(vals))
        paper_worst = max(paper_worst, float((steps[:k] - vals[:k].double()).abs().max()))
        eos = lm.tokenizer.eos_token_id
        cut = toks.tolist()
        cut = cut[: cut.index(eos) + 1] if eos in cut else cut
        paper_same += lm.tokenizer.decode(cut, skip_special_tokens=True) == result.text.replace(
            lm.tokenizer.eos_token or "\0", ""
        )
    table.append(
        harness.Row(f"paper code: generate(20) per prompt ({subset})", subset, seconds, paper_worst)
    )
    harness.print_table(f"MGC paper mode (20 greedy steps, top-5), {n} prompts", "prompts", table)
    print(
        f"  identical greedy text: previous {same:.0%}, paper code {paper_same / subset:.0%} "
        "(of its subset)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="default")
    parser.add_argument("--prompts", type=int, default=1200, help="exact-mode prompts (≤3000)")
    parser.add_argument("--paper-prompts", type=int, default=512)
    parser.add_argument("--subset", type=int, default=64, help="prompts for the slow baselines")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--no-lm-eval", action="store_true")
    parser.add_argument("--no-baselines", action="store_true", help="biaslens only (e.g. bf16)")
    parser.add_argument("--batch-size", default="auto", help="biaslens's batch size")
    parser.add_argument(
        "--repeats", type=int, default=3, help="rounds of biaslens and lm-eval (exact mode)"
    )
    parser.add_argument(
        "--compare-attention",
        action="store_true",
        help="also time biaslens with transformers' sdpa attention (KV heads repeated)",
    )
    parser.add_argument("--no-ceiling", action="store_true", help="skip the matmul replay")
    parser.add_argument("--mode", choices=("exact", "paper", "both"), default="both")
    parser.add_argument("--bf16", choices=("auto", "on", "off"), default="auto")
    parser.add_argument("--bf16-prompts", type=int, default=240, help="without bf16 units")
    args = parser.parse_args()
    peak = harness.start(args.device)

    config = BackendConfig(device=args.device, batch_size=args.batch_size)
    lm = load_model(args.model, config)
    if lm.kind != ModelKind.CAUSAL:
        raise SystemExit(f"{args.model} is {lm.kind.value}; this benchmark needs a causal LM")
    sentences = mgc.build_mgc().iloc[: args.prompts]
    texts = [mgc.wrap_in_prompt(s, "A") for s in sentences["sentence"]]
    counter = harness.ForwardCounter(lm.model)
    # load and warm up: two prompts, so that the once-per-model check of the packed prefix
    # tree (hf/tree.py: a plain forward of two prompts) is paid here, as loading is
    lm.token_distribution([TokenDistributionRequest(t, (" he",), 5) for t in texts[:2]])
    lm.sizers.clear()
    print(f"{lm.identity.name}: {lm.identity.num_parameters / 1e6:.1f}M parameters, fp32")
    if args.mode in ("exact", "both"):
        reference, seconds = exact_mode(args, lm, texts, counter, peak)
        bf16_mode(args, texts, sentences, reference, seconds)
    if args.mode in ("paper", "both"):
        paper_mode(args, lm, texts)


if __name__ == "__main__":
    main()
