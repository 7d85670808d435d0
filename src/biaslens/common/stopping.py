"""Stop strings, shared by plain generation and contrastive decoding (every backend)."""

from __future__ import annotations

from collections.abc import Sequence


def apply_stop(stops: Sequence[str], pieces: Sequence[str], text: str) -> tuple[int, str]:
    """Cut ``text`` at the first stop string it contains.

    Returns the number of steps to keep (up to and including the token that completed the stop
    string) and the text before the stop string. Without a stop string, everything is kept.
    """
    cut = [text.index(s) for s in stops if s and s in text]
    if not cut:
        return len(pieces), text
    position = min(cut)
    consumed = ""
    for step, piece in enumerate(pieces):
        consumed += piece
        if len(consumed) > position:
            return step + 1, text[:position]
    return len(pieces), text[:position]


def contains_stop(stops: Sequence[str], text: str) -> bool:
    return any(s and s in text for s in stops)
