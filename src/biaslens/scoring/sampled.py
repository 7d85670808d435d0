"""Answer-class frequencies from sampled replies, for models that return no probabilities.

SIB Method 1 and 2 and UnQover's generative scoring need only the probability of each answer
class at a prompt (SIB Appendix E: the pronoun the reply begins with; UnQover Section 3: the
subject the answer names). A model served without log-probabilities still answers: K replies
drawn at temperature 1, top-p 1 (its own next-token distribution, nothing truncated), each
read by the method's rule, give per-prompt class frequencies, unbiased for those
probabilities (:class:`~biaslens.models.requests.SampleRequest`).

Draws are asked in blocks of :data:`BLOCK` replies, block ``b`` of a prompt with a seed drawn
from the prompt and ``b`` (distinct prompts get distinct draws even where their distributions
agree): the request cache keeps every block, so a rerun reuses them and a larger K only adds
the blocks it lacks.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from biaslens.common.options import FLAG
from biaslens.common.seeds import derived_seed
from biaslens.models.base import LM
from biaslens.models.requests import RequestType, SampleRequest
from biaslens.progress import Progress, note
from biaslens.scoring.allocation import (
    CAP_TIMES,
    SampledDesign,
    Spent,
    replies_per_input,
    sibling_variances,
)
from biaslens.scoring.reply_reading import reply_start

BLOCK = 10
"""Replies per sample request (one call with ``n`` where the server takes it)."""
SAMPLED_MAX_NEW_TOKENS = 4
"""Tokens per sampled reply: enough to read its first word (a name of two tokens too)."""
DEFAULT_SAMPLES = 50
"""Sampled scoring's replies per input: a frequency's standard error is at most 7.1 points
(√(¼/50)), and on the full MGC dates set (60 frames × 30 W) the sampling error widens the
female − male slope's 95% interval by about ±0.06 pp per step at pronoun shares of 30%."""
Samples = Annotated[
    int,
    Field(
        ge=1,
        le=100_000,
        description="Sampled scoring (models that give no probabilities): replies drawn per "
        "prompt at temperature 1, in blocks of 10 (a rerun with a larger K reuses the first "
        "draws).",
    ),
    FLAG,
]
"""The ``samples`` setting of the methods that can score sampled replies."""
Allocation = Annotated[
    Literal["adaptive", "fixed"],
    Field(
        description="Sampled scoring: 'adaptive' draws a pilot block of 10 replies per prompt, "
        "then gives more where the headline estimate needs them (by the prompt's weight in it "
        "and its siblings' pilot replies, never its own), with the sampling error of fixed "
        "--samples and fewer calls (at most twice --samples per prompt); 'fixed': --samples "
        "replies for every prompt."
    ),
    FLAG,
]
"""The ``allocation`` setting (:mod:`biaslens.scoring.allocation`)."""


def adaptive(settings) -> bool:
    """Whether a method's ``settings`` ask sampled scoring with adaptive allocation."""
    return settings.mode == "sampled" and settings.allocation == "adaptive"


FIRST_WORD = re.compile(r"[^\W\d_]+")


def first_word(reply: str) -> str | None:
    """The reply's first word as a reader takes it (:func:`~.reply_reading.reply_start`):
    letters after any whitespace, emphasis, quotes or brackets (``" **She** was"`` ->
    ``"She"``; ``"\\n1."`` -> None)."""
    match = FIRST_WORD.match(reply_start(reply))
    return match.group(0) if match else None


