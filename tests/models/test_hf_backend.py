"""The transformers backend against direct, unbatched transformers computations."""

from __future__ import annotations

import math

import pytest
import torch
from transformers import (
    AutoModelForCausalLM,
    AutoModelForMaskedLM,
    AutoModelForQuestionAnswering,
    AutoModelForSeq2SeqLM,
    AutoTokenizer,
)

from biaslens.errors import BiaslensError
from biaslens.models import (
    MASK,
    BackendConfig,
    ChoiceLogprobsRequest,
    GenerateRequest,
    SpanScoresRequest,
    TokenDistributionRequest,
    load_model,
)

PROMPTS = [
    "In 1801, they was a child.\nAnswer:",
    "Answer:",
    "The gendered pronoun missing in this sentence: 'In Mali, _ will be an adult.', is",
]


def test_masked_distribution_matches_full_forward(tiny_models, tiny_backends):
    lm = tiny_backends["bert-mlm"]
    texts = [
        f"In 1801, {MASK} was a child.",
        f"{MASK} is here.",
        f"In New Zealand, {MASK} has become a grown up.",
    ]
    results = lm.token_distribution(
        [TokenDistributionRequest(t, ("she", "He", "they"), 5) for t in texts]
    )
    model = AutoModelForMaskedLM.from_pretrained(tiny_models["bert-mlm"]).eval()
    tok = AutoTokenizer.from_pretrained(tiny_models["bert-mlm"])
    for text, result in zip(texts, results, strict=True):
        enc = tok(text.replace(MASK, tok.mask_token), return_tensors="pt")
        slot = enc["input_ids"][0].tolist().index(tok.mask_token_id)
        with torch.no_grad():
            probs = model(**enc).logits[0, slot].softmax(-1)
        for word, p in zip(("she", "he", "they"), result.target_probs, strict=True):
            assert p == pytest.approx(float(probs[tok.convert_tokens_to_ids(word)]), rel=1e-5)
        top = probs.topk(5)
        assert list(result.top_probs) == pytest.approx(top.values.tolist(), rel=1e-5)
        assert list(result.top_tokens) == [tok.decode([i]) for i in top.indices.tolist()]
    # uncased vocabulary: "He" fills the slot with the same token as "he"
    assert results[0].target_ids[1] == (tok.convert_tokens_to_ids("he"),)


def test_masked_multi_token_target_warns_and_is_nan(tiny_backends):
    lm = tiny_backends["bert-mlm"]
    assert len(lm.tokenizer.tokenize("shehe")) > 1
    assert lm.tokenizer.tokenize("zqxjv") == ["[UNK]"]
    with pytest.warns(UserWarning, match="not single .*'shehe', 'zqxjv'"):
        (result,) = lm.token_distribution(
            [TokenDistributionRequest(f"{MASK} was.", ("she", "shehe", "zqxjv"), 5)]
        )
    assert not math.isnan(result.target_probs[0])
    for i in (1, 2):
        assert math.isnan(result.target_probs[i]) and result.target_ids[i] == ()


def test_masked_request_needs_exactly_one_mask(tiny_backends):
    with pytest.raises(BiaslensError, match="exactly once"):
        tiny_backends["bert-mlm"].token_distribution(
            [TokenDistributionRequest("no slot here", ("she",))]
        )


@pytest.mark.parametrize("name", ["llama", "gpt2"])
def test_causal_next_token_with_left_padding_matches_unpadded(name, tiny_models, tiny_backends):
    lm = tiny_backends[name]
    results = lm.token_distribution(
        [TokenDistributionRequest(p, (" she", " he"), 4) for p in PROMPTS]
    )
    model, tok = _reference(tiny_models, name)
    for prompt, result in zip(PROMPTS, results, strict=True):
        ids = torch.tensor([tok(prompt)["input_ids"]])
        with torch.no_grad():
            probs = model(ids).logits[0, -1].softmax(-1)
        for word, p in zip((" she", " he"), result.target_probs, strict=True):
            (token,) = tok(word, add_special_tokens=False)["input_ids"]
            assert p == pytest.approx(float(probs[token]), rel=1e-4)
        assert list(result.top_probs) == pytest.approx(probs.topk(4).values.tolist(), rel=1e-4)


