"""Contrastive Input Decoding: the scoring rule by hand, the batched decoder against a naive
per-example implementation and against ``model.generate``, stopping, sampling, bad input."""

from __future__ import annotations

import math

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

from biaslens.decoding.contrastive import (
    ContrastiveDecoder,
    ContrastiveInputScaling,
    TopKSupport,
    contrastive_generate,
    contrastive_scores,
)
from biaslens.errors import BiaslensError
from tests.decoding.naive_cid import naive_cid

GENERATIVE = {
    "llama": AutoModelForCausalLM,
    "gpt2": AutoModelForCausalLM,
    "t5": AutoModelForSeq2SeqLM,
}
# Unequal lengths, so that left padding (causal) and right padding (encoder) are exercised.
XS = ["The doctor said that", "Alice and Bob went to the market because she", "Who was late?"]
X_PRIMES = ["The nurse said that he", "Bob went because", "Who"]


def load(tiny_models, name: str, sharpen: bool = True):
    """A tiny model; ``sharpen`` redraws its matrices with a larger scale so that next-token
    distributions are peaked and depend on the input (random init gives near-uniform ones)."""
    model = GENERATIVE[name].from_pretrained(tiny_models[name]).eval()
    tokenizer = AutoTokenizer.from_pretrained(tiny_models[name])
    if sharpen:
        generator = torch.Generator().manual_seed(0)
        with torch.no_grad():
            for parameter in model.parameters():
                if parameter.dim() == 2:
                    parameter.normal_(0, 0.3, generator=generator)
    return model, tokenizer


def encode(tokenizer, texts):
    return [tokenizer(t)["input_ids"] for t in texts]


def test_scaling_matches_equation_one_by_hand():
    p_x = torch.tensor([[0.5, 0.3, 0.2]])
    p_xp = torch.tensor([[0.7, 0.1, 0.2]])
    scores = ContrastiveInputScaling(torch.tensor([2.0]))(p_x.log(), p_xp.log())
    # p̃ ∝ exp(2Δ)·p: 0.5·e^-0.4 = 0.3352, 0.3·e^0.4 = 0.4475, 0.2·e^0 = 0.2
    expected = torch.tensor([0.5 * math.exp(-0.4), 0.3 * math.exp(0.4), 0.2])
    assert torch.allclose(scores.softmax(-1), expected / expected.sum(), atol=1e-6)
    assert scores.argmax().item() == 1  # λ = 2 moves the choice from token 0 to token 1
    lam0 = ContrastiveInputScaling(torch.tensor([0.0]))(p_x.log(), p_xp.log())
    assert torch.allclose(lam0, p_x.log()) and lam0.argmax().item() == 0


def test_top_k_restricts_support_to_likely_tokens_under_x():
    p_x = torch.tensor([[0.6, 0.3, 0.1]])
    p_xp = torch.tensor([[0.9, 0.3, 0.0]])
    lam = torch.tensor([100.0])
    # Δ = (-0.3, 0, 0.1); scores log p + 100Δ = (-30.5, -1.2, 7.7): token 2 without a limit,
    free = contrastive_scores(p_x.log(), p_xp.log(), lam, top_k=3)
    assert free.argmax().item() == 2
    # token 1 when only the two most likely tokens under x may be chosen, token 0 for K = 1.
    top2 = contrastive_scores(p_x.log(), p_xp.log(), lam, top_k=2)
    assert torch.isinf(top2[0, 2]) and top2.argmax().item() == 1
    top1 = contrastive_scores(p_x.log(), p_xp.log(), lam, top_k=1)
    assert top1.argmax().item() == 0 and torch.isinf(top1[0, 1:]).all()
    with pytest.raises(BiaslensError, match="top_k"):
        TopKSupport(0)


