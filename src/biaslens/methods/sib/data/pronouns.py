"""Gendered and gender-neutral pronoun lists of the SIB paper (Appendix E).

Matching is case-insensitive: a token counts for a gender when its text, stripped of
whitespace and lower-cased, is one of that gender's words.
"""

from __future__ import annotations

NEUTRAL_LIST = ("They", "they")
MALE_LIST = ("He", "Him", "His", "Male", "he", "him", "his", "male")
FEMALE_LIST = ("She", "Her", "Female", "she", "her", "female")

GENDER_WORDS: dict[str, tuple[str, ...]] = {
    "female": FEMALE_LIST,
    "male": MALE_LIST,
    "neutral": NEUTRAL_LIST,
}
GENDERS = tuple(GENDER_WORDS)
_LOOKUP = {word.lower(): gender for gender, words in GENDER_WORDS.items() for word in words}


def gender_of(token: str) -> str | None:
    """The gender a token stands for (``" She"`` -> ``"female"``), or None."""
    return _LOOKUP.get(token.strip().lower())


def target_words(fills_slot: bool) -> tuple[tuple[str, str], ...]:
    """(gender, target string) pairs for exact scoring, in the paper's list order.

    A masked-LM target fills a slot: the word itself. A causal or seq2seq target is the word a
    reply begins with, which a tokenizer writes with or without the space before it: after
    ``Answer:`` as " She", after a chat template's assistant header, a newline or a trailing
    space as "She", and a seq2seq decoder as its tokenizer starts a text. Both spellings are
    targets, so that the mass is the probability that the reply's first word is a listed one
    wherever the prompt ends (callers count each distinct token sequence once).
    """
    spellings = ("",) if fills_slot else (" ", "")
    return tuple(
        (g, space + w) for g, words in GENDER_WORDS.items() for w in words for space in spellings
    )
