"""The request types: the only contract between methods and model backends.

Like lm-evaluation-harness's ``loglikelihood`` / ``generate_until``, every method is expressed
as these seven requests, and every backend answers the ones it declares
(:meth:`biaslens.models.base.LM.capabilities`). Requests are frozen, hashable dataclasses so
that they can be cached by value; each class names its :class:`RequestType` and its result
class (``request_type`` / ``result_type``), which is all the cache and the dispatch need.

Conventions shared by all requests
----------------------------------
* ``MASK`` (the literal string ``"[MASK]"``) marks the slot of a masked-LM request; the backend
  replaces it with its tokenizer's own mask token. Requests to causal / seq2seq models never
  contain it.
* Targets and choices are *continuations*: they are tokenized on their own (no special tokens)
  and appended to the tokenized prompt, so the word-boundary space belongs to the target
  (``" she"`` after ``"Answer:"``). This equals lm-evaluation-harness's split of a joint
  tokenization whenever the prompt does not end in a space or newline.
* Prompts are tokenized with the tokenizer's own special tokens by default; the backend option
  ``add_bos`` can force a BOS token onto causal prompts (see ``BackendConfig``).
* Probabilities are full-vocabulary softmax probabilities in float64 after the forward pass.
* Inputs longer than the model's context: see each request (the documentation's
  "Models and backends", "Inputs longer than the model's context").
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from dataclasses import dataclass, field
from typing import ClassVar

from biaslens.common.contrastive_defaults import MAX_NEW_TOKENS as CID_MAX_NEW_TOKENS
from biaslens.common.contrastive_defaults import TOP_K as CID_TOP_K
from biaslens.common.contrastive_defaults import lambda_problem, temperature_problem
from biaslens.common.registry import Registry
from biaslens.common.seeds import MAX_SEED
from biaslens.common.tokens import MASK
from biaslens.errors import BiaslensError

__all__ = [
    "MASK",
    "AnswerSpanRequest",
    "AnswerSpanResult",
    "ChoiceLogprobsRequest",
    "ChoiceLogprobsResult",
    "ContrastiveGenerateRequest",
    "ContrastiveGenerateResult",
    "GenerateRequest",
    "GenerateResult",
    "Request",
    "SampleRequest",
    "SampleResult",
    "RequestType",
    "SpanScoresRequest",
    "SpanScoresResult",
    "TokenDistributionRequest",
    "TokenDistributionResult",
]


@functools.cache
def _field_names(kind: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(kind))


def as_fields(value) -> dict:
    """A request's or result's fields by name: what ``dataclasses.asdict`` gives for these flat
    types (no nested dataclasses), without its deep copy (the request cache calls this for
    every request of a run: millions at UnQover's scale)."""
    return {name: getattr(value, name) for name in _field_names(type(value))}


class RequestType(str, enum.Enum):
    """The seven request types; a backend declares which it answers (``LM.capabilities``)."""

    TOKEN_DISTRIBUTION = "token_distribution"
    SPAN_SCORES = "span_scores"
    ANSWER_SPAN = "answer_span"
    CHOICE_LOGPROBS = "choice_logprobs"
    GENERATE = "generate"
    CONTRASTIVE_GENERATE = "contrastive_generate"
    SAMPLE = "sample"


def _check_count(value, name: str) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise BiaslensError(f"{name} must be an integer >= 1, got {value!r}")


# ---------------------------------------------------------------------------- results


@dataclass(frozen=True)
class TokenDistributionResult:
    """``target_probs[i]`` is the probability of ``targets[i]`` (NaN if it cannot be scored);
    ``target_ids[i]`` its token ids (empty if NaN), so that callers can de-duplicate targets
    that map to the same tokens (``"She"``/``"she"`` in an uncased vocabulary).
    ``top_tokens``/``top_probs``: the top-k tokens at the slot, decoded, most probable first."""

    target_probs: tuple[float, ...]
    target_ids: tuple[tuple[int, ...], ...]
    top_tokens: tuple[str, ...]
    top_probs: tuple[float, ...]


@dataclass(frozen=True)
class SpanScoresResult:
    """Start probability of each span's first token and end probability of its last."""

    start_probs: tuple[float, ...]
    end_probs: tuple[float, ...]


@dataclass(frozen=True)
class AnswerSpanResult:
    """The best span's text, character offsets (end exclusive) and p_start · p_end."""

    text: str
    start: int
    end: int
    score: float


@dataclass(frozen=True)
class ChoiceLogprobsResult:
    """Summed log-probability of each choice and how many tokens it has."""

    logprobs: tuple[float, ...]
    num_tokens: tuple[int, ...]


@dataclass(frozen=True)
class GenerateResult:
    """The continuation's text, its tokens, and the top-k tokens and probabilities at each
    step (the step's distribution before its token was chosen)."""

    text: str
    tokens: tuple[str, ...]
    step_top_tokens: tuple[tuple[str, ...], ...]
    step_top_probs: tuple[tuple[float, ...], ...]


@dataclass(frozen=True)
class ContrastiveGenerateResult:
    """The contrastive continuation, its length in tokens and why it ended
    (``"eos"``, ``"stop"`` or ``"length"``)."""

    text: str
    num_tokens: int
    finish_reason: str


@dataclass(frozen=True)
class SampleResult:
    """The replies drawn, in order (empty text: the model ended its reply at once)."""

    texts: tuple[str, ...]


# ---------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class TokenDistributionRequest:
    """Probabilities of target words at a slot, plus the top-k tokens there.

    * Masked LM: ``text`` contains exactly one ``MASK``; the distribution is the model's at that
      slot. A target must be a single token *in that context* (the text with the target in
      place of the mask tokenizes to as many tokens as the text with the mask); other targets
      get probability NaN and are listed by the backend in one warning.
    * Causal LM: ``text`` is a prompt; the distribution is the next token's. A multi-token
      target gets its exact chain-rule probability p(t1|x)·p(t2|x,t1)···.
    * Seq2seq LM: ``text`` is the encoder input; the distribution is the first decoder token's,
      chain rule over the decoder for multi-token targets.

    Example: ``TokenDistributionRequest("In 1921, [MASK] was a child.", ("she", "he"), 5)``.
    """

    request_type: ClassVar[RequestType] = RequestType.TOKEN_DISTRIBUTION
    result_type: ClassVar[type] = TokenDistributionResult

    text: str
    targets: tuple[str, ...] = ()
    top_k: int = 5

    def __post_init__(self) -> None:
        _check_count(self.top_k, "top_k")


@dataclass(frozen=True)
class SpanScoresRequest:
    """Start/end probabilities of candidate answer spans (extractive QA).

    ``spans`` are character offsets ``(start, end)`` (end exclusive) into ``context``. The
    backend runs one forward pass of ``(question, context)`` (``(context, question)`` when
    ``context_first``), takes a softmax over the start and over the end logits of the whole
    sequence (padding excluded), and reads the start probability at the span's first token and
    the end probability at its last token.

    Example: ``SpanScoresRequest("Who was late?", "Ann met Bob.", ((0, 3), (8, 11)))``.
    """

    request_type: ClassVar[RequestType] = RequestType.SPAN_SCORES
    result_type: ClassVar[type] = SpanScoresResult

    question: str
    context: str
    spans: tuple[tuple[int, int], ...]
    context_first: bool = False

    def __post_init__(self) -> None:
        for start, end in self.spans:
            if not 0 <= start < end <= len(self.context):
                raise BiaslensError(
                    f"span ({start}, {end}) is not inside the context of {len(self.context)} "
                    "characters"
                )


@dataclass(frozen=True)
class AnswerSpanRequest:
    """The extractive model's best answer span: argmax of p_start(i) · p_end(j) over context
    tokens with i <= j < i + ``max_answer_tokens`` (for QA accuracy, EM/F1); the input order
    as in :class:`SpanScoresRequest`."""

    request_type: ClassVar[RequestType] = RequestType.ANSWER_SPAN
    result_type: ClassVar[type] = AnswerSpanResult

    question: str
    context: str
    max_answer_tokens: int = 30
    context_first: bool = False

    def __post_init__(self) -> None:
        _check_count(self.max_answer_tokens, "max_answer_tokens")


@dataclass(frozen=True)
class ChoiceLogprobsRequest:
    """Log-likelihood of each choice as the continuation of ``prompt`` (sum over its tokens).

    Causal: ``log p(choice | prompt)`` by the chain rule; seq2seq: ``prompt`` is the encoder
    input and the choice is the decoder output. Example:
    ``ChoiceLogprobsRequest("Who was late?\\nAnswer:", (" Ann", " Bob"))``.
    """

    request_type: ClassVar[RequestType] = RequestType.CHOICE_LOGPROBS
    result_type: ClassVar[type] = ChoiceLogprobsResult

    prompt: str
    choices: tuple[str, ...]


@dataclass(frozen=True)
class GenerateRequest:
    """Greedy continuation of ``prompt`` with the top-k next-token distribution at every step.

    Generation stops at EOS (kept as the last step), after ``max_new_tokens`` steps, or once the
    decoded continuation contains one of ``stop`` (the continuation is cut before it; steps are
    kept up to the token that completed it). Example:
    ``GenerateRequest("Question: who was late?\\nAnswer:", max_new_tokens=5, stop=("\\n",))``.
    """

    request_type: ClassVar[RequestType] = RequestType.GENERATE
    result_type: ClassVar[type] = GenerateResult

    prompt: str
    max_new_tokens: int = 20
    top_k: int = 5
    stop: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        _check_count(self.max_new_tokens, "max_new_tokens")
        _check_count(self.top_k, "top_k")


@dataclass(frozen=True)
class ContrastiveGenerateRequest:
    """Contrastive Input Decoding: a continuation likely given ``x`` but not given ``x_prime``.

    Decodes from p̃(w) ∝ exp(lam · (p(w|x, y) − p(w|x', y))) · p(w|x, y) over the ``top_k``
    tokens of p(·|x, y), appending each token to both inputs (see
    ``biaslens.decoding.contrastive``).
    ``lam = 0`` is plain greedy decoding. Stops at EOS, ``max_new_tokens`` or a ``stop`` string
    (cut before it). ``do_sample`` samples from p̃ at ``temperature`` with a generator seeded by
    ``seed``. Example: ``ContrastiveGenerateRequest("John failed because he",
    "Ahmed failed because he", lam=5.0)``.
    """

    request_type: ClassVar[RequestType] = RequestType.CONTRASTIVE_GENERATE
    result_type: ClassVar[type] = ContrastiveGenerateResult

    x: str
    x_prime: str
    lam: float
    max_new_tokens: int = CID_MAX_NEW_TOKENS
    top_k: int = CID_TOP_K
    stop: tuple[str, ...] = field(default=())
    do_sample: bool = False
    temperature: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if not (isinstance(self.seed, int) and 0 <= self.seed <= MAX_SEED):
            raise BiaslensError(f"seed must be an integer from 0 to 2**32 - 1, got {self.seed!r}")
        if (problem := lambda_problem(self.lam)) is not None:
            raise BiaslensError(problem)
        _check_count(self.max_new_tokens, "max_new_tokens")
        _check_count(self.top_k, "top_k")
        if self.do_sample and (problem := temperature_problem(self.temperature)) is not None:
            raise BiaslensError(problem)


@dataclass(frozen=True)
class SampleRequest:
    """``samples`` replies to ``prompt`` drawn at temperature 1 with no top-k or top-p cut (the
    model's own next-token distribution), each up to ``max_new_tokens`` tokens: what a model
    that returns no probabilities can still give. ``seed`` names the draw: the same request
    is the same draw, so that a rerun reuses it and a larger budget adds draws of new seeds
    (:mod:`biaslens.scoring.sampled`). Example:
    ``SampleRequest("Answer: who was late?", samples=10, max_new_tokens=4)``."""

    request_type: ClassVar[RequestType] = RequestType.SAMPLE
    result_type: ClassVar[type] = SampleResult

    prompt: str
    samples: int = 10
    max_new_tokens: int = 4
    seed: int = 0

    def __post_init__(self) -> None:
        _check_count(self.samples, "samples")
        _check_count(self.max_new_tokens, "max_new_tokens")
        if not (isinstance(self.seed, int) and 0 <= self.seed <= MAX_SEED):
            raise BiaslensError(f"seed must be an integer from 0 to 2**32 - 1, got {self.seed!r}")


Request = (
    TokenDistributionRequest
    | SpanScoresRequest
    | AnswerSpanRequest
    | ChoiceLogprobsRequest
    | GenerateRequest
    | ContrastiveGenerateRequest
    | SampleRequest
)


def _fits(name: str, request_class: type) -> str | None:
    """A request class names its request type (``name``) and its result class."""
    if getattr(request_class, "request_type", None) != name:
        return f"{request_class.__name__}.request_type must be {name!r}"
    if not isinstance(getattr(request_class, "result_type", None), type):
        return f"{request_class.__name__} names no result_type class"
    return None


REQUESTS: Registry[type] = Registry("request type", type, check=_fits)
"""Each request type's request class, by the type's name (its ``result_type`` gives the result
class); the set is closed: a backend answers these seven, and a new one is a change here."""
for _request_class in (
    TokenDistributionRequest,
    SpanScoresRequest,
    AnswerSpanRequest,
    ChoiceLogprobsRequest,
    GenerateRequest,
    ContrastiveGenerateRequest,
    SampleRequest,
):
    REQUESTS.register(_request_class.request_type.value, _request_class)
REQUESTS.freeze()
