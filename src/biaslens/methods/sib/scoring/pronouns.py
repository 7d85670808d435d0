"""Gendered-pronoun mass of model inputs (SIB Appendices E and G), shared by Methods 1 and 2.

``exact``: full-vocabulary probability of the Appendix E words at the slot / as the reply's
first word, written with or without the space before it (:func:`.target_words`). ``paper``:
the listed words among the top-5 at the slot; for causal and seq2seq models, greedy decoding
of up to 20 tokens with the Appendix G rule. ``sampled`` (models that give no probabilities):
the share of K replies drawn at temperature 1 whose first word is a listed one
(:mod:`biaslens.scoring.sampled`), which estimates the exact mass without bias.
"""

from __future__ import annotations

import pandas as pd

from biaslens.errors import BiaslensError
from biaslens.methods.sib.data.pronouns import GENDERS, gender_of, target_words
from biaslens.methods.sib.metrics.sib import mass_exact, mass_from_generation, mass_top_k
from biaslens.models.base import LM, ModelKind
from biaslens.models.requests import GenerateRequest, TokenDistributionRequest
from biaslens.progress import Progress
from biaslens.scoring.allocation import SampledDesign
from biaslens.scoring.reply_reading import unread_note
from biaslens.scoring.sampled import (
    answers_only_samples,
    class_counts,
    draw_adaptive,
    draw_replies,
    first_word,
    spent,
)

PAPER_TOP_K = 5
PAPER_MAX_NEW_TOKENS = 20


def check_pronoun_model(lm: LM, mode: str) -> None:
    """Fail early, in one line, when ``lm`` cannot score pronouns in ``mode``."""
    if lm.kind == ModelKind.EXTRACTIVE_QA:
        raise BiaslensError(
            f"model {lm.identity.name!r} is an extractive-QA model and cannot fill a pronoun "
            "slot; this method needs a masked, causal or seq2seq language model"
        )
    if mode == "sampled":
        if lm.kind == ModelKind.MASKED:
            raise BiaslensError(
                "--scoring sampled reads the first word of replies; a masked LM fills a slot "
                "and gives its probabilities (--scoring exact)"
            )
        lm.require("sample")
        return
    generates = mode == "paper" and lm.kind != ModelKind.MASKED
    lm.require("generate" if generates else "token_distribution")


def scoring_for(lm: LM, mode: str) -> str:
    """``mode``, or ``sampled`` where the model answers only sampled replies (a served model
    that returns no log-probabilities) and the default exact scoring was asked."""
    if mode == "exact" and answers_only_samples(lm):
        return "sampled"
    return mode


def sampled_note(
    mode: str,
    samples: int,
    adaptive: pd.Series | None = None,
    scored: pd.DataFrame | None = None,
) -> str | None:
    """What a reader must know of numbers read from sampled replies (``adaptive``: the
    replies per input an adaptive allocation drew, whose calls it states; ``scored``: the rows
    of :func:`score_rows`, whose replies that begin with no pronoun it counts where they are
    many: :func:`~.reply_reading.unread_note`)."""
    if mode != "sampled":
        return None
    drawn = (
        f"K = {samples} replies per input"
        if adaptive is None
        else spent(adaptive, samples).text(samples)
    )
    unread = None
    if scored is not None and "replies" in scored:
        unread = unread_note(scored["replies"], lambda r: reply_gender(r) is not None, "pronoun")
    return (
        f"scoring: sampled, {drawn}, at temperature 1 — every pronoun probability is a "
        "frequency, an unbiased estimate of the exact one, and the intervals count its "
        "sampling error (cell noise, independent over inputs)"
    ) + (f"; {unread}" if unread else "")


def reply_gender(reply: str) -> str | None:
    """The pronoun class of a reply's first word (Appendix E lists), or None."""
    word = first_word(reply)
    return gender_of(word) if word is not None else None


def score_rows(
    lm: LM,
    rows: pd.DataFrame,
    mode: str,
    progress: Progress,
    label: str = "MGC",
    max_new_tokens: int = PAPER_MAX_NEW_TOKENS,
    samples: int = 0,
    design: SampledDesign | None = None,
) -> pd.DataFrame:
    """Ask the backend for each row's distribution and reduce it to masses per gender
    (``max_new_tokens``: the greedy steps of paper mode for causal and seq2seq models;
    ``samples``: the replies drawn per row in sampled mode — K, or under ``design`` the
    fixed K whose sampling error an adaptive allocation keeps — whose counts are kept beside
    the frequencies as ``k_female`` … and ``samples``, the row's replies)."""
    if mode == "sampled":
        prompts, label = list(rows["input"]), f"{label} sampled"
        replies = (
            draw_replies(lm, prompts, samples, progress, label)
            if design is None
            else draw_adaptive(lm, prompts, samples, design, progress, label)
        )
        counts = [class_counts(r, reply_gender, GENDERS) for r in replies]
        scored = rows.copy()
        for i, gender in enumerate(GENDERS):
            scored[f"k_{gender}"] = [int(c[i]) for c in counts]
            scored[f"p_{gender}"] = [c[i] / len(r) for c, r in zip(counts, replies, strict=True)]
        scored["samples"] = [len(r) for r in replies]
        scored["replies"] = replies
        return scored
    masked = lm.kind == ModelKind.MASKED
    pairs = target_words(fills_slot=masked)
    genders = [g for g, _ in pairs]
    targets = tuple(w for _, w in pairs)
    scored = rows.copy()
    if mode == "exact" or masked:
        requests = [TokenDistributionRequest(t, targets, PAPER_TOP_K) for t in rows["input"]]
        tick = progress.task(f"{label} {mode} ({lm.identity.name})", len(requests))
        results = lm.token_distribution(requests, tick)
        if mode == "exact":
            masses = [mass_exact(genders, r.target_probs, r.target_ids) for r in results]
        else:
            masses = [mass_top_k(r.top_tokens, r.top_probs) for r in results]
        scored["top_tokens"] = [list(r.top_tokens) for r in results]
        scored["top_probs"] = [list(r.top_probs) for r in results]
    else:
        requests = [GenerateRequest(t, max_new_tokens, PAPER_TOP_K) for t in rows["input"]]
        tick = progress.task(f"{label} paper, greedy decoding ({lm.identity.name})", len(requests))
        results = lm.generate(requests, tick)
        masses = [mass_from_generation(r.step_top_tokens, r.step_top_probs) for r in results]
        scored["generation"] = [r.text for r in results]
        scored["top_tokens"] = [
            list(r.step_top_tokens[0]) if r.step_top_tokens else [] for r in results
        ]
        scored["top_probs"] = [
            list(r.step_top_probs[0]) if r.step_top_probs else [] for r in results
        ]
    for gender in GENDERS:
        scored[f"p_{gender}"] = [m[gender] for m in masses]
    return scored
