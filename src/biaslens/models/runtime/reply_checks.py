"""A served reply is a claim about a probability distribution: checked as one before it is read.

A server (vLLM, an OpenAI-compatible service, a proxy, a broken build) returns log-probabilities
that biaslens turns into probabilities and sums: a pronoun's mass, a QA option's score. Read
naively, a reply can inflate or invent probability: the same token listed twice in one step's
top-k is counted twice, six female words each at log-probability 0 make 600%, a reply with more
steps than were asked lets a pronoun at step 1001 count. So every step is checked before
anything is cached or scored:

* each value is a log-probability (a finite number <= 0, or -inf; a small positive rounding
  error up to :data:`LOGPROB_TOLERANCE` is read as 0);
* the tokens of one step are distinct;
* the probabilities one step lists (its top-k, or the given tokens asked for) add up to at most
  1 within :data:`MASS_TOLERANCE`;
* a reply has at most the steps that were asked for;
* a batch whose every reply is empty is refused (a reply of nothing scores as zero mass).

Each failure is one :class:`ServerError` line naming the server and what was wrong; nothing of
that reply is stored.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence

from biaslens.errors import BiaslensError


class ServerError(BiaslensError):
    """The server could not be reached, refused a request, or answered out of protocol."""


LOGPROB_TOLERANCE = 1e-4
"""A log-probability up to this far above 0 is a rounding error (read as 0), not a refusal."""
MASS_TOLERANCE = 1e-3
"""How far above 1 the probabilities of one step may add up (float32 soft-max rounding)."""


def check_logprob(value: object, where: str) -> float:
    """``value`` as a log-probability, or a one-line refusal."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or math.isnan(value)
        or value > LOGPROB_TOLERANCE
    ):
        raise ServerError(
            f"{where}: {value!r} is not a log-probability (a number <= 0); nothing of this "
            "reply was stored"
        )
    return float(value)


def check_step(pairs: Iterable[tuple[Hashable, object]], where: str) -> None:
    """One step's (token, log-probability) pairs: values are log-probabilities, tokens are
    distinct, and their probabilities add up to at most 1."""
    seen: set = set()
    total = 0.0
    for token, value in pairs:
        total += math.exp(min(check_logprob(value, where), 0.0))
        if token in seen:
            raise ServerError(
                f"{where}: the token {token!r} is listed twice in one step; a distribution "
                "lists each token once (nothing of this reply was stored)"
            )
        seen.add(token)
    if total > 1.0 + MASS_TOLERANCE:
        raise ServerError(
            f"{where}: the probabilities of one step add up to {total:.4g} > 1, so they are "
            "not a distribution (nothing of this reply was stored)"
        )


def check_step_count(count: int, asked: int, where: str) -> None:
    """A reply has at most the ``asked`` steps (``max_tokens``)."""
    if count > asked:
        raise ServerError(
            f"{where}: the reply has {count} steps where at most {asked} were asked "
            "(max_tokens); nothing of it was stored"
        )


def check_not_all_empty(lengths: Sequence[int], asked: Sequence[int], where: str) -> None:
    """Refuse a batch whose every reply is empty although tokens were asked for: scored, it
    would be zero mass everywhere, a plausible number from no answer at all."""
    if lengths and not any(lengths) and any(asked):
        raise ServerError(
            f"{where}: every one of the {len(lengths)} replies is empty (no tokens, no "
            "log-probabilities); scored, that would read as zero probability everywhere"
        )
