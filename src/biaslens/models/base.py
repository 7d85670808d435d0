"""The backend interface: four request types, answered in batches.

A backend is anything that answers lists of requests (see ``biaslens.models.requests``).
Methods never talk to transformers directly; a new model type (vLLM, an HTTP API) is a new
backend and nothing else changes.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from biaslens.errors import BiaslensError
from biaslens.models.requests import (
    AnswerSpanRequest,
    AnswerSpanResult,
    ChoiceLogprobsRequest,
    ChoiceLogprobsResult,
    ContrastiveGenerateRequest,
    ContrastiveGenerateResult,
    GenerateRequest,
    GenerateResult,
    SpanScoresRequest,
    SpanScoresResult,
    TokenDistributionRequest,
    TokenDistributionResult,
)

ProgressCallback = Callable[[int], None]
"""Called with the number of requests just finished, so callers can drive a progress bar."""


class ModelKind(str, enum.Enum):
    MASKED = "masked-lm"
    CAUSAL = "causal-lm"
    SEQ2SEQ = "seq2seq-lm"
    EXTRACTIVE_QA = "extractive-qa"


SUPPORTED_REQUESTS: dict[ModelKind, frozenset[str]] = {
    ModelKind.MASKED: frozenset({"token_distribution"}),
    ModelKind.CAUSAL: frozenset(
        {"token_distribution", "choice_logprobs", "generate", "contrastive_generate"}
    ),
    ModelKind.SEQ2SEQ: frozenset(
        {"token_distribution", "choice_logprobs", "generate", "contrastive_generate"}
    ),
    ModelKind.EXTRACTIVE_QA: frozenset({"span_scores", "answer_span"}),
}


@dataclass(frozen=True)
class ModelIdentity:
    """What a cached response is keyed by: the model's name, kind and a hash of its weights."""

    name: str
    kind: ModelKind
    weights_sha256: str
    num_parameters: int

    def cache_key(self) -> str:
        return f"{self.name}|{self.kind.value}|{self.weights_sha256}"

    def describe(self) -> dict:
        """The identity as recorded in a run's ``summary.json``."""
        return {
            "name": self.name,
            "kind": self.kind.value,
            "weights_sha256": self.weights_sha256,
            "num_parameters": self.num_parameters,
        }


class LM(ABC):
    """Answers requests in batches. Subclasses implement the requests their model kind supports."""

    identity: ModelIdentity

    @property
    def kind(self) -> ModelKind:
        return self.identity.kind

    def require(self, request_type: str) -> None:
        """Raise a clear error if this model kind cannot answer ``request_type``."""
        if request_type not in SUPPORTED_REQUESTS[self.kind]:
            allowed = ", ".join(sorted(SUPPORTED_REQUESTS[self.kind]))
            raise BiaslensError(
                f"model {self.identity.name!r} is a {self.kind.value} model and cannot answer "
                f"{request_type} requests (it answers: {allowed})"
            )

    @abstractmethod
    def token_distribution(
        self, requests: Sequence[TokenDistributionRequest], progress: ProgressCallback | None = None
    ) -> list[TokenDistributionResult]: ...

    @abstractmethod
    def span_scores(
        self, requests: Sequence[SpanScoresRequest], progress: ProgressCallback | None = None
    ) -> list[SpanScoresResult]: ...

    @abstractmethod
    def choice_logprobs(
        self, requests: Sequence[ChoiceLogprobsRequest], progress: ProgressCallback | None = None
    ) -> list[ChoiceLogprobsResult]: ...

    @abstractmethod
    def generate(
        self, requests: Sequence[GenerateRequest], progress: ProgressCallback | None = None
    ) -> list[GenerateResult]: ...

    def answer_span(
        self, requests: Sequence[AnswerSpanRequest], progress: ProgressCallback | None = None
    ) -> list[AnswerSpanResult]:
        """Best extractive answer span; extractive-QA backends override this."""
        self.require("answer_span")
        raise NotImplementedError(f"{type(self).__name__} does not extract answers")

    def contrastive_generate(
        self,
        requests: Sequence[ContrastiveGenerateRequest],
        progress: ProgressCallback | None = None,
    ) -> list[ContrastiveGenerateResult]:
        """Contrastive Input Decoding; backends that generate override this."""
        self.require("contrastive_generate")
        raise NotImplementedError(f"{type(self).__name__} does not implement CID")
