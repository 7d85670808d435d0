"""Sampled scoring against endpoints that misbehave (a local OpenAI-compatible server the tests
start, drawing from a tiny model): more replies than asked, replies that name another model or
switch models halfway, a seed the server ignores, filtered replies, bodies that are not UTF-8,
and a server that starts refusing halfway. Each ends in a correct result — the replies the run
says it drew, the lost ones counted — or one line naming what the server did, with the answers
before it kept."""

from __future__ import annotations

import pytest

from biaslens.errors import BiaslensError
from biaslens.models import BackendConfig, load_model
from biaslens.models.requests import SampleRequest
from biaslens.store.cache import CachedLM, RequestCache
from tests.methods.test_sampled_scoring import NAME, pronoun_leaning, sampling_server  # noqa: F401

pytestmark = pytest.mark.slow

PROMPT = "In 1901, the doctor said that"


def _endpoint(server, **options):
    config = BackendConfig(backend="openai", base_url=server["url"], chat=True, concurrency=2,
                           max_retries=1, **options)  # fmt: skip
    return load_model(NAME, config)


@pytest.fixture
def faults(sampling_server):  # noqa: F811
    faults = sampling_server["faults"]
    yield faults
    faults.sampling, faults.fail_after, faults.retry_after = "ok", None, None
    faults.fail_status, faults.served_model, faults.served_after = 429, None, 0


def _draw(server, requests, cache=None, **options):
    lm = _endpoint(server, **options)
    try:
        if cache is None:
            return lm.sample(requests), None
        cached = CachedLM(lm, RequestCache(cache), chunk_size=2)
        return cached.sample(requests), cached.stats
    finally:
        lm.close()


def test_more_replies_than_asked_keep_the_first_n(sampling_server, faults):  # noqa: F811
    request = SampleRequest(PROMPT, samples=6, max_new_tokens=2, seed=3)
    (asked,), _ = _draw(sampling_server, [request])
    faults.sampling = "more"
    (more,), _ = _draw(sampling_server, [request])
    assert len(more.texts) == 6 and more.texts == asked.texts  # the same seeded draw, cut


@pytest.mark.parametrize(
    ("fault", "message"),
    [("other-model", "name the model 'another-model', not 'tiny-llama' as asked"),
     ("switch-model", "came from the model 'tiny-llama', then from 'another-model'"),
     ("non-utf8", "not valid JSON after 2 attempt")],
)  # fmt: skip
def test_a_server_that_names_another_model_or_garbles_its_replies_is_one_line(
    sampling_server, faults, fault, message,  # noqa: F811
):  # fmt: skip
    if fault == "non-utf8":
        faults.sampling = fault
    else:  # from the first sampled call, or from the second (after the temperature check)
        faults.served_model = "another-model"
        faults.served_after = len(faults.requests) + 1 + (fault == "switch-model")
    with pytest.raises(BiaslensError) as refused:
        _draw(sampling_server, [SampleRequest(PROMPT, samples=4, max_new_tokens=2)])
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_a_snapshot_switched_between_calls_is_one_line(sampling_server, faults):  # noqa: F811
    """A dated snapshot of the model asked (``tiny-llama-v2``) passes alone, but not after
    replies of ``tiny-llama`` earlier in the run: the backend keeps the first name for every
    later call, not one call only."""
    lm = _endpoint(sampling_server)
    try:
        lm.sample([SampleRequest(PROMPT, samples=2, max_new_tokens=2, seed=1)])
        faults.served_model, faults.served_after = "tiny-llama-v2", len(faults.requests)
        with pytest.raises(BiaslensError) as refused:
            lm.sample([SampleRequest(PROMPT, samples=2, max_new_tokens=2, seed=2)])
    finally:
        lm.close()
    assert "came from the model 'tiny-llama', then from 'tiny-llama-v2'" in str(refused.value)


def test_filtered_replies_are_drawn_replies_that_name_nothing(sampling_server, faults):  # noqa: F811
    """``finish_reason: content_filter``: the reply was drawn and counts in n, but its text
    (here "she [filtered]") is the filter's, not the model's: it names nothing."""
    faults.sampling = "filter-odd"
    (result,), _ = _draw(sampling_server, [SampleRequest(PROMPT, samples=6, max_new_tokens=2)])
    assert len(result.texts) == 6
    assert result.texts[1::2] == ("", "", "") and all(t != "" for t in result.texts[0::2])


def test_a_seed_the_server_ignores_cannot_change_a_cached_draw(sampling_server, faults, tmp_path):  # noqa: F811
    requests = [SampleRequest(PROMPT, samples=6, max_new_tokens=3, seed=s) for s in range(3)]
    faults.sampling = "ignore-seed"
    first, stats = _draw(sampling_server, requests, tmp_path / "cache.sqlite")
    assert stats["computed"] == 3
    again, stats = _draw(sampling_server, requests, tmp_path / "cache.sqlite")
    assert stats == {"cached": 3, "computed": 0}
    assert [r.texts for r in again] == [r.texts for r in first]


@pytest.mark.parametrize(("status", "retry_after"), [(429, "0"), (429, None), (503, None)])
def test_a_server_that_starts_refusing_halfway_keeps_what_it_answered(
    sampling_server,  # noqa: F811
    faults,
    tmp_path,
    status,
    retry_after,
):
    """After the temperature check and the first chunk of two, every request is refused: one
    line naming the status, the first chunk's draws kept, and the rerun (the server back)
    computes only the rest."""
    requests = [SampleRequest(PROMPT, samples=4, max_new_tokens=2, seed=s) for s in range(6)]
    lm = _endpoint(sampling_server)
    cache = tmp_path / "cache.sqlite"
    try:
        faults.fail_after = len(faults.requests) + 3  # the check, then one chunk of two
        faults.fail_status, faults.retry_after = status, retry_after
        with pytest.raises(BiaslensError) as refused:
            CachedLM(lm, RequestCache(cache), chunk_size=2).sample(requests)
    finally:
        lm.close()
    message = str(refused.value)
    assert f"HTTP {status}" in message and "rerun the same command" in message
    assert RequestCache(cache).count() == 2
    faults.fail_after = None
    _, stats = _draw(sampling_server, requests, cache)
    assert stats == {"cached": 2, "computed": 4}
