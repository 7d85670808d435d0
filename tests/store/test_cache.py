"""The request cache: hits, resumption after an interruption, nothing lost."""

from __future__ import annotations

import pytest

from biaslens.models.base import LM, ModelIdentity, ModelKind
from biaslens.models.requests import (
    ChoiceLogprobsRequest,
    ChoiceLogprobsResult,
    TokenDistributionRequest,
    TokenDistributionResult,
)
from biaslens.store.cache import CachedLM, RequestCache


class CountingLM(LM):
    """A fake backend: the probability of a target is its length / 100; can fail on demand."""

    def __init__(self, fail_after: int | None = None) -> None:
        self.identity = ModelIdentity("fake", ModelKind.CAUSAL, "abc", 1)
        self.computed: list[str] = []
        self.fail_after = fail_after

    def token_distribution(self, requests, progress=None):
        out = []
        for r in requests:
            if self.fail_after is not None and len(self.computed) >= self.fail_after:
                raise KeyboardInterrupt
            self.computed.append(r.text)
            out.append(
                TokenDistributionResult(
                    tuple(len(t) / 100 for t in r.targets),
                    tuple((len(t),) for t in r.targets),
                    ("x",),
                    (0.5,),
                )
            )
        return out

    def choice_logprobs(self, requests, progress=None):
        return [
            ChoiceLogprobsResult(tuple(-float(len(c)) for c in r.choices), (1,) * len(r.choices))
            for r in requests
        ]

    def span_scores(self, requests, progress=None):
        raise NotImplementedError

    def generate(self, requests, progress=None):
        raise NotImplementedError


def _requests(n):
    return [TokenDistributionRequest(f"prompt {i}", (" she", " he"), 5) for i in range(n)]


def test_second_pass_is_served_from_the_cache(tmp_path):
    cache = RequestCache(tmp_path / "requests.sqlite")
    inner = CountingLM()
    lm = CachedLM(inner, cache, chunk_size=4)
    first = lm.token_distribution(_requests(10))
    assert len(inner.computed) == 10 and lm.stats == {"cached": 0, "computed": 10}
    ticks = []
    second = lm.token_distribution(_requests(10), ticks.append)
    assert second == first and len(inner.computed) == 10
    assert lm.stats == {"cached": 10, "computed": 10} and sum(ticks) == 10
    assert isinstance(second[0].target_ids[0], tuple)


def test_interrupted_run_resumes_without_recomputing(tmp_path):
    path = tmp_path / "requests.sqlite"
    inner = CountingLM(fail_after=9)
    lm = CachedLM(inner, RequestCache(path), chunk_size=4)
    with pytest.raises(KeyboardInterrupt):
        lm.token_distribution(_requests(12))
    assert RequestCache(path).count() == 8  # two full chunks were committed before the stop
    resumed = CountingLM()
    lm2 = CachedLM(resumed, RequestCache(path), chunk_size=4)
    results = lm2.token_distribution(_requests(12))
    assert len(resumed.computed) == 4 and lm2.stats == {"cached": 8, "computed": 4}
    assert results == CachedLM(
        CountingLM(), RequestCache(tmp_path / "fresh.sqlite")
    ).token_distribution(_requests(12))


@pytest.mark.parametrize("limit", [1, 4, 6, 12])
def test_max_new_stops_after_exactly_that_many_answers_and_resumes(tmp_path, limit):
    from biaslens.store.cache import RequestLimitReached

    path = tmp_path / "requests.sqlite"
    inner = CountingLM()
    lm = CachedLM(inner, RequestCache(path), chunk_size=4, max_new=limit)
    if limit < 10:
        with pytest.raises(RequestLimitReached, match=f"stopped after {limit} new request"):
            lm.token_distribution(_requests(10))
    else:
        lm.token_distribution(_requests(10))
    assert len(inner.computed) == min(limit, 10) == RequestCache(path).count()
    again = CachedLM(CountingLM(), RequestCache(path), chunk_size=4, max_new=limit)
    if 2 * limit < 10:  # a rerun with the same limit gets as many new answers again
        with pytest.raises(RequestLimitReached):
            again.token_distribution(_requests(10))
    else:
        again.token_distribution(_requests(10))
    assert again.stats["cached"] == min(limit, 10)
    assert RequestCache(path).count() == min(2 * limit, 10)
    rest = CachedLM(CountingLM(), RequestCache(path), chunk_size=4)
    assert rest.token_distribution(_requests(10)) == CachedLM(
        CountingLM(), RequestCache(tmp_path / "fresh.sqlite")
    ).token_distribution(_requests(10))


def test_duplicate_requests_are_computed_once(tmp_path):
    inner = CountingLM()
    lm = CachedLM(inner, RequestCache(tmp_path / "c.sqlite"))
    results = lm.token_distribution(_requests(3) + _requests(3))
    assert len(inner.computed) == 3 and results[:3] == results[3:]


