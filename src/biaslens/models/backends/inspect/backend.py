"""Any model inspect_ai's model layer reaches (``--backend inspect``), asked as a chat model.

The model is named as inspect names it (``anthropic/claude-…``, ``google/gemini-…``,
``openai/…``, ``openai-api/<service>/<model>`` with ``--base-url`` for any OpenAI-compatible
server, ``vllm/…``, ``mockllm/model``). Each prompt is a user message (after ``--system``);
the chat backend's requests go through :class:`~.client.InspectClient`: greedy replies with
the top-k tokens of each step where the provider returns log-probabilities (``generate``,
which the SIB paper's black-box protocol and QA first-token scoring read), and replies drawn
at temperature 1 (``sample``, which ``--scoring sampled`` reads) from every provider. A
provider that returns no log-probabilities answers ``sample`` only, which the probe call says
when the model loads.
"""

from __future__ import annotations

import hashlib
import json
from importlib.metadata import version

from biaslens.common.urls import redact_url
from biaslens.models.backends.inspect import shown_arguments
from biaslens.models.backends.inspect.client import InspectClient, inspect_model_api
from biaslens.models.backends.openai.chat import (
    CHAT_CAPABILITIES,
    ChatEndpointBackend,
    check_chat_request,
    probed,
)
from biaslens.models.base import ModelIdentity, ModelKind
from biaslens.models.config import BackendConfig
from biaslens.models.runtime.dry_run import PlannedModel

NO_LOGPROBS = "chat replies without log-probabilities: sampled replies only"
INSTEAD = (
    "a chat model answers the methods' top-k readouts (SIB's --mode paper, lei-eval's "
    "--qa-mode first-token) and sampled replies (--scoring sampled); every request type needs "
    "the model's own weights (--backend hf) or its /v1/completions endpoint with its tokenizer "
    "(--backend openai --tokenizer FOLDER)"
)


class InspectBackend(ChatEndpointBackend):
    """The chat backend on an inspect model (module docstring)."""

    instead = INSTEAD

    @property
    def where(self) -> str:
        return self.client.base_url

    @property
    def source(self) -> str:
        return self.client.base_url

    def connect(self, client, model: str, concurrency: int) -> None:
        super().connect(client, model, concurrency)
        if client.batch:  # a batch takes minutes to hours: one batch's worth per commit
            self.chunk_size = self.cache_chunk_size = max(self.chunk_size, int(client.batch))


def load_inspect(name: str, config: BackendConfig | None = None) -> InspectBackend:
    """Open ``name`` through inspect and probe it once: a greedy one-token reply with its top
    log-probabilities, whose absence leaves the model answering sampled replies only."""
    config = config or BackendConfig(backend="inspect")
    client = InspectClient(name, config.options)
    try:
        return probed(InspectBackend(client, name, identity(name, config), config), NO_LOGPROBS)
    except BaseException:
        client.close()
        raise


def identity(name: str, config: BackendConfig) -> ModelIdentity:
    """The model as inspect names it, the address it is asked at and its model arguments: the
    same name at another address or with other arguments never shares a cached answer
    (``--batch`` and the connection settings change no answer and are not part of it)."""
    options = config.options
    arguments = shown_arguments(options.model_args)
    described = {
        "model": name,
        "base_url": redact_url(options.base_url) if options.base_url else None,
        "model_args": arguments,
        "inspect_ai": _version(),
    }
    fingerprint = hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()
    return ModelIdentity(
        name=name,
        kind=ModelKind.CAUSAL,
        fingerprint=fingerprint,
        backend=config.backend,
        numerics=(
            ("endpoint", "inspect chat"),
            ("chat", "provider template"),
            *((("system", options.system),) if options.system else ()),
        ),
        details=(
            *((("base_url", described["base_url"]),) if options.base_url else ()),
            ("inspect_ai", described["inspect_ai"]),
            ("scoring", "inspect chat replies, top-k log-probabilities of each reply step"),
        ),
    )


def _version() -> str:
    return version("inspect_ai")


def plan_inspect(name: str, config: BackendConfig) -> PlannedModel:
    """What ``--dry-run`` knows of an inspect model without asking it: a chat model, which
    answers generation with top-k log-probabilities where its provider returns them, and
    sampled replies from any provider."""
    inspect_model_api()
    label = f"inspect model {name}"

    def check(request_type, alternative=""):
        check_chat_request(request_type, label, alternative, instead=INSTEAD)

    return PlannedModel(capabilities=CHAT_CAPABILITIES, check=check)
