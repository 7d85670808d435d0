"""A SQLite request cache in front of any backend, so that interrupted runs resume.

Each request is keyed by sha256(model identity, request type, request fields). Missing requests
are computed in chunks, and each chunk is committed as soon as it is done: an interrupted run
loses at most the chunk in flight, and a rerun recomputes nothing that finished.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

from biaslens.models.base import LM, ProgressCallback
from biaslens.models.requests import (
    AnswerSpanResult,
    ChoiceLogprobsResult,
    ContrastiveGenerateResult,
    GenerateResult,
    SpanScoresResult,
    TokenDistributionResult,
)

CHUNK = 256
_RESULT_TYPES = {
    "token_distribution": TokenDistributionResult,
    "span_scores": SpanScoresResult,
    "answer_span": AnswerSpanResult,
    "choice_logprobs": ChoiceLogprobsResult,
    "generate": GenerateResult,
    "contrastive_generate": ContrastiveGenerateResult,
}


def _tuples(value):
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


def request_key(model_key: str, request_type: str, request) -> str:
    payload = json.dumps(
        [model_key, request_type, dataclasses.asdict(request)], sort_keys=True, ensure_ascii=False
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def _request_size(request) -> int:
    return sum(len(v) for v in dataclasses.asdict(request).values() if isinstance(v, str))


class RequestCache:
    """The SQLite table ``responses(key, request_type, value)``."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.db = sqlite3.connect(path)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS responses ("
            "key TEXT PRIMARY KEY, request_type TEXT NOT NULL, value TEXT NOT NULL)"
        )
        self.db.commit()

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), 500):
            part = unique[start : start + 500]
            marks = ",".join("?" * len(part))
            rows = self.db.execute(
                f"SELECT key, value FROM responses WHERE key IN ({marks})", part
            ).fetchall()
            found.update(rows)
        return found

    def put_many(self, request_type: str, items: Sequence[tuple[str, str]]) -> None:
        with self.db:
            self.db.executemany(
                "INSERT OR REPLACE INTO responses (key, request_type, value) VALUES (?, ?, ?)",
                [(k, request_type, v) for k, v in items],
            )

    def count(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        self.db.close()


class CachedLM(LM):
    """Wraps a backend; answers from the cache what it can and the backend the rest.

    ``stats`` counts hits and computed requests, so a caller can show that a rerun reused work.
    """

    def __init__(self, inner: LM, cache: RequestCache, chunk_size: int | None = None) -> None:
        self.inner = inner
        self.identity = inner.identity
        self.cache = cache
        self.chunk_size = chunk_size or CHUNK
        self.stats = {"cached": 0, "computed": 0}

    def _answer(self, request_type: str, requests, progress: ProgressCallback | None):
        self.inner.require(request_type)
        compute: Callable = getattr(self.inner, request_type)
        result_type = _RESULT_TYPES[request_type]
        model_key = self.identity.cache_key()
        keys = [request_key(model_key, request_type, r) for r in requests]
        stored = self.cache.get_many(keys)
        results: list = [None] * len(requests)
        missing: dict[str, list[int]] = {}
        for i, key in enumerate(keys):
            if key in stored:
                results[i] = result_type(
                    **{k: _tuples(v) for k, v in json.loads(stored[key]).items()}
                )
            else:
                missing.setdefault(key, []).append(i)
        hits = len(requests) - sum(len(v) for v in missing.values())
        self.stats["cached"] += hits
        if progress is not None and hits:
            progress(hits)
        todo = sorted(missing, key=lambda k: _request_size(requests[missing[k][0]]))
        for start in range(0, len(todo), self.chunk_size):
            chunk = todo[start : start + self.chunk_size]
            answers = compute([requests[missing[k][0]] for k in chunk])
            self.cache.put_many(
                request_type,
                [
                    (k, json.dumps(dataclasses.asdict(a)))
                    for k, a in zip(chunk, answers, strict=True)
                ],
            )
            for key, answer in zip(chunk, answers, strict=True):
                for i in missing[key]:
                    results[i] = answer
                if progress is not None:
                    progress(len(missing[key]))
            self.stats["computed"] += len(chunk)
        return results

    def token_distribution(self, requests, progress=None):
        return self._answer("token_distribution", requests, progress)

    def span_scores(self, requests, progress=None):
        return self._answer("span_scores", requests, progress)

    def answer_span(self, requests, progress=None):
        return self._answer("answer_span", requests, progress)

    def choice_logprobs(self, requests, progress=None):
        return self._answer("choice_logprobs", requests, progress)

    def generate(self, requests, progress=None):
        return self._answer("generate", requests, progress)

    def contrastive_generate(self, requests, progress=None):
        return self._answer("contrastive_generate", requests, progress)
