"""A chat model behind ``/v1/chat/completions`` (``--backend openai --chat`` when biaslens has no
tokenizer of the served model, or ``--endpoint chat``): OpenAI, vLLM, SGLang, TGI and most
hosting services.

A chat endpoint formats the messages with the model's chat template itself and returns, with
``logprobs: true, top_logprobs: k``, the greedy reply and the top-k tokens (with their
log-probabilities) at every step of it. That is exactly a ``generate`` request, and all that
the SIB paper's black-box protocol needs (Section 4, Appendix G: the top-5 at every step of a
greedy continuation; ``--mode paper``); QA option scoring reads the top-k of the first answer
token from the same request (``--mode first-token``, :mod:`biaslens.methods.qa.scoring.qa`).

Any chat endpoint, with log-probabilities or without, answers ``sample`` requests: replies
drawn at temperature 1 (:mod:`.sampling`), from which ``--scoring sampled`` estimates the
probability of each answer class. An endpoint that returns no log-probabilities answers only
those, and the methods that can read them choose sampled scoring with a note.

What such an endpoint cannot give — the log-probability of a given token outside its top-k,
the full next-token distribution — is refused in one line before any work, naming what would
work (the model's ``/v1/completions`` endpoint with its tokenizer).
"""

from __future__ import annotations

import dataclasses
import json
import math

from biaslens.common.stopping import apply_stop
from biaslens.errors import BiaslensError
from biaslens.models.backends.openai.http_client import HTTPClient, ServedBy
from biaslens.models.backends.openai.replies import ServerError, chat_choice, chat_token_text
from biaslens.models.backends.openai.sampling import SampledBy, SamplingEndpoint
from biaslens.models.backends.openai.server_probe import (
    served_fingerprint,
    served_model,
    server_metadata,
)
from biaslens.models.base import LM, Exactness, ModelIdentity, ModelKind
from biaslens.models.config import BackendConfig
from biaslens.models.requests import GenerateRequest, GenerateResult, RequestType
from biaslens.models.runtime.reply_checks import check_not_all_empty, check_step, check_step_count

CHAT_CAPABILITIES = {RequestType.GENERATE: Exactness.EXACT, RequestType.SAMPLE: Exactness.EXACT}
"""What a chat endpoint with top log-probabilities answers, exactly as the request defines it."""
SAMPLING_ONLY = {RequestType.SAMPLE: Exactness.EXACT}
"""What a chat endpoint that returns no log-probabilities answers."""
PROBE_MESSAGE = "The capital of France is"
INSTEAD = (
    "serve the model's /v1/completions endpoint and give its tokenizer (--tokenizer FOLDER; "
    "with --chat the template is then applied here), which answers every request type exactly"
)
WHAT_IS_MISSING = {
    RequestType.TOKEN_DISTRIBUTION: "the probability of given target words, also outside the "
    "top-k (for SIB, --mode paper needs only the top-k, and --scoring sampled only sampled "
    "replies)",
    RequestType.CHOICE_LOGPROBS: "the log-likelihood of given answers (lei-eval's --qa-mode "
    "first-token scores QA options from the top-k of the first answer token)",
    RequestType.CONTRASTIVE_GENERATE: "the probability of given tokens under a second input "
    "(CID, Eq. 1: every step's full next-token distribution, which sampled replies cannot "
    "stand in for)",
}


def check_chat_request(
    request_type, where: str, alternative: str = "", logprobs: bool = True, instead: str = INSTEAD
) -> None:
    """One line refusing a request type a chat model cannot answer (before any request):
    ``where`` names it (a server's ``…/chat/completions``); ``logprobs`` False: it returns
    none, and answers only sampled replies; ``instead``: what answers the request."""
    request_type = RequestType(request_type)
    if not logprobs and request_type not in SAMPLING_ONLY:
        raise BiaslensError(
            f"{where} returns no log-probabilities, so it cannot answer "
            f"{request_type.value} requests; the SIB and UnQover/LEI methods can read sampled "
            "replies instead (--scoring sampled, --samples K), CID cannot: it needs every "
            "step's full next-token distribution (a server that returns log-probabilities)"
        )
    if request_type not in CHAT_CAPABILITIES:
        missing = WHAT_IS_MISSING.get(request_type, "what the request needs")
        raise BiaslensError(
            f"{where} returns only the top-k tokens of each reply step, not "
            f"{missing}: it cannot answer {request_type.value} requests; {alternative or instead}"
        )


