"""Generation jobs of the transformers backend: greedy decoding with per-step top-k, and CID.

Causal greedy decoding runs its own loop (:func:`greedy_causal`) so that the prompts' shared
prefix runs once; seq2seq models decode through ``model.generate``.

Prompts too long for the model's context are cut from the left, leaving room for the new
tokens (one warning counts them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from biaslens.common.stopping import apply_stop, contains_stop
from biaslens.decoding.contrastive import ContrastiveDecoder
from biaslens.errors import BiaslensError
from biaslens.models.backends.hf.prefix import prefill
from biaslens.models.base import ModelKind
from biaslens.models.requests import (
    ContrastiveGenerateResult,
    GenerateResult,
    RequestType,
)

if TYPE_CHECKING:
    from biaslens.models.backends.hf.runtime import HFRuntime


def generate(b: HFRuntime, requests, progress) -> list[GenerateResult]:
    groups: dict[tuple[int, int], list[int]] = {}
    for i, r in enumerate(requests):
        groups.setdefault((r.max_new_tokens, r.top_k), []).append(i)
    results: list[GenerateResult | None] = [None] * len(requests)
    for (max_new, top_k), index in groups.items():
        encoded = b.encode_prompts([requests[i].prompt for i in index])
        encoded = b.fit_left(encoded, max_new, RequestType.GENERATE)

        def run(batch: list[int], max_new=max_new, top_k=top_k, encoded=encoded, index=index):
            return _generate_batch(
                b, [encoded[j] for j in batch], [requests[index[j]] for j in batch], max_new, top_k
            )

        out = b.batched(
            RequestType.GENERATE,
            list(range(len(index))),
            [len(e) for e in encoded],
            run,
            progress,
            keys=encoded,
        )
        for j, result in enumerate(out):
            results[index[j]] = result
    return results  # type: ignore[return-value]


def _generate_batch(b: HFRuntime, prompts, requests, max_new_tokens, top_k) -> list[GenerateResult]:
    if b.kind == ModelKind.CAUSAL:
        stops = [r.stop for r in requests]
        tokens, top_values, top_ids = greedy_causal(b, prompts, max_new_tokens, top_k, stops)
    else:
        tokens, top_values, top_ids = hf_generate(b, prompts, max_new_tokens, top_k)
    return _results(b, requests, tokens, top_values, top_ids)


def greedy_causal(
    b: HFRuntime,
    prompts: list[list[int]],
    max_new_tokens: int,
    top_k: int,
    stops: list[tuple[str, ...]] | None = None,
):
    """Greedy decoding of a batch of causal prompts with the top-k of every step.

    The prompts' shared token prefixes (MGC's instruction prompts share most of theirs) run
    once and their KV cache serves every row (:func:`.prefix.prefill`, as in exact scoring).
    Each step computes only the last position's logits. A row that has produced EOS or one of
    its ``stops`` strings leaves the batch (its cache rows are dropped once enough rows have
    finished to pay for the copy), so finished rows cost nothing; the loop ends when every row
    has. Tokens equal ``model.generate``'s greedy output up to each row's end.

    Returns the generated ids (batch, steps), EOS-filled after a row's end, and the top-k
    probabilities and ids of each step (batch, steps, k), on the CPU.
    """
    model, n, device = b.model, len(prompts), b.device
    eos = b.tokenizer.eos_token_id
    fill = eos if eos is not None else b.pad_id
    stops = stops or [()] * n
    k = min(top_k, b.model.config.vocab_size)
    chosen = torch.full((n, max_new_tokens), fill, dtype=torch.long)
    values = torch.zeros((n, max_new_tokens, k), dtype=torch.float64)
    ids = torch.zeros((n, max_new_tokens, k), dtype=torch.long)
    live = torch.arange(n)  # original rows still decoding, in cache order
    with torch.inference_mode():
        state = prefill(b, prompts, use_cache=True)
        logits, cache = state.logits, state.cache
        attention, next_position = state.attention, state.next_position
        steps = 0
        for step in range(max_new_tokens):
            probs = logits.float().softmax(-1)
            top = probs.topk(k, dim=-1)
            token = top.indices[:, 0]
            chosen[live, step] = token.cpu()
            values[live, step] = top.values.double().cpu()
            ids[live, step] = top.indices.cpu()
            steps = step + 1
            if step + 1 == max_new_tokens:
                break
            done = _finished(b, chosen, live, step, token, eos, stops)
            if bool(done.all()):
                break
            if int(done.sum()) * 8 >= len(live):  # drop finished rows: worth the cache copy
                keep = (~done).nonzero().squeeze(1)
                live, token = live[keep.cpu()], token[keep]
                cache.reorder_cache(keep)
                attention, next_position = attention[keep], next_position[keep]
            attention = torch.cat(
                [attention, torch.ones((len(live), 1), dtype=torch.long, device=device)], 1
            )
            out = model(
                input_ids=token[:, None],
                attention_mask=attention,
                position_ids=next_position,
                past_key_values=cache,
                use_cache=True,
            )
            logits, cache = out.logits[:, -1], out.past_key_values
            next_position = next_position + 1
    return chosen[:, :steps], values[:, :steps], ids[:, :steps]


def _finished(b: HFRuntime, chosen, live, step, token, eos, stops) -> torch.Tensor:
    """Which live rows (cache order) have produced EOS or completed a stop string."""
    done = token == eos if eos is not None else torch.zeros_like(token, dtype=torch.bool)
    for j, row in enumerate(live.tolist()):
        if stops[row] and not done[j]:
            text = b.tokenizer.decode(chosen[row, : step + 1], skip_special_tokens=True)
            done[j] = contains_stop(stops[row], text)
    return done


def hf_generate(b: HFRuntime, prompts: list[list[int]], max_new_tokens: int, top_k: int):
    """Greedy decoding through ``model.generate`` (seq2seq models; the same outputs as
    :func:`greedy_causal` for causal ones)."""
    left = b.kind == ModelKind.CAUSAL
    ids, attention = b.pad(prompts, left=left)
    with torch.inference_mode():
        out = b.model.generate(
            input_ids=ids,
            attention_mask=attention,
            do_sample=False,
            max_new_tokens=max_new_tokens,
            output_logits=True,
            return_dict_in_generate=True,
            pad_token_id=b.pad_id,
            eos_token_id=b.tokenizer.eos_token_id,
        )
    generated = out.sequences[:, ids.shape[1] :] if left else out.sequences[:, 1:]
    step_probs = torch.stack(out.logits, 1).float().softmax(-1)  # (batch, steps, vocab)
    top = step_probs.topk(min(top_k, step_probs.shape[-1]), dim=-1)
    return generated.cpu(), top.values.double().cpu(), top.indices.cpu()


def _results(b: HFRuntime, requests, tokens, top_values, top_ids) -> list[GenerateResult]:
    """Per row: the text up to EOS (included) or a stop string, with each step's top-k."""
    eos = b.tokenizer.eos_token_id
    results = []
    for row, request in enumerate(requests):
        ids = tokens[row].tolist()
        steps = ids.index(eos) + 1 if eos is not None and eos in ids else len(ids)
        pieces = [b.decode_token(t) for t in ids[:steps]]
        text = b.tokenizer.decode(ids[:steps], skip_special_tokens=True)
        steps, text = apply_stop(request.stop, pieces, text)
        k = request.top_k
        results.append(
            GenerateResult(
                text=text,
                tokens=tuple(pieces[:steps]),
                step_top_tokens=tuple(
                    tuple(b.decode_token(int(i)) for i in top_ids[row, step, :k])
                    for step in range(steps)
                ),
                step_top_probs=tuple(
                    tuple(float(v) for v in top_values[row, step, :k]) for step in range(steps)
                ),
            )
        )
    return results


