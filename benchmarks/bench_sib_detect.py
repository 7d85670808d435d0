"""Benchmark: SIB Method 2 detector inputs (the 480 extended-Winogender sentences × 1901 and
2016) — biaslens vs a competent batched transformers script vs lm-evaluation-harness vs the
reference code's approach, on the same model in the same run.

* biaslens ``token_distribution`` (exact mode), ``--batch-size auto``;
* a competent script: length-sorted padded batches of 64, one forward per input (masked LMs:
  the slot's logits; causal LMs: left padding, ``logits_to_keep=1``);
* causal models: lm-evaluation-harness ``HFLM.loglikelihood`` of every (input, pronoun) pair,
  on a subset (a masked LM's slot has no lm-eval request type);
* the reference code's approach, on a subset: one ``fill-mask`` pipeline call (top-5) per
  masked input, one ``generate(max_new_tokens=20)`` per causal prompt (different work).

Prints inputs/s, biaslens's speed-up over each, and agreement (max |Δ p(pronoun)|).

    python benchmarks/bench_sib_detect.py --data-dir ../shared/datasets
    python benchmarks/bench_sib_detect.py --models smollm2 --subset 48
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
import torch  # noqa: E402
from bench_mgc import paper_code, script_exact  # noqa: E402
from transformers import pipeline  # noqa: E402

from biaslens.data import sources  # noqa: E402
from biaslens.methods.sib.data import (
    mgc,  # noqa: E402
    winogender,  # noqa: E402
)
from biaslens.methods.sib.data.mgc import inject_date  # noqa: E402
from biaslens.methods.sib.data.pronouns import target_words  # noqa: E402
from biaslens.models import (  # noqa: E402
    MASK,
    BackendConfig,
    ModelKind,
    TokenDistributionRequest,
    load_model,
)


def detector_inputs(kind: ModelKind, data_dir: str | None) -> list[str]:
    sentences = winogender.build_extended(sources.locate("winogender", data_dir))["sentence"]
    injected = [inject_date(s, date) for date in (1901, 2016) for s in sentences]
    return injected if kind == ModelKind.MASKED else [mgc.wrap_in_prompt(s, "A") for s in injected]


def masked_script(lm, texts: list[str], target_ids: list[int], batch_size: int = 64):
    """p(target) at the slot: length-sorted padded batches, one forward per sentence."""
    tokenizer = lm.tokenizer
    masked = [t.replace(MASK, tokenizer.mask_token) for t in texts]
    order = sorted(range(len(masked)), key=lambda i: len(masked[i]))
    out: list[list[float]] = [[]] * len(masked)
    for start in range(0, len(order), batch_size):
        batch = order[start : start + batch_size]
        enc = tokenizer([masked[i] for i in batch], padding=True, return_tensors="pt")
        with torch.inference_mode():
            logits = lm.model(**enc).logits
        rows, slots = (enc["input_ids"] == tokenizer.mask_token_id).nonzero(as_tuple=True)
        probs = logits[rows, slots].float().softmax(-1)[:, target_ids].double()
        for row, i in enumerate(batch):
            out[i] = probs[row].tolist()
    return out


def fill_mask_reference(lm, texts: list[str]) -> None:
    fill = pipeline("fill-mask", model=lm.model, tokenizer=lm.tokenizer, top_k=5, device="cpu")
    for text in texts:
        fill(text.replace(MASK, lm.tokenizer.mask_token))


def bench(name: str, path: str, args) -> None:
    lm = load_model(path, BackendConfig(device="cpu", batch_size="auto"))
    masked = lm.kind == ModelKind.MASKED
    texts = detector_inputs(lm.kind, args.data_dir)
    n, subset = len(texts), min(args.subset, len(texts))
    targets = tuple(w for _, w in target_words(fills_slot=masked))
    encoded = [
        lm.tokenizer.convert_tokens_to_ids(lm.tokenizer.tokenize(t))
        if masked
        else lm.encode_continuation(t)
        for t in targets
    ]
    keep = [i for i, ids in enumerate(encoded) if len(ids) == 1]  # single-token pronouns
    target_ids = [encoded[i][0] for i in keep]
    requests = [TokenDistributionRequest(t, targets, 5) for t in texts]
    lm.token_distribution(requests[:4])  # load and warm up
    lm.sizers.clear()
    seconds, results = harness.timed(lambda: lm.token_distribution(requests))
    reference = [[r.target_probs[i] for i in keep] for r in results]
    rows = [harness.Row("biaslens token_distribution, batch auto", n, seconds)]
    if masked:
        seconds, script = harness.timed(lambda: masked_script(lm, texts, target_ids))
    else:
        prompts = lm.encode_prompts(texts)
        seconds, script = harness.timed(lambda: script_exact(lm, prompts, target_ids, 64))
    rows.append(
        harness.Row(
            "transformers script, batch 64",
            n,
            seconds,
            harness.max_abs_difference(harness.flat(script), harness.flat(reference)),
        )
    )
    if not masked and not args.no_lm_eval and harness.lm_eval_available():
        model = harness.lm_eval_model(harness.model_folder(path), 32)
        pairs = [(text, targets[i]) for text in texts[:subset] for i in keep]
        harness.lm_eval_loglikelihood(model, pairs[:4])
        seconds, logprobs = harness.timed(lambda: harness.lm_eval_loglikelihood(model, pairs))
        rows.append(
            harness.Row(
                f"lm-eval loglikelihood per (input, pronoun), batch 32 ({subset})",
                subset,
                seconds,
                harness.max_abs_difference(
                    [math.exp(x) for x in logprobs], harness.flat(reference[:subset])
                ),
            )
        )
    if masked:
        seconds, _ = harness.timed(lambda: fill_mask_reference(lm, texts[:subset]))
        label = f"reference code: fill-mask pipeline per sentence ({subset})"
    else:
        seconds, _ = harness.timed(lambda: paper_code(lm, lm.encode_prompts(texts[:subset])))
        label = f"reference code: generate(20) per prompt ({subset})"
    rows.append(harness.Row(label, subset, seconds))
    harness.print_table(
        f"{name} ({lm.kind.value}, {lm.identity.num_parameters / 1e6:.1f}M parameters), "
        f"{n} detector inputs",
        "inputs",
        rows,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--models", nargs="+", default=["tiny-bert", "smollm2"])
    parser.add_argument("--data-dir", default=None, help="folder holding winogender/")
    parser.add_argument("--subset", type=int, default=96, help="inputs for the slow baselines")
    parser.add_argument("--no-lm-eval", action="store_true")
    args = parser.parse_args()
    harness.start()
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            bench(name, harness.model_path(name, tmp)[0], args)


if __name__ == "__main__":
    main()
