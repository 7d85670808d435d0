"""The backend interface: six request types, answered in batches, and what identifies a model.

A backend is anything that answers lists of requests (see :mod:`biaslens.models.requests`).
Methods never talk to transformers, vLLM or an HTTP server directly; a new model type is a new
backend (registered in :mod:`biaslens.models.registry`) and nothing else changes.

A backend *declares* which request types it answers and how exactly
(:attr:`LM.capabilities`): ``exact`` (the full-vocabulary answer the request defines) or
``top-k limited`` (e.g. a server that returns only the top-k log-probabilities). A method asks
with :meth:`LM.require`; a request a backend cannot answer exactly is a one-line error that
names the alternative, never a silent approximation.

This module imports no torch: the store, the report and the CLI use it at start-up.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from biaslens.common.urls import redact_url
from biaslens.errors import BiaslensError
from biaslens.models.kinds import (  # noqa: F401 - re-exported: the names backends use
    GENERATIVE,
    KIND_CAPABILITIES,
    KIND_NAMES,
    Exactness,
    ModelKind,
)
from biaslens.models.requests import (
    AnswerSpanRequest,
    AnswerSpanResult,
    ChoiceLogprobsRequest,
    ChoiceLogprobsResult,
    ContrastiveGenerateRequest,
    ContrastiveGenerateResult,
    GenerateRequest,
    GenerateResult,
    RequestType,
    SpanScoresRequest,
    SpanScoresResult,
    TokenDistributionRequest,
    TokenDistributionResult,
)

ProgressCallback = Callable[[int], None]
"""Called with the number of requests just finished, so callers can drive a progress bar."""


def _option(default: Any, help: str, cli_type: type | None = None, minimum: float | None = None):
    """A :class:`BackendConfig` field that is also a command-line option (``--name``): its help
    and the smallest value accepted live with the field (the CLI is generated from them)."""
    metadata = {"help": help, "type": cli_type, "minimum": minimum}
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class BackendConfig:
    """Backend options in one object: which backend, and how it runs the model.

    * ``backend``: ``hf`` (transformers, in process; the default), ``vllm`` (vLLM engine, in
      process) or ``openai`` (any OpenAI-compatible server).
    * ``device`` / ``dtype`` / ``batch_size``: where and how an in-process model runs
      (``auto`` picks cuda > mps > cpu, bf16 on GPUs that support it, and a batch size by
      measured throughput).
    * ``add_bos``: None keeps the tokenizer's own special tokens (the default: SmolLM2's BOS is
      the chat-turn marker); True prepends the BOS to causal prompts; False adds none.
    * ``base_url`` / ``api_key_env`` / ``concurrency`` / ``timeout`` / ``max_retries``: the
      ``openai`` backend's server, the *name* of the environment variable holding its key (the
      key itself is never stored), parallel requests, seconds per request, retries.
    * ``tokenizer``: a local tokenizer folder for served models (prompts are then sent as
      token ids, so tokenization equals the in-process backends').
    * ``data_parallel`` / ``ray_address``: model replicas on a Ray runtime (1 = in process).
    * ``model_kind``: ``auto`` infers the kind from the model's config (BART-family models load
      as fill-mask models, as pretrained); ``masked`` / ``causal`` / ``seq2seq`` /
      ``extractive-qa`` overrides it, e.g. ``masked`` for a T5/UL2 model used as a span
      denoiser (the slot becomes the ``<extra_id_0>`` sentinel) or ``seq2seq`` for a BART
      fine-tuned to generate.
    * ``input_prefix``: text put before every model input, e.g. UL2's mode tokens ``[NLU] ``
      (denoiser) or ``[S2S] ``.
    * ``chat`` / ``system``: causal prompts as user messages in the model's chat template (part
      of its identity); ``endpoint``: a served chat model's ``/v1/completions`` (template
      applied here, token ids sent) or ``/v1/chat/completions``; ``max_requests``: a cost
      guard (not part of the identity).
    * ``allow_missing_weights``: load a checkpoint that lacks tensors the model needs (they get
      seeded random values) instead of refusing it. For tests of code paths only; the model's
      identity (and so every run's summary and report) records it.
    """

    backend: str = _option(
        "hf",
        "hf (transformers, in process), vllm (vLLM engine, in process) or openai (an "
        "OpenAI-compatible server, see --base-url).",
    )
    device: str = _option("auto", "auto (cuda, mps, cpu), cpu, cuda, cuda:N, mps.")
    dtype: str = _option("auto", "auto (bf16 on GPU, fp32 on CPU), float32, bfloat16, float16.")
    batch_size: int | str = _option("auto", "auto (chosen by measured throughput) or N.", str)
    add_bos: bool | None = None
    base_url: str | None = _option(
        None, "openai backend: the server, e.g. http://127.0.0.1:8000/v1."
    )
    api_key_env: str = _option(
        "OPENAI_API_KEY",
        "openai backend: the environment variable holding the API key (the key is never "
        "written to any file).",
    )
    concurrency: int = _option(8, "openai backend: requests in flight.", minimum=1)
    timeout: float = _option(
        60.0, "openai backend: seconds per request before it is retried.", minimum=0.001
    )
    max_retries: int = _option(
        5, "openai backend: retries of a failed request before the run stops.", minimum=0
    )
    tokenizer: str | None = _option(
        None,
        "Served models: a local tokenizer (folder or registered name) so prompts are sent as "
        "token ids, tokenized exactly as the in-process backends do.",
    )
    data_parallel: int = _option(
        1,
        "Model replicas on a Ray runtime (one per GPU, or a CPU share); 1 runs in process.",
        minimum=1,
    )
    ray_address: str | None = _option(None, "Join a running Ray cluster (auto or HOST:PORT).")
    model_kind: str = _option(
        "auto",
        "auto (from the config; BART loads as fill-mask), masked (e.g. a T5/UL2 span denoiser), "
        "causal, seq2seq (e.g. a fine-tuned BART) or extractive-qa.",
    )
    input_prefix: str = _option(
        "", "Text put before every input, e.g. '[NLU] ' for UL2's denoiser mode."
    )
    revision: str | None = _option(
        None,
        "Hub models: the branch, tag or commit to load (default: the default branch); the "
        "commit it resolves to is recorded and keys the cache. NAME@REVISION pins one model.",
    )
    offline: bool = _option(
        False,
        "Use only models already in the local Hugging Face cache (as HF_HUB_OFFLINE=1 does); "
        "by default a hub name is downloaded when the machine is online.",
    )
    allow_missing_weights: bool = _option(
        False,
        "Run a checkpoint that lacks tensors its model needs (they get seeded random values). "
        "For tests only: the run's summary and report say so.",
    )
    chat: bool = _option(
        False,
        "Causal chat models: each prompt becomes a user message in the model's own chat template "
        "(the assistant's turn opened), as a chat user would send it.",
    )
    system: str = _option("", "With --chat: a system message put before every prompt.")
    endpoint: str = _option(
        "auto",
        "openai backend: completions (prompts as token ids, every request type exact; needs "
        "the model's tokenizer), chat (/v1/chat/completions: generation with top-k "
        "log-probabilities) or auto (chat for --chat without a tokenizer, else completions).",
    )
    max_requests: int | None = _option(
        None,
        "Stop after N requests answered by the model or server (answers already in the run's "
        "cache do not count); rerun the same command to go on. A cost guard for paid APIs.",
        minimum=1,
    )
    engine_options: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def __post_init__(self) -> None:
        from biaslens.models.batching import parse_batch_size

        object.__setattr__(self, "batch_size", parse_batch_size(self.batch_size, "batch size"))
        for name in ("concurrency", "max_retries", "data_parallel", "max_requests"):
            value = getattr(self, name)
            minimum = 0 if name == "max_retries" else 1
            if value is None and name == "max_requests":
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
                raise BiaslensError(f"{name} must be an integer >= {minimum}, got {value!r}")
        kinds = ("auto", *KIND_NAMES)
        if self.model_kind not in kinds:
            raise BiaslensError(
                f"unknown model kind {self.model_kind!r}; use one of {', '.join(kinds)}"
            )
        if (
            self.model_kind != "auto" or self.input_prefix or self.allow_missing_weights
        ) and self.backend != "hf":
            raise BiaslensError(
                "--model-kind, --input-prefix and --allow-missing-weights apply to the hf backend "
                "(a served model's kind, input format and weights are the server's)"
            )
        if self.revision is not None and (
            not isinstance(self.revision, str) or not self.revision.strip()
        ):
            raise BiaslensError(
                f"--revision must name a branch, tag or commit, got {self.revision!r}"
            )
        if self.revision is not None and self.backend == "openai":
            raise BiaslensError(
                "--revision chooses the checkpoint biaslens loads (hf, vllm backends); a served "
                "model's checkpoint is the server's"
            )
        if self.endpoint not in ("auto", "completions", "chat"):
            raise BiaslensError(
                f"unknown endpoint {self.endpoint!r}; use auto, completions or chat"
            )
        if self.endpoint != "auto" and self.backend != "openai":
            raise BiaslensError("--endpoint chooses a server endpoint: it needs --backend openai")
        if self.endpoint == "chat" and not self.chat:
            raise BiaslensError("--endpoint chat sends prompts as chat messages: it needs --chat")
        if self.system and not self.chat:
            raise BiaslensError("--system is a chat message: it needs --chat")
        if self.api_key_env and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.api_key_env):
            raise BiaslensError(
                "--api-key-env takes the *name* of the environment variable that holds the key "
                "(e.g. OPENAI_API_KEY), not the key itself; the value given is not a variable "
                "name (it is not shown or stored)"
            )
        if not (isinstance(self.timeout, (int, float)) and 0 < self.timeout < float("inf")):
            raise BiaslensError(
                f"timeout must be a finite number of seconds > 0, got {self.timeout!r}"
            )

    def with_options(self, **changes: Any) -> BackendConfig:
        return replace(self, **changes)

    def describe(self) -> dict[str, Any]:
        """The settings as recorded in a run's ``summary.json`` (no secrets: only the name of
        the key's environment variable)."""
        described = {
            k: v
            for k, v in asdict(self).items()
            if (v not in ({}, None, "") or k == "add_bos")
            and not (k in ("allow_missing_weights", "offline") and v is False)
        }
        if described.get("base_url"):
            described["base_url"] = redact_url(described["base_url"])
        return described


@dataclass(frozen=True)
class ModelIdentity:
    """Everything that decides a model's answers, so that a cached answer is reused only for
    the very same model.

    ``fingerprint`` is a sha256 over the files that define the model (weights, ``config.json``,
    ``generation_config.json``, tokenizer files) or, for a served model, over what the server
    reports of it; ``numerics`` holds the settings that change the numbers (backend, dtype,
    device class, BOS handling).
    """

    name: str
    kind: ModelKind
    fingerprint: str
    num_parameters: int | None = None
    backend: str = "hf"
    numerics: tuple[tuple[str, str], ...] = ()
    weights_sha256: str = ""
    details: tuple[tuple[str, str], ...] = ()
    source: tuple[tuple[str, str], ...] = ()
    """Where the checkpoint came from: a hub model's repo id, revision asked for and the commit
    it resolved to; a converted package model's source file and its sha256."""

    @property
    def commit(self) -> str | None:
        """The hub commit the model was loaded at (None: not a hub snapshot)."""
        return dict(self.source).get("commit_sha")

    def cache_key(self) -> str:
        fields = [self.name, self.kind.value, self.backend, self.fingerprint, list(self.numerics)]
        if self.commit:  # the same name at two commits never shares an answer
            fields.append(self.commit)
        return hashlib.sha256(json.dumps(fields).encode()).hexdigest()

    def recorded(self) -> dict:
        """What a run folder's ``config.yaml`` keeps of the model, so that a resumed run can be
        checked against it: name, kind, backend, files, hub source and the settings that change
        its numbers (dtype, device class, chat template…)."""
        return {
            "name": self.name,
            "kind": self.kind.value,
            "backend": self.backend,
            "fingerprint_sha256": self.fingerprint,
            **({"weights_sha256": self.weights_sha256} if self.weights_sha256 else {}),
            **dict(self.source),
            "numerics": dict(self.numerics),
        }

    def describe(self) -> dict:
        """The identity as recorded in a run's ``summary.json``."""
        return {
            "name": self.name,
            "kind": self.kind.value,
            "backend": self.backend,
            "fingerprint_sha256": self.fingerprint,
            "weights_sha256": self.weights_sha256 or None,
            "num_parameters": self.num_parameters,
            **dict(self.source),
            **dict(self.numerics),
            **dict(self.details),
        }


class LM:
    """Answers requests in batches; subclasses implement the request types they declare.

    Every request method takes a list of requests and an optional ``progress`` callback (called
    with the number of requests just finished) and returns one result per request, in order.
    """

    identity: ModelIdentity

    @property
    def kind(self) -> ModelKind:
        return self.identity.kind

    @property
    def capabilities(self) -> dict[RequestType, Exactness]:
        """Request types this backend answers, and how exactly (default: by model kind)."""
        return KIND_CAPABILITIES[self.kind]

    def require(
        self, request_type: RequestType | str, exact: bool = True, alternative: str = ""
    ) -> None:
        """Raise a one-line error unless this backend answers ``request_type`` (exactly, when
        ``exact``); ``alternative`` is what the user can do instead."""
        request_type = RequestType(request_type)
        answers = self.capabilities
        how = answers.get(request_type)
        hint = f"; {alternative}" if alternative else ""
        if how is None:
            allowed = ", ".join(sorted(t.value for t in answers)) or "nothing"
            raise BiaslensError(
                f"model {self.identity.name!r} is a {self.kind.value} model and cannot answer "
                f"{request_type.value} requests on the {self.identity.backend} backend (it "
                f"answers: {allowed}){hint}"
            )
        if exact and how != Exactness.EXACT:
            raise BiaslensError(
                f"the {self.identity.backend} backend answers {request_type.value} requests of "
                f"{self.identity.name!r} only {how.value}, not exactly{hint}"
            )

    def answer(self, requests: Sequence, progress: ProgressCallback | None = None) -> list:
        """Answer requests of one type by dispatching to the method named after it."""
        if not requests:
            return []
        request_type = type(requests[0]).request_type
        if any(type(r).request_type != request_type for r in requests):
            raise BiaslensError("answer() takes requests of one type at a time")
        return getattr(self, request_type.value)(requests, progress)

    def _unsupported(self, request_type: RequestType):
        self.require(request_type, exact=False)
        raise NotImplementedError(f"{type(self).__name__} declares but lacks {request_type.value}")

    def token_distribution(
        self, requests: Sequence[TokenDistributionRequest], progress: ProgressCallback | None = None
    ) -> list[TokenDistributionResult]:
        """Target probabilities and top-k tokens at a slot (see the request)."""
        return self._unsupported(RequestType.TOKEN_DISTRIBUTION)

    def span_scores(
        self, requests: Sequence[SpanScoresRequest], progress: ProgressCallback | None = None
    ) -> list[SpanScoresResult]:
        """Start/end probabilities of candidate answer spans (extractive QA)."""
        return self._unsupported(RequestType.SPAN_SCORES)

    def answer_span(
        self, requests: Sequence[AnswerSpanRequest], progress: ProgressCallback | None = None
    ) -> list[AnswerSpanResult]:
        """Best extractive answer span (QA utility, EM/F1)."""
        return self._unsupported(RequestType.ANSWER_SPAN)

    def choice_logprobs(
        self, requests: Sequence[ChoiceLogprobsRequest], progress: ProgressCallback | None = None
    ) -> list[ChoiceLogprobsResult]:
        """Summed log-likelihood of each choice as the continuation of the prompt."""
        return self._unsupported(RequestType.CHOICE_LOGPROBS)

    def generate(
        self, requests: Sequence[GenerateRequest], progress: ProgressCallback | None = None
    ) -> list[GenerateResult]:
        """Greedy continuation with the top-k distribution at every step."""
        return self._unsupported(RequestType.GENERATE)

    def contrastive_generate(
        self,
        requests: Sequence[ContrastiveGenerateRequest],
        progress: ProgressCallback | None = None,
    ) -> list[ContrastiveGenerateResult]:
        """Contrastive Input Decoding (CID paper, Eq. 1)."""
        return self._unsupported(RequestType.CONTRASTIVE_GENERATE)

    def close(self) -> None:
        """Release what the backend holds (engines, connections); a no-op by default."""
