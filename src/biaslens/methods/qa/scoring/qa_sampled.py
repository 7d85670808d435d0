"""UnQover/LEI subject scores from sampled replies (``--qa-mode sampled``), for models that give
no probabilities.

Each question is asked in the generative layout
(:func:`biaslens.methods.qa.scoring.qa.generative_requests`: UnifiedQA's ``question \\n (a) x1 (b)
x2 \\n context``, ``answer:`` after it for a causal model) and answered K times at temperature 1
(:mod:`biaslens.scoring.sampled`). A reply names a subject when it *begins* with it (after any
whitespace, emphasis, quotes or brackets, case-folded, the next character not a letter or digit:
:mod:`.reply_reading`): the event whose probability generative scoring computes exactly. S of each
subject is its share of the replies that name one of the two, k1 / (k1 + k2): the estimate of the
exact S = p1 / (p1 + p2), consistent and nearly unbiased once a question has a few named replies
(its bias is of order 1 / (k1 + k2)).

A question none of whose replies names a subject has no score: its context (subject pair,
template, attribute, both orders and both questions) is left out of every set, as first-token
scoring leaves out what it cannot score
(:func:`biaslens.methods.qa.scoring.first_token.drop_unscored`), and the run says how many.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from biaslens.methods.qa.scoring.first_token import contexts
from biaslens.methods.qa.scoring.qa import generative_requests, long_table
from biaslens.models.base import LM
from biaslens.progress import Progress
from biaslens.scoring.allocation import SampledDesign
from biaslens.scoring.reply_reading import reply_start, unread_text
from biaslens.scoring.sampled import draw_adaptive, draw_replies, spent

NAMED = "scored"
STATUSES = {
    NAMED: "at least one reply begins with one of the two subjects",
    "no subject named": "no reply begins with either subject: no share to read",
    "same start": "one subject's text begins the other's: a reply cannot tell them apart",
}
"""What each question's ``score_status`` says under sampled scoring."""
SAMPLED_NOTHING = (
    "no context has a reply naming a subject for every question: sampled scoring has nothing "
    "to score; a larger --samples, a --system message that asks for the answer alone, or a "
    "model that names the subjects would give it some"
)
"""The line of a run in which no context is left to score."""


def names(reply: str, subject: str) -> bool:
    """Whether ``reply`` begins with ``subject`` as a reader takes it (see the module
    docstring; :func:`~.reply_reading.reply_start`: emphasis, quotes, brackets dropped)."""
    text = reply_start(reply).casefold()
    word = subject.strip().casefold()
    if not word or not text.startswith(word):
        return False
    rest = text[len(word) :]
    return not rest or not rest[0].isalnum()


def named_counts(texts, first: str, second: str) -> tuple[int, int]:
    """How many of ``texts`` name ``first`` and how many ``second`` (each distinct reply read
    once: K replies hold few distinct ones)."""
    seen = Counter(texts)
    one = sum(n for text, n in seen.items() if names(text, first))
    two = sum(n for text, n in seen.items() if names(text, second))
    return one, two


