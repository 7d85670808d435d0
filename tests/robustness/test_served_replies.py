"""Served replies that would inflate or invent probability are refused before anything is
cached or scored: a reply is a claim about a distribution and is checked as one (duplicate
tokens, a step's mass over 1, values that are not log-probabilities, more steps than asked,
every reply empty)."""

from __future__ import annotations

import math

import pytest

from biaslens.models import BackendConfig, GenerateRequest, TokenDistributionRequest, load_model
from biaslens.models.backends.openai.replies import ChatCompletion, Completion, ServerError, parse
from biaslens.models.runtime import reply_checks as checks
from tests.conftest import SERVED_NAME as NAME

WHERE = "http://server/v1"


# ------------------------------------------------------------------ the rules, by hand
def test_a_step_whose_probabilities_add_up_to_at_most_one_is_a_distribution():
    checks.check_step([("a", math.log(0.6)), ("b", math.log(0.4005))], WHERE)  # 1.0005
    checks.check_step([("a", math.log(0.5)), ("b", -math.inf)], WHERE)  # p = 0 is an answer
    checks.check_step([], WHERE)


@pytest.mark.parametrize(
    "pairs",
    [
        [("a", math.log(0.6)), ("b", math.log(0.402))],  # 1.002: over the 1e-3 tolerance
        [("she", -0.01), ("her", -0.01), ("female", -0.01)],  # 2.97: three words near p = 1
        [("she", 0.0), ("her", 0.0)],  # log p = 0 for two tokens: 200%
    ],
)
def test_a_step_with_more_than_all_the_mass_is_refused(pairs):
    total = sum(math.exp(v) for _, v in pairs)
    with pytest.raises(ServerError, match=f"add up to {total:.4g} > 1"):
        checks.check_step(pairs, WHERE)


def test_the_same_token_twice_in_one_step_is_refused():
    with pytest.raises(ServerError, match="'she' is listed twice"):
        checks.check_step([("she", math.log(0.3)), ("he", -3.0), ("she", math.log(0.3))], WHERE)


@pytest.mark.parametrize("value", [False, True, "-0.1", float("nan"), float("inf"), 0.5, None])
def test_values_that_are_not_log_probabilities_are_refused(value):
    with pytest.raises(ServerError, match="is not a log-probability"):
        checks.check_logprob(value, WHERE)


@pytest.mark.parametrize("value", [0.0, 5e-5, -1.0, -math.inf, -7])
def test_log_probabilities_are_accepted(value):
    assert checks.check_logprob(value, WHERE) == float(value)


def test_more_steps_than_asked_are_refused():
    checks.check_step_count(20, 20, WHERE)
    with pytest.raises(ServerError, match="1001 steps where at most 20 were asked"):
        checks.check_step_count(1001, 20, WHERE)


def test_a_batch_of_empty_replies_is_refused_but_one_empty_reply_is_an_answer():
    checks.check_not_all_empty([0, 3], [4, 4], WHERE)  # one model stopped at once: an answer
    checks.check_not_all_empty([0], [0], WHERE)  # nothing asked, nothing answered
    with pytest.raises(ServerError, match="every one of the 2 replies is empty"):
        checks.check_not_all_empty([0, 0], [4, 4], WHERE)


@pytest.mark.parametrize("value", [False, "-0.1", "x"])
def test_a_log_probability_that_is_not_a_json_number_does_not_fit_the_protocol(value):
    chat = {"choices": [{"message": {"content": "a"}, "logprobs": {"content": [
        {"token": "a", "logprob": value, "top_logprobs": []}]}}]}  # fmt: skip
    with pytest.raises(ServerError, match="logprob: .*json number"):
        parse(ChatCompletion, chat, WHERE, "/chat/completions")
    completion = {"choices": [{"text": "a", "logprobs": {"top_logprobs": [{"a": value}]}}]}
    with pytest.raises(ServerError, match="top_logprobs.*json number"):
        parse(Completion, completion, WHERE, "/completions")


