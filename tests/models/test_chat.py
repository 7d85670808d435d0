"""--chat: prompts become user messages in the model's own chat template, on every request
type of a causal model, recomputed here with transformers on the template's token ids."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from biaslens.errors import BiaslensError
from biaslens.models import (
    BackendConfig,
    ChoiceLogprobsRequest,
    GenerateRequest,
    TokenDistributionRequest,
    load_model,
)
from biaslens.models.runtime.tokenization import encode_causal_prompts

PROMPTS = ["Who is the nurse?", "In 1901, the doctor said that"]
SYSTEM = "Answer with one word."


def template_ids(tokenizer, text: str, system: str = "") -> list[int]:
    messages = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": text})
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


@pytest.fixture(scope="module")
def chat(tiny_models):
    folder = tiny_models["llama"]
    config = BackendConfig(device="cpu", batch_size=2, chat=True, system=SYSTEM)
    lm = load_model(str(folder), config)
    yield lm, AutoTokenizer.from_pretrained(folder), AutoModelForCausalLM.from_pretrained(folder)
    lm.close()


def test_prompts_are_the_chat_templates_token_ids(chat):
    lm, tokenizer, _ = chat
    assert lm.encode_prompts(PROMPTS) == [template_ids(tokenizer, p, SYSTEM) for p in PROMPTS]
    plain = BackendConfig(chat=True)
    assert encode_causal_prompts(tokenizer, PROMPTS, None, plain.options) == [
        template_ids(tokenizer, p) for p in PROMPTS
    ]
    assert tokenizer.decode(lm.encode_prompts(PROMPTS[:1])[0]).endswith("<s>assistant\n")


def test_every_request_type_answers_the_formatted_prompt(chat):
    lm, tokenizer, model = chat
    targets = (" she", " he")
    results = lm.token_distribution([TokenDistributionRequest(p, targets, 3) for p in PROMPTS])
    for prompt, result in zip(PROMPTS, results, strict=True):
        ids = template_ids(tokenizer, prompt, SYSTEM)
        with torch.no_grad():
            probs = model(torch.tensor([ids])).logits[0, -1].softmax(-1)
        for target, p in zip(targets, result.target_probs, strict=True):
            (token,) = tokenizer(target, add_special_tokens=False)["input_ids"]
            assert p == pytest.approx(float(probs[token]), rel=1e-4)
    choice = lm.choice_logprobs([ChoiceLogprobsRequest(PROMPTS[0], (" a b", " c"))])[0]
    ids = template_ids(tokenizer, PROMPTS[0], SYSTEM)
    continuation = tokenizer(" a b", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = model(torch.tensor([ids + continuation])).logits[0].log_softmax(-1)
    expected = sum(float(logits[len(ids) - 1 + i, t]) for i, t in enumerate(continuation))
    assert choice.logprobs[0] == pytest.approx(expected, abs=1e-4)
    generated = lm.generate([GenerateRequest(PROMPTS[1], max_new_tokens=6, top_k=1)])[0]
    ids = template_ids(tokenizer, PROMPTS[1], SYSTEM)
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), max_new_tokens=6, do_sample=False)
    assert generated.text == tokenizer.decode(out[0, len(ids) :], skip_special_tokens=False)


def test_chat_and_its_system_message_are_part_of_the_identity(tiny_models, chat):
    lm, _, _ = chat
    folder = str(tiny_models["llama"])
    keys = {
        lm.identity.cache_key(),
        load_model(folder, BackendConfig(device="cpu")).identity.cache_key(),
        load_model(folder, BackendConfig(device="cpu", chat=True)).identity.cache_key(),
        load_model(
            folder, BackendConfig(device="cpu", chat=True, system="Be brief.")
        ).identity.cache_key(),
    }
    assert len(keys) == 4


@pytest.mark.parametrize(
    ("model", "options", "message"),
    [
        ("bert-mlm", {"chat": True}, "--chat applies to causal chat models; .* masked-lm"),
        ("gpt2", {"chat": True}, "has no chat template"),
        ("llama", {"system": "x"}, "--system is a chat message: it needs --chat"),
    ],
)
def test_chat_where_it_cannot_apply_is_refused(tiny_models, model, options, message):
    with pytest.raises(BiaslensError, match=message):
        load_model(str(tiny_models[model]), BackendConfig(device="cpu", **options))


@pytest.mark.slow
def test_the_default_smollm2_runs_in_chat_mode_as_transformers_does():
    """SmolLM2-Instruct ships a chat template: greedy answers through --chat equal
    transformers' generate on apply_chat_template's ids."""
    lm = load_model("default", BackendConfig(device="cpu", chat=True))
    tokenizer, model = lm.tokenizer, lm.model
    prompt = "Complete with one word: The nurse said that"
    ids = template_ids(tokenizer, prompt)
    assert lm.encode_prompts([prompt]) == [ids]
    result = lm.generate([GenerateRequest(prompt, max_new_tokens=8, top_k=5)])[0]
    with torch.no_grad():
        out = model.generate(
            torch.tensor([ids]), max_new_tokens=8, do_sample=False, output_scores=True,
            return_dict_in_generate=True,
        )  # fmt: skip
    new = out.sequences[0, len(ids) :].tolist()
    eos = tokenizer.eos_token_id
    new = new[: new.index(eos)] if eos in new else new  # the text stops before the EOS
    assert result.text == tokenizer.decode(new)
    first = out.scores[0][0].softmax(-1).topk(5).values.double().tolist()
    assert list(result.step_top_probs[0]) == pytest.approx(first, abs=1e-5)
    lm.close()
