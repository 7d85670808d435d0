"""Sampled replies from a chat endpoint (``sample`` requests): what a model that returns no
log-probabilities still gives.

Each request is one call at temperature 1 and top-p 1 with ``n`` replies and the request's
seed; a server that returns fewer replies than ``n`` (many take ``n`` = 1 only) is asked again,
one reply a call, each call with a seed of its own, until the request has its replies. A
refused or filtered reply (``refusal``, ``finish_reason: content_filter``) is a reply that
names nothing: its text is empty.

Before the first draws, :func:`check_temperature_honoured` asks a prompt whose replies vary
(a random number) for :data:`VARIETY_REPLIES` replies: the same reply every time means the
endpoint ignores temperature (some reasoning models' APIs fix it), and every frequency read
from it would be 0 or 1 — the run stops with one line instead.
"""

from __future__ import annotations

import hashlib

from biaslens.models.backends.openai.replies import ChatCompletion, parse
from biaslens.models.runtime.reply_checks import ServerError

VARIETY_PROMPT = "Write a random number between 1 and 1000000, digits only."
VARIETY_REPLIES = 8
MAX_TOP_UPS = 4
"""Rounds of one-reply calls asked of a server that returns fewer replies than ``n``."""


def sample_payload(
    model: str, messages: list[dict], n: int, max_tokens: int, seed: int | None
) -> dict:
    """A chat request for ``n`` replies drawn from the model's own distribution (``seed``
    None: unseeded, ``--unseeded``)."""
    payload = {
        "model": model,
        "messages": messages,
        "temperature": 1.0,
        "top_p": 1.0,
        "max_tokens": max_tokens,
        "n": n,
    }
    return payload if seed is None else {**payload, "seed": seed}


def derived_seed(seed: int, call: int) -> int:
    """The seed of top-up call ``call`` of a request with ``seed`` (distinct draws)."""
    digest = hashlib.sha256(f"{seed}:{call}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def reply_texts(reply, url: str) -> list[str]:
    """Every reply's text in one chat answer; a refused or filtered reply is empty."""
    choices = parse(ChatCompletion, reply, url, "/chat/completions").choices
    texts = []
    for choice in sorted(choices, key=lambda c: c.index):
        filtered = choice.message.refusal or choice.finish_reason == "content_filter"
        texts.append("" if filtered else (choice.message.content or ""))
    return texts


def draw(client, model: str, messages_of, requests, seeded: bool = True) -> list[tuple[str, ...]]:
    """The replies of each sample request (module docstring); ``seeded`` False sends no
    seeds."""
    url = f"{client.base_url}/chat/completions"
    payloads = [
        sample_payload(model, messages_of(r.prompt), r.samples, r.max_new_tokens,
                       r.seed if seeded else None)
        for r in requests
    ]  # fmt: skip
    drawn = [reply_texts(reply, url) for reply in client.post_many("/chat/completions", payloads)]
    for call in range(1, MAX_TOP_UPS * max((r.samples for r in requests), default=0) + 1):
        short = [i for i, r in enumerate(requests) if len(drawn[i]) < r.samples]
        if not short:
            break
        extra = [
            sample_payload(model, messages_of(requests[i].prompt), 1, requests[i].max_new_tokens,
                           derived_seed(requests[i].seed, call) if seeded else None)
            for i in short
        ]  # fmt: skip
        for i, reply in zip(short, client.post_many("/chat/completions", extra), strict=True):
            drawn[i] += reply_texts(reply, url)
    for request, texts in zip(requests, drawn, strict=True):
        if len(texts) < request.samples:
            raise ServerError(
                f"{url}: {len(texts)} replies where {request.samples} were asked, after "
                f"{MAX_TOP_UPS} rounds of calls for the rest: the server returns no replies "
                "to some calls; sampled scoring needs every reply it asks for"
            )
    return [tuple(texts[: r.samples]) for r, texts in zip(requests, drawn, strict=True)]


def check_temperature_honoured(client, model: str, messages_of, seeded: bool = True) -> None:
    """Stop in one line when the endpoint gives the same reply every time at temperature 1 to
    a prompt whose replies vary (module docstring). A server that fails on this first sampled
    call is named with what may work."""
    from biaslens.models.requests import SampleRequest

    request = SampleRequest(VARIETY_PROMPT, VARIETY_REPLIES, max_new_tokens=8, seed=0)
    try:
        (texts,) = draw(client, model, messages_of, [request], seeded)
    except ServerError as error:
        if not seeded:
            raise
        raise ServerError(
            f"{error}; this was the first call with a seed: a server that fails on seeded "
            "requests (vLLM's CPU build does) samples with --unseeded"
        ) from None
    if len(set(texts)) == 1:
        raise ServerError(
            f"{client.base_url}/chat/completions gave the same reply {VARIETY_REPLIES} times "
            f"({texts[0][:40]!r}) at temperature 1 to {VARIETY_PROMPT!r}, whose replies vary: "
            "it ignores temperature, so frequencies read from its replies would be 0 or 1; "
            "sampled scoring needs an endpoint that samples (or one that returns "
            "log-probabilities: --scoring exact or paper)"
        )
