"""Causal scoring over the packed prefix tree (:mod:`biaslens.models.backends.hf.tree`): the
rows it packs, and next-token logits equal to a plain forward of each prompt on every causal
model class it takes; a model it does not fit keeps the level-wise prefill."""

from __future__ import annotations

import pytest
import torch

from biaslens.methods.sib.data import mgc
from biaslens.models.backends.hf.tree import build_tree, pack, tree_logits


def test_rows_hold_every_node_after_its_ancestors():
    """By hand: prompts below a shared [1, 2] form the tree 3─4─{5, 6}, 3─7, 8─9; packed in
    rows of 3 a subtree too large is cut at its children, each part carrying its path."""
    prompts = [[1, 2, 3, 4, 5], [1, 2, 3, 4, 6], [1, 2, 3, 7], [1, 2, 8, 9], [1, 2, 3, 4]]
    tree = build_tree(prompts, shared=2)
    assert tree.tokens == [3, 4, 5, 6, 7, 8, 9]
    assert tree.parents == [-1, 0, 1, 1, 0, -1, 5]
    assert tree.depths == [2, 3, 4, 4, 3, 2, 3]
    assert tree.ends == [2, 3, 4, 6, 1]  # the last prompt ends inside another: node 4's id 1
    for cap in (3, 4, 256):
        rows = pack(tree, cap)
        assert sorted({n for row in rows for n in row}) == list(range(7))
        for row in rows:
            assert len(row) == len(set(row)) and len(row) <= cap
            for i, node in enumerate(row):
                parent = tree.parents[node]
                assert parent < 0 or parent in row[:i], (cap, row)
    assert pack(tree, 256) == [[0, 1, 2, 3, 4, 5, 6]]


MGC = [mgc.wrap_in_prompt(s, "A") for s in mgc.build_mgc()["sentence"].iloc[[0, 1, 2, 40, 300]]]
MID_WORD = [  # a shared prefix that ends inside a word, and a prompt that is another's prefix
    "Instructions: read the passage and answer. The chair",
    "Instructions: read the passage and answer. The chairman",
    "Instructions: read the passage and answer. The chairs were",
    "Instructions: read the passage and answer.",
]
PROMPTS = MGC + MID_WORD


# (rows of at most, queries per attention block): rows only where blocks is None; tiny Llama
# (grouped KV heads) runs biaslens's attention and so takes blocks, tiny GPT-2 keeps rows
LAYOUTS = [(20, None), (256, None), (256, 3), (256, 64)]
LAYOUT_IDS = ["rows-20", "rows-256", "blocks-3", "blocks-64"]


@pytest.mark.parametrize("name", ["llama", "gpt2"])
@pytest.mark.parametrize(("row_tokens", "block_tokens"), LAYOUTS, ids=LAYOUT_IDS)
@pytest.mark.parametrize("texts", [MGC, MID_WORD], ids=["mgc", "mid-word"])
def test_tree_logits_equal_a_plain_forward_per_prompt(
    name, row_tokens, block_tokens, texts, tiny_backends
):
    """Every prompt's next-token log-probabilities as a plain forward of it alone gives them
    (to 1e-4; probabilities to 1e-6), whether the tree fits one row or is cut into rows of 20
    tokens (paths carried into several rows, subtrees side by side), or runs as one sequence
    with attention in blocks of 3 queries (blocks that start inside another prompt's branch)
    or 64, and as the level-wise prefill gives them; the prompts share a cached prefix of at
    least 8 tokens."""
    from biaslens.common.tokens import common_prefix_length
    from biaslens.models.backends.hf.prefix import prefill
    from biaslens.models.backends.hf.tree import takes_blocks

    lm = tiny_backends[name]
    assert takes_blocks(lm.model) == (name == "llama")
    prompts = lm.encode_prompts(texts)
    assert common_prefix_length(prompts) >= 8
    with torch.inference_mode():
        packed = tree_logits(lm, prompts, row_tokens, block_tokens).log_softmax(-1)
        levels = prefill(lm, prompts).logits.log_softmax(-1)
        for row, ids in enumerate(prompts):
            plain = lm.model(input_ids=torch.tensor([ids])).logits[0, -1].log_softmax(-1)
            assert torch.allclose(packed[row], plain, atol=1e-4), (row, texts[row])
            assert torch.allclose(packed[row].exp(), plain.exp(), atol=1e-6), row
            assert torch.allclose(packed[row].exp(), levels[row].exp(), atol=1e-6), row