@pytest.mark.parametrize("name", sorted(GENERATIVE))
def test_batched_decoder_equals_naive_implementation(tiny_models, name):
    model, tokenizer = load(tiny_models, name)
    decoder = ContrastiveDecoder(model, tokenizer, eos_token_ids=())
    xs, xps = encode(tokenizer, XS), encode(tokenizer, X_PRIMES)
    lams = [0.0, 5.0, 50.0]
    triples = [(x, xp, lam) for lam in lams for x, xp in zip(xs, xps, strict=True)]
    outputs = decoder.decode(
        [t[0] for t in triples], [t[1] for t in triples], [t[2] for t in triples],
        top_k=20, max_new_tokens=8,
    )  # fmt: skip
    for (x, xp, lam), output in zip(triples, outputs, strict=True):
        assert list(output.token_ids) == naive_cid(model, x, xp, lam, 20, 8, eos=set())
    if name == "llama":  # λ really changes the continuation of this sharpened model
        assert len({o.token_ids for o in outputs[1::3]}) > 1


@pytest.mark.parametrize("name", sorted(GENERATIVE))
def test_seeded_sampling_equals_naive_sampling(tiny_models, name):
    model, tokenizer = load(tiny_models, name, sharpen=False)
    decoder = ContrastiveDecoder(model, tokenizer, eos_token_ids=())
    xs, xps = encode(tokenizer, XS), encode(tokenizer, X_PRIMES)
    outputs = decoder.decode(
        xs, xps, [5.0] * 3, top_k=50, max_new_tokens=6, do_sample=True, seeds=[1, 2, 3]
    )
    for x, xp, seed, output in zip(xs, xps, [1, 2, 3], outputs, strict=True):
        generator = torch.Generator().manual_seed(seed)
        assert list(output.token_ids) == naive_cid(model, x, xp, 5.0, 50, 6, set(), generator)
    # The same seed gives the same text whatever else is in the batch.
    alone = decoder.decode(
        xs[1:2], xps[1:2], [5.0], top_k=50, max_new_tokens=6, do_sample=True, seeds=[2]
    )
    assert alone[0] == outputs[1]


@pytest.mark.parametrize("name", sorted(GENERATIVE))
def test_lambda_zero_reproduces_generate(tiny_models, name):
    model, tokenizer = load(tiny_models, name)
    decoder = ContrastiveDecoder(model, tokenizer)
    outputs = decoder.decode(
        encode(tokenizer, XS), encode(tokenizer, X_PRIMES), [0.0] * 3, max_new_tokens=10
    )
    for text, output in zip(XS, outputs, strict=True):
        inputs = tokenizer(text, return_tensors="pt")
        generated = model.generate(
            **inputs, do_sample=False, max_new_tokens=10, pad_token_id=decoder.pad_token_id
        )
        start = 1 if model.config.is_encoder_decoder else inputs["input_ids"].shape[1]
        tokens = generated[0, start:].tolist()
        if output.finish_reason == "eos":  # generate pads after EOS
            tokens = tokens[: len(output.token_ids)]
        assert list(output.token_ids) == tokens


def test_stopping_on_eos_stop_string_and_length(tiny_models):
    model, tokenizer = load(tiny_models, "llama")
    free = ContrastiveDecoder(model, tokenizer, eos_token_ids=())
    x, xp = encode(tokenizer, XS[:1]), encode(tokenizer, X_PRIMES[:1])
    reference = free.decode(x, xp, [0.0], max_new_tokens=8)[0]
    assert reference.finish_reason == "length" and len(reference.token_ids) == 8
    # EOS: declare the third generated token an end-of-sequence token.
    eos = reference.token_ids[2]
    first = reference.token_ids.index(eos)
    ended = ContrastiveDecoder(model, tokenizer, eos_token_ids=[eos]).decode(
        x, xp, [0.0], max_new_tokens=8
    )[0]
    assert ended.finish_reason == "eos" and ended.token_ids == reference.token_ids[: first + 1]
    # Stop string: the decoded text of the first three tokens, cut before it.
    pieces = [tokenizer.decode([t], skip_special_tokens=True) for t in reference.token_ids]
    stop = pieces[3].strip() or pieces[3]
    stopped = free.decode(x, xp, [0.0], max_new_tokens=8, stop=[stop])[0]
    full_text = tokenizer.decode(reference.token_ids, skip_special_tokens=True)
    assert stopped.finish_reason == "stop"
    assert stopped.text == full_text[: full_text.index(stop)]
    assert len(stopped.token_ids) <= 4


