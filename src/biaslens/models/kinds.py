"""Model kinds and what an in-process model of each kind answers (no torch, no other layer).

:mod:`biaslens.models.base` re-exports every name here.
"""

from __future__ import annotations

import enum

from biaslens.models.requests import RequestType


class ModelKind(str, enum.Enum):
    """What a model is, which decides how each method scores it: a masked LM fills a slot, a
    causal or seq2seq LM generates or scores continuations, an extractive-QA model scores
    answer spans."""

    MASKED = "masked-lm"
    CAUSAL = "causal-lm"
    SEQ2SEQ = "seq2seq-lm"
    EXTRACTIVE_QA = "extractive-qa"


KIND_NAMES = {
    "masked": ModelKind.MASKED,
    "causal": ModelKind.CAUSAL,
    "seq2seq": ModelKind.SEQ2SEQ,
    "extractive-qa": ModelKind.EXTRACTIVE_QA,
}
"""The model kinds by the names ``--model-kind`` takes."""


class Exactness(str, enum.Enum):
    """How a backend answers a request type."""

    EXACT = "exact"
    TOP_K = "top-k limited"


GENERATIVE = {
    RequestType.TOKEN_DISTRIBUTION: Exactness.EXACT,
    RequestType.CHOICE_LOGPROBS: Exactness.EXACT,
    RequestType.GENERATE: Exactness.EXACT,
    RequestType.CONTRASTIVE_GENERATE: Exactness.EXACT,
}
KIND_CAPABILITIES: dict[ModelKind, dict[RequestType, Exactness]] = {
    ModelKind.MASKED: {RequestType.TOKEN_DISTRIBUTION: Exactness.EXACT},
    ModelKind.CAUSAL: GENERATIVE,
    ModelKind.SEQ2SEQ: GENERATIVE,
    ModelKind.EXTRACTIVE_QA: {
        RequestType.SPAN_SCORES: Exactness.EXACT,
        RequestType.ANSWER_SPAN: Exactness.EXACT,
    },
}
"""What an in-process model of each kind answers (the transformers and vLLM backends)."""