@pytest.mark.parametrize("name", ["llama", "gpt2"])
def test_scoring_takes_the_tree_and_matches_a_plain_forward(name, tiny_models):
    """The backend checks the tree on its first batch and takes it for both tiny causal
    classes; token distributions over batches of 3 equal a plain forward of each prompt."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from biaslens.models import BackendConfig, load_model
    from biaslens.models.requests import TokenDistributionRequest

    lm = load_model(str(tiny_models[name]), BackendConfig(device="cpu", batch_size=3))
    results = lm.token_distribution([TokenDistributionRequest(p, (" she", " he"), 3)
                                     for p in PROMPTS])  # fmt: skip
    assert lm.packed_tree is True
    model = AutoModelForCausalLM.from_pretrained(tiny_models[name]).eval()
    tokenizer = AutoTokenizer.from_pretrained(tiny_models[name])
    she = tokenizer(" she", add_special_tokens=False)["input_ids"]
    for ids, result in zip(lm.encode_prompts(PROMPTS), results, strict=True):
        with torch.inference_mode():
            probs = model(input_ids=torch.tensor([ids])).logits[0, -1].softmax(-1)
        if len(she) == 1:
            assert result.target_probs[0] == pytest.approx(float(probs[she[0]]), abs=1e-6)
        assert list(result.top_probs) == pytest.approx(probs.topk(3).values.tolist(), abs=1e-6)


def test_a_model_the_tree_does_not_fit_keeps_the_level_wise_prefill(tiny_models, tmp_path):
    """BLOOM's ALiBi reads positions from the 2-D mask, not from position ids: the tree gives
    other numbers, the check finds it, and scoring still equals a plain forward."""
    from transformers import AutoTokenizer, BloomConfig, BloomForCausalLM

    from biaslens.models import BackendConfig, load_model
    from biaslens.models.requests import TokenDistributionRequest

    tokenizer = AutoTokenizer.from_pretrained(tiny_models["llama"])
    config = BloomConfig(vocab_size=len(tokenizer), hidden_size=32, n_layer=2, n_head=2,
                         bos_token_id=0, eos_token_id=1)  # fmt: skip
    torch.manual_seed(0)
    BloomForCausalLM(config).save_pretrained(tmp_path / "bloom")
    tokenizer.save_pretrained(tmp_path / "bloom")
    lm = load_model(str(tmp_path / "bloom"), BackendConfig(device="cpu", batch_size=4))
    results = lm.token_distribution([TokenDistributionRequest(p, (" she",), 3) for p in PROMPTS])
    assert lm.packed_tree is False
    model = BloomForCausalLM.from_pretrained(tmp_path / "bloom").eval()
    for ids, result in zip(lm.encode_prompts(PROMPTS), results, strict=True):
        with torch.inference_mode():
            probs = model(input_ids=torch.tensor([ids])).logits[0, -1].softmax(-1)
        assert list(result.top_probs) == pytest.approx(probs.topk(3).values.tolist(), abs=1e-6)


@pytest.mark.parametrize("name", ["llama", "gpt2"])
@pytest.mark.parametrize(("row_tokens", "block_tokens"), LAYOUTS, ids=LAYOUT_IDS)
def test_continuations_over_the_tree_equal_plain_full_sequences(
    name, row_tokens, block_tokens, tiny_backends
):
    """log p(continuation | prompt), summed over its tokens: a plain forward of prompt +
    continuation alone, read at each continuation token (to 1e-5), for prompts with two or
    three continuations of one to three tokens, some prompts sharing a long prefix."""
    from biaslens.models.backends.hf.tree import tree_continuation_logprobs

    lm = tiny_backends[name]
    prompts = lm.encode_prompts(MID_WORD + MGC[:2])
    endings = [lm.encode_continuation(t) for t in (" she", " he was", " the chair is", "s")]
    pairs = [(p, c) for k, p in enumerate(prompts) for c in endings[k % 2 : k % 2 + 2 + k % 2]]
    assert any(len(c) > 1 for _, c in pairs)
    with torch.inference_mode():
        got = tree_continuation_logprobs(lm, [p for p, _ in pairs], [c for _, c in pairs],
                                         row_tokens, block_tokens)  # fmt: skip
        for k, (prompt, continuation) in enumerate(pairs):
            ids = torch.tensor([prompt + continuation])
            logprobs = lm.model(input_ids=ids).logits[0].double().log_softmax(-1)
            start = len(prompt) - 1
            want = sum(float(logprobs[start + j, t]) for j, t in enumerate(continuation))
            assert float(got[k]) == pytest.approx(want, abs=1e-5), k
