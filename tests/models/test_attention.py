import pytest
import torch
import transformers.integrations.sdpa_attention as sdpa_attention

from biaslens.models.backends.hf.attention import NAME, use_cpu_gqa


def _load(folder):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(folder, attn_implementation="sdpa").eval()


def _padded_batch():
    ids = torch.tensor([[0, 0, 5, 6, 7, 8], [3, 4, 5, 6, 7, 8], [0, 0, 0, 9, 10, 11]])
    mask = (torch.arange(6) >= torch.tensor([[2], [0], [3]])).long()
    return ids, mask


def test_grouped_heads_on_cpu_give_the_same_logits_without_repeating_the_cache(
    tiny_models, monkeypatch
):
    model = _load(tiny_models["llama"])  # 2 query heads, 1 key/value head
    ids, mask = _padded_batch()
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.inference_mode():
        expected = model(input_ids=ids, attention_mask=mask, position_ids=positions).logits
    assert use_cpu_gqa(model) and model.config._attn_implementation == NAME

    def no_copy(*args, **kwargs):
        raise AssertionError("the key/value heads were repeated")

    monkeypatch.setattr(sdpa_attention, "repeat_kv", no_copy)
    with torch.inference_mode():
        got = model(input_ids=ids, attention_mask=mask, position_ids=positions).logits
    real = mask.bool()
    torch.testing.assert_close(got[real], expected[real], rtol=0, atol=1e-6)


def test_other_cases_go_to_transformers_sdpa(tiny_models, monkeypatch):
    model = _load(tiny_models["llama"])
    assert use_cpu_gqa(model)
    calls = []
    original = sdpa_attention.sdpa_attention_forward

    def recorded(*args, **kwargs):
        calls.append(args[1].shape[2])  # query length
        return original(*args, **kwargs)

    monkeypatch.setattr(sdpa_attention, "sdpa_attention_forward", recorded)
    ids, mask = _padded_batch()
    # gradients (fine-tuning) and a single query token are transformers' own path
    model(input_ids=ids, attention_mask=mask)
    assert calls and set(calls) == {6}
    calls.clear()
    with torch.inference_mode():
        model(input_ids=ids[:, :1], attention_mask=torch.ones(3, 1, dtype=torch.long))
    assert set(calls) == {1}


@pytest.mark.parametrize("kind", ["gpt2", "bert-mlm"])
def test_models_without_grouped_heads_keep_their_attention(tiny_models, kind):
    from transformers import AutoModel

    model = AutoModel.from_pretrained(tiny_models[kind])
    before = model.config._attn_implementation
    assert not use_cpu_gqa(model) and model.config._attn_implementation == before


def test_the_backend_loads_causal_models_with_it(tiny_models):
    from biaslens.models import BackendConfig, load_model

    lm = load_model(str(tiny_models["llama"]), BackendConfig(device="cpu"))
    assert lm.model.config._attn_implementation == NAME
