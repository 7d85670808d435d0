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

Each fault has its own line and way out (:func:`failure`):

* **damaged** (SQLite says corrupt or not a database, or its integrity check fails) or **of
  another layout** (a file by the cache's name whose tables are not biaslens's: another tool's,
  or an older layout): moved aside with a one-line warning naming where, and a new one started;
  a stored answer that cannot be read back is recomputed. Nothing wrong is ever reused.
* **written by a newer biaslens** (its format number is above :data:`CACHE_FORMAT`): left as it
  is, and the run stops: upgrade, or point the cache elsewhere.
* **busy** (another process holds a write lock): biaslens waits for it
  (``$BIASLENS_CACHE_BUSY_TIMEOUT`` seconds, 60 by default), then stops and leaves the file.
* **full disk**: every answer that still fits is committed, in smaller and smaller batches, and
  the run stops saying that the disk is full, where, and how many answers were kept.
* **read-only** folder or file, and **I/O errors**: one line each; the file stays where it is,
  with every answer it holds.
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
from biaslens.errors import BiaslensError
from biaslens.models.base import LM, ProgressCallback
from biaslens.models.requests import as_fields
from biaslens.models.runtime.forwarding import ForwardingLM

CHUNK = 256
REQUEST_CACHE_ENV = "BIASLENS_REQUEST_CACHE_DIR"
BUSY_TIMEOUT_ENV = "BIASLENS_CACHE_BUSY_TIMEOUT"
SQLITE_BUSY_CODES = {5, 6}  # SQLITE_BUSY, SQLITE_LOCKED
SQLITE_DAMAGE_CODES = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB (and their extended codes)
SQLITE_FULL, SQLITE_IOERR, SQLITE_READONLY, SQLITE_CANTOPEN = 13, 10, 8, 14
CACHE_FORMAT = 1
"""The layout of a cache file (``PRAGMA user_version``; 0: written before it was numbered, the
same layout)."""
COLUMNS = ("key", "request_type", "value")


class ForeignLayout(sqlite3.DatabaseError):
    """The file is an SQLite database, but not a biaslens request cache."""


class NewerFormat(sqlite3.DatabaseError):
    """The file was written by a newer biaslens."""


class FailedIntegrityCheck(sqlite3.DatabaseError):
    """``PRAGMA quick_check`` found the file damaged."""


def shared_cache_dir(given: Path | str | None = None) -> Path:
    """The folder of the shared request cache: ``given``, else ``$BIASLENS_REQUEST_CACHE_DIR``,
    else ``requests/`` in biaslens's user cache (``~/.cache/biaslens/requests`` on Linux)."""
    from biaslens.common.paths import cache_root

    if given is not None:
        return Path(given)
    return Path(os.environ.get(REQUEST_CACHE_ENV) or cache_root() / "requests")


def model_cache_file(folder: Path, identity) -> Path:
    """The shared cache file of one model identity: its name (readable) and its cache key (every
    answer in the file was given by exactly this model, revision and settings)."""
    last = identity.name.rstrip("/").rsplit("/", 1)[-1]  # a folder's or a hub repo's name
    readable = "".join(c if c.isalnum() or c in "-_." else "-" for c in last).strip("-.")
    return Path(folder) / f"{readable[:80] or 'model'}-{identity.cache_key()[:16]}.sqlite"


def busy_timeout() -> float:
    from biaslens.common.env import number_from_env

    return number_from_env(BUSY_TIMEOUT_ENV, 60.0, float, 0, 86400, "a number of seconds")


def is_busy(error: Exception) -> bool:
    """Whether an SQLite error says another connection holds a lock (not damage)."""
    code = getattr(error, "sqlite_errorcode", None)
    text = str(error).lower()
    return code in SQLITE_BUSY_CODES or "locked" in text or "database is busy" in text


def is_damage(error: Exception) -> bool:
    """Whether an SQLite error says the file itself is damaged (not busy, not a failed write)."""
    if isinstance(error, FailedIntegrityCheck):
        return True
    code = getattr(error, "sqlite_errorcode", None)
    if code is None:
        return "malformed" in str(error) or "not a database" in str(error)
    return code & 0xFF in SQLITE_DAMAGE_CODES