def test_cache_key_includes_model_identity_and_request_type(tmp_path):
    cache = RequestCache(tmp_path / "c.sqlite")
    lm = CachedLM(CountingLM(), cache)
    lm.token_distribution(_requests(2))
    other = CountingLM()
    other.identity = ModelIdentity("fake", ModelKind.CAUSAL, "different-weights", 1)
    CachedLM(other, cache).token_distribution(_requests(2))
    assert len(other.computed) == 2
    scored = lm.choice_logprobs([ChoiceLogprobsRequest("p", (" a", " bb"))])
    assert scored[0].logprobs == (-2.0, -3.0)


def test_cache_keys_and_stored_answers_are_those_of_dataclasses_asdict():
    """The request key and the stored answer are built from ``as_fields`` (no deep copy): the
    JSON must stay byte-identical to ``dataclasses.asdict``'s, or every existing cache would
    be silently missed."""
    import dataclasses
    import json

    from biaslens.models import requests as R
    from biaslens.store.cache import request_key

    examples = [
        R.TokenDistributionRequest("The [MASK] ran.", ("she", "he"), 5),
        R.SpanScoresRequest("Who?", "Ann met Bob.", ((0, 3), (8, 11)), True),
        R.AnswerSpanRequest("Who?", "Ann met Bob.", 12),
        R.ChoiceLogprobsRequest("Q:", (" a", " b c")),
        R.GenerateRequest("Hi", 3, 2, ("\n",)),
        R.ContrastiveGenerateRequest("x", "y", 5.0, 4, 10, ("!",), True, 0.7, 3),
        R.TokenDistributionResult((0.1,), ((1, 2),), ("a",), (0.5,)),
        R.GenerateResult("t", ("t",), (("t", "u"),), ((0.9, 0.1),)),
    ]
    for value in examples:
        assert json.dumps(R.as_fields(value)) == json.dumps(dataclasses.asdict(value))
        if hasattr(type(value), "request_type"):
            expected = json.dumps(
                ["m", type(value).request_type.value, dataclasses.asdict(value)],
                sort_keys=True,
                ensure_ascii=False,
            )
            import hashlib

            assert request_key("m", value) == hashlib.sha256(expected.encode()).hexdigest()


class SlowLM(CountingLM):
    """A model that takes ``seconds`` per request on a clock of the test's own (no waiting),
    and remembers the size of every chunk it was given."""

    def __init__(self, seconds: float, clock: list[float], fail_after: int | None = None):
        super().__init__(fail_after)
        self.seconds, self.clock, self.chunks = seconds, clock, []

    def token_distribution(self, requests, progress=None):
        self.chunks.append(len(requests))
        out = super().token_distribution(requests, progress)
        self.clock[0] += self.seconds * len(requests)
        return out


def _timed(inner: SlowLM, cache: RequestCache) -> CachedLM:
    lm = CachedLM(inner, cache)  # a local model: no chunk size given
    lm.clock = lambda: inner.clock[0]
    return lm


@pytest.mark.parametrize("seconds", [2.0, 0.5, 0.001])
def test_a_local_models_chunks_are_a_few_seconds_of_its_work(tmp_path, seconds):
    """Answers are kept (and progress moves) about every CHUNK_SECONDS of the model's work,
    whatever its speed: a slow model's chunks are small, a fast one's reach the 256 cap."""
    from biaslens.store.cache import CHUNK, CHUNK_SECONDS, FIRST_CHUNK

    inner = SlowLM(seconds, [0.0])
    ticks: list[int] = []
    _timed(inner, RequestCache(tmp_path / "requests.sqlite")).token_distribution(
        _requests(600), ticks.append
    )
    assert inner.chunks[0] == FIRST_CHUNK and sum(inner.chunks) == 600 == sum(ticks)
    expected = max(1, min(CHUNK, int(CHUNK_SECONDS / seconds)))
    assert set(inner.chunks[1:-1]) == {expected}
    assert max(inner.chunks) * seconds <= max(CHUNK_SECONDS, FIRST_CHUNK * seconds)


def test_an_interrupted_slow_model_loses_seconds_not_a_chunk(tmp_path):
    """Stopped after 21 requests of 2 s, the cache holds the 20 answered in whole chunks
    before the stop (8, then 2 per 4 s), not none of them (a 256 chunk would have kept 0)."""
    path = tmp_path / "requests.sqlite"
    inner = SlowLM(2.0, [0.0], fail_after=21)
    with pytest.raises(KeyboardInterrupt):
        _timed(inner, RequestCache(path)).token_distribution(_requests(300))
    assert RequestCache(path).count() == 20