def _reference(tiny_models, name: str) -> tuple:
    """The tiny model ``name`` and its tokenizer as transformers itself loads them (the side of
    a comparison that does not go through the backend)."""
    auto = AutoModelForSeq2SeqLM if name == "t5" else AutoModelForCausalLM
    return auto.from_pretrained(tiny_models[name]).eval(), AutoTokenizer.from_pretrained(
        tiny_models[name]
    )


def _chain_rule(model, tok, prompt, word, seq2seq=False):
    prompt_ids = tok(prompt)["input_ids"]
    word_ids = tok(word, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        if seq2seq:
            decoder = torch.tensor([[model.config.decoder_start_token_id, *word_ids[:-1]]])
            logits = model(input_ids=torch.tensor([prompt_ids]), decoder_input_ids=decoder).logits[
                0
            ]
            logprobs = logits.log_softmax(-1)
            return sum(float(logprobs[i, t]) for i, t in enumerate(word_ids)), len(word_ids)
        ids = torch.tensor([prompt_ids + word_ids])
        logprobs = model(ids).logits[0].log_softmax(-1)
        start = len(prompt_ids)
        return sum(float(logprobs[start + i - 1, t]) for i, t in enumerate(word_ids)), len(word_ids)


def test_causal_multi_token_target_is_exact_chain_rule(tiny_models, tiny_backends):
    lm = tiny_backends["llama"]
    model = AutoModelForCausalLM.from_pretrained(tiny_models["llama"]).eval()
    tok = AutoTokenizer.from_pretrained(tiny_models["llama"])
    word = " Femalezq"  # several tokens in the tiny vocabulary
    assert len(tok(word, add_special_tokens=False)["input_ids"]) > 1
    (result,) = lm.token_distribution([TokenDistributionRequest(PROMPTS[0], (word, " she"))])
    expected, _ = _chain_rule(model, tok, PROMPTS[0], word)
    assert result.target_probs[0] == pytest.approx(math.exp(expected), rel=1e-4)
    assert len(result.target_ids[0]) > 1


@pytest.mark.parametrize("name", ["llama", "gpt2", "t5"])
def test_choice_logprobs_match_direct_computation(name, tiny_models, tiny_backends):
    lm = tiny_backends[name]
    model, tok = _reference(tiny_models, name)
    requests = [ChoiceLogprobsRequest(p, (" she", " Alice and Bob", " they")) for p in PROMPTS]
    results = lm.choice_logprobs(requests)
    for request, result in zip(requests, results, strict=True):
        for choice, logprob, n in zip(
            request.choices, result.logprobs, result.num_tokens, strict=True
        ):
            expected, count = _chain_rule(model, tok, request.prompt, choice, seq2seq=name == "t5")
            assert logprob == pytest.approx(expected, rel=1e-4, abs=1e-5)
            assert n == count


def test_seq2seq_first_token_distribution(tiny_models, tiny_backends):
    lm = tiny_backends["t5"]
    model, tok = _reference(tiny_models, "t5")
    results = lm.token_distribution([TokenDistributionRequest(p, (" she",), 3) for p in PROMPTS])
    (she,) = tok(" she", add_special_tokens=False)["input_ids"]
    for prompt, result in zip(PROMPTS, results, strict=True):
        with torch.no_grad():
            logits = model(
                input_ids=torch.tensor([tok(prompt)["input_ids"]]),
                decoder_input_ids=torch.tensor([[0]]),
            ).logits[0, 0]
        assert result.target_probs[0] == pytest.approx(float(logits.softmax(-1)[she]), rel=1e-4)


@pytest.mark.parametrize("name", ["llama", "gpt2", "t5"])
def test_batched_generate_equals_unbatched_greedy(name, tiny_models, tiny_backends):
    lm = tiny_backends[name]
    model, tok = _reference(tiny_models, name)
    results = lm.generate([GenerateRequest(p, 6, 3) for p in PROMPTS])
    for prompt, result in zip(PROMPTS, results, strict=True):
        ids = torch.tensor([tok(prompt)["input_ids"]])
        with torch.no_grad():
            out = model.generate(
                ids, max_new_tokens=6, do_sample=False, pad_token_id=tok.pad_token_id or 0
            )
        new = out[0, ids.shape[1] :] if name != "t5" else out[0, 1:]
        expected = [tok.decode([t]) for t in new.tolist()]
        assert list(result.tokens) == expected[: len(result.tokens)]
        assert len(result.step_top_tokens) == len(result.tokens)
        # the argmax of each step's distribution is the token generated there
        assert [step[0] for step in result.step_top_tokens] == list(result.tokens)


def test_generate_stop_strings_cut_the_continuation(tiny_backends):
    lm = tiny_backends["llama"]
    (free,) = lm.generate([GenerateRequest(PROMPTS[1], 8, 2)])
    assert len(free.text) > 2
    stop = free.text[1:3]
    (cut,) = lm.generate([GenerateRequest(PROMPTS[1], 8, 2, stop=(stop,))])
    assert stop not in cut.text and free.text.startswith(cut.text)
    assert len(cut.tokens) <= len(free.tokens)


def test_rows_that_hit_a_stop_string_leave_the_batch_without_changing_the_others(tiny_backends):
    lm = tiny_backends["llama"]
    free = lm.generate([GenerateRequest(p, 8, 2) for p in PROMPTS])
    stop = free[1].text[1:3]
    requests = [
        GenerateRequest(p, 8, 2, stop=(stop,) if i == 1 else ()) for i, p in enumerate(PROMPTS)
    ]
    together = lm.generate(requests)
    alone = [lm.generate([r])[0] for r in requests]

    def same(a, b):
        return a.tokens == b.tokens and all(
            x == pytest.approx(y, abs=1e-6)
            for x, y in zip(a.step_top_probs, b.step_top_probs, strict=True)
        )

    assert all(same(a, b) for a, b in zip(together, alone, strict=True))
    assert len(together[1].tokens) < len(free[1].tokens) and stop not in together[1].text
    assert all(same(together[i], free[i]) for i in range(len(PROMPTS)) if i != 1)


def test_span_scores_match_softmax_over_sequence(tiny_models, tiny_backends):
    lm = tiny_backends["roberta-qa"]
    context = "Alice and Bob went to the market. Bob bought apples."
    spans = ((0, 5), (10, 13))
    (result,) = lm.span_scores([SpanScoresRequest("Who bought apples?", context, spans)])
    model = AutoModelForQuestionAnswering.from_pretrained(tiny_models["roberta-qa"]).eval()
    tok = AutoTokenizer.from_pretrained(tiny_models["roberta-qa"])
    enc = tok("Who bought apples?", context, return_offsets_mapping=True, return_tensors="pt")
    offsets = enc.pop("offset_mapping")[0].tolist()
    seq = enc.sequence_ids(0)
    with torch.no_grad():
        out = model(**enc)
    start, end = out.start_logits[0].softmax(-1), out.end_logits[0].softmax(-1)
    for (a, b), p_start, p_end in zip(spans, result.start_probs, result.end_probs, strict=True):
        first = next(
            i
            for i, (o, s) in enumerate(zip(offsets, seq, strict=True))
            if s == 1 and o[0] <= a < o[1]
        )
        last = next(
            i
            for i, (o, s) in enumerate(zip(offsets, seq, strict=True))
            if s == 1 and o[0] < b <= o[1]
        )
        assert p_start == pytest.approx(float(start[first]), rel=1e-4)
        assert p_end == pytest.approx(float(end[last]), rel=1e-4)


def test_kind_that_cannot_answer_is_a_clear_error(tiny_backends):
    with pytest.raises(
        BiaslensError, match="extractive-qa model and cannot answer token_distribution"
    ):
        tiny_backends["roberta-qa"].token_distribution([TokenDistributionRequest("x", ("she",))])
    with pytest.raises(BiaslensError, match="cannot answer span_scores"):
        tiny_backends["llama"].span_scores([SpanScoresRequest("q", "c", ((0, 1),))])


def test_masked_model_without_mask_token(tiny_models, tmp_path):
    import shutil

    folder = tmp_path / "nomask"
    shutil.copytree(tiny_models["bert-mlm"], folder)
    tok = AutoTokenizer.from_pretrained(folder)
    tok.mask_token = None
    tok.save_pretrained(folder)
    lm = load_model(str(folder), BackendConfig(device="cpu"))
    with pytest.raises(BiaslensError, match="neither a mask token"):
        lm.token_distribution([TokenDistributionRequest(f"{MASK} was.", ("she",))])


def test_unknown_model_is_a_clear_error(tmp_path):
    with pytest.raises(BiaslensError, match="unknown model"):
        load_model(str(tmp_path / "missing-model"))
    with pytest.raises(BiaslensError, match="no config.json; not a transformers model folder"):
        load_model(str(tmp_path))


def test_bad_device_and_dtype(tiny_models):
    with pytest.raises(BiaslensError, match="unknown dtype"):
        load_model(str(tiny_models["gpt2"]), BackendConfig(device="cpu", dtype="float8"))
    if not torch.cuda.is_available():
        with pytest.raises(BiaslensError, match="CUDA is not available"):
            load_model(str(tiny_models["gpt2"]), BackendConfig(device="cuda"))


def test_identity_hashes_weights(tiny_models, tiny_backends):
    from biaslens.models.checkpoints.local import weights_sha256

    identity = tiny_backends["gpt2"].identity
    assert identity.weights_sha256 == weights_sha256(tiny_models["gpt2"])
    assert identity.kind.value == "causal-lm" and identity.num_parameters > 0


@pytest.mark.parametrize("name", ["llama", "gpt2"])
def test_shared_prompt_prefix_gives_the_same_distribution(name, tiny_models, tiny_backends):
    """Prompts sharing a long instruction reuse one prefix pass; results equal plain forwards."""
    from biaslens.methods.sib.data import mgc

    lm = tiny_backends[name]
    sentences = [
        "In 1801, [MASK] was a child.",
        "In New Zealand, [MASK] has become a grown up.",
        "In Mali, [MASK] is.",
        "In 2016, [MASK] will become an adolescent.",
    ]
    prompts = [mgc.wrap_in_prompt(s, "A") for s in sentences]
    results = lm.token_distribution([TokenDistributionRequest(p, (" she",), 3) for p in prompts])
    model, tok = _reference(tiny_models, name)
    (she,) = tok(" she", add_special_tokens=False)["input_ids"]
    for prompt, result in zip(prompts, results, strict=True):
        with torch.no_grad():
            probs = model(torch.tensor([tok(prompt)["input_ids"]])).logits[0, -1].softmax(-1)
        assert result.target_probs[0] == pytest.approx(float(probs[she]), rel=1e-4)
        assert list(result.top_probs) == pytest.approx(probs.topk(3).values.tolist(), rel=1e-4)


def test_common_prefix_length():
    from biaslens.common.tokens import common_prefix_length as _common_prefix_length

    assert _common_prefix_length([[1, 2, 3, 4], [1, 2, 3, 5, 6]]) == 3
    assert _common_prefix_length([[1, 2], [1, 2, 3]]) == 1  # keeps one own token each
    assert _common_prefix_length([[7, 1], [8, 1]]) == 0


@pytest.mark.parametrize("name", ["llama", "t5"])
def test_backend_contrastive_generate_matches_library_decoder(name, tiny_models, tiny_backends):
    from transformers import AutoTokenizer

    from biaslens.decoding.contrastive import contrastive_generate
    from biaslens.models.requests import ContrastiveGenerateRequest

    backend = tiny_backends[name]
    xs = ["The doctor said that", "Alice and Bob went to the market because she", "Who?"]
    requests = [
        ContrastiveGenerateRequest(x, "The nurse said", lam=lam, max_new_tokens=6, top_k=20)
        for x in xs
        for lam in (0.0, 5.0)
    ]
    results = backend.contrastive_generate(requests)  # batch size 3: two batches
    tokenizer = AutoTokenizer.from_pretrained(tiny_models[name])
    expected = contrastive_generate(
        backend.model,
        tokenizer,
        [r.x for r in requests],
        "The nurse said",
        [r.lam for r in requests],
        max_new_tokens=6,
        top_k=20,
    )
    assert [r.text for r in results] == [e.text for e in expected]
    assert [r.num_tokens for r in results] == [len(e.token_ids) for e in expected]
    with pytest.raises(BiaslensError, match="cannot answer contrastive_generate"):
        tiny_backends["bert-mlm"].contrastive_generate(requests)


@pytest.mark.parametrize("name", ["llama", "gpt2"])
def test_shared_prefix_greedy_equals_generate_per_prompt(name, tiny_models):
    """Paper-mode decoding runs the prompts' common prefix once (MGC prompts share most of
    theirs): the tokens and each step's top-k equal unbatched ``model.generate``."""
    from biaslens.methods.sib.data import mgc
    from biaslens.models.backends.hf.generation import greedy_causal

    lm = load_model(str(tiny_models[name]), BackendConfig(device="cpu", batch_size=4))
    sentences = mgc.build_mgc()["sentence"].iloc[::97].head(7)
    prompts = [mgc.wrap_in_prompt(s, "A") for s in sentences]
    encoded = lm.encode_prompts(prompts)
    from biaslens.common.tokens import common_prefix_length

    assert common_prefix_length(encoded) >= 8  # the shared-prefix path is exercised
    # stop on a token the model does produce, so that rows finish at different steps
    tokens = greedy_causal(lm, encoded, 6, 3)[0].tolist()

    def stops(token):  # how many tokens each row keeps if ``token`` ends generation
        return {row.index(token) + 1 if token in row else len(row) for row in tokens}

    stop = max({t for row in tokens for t in row}, key=lambda t: len(stops(t)))
    assert len(stops(stop)) > 1
    lm.tokenizer.eos_token = lm.tokenizer.convert_ids_to_tokens(stop)
    try:
        results = lm.generate([GenerateRequest(p, 6, 3) for p in prompts])
        model = lm.model
        for ids, result in zip(encoded, results, strict=True):
            with torch.no_grad():
                out = model.generate(
                    torch.tensor([ids]),
                    max_new_tokens=6,
                    do_sample=False,
                    output_logits=True,
                    return_dict_in_generate=True,
                    eos_token_id=lm.tokenizer.eos_token_id,
                    pad_token_id=lm.pad_id,
                )
            new = out.sequences[0, len(ids) :].tolist()
            eos = lm.tokenizer.eos_token_id
            new = new[: new.index(eos) + 1] if eos in new else new
            assert list(result.tokens) == [lm.decode_token(t) for t in new]
            for step, logits in enumerate(out.logits[: len(new)]):
                top = logits[0].float().softmax(-1).topk(3)
                assert list(result.step_top_probs[step]) == pytest.approx(
                    top.values.tolist(), abs=1e-5
                )
        assert len({len(r.tokens) for r in results}) > 1  # some rows stopped early
    finally:
        lm.tokenizer.eos_token = lm.tokenizer.convert_ids_to_tokens(model.config.eos_token_id)
