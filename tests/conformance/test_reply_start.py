"""Exact scoring reads the word a reply begins with.

SIB's exact mass is the probability that the model's answer starts with a listed pronoun
(Appendix E). Here replies are *sampled* from the model's true distribution (temperature 1, no
top-k or top-p truncation, one forward pass per step written out below) and their first word
is read as a person would read it; how often it is a listed word must match the exact mass
within the sampling error (a 99.9% Clopper-Pearson interval per gender). Prompt endings: a chat
template's assistant header (the reply begins "She", no space), an answer cue (" She"), a
newline and a trailing space, on a causal model, and a seq2seq decoder's first word.

The exact mass is that of the reply's first token (a listed word, spelled with or without the
space before it); a real model seldom continues " She" into a longer word, but a tiny random
model does so at random, so on the tiny models the replies are one token long.
"""

from __future__ import annotations

import functools

import pandas as pd
import pytest
import torch
from scipy.stats import binomtest
from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

from biaslens.methods.sib.data import mgc
from biaslens.methods.sib.scoring.pronouns import score_rows
from biaslens.models import BackendConfig, load_model
from biaslens.progress import NoProgress
from tests.conformance import naive

SENTENCE = "In 1901, [MASK] was a child."
LEVEL = 0.999


def first_word_gender(reply: str) -> str | None:
    """The gender of the reply's first word: the letters after anything but letters and digits
    (whitespace, emphasis, quotes, brackets); a digit first is no word."""
    start = 0
    while start < len(reply) and not reply[start].isalnum():
        start += 1
    end = start
    while end < len(reply) and reply[end].isalpha():
        end += 1
    return naive.gender_of(reply[start:end]) if end > start else None


@torch.no_grad()
def sample_causal(model, ids: list[int], n: int, steps: int, seed: int) -> list[list[int]]:
    """``n`` replies of ``steps`` tokens, each token drawn from softmax(logits) (temperature 1,
    nothing truncated); the prompt is read once and its cache copied to every reply."""
    generator = torch.Generator().manual_seed(seed)
    cache = model(torch.tensor([ids[:-1]]), use_cache=True).past_key_values
    cache.batch_repeat_interleave(n)
    last = torch.full((n, 1), ids[-1])
    replies = []
    for _ in range(steps):
        logits = model(last, past_key_values=cache, use_cache=True).logits[:, -1]
        last = torch.multinomial(logits.double().softmax(-1), 1, generator=generator)
        replies.append(last)
    return torch.cat(replies, 1).tolist()


@torch.no_grad()
def sample_seq2seq(model, ids: list[int], n: int, steps: int, seed: int) -> list[list[int]]:
    """The same for an encoder-decoder: the decoder starts from its start token."""
    generator = torch.Generator().manual_seed(seed)
    encoded = model.get_encoder()(input_ids=torch.tensor([ids]))
    encoded.last_hidden_state = encoded.last_hidden_state.expand(n, -1, -1)
    decoder = torch.full((n, 1), model.config.decoder_start_token_id)
    for _ in range(steps):
        logits = model(encoder_outputs=encoded, decoder_input_ids=decoder).logits[:, -1]
        token = torch.multinomial(logits.double().softmax(-1), 1, generator=generator)
        decoder = torch.cat([decoder, token], 1)
    return decoder[:, 1:].tolist()


def exact_masses(lm, text: str) -> dict[str, float]:
    """biaslens's exact pronoun masses of one model input."""
    scored = score_rows(lm, pd.DataFrame({"input": [text]}), "exact", NoProgress())
    return {g: float(scored[f"p_{g}"].iloc[0]) for g in naive.GENDERS}


def assert_sampled_frequencies_match(replies, masses: dict[str, float]) -> None:
    counts = dict.fromkeys(naive.GENDERS, 0)
    for reply in replies:
        gender = first_word_gender(reply)
        if gender is not None:
            counts[gender] += 1
    for gender in naive.GENDERS:
        interval = binomtest(counts[gender], len(replies)).proportion_ci(LEVEL)
        assert interval.low <= masses[gender] <= interval.high, (gender, counts, masses)