def contrastive_generate(b: HFRuntime, requests, progress) -> list[ContrastiveGenerateResult]:
    """CID for many (x, x', λ) triples: x and x' are two rows of one batch sharing a KV
    cache, triples are batched together (``batch_size`` counts triples)."""
    if b.contrastive_decoder is None:
        b.contrastive_decoder = ContrastiveDecoder(b.model, b.tokenizer)
    groups: dict[tuple, list[int]] = {}
    for i, r in enumerate(requests):
        if not r.x.strip() or not r.x_prime.strip():
            raise BiaslensError(f"request {i}: x and x' must be non-empty text")
        options = (r.max_new_tokens, r.top_k, tuple(r.stop), r.do_sample, r.temperature)
        groups.setdefault(options, []).append(i)
    texts = list(dict.fromkeys(t for r in requests for t in (r.x, r.x_prime)))
    reserve = max(r.max_new_tokens for r in requests) if requests else 0
    fitted = b.fit_left(b.encode_prompts(texts), reserve, RequestType.CONTRASTIVE_GENERATE)
    encoded = dict(zip(texts, fitted, strict=True))
    results: list[ContrastiveGenerateResult | None] = [None] * len(requests)
    for (max_new, top_k, stop, do_sample, temperature), index in groups.items():

        def run(batch, max_new=max_new, top_k=top_k, stop=stop, sample=do_sample, t=temperature):
            chosen = [requests[i] for i in batch]
            outputs = b.contrastive_decoder.decode(
                [encoded[r.x] for r in chosen],
                [encoded[r.x_prime] for r in chosen],
                [r.lam for r in chosen],
                top_k=top_k,
                max_new_tokens=max_new,
                stop=stop,
                do_sample=sample,
                temperature=t,
                seeds=[r.seed for r in chosen],
            )
            return [
                ContrastiveGenerateResult(o.text, len(o.token_ids), o.finish_reason)
                for o in outputs
            ]

        lengths = [
            max(len(encoded[requests[i].x]), len(encoded[requests[i].x_prime])) for i in index
        ]
        done = b.batched(RequestType.CONTRASTIVE_GENERATE, index, lengths, run, progress)
        for i, result in zip(index, done, strict=True):
            results[i] = result
    return results  # type: ignore[return-value]
