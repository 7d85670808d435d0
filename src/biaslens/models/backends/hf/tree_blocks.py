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


WIDTH_STEP = 32
"""Blocks whose key counts round up to the same multiple of this attend in one call (a block
deep in a long prompt sees a long path; the others are not padded to it)."""


@dataclass(frozen=True)
class BlockGroup:
    """Blocks of alike key counts: their numbers ``blocks``; ``keys`` (blocks, keys), indices
    into the cache's keys (the shared prefix, then the sequence); ``mask`` (blocks, 1, queries,
    keys), which key each query sees."""

    blocks: torch.Tensor
    keys: torch.Tensor
    mask: torch.Tensor


@dataclass(frozen=True)
class BlockPlan:
    """The blocks of ``queries`` queries over a sequence of ``length``, in groups of alike key
    counts. The sequence's last query repeats to fill the last block."""

    groups: tuple[BlockGroup, ...]
    queries: int
    length: int

    def block(self, number: int) -> tuple[torch.Tensor, torch.Tensor]:
        """One block's keys and (queries, keys) mask."""
        for group in self.groups:
            spot = (group.blocks == number).nonzero()
            if len(spot):
                return group.keys[spot[0, 0]], group.mask[spot[0, 0], 0]
        raise IndexError(number)


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
                row[q, shared : p + 1] = (
                    row[at[parent] - start, shared : p + 1] if (at[parent] >= start) else True
                )
            row[q, column[node]] = True
        row[stop - start :] = row[stop - start - 1]  # the filling queries: the last one again
    needed = shared + np.array([len(p) for p in paths]) + block_tokens
    steps = -(-needed // WIDTH_STEP)
    groups = []
    for step in np.unique(steps):
        members = np.flatnonzero(steps == step)
        cut = min(width, int(step) * WIDTH_STEP)  # every key a member sees lies below it
        groups.append(
            BlockGroup(
                torch.from_numpy(members),
                torch.from_numpy(keys[members, :cut]),
                torch.from_numpy(mask[members, :, :, :cut]),
            )
        )
    return BlockPlan(tuple(groups), block_tokens, n)


def block_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    plan: BlockPlan,
    scaling: float | None,
) -> torch.Tensor:
    """Attention of one sequence ``query`` (1, heads, n, dim) over ``key``/``value`` (1, key
    heads, shared + n, dim), block by block (:class:`BlockPlan`); (1, n, heads, dim) out."""
    size, n = plan.queries, plan.length
    blocks = -(-n // size)
    spots = torch.arange(blocks * size, device=query.device).clamp_(max=n - 1)
    queries = query[0][:, spots].unflatten(1, (blocks, size)).transpose(0, 1)
    heads, dim = query.shape[1], query.shape[3]
    out = query.new_empty(blocks, size, heads, dim)
    for group in plan.groups:
        members, keys = group.blocks.to(query.device), group.keys.to(query.device)
        k = key[0][:, keys].transpose(0, 1)
        v = value[0][:, keys].transpose(0, 1)
        attended = torch.nn.functional.scaled_dot_product_attention(
            queries[members],
            k,
            v,
            attn_mask=group.mask.to(query.device),
            scale=scaling,
            enable_gqa=heads != k.shape[1],
        )  # (members, heads, size, dim)
        out[members] = attended.transpose(1, 2)
    return out.reshape(blocks * size, heads, dim)[:n].unsqueeze(0)
