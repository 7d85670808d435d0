"""Model folders that are not loadable, and inputs longer than the model's context."""

from __future__ import annotations

import math
import os
import shutil
import warnings

import pytest

from biaslens.errors import BiaslensError
from biaslens.models import BackendConfig, load_model
from biaslens.models.requests import (
    ChoiceLogprobsRequest,
    ContrastiveGenerateRequest,
    GenerateRequest,
    SpanScoresRequest,
    TokenDistributionRequest,
)

CPU = BackendConfig(device="cpu", batch_size=4)


def _copy(tiny_models, name, tmp_path):
    folder = tmp_path / name
    shutil.copytree(tiny_models[name], folder)
    return folder


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda p: p.write_bytes(p.read_bytes()[:100]), "damaged|cannot load the model weights"),
        (lambda p: p.write_bytes(os.urandom(5000)), "damaged|cannot load the model weights"),
        (lambda p: p.write_bytes(b""), "damaged|cannot load the model weights"),
    ],
    ids=["truncated", "random bytes", "empty"],
)
def test_damaged_weights_are_a_clear_error(damage, message, tiny_models, tmp_path):
    folder = _copy(tiny_models, "gpt2", tmp_path)
    damage(folder / "model.safetensors")
    with pytest.raises(BiaslensError, match=message):
        load_model(str(folder), CPU)


def test_a_folder_without_tokenizer_files_is_named(tiny_models, tmp_path):
    folder = _copy(tiny_models, "gpt2", tmp_path)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (folder / name).unlink(missing_ok=True)
    with pytest.raises(BiaslensError, match="no tokenizer files"):
        load_model(str(folder), CPU)


def test_a_folder_without_weights_or_config_is_named(tiny_models, tmp_path):
    folder = _copy(tiny_models, "gpt2", tmp_path)
    (folder / "model.safetensors").unlink()
    with pytest.raises(BiaslensError, match="no weight files"):
        load_model(str(folder), CPU)
    (folder / "config.json").write_text("{not json")
    with pytest.raises(BiaslensError, match="cannot load the model config"):
        load_model(str(folder), CPU)
    file = tmp_path / "weights.bin"
    file.write_bytes(b"x")
    with pytest.raises(BiaslensError, match="a file, not a model folder"):
        load_model(str(file), CPU)


# ------------------------------------------------------------------ long inputs
LONG = " ".join(["the nurse said that she was late"] * 60)  # far over 256 positions


def _warned(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call()
    return result, [str(w.message) for w in caught]


@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_long_causal_prompts_are_cut_from_the_left_with_a_counting_warning(name, tiny_backends):
    lm = tiny_backends[name]
    limit = lm.max_length
    assert limit == 256
    ids = lm.encode_prompts([LONG])[0]
    assert len(ids) > limit
    kept = lm.tokenizer.decode(ids[-limit:])
    requests = [
        TokenDistributionRequest(LONG, (" she", " he")),
        TokenDistributionRequest("short", (" she",)),
    ]
    results, messages = _warned(lambda: lm.token_distribution(requests))
    assert any("1 of 2 token_distribution inputs are longer" in m for m in messages), messages
    direct = lm.token_distribution([TokenDistributionRequest(kept, (" she", " he"))])[0]
    if (
        lm.tokenizer.decode(lm.encode_prompts([kept])[0]) == kept
        and len(lm.encode_prompts([kept])[0]) == limit
    ):
        assert results[0].target_probs == pytest.approx(direct.target_probs, rel=1e-4)
    assert all(math.isfinite(p) for p in results[0].target_probs)
    for call in (
        lambda: lm.choice_logprobs([ChoiceLogprobsRequest(LONG, (" she", " he was"))]),
        lambda: lm.generate([GenerateRequest(LONG, max_new_tokens=4)]),
        lambda: lm.contrastive_generate([ContrastiveGenerateRequest(LONG, LONG + " x", 5.0, 4)]),
    ):
        _, messages = _warned(call)
        assert any("truncated from the left" in m for m in messages), messages


def test_generation_longer_than_the_context_is_refused(tiny_backends):
    with pytest.raises(BiaslensError, match="leave no room"):
        tiny_backends["gpt2"].generate([GenerateRequest("hello", max_new_tokens=400)])


def test_long_masked_inputs_are_refused(tiny_backends):
    lm = tiny_backends["bert-mlm"]
    with pytest.raises(BiaslensError, match="longer than the .* context of 128 tokens"):
        lm.token_distribution([TokenDistributionRequest(LONG + " [MASK] was late.", ("she",))])


def test_long_extractive_contexts_are_cut_and_a_lost_span_is_named(tiny_backends):
    lm = tiny_backends["roberta-qa"]
    context = "Ann met Bob. " + LONG
    ok = lm.span_scores([SpanScoresRequest("Who met Bob?", context, ((0, 3),))])
    assert 0 < ok[0].start_probs[0] < 1
    end = len(context)
    with pytest.raises(BiaslensError, match="outside the .*truncated.* context"):
        lm.span_scores([SpanScoresRequest("Who?", context, ((end - 4, end),))])