class ChatEndpointBackend(SampledBy, ServedBy, LM):
    """Greedy chat replies with the top-k tokens at each step (see the module docstring)."""

    answers = frozenset({RequestType.GENERATE, RequestType.SAMPLE})

    def __init__(
        self, client: HTTPClient, model: str, identity: ModelIdentity, config: BackendConfig
    ) -> None:
        self.connect(client, model, config.options.concurrency)
        self.identity = identity
        self.config = config
        self.logprobs = True
        """False where the endpoint returns no log-probabilities (it answers ``sample`` only)."""

    instead: str = INSTEAD
    """What answers a request this model cannot (said when one is refused)."""

    @property
    def where(self) -> str:
        """The model as refusals name it."""
        return f"{self.client.base_url}/chat/completions"

    @property
    def source(self) -> str:
        return f"server {self.client.base_url}/chat/completions (model {self.model!r})"

    @property
    def capabilities(self) -> dict[RequestType, Exactness]:
        return dict(CHAT_CAPABILITIES if self.logprobs else SAMPLING_ONLY)

    def require(self, request_type, exact: bool = True, alternative: str = "") -> None:
        check_chat_request(request_type, self.where, alternative, self.logprobs, self.instead)
        super().require(request_type, exact, alternative)

    def sampling_endpoint(self):
        return SamplingEndpoint(
            self.client,
            self.model,
            "/chat/completions",
            lambda prompt: {"messages": self.messages(prompt)},
            not self.config.options.unseeded,
        )

    def messages(self, prompt: str) -> list[dict]:
        """The prompt as a user message, after the ``--system`` message if one is given."""
        system = (
            [{"role": "system", "content": self.config.options.system}]
            if self.config.options.system
            else []
        )
        return [*system, {"role": "user", "content": prompt}]

    def payload(self, prompt: str, max_new_tokens: int, top_k: int) -> dict:
        return {
            "model": self.model,
            "messages": self.messages(prompt),
            "temperature": 0.0,
            "max_tokens": max_new_tokens,
            "logprobs": True,
            "top_logprobs": top_k,
        }

    def generate(self, requests, progress=None) -> list[GenerateResult]:
        self.require(RequestType.GENERATE)
        results = []
        for start in range(0, len(requests), self.chunk_size):
            chunk = requests[start : start + self.chunk_size]
            payloads = [self.payload(r.prompt, r.max_new_tokens, r.top_k) for r in chunk]
            replies = self.client.post_many("/chat/completions", payloads)
            answered = [
                chat_generation(request, reply, self.client.base_url)
                for request, reply in zip(chunk, replies, strict=True)
            ]
            check_not_all_empty(
                [len(r.tokens) for r in answered],
                [r.max_new_tokens for r in chunk],
                f"{self.client.base_url}/chat/completions",
            )
            results += answered
            if progress is not None:
                progress(len(chunk))
        return results


def chat_generation(request, reply, url: str) -> GenerateResult:
    """A ``generate`` result from one chat reply: its text, and the top-k at every step, which
    must hold the k tokens asked for (a provider that caps ``top_logprobs`` lower is named)."""
    choice = chat_choice(reply, url)
    if choice.message.refusal:
        raise ServerError(
            f"{url}: the model refused the prompt {_shown(request.prompt)} "
            f"({_shown(choice.message.refusal)}): a refusal has no answer to score; change the "
            "prompt set or the --system message"
        )
    text = choice.message.content or ""
    steps = (choice.logprobs.content if choice.logprobs is not None else None) or []
    if text and not steps:
        raise ServerError(
            f"{url}: the chat reply has no log-probabilities (logprobs: true, top_logprobs: "
            f"{request.top_k} were asked); this server or model does not return them, and "
            "biaslens scores only from them"
        )
    check_step_count(len(steps), request.max_new_tokens, f"{url}/chat/completions")
    pieces = [chat_token_text(step) for step in steps]
    ranked = []
    for number, step in enumerate(steps, start=1):
        if len(step.top_logprobs) < request.top_k:
            raise ServerError(
                f"{url}: step {number} of the reply has {len(step.top_logprobs)} top "
                f"log-probabilities where {request.top_k} were asked (the server caps "
                "top_logprobs lower); the request needs all of them"
            )
        check_step(
            ((_token_key(entry, i), entry.logprob) for i, entry in enumerate(step.top_logprobs)),
            f"{url}/chat/completions, step {number}",
        )
        ranked.append(sorted(step.top_logprobs, key=lambda e: -e.logprob)[: request.top_k])
    kept, text = apply_stop(request.stop, pieces, text)
    return GenerateResult(
        text=text,
        tokens=tuple(pieces[:kept]),
        step_top_tokens=tuple(tuple(chat_token_text(e) for e in s) for s in ranked[:kept]),
        step_top_probs=tuple(
            tuple(math.exp(min(e.logprob, 0.0)) for e in s) for s in ranked[:kept]
        ),
    )


