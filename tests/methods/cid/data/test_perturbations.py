"""Perturbation functions of the CID λ* study: each is seeded, changes the sentence the way
its family says, and refuses sentences it cannot act on."""

from __future__ import annotations

import numpy as np
import pytest

from biaslens.errors import BiaslensError
from biaslens.methods.cid.data import perturbations as P
from tests.helpers import assert_refused

SENTENCE = "The boss told her she will not receive a promotion this year because"


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def test_letter_duplication_doubles_exactly_one_letter():
    for seed in range(20):
        out = P.letter_duplication(SENTENCE, rng(seed))
        assert len(out) == len(SENTENCE) + 1
        i = next(k for k, (a, b) in enumerate(zip(SENTENCE, out, strict=False)) if a != b)
        assert out[i - 1] == out[i] or out[i] == out[i + 1]
        assert out[:i] + out[i + 1 :] == SENTENCE
    assert P.letter_duplication(SENTENCE, rng(3)) == P.letter_duplication(SENTENCE, rng(3))


def test_punctuation_inserts_a_comma_before_a_clause_word():
    assert P.punctuation(SENTENCE, rng(0)) == SENTENCE.replace(" because", ", because")
    plain = "Alice bought fresh apples"
    for seed in range(10):
        out = P.punctuation(plain, rng(seed))
        assert out.replace(",", "") == plain and out.count(",") == 1
    with pytest.raises(P.NotApplicable):
        P.punctuation("Hello", rng(0))


def test_spelling_replaces_one_letter_by_a_keyboard_neighbour():
    for seed in range(20):
        out = P.spelling(SENTENCE, rng(seed))
        diffs = [(a, b) for a, b in zip(SENTENCE, out, strict=True) if a != b]
        assert len(diffs) == 1
        original, typo = diffs[0]
        assert typo.lower() in P.KEYBOARD[original.lower()]
    with pytest.raises(P.NotApplicable):
        P.spelling("He is ok", rng(0))


def test_synonym_uses_the_lexicon_and_keeps_capitals():
    synonym = P.make_synonym({"boss": ("manager",), "will not": ("won't",)})
    outputs = {synonym(SENTENCE, rng(seed)) for seed in range(20)}
    assert outputs == {
        SENTENCE.replace("boss", "manager"),
        SENTENCE.replace("will not", "won't"),
    }
    capital = P.make_synonym({"the": ("a",)})
    assert capital("The cat", rng(0)) == "A cat"
    with pytest.raises(P.NotApplicable):
        synonym("Nothing here", rng(0))


def test_gender_swap_handles_pronouns_nouns_and_names():
    assert P.gender(SENTENCE) == (
        "The boss told him he will not receive a promotion this year because"
    )
    assert P.gender("The nurse told her that her test was fine") == (
        "The nurse told him that his test was fine"
    )
    assert P.gender("His father met John.") == "Her mother met Emma."
    assert P.gender(P.gender("She told him about her son")) == "She told him about her son"
    with pytest.raises(P.NotApplicable):
        P.gender("The weather is nice")


def test_variants_are_distinct_and_differ_from_the_input():
    found = P.variants(SENTENCE, P.spelling, rng(0), 5)
    assert len(found) == 5 == len(set(found)) and SENTENCE not in found
    assert P.variants(SENTENCE, P.gender, rng(0), 3) == [P.gender(SENTENCE)]


def test_project_files_load():
    assert P.load_sentences()[0] == SENTENCE
    pairs = P.load_semantic_pairs()
    assert set(pairs["type"]) == set(P.SEMANTIC_TYPES) and len(pairs) == 24
    assert (
        all(p.strip().lower() not in {"", "nan"} for p in pairs["perturbed"])
        and "boss" in P.load_synonyms()
    )


def test_bad_semantic_and_synonym_files(tmp_path):
    assert_refused(
        P.load_semantic_pairs, tmp_path / "pairs.tsv",
        ("type\toriginal\tperturbed\nsemantic huge\tA b\tA c\n", r"pairs.tsv:2: field 'type'"),
        ("type\toriginal\tperturbed\nsemantic subtle\tA b\n", r"pairs.tsv:2: expected three"),
        ("kind\tsource\ttarget\n", "expected the header"),
    )  # fmt: skip
    assert_refused(
        P.load_synonyms, tmp_path / "syn.tsv",
        ("word\tsynonyms\nboss\n", r"syn.tsv:2: expected a word"),
    )  # fmt: skip
    with pytest.raises(BiaslensError, match="not found"):
        P.load_sentences(tmp_path / "missing.txt")
