"""Scoring jobs of the transformers backend: token distributions and choice log-likelihoods.

* Masked LMs: the MLM head is applied to the masked positions only.
* Causal LMs: next-token logits; the prompts of a batch run as their packed prefix tree, each
  distinct prefix once (:mod:`.tree`), or, for a model that does not give its plain logits
  that way, level by level with a shared KV cache (:mod:`.prefix`).
* Choice log-likelihoods run each distinct prompt once (see :mod:`.training`).
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING

import torch

from biaslens.common.tokens import MASK
from biaslens.errors import BiaslensError
from biaslens.models.backends.hf.forward import continuation_logprobs
from biaslens.models.backends.hf.prefix import prefill
from biaslens.models.backends.hf.tree import added_tokens, packs, tree_logits
from biaslens.models.base import ModelKind
from biaslens.models.requests import (
    ChoiceLogprobsRequest,
    ChoiceLogprobsResult,
    RequestType,
    TokenDistributionResult,
)

if TYPE_CHECKING:
    from biaslens.models.backends.hf.runtime import HFRuntime


def token_distribution(b: HFRuntime, requests, progress) -> list[TokenDistributionResult]:
    if b.kind == ModelKind.MASKED:
        return _masked_distribution(b, requests, progress)
    return _next_token_distribution(b, requests, progress)


# ---------------------------------------------------------------------- masked LMs
def masked_target_ids(b: HFRuntime, requests) -> list[list[int | None]]:
    """Token id of each target in its slot, or None when it is not one known token there.

    A target is checked in context: the text with the target in place of the mask must
    tokenize to the same tokens as the masked text except at the slot. Pre-tokenizers split
    on whitespace and punctuation, so the outcome depends only on the characters next to
    the slot; it is computed once per (character before, character after, target) on the
    first text with that frame and reused for the others. A span denoiser writes the slot's
    text after its sentinel, so there a target is the single token of the word.
    """
    mask = b.mask_token()
    for request in requests:
        if request.text.count(MASK) != 1:
            raise BiaslensError(
                f"a masked-LM request must contain {MASK} exactly once: {request.text!r}"
            )
    if b.fill_style == "sentinel":
        distinct = dict.fromkeys(t for r in requests for t in r.targets)  # each encoded once
        ids = {t: b.encode_continuation(" " + t.lstrip()) for t in distinct}
        target_id = {
            t: i[0] if len(i) == 1 and i[0] != b.tokenizer.unk_token_id else None
            for t, i in ids.items()
        }
        _warn_not_single(b, [t for t, i in target_id.items() if i is None])
        return [[target_id[t] for t in r.targets] for r in requests]

    def frame(text: str) -> tuple[str, str]:
        before, after = text.split(MASK)
        return before[-1:], after[:1]

    probes: dict[tuple[str, str, str], str] = {}
    for r in requests:
        for target in r.targets:
            probes.setdefault((*frame(r.text), target), r.text)
    keys = list(probes)
    masked = b.tokenizer(b.with_prefix([probes[k].replace(MASK, mask) for k in keys]))
    filled = b.tokenizer(b.with_prefix([probes[k].replace(MASK, k[2]) for k in keys]))
    target_id: dict[tuple[str, str, str], int | None] = {}
    for key, reference, ids in zip(keys, masked["input_ids"], filled["input_ids"], strict=True):
        position = reference.index(b.tokenizer.mask_token_id)
        same_frame = len(ids) == len(reference) and all(
            x == y for i, (x, y) in enumerate(zip(ids, reference, strict=True)) if i != position
        )
        known = same_frame and ids[position] != b.tokenizer.unk_token_id
        target_id[key] = ids[position] if known else None
    _warn_not_single(b, [k[2] for k, i in target_id.items() if i is None])
    return [[target_id[(*frame(r.text), t)] for t in r.targets] for r in requests]


def _warn_not_single(b: HFRuntime, targets: list[str]) -> None:
    if targets:
        warnings.warn(
            f"{b.identity.name}: these target words are not single (known) tokens for this "
            f"tokenizer and get probability NaN: {', '.join(map(repr, sorted(set(targets))))}",
            stacklevel=5,
        )


def _mlm_head(model):
    for name in ("cls", "lm_head", "predictions"):
        head = getattr(model, name, None)
        if isinstance(head, torch.nn.Module):
            return head
    return None


def _slot_logits(b: HFRuntime, ids: torch.Tensor, attention: torch.Tensor) -> torch.Tensor:
    """Logits at the slot of each row (one slot per row), computing the vocabulary projection
    only there."""
    model = b.model
    if b.fill_style == "sentinel":
        start = model.config.decoder_start_token_id
        sentinel = b.tokenizer.convert_tokens_to_ids(b.mask_token())
        decoder = torch.tensor([[start, sentinel]], device=b.device).expand(len(ids), 2)
        out = model(input_ids=ids, attention_mask=attention, decoder_input_ids=decoder)
        return out.logits[:, -1]
    slot = (ids == b.tokenizer.mask_token_id).nonzero()
    head = _mlm_head(model)
    if b.fill_style == "reconstruct":
        if head is not None and hasattr(model, "model"):
            # the decoder reads the input shifted right: its output at the slot predicts it
            hidden = model.model(input_ids=ids, attention_mask=attention)[0]
            logits = head(hidden[slot[:, 0], slot[:, 1]])
            bias = getattr(model, "final_logits_bias", None)
            return logits + bias[0] if bias is not None else logits
        return model(input_ids=ids, attention_mask=attention).logits[slot[:, 0], slot[:, 1]]
    if head is not None and hasattr(model, "base_model"):
        hidden = model.base_model(input_ids=ids, attention_mask=attention)[0]
        return head(hidden[slot[:, 0], slot[:, 1]])
    return model(input_ids=ids, attention_mask=attention).logits[slot[:, 0], slot[:, 1]]


def _masked_distribution(b: HFRuntime, requests, progress):
    mask = b.mask_token()
    target_ids = masked_target_ids(b, requests)
    texts = b.with_prefix([r.text.replace(MASK, mask) for r in requests])
    encoded = b.tokenizer(texts)["input_ids"]
    b.check_fits(encoded, texts, RequestType.TOKEN_DISTRIBUTION)

    def run(batch: list[int]) -> list[TokenDistributionResult]:
        ids, attention = b.pad([encoded[i] for i in batch], left=False)
        with torch.inference_mode():
            probs = _slot_logits(b, ids, attention).float().softmax(-1)
        return distribution_results(
            b, probs, [requests[i] for i in batch], [target_ids[i] for i in batch]
        )

    return b.batched(
        RequestType.TOKEN_DISTRIBUTION,
        list(range(len(requests))),
        [len(e) for e in encoded],
        run,
        progress,
    )


def distribution_results(
    b: HFRuntime, probs, requests, target_ids
) -> list[TokenDistributionResult]:
    k = max(r.top_k for r in requests)
    tokens, values = b.top_k(probs, k)
    probs64 = probs.double().cpu()
    results = []
    for row, (request, ids) in enumerate(zip(requests, target_ids, strict=True)):
        target_probs = tuple(float(probs64[row, i]) if i is not None else math.nan for i in ids)
        results.append(
            TokenDistributionResult(
                target_probs=target_probs,
                target_ids=tuple((i,) if i is not None else () for i in ids),
                top_tokens=tuple(tokens[row][: request.top_k]),
                top_probs=tuple(values[row][: request.top_k]),
            )
        )
    return results


# ---------------------------------------------------------------------- causal / seq2seq
def next_token_logits(b: HFRuntime, prompts: list[list[int]]) -> torch.Tensor:
    """Logits of the next token after each prompt (causal, shared prefixes run once: see
    :mod:`.prefix`) or of the first decoder token (seq2seq), one row per prompt."""
    if b.kind == ModelKind.CAUSAL:
        if len(prompts) > 1 and packs(b, prompts):
            return tree_logits(b, prompts)
        return prefill(b, prompts).logits
    ids, attention = b.pad(prompts, left=False)
    start = b.model.config.decoder_start_token_id
    decoder = torch.full((len(prompts), 1), start, dtype=torch.long, device=b.device)
    out = b.model(input_ids=ids, attention_mask=attention, decoder_input_ids=decoder)
    return out.logits[:, -1]


def _runs_tree(b: HFRuntime, prompts: list[list[int]]) -> bool:
    """Whether ``prompts`` run as their prefix tree (:mod:`.tree`): their batches are then
    whole subtrees (token order), sized by the tokens each prompt adds."""
    with torch.inference_mode():
        return b.kind == ModelKind.CAUSAL and len(prompts) > 1 and packs(b, prompts)


def _next_token_distribution(b: HFRuntime, requests, progress):
    encoded, target_tokens = b.encode_with_targets(requests)

    def run(batch: list[int]) -> list[TokenDistributionResult]:
        with torch.inference_mode():
            probs = next_token_logits(b, [encoded[i] for i in batch]).float().softmax(-1)
        single = [
            [
                ids[0] if len(ids) == 1 else None
                for ids in map(target_tokens.get, requests[i].targets)
            ]
            for i in batch
        ]
        return distribution_results(b, probs, [requests[i] for i in batch], single)

    tree = _runs_tree(b, encoded)
    results = b.batched(
        RequestType.TOKEN_DISTRIBUTION,
        list(range(len(requests))),
        added_tokens(encoded) if tree else [len(e) for e in encoded],  # the work of each
        run,
        progress,
        keys=encoded,
        keys_first=tree,  # a batch is then whole subtrees of the prompts' prefix tree
    )
    return _fill_multi_token_targets(b, requests, results, target_tokens)


def _fill_multi_token_targets(b: HFRuntime, requests, results, target_tokens):
    """Exact chain-rule probabilities for targets of several tokens (one extra batched
    ``choice_logprobs`` call over all of them)."""
    multi = [
        (row, col)
        for row, r in enumerate(requests)
        for col, t in enumerate(r.targets)
        if len(target_tokens[t]) > 1
    ]
    if not multi:
        return results
    scored = choice_logprobs(
        b,
        [
            ChoiceLogprobsRequest(requests[row].text, (requests[row].targets[col],))
            for row, col in multi
        ],
        None,
    )
    patched = [list(r.target_probs) for r in results]
    patched_ids = [list(r.target_ids) for r in results]
    for (row, col), score in zip(multi, scored, strict=True):
        patched[row][col] = math.exp(score.logprobs[0])
        patched_ids[row][col] = tuple(target_tokens[requests[row].targets[col]])
    return [
        TokenDistributionResult(tuple(p), tuple(i), r.top_tokens, r.top_probs)
        for p, i, r in zip(patched, patched_ids, results, strict=True)
    ]


# ---------------------------------------------------------------------- choice_logprobs
def encode_choice_requests(b: HFRuntime, requests) -> tuple[list[list[int]], list[list[list[int]]]]:
    """Prompt ids and, per request, the ids of each choice (an empty choice is an error);
    prompts too long for the context with their longest choice are cut from the left."""
    choices = [[b.encode_continuation(c) for c in r.choices] for r in requests]
    if any(not c for row in choices for c in row):
        raise BiaslensError("a choice tokenizes to nothing; choices must be non-empty text")
    prompts = b.encode_prompts([r.prompt for r in requests])
    longest = max((len(c) for row in choices for c in row), default=0)
    if b.max_length is not None and longest >= b.max_length:
        raise BiaslensError(
            f"choice_logprobs: a choice of {longest} tokens does not fit the "
            f"{b.identity.name} context of {b.max_length} tokens"
        )
    return b.fit_left(prompts, longest, RequestType.CHOICE_LOGPROBS), choices


def choice_logprobs(b: HFRuntime, requests, progress) -> list[ChoiceLogprobsResult]:
    prompts, choices = encode_choice_requests(b, requests)
    # one item per request: its choices share the prompt's forward pass (causal models)
    items = list(range(len(requests)))
    lengths = [len(prompts[i]) + sum(len(c) for c in choices[i]) for i in items]

    def run(batch: list[int]) -> list[ChoiceLogprobsResult]:
        flat_prompts = [prompts[i] for i in batch for _ in choices[i]]
        flat_choices = [c for i in batch for c in choices[i]]
        with torch.inference_mode():
            sums = continuation_logprobs(b, flat_prompts, flat_choices).tolist()
        results, cursor = [], 0
        for i in batch:
            n = len(choices[i])
            chunk = sums[cursor : cursor + n]
            cursor += n
            results.append(ChoiceLogprobsResult(tuple(chunk), tuple(len(c) for c in choices[i])))
        return results

    tree = _runs_tree(b, prompts)
    if tree:  # the tokens each request adds to its batch's tree
        lengths = [a + sum(len(c) for c in choices[i]) for i, a in enumerate(added_tokens(prompts))]
    return b.batched(
        RequestType.CHOICE_LOGPROBS, items, lengths, run, progress, keys=prompts, keys_first=tree
    )
