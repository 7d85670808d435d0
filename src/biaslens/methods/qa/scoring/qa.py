"""Subject scores S(x) of QA models on UnQover/LEI examples (UnQover Section 3; LEI Section 3).

Input rows (one per context) carry ``first``/``second`` (subject identities), their text and
character offsets in ``context`` (``first_text``/``first_start`` …; ``first`` is the text when
there is no ``first_text``), ``question``, ``negated_question`` and optionally ``intervention``.
Output: the long score table of :mod:`biaslens.methods.qa.metrics.unqover`, two rows per context
(``negated`` False/True) with ``s_first``/``s_second``.

* Extractive (``span_scores``): S(x) = sqrt(p_start(first token of x) · p_end(last token of x)),
  both subjects from one forward pass; interventions go in the question as LEI encodes them.
  The input is (question, context) by default, as UnQover's zero-shot prediction; LEI's
  fine-tuning and its evaluation put the context first (``qa_order``).
* ``span_adjustment``: UnQover's adjustment of S (``qa_hf/predict.py``), where neighbouring
  words may stand in for the subject's start and end, whichever scores higher. ``articles``: a
  preceding article, a following person noun. ``reference``: the reference's full lists — a
  preceding a/an/the/some/few/several or "a group/team/couple of", a following man/woman/boy/
  girl/child/kid/person/folk/people/couple (and plurals), city/country(-ies), or ".".
* Generative (``choice_logprobs``): UnifiedQA input ``question \\n (a) x1 (b) x2 \\n context``
  + `` note that `` + intervention, lower-cased; S = the candidate's probability normalised over
  the two candidates. Causal models get real line breaks and ``\\nanswer:`` before the answer,
  and a candidate's probability is that of the reply beginning with it, spelled with or without
  the space before it (:func:`reply_spellings`).
* First token: :mod:`biaslens.methods.qa.scoring.first_token`.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import pandas as pd

from biaslens.errors import BiaslensError
from biaslens.methods.qa.data.lei import intervene_question
from biaslens.methods.qa.scoring.spans import (
    SpanAdjustment,
    SpanRule,
    alternative_boundaries,
    span_rule,
)
from biaslens.models.base import LM, ModelKind, ProgressCallback
from biaslens.models.requests import (
    ChoiceLogprobsRequest,
    SpanScoresRequest,
    TokenDistributionRequest,
)
from biaslens.progress import Progress

QAMode = Literal["extractive", "generative", "fill-mask", "first-token"]
QAOrder = Literal["question-first", "context-first"]
CAUSAL_ANSWER_CUE = "\nanswer:"


def qa_mode_for(lm: LM, fill_mask: bool = False) -> QAMode:
    """Extractive for extractive-QA models, generative for causal and seq2seq models;
    fill-mask for masked LMs where the caller can probe them (``fill_mask``)."""
    if lm.kind == ModelKind.EXTRACTIVE_QA:
        return "extractive"
    if lm.kind in (ModelKind.CAUSAL, ModelKind.SEQ2SEQ):
        return "generative"
    if fill_mask and lm.kind == ModelKind.MASKED:
        return "fill-mask"
    needs = (
        "extractive-QA, seq2seq, causal or masked"
        if fill_mask
        else "extractive-QA, seq2seq or causal"
    )
    raise BiaslensError(
        f"model {lm.identity.name!r} is a {lm.kind.value} model; this scoring needs an {needs} "
        "model"
    )


def _subject_spans(rows: pd.DataFrame, which: str) -> tuple[list[str], np.ndarray]:
    texts = rows[f"{which}_text"] if f"{which}_text" in rows else rows[which]
    return list(texts), rows[f"{which}_start"].to_numpy(dtype=int)


def _extractive_requests(
    rows: pd.DataFrame,
    adjustment: SpanAdjustment = "none",
    qa_order: QAOrder = "question-first",
    rule: SpanRule = "bpe",
) -> tuple[list[SpanScoresRequest], list[list[tuple[list[int], list[int]]]]]:
    """Two span requests per row (question, then its negation) and, per request and subject,
    which span indices may stand for its start and its end."""
    first_texts, first_starts = _subject_spans(rows, "first")
    second_texts, second_starts = _subject_spans(rows, "second")
    interventions = list(rows["intervention"]) if "intervention" in rows else [""] * len(rows)
    requests, layouts = [], []
    for i, context in enumerate(rows["context"]):
        spans: list[tuple[int, int]] = []
        layout = []
        for text, start in ((first_texts[i], first_starts[i]), (second_texts[i], second_starts[i])):
            start, end = int(start), int(start) + len(text)
            if context[start:end] != text:
                raise BiaslensError(f"row {i}: {text!r} is not at offset {start} of {context!r}")
            starts, ends = alternative_boundaries(context, start, end, adjustment, rule)
            indices = ([], [])
            for a in starts:
                indices[0].append(len(spans))
                spans.append((a, end))
            for b in ends[1:]:
                indices[1].append(len(spans))
                spans.append((start, b))
            layout.append((indices[0], [indices[0][0], *indices[1]]))
        for question in (rows["question"].iloc[i], rows["negated_question"].iloc[i]):
            asked = intervene_question(question, interventions[i])
            requests.append(
                SpanScoresRequest(asked, context, tuple(spans), qa_order == "context-first")
            )
            layouts.append(layout)
    return requests, layouts


def extractive_scores(
    lm: LM,
    rows: pd.DataFrame,
    progress: Progress,
    adjustment: SpanAdjustment = "none",
    qa_order: QAOrder = "question-first",
) -> pd.DataFrame:
    """Span scores of both subjects for both questions of every row."""
    lm.require("span_scores")
    rule = span_rule(dict(lm.identity.details))
    requests, layouts = _extractive_requests(rows, adjustment, qa_order, rule)
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


def generative_requests(lm: LM, rows: pd.DataFrame) -> list[ChoiceLogprobsRequest]:
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


def reply_spellings(answer: str) -> tuple[str, str]:
    """The two ways a causal model's reply can begin with ``answer``: after the space that
    follows ``answer:``, and without it, as after a chat template's assistant header."""
    word = answer.lstrip(" ")
    return " " + word, word