def test_library_function_broadcasts_a_lambda_grid(tiny_models):
    model, tokenizer = load(tiny_models, "llama")
    grid = contrastive_generate(model, tokenizer, XS[0], X_PRIMES[0], [0, 5, 50], max_new_tokens=6)
    single = [
        contrastive_generate(model, tokenizer, XS[0], X_PRIMES[0], lam, max_new_tokens=6)
        for lam in (0, 5, 50)
    ]
    assert grid == single
    batched = contrastive_generate(model, tokenizer, XS, X_PRIMES, 5.0, max_new_tokens=6)
    assert len(batched) == 3 and batched[0] == single[1]
    with pytest.raises(BiaslensError, match="expected 1 or 3"):
        contrastive_generate(model, tokenizer, XS, X_PRIMES[:2], 0.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"x": ""}, "non-empty"),
        ({"x_prime": "   "}, "non-empty"),
        ({"lam": -1.0}, "λ must be >= 0"),
        ({"lam": float("nan")}, "λ must be >= 0"),
        ({"top_k": 0}, "top_k"),
        ({"max_new_tokens": 0}, "max_new_tokens"),
    ],
)
def test_bad_input_is_a_clear_error(tiny_models, kwargs, message):
    model, tokenizer = load(tiny_models, "gpt2", sharpen=False)
    arguments = {"x": "The doctor said", "x_prime": "The nurse said", "lam": 1.0} | kwargs
    with pytest.raises(BiaslensError, match=message):
        contrastive_generate(model, tokenizer, **arguments)


def test_a_model_that_cannot_generate_is_refused(tiny_models):
    from transformers import AutoModelForMaskedLM

    model = AutoModelForMaskedLM.from_pretrained(tiny_models["bert-mlm"])
    tokenizer = AutoTokenizer.from_pretrained(tiny_models["bert-mlm"])
    with pytest.raises(BiaslensError, match="cannot generate"):
        contrastive_generate(model, tokenizer, "a", "b", 1.0)


@pytest.mark.slow
def test_smollm2_cid_equals_naive_and_generate():
    from biaslens.models import BackendConfig, load_model

    lm = load_model("default", BackendConfig(device="cpu"))
    model, tokenizer = lm.model, lm.tokenizer
    x = "John, a software developer, failed his interview at a major tech company because he"
    x_prime = "Ahmed, a software developer, failed his interview at a major tech company because he"
    shorter = "The boss told her she will not receive a promotion because"
    decoder = ContrastiveDecoder(model, tokenizer)
    xs, xps = encode(tokenizer, [x, shorter]), encode(tokenizer, [x_prime, "The boss told him"])
    outputs = decoder.decode(xs * 2, xps * 2, [0.0, 0.0, 50.0, 50.0], max_new_tokens=8)
    for (a, b, lam), output in zip(
        [(xs[0], xps[0], 0.0), (xs[1], xps[1], 0.0), (xs[0], xps[0], 50.0), (xs[1], xps[1], 50.0)],
        outputs,
        strict=True,
    ):
        assert list(output.token_ids) == naive_cid(model, a, b, lam, 50, 8, decoder.eos_token_ids)
    for text, output in zip([x, shorter], outputs[:2], strict=True):
        inputs = tokenizer(text, return_tensors="pt")
        generated = model.generate(**inputs, do_sample=False, max_new_tokens=8)
        assert list(output.token_ids) == generated[0, inputs["input_ids"].shape[1] :].tolist()
    assert outputs[0].token_ids != outputs[2].token_ids  # λ = 50 surfaces a different text