# ------------------------------------------------------------------ end to end, fake server
@pytest.fixture(scope="module")
def chat_lm(served):
    lm = load_model(
        NAME, BackendConfig(backend="openai", base_url=served["url"], chat=True, concurrency=2)
    )
    yield lm
    lm.close()


@pytest.fixture
def faults(served):
    faults = served["faults"]
    yield faults
    faults.chat, faults.chat_logprob, faults.logprob = "ok", None, None


REQUESTS = [
    GenerateRequest("Who is the nurse?", max_new_tokens=4, top_k=3),
    GenerateRequest("In 1901, the doctor said that", max_new_tokens=4, top_k=3),
]


def test_partial_characters_that_read_alike_are_not_duplicates(chat_lm, faults):
    """Byte tokens of one step all read as U+FFFD (the tiny model's top lists hold several):
    distinct tokens, not a token listed twice."""
    from biaslens.models.backends.openai.chat import _token_key
    from biaslens.models.backends.openai.replies import ChatTopLogprob

    partial = [ChatTopLogprob(token="\ufffd", logprob=-2.0, bytes=[239, 191, 189])] * 2
    keys = [_token_key(entry, i) for i, entry in enumerate(partial)]
    assert keys[0] != keys[1]
    same = [ChatTopLogprob(token=" she", logprob=-2.0)] * 2
    assert _token_key(same[0], 0) == _token_key(same[1], 1)


def test_the_unfaulted_chat_replies_are_distributions(chat_lm, faults):
    for result in chat_lm.generate(REQUESTS):
        assert result.step_top_probs and all(sum(s) <= 1 + 1e-3 for s in result.step_top_probs)


@pytest.mark.parametrize(
    ("shape", "value", "message"),
    [
        ("duplicate", None, "listed twice in one step"),
        ("ok", -0.01, "add up to 2.97 > 1"),
        ("ok", 0.0, "add up to 3 > 1"),
        ("ok", False, "logprob: .*json number"),
        ("ok", "-0.1", "logprob: .*json number"),
        ("overlong", None, "13 steps where at most 4 were asked"),
        ("empty-after-probe", None, "every one of the 2 replies is empty"),
    ],
)
def test_chat_replies_that_claim_an_impossible_distribution_are_refused(
    chat_lm, faults, shape, value, message
):
    faults.chat, faults.chat_logprob = shape, value
    with pytest.raises(ServerError, match=message):
        chat_lm.generate(REQUESTS)


def test_completions_at_log_probability_zero_are_refused_not_summed_to_600_percent(served, faults):
    """The fake server's every log-probability at 0 would make six female words 600%."""
    lm = load_model(NAME, BackendConfig(backend="openai", base_url=served["url"],
                                        tokenizer=str(served["folder"])))  # fmt: skip
    request = TokenDistributionRequest(
        "Answer: she", ("she", "her", "female", "he", "him", "his"), top_k=5
    )
    try:
        honest = lm.token_distribution([request])[0]
        assert sum(honest.target_probs) <= 1 + 1e-3
        faults.logprob = 0.0
        with pytest.raises(ServerError, match="add up to 5 > 1"):
            lm.token_distribution([request])
    finally:
        lm.close()


def test_a_refused_reply_reaches_no_cache_and_no_result(served, faults, tmp_path):
    import biaslens
    from biaslens.store.cache import RequestCache

    faults.chat = "duplicate"
    with pytest.raises(ServerError, match="listed twice"):
        biaslens.run(
            "sib-mgc", model=NAME, backend="openai", base_url=served["url"], chat=True,
            mode="paper", prompts=("A",), w_kinds=("dates",), limit=1,
            output=tmp_path / "run", report=False, no_cache=True,
        )  # fmt: skip
    assert not (tmp_path / "run" / "summary.json").exists()
    cache = tmp_path / "run" / "requests.sqlite"  # the run's own cache (no_cache)
    if cache.exists():
        stored = RequestCache(cache)
        try:
            assert stored.count() == 0
        finally:
            stored.close()
