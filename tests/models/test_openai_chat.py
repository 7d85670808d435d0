"""The chat endpoint (``/v1/chat/completions`` with top log-probabilities): the same greedy
replies and top-k as the ``hf`` backend in ``--chat`` mode, what it cannot answer refused before
any request, and the reply shapes other providers send."""

from __future__ import annotations

import pytest

from biaslens.errors import BiaslensError
from biaslens.models import (
    BackendConfig,
    ChoiceLogprobsRequest,
    ContrastiveGenerateRequest,
    GenerateRequest,
    TokenDistributionRequest,
    load_model,
)
from biaslens.models.backends.openai.replies import ServerError
from tests.conftest import SERVED_NAME as NAME

PROMPTS = ["Who is the nurse?", "In 1901, the doctor said that", "Complete: she"]
SYSTEM = "Answer with one word."


def chat_endpoint(served, **options) -> object:
    config = BackendConfig(
        backend="openai", base_url=options.pop("base_url", served["url"]), chat=True,
        concurrency=2, **options,
    )  # fmt: skip
    return load_model(NAME, config)


@pytest.fixture(scope="module")
def both(served):
    hf = load_model(str(served["folder"]), BackendConfig(device="cpu", chat=True, system=SYSTEM))
    lm = chat_endpoint(served, system=SYSTEM)
    yield hf, lm
    lm.close()
    hf.close()


@pytest.fixture
def faults(served):
    faults = served["faults"]
    yield faults
    faults.chat = "ok"


def test_without_a_tokenizer_chat_goes_to_the_chat_endpoint(both, served):
    _, lm = both
    described = lm.identity.describe()
    assert described["endpoint"] == "chat/completions" and described["system"] == SYSTEM
    assert [t.value for t in lm.capabilities] == ["generate", "sample"]
    sent = served["faults"].requests[-1]
    assert sent["messages"][0] == {"role": "system", "content": SYSTEM}
    assert sent["logprobs"] is True and sent["top_logprobs"] == 5
    with_tokenizer = load_model(
        NAME,
        BackendConfig(backend="openai", base_url=served["url"], chat=True,
                      tokenizer=str(served["folder"])),
    )  # fmt: skip
    assert "endpoint" not in with_tokenizer.identity.describe()
    assert "token_distribution" in {t.value for t in with_tokenizer.capabilities}
    assert lm.identity.cache_key() != with_tokenizer.identity.cache_key()
    with_tokenizer.close()


def test_greedy_replies_and_top_k_equal_hf_in_chat_mode(both, served):
    hf, lm = both
    requests = [GenerateRequest(p, max_new_tokens=6, top_k=5) for p in PROMPTS]
    for a, b in zip(hf.generate(requests), lm.generate(requests), strict=True):
        assert b.text == a.text and b.tokens == a.tokens
        assert b.step_top_tokens == a.step_top_tokens
        for p, q in zip(a.step_top_probs, b.step_top_probs, strict=True):
            assert q == pytest.approx(p, abs=1e-5)
    last = served["faults"].requests[-1]
    assert last["temperature"] == 0.0 and last["max_tokens"] == 6
    assert last["messages"][-1]["role"] == "user"


def test_stop_strings_cut_the_reply_as_on_hf(both):
    hf, lm = both
    request = GenerateRequest(PROMPTS[1], max_new_tokens=8, top_k=2)
    full = hf.generate([request])[0]
    assert len(full.tokens) == 8
    stop = full.tokens[2].strip() or full.tokens[2]
    cut = GenerateRequest(PROMPTS[1], max_new_tokens=8, top_k=2, stop=(stop,))
    a, b = hf.generate([cut])[0], lm.generate([cut])[0]
    assert b.text == a.text and b.tokens == a.tokens and len(b.tokens) < 8
    assert b.step_top_tokens == a.step_top_tokens


@pytest.mark.parametrize(
    ("request_", "says"),
    [
        (TokenDistributionRequest("a", (" she",), 5), "--mode paper needs only the top-k"),
        (ChoiceLogprobsRequest("a", (" b", " c")), "--qa-mode first-token"),
        (ContrastiveGenerateRequest("a", "b", 1.0), "CID, Eq. 1"),
    ],
)
def test_what_a_chat_endpoint_cannot_answer_is_refused_before_any_request(
    both, served, request_, says
):
    _, lm = both
    sent = len(served["faults"].requests)
    kind = type(request_).request_type.value
    with pytest.raises(BiaslensError, match=f"cannot answer {kind}.*{says}|{says}.*{kind}"):
        lm.answer([request_])
    with pytest.raises(BiaslensError, match="/v1/completions endpoint and give its tokenizer"):
        lm.require(kind)
    assert len(served["faults"].requests) == sent


