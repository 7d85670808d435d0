"""The ``openai`` backend against an OpenAI-compatible server whose log-probabilities come from
a real forward pass of a tiny model: the same answers as ``hf``, the probe, and faults."""

from __future__ import annotations

import math

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
from tests.conftest import SERVED_NAME as NAME
from tests.support.fault_proxy import fault_proxy

PROMPTS = ["Answer: she said", "The nurse said that", "In 1901, the doctor said that"]
TARGETS = (" she", " he", " they", " her")


def openai(served, **options):
    config = BackendConfig(
        backend="openai",
        base_url=options.pop("base_url", served["url"]),
        tokenizer=str(served["folder"]),
        concurrency=4,
        **options,
    )
    return load_model(NAME, config)


@pytest.fixture(scope="module")
def both(served, tiny_backends):
    lm = openai(served)
    yield tiny_backends["llama"], lm
    lm.close()


def test_identity_and_capabilities(both):
    _, lm = both
    assert lm.identity.backend == "openai" and lm.max_length == 256
    described = lm.identity.describe()
    assert described["base_url"].startswith("http://127.0.0.1:")
    assert "token ids" in described["scoring"] and "logprob_token_ids" in described["scoring"]
    assert set(t.value for t in lm.capabilities) == {
        "token_distribution", "choice_logprobs", "generate", "contrastive_generate", "sample",
    }  # fmt: skip


def test_token_distributions_equal_hf(both):
    hf, lm = both
    requests = [TokenDistributionRequest(p, TARGETS, 5) for p in PROMPTS]
    for a, b in zip(hf.token_distribution(requests), lm.token_distribution(requests), strict=True):
        assert [math.log(p) for p in b.target_probs] == pytest.approx(
            [math.log(p) for p in a.target_probs], abs=1e-4
        )
        assert b.target_ids == a.target_ids and b.top_tokens == a.top_tokens
        assert b.top_probs == pytest.approx(a.top_probs, rel=1e-4)


def test_echo_scoring_equals_the_extension(served, both):
    """Servers without vLLM's logprob_token_ids are scored by echo: the same numbers."""
    hf, _ = both
    lm = openai(served)
    lm.probe["token_ids_extension"] = False
    requests = [ChoiceLogprobsRequest(p, (" she", " he was")) for p in PROMPTS]
    echoed = lm.choice_logprobs(requests)
    assert any(r.get("echo") for r in served["faults"].requests[-3:])
    for a, b in zip(hf.choice_logprobs(requests), echoed, strict=True):
        assert b.logprobs == pytest.approx(a.logprobs, abs=1e-4)
    lm.close()


def test_a_server_without_token_ids_offers_generation_only(served):
    faults = served["faults"]
    faults.token_ids = False  # the server forgets vLLM's extensions -> echo scoring (and refusal)
    try:
        with pytest.raises(BiaslensError, match="does not return token ids"):
            openai(served).choice_logprobs([ChoiceLogprobsRequest("a", (" b",))])
    finally:
        faults.token_ids = True


def test_choice_logprobs_equal_hf(both):
    hf, lm = both
    requests = [ChoiceLogprobsRequest(p, (" she", " he was", " the doctor said")) for p in PROMPTS]
    for a, b in zip(hf.choice_logprobs(requests), lm.choice_logprobs(requests), strict=True):
        assert b.logprobs == pytest.approx(a.logprobs, abs=1e-4) and b.num_tokens == a.num_tokens


def test_generation_and_cid_equal_hf(both):
    hf, lm = both
    requests = [GenerateRequest(p, 8, 3, stop=(".",)) for p in PROMPTS]
    for a, b in zip(hf.generate(requests), lm.generate(requests), strict=True):
        assert b.tokens == a.tokens and b.text == a.text
        assert b.step_top_tokens == a.step_top_tokens
    cid = [
        ContrastiveGenerateRequest(PROMPTS[1], PROMPTS[2], lam, max_new_tokens=6, top_k=10)
        for lam in (0.0, 5.0, 50.0)
    ]
    assert lm.contrastive_generate(cid) == hf.contrastive_generate(cid)


