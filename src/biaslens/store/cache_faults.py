"""The request cache's faults told apart, each with its own one-line error and way out.

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

import shutil
import sqlite3
from pathlib import Path

from biaslens.common.env import number_from_env
from biaslens.errors import BiaslensError

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


def busy_timeout() -> float:
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
