"""The weight-hash memo: a file changed in place is hashed again, whatever its mtime says."""

from __future__ import annotations

import os
import time

import pytest

from biaslens.common import hashing


@pytest.fixture
def weights(tmp_path, monkeypatch):
    """A file large enough for its hash to be remembered, with an empty memo of its own."""
    monkeypatch.setenv("BIASLENS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(hashing, "_memo", None)
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"a" * (hashing.REMEMBER_ABOVE + 10))
    return path


def test_in_place_edit_with_restored_mtime_is_rehashed(weights):
    before = os.stat(weights)
    first = hashing.sha256_file(weights)
    time.sleep(0.01)
    with open(weights, "r+b") as handle:  # same size, same inode
        handle.seek(5)
        handle.write(b"b")
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(weights)
    assert (after.st_size, after.st_ino, after.st_mtime_ns) == (
        before.st_size,
        before.st_ino,
        before.st_mtime_ns,
    )
    second = hashing.sha256_file(weights)
    assert second != first
    assert second == hashing._digest(weights)


def test_unchanged_file_is_served_from_the_memo(weights, monkeypatch):
    first = hashing.sha256_file(weights)
    calls = []
    monkeypatch.setattr(hashing, "_digest", lambda path: calls.append(path) or "other")
    assert hashing.sha256_file(weights) == first
    assert calls == []
