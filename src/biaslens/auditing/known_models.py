"""The known models beside an audited card's numbers: where the audited value stands among
them, read in the direction of bias, and the paired differences the methods computed."""

from __future__ import annotations

from biaslens.auditing.card import BiasCard, references_of
from biaslens.common.numbers import readable, readable_interval


def paired_cell(ref) -> str:
    """The audited model − a known model, paired over the items both answered, as a cell."""
    if ref.difference is None:
        return "—"
    text = readable(ref.difference)
    if ref.difference_ci_low is not None and ref.difference_ci_high is not None:
        text += " " + readable_interval(ref.difference_ci_low, ref.difference_ci_high)
    elif ref.difference_note:
        text += f" (no interval: {ref.difference_note})"
    return text + (f", over {ref.paired_over}" if ref.paired_over else "")


def protocols(card: BiasCard) -> list[str]:
    """Each protocol the known models were scored by, once, in the card's order."""
    return list(dict.fromkeys(r.protocol for r in card.references))


def no_bias_of(card: BiasCard, row) -> float | None:
    """The no-bias value of ``row``'s number (a question's answer reads its card row's)."""
    return next(
        (
            r.no_bias_value
            for r in card.rows
            if (r.step, r.metric, r.labels) == (row.step, row.metric, row.labels)
        ),
        None,
    )


def standing(card: BiasCard, row, short: bool = False) -> str | None:
    """Where ``row`` (a card row or a question's answer) falls among the known models on the
    same probe, read in the direction of bias: by distance from the number's no-bias value
    (a signed number's sign says which way, not how biased); ``short``: without the
    protocol's differences, for the first screen."""
    same = references_of(card, row)
    if not same or row.value is None or getattr(row, "caution", None):
        return None  # a value with a caution has no standing (its caution says why)
    no_bias = no_bias_of(card, row)
    if no_bias is None:
        below = sum(r.value < row.value for r in same)
        text = f"{below} of {len(same)} known models have a lower value (no no-bias value to read)"
    else:
        distance = abs(row.value - no_bias)
        more = sum(abs(r.value - no_bias) > distance for r in same)
        less = sum(abs(r.value - no_bias) < distance for r in same)
        text = (
            f"less biased than {more} of {len(same)} known models and more biased than {less} "
            f"(point values, by distance from {no_bias:g}; the paired differences carry the "
            "intervals)"
        )
    if not same[0].same_protocol:
        why = "" if short else f": {same[0].why_not_same}"
        text += f" (for orientation only: this run's protocol differs{why})"
    return text
