"""A prefix tree run as one sequence with attention in blocks
(:mod:`biaslens.models.backends.hf.tree_blocks`): the block plan against one worked by hand and
against each node's ancestors found afresh, the attention against a dense masked attention,
the tokens each prompt adds to a batch, and batches of whole subtrees."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from biaslens.models.backends.hf.tree_blocks import block_attention, block_plan, depth_first

T, F = True, False


def test_the_plan_of_a_small_tree_by_hand():
    """The tree 0─1─{2, 3}, 0─4, 5─6 below 2 cached tokens, blocks of 3 queries. Depth-first:
    0 1 2 | 3 4 5 | 6. The second block starts at node 3, whose path is 0, 1: its keys are the
    cache (0, 1), the path (sequence positions 0, 1 → keys 2, 3) and the block (keys 5, 6, 7);
    node 4 sees node 0 through the path, node 5 (a top) only the cache. The last block's path
    is node 5; its two filling queries repeat node 6's row."""
    parents = [-1, 0, 1, 1, 0, -1, 5]
    children = [[1, 4], [2, 3], [], [], [], [6], []]
    order = depth_first(children, [0, 5])
    assert order == [0, 1, 2, 3, 4, 5, 6]
    plan = block_plan(parents, order, shared=2, block_tokens=3)
    assert len(plan.groups) == 1  # 5 to 7 keys: one width step
    assert [plan.block(b)[0].tolist() for b in range(3)] == [
        [0, 1, 2, 3, 4, 0, 0],
        [0, 1, 2, 3, 5, 6, 7],
        [0, 1, 7, 8, 0, 0, 0],
    ]
    assert [plan.block(b)[1].tolist() for b in range(3)] == [
        [[T, T, T, F, F, F, F], [T, T, T, T, F, F, F], [T, T, T, T, T, F, F]],
        [[T, T, T, T, T, F, F], [T, T, T, F, F, T, F], [T, T, F, F, F, F, T]],
        [[T, T, T, T, F, F, F], [T, T, T, T, F, F, F], [T, T, T, T, F, F, F]],
    ]


def test_blocks_of_unlike_key_counts_attend_apart():
    """A chain of 100 nodes in blocks of 16: block b's path holds 16·b nodes, so it needs
    16·b + 16 keys; rounded up to steps of 32 the seven blocks fall in four groups, each
    holding only the keys its widest block needs."""
    parents = [-1] + list(range(99))
    children = [[n + 1] for n in range(99)] + [[]]
    plan = block_plan(parents, depth_first(children, [0]), shared=0, block_tokens=16)
    assert [g.blocks.tolist() for g in plan.groups] == [[0, 1], [2, 3], [4, 5], [6]]
    assert [g.keys.shape[1] for g in plan.groups] == [32, 64, 96, 112]
    keys, mask = plan.block(6)  # nodes 96–99: the path 0–95, then themselves
    assert keys[mask[3]].tolist() == list(range(100))


def _random_tree(rng: np.random.Generator, nodes: int) -> tuple[list[int], list[list[int]]]:
    """Parents (each node's parent an earlier node, or −1) and children lists."""
    parents = [-1] + [int(rng.integers(-1, i)) if rng.random() < 0.9 else -1
                      for i in range(1, nodes)]  # fmt: skip
    children: list[list[int]] = [[] for _ in range(nodes)]
    for node, parent in enumerate(parents):
        if parent >= 0:
            children[parent].append(node)
    return parents, children


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("block", [1, 4, 16])
def test_each_query_sees_the_cache_and_its_own_ancestors_only(seed, block):
    """For random trees: the keys each query's mask lets through are exactly the cached
    tokens and the sequence positions of the node and its ancestors (walked up afresh)."""
    rng = np.random.default_rng(seed)
    parents, children = _random_tree(rng, 40)
    tops = [n for n, p in enumerate(parents) if p < 0]
    order = depth_first(children, tops)
    assert sorted(order) == list(range(40))
    at = {node: i for i, node in enumerate(order)}
    shared = int(rng.integers(0, 4))
    plan = block_plan(parents, order, shared, block)
    for i, node in enumerate(order):
        want, walk = set(range(shared)), node
        while walk >= 0:
            want.add(shared + at[walk])
            walk = parents[walk]
        b, q = divmod(i, block)
        keys, mask = plan.block(b)
        seen = set(keys[mask[q]].tolist())
        assert seen == want, (seed, block, node)


@pytest.mark.parametrize("shared", [0, 3])
def test_block_attention_equals_a_dense_masked_attention(shared):
    """Random queries, keys and values (4 query heads over 2 key heads): the blocks give the
    attention of the whole sequence under the ancestor mask, computed densely here."""
    rng = np.random.default_rng(5)
    parents, children = _random_tree(rng, 30)
    order = depth_first(children, [n for n, p in enumerate(parents) if p < 0])
    n, at = len(order), {node: i for i, node in enumerate(order)}
    torch.manual_seed(0)
    query = torch.randn(1, 4, n, 8)
    key, value = torch.randn(1, 2, shared + n, 8), torch.randn(1, 2, shared + n, 8)
    dense = torch.zeros(n, shared + n, dtype=torch.bool)
    dense[:, :shared] = True
    for i, node in enumerate(order):
        while node >= 0:
            dense[i, shared + at[node]] = True
            node = parents[node]
    scores = query @ key.repeat_interleave(2, dim=1).transpose(-1, -2) / 8**0.5
    weights = scores.masked_fill(~dense, -torch.inf).softmax(-1)
    want = (weights @ value.repeat_interleave(2, dim=1)).transpose(1, 2)
    got = block_attention(query, key, value, block_plan(parents, order, shared, 7), None)
    assert got.shape == (1, n, 4, 8)
    assert torch.allclose(got, want, atol=1e-5)


def test_the_tokens_each_prompt_adds_to_the_tree():
    """Sorted: [1, 2, 3] adds 3, [1, 2, 4] 1, [1, 5] 1, [6] 1; a repeat adds its last token."""
    from biaslens.models.backends.hf.tree import added_tokens

    assert added_tokens([[1, 5], [1, 2, 4], [6], [1, 2, 3], [1, 2, 3]]) == [1, 1, 1, 3, 1]


def test_batches_by_keys_alone_hold_whole_subtrees():
    """``keys_first``: items sorted by their token ids alone, whatever their lengths, so each
    batch of 2 holds prompts of one branch; by default longest first."""
    from biaslens.models.runtime.batching import BatchSizer

    prompts = [[1, 2, 9, 9], [3, 4], [1, 2], [3, 4, 5, 6]]
    seen: list[list[list[int]]] = []

    def run(batch):
        seen.append(batch)
        return batch

    sizer = BatchSizer(2)
    assert sizer.run(prompts, [len(p) for p in prompts], run, keys=prompts, keys_first=True) == (
        prompts
    )
    assert seen == [[[1, 2], [1, 2, 9, 9]], [[3, 4], [3, 4, 5, 6]]]
    seen.clear()
    sizer.run(prompts, [len(p) for p in prompts], run, keys=prompts)
    assert seen == [[[1, 2, 9, 9], [3, 4, 5, 6]], [[1, 2], [3, 4]]]