def test_misaligned_echo_is_refused_by_the_probe(served):
    served["faults"].echo = "shifted"
    try:
        with pytest.raises(
            BiaslensError, match=r"misaligned prompt log-probabilities \(shifted by"
        ):
            openai(served)
    finally:
        served["faults"].echo = "ok"


def test_missing_echo_leaves_generation_only(served):
    served["faults"].echo = "missing"
    try:
        lm = openai(served)
    finally:
        served["faults"].echo = "ok"
    with pytest.raises(BiaslensError, match="returns no prompt log-probabilities"):
        lm.require("choice_logprobs")
    result = lm.generate([GenerateRequest("The nurse said that", 4, 2)])[0]
    assert len(result.step_top_tokens) == 4
    lm.close()


def test_wrong_key_unknown_model_and_no_server(served, tiny_models):
    from biaslens.testing.fake_server import free_port

    served["faults"].api_key = "right-key"
    try:
        with pytest.raises(
            BiaslensError, match=r"refused the API key \(HTTP 401\); set \$NO_SUCH_KEY"
        ):
            openai(served, api_key_env="NO_SUCH_KEY")
    finally:
        served["faults"].api_key = None
    with pytest.raises(BiaslensError, match="does not serve a model named 'other'"):
        load_model(
            "other",
            BackendConfig(
                backend="openai", base_url=served["url"], tokenizer=str(served["folder"])
            ),
        )
    with pytest.raises(BiaslensError, match="connection failed .* after 2 attempt"):
        openai(served, base_url=f"http://127.0.0.1:{free_port()}/v1", max_retries=1)
    with pytest.raises(BiaslensError, match="needs the server's address: --base-url"):
        load_model(NAME, BackendConfig(backend="openai"))


@pytest.mark.parametrize("fault", ["429", "500", "garbage", "drop", "stall"])
def test_transient_faults_are_retried(fault, served, both):
    hf, _ = both
    with fault_proxy(served["url"].removesuffix("/v1")) as proxy:
        proxy.stall_seconds = 3.0
        lm = openai(served, base_url=proxy.url + "/v1", timeout=1.0, max_retries=3)
        proxy.plan.extend([fault, fault])
        request = [ChoiceLogprobsRequest(PROMPTS[0], (" she",))]
        assert lm.choice_logprobs(request)[0].logprobs == pytest.approx(
            hf.choice_logprobs(request)[0].logprobs, abs=1e-4
        )
        assert proxy.faults == 2
        lm.close()


def test_retry_after_is_honoured(served, monkeypatch):
    from biaslens.models.backends.openai import http_client

    waits = []

    async def record(seconds):
        waits.append(seconds)

    monkeypatch.setattr(http_client, "_sleep", record)
    with fault_proxy(served["url"].removesuffix("/v1")) as proxy:
        lm = openai(served, base_url=proxy.url + "/v1", max_retries=3)
        proxy.plan.extend(["429:7", "503"])
        assert lm.choice_logprobs([ChoiceLogprobsRequest(PROMPTS[0], (" she",))])[0].logprobs
        assert proxy.faults == 2
        assert waits[0] == 7.0  # the server's wait, not the 0.125-0.375 s back-off
        assert waits[1] < 1.0  # no Retry-After: back to the exponential back-off
        proxy.plan.extend(["429:3600"])
        with pytest.raises(BiaslensError, match=r"asks to wait 3600 s \(Retry-After\); finished"):
            lm.choice_logprobs([ChoiceLogprobsRequest(PROMPTS[1], (" he",))])
        lm.close()


def test_retry_after_reads_seconds_and_http_dates():
    from biaslens.models.backends.openai.http_client import backoff, retry_after

    assert retry_after("120") == 120.0 and retry_after(" 1.5 ") == 1.5
    assert retry_after("-3") == 0.0
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == pytest.approx(10.0)
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412490.0) == 0.0
    assert retry_after(None) is None and retry_after("soon") is None
    assert backoff(1, 30.0) == 30.0 and 0.125 <= backoff(1, None) <= 0.375
    assert 4.0 <= backoff(10, None) <= 12.0  # capped at 8 s, with jitter


