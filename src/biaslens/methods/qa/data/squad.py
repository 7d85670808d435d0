"""SQuAD-format QA files (``{"data": [{"paragraphs": [{"context", "qas": [...]}]}]}``)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from biaslens.data.sources import read_json
from biaslens.errors import BiaslensError


def squad_articles(path: Path, what: str = "SQuAD file") -> list:
    """The ``data`` list of a SQuAD-format file (clear errors for a missing file, bad JSON or
    another layout)."""
    raw = read_json(path, what)
    if not isinstance(raw, dict) or not isinstance(raw.get("data"), list):
        raise BiaslensError(f"{path}: expected SQuAD format {{'data': [...]}}")
    return raw["data"]


def read_squad(path: Path) -> pd.DataFrame:
    """One row per answerable question: ``id, question, context, answers`` (list of texts) and
    ``answer_starts`` (their character offsets; None where a file gives none)."""
    path = Path(path)
    rows = []
    for a, article in enumerate(squad_articles(path)):
        for p, paragraph in enumerate(article.get("paragraphs", [])):
            context = paragraph.get("context")
            if not isinstance(context, str):
                raise BiaslensError(f"{path}: data[{a}].paragraphs[{p}] lacks a context")
            for q, qa in enumerate(paragraph.get("qas", [])):
                where = f"data[{a}].paragraphs[{p}].qas[{q}]"
                answers = [x.get("text") for x in qa.get("answers", []) if isinstance(x, dict)]
                if not isinstance(qa.get("question"), str):
                    raise BiaslensError(f"{path}: {where} lacks a question")
                if not answers or not all(isinstance(t, str) for t in answers):
                    if qa.get("is_impossible") in (True, "true"):
                        continue
                    raise BiaslensError(f"{path}: {where} has no answer texts")
                rows.append(
                    {
                        "id": str(qa.get("id", where)),
                        "question": qa["question"],
                        "context": context,
                        "answers": answers,
                        "answer_starts": [
                            x.get("answer_start")
                            if isinstance(x.get("answer_start"), int)
                            else None
                            for x in qa.get("answers", [])
                            if isinstance(x, dict)
                        ],
                    }
                )
    if not rows:
        raise BiaslensError(f"{path}: no answerable questions")
    return pd.DataFrame(rows)
