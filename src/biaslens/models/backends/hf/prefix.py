"""Prefill of causal prompts that share token prefixes, each shared prefix run once.

Probe prompts repeat themselves: MGC's instruction prompts share ~30 of ~43 tokens across the
whole batch, prompts of the same W value share a few more (``… Passage: In 1801, <mask>``) and
those with the same verb a few more again. :func:`prefill` walks this prefix tree level by
level, extending one KV cache:

1. the batch's common prefix, once;
2. per tree level, each group's extra shared tokens, once per group (groups are runs of the
   sorted prompts that share ``MIN_GROUP_EXTRA`` more tokens than their parent group);
3. every prompt's own remaining tokens.

Each pass's inputs are left-padded *after* what the cache holds; the attention mask hides the
padding and position ids count only real tokens, so the logits equal a plain left-padded
forward pass of each prompt. A level runs only if it saves more tokens than its padding costs.
Greedy decoding continues from the returned cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from biaslens.common.tokens import common_prefix_length

if TYPE_CHECKING:
    from biaslens.models.backends.hf.runtime import HFRuntime

MIN_SHARED_PREFIX = 8
"""A batch-wide prefix shorter than this is not worth a pass of its own."""
MIN_GROUP_EXTRA = 3
"""Prompts form a group when they share at least this many tokens beyond the batch prefix."""
MIN_GROUP_SAVING = 0.1
"""A level runs only if it saves this fraction of the tokens still to run (net of its
padding)."""


@dataclass
class Prefilled:
    logits: torch.Tensor  # (n, vocab): the next-token logits after each prompt
    cache: object  # the KV cache of every prompt (rows in input order)
    attention: torch.Tensor  # (n, cached length): which cached positions are real tokens
    next_position: torch.Tensor  # (n, 1): the position id of each prompt's next token


def _lcp(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _split(
    prompts: list[list[int]], members: list[int], prefix: int
) -> list[tuple[list[int], int]]:
    """Runs of the sorted ``members`` sharing ``MIN_GROUP_EXTRA`` tokens beyond ``prefix`` (each
    prompt keeps one token of its own), with their common prefix length; a prompt alone keeps
    ``prefix``."""
    groups: list[tuple[list[int], int]] = []
    run: list[int] = []
    common = 0
    for i in sorted(members, key=lambda m: prompts[m]):
        own = len(prompts[i]) - 1
        if run:
            extended = min(common, _lcp(prompts[run[-1]], prompts[i]), own)
            if extended >= prefix + MIN_GROUP_EXTRA:
                run.append(i)
                common = extended
                continue
            groups.append((run, common if len(run) > 1 else prefix))
        run, common = [i], own
    groups.append((run, common if len(run) > 1 else prefix))
    return groups


@dataclass
class Level:
    """One pass of the tree: per group, its parent group (an index into the previous level)
    and its prefix length; ``members`` are the prompts under each group."""

    parents: list[int]
    prefixes: list[int]
    members: list[list[int]]


def plan_levels(prompts: list[list[int]], shared: int, max_levels: int = 4) -> list[Level]:
    """The tree levels worth running below the batch prefix ``shared`` (module doc)."""
    nodes = [(list(range(len(prompts))), shared)]
    levels: list[Level] = []
    for _ in range(max_levels):
        parents, prefixes, members = [], [], []
        for k, (rows, prefix) in enumerate(nodes):
            for group, length in _split(prompts, rows, prefix):
                parents.append(k)
                prefixes.append(length)
                members.append(group)
        extra = [length - nodes[k][1] for k, length in zip(parents, prefixes, strict=True)]
        saved = sum((len(m) - 1) * e for m, e in zip(members, extra, strict=True))
        padding = len(extra) * max(extra) - sum(extra)
        own = sum(len(prompts[i]) - prefix for rows, prefix in nodes for i in rows)
        if max(extra) == 0 or saved - padding < MIN_GROUP_SAVING * own:
            break
        levels.append(Level(parents, prefixes, members))
        nodes = list(zip(members, prefixes, strict=True))
    return levels


def _extend(model, cache, attention, ids, mask, use_cache: bool = True):
    """Run ``ids`` (their padding ``mask``) after the rows of ``cache`` whose attention so far
    is ``attention``: positions continue from each row's own length; only the last position's
    logits are computed. The model's output and the attention with ``mask`` appended."""
    cached = attention.shape[1]
    attention = torch.cat([attention, mask], 1)
    positions = (attention.cumsum(-1) - 1)[:, cached:].clamp(min=0)
    out = model(
        input_ids=ids,
        attention_mask=attention,
        position_ids=positions,
        past_key_values=cache,
        use_cache=use_cache,
        logits_to_keep=1,
    )
    return out, attention


def prefill(b: HFRuntime, prompts: list[list[int]], use_cache: bool = False) -> Prefilled:
    """Run causal ``prompts`` (token ids) sharing their common prefixes (module doc); only the
    last position's logits are computed. ``use_cache`` keeps the cache for decoding."""
    model, n, device = b.model, len(prompts), b.device
    shared = common_prefix_length(prompts) if n > 1 else 0
    shared = shared if shared >= MIN_SHARED_PREFIX else 0
    levels = plan_levels(prompts, shared) if n > 1 else []
    cache = None
    if shared:
        prefix = torch.tensor([prompts[0][:shared]], device=device)
        cache = model(input_ids=prefix, use_cache=True).past_key_values
    attention = torch.ones((1, shared), dtype=torch.long, device=device)
    node_prefix, node_of_row = [shared], [0] * n
    for level in levels:
        parents = torch.tensor(level.parents, device=device)
        segments = [
            prompts[rows[0]][node_prefix[k] : length] or [b.pad_id]
            for k, length, rows in zip(level.parents, level.prefixes, level.members, strict=True)
        ]
        seg_ids, seg_mask = b.pad(segments, left=True)
        real = [
            length > node_prefix[k] for k, length in zip(level.parents, level.prefixes, strict=True)
        ]
        seg_mask = seg_mask * torch.tensor(real, device=device, dtype=seg_mask.dtype)[:, None]
        if cache is not None:
            cache.reorder_cache(parents)
        out, attention = _extend(
            model, cache, attention.index_select(0, parents), seg_ids, seg_mask
        )
        cache = out.past_key_values
        node_prefix = level.prefixes
        for k, rows in enumerate(level.members):
            for i in rows:
                node_of_row[i] = k
    rows = torch.tensor(node_of_row, device=device)
    if cache is not None:
        cache.reorder_cache(rows)
    own = [p[node_prefix[k] :] for p, k in zip(prompts, node_of_row, strict=True)]
    suffix, suffix_mask = b.pad(own, left=True)
    out, attention = _extend(
        model,
        cache,
        attention.index_select(0, rows),
        suffix,
        suffix_mask,
        use_cache=use_cache or cache is not None,
    )
    return Prefilled(
        logits=out.logits[:, -1],
        cache=out.past_key_values if use_cache else None,
        attention=attention,
        next_position=attention.sum(-1, keepdim=True),
    )