def candidate_logprobs(
    lm: LM, requests: list[ChoiceLogprobsRequest], tick: ProgressCallback | None
) -> np.ndarray:
    """log p of each request's candidates, shape (requests, candidates). For a causal model a
    candidate is the reply's beginning in either spelling (:func:`reply_spellings`: distinct
    token sequences, so their probabilities add); a seq2seq answer starts the decoder."""
    if lm.kind != ModelKind.CAUSAL:
        return np.array([r.logprobs for r in lm.choice_logprobs(requests, tick)], dtype=float)
    spelled = [
        ChoiceLogprobsRequest(r.prompt, tuple(v for c in r.choices for v in reply_spellings(c)))
        for r in requests
    ]
    values = np.array([r.logprobs for r in lm.choice_logprobs(spelled, tick)], dtype=float)
    pairs = values.reshape(len(requests), -1, 2)
    return np.logaddexp(pairs[..., 0], pairs[..., 1])


def _normalised(logprobs: np.ndarray) -> np.ndarray:
    logprobs = logprobs - logprobs.max(axis=1, keepdims=True)
    probs = np.exp(logprobs)
    return probs / probs.sum(axis=1, keepdims=True)


def generative_scores(lm: LM, rows: pd.DataFrame, progress: Progress) -> pd.DataFrame:
    """Normalised candidate probabilities of both subjects for both questions of every row."""
    lm.require("choice_logprobs")
    requests = generative_requests(lm, rows)
    tick = progress.task(f"generative QA scores ({lm.identity.name})", len(requests))
    return long_table(rows, _normalised(candidate_logprobs(lm, requests, tick)))


def subject_probabilities(
    lm: LM,
    rows: pd.DataFrame,
    progress: Progress,
    mode: QAMode | None = None,
    qa_order: QAOrder = "question-first",
) -> np.ndarray:
    """The probabilities the LEI losses act on, shape (rows, 2 questions, 2 subjects, K).

    Extractive: K = 2, p_start of the subject's first token and p_end of its last token.
    Generative: K = 1, the candidate probability normalised over the two subjects.
    """
    mode = mode or qa_mode_for(lm)
    if mode == "extractive":
        lm.require("span_scores")
        requests, _ = _extractive_requests(rows, "none", qa_order)
        tick = progress.task(f"zero-shot span probabilities ({lm.identity.name})", len(requests))
        results = lm.span_scores(requests, tick)
        probs = np.array([[r.start_probs, r.end_probs] for r in results], dtype=float)
        return probs.transpose(0, 2, 1).reshape(len(rows), 2, 2, 2)
    lm.require("choice_logprobs")
    requests = generative_requests(lm, rows)
    tick = progress.task(f"zero-shot candidate probabilities ({lm.identity.name})", len(requests))
    probs = _normalised(candidate_logprobs(lm, requests, tick))
    return probs.reshape(len(rows), 2, 2, 1)


