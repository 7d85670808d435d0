"""Encoder-decoder denoisers as fill-mask models: BART (reconstruction) and T5/UL2 (span
sentinels, with UL2's mode prefix), against transformers' own computation."""

from __future__ import annotations

import math

import pytest
import torch
from transformers import AutoConfig, pipeline

from biaslens.errors import BiaslensError
from biaslens.models import BackendConfig, load_model
from biaslens.models.base import ModelKind
from biaslens.models.checkpoints.local import detect_kind
from biaslens.models.requests import GenerateRequest, TokenDistributionRequest

REQUESTS = [
    TokenDistributionRequest("In 1801, [MASK] worked as a child.", ("she", "he", "they"), 5),
    TokenDistributionRequest("The doctor said that [MASK] was late.", ("she", "he"), 5),
    TokenDistributionRequest("Alice and Bob met. [MASK] bought apples.", ("she", "he"), 5),
]
CPU = BackendConfig(device="cpu", batch_size=2)


def test_bart_loads_as_a_fill_mask_model_whatever_its_architectures_say(tiny_models, tmp_path):
    config = AutoConfig.from_pretrained(tiny_models["bart"])
    assert config.architectures == ["BartForConditionalGeneration"]
    assert detect_kind(config) == ModelKind.MASKED
    config.architectures = ["BartModel"]  # facebook/bart-base's config
    assert detect_kind(config) == ModelKind.MASKED
    assert detect_kind(config, "seq2seq") == ModelKind.SEQ2SEQ


def test_bart_slot_probabilities_equal_the_fill_mask_pipeline(tiny_models):
    lm = load_model(str(tiny_models["bart"]), CPU)
    assert lm.kind == ModelKind.MASKED and lm.fill_style == "reconstruct"
    results = lm.token_distribution(REQUESTS)
    filler = pipeline("fill-mask", model=str(tiny_models["bart"]), device="cpu")
    for request, result in zip(REQUESTS, results, strict=True):
        expected = filler(request.text.replace("[MASK]", "<mask>"), top_k=5)
        assert list(result.top_tokens) == [e["token_str"] for e in expected]
        assert list(result.top_probs) == pytest.approx([e["score"] for e in expected], abs=1e-6)
        # the targets: full-vocabulary probabilities at the slot, with the decoder's bias
        encoded = filler.tokenizer(request.text.replace("[MASK]", "<mask>"), return_tensors="pt")
        with torch.no_grad():
            logits = filler.model(**encoded).logits[0]
        slot = int((encoded.input_ids[0] == filler.tokenizer.mask_token_id).nonzero())
        probs = logits[slot].softmax(-1)
        for target, p, ids in zip(
            request.targets, result.target_probs, result.target_ids, strict=True
        ):
            if ids:
                assert p == pytest.approx(float(probs[ids[0]]), rel=1e-5), target


def test_bart_as_seq2seq_when_asked(tiny_models):
    lm = load_model(str(tiny_models["bart"]), CPU.with_options(model_kind="seq2seq"))
    assert lm.kind == ModelKind.SEQ2SEQ
    (result,) = lm.generate([GenerateRequest("Alice and Bob met.", 3, 2)])
    assert len(result.step_top_tokens) >= 1


def test_t5_span_denoiser_scores_the_first_token_after_the_sentinel(tiny_models):
    lm = load_model(
        str(tiny_models["t5-denoiser"]),
        CPU.with_options(model_kind="masked", input_prefix="[NLU] "),
    )
    assert lm.kind == ModelKind.MASKED and lm.fill_style == "sentinel"
    assert ("input_prefix", "[NLU] ") in lm.identity.numerics
    results = lm.token_distribution(REQUESTS)
    tokenizer, model = lm.tokenizer, lm.model
    sentinel = tokenizer.convert_tokens_to_ids("<extra_id_0>")
    for request, result in zip(REQUESTS, results, strict=True):
        text = "[NLU] " + request.text.replace("[MASK]", "<extra_id_0>")
        encoded = tokenizer(text, return_tensors="pt")
        assert sentinel in encoded.input_ids[0].tolist()
        decoder = torch.tensor([[model.config.decoder_start_token_id, sentinel]])
        with torch.no_grad():
            probs = model(**encoded, decoder_input_ids=decoder).logits[0, -1].softmax(-1)
        for target, p in zip(request.targets, result.target_probs, strict=True):
            ids = tokenizer(" " + target, add_special_tokens=False).input_ids
            if len(ids) == 1:
                assert p == pytest.approx(float(probs[ids[0]]), rel=1e-5)
            else:
                assert math.isnan(p)
        top = probs.topk(5)
        assert list(result.top_probs) == pytest.approx(top.values.tolist(), abs=1e-6)


def test_the_prefix_changes_the_answers_and_the_cache_identity(tiny_models):
    plain = load_model(str(tiny_models["t5-denoiser"]), CPU.with_options(model_kind="masked"))
    prefixed = load_model(
        str(tiny_models["t5-denoiser"]),
        CPU.with_options(model_kind="masked", input_prefix="[NLU] "),
    )
    assert plain.identity.cache_key() != prefixed.identity.cache_key()
    a, b = plain.token_distribution(REQUESTS[:1]), prefixed.token_distribution(REQUESTS[:1])
    assert a[0].target_probs != pytest.approx(b[0].target_probs)


def test_unusable_kind_requests_are_clear_errors(tiny_models):
    with pytest.raises(BiaslensError, match="neither a mask token nor span sentinels"):
        load_model(str(tiny_models["t5"]), CPU.with_options(model_kind="masked"))
    with pytest.raises(BiaslensError, match="--model-kind seq2seq: this is a decoder"):
        load_model(str(tiny_models["bert-mlm"]), CPU.with_options(model_kind="seq2seq"))
    with pytest.raises(BiaslensError, match="unknown model kind"):
        BackendConfig(model_kind="fill")
    with pytest.raises(BiaslensError, match="apply to the hf backend"):
        BackendConfig(backend="openai", input_prefix="[NLU] ")
