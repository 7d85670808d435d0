"""A SQLite request cache in front of any backend, so that interrupted runs resume and every
run reuses the answers any earlier run computed.

The cache is shared across run folders: one file per model identity under
``~/.cache/biaslens/requests/`` (``$BIASLENS_REQUEST_CACHE_DIR``, or ``--cache-dir``), so another
``--limit``, ``--output`` or method asks the model only what no run asked it before. SQLite's
write-ahead log lets concurrent runs read and write the same file. ``--no-cache`` keeps the
answers in the run folder instead (the run still resumes; nothing is shared).

Each request is keyed by sha256(model identity, request type, request fields), where the model
identity covers everything that changes an answer (weights, config, generation config,
tokenizer, dtype, device class, backend options; see :class:`ModelIdentity`). Missing requests
are computed in chunks, and each chunk is committed as soon as it is done: an interrupted run
loses at most the chunk in flight, and a rerun recomputes nothing that finished.

Its faults (damaged, another layout, a newer format, busy, a full disk, read-only, I/O
errors) each have their own line and way out: :mod:`.cache_faults`.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

from biaslens.common.files import make_dir
from biaslens.common.paths import cache_root
from biaslens.errors import BiaslensError
from biaslens.models.base import LM, ProgressCallback
from biaslens.models.requests import as_fields
from biaslens.models.runtime.forwarding import ForwardingLM
from biaslens.store.cache_faults import (
    CACHE_FORMAT,
    COLUMNS,
    REQUEST_CACHE_ENV,
    FailedIntegrityCheck,
    ForeignLayout,
    NewerFormat,
    busy_timeout,
    failure,
    is_busy,
    is_damage,
    is_full,
    is_refused_write,
)

CHUNK = 256
"""The most requests a local model is given at once (and the most a failure can lose)."""
CHUNK_SECONDS = 4.0
"""A local model's chunks are sized to about this much work (from its speed on the chunks
before), so that answers are kept and progress moves at least every few seconds however slow
the model: an interrupted run loses seconds, not a chunk of minutes."""
FIRST_CHUNK = 8
"""The first chunk of a local model, before its speed is known."""


def shared_cache_dir(given: Path | str | None = None) -> Path:
    """The folder of the shared request cache: ``given``, else ``$BIASLENS_REQUEST_CACHE_DIR``,
    else ``requests/`` in biaslens's user cache (``~/.cache/biaslens/requests`` on Linux)."""
    if given is not None:
        return Path(given)
    return Path(os.environ.get(REQUEST_CACHE_ENV) or cache_root() / "requests")


def model_cache_file(folder: Path, identity) -> Path:
    """The shared cache file of one model identity: its name (readable) and its cache key (every
    answer in the file was given by exactly this model, revision and settings)."""
    last = identity.name.rstrip("/").rsplit("/", 1)[-1]  # a folder's or a hub repo's name
    readable = "".join(c if c.isalnum() or c in "-_." else "-" for c in last).strip("-.")
    return Path(folder) / f"{readable[:80] or 'model'}-{identity.cache_key()[:16]}.sqlite"


def _tuples(value):
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


