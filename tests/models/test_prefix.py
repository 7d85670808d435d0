"""Prefill with shared prefixes: the groups it finds, and logits equal to a plain forward."""

from __future__ import annotations

import pytest
import torch

from biaslens.methods.sib.data import mgc
from biaslens.models.backends.hf.prefix import plan_levels, prefill


def test_levels_follow_the_prefix_tree_of_the_sorted_prompts():
    shared = [1, 2]
    deep = [shared + [5, 6, 7, 8, 9, 1, 1, 1, x] for x in range(6)]  # 5 6 7 8 | 9 1 1 1 | x
    prompts = [
        *deep,
        shared + [3, 3],  # alone
        shared + [5, 6, 7, 8, 4, 4],  # 5 6 7 8 | 4 4
        shared + [5, 6, 0],  # alone: only 2 tokens in common with the others
    ]
    first, second = plan_levels(prompts, shared=2)
    groups = {frozenset(m): n for m, n in zip(first.members, first.prefixes, strict=True)}
    assert groups == {frozenset([0, 1, 2, 3, 4, 5, 7]): 6, frozenset([6]): 2, frozenset([8]): 2}
    deeper = {frozenset(m): n for m, n in zip(second.members, second.prefixes, strict=True)}
    assert deeper[frozenset(range(6))] == 10 and deeper[frozenset([7])] == 6
    # a level whose padding costs as much as it saves is not run
    assert plan_levels(prompts[5:], shared=2) == []
    # a prompt keeps at least one token of its own
    (level,) = plan_levels([shared + [5, 6, 7, 8]] * 3 + [shared + [5, 6, 7, 8, 9]], shared=2)
    assert level.prefixes == [5]


@pytest.mark.parametrize("name", ["llama", "gpt2"])
def test_prefill_logits_equal_a_plain_forward_per_prompt(name, tiny_backends):
    lm = tiny_backends[name]
    table = mgc.build_mgc()
    sentences = list(table["sentence"].iloc[:5]) + list(table["sentence"].iloc[300:304])
    sentences += ["In Mali, [MASK] was a child."]
    prompts = lm.encode_prompts([mgc.wrap_in_prompt(s, "A") for s in sentences])
    levels = plan_levels(prompts, shared=8)
    assert levels and len(levels[0].members) < len(prompts)  # the tree is used
    with torch.inference_mode():
        state = prefill(lm, prompts, use_cache=True)
        for row, ids in enumerate(prompts):
            expected = lm.model(input_ids=torch.tensor([ids])).logits[0, -1]
            assert torch.allclose(state.logits[row], expected, atol=1e-4), row
    assert state.next_position[:, 0].tolist() == [len(p) for p in prompts]
    assert state.attention.sum(-1).tolist() == [len(p) for p in prompts]
