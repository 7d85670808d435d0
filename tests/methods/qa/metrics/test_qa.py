"""SQuAD EM/F1 against hand-computed values."""

from __future__ import annotations

import pytest

from biaslens.methods.qa.metrics.qa import exact_match, f1_score, normalize_answer, squad_scores


def test_normalisation_drops_case_punctuation_and_articles():
    assert normalize_answer("The  Market!") == "market"


def test_exact_match_and_f1_by_hand():
    assert exact_match("the market", ["Market", "a shop"]) == 1.0
    # "bob bought apples" vs "bob": precision 1/3, recall 1 -> F1 = 2·(1/3)/(4/3) = 0.5
    assert f1_score("Bob bought apples", ["Bob"]) == pytest.approx(0.5)
    assert f1_score("nothing", ["Bob"]) == 0.0
    scores = squad_scores(["Bob", "Bob bought apples"], [["Bob"], ["Bob"]])
    assert scores == pytest.approx({"exact_match": 50.0, "f1": 75.0, "questions": 2})
