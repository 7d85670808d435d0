"""QA utility: SQuAD exact match and token F1 (the official SQuAD v1.1 evaluation rules).

Answers are normalised (lower-case, punctuation and the articles a/an/the removed, whitespace
collapsed); a prediction scores the maximum over the gold answers.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, gold: Sequence[str]) -> float:
    return float(max(normalize_answer(prediction) == normalize_answer(g) for g in gold))


def _f1(prediction: str, gold: str) -> float:
    predicted, expected = normalize_answer(prediction).split(), normalize_answer(gold).split()
    common = sum((Counter(predicted) & Counter(expected)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(expected)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, gold: Sequence[str]) -> float:
    return max(_f1(prediction, g) for g in gold)


def squad_scores(predictions: Sequence[str], golds: Sequence[Sequence[str]]) -> dict[str, float]:
    """Mean EM and F1 in percent over the questions."""
    if not predictions:
        return {"exact_match": float("nan"), "f1": float("nan"), "questions": 0}
    em = [exact_match(p, g) for p, g in zip(predictions, golds, strict=True)]
    f1 = [f1_score(p, g) for p, g in zip(predictions, golds, strict=True)]
    return {
        "exact_match": 100 * sum(em) / len(em),
        "f1": 100 * sum(f1) / len(f1),
        "questions": len(em),
    }