def request_key(model_key: str, request) -> str:
    payload = json.dumps(
        [model_key, type(request).request_type.value, as_fields(request)],
        sort_keys=True,
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def _request_size(request) -> int:
    return sum(len(v) for v in as_fields(request).values() if isinstance(v, str))


class RequestCache:
    """The SQLite table ``responses(key, request_type, value)``."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        make_dir(self.path.parent, "request cache folder")
        try:
            self._open()
        except sqlite3.DatabaseError as error:
            movable = isinstance(error, ForeignLayout) or is_damage(error)
            if is_busy(error) or isinstance(error, NewerFormat) or not movable:
                raise failure(self.path, error) from None
            try:
                self._move_aside(error)
                self._open()
            except OSError as again:
                raise BiaslensError(
                    f"{self.path}: the request cache is damaged ({error}) and cannot be moved "
                    f"aside ({again.strerror}); move or delete it, then rerun"
                ) from None
            except sqlite3.DatabaseError as again:
                raise failure(self.path, again) from None

    def _open(self) -> None:
        try:
            self.db = sqlite3.connect(self.path, timeout=busy_timeout())
        except sqlite3.OperationalError as error:  # cannot open: never damage
            raise failure(self.path, error) from None
        try:
            check = self.db.execute("PRAGMA quick_check").fetchone()
            if not check or check[0] != "ok":
                raise FailedIntegrityCheck(f"integrity check: {check[0] if check else 'failed'}")
            self._check_layout()
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS responses ("
                "key TEXT PRIMARY KEY, request_type TEXT NOT NULL, value TEXT NOT NULL)"
            )
            if self.db.execute("PRAGMA user_version").fetchone()[0] != CACHE_FORMAT:
                self.db.execute(f"PRAGMA user_version={CACHE_FORMAT}")
            self.db.commit()
        except sqlite3.DatabaseError:
            self.db.close()
            raise

    def _check_layout(self) -> None:
        """A newer format is refused; tables that are not a request cache's are a foreign
        layout (an empty file is a new cache)."""
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version > CACHE_FORMAT:
            raise NewerFormat(f"format {version}; this biaslens reads {CACHE_FORMAT}")
        tables = {
            row[0] for row in self.db.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        if not tables:
            return
        columns = tuple(row[1] for row in self.db.execute("PRAGMA table_info(responses)"))
        if tables != {"responses"} or columns != COLUMNS:
            shown = ", ".join(sorted(tables))
            raise ForeignLayout(
                f"another layout: tables {shown}; a request cache has responses"
                f"({', '.join(COLUMNS)})"
            )

    def _move_aside(self, error: Exception) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        kind = "foreign" if isinstance(error, ForeignLayout) else "corrupt"
        moved = self.path.with_name(f"{self.path.name}.{kind}-{stamp}")
        os.replace(self.path, moved)
        for suffix in ("-wal", "-shm"):
            side = Path(f"{self.path}{suffix}")
            if side.exists():
                os.replace(side, Path(f"{moved}{suffix}"))
        what = "file is not a request cache" if kind == "foreign" else "request cache is damaged"
        warnings.warn(
            f"{self.path}: the {what} ({error}); moved it to {moved} and started a new "
            "request cache (its answers will be recomputed)",
            stacklevel=3,
        )

    def get_many(self, keys: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        unique = list(dict.fromkeys(keys))
        try:
            for start in range(0, len(unique), 500):
                part = unique[start : start + 500]
                marks = ",".join("?" * len(part))
                rows = self.db.execute(
                    f"SELECT key, value FROM responses WHERE key IN ({marks})", part
                ).fetchall()
                found.update(rows)
        except sqlite3.Error as error:
            raise failure(self.path, error) from None
        return found

    def put_many(self, request_type: str, items: Sequence[tuple[str, str]]) -> None:
        """Store answers in one transaction; where the disk fills, store as many as still fit
        (halves, then quarters … committed one by one), then stop with the full-disk line."""
        rows = [(k, request_type, v) for k, v in items]
        try:
            self._insert(rows)
        except sqlite3.Error as error:
            room = is_full(error) or is_refused_write(error)
            kept = self._insert_what_fits(rows) if room else None
            raise failure(self.path, error, kept) from None

    def _insert(self, rows) -> None:
        with self.db:
            self.db.executemany(
                "INSERT OR REPLACE INTO responses (key, request_type, value) VALUES (?, ?, ?)",
                rows,
            )

    def _insert_what_fits(self, rows) -> int:
        """After a full disk: the rows that still fit, in ever smaller committed batches."""
        kept, size = 0, max(1, len(rows) // 2)
        start = 0
        while start < len(rows) and size >= 1:
            try:
                self._insert(rows[start : start + size])
            except sqlite3.Error as error:
                if not (is_full(error) or is_refused_write(error)):
                    break
                size //= 2
                continue
            kept += len(rows[start : start + size])
            start += size
        return kept

    def count(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        self.db.close()


class RequestLimitReached(BiaslensError):
    """The run asked for more new answers than ``--max-requests`` allows."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"stopped after {limit:,} new request(s) (--max-requests); their answers are kept in "
            "the run's cache: rerun the same command (with a larger --max-requests, or none) to "
            "go on"
        )


