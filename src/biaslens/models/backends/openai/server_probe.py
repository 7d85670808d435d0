"""What an OpenAI-compatible server can answer, checked before it is trusted.

The next token after a probe prompt and its log-probability (request 1), then the same prompt
with that token appended, echoed (request 2): the echoed log-probability must sit at that
token's position and equal request 1's. A server that returns none (only ``generate`` is then
offered) or returns them shifted (llama.cpp's echo is off by one position) is named, never
trusted silently. Whether it understands vLLM's ``logprob_token_ids`` is probed with a token
outside the top ones.
"""

from __future__ import annotations

import hashlib
import json
import math

from biaslens.errors import BiaslensError
from biaslens.models.backends.openai.http_client import HTTPClient
from biaslens.models.backends.openai.replies import (
    TOKEN_PREFIX,
    ModelList,
    ServerError,
    choice_logprobs,
    completion_choices,
    parse,
    token_id,
)

PROBE_PROMPT = "The capital of France is"
SERVER_FIELDS = ("id", "root", "max_model_len", "owned_by", "parent")
"""What ``/v1/models`` says of a model that enters its identity."""
PROBE_TOLERANCE = 1e-3
NO_LOGPROBS = "the server returns no log-probabilities"
"""The probe's verdict on a server that gives none (it is then asked for sampled replies
only)."""


def served_model(client: HTTPClient, name: str) -> dict:
    served = parse(ModelList, client.get("/models"), client.base_url, "/models").data
    for entry in served:
        if entry.id == name:
            return entry.model_dump()
    names = ", ".join(m.id for m in served) or "none"
    raise BiaslensError(
        f"{client.base_url} does not serve a model named {name!r} (it serves: {names})"
    )


def server_metadata(served: dict) -> dict:
    """The :data:`SERVER_FIELDS` the server reported for the model."""
    return {k: served.get(k) for k in SERVER_FIELDS if k in served}


def served_fingerprint(described: dict) -> str:
    """A served model's fingerprint: the sha256 of what describes it (address, name, the
    server's metadata, the endpoint or local tokenizer)."""
    return hashlib.sha256(json.dumps(described, sort_keys=True, default=str).encode()).hexdigest()


def _close(values: list, position: int, expected: float) -> bool:
    if not 0 <= position < len(values) or values[position] is None:
        return False
    return abs(float(values[position]) - expected) <= PROBE_TOLERANCE


def probe_server(client: HTTPClient, model: str, tokenizer) -> dict:
    """What the server can do, checked on a probe prompt (see the module docstring)."""
    url = client.base_url
    if tokenizer is None:
        return {"mode": "text", "why": "no local tokenizer for the served model (--tokenizer)"}
    prompt = tokenizer(PROBE_PROMPT)["input_ids"]
    first = client.post_many(
        "/completions",
        [
            {
                "model": model,
                "prompt": prompt,
                "max_tokens": 1,
                "temperature": 0.0,
                "logprobs": 5,
                "return_tokens_as_token_ids": True,
            }
        ],
    )[0]
    choice = completion_choices(first, 1, url)[0]
    top = (choice_logprobs(choice).top_logprobs or [None])[0]
    if not top:
        return {"mode": "text", "why": NO_LOGPROBS}
    if not all(str(t).startswith(TOKEN_PREFIX) for t in top):
        return {
            "mode": "text",
            "why": "the server does not return token ids (vLLM's return_tokens_as_token_ids)",
        }
    token, expected = max(
        ((token_id(t, url), float(v)) for t, v in top.items()), key=lambda i: i[1]
    )
    echoed = client.post_many(
        "/completions",
        [
            {
                "model": model,
                "prompt": [*prompt, token],
                "max_tokens": 1,
                "temperature": 0.0,
                "logprobs": 1,
                "echo": True,
            }
        ],
    )[0]
    values = choice_logprobs(completion_choices(echoed, 1, url)[0]).token_logprobs or []
    position = len(prompt)
    if all(v is None for v in values[: position + 1]):
        return {"mode": "text", "why": "the server returns no prompt log-probabilities (echo)"}
    if not _close(values, position, expected):
        shifted = [p for p in (position - 1, position + 1) if _close(values, p, expected)]
        if shifted:
            raise BiaslensError(
                f"{url} returns misaligned prompt log-probabilities (shifted by "
                f"{shifted[0] - position:+d} position); scores from it would be wrong (llama.cpp's "
                "echo has this bug): use a server whose echo is aligned, e.g. vLLM"
            )
        got = values[position] if len(values) > position else None
        raise BiaslensError(
            f"{url} echoes a log-probability of {got} where a completion gave {expected:.4f} for "
            "the same token; scores from it would be wrong"
        )
    return {
        "mode": "tokens",
        "token_ids_extension": _probe_extension(client, model, prompt, top, url, len(tokenizer)),
        "why": "",
    }


def _probe_extension(
    client: HTTPClient, model: str, prompt: list[int], top: dict, url: str, vocab_size: int
) -> bool:
    """Whether the server answers vLLM's ``logprob_token_ids`` — probed with a token that is
    *not* among the top ones (any server returns the top token; a server that ignores the
    extension would pass a probe with it and then lack the asked ids). The expected value comes
    from the (already verified) echo."""
    shown = {token_id(t, url) for t in top}
    middle = vocab_size // 2  # an ordinary token, not a special one at either end
    other = next(i for i in [*range(middle, vocab_size), *range(middle)] if i not in shown)
    try:
        echoed = client.post_many(
            "/completions",
            [
                {
                    "model": model,
                    "prompt": [*prompt, other],
                    "max_tokens": 1,
                    "temperature": 0.0,
                    "logprobs": 1,
                    "echo": True,
                }
            ],
        )[0]
        values = choice_logprobs(completion_choices(echoed, 1, url)[0]).token_logprobs or []
        if len(values) <= len(prompt) or values[len(prompt)] is None:
            return False
        expected = float(values[len(prompt)])
        answer = client.post_many(
            "/completions",
            [
                {
                    "model": model,
                    "prompt": prompt,
                    "max_tokens": 1,
                    "temperature": 0.0,
                    "logprobs": 1,
                    "logprob_token_ids": [other],
                    "return_tokens_as_token_ids": True,
                }
            ],
        )[0]
        step = (choice_logprobs(completion_choices(answer, 1, url)[0]).top_logprobs or [None])[
            0
        ] or {}
        found = {token_id(t, url): float(v) for t, v in step.items()}
    except ServerError:
        return False
    return abs(found.get(other, math.inf) - expected) <= PROBE_TOLERANCE
