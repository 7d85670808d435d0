"""The fake OpenAI-compatible server's deliberate faults, and the model's log-probabilities it
answers from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch


@dataclass
class Faults:
    """Deliberate protocol faults: ``echo`` is ``"ok"``, ``"shifted"`` or ``"missing"``;
    ``api_key`` (if set) must be sent as a Bearer token; ``token_ids`` False hides vLLM's
    token-id extensions."""

    echo: str = "ok"
    api_key: str | None = None
    token_ids: bool = True
    ignore_logprob_token_ids: bool = False
    """Return token ids but ignore vLLM's ``logprob_token_ids`` (answer the plain top-k)."""
    token_text: str | None = None
    """If set, every returned token is this text (e.g. ``token_id:abc``)."""
    models_reply: Any = None
    """If set, ``/v1/models`` answers this JSON value instead of the model list."""
    logprob: float | None = None
    """If set, every log-probability the server returns is this value (NaN, inf, > 0: replies
    a client must refuse)."""
    chat: str = "ok"
    """``/v1/chat/completions`` replies as other providers shape them: ``"ok"`` (vLLM's shape),
    ``"no-logprobs"``, ``"fewer"`` (one top log-probability fewer than asked), ``"no-bytes"``
    (no ``bytes`` fields) or ``"refusal"`` (OpenAI's refusal message); and replies that claim
    impossible distributions: ``"duplicate"`` (each step's top list holds its first token
    twice), ``"overlong"`` (more steps than ``max_tokens``), ``"empty-after-probe"`` (every
    reply empty, except to the one-token load probe)."""
    echo_key: bool | str = False
    """A server that echoes the caller's secrets: ``True`` (or ``"400"``) answers every
    completion request 400 with its Authorization header in the error text; ``"200"`` answers
    200 with an error body quoting the key (a reply that does not fit the protocol);
    ``"request"`` answers 400 echoing the request as a careless server logs it (the
    Authorization header, and a Basic header's user and password decoded)."""
    chat_logprob: Any = None
    """If set, every log-probability of a chat reply is this JSON value (``False``, ``"-0.1"``,
    ``-0.01``: replies a client must refuse)."""
    completion_logprobs: bool = True
    """False: ``/v1/completions`` returns no log-probabilities (nor echoes the prompt)."""
    sampling: str = "ok"
    """Chat requests with a temperature above 0 draw each reply token from the model's
    softmax(logits / temperature) (``"ok"``, seeded by the request's ``seed``); ``"greedy"``
    ignores temperature (every reply the greedy one); ``"one"`` returns one reply whatever
    ``n`` asks; ``"refuse-odd"`` refuses every other reply (a content filter); ``"more"``
    returns two replies more than ``n`` asks; ``"ignore-seed"`` draws unseeded (a rerun's
    replies differ); ``"filter-odd"`` gives every other reply ``finish_reason:
    content_filter`` with placeholder text; ``"non-utf8"`` sends reply bodies that are not
    UTF-8."""
    reply_style: str = "plain"
    """How sampled replies are dressed, as chat models write them: ``"plain"``; ``"bold"``
    (the first word in ``**…**``), ``"quoted"`` (in double quotes), ``"bold-half"`` (every
    other reply bold), ``"prefix-half"`` (every other reply begins ``Answer:``, which names no
    class)."""
    served_model: str | None = None
    """If set, sampled replies name this model once more than ``served_after`` requests came."""
    served_after: int = 0
    fail_after: int | None = None
    """If set, every chat request after this many answers ``fail_status`` (a server that starts
    refusing halfway), with ``Retry-After: retry_after`` where that is set."""
    fail_status: int = 429
    retry_after: str | None = None
    requests: list[dict] = field(default_factory=list)


def logprobs_rows(model, ids: list[int]) -> torch.Tensor:
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([ids])).logits[0]
    return logits.float().log_softmax(-1)
