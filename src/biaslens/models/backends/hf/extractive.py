"""Extractive-QA jobs of the transformers backend: span scores and best answer spans.

The input is ``(question, context)``; a context too long for the model is cut at its end
(``truncation="only_second"`` at the model's context length), and a candidate span that the
cut drops is a clear error rather than a silent wrong score.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from biaslens.errors import BiaslensError
from biaslens.models.backends.hf.forward import start_end_logprobs
from biaslens.models.requests import AnswerSpanResult, RequestType, SpanScoresResult

if TYPE_CHECKING:
    from biaslens.models.backends.hf.runtime import HFRuntime

DEFAULT_MAX_LENGTH = 512
"""Input length when neither the model config nor the tokenizer states one."""


def encode_question_context(b: HFRuntime, question: str, context: str, context_first=False):
    """(question, context) — or (context, question) — with character offsets; a long context
    is cut at the model's context length (its position table and the tokenizer's declared
    maximum). Returns the encoding and the sequence id of the context (1, or 0)."""
    pair = (context, question) if context_first else (question, context)
    encoding = b.tokenizer(
        *pair,
        return_offsets_mapping=True,
        truncation="only_first" if context_first else "only_second",
        max_length=b.max_length or DEFAULT_MAX_LENGTH,
    )
    return encoding, 0 if context_first else 1


def char_span_to_tokens(offsets, sequence_ids, span, context_id: int = 1) -> tuple[int, int] | None:
    """First and last context token covering the character span [start, end)."""
    start, end = span
    first = last = None
    for index, ((a, z), seq) in enumerate(zip(offsets, sequence_ids, strict=True)):
        if seq != context_id or a == z:
            continue
        if first is None and a <= start < z:
            first = index
        if a < end <= z:
            last = index
    if first is None or last is None:
        return None
    return first, last


def encode_spans(
    b: HFRuntime,
    question: str,
    context: str,
    spans: Sequence[tuple[int, int]],
    context_first: bool = False,
) -> tuple[list[int], list[tuple[int, int] | None]]:
    """The pair's ids and the first/last token of each character span of the context; None
    for a span the (possibly truncated) input does not hold."""
    encoding, context_id = encode_question_context(b, question, context, context_first)
    sequence_ids = encoding.sequence_ids()
    token_spans = [
        char_span_to_tokens(encoding["offset_mapping"], sequence_ids, span, context_id)
        for span in spans
    ]
    return encoding["input_ids"], token_spans


def start_end_probs(b: HFRuntime, sequences: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    """Softmax over the start and over the end logits of each whole (unpadded) sequence."""
    with torch.inference_mode():
        start, end = start_end_logprobs(b, sequences)
    return start.exp().cpu(), end.exp().cpu()


def span_scores(b: HFRuntime, requests, progress) -> list[SpanScoresResult]:
    encoded = []
    for r in requests:
        ids, token_spans = encode_spans(b, r.question, r.context, r.spans, r.context_first)
        if any(span is None for span in token_spans):
            raise BiaslensError(
                f"an answer span lies outside the (possibly truncated) context: {r.context[:80]!r}"
            )
        encoded.append((ids, token_spans))

    def run(batch: list[int]) -> list[SpanScoresResult]:
        start, end = start_end_probs(b, [encoded[i][0] for i in batch])
        start, end = start.double(), end.double()
        results = []
        for row, i in enumerate(batch):
            spans = encoded[i][1]
            results.append(
                SpanScoresResult(
                    tuple(float(start[row, s]) for s, _ in spans),
                    tuple(float(end[row, e]) for _, e in spans),
                )
            )
        return results

    return b.batched(
        RequestType.SPAN_SCORES,
        list(range(len(requests))),
        [len(e[0]) for e in encoded],
        run,
        progress,
    )


def answer_span(b: HFRuntime, requests, progress) -> list[AnswerSpanResult]:
    encoded = []
    for r in requests:
        enc, context_id = encode_question_context(b, r.question, r.context, r.context_first)
        in_context = [s == context_id for s in enc.sequence_ids()]
        encoded.append((enc["input_ids"], enc["offset_mapping"], in_context))

    def run(batch: list[int]) -> list[AnswerSpanResult]:
        start, end = start_end_probs(b, [encoded[i][0] for i in batch])
        results = []
        for row, i in enumerate(batch):
            _, offsets, in_context = encoded[i]
            request = requests[i]
            allowed = torch.zeros(start.shape[1], dtype=torch.bool)
            allowed[: len(in_context)] = torch.tensor(in_context)
            ps = start[row].masked_fill(~allowed, 0)
            pe = end[row].masked_fill(~allowed, 0)
            joint = torch.triu(ps[:, None] * pe[None, :])
            joint = torch.tril(joint, diagonal=request.max_answer_tokens - 1)
            best = int(joint.argmax())
            first, last = divmod(best, joint.shape[1])
            char_start, char_end = offsets[first][0], offsets[last][1]
            results.append(
                AnswerSpanResult(
                    request.context[char_start:char_end],
                    char_start,
                    char_end,
                    float(joint[first, last]),
                )
            )
        return results

    return b.batched(
        RequestType.ANSWER_SPAN,
        list(range(len(requests))),
        [len(e[0]) for e in encoded],
        run,
        progress,
    )