def test_tokens_without_bytes_fields_read_the_same(both, faults):
    _, lm = both
    request = GenerateRequest(PROMPTS[0], max_new_tokens=4, top_k=3)
    with_bytes = lm.generate([request])[0]
    faults.chat = "no-bytes"
    assert lm.generate([request])[0] == with_bytes


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ("no-logprobs", "no log-probabilities .*top_logprobs: 3 were asked"),
        ("fewer", "step 1 of the reply has 2 top log-probabilities where 3 were asked"),
        ("refusal", "the model refused the prompt 'Who is the nurse\\?' \\(\"I can't.\"\\)"),
    ],
)
def test_replies_that_cannot_be_scored_are_named(both, faults, shape, message):
    _, lm = both
    faults.chat = shape
    with pytest.raises(ServerError, match=message):
        lm.generate([GenerateRequest(PROMPTS[0], max_new_tokens=4, top_k=3)])


def test_a_chat_endpoint_without_log_probabilities_answers_only_sampled_replies(served, faults):
    faults.chat = "no-logprobs"
    lm = chat_endpoint(served)
    try:
        assert [t.value for t in lm.capabilities] == ["sample"]
        assert "sampled replies only" in lm.identity.describe()["scoring"]
        with pytest.raises(BiaslensError, match="returns no log-probabilities"):
            lm.generate([GenerateRequest(PROMPTS[0], max_new_tokens=4, top_k=3)])
    finally:
        lm.close()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"backend": "openai", "endpoint": "chat"}, "--endpoint chat .* needs --chat"),
        ({"endpoint": "chat", "chat": True}, "--endpoint .* needs --backend openai"),
        ({"backend": "openai", "endpoint": "messages"}, "unknown endpoint 'messages'"),
    ],
)
def test_endpoint_options_that_cannot_apply_are_refused(options, message):
    with pytest.raises(BiaslensError, match=message):
        BackendConfig(**options)


def test_completions_with_chat_and_no_tokenizer_is_refused(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    config = BackendConfig(
        backend="openai", base_url="http://127.0.0.1:9/v1", chat=True, endpoint="completions"
    )
    with pytest.raises(BiaslensError, match="needs the model's tokenizer"):
        load_model("some-served-model", config)


def test_faults_on_the_chat_endpoint_are_retried(both, served, monkeypatch):
    from biaslens.models.backends.openai import http_client
    from tests.support.fault_proxy import fault_proxy

    hf, _ = both
    waits = []

    async def record(seconds):
        waits.append(seconds)

    monkeypatch.setattr(http_client, "_sleep", record)
    request = [GenerateRequest(PROMPTS[2], max_new_tokens=3, top_k=2)]
    with fault_proxy(served["url"].removesuffix("/v1")) as proxy:
        lm = chat_endpoint(served, base_url=proxy.url + "/v1", max_retries=3, system=SYSTEM)
        proxy.plan.extend(["429:2", "503"])
        assert lm.generate(request)[0].text == hf.generate(request)[0].text
        assert proxy.faults == 2 and waits[0] == 2.0
        lm.close()


def test_max_requests_stops_a_chat_run_that_resumes(served, tmp_path):
    from biaslens.runner import run_method

    options = {"mode": "paper", "limit": 1, "report": False, "output": tmp_path / "run"}
    config = BackendConfig(backend="openai", base_url=served["url"], chat=True, max_requests=3)
    with pytest.raises(BiaslensError, match="stopped after 3 new request"):
        run_method("sib-mgc", model=NAME, backend=config, **options)
    sent = len(served["faults"].requests)
    whole = run_method("sib-mgc", model=NAME, backend=config.with_options(max_requests=None),
                       **options)  # fmt: skip
    assert whole.cache_stats["cached"] == 3
    assert len(served["faults"].requests) - sent == whole.cache_stats["computed"] + 1  # + probe
