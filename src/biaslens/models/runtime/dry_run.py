"""A backend that answers nothing and counts what a run would ask (``biaslens run … --dry-run``).

:class:`PlanningLM` stands where the model would: it has the model's kind and the capabilities
the real backend would declare (so the method chooses the same scoring mode), records every
request with an estimate of its prompt and completion tokens, and returns a neutral placeholder
answer so that the method goes on to its next requests. Nothing is loaded and no server is
called. Token counts use the model's tokenizer where biaslens has it (with the chat template
under ``--chat``); otherwise about four characters per token, as OpenAI's guidance has it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from biaslens.errors import BiaslensError
from biaslens.models.base import KIND_CAPABILITIES, Exactness, ModelIdentity, ModelKind
from biaslens.models.checkpoints.local import load_tokenizer, locate_model
from biaslens.models.config import BackendConfig
from biaslens.models.loader import checkpoint_of
from biaslens.models.options import model_kind_of, prompts_of
from biaslens.models.registry import get_backend
from biaslens.models.requests import (
    AnswerSpanResult,
    ChoiceLogprobsResult,
    ContrastiveGenerateResult,
    GenerateResult,
    RequestType,
    SampleResult,
    SpanScoresResult,
    TokenDistributionResult,
)
from biaslens.models.runtime.forwarding import ForwardingLM

CHARS_PER_TOKEN = 4
"""The approximation without a tokenizer (OpenAI: "about 4 characters of English text")."""


def _inputs(request) -> list[str]:
    """The texts a request sends the model."""
    kind = type(request).request_type
    if kind == RequestType.TOKEN_DISTRIBUTION:
        return [request.text]
    if kind in (RequestType.SPAN_SCORES, RequestType.ANSWER_SPAN):
        return [f"{request.question} {request.context}"]
    if kind == RequestType.CHOICE_LOGPROBS:
        return [request.prompt + choice for choice in request.choices]
    if kind in (RequestType.GENERATE, RequestType.SAMPLE):
        return [request.prompt]
    return [request.x, request.x_prime]


def _completion_tokens(request) -> int:
    """Tokens the model generates for a request, at most."""
    kind = type(request).request_type
    if kind == RequestType.GENERATE:
        return request.max_new_tokens
    if kind == RequestType.CONTRASTIVE_GENERATE:
        return 2 * request.max_new_tokens
    if kind == RequestType.CHOICE_LOGPROBS:
        return len(request.choices)
    if kind == RequestType.SAMPLE:
        return request.samples * request.max_new_tokens
    return 1 if kind == RequestType.TOKEN_DISTRIBUTION else 0


def placeholder(request):
    """A neutral, well-formed answer (equal probabilities, empty text) to go on with."""
    kind = type(request).request_type
    if kind == RequestType.TOKEN_DISTRIBUTION:
        n = len(request.targets)
        return TokenDistributionResult((0.5 / max(n, 1),) * n, ((0,),) * n, ("",), (0.5,))
    if kind == RequestType.SPAN_SCORES:
        n = len(request.spans)
        return SpanScoresResult((0.5,) * n, (0.5,) * n)
    if kind == RequestType.ANSWER_SPAN:
        return AnswerSpanResult("", 0, 0, 0.0)
    if kind == RequestType.CHOICE_LOGPROBS:
        n = len(request.choices)
        return ChoiceLogprobsResult((math.log(0.5),) * n, (1,) * n)
    if kind == RequestType.GENERATE:
        return GenerateResult("", (), (), ())
    if kind == RequestType.SAMPLE:  # replies that name each class alike
        return SampleResult(tuple(("She", "He", "They")[i % 3] for i in range(request.samples)))
    return ContrastiveGenerateResult("", 0, "length")


class PlanningLM(ForwardingLM):
    """Counts requests and tokens and answers placeholders (see the module docstring)."""

    def __init__(
        self,
        identity: ModelIdentity,
        capabilities: dict[RequestType, Exactness] | None = None,
        tokenizer=None,
        config: BackendConfig | None = None,
        check: Callable[[RequestType, str], None] | None = None,
    ) -> None:
        self.identity = identity
        self._check = check
        """Refuses what the real backend would refuse, with its words (a chat endpoint's)."""
        self._capabilities = capabilities
        self.tokenizer = tokenizer
        self.config = config or BackendConfig()
        self.prompts = prompts_of(self.config.options)
        self.requests: Counter[str] = Counter()
        self.prompt_tokens: Counter[str] = Counter()
        self.completion_tokens: Counter[str] = Counter()

    def fresh(self) -> PlanningLM:
        """The same stand-in (identity, capabilities, tokenizer) with nothing counted yet: one
        model read once counts each of several runs."""
        return PlanningLM(
            self.identity, self._capabilities, self.tokenizer, self.config, self._check
        )

    @property
    def capabilities(self) -> dict[RequestType, Exactness]:
        if self._capabilities is not None:
            return dict(self._capabilities)
        return KIND_CAPABILITIES[self.kind]

    def require(self, request_type, exact: bool = True, alternative: str = "") -> None:
        if self._check is not None:
            self._check(request_type, alternative)
        super().require(request_type, exact, alternative)

    @property
    def counted_by(self) -> str:
        if self.tokenizer is None:
            return f"about {CHARS_PER_TOKEN} characters per token (no tokenizer of the model here)"
        chat = self.prompts is not None and self.prompts.chat
        return "the model's tokenizer" + (" and chat template" if chat else "")

    def count_tokens(self, texts: list[str]) -> int:
        if self.tokenizer is None:
            return sum(math.ceil(len(t) / CHARS_PER_TOKEN) for t in texts)
        if self.kind == ModelKind.CAUSAL:  # as the backends encode them (chat template, BOS)
            from biaslens.models.runtime.tokenization import encode_causal_prompts

            add_bos = self.prompts.add_bos if self.prompts is not None else None
            encoded = encode_causal_prompts(self.tokenizer, texts, add_bos, self.prompts)
        else:
            encoded = self.tokenizer(texts)["input_ids"]
        return sum(len(ids) for ids in encoded)

    def _answer(self, requests: Sequence, progress=None) -> list:
        if not requests:
            return []
        kind = type(requests[0]).request_type
        self.require(kind, exact=False)
        name = kind.value
        self.requests[name] += len(requests)
        texts = [text for r in requests for text in _inputs(r)]
        self.prompt_tokens[name] += self.count_tokens(texts)
        self.completion_tokens[name] += sum(_completion_tokens(r) for r in requests)
        if progress is not None:
            progress(len(requests))
        return [placeholder(r) for r in requests]


@dataclass(frozen=True)
class PlannedModel:
    """What ``--dry-run`` knows of a model without loading it (a backend's ``planner``): its
    kind, the capabilities the backend would declare (None: those of the kind), the folder of
    its tokenizer if biaslens has one, and a check that refuses what the backend would
    refuse, in its words."""

    kind: ModelKind = ModelKind.CAUSAL
    capabilities: dict[RequestType, Exactness] | None = None
    tokenizer_folder: Path | None = None
    check: Callable[[RequestType, str], None] | None = None


def plan_checkpoint(name: str, config: BackendConfig) -> PlannedModel:
    """A backend that loads a checkpoint: its kind and tokenizer read from its folder."""
    if not get_backend(config.backend).local:
        raise BiaslensError(
            f"--dry-run cannot plan a run on the {config.backend} backend: it declares no "
            "planner (what it knows of a model without asking it); run without --dry-run"
        )
    options = config.options
    checkpoint = checkpoint_of(name, options)
    folder, _, kind = locate_model(checkpoint, options.offline, model_kind_of(options))
    return PlannedModel(kind=kind, tokenizer_folder=folder)


def planning_model(name: str, config: BackendConfig) -> PlanningLM:
    """The stand-in for ``name`` on ``config``'s backend, as its planner describes the model
    (default: read from its checkpoint folder); nothing is loaded and nothing is sent to a
    server."""
    plan = get_backend(config.backend).plan() or plan_checkpoint
    planned = plan(name, config)
    tokenizer = None
    if planned.tokenizer_folder is not None:
        tokenizer = load_tokenizer(planned.tokenizer_folder)
        prompts = prompts_of(config.options)
        if prompts is not None and prompts.chat and getattr(tokenizer, "chat_template", None):
            from biaslens.models.runtime.tokenization import check_chat

            check_chat(tokenizer, planned.kind, prompts, name)  # the run's verdict on --chat
    identity = ModelIdentity(
        name=name, kind=planned.kind, fingerprint="dry-run", backend=config.backend
    )
    return PlanningLM(identity, planned.capabilities, tokenizer, config, planned.check)
