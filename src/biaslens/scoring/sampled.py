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
from collections.abc import Sequence
from typing import Annotated

import numpy as np
from pydantic import Field

from biaslens.common.options import FLAG
from biaslens.common.seeds import derived_seed
from biaslens.models.base import LM
from biaslens.models.requests import RequestType, SampleRequest
from biaslens.progress import Progress

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
FIRST_WORD = re.compile(r"\s*([^\W\d_]+)")


def first_word(reply: str) -> str | None:
    """The reply's first word as a reader takes it: letters after any leading whitespace
    (``" She was"`` -> ``"She"``; ``"\\n1."`` -> None)."""
    match = FIRST_WORD.match(reply)
    return match.group(1) if match else None


def blocks(prompt: str, samples: int) -> list[tuple[int, int]]:
    """(seed, replies) of the blocks that make up ``samples`` draws for ``prompt``
    (:data:`BLOCK` each, the last one shorter), block ``b`` seeded from (``b``, ``prompt``)."""
    return [(derived_seed(block, prompt), min(BLOCK, samples - start))
            for block, start in enumerate(range(0, samples, BLOCK))]  # fmt: skip


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
    per_prompt = math.ceil(samples / BLOCK)
    requests = [
        SampleRequest(prompt, size, max_new_tokens, seed)
        for prompt in prompts
        for seed, size in blocks(prompt, samples)
    ]
    tick = progress.task(f"{label}, {samples} sampled replies each ({lm.identity.name})",
                         len(requests))  # fmt: skip
    results = lm.sample(requests, tick)
    replies: list[list[str]] = []
    for i in range(len(prompts)):
        texts: list[str] = []
        for result in results[i * per_prompt : (i + 1) * per_prompt]:
            texts += result.texts
        replies.append(texts)
    return replies


def class_counts(replies: Sequence[str], classify, classes: Sequence[str]) -> np.ndarray:
    """How many ``replies`` ``classify`` puts in each of ``classes`` (None: in none)."""
    counts = np.zeros(len(classes), dtype=int)
    index = {c: i for i, c in enumerate(classes)}
    for reply in replies:
        found = classify(reply)
        if found is not None:
            counts[index[found]] += 1
    return counts
