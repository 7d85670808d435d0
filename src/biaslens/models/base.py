"""The backend interface: seven request types, answered in batches, and what identifies a model.

A backend is anything that answers lists of requests (see :mod:`biaslens.models.requests`).
Methods never talk to transformers, vLLM or an HTTP server directly; a new model type is a new
backend (one package of :mod:`biaslens.models.backends`, or of one's own, see
:mod:`biaslens.models.registry`) and nothing else changes. Its options:
:class:`~biaslens.models.config.BackendConfig`.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from biaslens.errors import BiaslensError
from biaslens.models.kinds import (  # noqa: F401 - re-exported: the names backends use
    GENERATIVE,
    KIND_CAPABILITIES,
    KIND_NAMES,
    Exactness,
    ModelKind,
)
from biaslens.models.requests import (
    REQUESTS,
    AnswerSpanRequest,
    AnswerSpanResult,
    ChoiceLogprobsRequest,
    ChoiceLogprobsResult,
    ContrastiveGenerateRequest,
    ContrastiveGenerateResult,
    GenerateRequest,
    GenerateResult,
    RequestType,
    SampleRequest,
    SampleResult,
    SpanScoresRequest,
    SpanScoresResult,
    TokenDistributionRequest,
    TokenDistributionResult,
)

ProgressCallback = Callable[[int], None]
"""Called with the number of requests just finished, so callers can drive a progress bar."""


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
    backend: str = "custom"
    """The backend that loaded it (``custom``: a model built by hand, e.g. in a test)."""
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
    answers: ClassVar[frozenset[RequestType]] = frozenset()
    """The request types this class implements, declared on the class: checked when the class
    is defined (a backend plug-in's class that declares one and lacks its method is refused
    when its module is imported, as its entry point loads). What one loaded model answers is
    :attr:`capabilities` (a masked LM answers other requests than a causal one), checked
    against the implemented methods when it loads (:func:`biaslens.models.loader.load_model`)."""

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        declared = cls.__dict__.get("answers", frozenset())
        unknown = sorted(_type_name(t) for t in declared if _type_name(t) not in REQUESTS)
        lacking = [] if unknown else unimplemented(cls, declared)
        if unknown or lacking:
            what = (
                f"names unknown request types {unknown}"
                if unknown
                else (
                    f"declares that it answers {', '.join(lacking)} but does not implement "
                    f"{'it' if len(lacking) == 1 else 'them'}"
                )
            )
            raise TypeError(f"{cls.__module__}.{cls.__qualname__} {what}")

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
        request_class = type(requests[0])
        name = _type_name(getattr(request_class, "request_type", ""))
        if name not in REQUESTS or REQUESTS.get(name) is not request_class:
            raise BiaslensError(f"answer() takes biaslens requests, not {request_class.__name__}")
        if any(type(r) is not request_class for r in requests):
            raise BiaslensError("answer() takes requests of one type at a time")
        return getattr(self, name)(requests, progress)

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

    def sample(
        self, requests: Sequence[SampleRequest], progress: ProgressCallback | None = None
    ) -> list[SampleResult]:
        """Replies drawn at temperature 1 (models that give no probabilities)."""
        return self._unsupported(RequestType.SAMPLE)

    def close(self) -> None:
        """Release what the backend holds (engines, connections); a no-op by default."""


def unimplemented(cls: type, request_types) -> list[str]:
    """The request types among ``request_types`` whose method ``cls`` does not implement (it
    keeps :class:`LM`'s, which answers none)."""
    names = [_type_name(t) for t in request_types]
    return sorted(n for n in names if getattr(cls, n, None) is getattr(LM, n))


def _type_name(request_type: RequestType | str) -> str:
    """A request type's name (its enum value), whether given as the enum or as text."""
    return request_type.value if isinstance(request_type, RequestType) else str(request_type)
