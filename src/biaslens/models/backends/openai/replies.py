"""The shapes of an OpenAI-compatible server's replies, validated before anything reads them.

A served reply is data from outside: a field that is missing, of another type (``/v1/models``
answering a list, a log-probability that is text, a token ``token_id:abc``) is a one-line
error naming the server and the field, never a ``KeyError`` deep in the scoring code and never
a number that enters a metric. Only what biaslens reads is declared; other fields are allowed.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from biaslens.models.runtime.reply_checks import ServerError

TOKEN_PREFIX = "token_id:"


class _Reply(BaseModel):
    model_config = ConfigDict(extra="allow")


def _json_number(value: Any) -> Any:
    """A log-probability is a JSON number: ``false`` (read as 0, i.e. p = 1) and ``"-0.1"``
    (text) are refused, where pydantic's lax mode would convert them."""
    if isinstance(value, (bool, str)):
        raise ValueError("a log-probability must be a JSON number")
    return value


LogProb = Annotated[float, BeforeValidator(_json_number)]


class Logprobs(_Reply):
    tokens: list[str] | None = None
    token_logprobs: list[LogProb | None] | None = None
    top_logprobs: list[dict[str, LogProb] | None] | None = None


class Choice(_Reply):
    index: int = 0
    text: str = ""
    logprobs: Logprobs | None = None


class Completion(_Reply):
    choices: list[Choice]


class ChatTopLogprob(_Reply):
    token: str
    logprob: LogProb
    bytes: list[Annotated[int, Field(ge=0, le=255)]] | None = None


class ChatTokenLogprob(ChatTopLogprob):
    top_logprobs: list[ChatTopLogprob] = []


class ChatLogprobs(_Reply):
    content: list[ChatTokenLogprob] | None = None


class ChatMessage(_Reply):
    content: str | None = None
    refusal: str | None = None


class ChatChoice(_Reply):
    index: int = 0
    message: ChatMessage
    logprobs: ChatLogprobs | None = None
    finish_reason: str | None = None


class ChatCompletion(_Reply):
    choices: list[ChatChoice]


class ServedModel(_Reply):
    id: str
    max_model_len: int | None = None
    max_logprobs: int | None = None


class ModelList(_Reply):
    data: list[ServedModel]


def _where(error: ValidationError) -> str:
    first = error.errors()[0]
    field = ".".join(str(p) for p in first["loc"]) or "the reply"
    value = repr(first.get("input"))
    return f"field {field}: {first['msg'].lower()} (got {value[:80]})"


def parse(model: type[BaseModel], reply: Any, url: str, what: str):
    """``reply`` as ``model``, or a :class:`ServerError` naming the server and the field."""
    try:
        return model.model_validate(reply)
    except ValidationError as error:
        raise ServerError(
            f"{url}: the {what} reply does not fit the protocol: {_where(error)}"
        ) from None


def completion_choices(reply: Any, n: int, url: str) -> list[Choice]:
    """The ``n`` choices of a ``/completions`` reply, in index order."""
    choices = parse(Completion, reply, url, "/completions").choices
    if len(choices) != n:
        raise ServerError(f"{url}: expected {n} completion choice(s), got {len(choices)}")
    return sorted(choices, key=lambda c: c.index)


def chat_choice(reply: Any, url: str) -> ChatChoice:
    """The one choice of a ``/chat/completions`` reply."""
    choices = parse(ChatCompletion, reply, url, "/chat/completions").choices
    if len(choices) != 1:
        raise ServerError(f"{url}: expected 1 chat completion choice, got {len(choices)}")
    return choices[0]


def chat_token_text(entry: ChatTopLogprob) -> str:
    """A chat log-probability entry's token as text: its UTF-8 ``bytes`` when the server sends
    them (a token that is part of a character decodes to U+FFFD, as the local tokenizers
    decode it), else its ``token`` field."""
    if entry.bytes is not None:
        return bytes(entry.bytes).decode("utf-8", errors="replace")
    return entry.token


def token_id(token: str, url: str) -> int:
    """The id in a ``token_id:N`` token (vLLM's ``return_tokens_as_token_ids``)."""
    digits = token[len(TOKEN_PREFIX) :] if token.startswith(TOKEN_PREFIX) else ""
    if not digits.isdigit():
        raise ServerError(f"{url}: expected token ids ('{TOKEN_PREFIX}N'), got {token!r}")
    return int(digits)


def choice_logprobs(choice) -> Logprobs:
    """The choice's log-probabilities (an empty record when the server sent none)."""
    return choice.logprobs or Logprobs()
