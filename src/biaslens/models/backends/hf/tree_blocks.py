"""A prefix tree run as one sequence, its attention computed block by block over the keys each
block can see: no padding, no path carried twice, no masked square.

:mod:`.tree` packs a tree's nodes into rows padded to the longest, carries a path into every row
that holds part of its subtree, and lets each row's attention compute its whole square, most of
it masked (SmolLM2, 200 MGC prompts: 1,289 tokens run for a tree of 1,194; attention 10% of
the time). Here the nodes run as *one* sequence in depth-first order, the batch's common prefix
included: each node once. The attention takes the queries in blocks of :data:`BLOCK_TOKENS`;
in depth-first order every ancestor of a block's node lies in the block or on the path above
the block's first node, so a block's keys are that path and the block itself (and a cached
prefix, if any), and a mask keeps each query to its own ancestors (the keys, values and
positions of a plain forward of its prompt). Same 200 prompts: 1,194 tokens run, attention 5%.

This needs the model's attention to take the block plan: biaslens's own attention function
(:func:`.attention.cpu_gqa_attention`) reads it from the forward's keyword arguments, as
transformers passes them to the attention function; other models keep :mod:`.tree`'s rows.
:func:`.tree.tree_works` checks the numbers against a plain forward either way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

BLOCK_TOKENS = 64
"""Queries per attention block."""
PLAN = "biaslens_tree_blocks"
"""The keyword argument that carries a :class:`BlockPlan` to the attention function."""


@dataclass(frozen=True)
class BlockPlan:
    """Per block of queries: ``keys`` (blocks, keys), indices into the cache's keys (the
    shared prefix, then the sequence); ``mask`` (blocks, 1, queries, keys), which key each query
    sees. The sequence's last query repeats to fill the last block."""

    keys: torch.Tensor
    mask: torch.Tensor
    queries: int
    length: int


def depth_first(children: list[list[int]], tops: list[int]) -> list[int]:
    """The nodes in depth-first (pre-)order: every subtree contiguous, after its root."""
    order, stack = [], list(reversed(tops))
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(reversed(children[node]))
    return order


def block_plan(
    parents: list[int], order: list[int], shared: int, block_tokens: int = BLOCK_TOKENS
) -> BlockPlan:
    """The :class:`BlockPlan` of the nodes in ``order`` (depth-first) below ``shared`` cached
    tokens: a node's mask row is its parent's (ancestors) plus itself."""
    n = len(order)
    at = {node: i for i, node in enumerate(order)}
    blocks = -(-n // block_tokens)
    paths = []
    for b in range(blocks):
        path, node = [], parents[order[b * block_tokens]]
        while node >= 0:
            path.append(node)
            node = parents[node]
        paths.append(path[::-1])  # root first
    width = shared + max(map(len, paths)) + block_tokens
    keys = np.zeros((blocks, width), dtype=np.int64)
    mask = np.zeros((blocks, 1, block_tokens, width), dtype=bool)
    mask[..., :shared] = True
    for b, path in enumerate(paths):
        start, stop = b * block_tokens, min(n, (b + 1) * block_tokens)
        column = {node: shared + j for j, node in enumerate(path)}
        column.update({order[i]: shared + len(path) + i - start for i in range(start, stop)})
        keys[b, :shared] = np.arange(shared)
        keys[b, shared : shared + len(path)] = [shared + at[a] for a in path]
        keys[b, shared + len(path) : shared + len(path) + stop - start] = shared + np.arange(
            start, stop
        )
        row = mask[b, 0]
        for i in range(start, stop):
            node, q = order[i], i - start
            parent = parents[node]
            if parent >= 0:  # the parent's ancestors (its row, or the path up to it), then it
                p = column[parent]
                row[q, shared : p + 1] = row[at[parent] - start, shared : p + 1] if (
                    at[parent] >= start) else True  # fmt: skip
            row[q, column[node]] = True
        row[stop - start :] = row[stop - start - 1]  # the filling queries: the last one again
    return BlockPlan(torch.from_numpy(keys), torch.from_numpy(mask), block_tokens, n)


def block_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    plan: BlockPlan,
    scaling: float | None,
) -> torch.Tensor:
    """Attention of one sequence ``query`` (1, heads, n, dim) over ``key``/``value`` (1, key
    heads, shared + n, dim), block by block (:class:`BlockPlan`); (1, n, heads, dim) out."""
    blocks, size, n = plan.keys.shape[0], plan.queries, plan.length
    spots = torch.arange(blocks * size, device=query.device).clamp_(max=n - 1)
    q = query[0][:, spots].unflatten(1, (blocks, size)).transpose(0, 1)
    keys = plan.keys.to(query.device)
    k = key[0][:, keys].transpose(0, 1)
    v = value[0][:, keys].transpose(0, 1)
    out = torch.nn.functional.scaled_dot_product_attention(
        q,
        k,
        v,
        attn_mask=plan.mask.to(query.device),
        scale=scaling,
        enable_gqa=q.shape[1] != k.shape[1],
    )  # (blocks, heads, size, dim)
    out = out.transpose(1, 2).reshape(blocks * size, out.shape[1], out.shape[3])
    return out[:n].unsqueeze(0)
