"""The request cache tells its faults apart: each has its own line and way out, a file that is
not a request cache is moved aside (named) and the run goes on, a newer format is left alone,
and a full disk keeps every answer that still fits, so that a rerun reuses them."""

from __future__ import annotations

import json
import sqlite3

import pytest

from biaslens.errors import BiaslensError
from biaslens.store import cache as cache_module
from biaslens.store.cache import RequestCache
from biaslens.store.cache_faults import failure


def _answers(n: int, size: int = 400) -> list[tuple[str, str]]:
    return [(f"key-{i}", json.dumps({"text": "x" * size, "i": i})) for i in range(n)]


@pytest.mark.parametrize(
    "schema",
    [
        "CREATE TABLE responses (id INTEGER, blob TEXT)",  # the same name, other columns
        "CREATE TABLE things (a TEXT); CREATE TABLE other (b TEXT)",  # another tool's file
    ],
    ids=["other-columns", "other-tables"],
)
def test_a_file_of_another_layout_is_moved_aside_and_the_cache_goes_on(tmp_path, schema):
    path = tmp_path / "model-0123.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(schema)
    with pytest.warns(UserWarning, match="is not a request cache") as caught:
        cache = RequestCache(path)
    moved = list(tmp_path.glob("model-0123.sqlite.foreign-*"))
    assert len(moved) == 1 and str(moved[0]) in str(caught[0].message)
    cache.put_many("loglikelihood", _answers(3))
    assert cache.count() == 3
    with sqlite3.connect(moved[0]) as db:  # the other file is kept as it was
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables & {"things", "responses"}


def test_a_newer_format_is_left_alone_with_one_line(tmp_path):
    path = tmp_path / "model.sqlite"
    RequestCache(path).put_many("loglikelihood", _answers(2))
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version=7")
    before = path.read_bytes()
    with pytest.raises(BiaslensError) as refused:
        RequestCache(path)
    message = str(refused.value)
    assert "newer biaslens" in message and "format 7" in message and "\n" not in message
    assert path.read_bytes() == before and not list(tmp_path.glob("*.foreign-*"))


def test_an_older_file_of_the_same_layout_is_read_and_numbered(tmp_path):
    path = tmp_path / "model.sqlite"
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE responses (key TEXT PRIMARY KEY, request_type TEXT NOT NULL, "
            "value TEXT NOT NULL)"
        )
        db.execute("INSERT INTO responses VALUES ('k', 'loglikelihood', '{}')")
    cache = RequestCache(path)
    assert cache.get_many(["k"]) == {"k": "{}"}
    assert cache.db.execute("PRAGMA user_version").fetchone()[0] == cache_module.CACHE_FORMAT


def test_a_full_disk_keeps_what_fits_and_the_rerun_reuses_it(tmp_path, monkeypatch):
    """SQLite's own SQLITE_FULL (the file may not grow past ``max_page_count`` pages, as on a
    full disk): the batch in flight is stored in halves, quarters … until nothing more fits,
    the line says the disk is full and how many were kept, and a reopened cache has them."""
    path = tmp_path / "model.sqlite"
    RequestCache(path).close()
    opened = RequestCache._open

    def small(self):
        opened(self)
        pages = self.db.execute("PRAGMA page_count").fetchone()[0]
        self.db.execute(f"PRAGMA max_page_count={pages + 24}")

    monkeypatch.setattr(RequestCache, "_open", small)
    cache = RequestCache(path)
    with pytest.raises(BiaslensError) as refused:
        cache.put_many("loglikelihood", _answers(300))
    message = str(refused.value)
    assert "disk under the request cache is full" in message and "\n" not in message
    kept = cache.count()
    assert 0 < kept < 300 and f"{kept:,} answer(s) of the last batch" in message
    cache.close()
    monkeypatch.setattr(RequestCache, "_open", opened)  # space freed
    again = RequestCache(path)
    found = again.get_many([k for k, _ in _answers(300)])
    assert len(found) == kept


@pytest.mark.parametrize(
    ("code", "text", "expected"),
    [
        (13, "database or disk is full", "disk under the request cache is full"),
        (8, "attempt to write a readonly database", "read-only or not yours"),
        (14, "unable to open database file", "read-only or not yours"),
        (778, "disk I/O error", "refused a write"),
        (10, "disk I/O error", "reported an I/O error"),
        (5, "database is locked", "locked by another process"),
        (11, "database disk image is malformed", "damaged"),
    ],
    ids=["full", "readonly", "cantopen", "ioerr-write", "ioerr", "busy", "corrupt"],
)
def test_each_fault_has_its_own_line(tmp_path, code, text, expected):
    error = sqlite3.OperationalError(text)
    error.sqlite_errorcode = code
    message = str(failure(tmp_path / "m.sqlite", error))
    assert expected in message and "\n" not in message
    others = {"disk under the request cache is full", "read-only or not yours",
              "refused a write", "reported an I/O error", "locked by another process",
              "damaged"} - {expected}  # fmt: skip
    assert not any(other in message for other in others)