class CachedLM(ForwardingLM):
    """Wraps a backend; answers from the cache what it can and the backend the rest.

    ``cache`` may be a :class:`RequestCache` or a function returning one, called on first use
    (so that a run folder is only created once there is something to keep). ``stats`` counts
    reused and computed requests, so a caller can show that a rerun reused work (pass one
    ``stats`` to several wrappers to count them together).
    ``max_new``: computing more requests than this stops the run with
    :class:`RequestLimitReached` once the first ``max_new`` answers are stored (``--max-requests``).
    """

    def __init__(
        self,
        inner: LM,
        cache: RequestCache | Callable[[], RequestCache],
        chunk_size: int | None = None,
        max_new: int | None = None,
        stats: dict[str, int] | None = None,
    ) -> None:
        self.inner = inner
        self.max_new = max_new
        self.identity = inner.identity
        self._cache = cache
        # a backend over the network commits small chunks, so that a failure loses little
        fixed = chunk_size or getattr(inner, "cache_chunk_size", None)
        self.chunk_size = fixed or CHUNK
        self.adaptive = fixed is None  # a local model's chunks follow its speed
        self.stats = stats if stats is not None else {"cached": 0, "computed": 0}

    @property
    def cache(self) -> RequestCache:
        if not isinstance(self._cache, RequestCache):
            self._cache = self._cache()
        return self._cache

    @property
    def capabilities(self):
        return self.inner.capabilities

    def require(self, request_type, exact: bool = True, alternative: str = "") -> None:
        self.inner.require(request_type, exact, alternative)

    def _decode(self, result_type, stored: str):
        try:
            return result_type(**{k: _tuples(v) for k, v in json.loads(stored).items()})
        except (TypeError, ValueError):
            return None  # unreadable: recompute

    def _answer(self, requests, progress: ProgressCallback | None):
        if not requests:
            return []
        request_type = type(requests[0]).request_type
        self.inner.require(request_type, exact=False)
        compute: Callable = getattr(self.inner, request_type.value)
        result_type = type(requests[0]).result_type
        model_key = self.identity.cache_key()
        keys = [request_key(model_key, r) for r in requests]
        stored = self.cache.get_many(keys)
        results: list = [None] * len(requests)
        missing: dict[str, list[int]] = {}
        for i, key in enumerate(keys):
            value = self._decode(result_type, stored[key]) if key in stored else None
            if value is not None:
                results[i] = value
            else:
                missing.setdefault(key, []).append(i)
        hits = len(requests) - sum(len(v) for v in missing.values())
        self.stats["cached"] += hits
        if progress is not None and hits:
            progress(hits)
        todo = sorted(missing, key=lambda k: _request_size(requests[missing[k][0]]))
        start, size = 0, min(FIRST_CHUNK, self.chunk_size) if self.adaptive else self.chunk_size
        while start < len(todo):
            chunk = todo[start : start + size]
            start += len(chunk)
            began = self.clock()
            limited = (
                self.max_new is not None and self.stats["computed"] + len(chunk) > self.max_new
            )
            if limited:
                chunk = chunk[: max(0, self.max_new - self.stats["computed"])]
            if not chunk:
                raise RequestLimitReached(self.max_new)
            answers = compute([requests[missing[k][0]] for k in chunk])
            self.cache.put_many(
                request_type.value,
                [(k, json.dumps(as_fields(a))) for k, a in zip(chunk, answers, strict=True)],
            )
            for key, answer in zip(chunk, answers, strict=True):
                for i in missing[key]:
                    results[i] = answer
                if progress is not None:
                    progress(len(missing[key]))
            self.stats["computed"] += len(chunk)
            if limited:
                raise RequestLimitReached(self.max_new)
            size = self._next_size(len(chunk), self.clock() - began, size)
        return results

    clock = staticmethod(time.monotonic)
    """Where chunk timings come from (a test gives its own)."""

    def _next_size(self, done: int, seconds: float, size: int) -> int:
        """The next chunk's size: about :data:`CHUNK_SECONDS` of work at the speed of the chunk
        just done, at most :attr:`chunk_size` (fixed where the size was given)."""
        if not self.adaptive:
            return self.chunk_size
        if seconds <= 0:
            return min(self.chunk_size, 2 * size)
        return max(1, min(self.chunk_size, int(done / seconds * CHUNK_SECONDS)))
