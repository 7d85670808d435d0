"""The OpenAI-compatible server backend (``--backend openai --base-url URL``): vLLM, SGLang, TGI,
OpenAI or any server speaking ``/v1/completions`` (:mod:`.completions`) or, for chat models
without their tokenizer at hand, ``/v1/chat/completions`` (:mod:`.chat`). Transport, retries
and the API key: :mod:`.http_client`; what a server can answer: :mod:`.server_probe`; the
shapes of its replies: :mod:`.replies`."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, model_validator

from biaslens.common.urls import redact_url
from biaslens.errors import BiaslensError
from biaslens.models.options import (
    BackendOptions,
    HubAccess,
    OptionRules,
    Prompts,
    one_of,
    seconds,
)
from biaslens.models.registry import RegisteredBackend


def _api_key_variable(value):
    """The *name* of an environment variable (never the key: the value is not shown)."""
    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        raise BiaslensError(
            "--api-key-env takes the *name* of the environment variable that holds the key "
            "(e.g. OPENAI_API_KEY), not the key itself; the value given is not a variable "
            "name (it is not shown or stored)"
        )
    return value


class OpenAIOptions(Prompts, HubAccess, BackendOptions):
    """The openai backend's options: the server and how it is asked, causal prompts, and
    whether a local tokenizer may be downloaded."""

    base_url: Annotated[str | None, OptionRules(recorded_as=redact_url)] = Field(
        None, description="openai backend: the server, e.g. http://127.0.0.1:8000/v1."
    )
    api_key_env: Annotated[str, OptionRules(parse=_api_key_variable)] = Field(
        "OPENAI_API_KEY",
        description="openai backend: the environment variable holding the API key (the key is "
        "never written to any file).",
    )
    concurrency: Annotated[int, OptionRules(minimum=1)] = Field(
        8, description="openai backend: requests in flight."
    )
    timeout: Annotated[float, OptionRules(parse=seconds("--timeout"), minimum=0.001)] = Field(
        60.0, description="openai backend: seconds per request before it is retried."
    )
    max_retries: Annotated[int, OptionRules(minimum=0)] = Field(
        5, description="openai backend: retries of a failed request before the run stops."
    )
    tokenizer: str | None = Field(
        None,
        description="Served models: a local tokenizer (folder or registered name) so prompts "
        "are sent as token ids, tokenized exactly as the in-process backends do.",
    )
    endpoint: Annotated[
        str, OptionRules(parse=one_of("--endpoint", ("auto", "completions", "chat"), "endpoint"))
    ] = Field(
        "auto",
        description="openai backend: completions (prompts as token ids, every request type "
        "exact; needs the model's tokenizer), chat (/v1/chat/completions: generation with "
        "top-k log-probabilities) or auto (chat for --chat without a tokenizer, else "
        "completions).",
    )
    unseeded: bool = Field(
        False,
        description="openai backend, sampled scoring: send no seed with the calls (the draws "
        "are then not reproducible), for servers that fail on seeded requests (vLLM's CPU "
        "build does).",
    )

    @model_validator(mode="after")
    def _chat_endpoint_needs_chat(self) -> OpenAIOptions:
        if self.endpoint == "chat" and not self.chat:
            raise BiaslensError("--endpoint chat sends prompts as chat messages: it needs --chat")
        return self


BACKEND = RegisteredBackend(
    "openai",
    "biaslens.models.backends.openai.completions:load_openai",
    "any OpenAI-compatible server (vLLM, SGLang, TGI, OpenAI): --base-url",
    local=False,
    summary="an OpenAI-compatible server, see --base-url",
    options=OpenAIOptions,
    planner="biaslens.models.backends.openai.completions:plan_openai",
    packages=("httpx",),
)
