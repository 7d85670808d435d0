"""The request types: the only contract between methods and model backends.

Like lm-evaluation-harness's ``loglikelihood`` / ``generate_until``, every method is expressed
as these few requests, and every backend answers exactly these. Requests are frozen, hashable
dataclasses so that they can be cached by value.

Conventions shared by all requests
----------------------------------
* ``MASK`` (the literal string ``"[MASK]"``) marks the slot of a masked-LM request; the backend
  replaces it with its tokenizer's own mask token. Requests to causal / seq2seq models never
  contain it.
* Targets and choices are *continuations*: they are tokenized on their own (no special tokens)
  and appended to the tokenized prompt, so the word-boundary space belongs to the target
  (``" she"`` after ``"Answer:"``), exactly as lm-evaluation-harness does.
* Prompts are tokenized with the tokenizer's own special tokens by default; the backend option
  ``add_bos`` can force a BOS token onto causal prompts (see ``BackendConfig``).
* Probabilities are full-vocabulary softmax probabilities in float64 after the forward pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MASK = "[MASK]"


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

    text: str
    targets: tuple[str, ...] = ()
    top_k: int = 5


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
class SpanScoresRequest:
    """Start/end probabilities of candidate answer spans (extractive QA).

    ``spans`` are character offsets ``(start, end)`` (end exclusive) into ``context``. The
    backend runs one forward pass of ``(question, context)``, takes a softmax over the start and
    over the end logits of the whole sequence, and reads the start probability at the span's
    first token and the end probability at its last token.
    """

    question: str
    context: str
    spans: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class SpanScoresResult:
    start_probs: tuple[float, ...]
    end_probs: tuple[float, ...]


@dataclass(frozen=True)
class AnswerSpanRequest:
    """The extractive model's best answer span: argmax of p_start(i) · p_end(j) over context
    tokens with i <= j < i + ``max_answer_tokens`` (for QA accuracy, EM/F1)."""

    question: str
    context: str
    max_answer_tokens: int = 30


@dataclass(frozen=True)
class AnswerSpanResult:
    text: str
    start: int
    end: int
    score: float


@dataclass(frozen=True)
class ChoiceLogprobsRequest:
    """Log-likelihood of each choice as the continuation of ``prompt`` (sum over its tokens).

    Causal: ``log p(choice | prompt)`` by the chain rule; seq2seq: ``prompt`` is the encoder
    input and the choice is the decoder output. Example:
    ``ChoiceLogprobsRequest("Who was late?\\nAnswer:", (" Ann", " Bob"))``.
    """

    prompt: str
    choices: tuple[str, ...]


@dataclass(frozen=True)
class ChoiceLogprobsResult:
    logprobs: tuple[float, ...]
    num_tokens: tuple[int, ...]


@dataclass(frozen=True)
class GenerateRequest:
    """Greedy continuation of ``prompt`` with the top-k next-token distribution at every step.

    Generation stops at EOS (kept as the last step), after ``max_new_tokens`` steps, or once the
    decoded continuation contains one of ``stop`` (the continuation is cut before it; steps are
    kept up to the token that completed it).
    """

    prompt: str
    max_new_tokens: int = 20
    top_k: int = 5
    stop: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class GenerateResult:
    text: str
    tokens: tuple[str, ...]
    step_top_tokens: tuple[tuple[str, ...], ...]
    step_top_probs: tuple[tuple[float, ...], ...]


@dataclass(frozen=True)
class ContrastiveGenerateRequest:
    """Contrastive Input Decoding: a continuation likely given ``x`` but not given ``x_prime``.

    Decodes from p̃(w) ∝ exp(lam · (p(w|x, y) − p(w|x', y))) · p(w|x, y) over the ``top_k``
    tokens of p(·|x, y), appending each token to both inputs (see ``biaslens.decoding.cid``).
    ``lam = 0`` is plain greedy decoding. Stops at EOS, ``max_new_tokens`` or a ``stop`` string
    (cut before it). ``do_sample`` samples from p̃ at ``temperature`` with a generator seeded by
    ``seed``. Example: ``ContrastiveGenerateRequest("John failed because he",
    "Ahmed failed because he", lam=5.0)``.
    """

    x: str
    x_prime: str
    lam: float
    max_new_tokens: int = 20
    top_k: int = 50
    stop: tuple[str, ...] = field(default=())
    do_sample: bool = False
    temperature: float = 1.0
    seed: int = 0


@dataclass(frozen=True)
class ContrastiveGenerateResult:
    text: str
    num_tokens: int
    finish_reason: str


Request = (
    TokenDistributionRequest
    | SpanScoresRequest
    | ChoiceLogprobsRequest
    | GenerateRequest
    | ContrastiveGenerateRequest
)