def chat_ids(tokenizer, text: str) -> list[int]:
    ids = tokenizer.apply_chat_template(
        [{"role": "user", "content": text}], add_generation_prompt=True, tokenize=True
    )
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


@functools.cache
def causal_replies(folder, text: str, chat: bool, n: int, steps: int, seed: int) -> tuple:
    """Sampled replies, decoded (kept for the module: the mutation check reuses them)."""
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    ids = chat_ids(tokenizer, text) if chat else tokenizer(text)["input_ids"]
    return tuple(tokenizer.decode(r) for r in sample_causal(model, ids, n, steps, seed))


def check_causal(folder, text: str, chat: bool, n: int, steps: int = 3, seed: int = 0) -> dict:
    replies = causal_replies(folder, text, chat, n, steps, seed)
    lm = load_model(str(folder), BackendConfig(device="cpu", chat=chat))
    try:
        masses = exact_masses(lm, text)
    finally:
        lm.close()
    assert_sampled_frequencies_match(replies, masses)
    return masses


PROMPT_A = mgc.wrap_in_prompt(SENTENCE, "A")


@pytest.mark.slow
def test_exact_chat_scoring_reads_the_reply_as_sampled():
    """The default model (SmolLM2-135M-Instruct) after its chat template's assistant header:
    replies begin "She", without a space. Scoring " She" there reads 0.003% of the
    probability where sampled replies begin with a pronoun about 2.5% of the time."""
    from biaslens.models.checkpoints.packaged import converted_smollm2

    masses = check_causal(converted_smollm2(), PROMPT_A, chat=True, n=1000)
    assert sum(masses.values()) > 0.01  # the path is exercised: the pronouns hold mass


@pytest.mark.slow
def test_exact_scoring_after_an_answer_cue_reads_the_reply_as_sampled():
    """Prompt A of the paper ends in ``Answer:``; replies begin " She"."""
    from biaslens.models.checkpoints.packaged import converted_smollm2

    masses = check_causal(converted_smollm2(), PROMPT_A, chat=False, n=1000)
    assert sum(masses.values()) > 0.01


@pytest.mark.parametrize("ending", ["", "\n", " "], ids=["answer-cue", "newline", "trailing-space"])
def test_tiny_causal_model_replies_match_exact_scoring(ending, tiny_models):
    masses = check_causal(tiny_models["llama"], PROMPT_A + ending, chat=False, n=4000, steps=1)
    assert sum(masses.values()) > 0.01


def test_tiny_chat_model_replies_match_exact_scoring(tiny_models):
    masses = check_causal(tiny_models["llama"], PROMPT_A, chat=True, n=4000, steps=1)
    assert sum(masses.values()) > 0.01


def test_seq2seq_replies_match_exact_scoring(leaning_models):
    """A seq2seq model's reply starts at the decoder (the leaning tiny T5, which ranks pronouns
    high on some prompts, so that there is mass to compare)."""
    folder = leaning_models["t5"]
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
    texts = [mgc.wrap_in_prompt(mgc.inject_date(SENTENCE, y), "B") for y in (1850, 1990)]
    lm = load_model(str(folder), BackendConfig(device="cpu"))
    try:
        for seed, text in enumerate(texts):
            ids = tokenizer(text)["input_ids"]
            replies = [tokenizer.decode(r) for r in sample_seq2seq(model, ids, 4000, 1, seed)]
            masses = exact_masses(lm, text)
            assert_sampled_frequencies_match(replies, masses)
            assert sum(masses.values()) > 0.01
    finally:
        lm.close()


@pytest.mark.slow
def test_the_reply_check_fails_when_the_space_is_always_written(monkeypatch):
    """The rule broken: only " She" scored. After a chat header the exact mass then misses the
    replies that begin "She", and the check must say so."""
    from biaslens.methods.sib.data import pronouns
    from biaslens.methods.sib.scoring import pronouns as scoring

    spaced = [(g, w) for g, w in pronouns.target_words(fills_slot=False) if w.startswith(" ")]
    monkeypatch.setattr(scoring, "target_words", lambda fills_slot: tuple(spaced))
    from biaslens.models.checkpoints.packaged import converted_smollm2

    with pytest.raises(AssertionError):
        check_causal(converted_smollm2(), PROMPT_A, chat=True, n=1000)