def is_full(error: Exception) -> bool:
    code = (getattr(error, "sqlite_errorcode", None) or 0) & 0xFF
    return code == SQLITE_FULL or "disk is full" in str(error) or "No space" in str(error)


SQLITE_IOERR_WRITE = 778


def is_refused_write(error: Exception) -> bool:
    """A write the file system refused (a file-size limit, a quota, a failing disk): SQLite's
    SQLITE_IOERR_WRITE, which, unlike a full disk, does not say why."""
    return getattr(error, "sqlite_errorcode", None) == SQLITE_IOERR_WRITE


ELSEWHERE = f"point --cache-dir or {REQUEST_CACHE_ENV} elsewhere (or --no-cache)"


def failure(path: Path, error: sqlite3.Error, kept: int | None = None) -> BiaslensError:
    """The one-line error for a cache that cannot be used as it is, one per fault (module
    docstring); the file is left as it is, with every answer it holds. ``kept``: answers of
    the batch in flight that were still stored (a full disk)."""
    if is_busy(error):
        return busy_error(path)
    if isinstance(error, NewerFormat):
        return BiaslensError(
            f"{path}: the request cache was written by a newer biaslens ({error}); it is left "
            f"as it is: upgrade biaslens, or {ELSEWHERE}"
        )
    if is_damage(error):
        return BiaslensError(
            f"{path}: the request cache is damaged ({error}); rerun the same command: the file "
            "is then moved aside and a new one started"
        )
    code = (getattr(error, "sqlite_errorcode", None) or 0) & 0xFF
    if is_full(error):
        where = _free_space(path.parent)
        stored = f"; {kept:,} answer(s) of the last batch still fit and are kept" if kept else ""
        return BiaslensError(
            f"{path}: the disk under the request cache is full{where}{stored}; every answer "
            f"stored before is kept: free space there, or {ELSEWHERE}, then rerun the same "
            "command to resume"
        )
    if (
        code in (SQLITE_READONLY, SQLITE_CANTOPEN)
        or "readonly" in str(error)
        or ("unable to open" in str(error))
    ):
        return BiaslensError(
            f"{path}: the request cache cannot be written ({error}): the folder or the file "
            f"is read-only or not yours; make it writable, or {ELSEWHERE}"
        )
    if is_refused_write(error):
        stored = f"; {kept:,} answer(s) of the last batch still fit and are kept" if kept else ""
        return BiaslensError(
            f"{path}: the file system refused a write to the request cache ({error}: a "
            f"file-size limit, a quota, a full or failing disk){stored}; every answer stored "
            f"before is kept: make room, or {ELSEWHERE}, then rerun the same command to resume"
        )
    if code == SQLITE_IOERR or "I/O error" in str(error):
        return BiaslensError(
            f"{path}: the file system reported an I/O error on the request cache ({error}); "
            f"the answers it holds are kept: check the disk, or {ELSEWHERE}, then rerun"
        )
    return BiaslensError(
        f"{path}: cannot use the request cache ({error}); the answers it holds are kept: "
        f"{ELSEWHERE}, then rerun the same command to resume"
    )


def _free_space(folder: Path) -> str:
    """`` (N KiB free on FOLDER)``, where the file system tells."""
    import shutil

    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return ""
    return f" ({free / 1024:,.0f} KiB free on {folder})"


def busy_error(path: Path) -> BiaslensError:
    return BiaslensError(
        f"{path}: the request cache is locked by another process (waited {busy_timeout():g} s); "
        "finished answers are kept: wait for the other process and rerun, or raise "
        f"{BUSY_TIMEOUT_ENV}"
    )


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
        self.chunk_size = chunk_size or getattr(inner, "cache_chunk_size", None) or CHUNK
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
        for start in range(0, len(todo), self.chunk_size):
            chunk = todo[start : start + self.chunk_size]
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
        return results
