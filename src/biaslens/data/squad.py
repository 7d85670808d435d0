"""SQuAD-format QA files (``{"data": [{"paragraphs": [{"context", "qas": [...]}]}]}``)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from biaslens.errors import BiaslensError


def read_squad(path: Path) -> pd.DataFrame:
    """One row per answerable question: ``id, question, context, answers`` (list of texts)."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BiaslensError(f"SQuAD file {path} not found") from None
    except json.JSONDecodeError as error:
        raise BiaslensError(f"{path}:{error.lineno}: not valid JSON ({error.msg})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("data"), list):
        raise BiaslensError(f"{path}: expected SQuAD format {{'data': [...]}}")
    rows = []
    for a, article in enumerate(raw["data"]):
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
                    }
                )
    if not rows:
        raise BiaslensError(f"{path}: no answerable questions")
    return pd.DataFrame(rows)
