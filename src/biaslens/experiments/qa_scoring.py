"""Subject scores S(x) of QA models on UnQover/LEI examples (DESIGN.md, UnQover / LEI).

Input rows (one per context) carry ``first``/``second`` (subject identities), their text and
character offsets in ``context`` (``first_text``/``first_start`` …; ``first`` is the text when
there is no ``first_text``), ``question``, ``negated_question`` and optionally ``intervention``.
Output: the long score table of :mod:`biaslens.metrics.unqover`, two rows per context
(``negated`` False/True) with ``s_first``/``s_second``.

* Extractive (``span_scores``): S(x) = sqrt(p_start(first token of x) · p_end(last token of x)),
  both subjects from one forward pass; interventions go in the question as LEI encodes them.
  ``head_words``: UnQover's adjustment, where a preceding article may stand in for the start and
  a following head word (``man``, ``women`` …) for the end, whichever scores higher.
* Generative (``choice_logprobs``): UnifiedQA input ``question \\n (a) x1 (b) x2 \\n context``
  + `` note that `` + intervention, lower-cased; S = the candidate's probability normalised over
  the two candidates. Causal models get real line breaks and ``\\nanswer:`` before the answer.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from biaslens.data.lei import intervene_question
from biaslens.errors import BiaslensError
from biaslens.models.base import LM, ModelKind
from biaslens.models.requests import ChoiceLogprobsRequest, SpanScoresRequest
from biaslens.progress import Progress

QAMode = Literal["extractive", "generative"]
ARTICLES = ("a", "an", "the", "A", "An", "The")
HEAD_WORDS = ("man", "woman", "men", "women", "boy", "girl", "boys", "girls", "person", "people")
CAUSAL_ANSWER_CUE = "\nanswer:"


def qa_mode_for(lm: LM) -> QAMode:
    """Extractive for extractive-QA models, generative for causal and seq2seq models."""
    if lm.kind == ModelKind.EXTRACTIVE_QA:
        return "extractive"
    if lm.kind in (ModelKind.CAUSAL, ModelKind.SEQ2SEQ):
        return "generative"
    raise BiaslensError(
        f"model {lm.identity.name!r} is a {lm.kind.value} model; UnQover/LEI scoring needs an "
        "extractive-QA, seq2seq or causal model"
    )


def _subject_spans(rows: pd.DataFrame, which: str) -> tuple[list[str], np.ndarray]:
    texts = rows[f"{which}_text"] if f"{which}_text" in rows else rows[which]
    return list(texts), rows[f"{which}_start"].to_numpy(dtype=int)


def _neighbour_spans(context: str, start: int, end: int) -> tuple[int | None, int | None]:
    """Start of a preceding article and end of a following head word, if present."""
    before = context[:start].rstrip(" ")
    article = before.rsplit(" ", 1)[-1]
    article_start = len(before) - len(article) if article in ARTICLES and before else None
    after = context[end:]
    head = after.lstrip(" ").split(" ", 1)[0].rstrip(".,;:!?")
    head_end = (
        end + (len(after) - len(after.lstrip(" "))) + len(head) if head in HEAD_WORDS else None
    )
    if head_end is not None and head_end == end:
        head_end = None
    return article_start, head_end


def _extractive_requests(
    rows: pd.DataFrame, head_words: bool
) -> tuple[list[SpanScoresRequest], list[list[tuple[list[int], list[int]]]]]:
    """Two span requests per row (question, then its negation) and, per request and subject,
    which span indices may stand for its start and its end."""
    first_texts, first_starts = _subject_spans(rows, "first")
    second_texts, second_starts = _subject_spans(rows, "second")
    interventions = list(rows["intervention"]) if "intervention" in rows else [""] * len(rows)
    requests, layouts = [], []
    for i, context in enumerate(rows["context"]):
        spans, layout = [], []
        for text, start in ((first_texts[i], first_starts[i]), (second_texts[i], second_starts[i])):
            end = int(start) + len(text)
            if context[start:end] != text:
                raise BiaslensError(f"row {i}: {text!r} is not at offset {start} of {context!r}")
            starts, ends = [len(spans)], [len(spans)]
            spans.append((int(start), end))
            if head_words:
                article_start, head_end = _neighbour_spans(context, int(start), end)
                if article_start is not None:
                    starts.append(len(spans))
                    spans.append((article_start, end))
                if head_end is not None:
                    ends.append(len(spans))
                    spans.append((int(start), head_end))
            layout.append((starts, ends))
        for question in (rows["question"].iloc[i], rows["negated_question"].iloc[i]):
            asked = intervene_question(question, interventions[i])
            requests.append(SpanScoresRequest(asked, context, tuple(spans)))
            layouts.append(layout)
    return requests, layouts


def extractive_scores(
    lm: LM, rows: pd.DataFrame, progress: Progress, head_words: bool = False
) -> pd.DataFrame:
    """Span scores of both subjects for both questions of every row."""
    lm.require("span_scores")
    requests, layouts = _extractive_requests(rows, head_words)
    tick = progress.task(f"extractive QA scores ({lm.identity.name})", len(requests))
    results = lm.span_scores(requests, tick)
    scores = np.empty((len(results), 2))
    for r, (result, layout) in enumerate(zip(results, layouts, strict=True)):
        for s, (starts, ends) in enumerate(layout):
            scores[r, s] = max(
                np.sqrt(result.start_probs[a] * result.end_probs[b]) for a in starts for b in ends
            )
    return long_table(rows, scores)


def unifiedqa_input(
    question: str, first: str, second: str, context: str, intervention: str, causal: bool
) -> str:
    """UnifiedQA multiple-choice input with the LEI intervention after the context."""
    if intervention:
        context = f"{context} note that {intervention}"
    return unifiedqa_prompt((question, f"(a) {first} (b) {second}", context), causal)


def unifiedqa_prompt(parts: tuple[str, ...], causal: bool) -> str:
    """UnifiedQA layout: parts joined by a literal ``\\n`` (seq2seq) or line breaks with an
    answer cue (causal), lower-cased."""
    sep = "\n" if causal else " \\n "
    text = sep.join(parts).lower()
    return text + CAUSAL_ANSWER_CUE if causal else text


def _generative_requests(lm: LM, rows: pd.DataFrame) -> list[ChoiceLogprobsRequest]:
    """Two requests per row (question, then its negation) with the two subjects as choices."""
    causal = lm.kind == ModelKind.CAUSAL
    first_texts, _ = _subject_spans(rows, "first")
    second_texts, _ = _subject_spans(rows, "second")
    interventions = list(rows["intervention"]) if "intervention" in rows else [""] * len(rows)
    requests = []
    for i, context in enumerate(rows["context"]):
        for question in (rows["question"].iloc[i], rows["negated_question"].iloc[i]):
            requests.append(
                subject_choice_request(
                    question, first_texts[i], second_texts[i], context, interventions[i], causal
                )
            )
    return requests


def subject_choice_request(
    question: str, first: str, second: str, context: str, intervention: str, causal: bool
) -> ChoiceLogprobsRequest:
    """One question in UnifiedQA format with the two subjects as the choices."""
    prompt = unifiedqa_input(question, first, second, context, intervention, causal)
    return ChoiceLogprobsRequest(prompt, candidate_answers(first, second, causal))


def candidate_answers(first: str, second: str, causal: bool) -> tuple[str, str]:
    """The two subjects as answer continuations (lower-cased; a leading space for causal)."""
    choices = (first.lower(), second.lower())
    return (" " + choices[0], " " + choices[1]) if causal else choices


def _normalised(logprobs: np.ndarray) -> np.ndarray:
    logprobs = logprobs - logprobs.max(axis=1, keepdims=True)
    probs = np.exp(logprobs)
    return probs / probs.sum(axis=1, keepdims=True)


def generative_scores(lm: LM, rows: pd.DataFrame, progress: Progress) -> pd.DataFrame:
    """Normalised candidate probabilities of both subjects for both questions of every row."""
    lm.require("choice_logprobs")
    requests = _generative_requests(lm, rows)
    tick = progress.task(f"generative QA scores ({lm.identity.name})", len(requests))
    results = lm.choice_logprobs(requests, tick)
    return long_table(rows, _normalised(np.array([r.logprobs for r in results], dtype=float)))


def subject_probabilities(
    lm: LM, rows: pd.DataFrame, progress: Progress, mode: QAMode | None = None
) -> np.ndarray:
    """The probabilities the LEI losses act on, shape (rows, 2 questions, 2 subjects, K).

    Extractive: K = 2, p_start of the subject's first token and p_end of its last token.
    Generative: K = 1, the candidate probability normalised over the two subjects.
    """
    mode = mode or qa_mode_for(lm)
    if mode == "extractive":
        lm.require("span_scores")
        requests, _ = _extractive_requests(rows, head_words=False)
        tick = progress.task(f"zero-shot span probabilities ({lm.identity.name})", len(requests))
        results = lm.span_scores(requests, tick)
        probs = np.array([[r.start_probs, r.end_probs] for r in results], dtype=float)
        return probs.transpose(0, 2, 1).reshape(len(rows), 2, 2, 2)
    lm.require("choice_logprobs")
    requests = _generative_requests(lm, rows)
    tick = progress.task(f"zero-shot candidate probabilities ({lm.identity.name})", len(requests))
    results = lm.choice_logprobs(requests, tick)
    probs = _normalised(np.array([r.logprobs for r in results], dtype=float))
    return probs.reshape(len(rows), 2, 2, 1)


def long_table(rows: pd.DataFrame, scores: np.ndarray) -> pd.DataFrame:
    """Two rows per context: the attribute question (even rows), then its negation."""
    base = rows.drop(columns=["question", "negated_question"]).reset_index(drop=True)
    long = base.loc[base.index.repeat(2)].reset_index(drop=True)
    long.insert(0, "row", np.repeat(np.arange(len(base)), 2))
    long["negated"] = np.tile([False, True], len(base))
    long["question"] = np.ravel(
        np.column_stack([rows["question"].to_numpy(), rows["negated_question"].to_numpy()])
    )
    long["s_first"], long["s_second"] = scores[:, 0], scores[:, 1]
    return long


def score_examples(
    lm: LM, rows: pd.DataFrame, progress: Progress, mode: QAMode | None = None, head_words=False
) -> pd.DataFrame:
    """Score rows with the mode the model supports (or ``mode``)."""
    mode = mode or qa_mode_for(lm)
    if mode == "extractive":
        return extractive_scores(lm, rows, progress, head_words=head_words)
    if head_words:
        raise BiaslensError("the article / head-word adjustment applies to extractive QA only")
    return generative_scores(lm, rows, progress)
