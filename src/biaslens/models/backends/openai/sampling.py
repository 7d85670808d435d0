"""Sampled replies from a chat or completions endpoint (``sample`` requests): what a model that
returns no log-probabilities still gives.

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

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from biaslens.common.seeds import derived_seed
from biaslens.models.backends.openai.replies import ChatCompletion, Completion, parse
from biaslens.models.requests import RequestType, SampleRequest, SampleResult
from biaslens.models.runtime.reply_checks import ServerError, check_not_all_empty

VARIETY_PROMPT = "Write a random number between 1 and 1000000, digits only."
VARIETY_REPLIES = 8
MAX_TOP_UPS = 4
"""Rounds of one-reply calls asked of a server that returns fewer replies than ``n``."""


class OtherModel(ServerError):
    """The replies come from another model than the one asked."""


@dataclass(frozen=True)
class SamplingEndpoint:
    """Where sampled calls go: ``path`` (``/chat/completions`` or ``/completions``) of
    ``client`` serving ``model``; ``prompt_part`` gives a prompt's part of the request body
    (``{"messages": …}`` or ``{"prompt": …}``); ``seeded`` False sends no seeds
    (``--unseeded``)."""

    client: Any
    model: str
    path: str
    prompt_part: Callable[[str], dict]
    seeded: bool = True
    served: dict = field(default_factory=dict, compare=False)
    """The model name the first reply gave (every later reply must give the same)."""

    @property
    def url(self) -> str:
        return f"{self.client.base_url}{self.path}"

    def payload(self, prompt: str, n: int, max_tokens: int, seed: int) -> dict:
        """A request for ``n`` replies drawn from the model's own distribution."""
        payload = {
            "model": self.model,
            **self.prompt_part(prompt),
            "temperature": 1.0,
            "top_p": 1.0,
            "max_tokens": max_tokens,
            "n": n,
        }
        return {**payload, "seed": seed} if self.seeded else payload

    def check_model(self, reply) -> None:
        """The replies must come from the model asked (or a dated snapshot of it, as
        ``gpt-4o-mini`` answers as ``gpt-4o-mini-2024-07-18``), and all from one: answers of
        another model would be recorded as this one's."""
        named = reply.get("model") if isinstance(reply, dict) else None
        if not isinstance(named, str) or not named:
            return
        first = self.served.setdefault("model", named)
        if named != first:
            raise OtherModel(
                f"{self.url}: the replies came from the model {first!r}, then from {named!r}: "
                "one run's answers must all come from one model; rerun once the endpoint "
                "serves one (the answers so far are kept)"
            )
        if named != self.model and not named.startswith(self.model + "-"):
            raise OtherModel(
                f"{self.url}: the replies name the model {named!r}, not {self.model!r} as "
                "asked: its answers would be recorded as another model's; ask for the model "
                "the endpoint serves"
            )

    def texts(self, reply) -> list[str]:
        """Every reply's text in one answer; a refused or filtered reply is empty."""
        self.check_model(reply)
        if self.path == "/completions":
            choices = parse(Completion, reply, self.url, self.path).choices
            return [
                "" if getattr(c, "finish_reason", None) == "content_filter" else c.text
                for c in sorted(choices, key=lambda c: c.index)
            ]
        choices = parse(ChatCompletion, reply, self.url, self.path).choices
        texts = []
        for choice in sorted(choices, key=lambda c: c.index):
            filtered = choice.message.refusal or choice.finish_reason == "content_filter"
            texts.append("" if filtered else (choice.message.content or ""))
        return texts


def draw(endpoint: SamplingEndpoint, requests) -> list[tuple[str, ...]]:
    """The replies of each sample request (module docstring)."""
    post = endpoint.client.post_many
    payloads = [endpoint.payload(r.prompt, r.samples, r.max_new_tokens, r.seed) for r in requests]
    drawn = [endpoint.texts(reply) for reply in post(endpoint.path, payloads)]
    for call in range(1, MAX_TOP_UPS * max((r.samples for r in requests), default=0) + 1):
        short = [i for i, r in enumerate(requests) if len(drawn[i]) < r.samples]
        if not short:
            break
        extra = [
            endpoint.payload(
                requests[i].prompt,
                1,
                requests[i].max_new_tokens,
                derived_seed(requests[i].seed, call),
            )
            for i in short
        ]
        for i, reply in zip(short, post(endpoint.path, extra), strict=True):
            drawn[i] += endpoint.texts(reply)
    for request, texts in zip(requests, drawn, strict=True):
        if len(texts) < request.samples:
            raise ServerError(
                f"{endpoint.url}: {len(texts)} replies where {request.samples} were asked, "
                "after as many further calls as replies were missing, several times over: the "
                "server returns no replies to some calls; sampled scoring needs every reply it "
                "asks for"
            )
    return [tuple(texts[: r.samples]) for r, texts in zip(requests, drawn, strict=True)]


def check_temperature_honoured(endpoint: SamplingEndpoint) -> None:
    """Stop in one line when the endpoint gives the same reply every time at temperature 1 to
    a prompt whose replies vary (module docstring). A server that fails on this first sampled
    call is named with what may work."""
    request = SampleRequest(VARIETY_PROMPT, VARIETY_REPLIES, max_new_tokens=8, seed=0)
    try:
        (texts,) = draw(endpoint, [request])
    except ServerError as error:
        if not endpoint.seeded or isinstance(error, OtherModel):
            raise
        raise ServerError(
            f"{error}; this was the first call with a seed: a server that fails on seeded "
            "requests (vLLM's CPU build does) samples with --unseeded"
        ) from None
    if len(set(texts)) == 1:
        raise ServerError(
            f"{endpoint.url} gave the same reply {VARIETY_REPLIES} times ({texts[0][:40]!r}) "
            f"at temperature 1 to {VARIETY_PROMPT!r}, whose replies vary: it ignores "
            "temperature, so frequencies read from its replies would be 0 or 1; sampled "
            "scoring needs an endpoint that samples (or one that returns log-probabilities: "
            "--scoring exact or paper)"
        )


class SampledBy:
    """``sample`` for a served backend: draws through its :meth:`sampling_endpoint`, the
    temperature checked before the first draws, in chunks committed as they complete."""

    _checked_endpoint: SamplingEndpoint | None = None

    def sampling_endpoint(self) -> SamplingEndpoint:
        raise NotImplementedError

    def checked_endpoint(self) -> SamplingEndpoint:
        """The backend's one sampling endpoint, made and its temperature checked at the first
        draw, then kept for every later call: the model the replies name is compared across
        the whole run (:meth:`SamplingEndpoint.check_model`), not within one call only."""
        if self._checked_endpoint is None:
            endpoint = self.sampling_endpoint()
            check_temperature_honoured(endpoint)
            self._checked_endpoint = endpoint
        return self._checked_endpoint

    def sample(self, requests, progress=None):
        self.require(RequestType.SAMPLE)
        endpoint = self.checked_endpoint()
        results = []
        for start in range(0, len(requests), self.chunk_size):
            chunk = requests[start : start + self.chunk_size]
            drawn = draw(endpoint, chunk)
            check_not_all_empty(
                [len(text) for texts in drawn for text in texts],
                [r.max_new_tokens for r in chunk for _ in range(r.samples)],
                endpoint.url,
            )
            results += [SampleResult(texts) for texts in drawn]
            if progress is not None:
                progress(len(chunk))
        return results
