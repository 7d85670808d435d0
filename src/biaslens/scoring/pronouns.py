"""Gendered-pronoun mass of model inputs (SIB Appendices E and G), shared by Methods 1 and 2.

``exact``: full-vocabulary probability of the Appendix E words at the slot / as the reply's
first word, written with or without the space before it (:func:`.target_words`). ``paper``:
the listed words among the top-5 at the slot; for causal and seq2seq models, greedy decoding
of up to 20 tokens with the Appendix G rule.
"""

from __future__ import annotations

import pandas as pd

from biaslens.data.pronouns import GENDERS, target_words
from biaslens.errors import BiaslensError
from biaslens.metrics.sib import mass_exact, mass_from_generation, mass_top_k
from biaslens.models.base import LM, ModelKind
from biaslens.models.requests import GenerateRequest, TokenDistributionRequest
from biaslens.progress import Progress

PAPER_TOP_K = 5
PAPER_MAX_NEW_TOKENS = 20


def check_pronoun_model(lm: LM, mode: str) -> None:
    """Fail early, in one line, when ``lm`` cannot score pronouns in ``mode``."""
    if lm.kind == ModelKind.EXTRACTIVE_QA:
        raise BiaslensError(
            f"model {lm.identity.name!r} is an extractive-QA model and cannot fill a pronoun "
            "slot; this method needs a masked, causal or seq2seq language model"
        )
    generates = mode == "paper" and lm.kind != ModelKind.MASKED
    lm.require("generate" if generates else "token_distribution")


def score_rows(
    lm: LM,
    rows: pd.DataFrame,
    mode: str,
    progress: Progress,
    label: str = "MGC",
    max_new_tokens: int = PAPER_MAX_NEW_TOKENS,
) -> pd.DataFrame:
    """Ask the backend for each row's distribution and reduce it to masses per gender
    (``max_new_tokens``: the greedy steps of paper mode for causal and seq2seq models)."""
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
