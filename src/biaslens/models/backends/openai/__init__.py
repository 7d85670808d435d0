"""The OpenAI-compatible server backend (``--backend openai --base-url URL``): vLLM, SGLang, TGI,
OpenAI or any server speaking ``/v1/completions`` (:mod:`.completions`) or, for chat models
without their tokenizer at hand, ``/v1/chat/completions`` (:mod:`.chat`). Transport, retries
and the API key: :mod:`.http_client`; what a server can answer: :mod:`.server_probe`; the
shapes of its replies: :mod:`.replies`."""

from __future__ import annotations

from biaslens.common.urls import redact_url
from biaslens.models.options import (
    OFFLINE,
    PROMPTS,
    BackendOption,
    one_of,
    seconds,
)
from biaslens.models.registry import RegisteredBackend


def _api_key_variable(value):
    """The *name* of an environment variable (never the key: the value is not shown)."""
    import re

    from biaslens.errors import BiaslensError

    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        raise BiaslensError(
            "--api-key-env takes the *name* of the environment variable that holds the key "
            "(e.g. OPENAI_API_KEY), not the key itself; the value given is not a variable "
            "name (it is not shown or stored)"
        )
    return value


def _chat_endpoint_needs_chat(value, config):
    if value == "chat" and not config.chat:
        return "--endpoint chat sends prompts as chat messages: it needs --chat"
    return None


BASE_URL = BackendOption(
    "base_url",
    default=None,
    recorded_as=redact_url,
    help="openai backend: the server, e.g. http://127.0.0.1:8000/v1.",
)
API_KEY_ENV = BackendOption(
    "api_key_env",
    default="OPENAI_API_KEY",
    parse=_api_key_variable,
    help="openai backend: the environment variable holding the API key (the key is never "
    "written to any file).",
)
CONCURRENCY = BackendOption(
    "concurrency",
    default=8,
    type=int,
    minimum=1,
    help="openai backend: requests in flight.",
)
TIMEOUT = BackendOption(
    "timeout",
    default=60.0,
    type=float,
    minimum=0.001,
    parse=seconds("--timeout"),
    help="openai backend: seconds per request before it is retried.",
)
MAX_RETRIES = BackendOption(
    "max_retries",
    default=5,
    type=int,
    minimum=0,
    help="openai backend: retries of a failed request before the run stops.",
)
TOKENIZER = BackendOption(
    "tokenizer",
    default=None,
    help="Served models: a local tokenizer (folder or registered name) so prompts are sent as "
    "token ids, tokenized exactly as the in-process backends do.",
)
ENDPOINT = BackendOption(
    "endpoint",
    default="auto",
    parse=one_of("--endpoint", ("auto", "completions", "chat"), "endpoint"),
    requires=_chat_endpoint_needs_chat,
    help="openai backend: completions (prompts as token ids, every request type exact; needs "
    "the model's tokenizer), chat (/v1/chat/completions: generation with top-k "
    "log-probabilities) or auto (chat for --chat without a tokenizer, else completions).",
)

UNSEEDED = BackendOption(
    "unseeded",
    default=False,
    type=bool,
    help="openai backend, sampled scoring: send no seed with the calls (the draws are then not "
    "reproducible), for servers that fail on seeded requests (vLLM's CPU build does).",
)

BACKEND = RegisteredBackend(
    "openai",
    "biaslens.models.backends.openai.completions:load_openai",
    "any OpenAI-compatible server (vLLM, SGLang, TGI, OpenAI): --base-url",
    local=False,
    summary="an OpenAI-compatible server, see --base-url",
    options=(
        BASE_URL, API_KEY_ENV, CONCURRENCY, TIMEOUT, MAX_RETRIES, TOKENIZER, *PROMPTS, OFFLINE,
        ENDPOINT, UNSEEDED,
    ),
    planner="biaslens.models.backends.openai.completions:plan_openai",
    packages=("httpx",),
)  # fmt: skip