def has_logprobs(reply, url: str) -> bool:
    """Whether a chat reply that has text carries log-probabilities (a refusal says nothing)."""
    choice = chat_choice(reply, url)
    if choice.message.refusal or not choice.message.content:
        return True
    return bool(choice.logprobs is not None and choice.logprobs.content)


def _token_key(entry, position: int) -> object:
    """What makes two entries of one step the same token: the same text. Distinct tokens can
    share a text only where it is a partial character, which servers send as U+FFFD (vLLM
    derives ``bytes`` from that text too); such entries are told apart by position (they never
    match a scored word)."""
    text = chat_token_text(entry)
    return (position,) if "\ufffd" in text else text


def _shown(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")


def load_chat_endpoint(name: str, config: BackendConfig) -> ChatEndpointBackend:
    """Connect to ``config.options.base_url``'s chat endpoint serving ``name`` and check, on
    one probe message, that it returns top log-probabilities."""
    client = HTTPClient(config)
    try:
        served = served_model(client, name)
        identity = _identity(name, config, served, client)
        backend = ChatEndpointBackend(client, name, identity, config)
        return probed(backend, "chat/completions without log-probabilities: sampled replies only")
    except BaseException:
        client.close()
        raise


def probed(backend: ChatEndpointBackend, sampled_only: str) -> ChatEndpointBackend:
    """``backend`` after one probe message, a greedy one-token reply with its top-5: without
    log-probabilities it answers sampled replies only (its identity's ``scoring`` then says
    ``sampled_only``); with them, a reply of no tokens is refused."""
    client = backend.client
    probe_request = GenerateRequest(PROBE_MESSAGE, max_new_tokens=1, top_k=5)
    reply = client.post_many(
        "/chat/completions", [backend.payload(PROBE_MESSAGE, 1, probe_request.top_k)]
    )[0]
    backend.logprobs = has_logprobs(reply, client.base_url)
    if not backend.logprobs:
        identity = backend.identity
        details = tuple((k, sampled_only if k == "scoring" else v) for k, v in identity.details)
        backend.identity = dataclasses.replace(identity, details=details)
        return backend
    if not chat_generation(probe_request, reply, client.base_url).step_top_tokens:
        raise ServerError(
            f"{backend.where} answered the probe message with no tokens and no log-probabilities"
        )
    return backend


def _identity(name: str, config: BackendConfig, served: dict, client) -> ModelIdentity:
    metadata = server_metadata(served)
    described = {
        "base_url": client.base_url,
        "model": served.get("id"),
        "server": metadata,
        "endpoint": "chat/completions",
    }
    fingerprint = served_fingerprint(described)
    return ModelIdentity(
        name=name,
        kind=ModelKind.CAUSAL,
        fingerprint=fingerprint,
        backend="openai",
        numerics=(
            ("endpoint", "chat/completions"),
            ("chat", "server template"),
            *((("system", config.options.system),) if config.options.system else ()),
        ),
        details=(
            ("base_url", client.base_url),
            ("server_model", json.dumps(metadata, sort_keys=True, default=str)),
            ("scoring", "chat/completions, top-k log-probabilities of each reply step"),
        ),
    )
