"""Subject scores from the first answer token's top-k (``--qa-mode first-token``).

The UnifiedQA input of generative scoring (:mod:`biaslens.methods.qa.scoring.qa`), answered by one
greedy step with its top-k tokens (a ``generate`` request): what a chat endpoint with top
log-probabilities can give (the SIB paper's black-box requirement, Section 4). These are not
the paper's scores (UnQover reads the answer span's probability, LEI the candidates' full
likelihood), and a top-k truncation can make them look like them while resting on nothing, so
a question is scored only when its score is known (:func:`first_token_score`):

* a top token counts for a candidate when it *is* the candidate's first word (lower-cased,
  spaces stripped): a fragment such as ``Mus`` may start other words, and scoring fragments
  favours the subjects a tokenizer happens to split;
* candidates that share their first word cannot be told apart by it: no score;
* both candidates among the top-k: S = each one's mass over their sum, provided the two hold
  at least ``min_mass`` of the probability (:data:`MIN_CANDIDATE_MASS`), else no score;
* one candidate outside the top-k: its probability is at most the least top-k probability
  ``p_k`` (and the mass left outside the top-k), so S of the other lies in
  [m / (m + p_k), 1]. The midpoint is the score when that interval is at most
  :data:`MAX_BOUND_WIDTH` wide; otherwise no score. (Leaving all such questions out would
  leave out the model's clearest preferences and bias μ towards 0.)

Every question's status and candidate mass is stored; a context with an unscored question is
left out of every set and intervention alike (:func:`drop_unscored`), so that each set's μ
rests on the same contexts and their differences are the interventions', not the sample's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from biaslens.errors import BiaslensError
from biaslens.methods.qa.metrics.unqover_stream import context_ids
from biaslens.methods.qa.scoring.qa import generative_requests, long_table
from biaslens.models.base import LM
from biaslens.models.requests import GenerateRequest
from biaslens.progress import Progress

FIRST_TOKEN_TOP_K = 20
"""Top tokens read per question: the most OpenAI's chat endpoint returns."""
MIN_CANDIDATE_MASS = 0.1
"""Below this share of the first token's probability on the two candidates a question has no
score: a normalisation over almost nothing (``--min-candidate-mass``)."""
MAX_BOUND_WIDTH = 0.01
"""The widest interval on S (one candidate outside the top-k) whose midpoint is a score."""
SCORED = "scored"
STATUSES = {
    SCORED: "both candidates' first words among the top-k, or one and a narrow bound",
    "same first word": "the candidates start with the same word: its token cannot tell them apart",
    "neither in top-k": "neither candidate's first word is among the top-k tokens",
    "one outside top-k": "one candidate is outside the top-k and the bound on S is wider than "
    f"{MAX_BOUND_WIDTH}",
    "little candidate mass": "the candidates hold less than --min-candidate-mass of the "
    "probability",
}
"""What each question's ``score_status`` says (only ``scored`` questions have a score)."""


@dataclass(frozen=True)
class FirstTokenScore:
    """One question's first-token score: S of both candidates (NaN without a score), their
    probability mass, the half-width of the interval S lies in (0 when both are in the top-k)
    and the status (:data:`STATUSES`)."""

    scores: tuple[float, float]
    candidate_mass: float
    uncertainty: float
    status: str


def first_word(choice: str) -> str:
    words = choice.strip().lower().split()
    return words[0] if words else ""


def first_token_mass(
    choices: tuple[str, ...], tokens: tuple[str, ...], probs: tuple[float, ...]
) -> tuple[float, ...]:
    """Per choice, the summed probability of the top tokens equal to its first word (compared
    lower-cased without spaces). A first word that several choices share counts for none."""
    words = [first_word(c) for c in choices]
    mass = [0.0] * len(choices)
    for token, prob in zip(tokens, probs, strict=True):
        key = token.strip().lower()
        if key and words.count(key) == 1:
            mass[words.index(key)] += float(prob)
    return tuple(mass)


