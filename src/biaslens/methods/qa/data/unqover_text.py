"""The text of UnQover's templates: their slots, and filling them (articles, word positions)."""

from __future__ import annotations

import re

SLOT = re.compile(r"\[[^\]]*\]")
LIST_MASK = "[mask]"
"""How UnQover's masked-LM templates mark the slot the model fills."""
SUBJECT_SLOT = re.compile(r"\[subj([12])(:[^\]]+)?\]")


def smooth_articles(text: str) -> str:
    """UnQover's smoothing: ``a``/``A`` becomes ``an``/``An`` before a vowel-initial word."""
    tokens = text.split(" ")
    for i in range(1, len(tokens)):
        if tokens[i][:1].lower() in "aeiou" and tokens[i][:1]:
            if tokens[i - 1] == "a":
                tokens[i - 1] = "an"
            elif tokens[i - 1] == "A":
                tokens[i - 1] = "An"
    return " ".join(tokens)


def find_word(text: str, word: str, avoid: tuple[int, int] | None = None) -> int:
    """Start of ``word`` in ``text`` at word boundaries, outside ``avoid``; -1 if absent."""
    for match in re.finditer(rf"(?<!\w){re.escape(word)}(?!\w)", text):
        if avoid is None or match.end() <= avoid[0] or match.start() >= avoid[1]:
            return match.start()
    return -1
