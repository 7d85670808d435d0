"""Reader for UnQover's own prediction dumps, so existing predictions can be scored.

Format: ``{key: {context, q0: {question, pred, ans0: {text, start, end}, ans1: …}, q1: …}}`` with
keys ``cluster1|cluster2|subj1|subj2|tid|category|act|act`` and optionally a 9th field naming the
intervention. ``start``/``end`` are the answer's start and end probabilities; S = sqrt(start·end)
(UnQover ``analysis.py``). ``ans0`` is the first-mentioned subject (``subj1``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from biaslens.common.json_stream import iter_object_members
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


CHUNK_KEYS = 50_000
"""Keys per chunk of :func:`iter_predictions` (two rows each)."""
COLUMNS = (
    "key",
    "first_cluster",
    "second_cluster",
    "first",
    "second",
    "template",
    "category",
    "attribute",
    "negated",
    "s_first",
    "s_second",
)


def read_predictions(path: Path) -> pd.DataFrame:
    """The long score table of :mod:`biaslens.methods.qa.metrics.unqover` (two rows per key).

    Adds ``intervention`` when keys have a 9th field, and ``first_cluster``/``second_cluster``.
    Holds the whole file's rows; :func:`iter_predictions` streams them."""
    return pd.concat(list(iter_predictions(path)), ignore_index=True)


def iter_predictions(path: Path, chunk_keys: int | None = None) -> Iterator[pd.DataFrame]:
    """:func:`read_predictions`'s rows, ``chunk_keys`` keys at a time, in file order.

    The file is parsed member by member (:func:`~biaslens.common.json_stream.iter_object_members`),
    so memory holds one chunk whatever the file's size. A chunk need not hold both subject
    orders of its contexts (:class:`~biaslens.methods.qa.metrics.unqover_stream.UnqoverAccumulator`
    pairs them across chunks)."""
    path = Path(path)
    chunk_keys = chunk_keys or CHUNK_KEYS
    columns: dict[str, list] = {}
    width = None
    keys = 0
    for key, example in iter_object_members(path, "prediction file"):
        fields = key.split("|")
        if len(fields) not in (8, 9):
            raise BiaslensError(
                f"{path}: key {key!r} has {len(fields)} '|' fields; expected "
                "cluster1|cluster2|subj1|subj2|tid|category|act|act[|intervention]"
            )
        if width is not None and len(fields) != width:
            raise BiaslensError(f"{path}: some keys have an intervention field and some do not")
        if width is None:
            width = len(fields)
            names = COLUMNS + (("intervention",) if width == 9 else ())
            columns = {name: [] for name in names}
        if not isinstance(example, dict):
            raise BiaslensError(f"{path}: {key!r}: prediction must be an object")
        for q, negated in (("q0", False), ("q1", True)):
            scores = _question_scores(path, key, example, q, negated)
            values = (key, *fields[:2], *fields[2:7], negated, *scores)
            for name, value in zip(COLUMNS, values, strict=True):
                columns[name].append(value)
            if width == 9:
                columns["intervention"].append(fields[8])
        keys += 1
        if keys % chunk_keys == 0:
            yield pd.DataFrame(columns)
            columns = {name: [] for name in columns}
    if not keys:
        raise BiaslensError(f"{path}: expected a non-empty {{key: prediction}} object")
    if columns["key"]:
        yield pd.DataFrame(columns)


def _question_scores(path: Path, key: str, example: dict, q: str, negated: bool) -> list[float]:
    """S = sqrt(start·end) of ans0 and ans1 for question ``q``."""
    question = example.get(q)
    if not isinstance(question, dict):
        raise BiaslensError(
            f"{path}: {key!r} lacks {q} (the {'negated' if negated else 'attribute'} question)"
        )
    scores = []
    for answer in ("ans0", "ans1"):
        entry = question.get(answer)
        if not isinstance(entry, dict):
            raise BiaslensError(f"{path}: {key!r}: {q}.{answer} is missing")
        start = _probability(path, key, f"{q}.{answer}.start", entry.get("start"))
        end = _probability(path, key, f"{q}.{answer}.end", entry.get("end"))
        scores.append(math.sqrt(start * end))
    return scores