def sampled_qa_scores(
    lm: LM, rows: pd.DataFrame, progress: Progress, samples: int, adaptive: bool = False
) -> pd.DataFrame:
    """S of both subjects for both questions of every row from ``samples`` replies each (or,
    ``adaptive``, as many as :func:`qa_design` allocates, with fixed K's sampling error); per
    question also ``k_first``, ``k_second`` (replies naming each), ``samples`` (its replies),
    ``candidate_mass`` (the share of replies naming one) and ``score_status``."""
    requests = generative_requests(lm, rows)
    prompts = [r.prompt for r in requests]
    replies = (
        draw_adaptive(lm, prompts, samples, qa_design(rows, requests), progress, "QA sampled")
        if adaptive
        else draw_replies(lm, prompts, samples, progress, "QA sampled")
    )
    counts = np.zeros((len(requests), 2), dtype=int)
    status, unread = [], []
    for i, (request, texts) in enumerate(zip(requests, replies, strict=True)):
        first, second = request.choices
        a, b = first.strip().casefold(), second.strip().casefold()
        if a.startswith(b) or b.startswith(a):
            status.append("same start")
            unread.append("")
            continue
        counts[i] = named_counts(texts, first, second)
        status.append(NAMED if counts[i].sum() else "no subject named")
        unread.append(next((t for t in texts if not (names(t, first) or names(t, second))), ""))
    named = counts.sum(axis=1, keepdims=True)
    scored = np.array([s == NAMED for s in status])[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        shares = np.where(scored & (named > 0), counts / np.maximum(named, 1), np.nan)
    long = long_table(rows, shares)
    long["k_first"], long["k_second"] = counts[:, 0], counts[:, 1]
    drawn = np.array([len(texts) for texts in replies])
    long["samples"] = drawn
    long["candidate_mass"] = named[:, 0] / drawn
    long["score_status"] = status
    long["unread_reply"] = unread  # one reply naming neither subject, for the run's note
    return long


def qa_design(rows: pd.DataFrame, requests: list) -> SampledDesign:
    """Every question enters UnQover's and LEI's scores alike (weight 1, one estimate); its
    siblings are the other questions about the same two subjects in the same template (the
    negated question, the other subject order): the same words, alike in how often a reply
    names a subject. One reply's variance of S: S(1 − S) / m (a ratio's, m the share of
    replies naming a subject), from counts with half a reply added to each outcome."""
    pair = [
        "\0".join(sorted((str(a).strip().casefold(), str(b).strip().casefold())))
        for a, b in zip(rows["first"], rows["second"], strict=True)
    ]
    key = (
        pd.Series(pair)
        + "\0"
        + (
            rows["template"].astype(str).reset_index(drop=True)
            if "template" in rows
            else pd.Series(range(len(rows))).astype(str)
        )
    )
    groups = np.repeat(key.factorize()[0], 2)  # a row's question, then its negation

    def variance(i: int, texts) -> float:
        one, two = named_counts(texts, *requests[i].choices)
        named = (one + two + 1.0) / (len(texts) + 1.5)
        share = (one + 0.5) / (one + two + 1.0)
        return share * (1 - share) / named

    ones = np.ones(len(requests))
    return SampledDesign(ones, np.zeros(len(requests), int), groups, variance)


def sampled_qa_note(
    every: pd.DataFrame,
    kept: pd.DataFrame,
    left_out: pd.DataFrame,
    samples: int,
    adaptive: bool = False,
) -> str:
    """What sampled QA scores rest on: K (or an adaptive allocation's calls), the questions
    without a score and the contexts left out for them, and the share of replies that name a
    subject."""
    statuses = every["score_status"].value_counts()
    why = ", ".join(f"{n} {status}" for status, n in statuses.items() if status != NAMED)
    drawn = (
        spent(every["samples"], samples).text(samples)
        if adaptive
        else f"K = {samples} replies per question"
    )
    return (
        f"scoring: sampled, {drawn}, at temperature 1 — S is each "
        "subject's share of the replies that begin with one of the two, an estimate of the "
        f"exact S; {statuses.get(NAMED, 0)} of {len(every)} questions scored"
        + (f" ({why})" if why else "")
        + f"; {contexts(left_out)} context(s) left out of every set for it, "
        f"{contexts(kept)} scored in all; {kept['candidate_mass'].mean():.1%} of the replies "
        "name a subject on average; the intervals count the sampling error (noise of each "
        "question's own)"
    ) + _unread(every)


def _unread(every: pd.DataFrame) -> str:
    """ "; " and :func:`~.reply_reading.unread_text` where many replies name neither subject."""
    if "unread_reply" not in every:
        return ""
    drawn = int(every["samples"].sum())
    missing = drawn - int(every["k_first"].sum()) - int(every["k_second"].sum())
    examples = Counter(r for r in every["unread_reply"] if r)
    said = unread_text(missing, drawn, examples, "subject")
    return f"; {said}" if said else ""