PRONOUNS = {"female": ("she", "She"), "male": ("he", "He")}
"""The pronouns that may stand for a subject of a gender cluster (reference ``use_he_she``)."""


def fill_mask_scores(
    lm: LM,
    rows: pd.DataFrame,
    progress: Progress,
    top_k: int | None = None,
    pronouns: bool = False,
) -> pd.DataFrame:
    """S of both subjects at the ``[MASK]`` slot of both questions of every row (module doc).

    ``pronouns``: a subject of a female/male cluster scores max(S, p(she/he)), the reference's
    ``--use_he_she``; the pronoun's probability is that of both casings (exact) or the first
    top-k match (``top_k``)."""
    lm.require("token_distribution")
    first_texts, _ = _subject_spans(rows, "first")
    second_texts, _ = _subject_spans(rows, "second")
    clusters = rows[["first_cluster", "second_cluster"]].to_numpy() if pronouns else None
    requests = []
    for i, context in enumerate(rows["context"]):
        targets = (first_texts[i], second_texts[i])
        if pronouns:
            targets += PRONOUNS["female"] + PRONOUNS["male"]
        for question in (rows["question"].iloc[i], rows["negated_question"].iloc[i]):
            requests.append(TokenDistributionRequest(f"{context} {question}", targets, top_k or 10))
    tick = progress.task(f"fill-mask subject scores ({lm.identity.name})", len(requests))
    results = lm.token_distribution(requests, tick)
    scores = np.empty((len(requests), 2))
    for n, (request, result) in enumerate(zip(requests, results, strict=True)):
        if top_k is None:
            probs = dict(zip(request.targets, result.target_probs, strict=True))
        else:
            probs = _first_listed(request.targets, result.top_tokens, result.top_probs)
        for side in (0, 1):
            subject = request.targets[side]
            if math.isnan(result.target_probs[side]):  # not one token: cannot fill the slot
                scores[n, side] = math.nan
                continue
            score = probs[subject]
            if pronouns:
                cluster = str(clusters[n // 2, side]).lower()
                words = next((w for c, w in PRONOUNS.items() if cluster.startswith(c)), None)
                if words is None:
                    raise BiaslensError(
                        f"--pronouns needs female/male subject clusters; {subject!r} is in "
                        f"{clusters[n // 2, side]!r}"
                    )
                if top_k is None:  # each distinct token once ("she"/"She" in uncased BERT)
                    distinct = {
                        result.target_ids[request.targets.index(w)] or w: probs[w]
                        for w in words
                        if not math.isnan(probs[w])
                    }
                    pronoun = sum(distinct.values())
                else:
                    pronoun = max(probs[w] for w in words)
                score = max(score, pronoun)
            scores[n, side] = score
    return long_table(rows, scores)


def _first_listed(targets, top_tokens, top_probs) -> dict[str, float]:
    """Per target, the probability of the first top-k token equal to it ignoring case and
    spaces, else 0 (reference ``lm/predict.py``)."""
    listed: dict[str, float] = {}
    for token, prob in zip(top_tokens, top_probs, strict=True):
        listed.setdefault(token.strip().lower(), float(prob))
    return {t: listed.get(t.strip().lower(), 0.0) for t in targets}


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
    lm: LM,
    rows: pd.DataFrame,
    progress: Progress,
    mode: QAMode | None = None,
    adjustment: SpanAdjustment = "none",
    qa_order: QAOrder = "question-first",
) -> pd.DataFrame:
    """Score rows with the mode the model supports (or ``mode``). The span adjustment and the
    input order are extractive QA's; a generative model reads the UnifiedQA layout."""
    mode = mode or qa_mode_for(lm)
    if mode == "extractive":
        return extractive_scores(lm, rows, progress, adjustment, qa_order)
    if mode == "fill-mask":
        return fill_mask_scores(lm, rows, progress)
    return generative_scores(lm, rows, progress)