def first_token_score(
    choices: tuple[str, str],
    tokens: tuple[str, ...],
    probs: tuple[float, ...],
    min_mass: float = MIN_CANDIDATE_MASS,
) -> FirstTokenScore:
    """The score of one question by the rules of the module docstring."""
    nan = (float("nan"), float("nan"))
    if first_word(choices[0]) == first_word(choices[1]):
        return FirstTokenScore(nan, float("nan"), float("nan"), "same first word")
    mass = first_token_mass(choices, tokens, probs)
    total = sum(mass)
    if total == 0:
        return FirstTokenScore(nan, 0.0, float("nan"), "neither in top-k")
    if total < min_mass:
        return FirstTokenScore(nan, total, float("nan"), "little candidate mass")
    if min(mass) > 0:
        return FirstTokenScore((mass[0] / total, mass[1] / total), total, 0.0, SCORED)
    outside = min(min(probs), max(0.0, 1.0 - sum(probs)))  # the absent one's largest mass
    low = total / (total + outside)
    if 1.0 - low > MAX_BOUND_WIDTH:
        return FirstTokenScore(nan, total, (1.0 - low) / 2, "one outside top-k")
    present = (1.0 + low) / 2
    scores = (present, 1 - present) if mass[0] > 0 else (1 - present, present)
    return FirstTokenScore(scores, total, (1.0 - low) / 2, SCORED)


def first_token_scores(
    lm: LM,
    rows: pd.DataFrame,
    progress: Progress,
    top_k: int = FIRST_TOKEN_TOP_K,
    min_mass: float = MIN_CANDIDATE_MASS,
) -> pd.DataFrame:
    """S from the top-k of the first answer token (module docstring); per question also
    ``candidate_mass``, ``score_uncertainty`` (the half-width of the interval S lies in) and
    ``score_status``."""
    lm.require("generate")
    choices = generative_requests(lm, rows)
    requests = [GenerateRequest(c.prompt, max_new_tokens=1, top_k=top_k) for c in choices]
    tick = progress.task(f"first-token QA scores ({lm.identity.name})", len(requests))
    results = lm.generate(requests, tick)
    scored = [
        first_token_score(
            c.choices,
            r.step_top_tokens[0] if r.step_top_tokens else (),
            r.step_top_probs[0] if r.step_top_probs else (),
            min_mass,
        )
        for c, r in zip(choices, results, strict=True)
    ]
    long = long_table(rows, np.array([s.scores for s in scored], dtype=float))
    long["candidate_mass"] = [s.candidate_mass for s in scored]
    long["score_uncertainty"] = [s.uncertainty for s in scored]
    long["score_status"] = [s.status for s in scored]
    return long


def drop_unscored(
    scores: pd.DataFrame, nothing_scored: str | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The score table without the contexts (subject pair, template, attribute) that have a
    question without a score in any set or intervention, and the questions left out: a context
    goes from all at once, with both subject orders and both questions, so that every set
    rests on the same contexts. ``nothing_scored``: the line when no context is left (the
    scoring's words; the questions' statuses are added after its first clause)."""
    context = context_ids(scores, ())
    missing = (scores["s_first"].isna() | scores["s_second"].isna()).to_numpy()
    dropped = np.isin(context, context[missing])
    kept = scores.loc[~dropped].reset_index(drop=True)
    if kept.empty:
        why = ""
        if "score_status" in scores:
            counts = scores["score_status"].value_counts()
            why = (
                f" ({len(scores)} questions: "
                + ", ".join(f"{n} {status}" for status, n in counts.items())
                + ")"
            )
        said = nothing_scored or (
            "no context has a first-token score in every set: first-token scoring has nothing "
            "to score; the candidates' first words are rarely among the model's top "
            f"{FIRST_TOKEN_TOP_K} answers, or hold less than --min-candidate-mass: score it "
            "generatively on a /v1/completions server"
        )
        head, _, tail = said.partition(";")
        raise BiaslensError(f"{head}{why};{tail}")
    return kept, scores.loc[dropped].reset_index(drop=True)


def contexts(scores: pd.DataFrame) -> int:
    """Contexts in a score table, each subject order counted (as UnQover counts them)."""
    return len(scores[["first", "second", "template", "attribute"]].drop_duplicates())