def blocks(prompt: str, samples: int, first: int = 0) -> list[tuple[int, int]]:
    """(seed, replies) of the blocks that make up ``samples`` draws for ``prompt``
    (:data:`BLOCK` each, the last one shorter), block ``b`` seeded from (``b``, ``prompt``),
    from block ``first`` on."""
    return [
        (derived_seed(start // BLOCK, prompt), min(BLOCK, samples - start))
        for start in range(first * BLOCK, samples, BLOCK)
    ]


def answers_only_samples(lm: LM) -> bool:
    """Whether ``lm`` gives sampled replies and nothing else (a served model that returns no
    log-probabilities): where the methods choose sampled scoring themselves."""
    return set(lm.capabilities) == {RequestType.SAMPLE}


def draw_replies(
    lm: LM,
    prompts: Sequence[str],
    samples: int,
    progress: Progress,
    label: str,
    max_new_tokens: int = SAMPLED_MAX_NEW_TOKENS,
) -> list[list[str]]:
    """``samples`` replies to each prompt (in blocks, see the module docstring)."""
    lm.require("sample")
    description = f"{label}, {samples} sampled replies each ({lm.identity.name})"
    return _draw(lm, prompts, [(0, samples)] * len(prompts), progress, description, max_new_tokens)


def draw_adaptive(
    lm: LM,
    prompts: Sequence[str],
    samples: int,
    design: SampledDesign,
    progress: Progress,
    label: str,
    max_new_tokens: int = SAMPLED_MAX_NEW_TOKENS,
) -> list[list[str]]:
    """Replies to each prompt allocated by ``design`` (:mod:`biaslens.scoring.allocation`):
    a pilot block for every prompt, then the blocks the allocation gives it, the same blocks
    (seeds) fixed K draws, so the two share the request cache (:func:`spent` counts them)."""
    lm.require("sample")
    if samples <= BLOCK:  # the pilot is all of K: nothing to allocate
        return draw_replies(lm, prompts, samples, progress, label, max_new_tokens)
    name = lm.identity.name
    pilot = _draw(
        lm,
        prompts,
        [(0, BLOCK)] * len(prompts),
        progress,
        f"{label}, pilot of {BLOCK} replies each ({name})",
        max_new_tokens,
    )
    own = np.array([design.variance(i, replies) for i, replies in enumerate(pilot)], float)
    variances = sibling_variances(design.groups, own)
    wanted = replies_per_input(design.weights, variances, design.estimates, samples, BLOCK)
    bill = spent(wanted, samples)
    note(
        progress,
        f"{label}: adaptive allocation, {bill.calls:,} calls of up to {BLOCK} "
        f"replies ({bill.calls / bill.fixed_calls:.0%} of fixed K = {samples}'s "
        f"{bill.fixed_calls:,}; from {len(prompts):,}, the pilot alone, to {bill.most_calls:,} "
        "by the pilot's replies)",
    )
    more = _draw(
        lm,
        prompts,
        [(BLOCK, int(k)) for k in wanted],
        progress,
        f"{label}, allocated replies ({name})",
        max_new_tokens,
    )
    return [first + rest for first, rest in zip(pilot, more, strict=True)]


def spent(replies_per_prompt: Sequence[int], samples: int) -> Spent:
    """The calls that drew ``replies_per_prompt`` (blocks of :data:`BLOCK`), against fixed
    ``samples``' and the most adaptive allocation may make."""
    counts = np.asarray(replies_per_prompt, dtype=int)
    per_fixed = math.ceil(samples / BLOCK)
    return Spent(
        calls=int(np.ceil(counts / BLOCK).sum()),
        fixed_calls=len(counts) * per_fixed,
        most_calls=len(counts)
        * (math.ceil(CAP_TIMES * samples / BLOCK) if samples > BLOCK else per_fixed),
        least_replies=int(counts.min()) if len(counts) else 0,
        most_replies=int(counts.max()) if len(counts) else 0,
    )


def _draw(
    lm: LM,
    prompts: Sequence[str],
    spans: Sequence[tuple[int, int]],
    progress: Progress,
    description: str,
    max_new_tokens: int,
) -> list[list[str]]:
    """Replies ``start`` to ``end`` (``spans``, multiples of :data:`BLOCK` but the last) of
    each prompt, block ``b`` seeded as :func:`blocks` seeds it."""
    owners, requests = [], []
    for i, (prompt, (start, end)) in enumerate(zip(prompts, spans, strict=True)):
        for seed, size in blocks(prompt, end, start // BLOCK):
            owners.append(i)
            requests.append(SampleRequest(prompt, size, max_new_tokens, seed))
    replies: list[list[str]] = [[] for _ in prompts]
    if not requests:
        return replies
    results = lm.sample(requests, progress.task(description, len(requests)))
    for owner, result in zip(owners, results, strict=True):
        replies[owner] += result.texts
    return replies


def class_counts(replies: Sequence[str], classify, classes: Sequence[str]) -> np.ndarray:
    """How many ``replies`` ``classify`` puts in each of ``classes`` (None: in none); each
    distinct reply is read once."""
    counts = np.zeros(len(classes), dtype=int)
    index = {c: i for i, c in enumerate(classes)}
    for reply, n in Counter(replies).items():
        found = classify(reply)
        if found is not None:
            counts[index[found]] += n
    return counts
