"""How lei-eval scores its questions: as the model supports (extractive spans, or the
candidates' likelihood), or from the first answer token's top-k with what those scores rest on
(:mod:`biaslens.methods.qa.scoring.first_token`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from biaslens.framework.registry import RunContext
from biaslens.methods.qa.scoring.first_token import (
    FIRST_TOKEN_TOP_K,
    SCORED,
    contexts,
    drop_unscored,
    first_token_scores,
)
from biaslens.methods.qa.scoring.qa import score_examples
from biaslens.methods.qa.scoring.qa_sampled import (
    SAMPLED_NOTHING,
    sampled_qa_note,
    sampled_qa_scores,
)
from biaslens.scoring.sampled import spent


@dataclass
class ScoredQuestions:
    """The scores of every question kept; for first-token scoring, the questions left out,
    the note and the summary's ``first_token`` metrics."""

    scores: pd.DataFrame
    left_out: pd.DataFrame | None = None
    notes: list[str] = field(default_factory=list)
    metrics: dict | None = None


def scoring_label(mode: str, samples: int | None = None, allocation: str = "fixed") -> str:
    """How the scores were computed, as every table and headline of the run says it."""
    if mode == "sampled":
        return f"sampled, K = {samples}" + (", adaptive" if allocation == "adaptive" else "")
    return f"first-token top-{FIRST_TOKEN_TOP_K}" if mode == "first-token" else mode


def first_token_note(all_scores: pd.DataFrame, kept: pd.DataFrame, left_out: pd.DataFrame) -> str:
    """What first-token scores rest on: the questions without a score, by why, the contexts
    left out of every set for them, and the candidates' share of the probability."""
    statuses = all_scores["score_status"].value_counts()
    why = ", ".join(f"{n} {status}" for status, n in statuses.items() if status != SCORED)
    return (
        f"first-token scores (top-{FIRST_TOKEN_TOP_K} of the first answer token), not the "
        f"paper's: {statuses.get(SCORED, 0)} of {len(all_scores)} questions scored"
        + (f" ({why})" if why else "")
        + f"; {contexts(left_out)} context(s) left out of every set for it "
        "(unscored_questions.parquet), "
        f"{contexts(kept)} scored in all; the candidates hold "
        f"{kept['candidate_mass'].mean():.1%} of the probability on average"
    )


def score_questions(ctx: RunContext, rows: pd.DataFrame, settings) -> ScoredQuestions:
    """Score every question of ``rows`` in the settings' mode."""
    if settings.mode == "sampled":
        return _sampled(ctx, rows, settings.samples, settings.allocation == "adaptive")
    if settings.mode != "first-token":
        return ScoredQuestions(
            score_examples(
                ctx.lm,
                rows,
                ctx.progress,
                settings.mode,
                settings.span_adjustment,
                settings.qa_order,
            )
        )
    every = first_token_scores(ctx.lm, rows, ctx.progress, min_mass=settings.min_candidate_mass)
    scores, left_out = drop_unscored(every)
    statuses = every["score_status"].value_counts()
    metrics = {
        "top_k": FIRST_TOKEN_TOP_K,
        "min_candidate_mass": settings.min_candidate_mass,
        "questions_by_status": {str(k): int(v) for k, v in statuses.items()},
        "contexts_without_score": contexts(left_out),
        "mean_candidate_mass": float(scores["candidate_mass"].mean()),
    }
    return ScoredQuestions(scores, left_out, [first_token_note(every, scores, left_out)], metrics)


def _sampled(ctx: RunContext, rows: pd.DataFrame, samples: int, adaptive: bool) -> ScoredQuestions:
    """Sampled scoring (:mod:`biaslens.methods.qa.scoring.qa_sampled`): the contexts with a question
    no reply names a subject in are left out of every set."""
    every = sampled_qa_scores(ctx.lm, rows, ctx.progress, samples, adaptive)
    scores, left_out = drop_unscored(every, SAMPLED_NOTHING)
    metrics = {
        "samples": samples,
        "sampled_calls": spent(every["samples"], samples).calls,
        "questions_by_status": {
            str(k): int(v) for k, v in every["score_status"].value_counts().items()
        },
        "contexts_without_score": contexts(left_out),
        "mean_named_share": float(scores["candidate_mass"].mean()),
    }
    return ScoredQuestions(
        scores, left_out, [sampled_qa_note(every, scores, left_out, samples, adaptive)], metrics
    )
