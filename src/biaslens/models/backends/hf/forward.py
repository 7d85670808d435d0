"""Differentiable passes of the transformers backend, shared by scoring and fine-tuning.

Scoring calls these under ``torch.inference_mode``; LEI fine-tuning
(:mod:`biaslens.methods.qa.train`) calls them with gradients. Both therefore compute exactly the
same quantities.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from biaslens.models.backends.hf.tree import packs, tree_continuation_logprobs
from biaslens.models.base import ModelKind

if TYPE_CHECKING:
    from biaslens.models.backends.hf.runtime import HFRuntime


def start_end_logprobs(
    b: HFRuntime, sequences: list[list[int]]
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-softmax over the start and the end logits of each sequence, padding masked out
    (-inf), shape (batch, longest sequence) each."""
    ids, attention = b.pad(sequences, left=False)
    out = b.model(input_ids=ids, attention_mask=attention)
    mask = attention.bool()
    start = out.start_logits.float().masked_fill(~mask, -torch.inf).log_softmax(-1)
    end = out.end_logits.float().masked_fill(~mask, -torch.inf).log_softmax(-1)
    return start, end


def continuation_logprobs(
    b: HFRuntime, prompts: list[list[int]], continuations: list[list[int]]
) -> torch.Tensor:
    """log p(continuation | prompt) summed over its tokens, one value per pair (float64).
    Causal scoring without gradients runs the packed prefix tree of the sequences where the
    model gives its plain logits that way (:mod:`.tree`)."""
    if b.kind == ModelKind.CAUSAL:
        if not torch.is_grad_enabled() and len(prompts) > 1 and packs(b, prompts):
            return tree_continuation_logprobs(b, prompts, continuations)
        return _causal_continuation_logprobs(b, prompts, continuations)
    return _seq2seq_continuation_logprobs(b, prompts, continuations)


def _seq2seq_continuation_logprobs(
    b: HFRuntime, prompts: list[list[int]], continuations: list[list[int]]
) -> torch.Tensor:
    """Seq2seq scoring with each distinct prompt encoded once: the encoder states are
    repeated for each continuation, which the decoder scores token by token."""
    distinct: dict[tuple[int, ...], int] = {}
    owner = [distinct.setdefault(tuple(p), len(distinct)) for p in prompts]
    ids, attention = b.pad([list(p) for p in distinct], left=False)
    encoded = b.model.get_encoder()(input_ids=ids, attention_mask=attention)
    rows = torch.tensor(owner, device=b.device)
    states = encoded.last_hidden_state.index_select(0, rows)
    labels, label_mask = b.pad(continuations, left=False)
    start = b.model.config.decoder_start_token_id
    decoder = torch.cat(
        [torch.full((len(prompts), 1), start, device=b.device, dtype=torch.long), labels[:, :-1]],
        1,
    )
    logits = b.model(
        encoder_outputs=(states,),
        attention_mask=attention.index_select(0, rows),
        decoder_input_ids=decoder,
    ).logits
    token_logprobs = logits.float().log_softmax(-1).gather(-1, labels[..., None])[..., 0]
    return (token_logprobs.double() * label_mask).sum(-1)


def _causal_continuation_logprobs(
    b: HFRuntime, prompts: list[list[int]], continuations: list[list[int]]
) -> torch.Tensor:
    """Causal scoring with each distinct prompt run once: the prompts (left-padded) give a
    KV cache and the distribution of every continuation's first token (only the last
    position's logits are computed); the cache is repeated for each continuation, whose
    remaining tokens are scored in a second pass."""
    distinct: dict[tuple[int, ...], int] = {}
    owner = [distinct.setdefault(tuple(p), len(distinct)) for p in prompts]
    ids, mask = b.pad([list(p) for p in distinct], left=True)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    out = b.model(
        input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, logits_to_keep=1
    )
    rows = torch.tensor(owner, device=b.device)
    first = torch.tensor([c[0] for c in continuations], device=b.device)
    last = out.logits[:, -1].float().log_softmax(-1)
    sums = last[rows, first].double()
    rest = [c[:-1] for c in continuations]
    if max(len(r) for r in rest) == 0:
        return sums
    cache = out.past_key_values
    cache.reorder_cache(rows)
    rest_ids, rest_mask = b.pad([r or [b.pad_id] for r in rest], left=False)
    rest_mask = rest_mask * torch.tensor(
        [[1 if r else 0] for r in rest], device=b.device, dtype=rest_mask.dtype
    )
    lengths = mask.sum(-1)[rows]
    rest_positions = lengths[:, None] + torch.arange(rest_ids.shape[1], device=b.device)
    logits = b.model(
        input_ids=rest_ids,
        attention_mask=torch.cat([mask[rows], rest_mask], 1),
        position_ids=rest_positions,
        past_key_values=cache,
        use_cache=True,
    ).logits
    which, step, target = [], [], []
    for row, choice in enumerate(continuations):
        for j in range(1, len(choice)):
            which.append(row)
            step.append(j - 1)
            target.append(choice[j])
    if not which:
        return sums
    which = torch.tensor(which, device=b.device)
    picked = logits[which, torch.tensor(step, device=b.device)].float().log_softmax(-1)
    picked = picked.gather(-1, torch.tensor(target, device=b.device)[:, None])[:, 0]
    return sums.index_add(0, which, picked.double())
