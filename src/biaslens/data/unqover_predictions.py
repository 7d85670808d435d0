"""Reader for UnQover's own prediction dumps, so existing predictions can be scored.

Format: ``{key: {context, q0: {question, pred, ans0: {text, start, end}, ans1: …}, q1: …}}`` with
keys ``cluster1|cluster2|subj1|subj2|tid|category|act|act`` and optionally a 9th field naming the
intervention. ``start``/``end`` are the answer's start and end probabilities; S = sqrt(start·end)
(UnQover ``analysis.py``). ``ans0`` is the first-mentioned subject (``subj1``).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from biaslens.data.sources import read_json
from biaslens.errors import BiaslensError


def _probability(path: Path, key: str, where: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BiaslensError(f"{path}: {key!r}: {where} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value < 0 or value > 1:
        raise BiaslensError(
            f"{path}: {key!r}: {where} must be a probability in [0, 1], got {value}"
        )
    return value


def read_predictions(path: Path) -> pd.DataFrame:
    """The long score table of :mod:`biaslens.metrics.unqover` (two rows per key).

    Adds ``intervention`` when keys have a 9th field, and ``first_cluster``/``second_cluster``.
    """
    path = Path(path)
    raw = read_json(path, "prediction file")
    if not isinstance(raw, dict) or not raw:
        raise BiaslensError(f"{path}: expected a non-empty {{key: prediction}} object")
    rows = []
    widths = set()
    for key, example in raw.items():
        fields = key.split("|")
        if len(fields) not in (8, 9):
            raise BiaslensError(
                f"{path}: key {key!r} has {len(fields)} '|' fields; expected "
                "cluster1|cluster2|subj1|subj2|tid|category|act|act[|intervention]"
            )
        widths.add(len(fields))
        if not isinstance(example, dict):
            raise BiaslensError(f"{path}: {key!r}: prediction must be an object")
        for q, negated in (("q0", False), ("q1", True)):
            question = example.get(q)
            if not isinstance(question, dict):
                raise BiaslensError(
                    f"{path}: {key!r} lacks {q} (the "
                    f"{'negated' if negated else 'attribute'} question)"
                )
            scores = []
            for answer in ("ans0", "ans1"):
                entry = question.get(answer)
                if not isinstance(entry, dict):
                    raise BiaslensError(f"{path}: {key!r}: {q}.{answer} is missing")
                start = _probability(path, key, f"{q}.{answer}.start", entry.get("start"))
                end = _probability(path, key, f"{q}.{answer}.end", entry.get("end"))
                scores.append(math.sqrt(start * end))
            row = {
                "key": key,
                "first_cluster": fields[0],
                "second_cluster": fields[1],
                "first": fields[2],
                "second": fields[3],
                "template": fields[4],
                "category": fields[5],
                "attribute": fields[6],
                "negated": negated,
                "s_first": scores[0],
                "s_second": scores[1],
            }
            if len(fields) == 9:
                row["intervention"] = fields[8]
            rows.append(row)
    if len(widths) > 1:
        raise BiaslensError(f"{path}: some keys have an intervention field and some do not")
    return pd.DataFrame(rows)