def test_persistent_faults_end_in_one_clear_error(served):
    with fault_proxy(served["url"].removesuffix("/v1")) as proxy:
        lm = openai(served, base_url=proxy.url + "/v1", max_retries=2)
        proxy.plan.extend(["500"] * 10)
        with pytest.raises(
            BiaslensError, match=r"HTTP 500 after 3 attempt\(s\); finished answers are kept"
        ):
            lm.choice_logprobs([ChoiceLogprobsRequest(PROMPTS[0], (" she",))])
        lm.close()


def test_a_server_that_dies_mid_run_loses_no_finished_answer(served, tmp_path):
    from biaslens.methods.sib.mgc.settings import make_settings
    from tests.helpers import run_mgc

    settings = make_settings(model=NAME, limit=2, w_kinds=("dates",))
    with fault_proxy(served["url"].removesuffix("/v1")) as proxy:
        config = BackendConfig(
            backend="openai", base_url=proxy.url + "/v1", tokenizer=str(served["folder"]),
            concurrency=2, max_retries=1,
        )  # fmt: skip
        proxy.down_after = 300  # the probe's requests, then about a third of the run (845)
        with pytest.raises(BiaslensError, match="finished answers are kept in the run's cache"):
            run_mgc(settings, tmp_path, config)
        assert not (tmp_path / "summary.json").exists()
        proxy.down, proxy.down_after = False, None
        resumed = run_mgc(settings, tmp_path, config)
        assert resumed.cache_stats["cached"] > 0 and resumed.cache_stats["computed"] > 0
        assert sum(resumed.cache_stats.values()) == 60
        again = run_mgc(settings, tmp_path, config)
        assert again.cache_stats == {"cached": 60, "computed": 0}
    assert resumed.summary["model"]["backend"] == "openai"
    assert "api_key" not in str(resumed.summary).replace("api_key_env", "")


@pytest.mark.parametrize("value", [math.nan, math.inf, 0.5])
def test_impossible_log_probabilities_are_refused_and_never_cached(value, served, tmp_path):
    from biaslens.store.cache import CachedLM
    from biaslens.store.run import RunStore

    lm = openai(served)
    try:
        served["faults"].logprob = value
        with RunStore(tmp_path / "run", "test", {}, {}) as store:
            cached = CachedLM(lm, lambda: store.cache)
            with pytest.raises(BiaslensError, match=rf"server {served['url']}.*log-probability"):
                cached.token_distribution([TokenDistributionRequest(PROMPTS[0], TARGETS)])
            with pytest.raises(BiaslensError, match="log-probability"):
                cached.choice_logprobs([ChoiceLogprobsRequest(PROMPTS[1], (" she", " he"))])
            assert cached.stats.get("computed", 0) == 0
        served["faults"].logprob = None
        with RunStore(tmp_path / "run", "test", {}, {}) as store:
            cached = CachedLM(lm, lambda: store.cache)
            (answer,) = cached.token_distribution([TokenDistributionRequest(PROMPTS[0], TARGETS)])
            assert all(math.isfinite(p) for p in answer.target_probs)
            assert cached.stats == {"cached": 0, "computed": 1}
    finally:
        served["faults"].logprob = None
        lm.close()


def test_chat_prompts_are_sent_as_the_templates_ids_and_equal_hf(served):
    hf = load_model(str(served["folder"]), BackendConfig(device="cpu", chat=True, system="Hi."))
    lm, plain = openai(served, chat=True, system="Hi."), openai(served)
    assert lm.identity.cache_key() != plain.identity.cache_key()
    plain.close()
    requests = [TokenDistributionRequest(p, TARGETS, 5) for p in PROMPTS]
    for a, b in zip(hf.token_distribution(requests), lm.token_distribution(requests), strict=True):
        assert [math.log(p) for p in b.target_probs] == pytest.approx(
            [math.log(p) for p in a.target_probs], abs=1e-4
        )
    request = [GenerateRequest(PROMPTS[1], max_new_tokens=5, top_k=3)]
    assert lm.generate(request)[0].text == hf.generate(request)[0].text
    lm.close()
    hf.close()
