"""The OpenAI-compatible server backend (``--backend openai --base-url URL``): vLLM, SGLang, TGI,
OpenAI or any server speaking ``/v1/completions`` (:mod:`.completions`) or, for chat models
without their tokenizer at hand, ``/v1/chat/completions`` (:mod:`.chat`). Transport, retries
and the API key: :mod:`.http_client`; what a server can answer: :mod:`.server_probe`; the
shapes of its replies: :mod:`.replies`."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, model_validator

from biaslens.errors import BiaslensError
from biaslens.models.options import (
    BackendOptions,
    HubAccess,
    OptionRules,
    Prompts,
    Served,
    one_of,
)
from biaslens.models.registry import RegisteredBackend


class OpenAIOptions(Prompts, HubAccess, Served, BackendOptions):
    """The openai backend's options: the server and how it is asked (:class:`Served`), causal
    prompts, and whether a local tokenizer may be downloaded."""

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
