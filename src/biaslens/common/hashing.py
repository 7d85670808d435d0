"""sha256 of files, remembered across runs for large files (model weights).

Hashing a multi-GB checkpoint on every run would cost seconds to minutes, so the digest of a
file over 1 MB is kept in ``<cache>/file-hashes.json`` keyed by its real path, size, inode,
modification time and status-change time (ns), as git's index does: a file edited in place
with its modification time set back still has a new ctime (which user space cannot set), so
any change to the file makes a new digest.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from biaslens.common.paths import cache_root

REMEMBER_ABOVE = 1 << 20
_memo: dict[str, str] | None = None


def _memo_path() -> Path:
    return cache_root() / "file-hashes.json"


def _load_memo() -> dict[str, str]:
    global _memo
    if _memo is None:
        try:
            loaded = json.loads(_memo_path().read_text(encoding="utf-8"))
            _memo = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError):
            _memo = {}
    return _memo


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 24), b""):
            digest.update(chunk)
    return digest.hexdigest()


def memo_key(path: Path, stat: os.stat_result) -> str:
    """What identifies one version of a file without reading it (see the module docstring)."""
    return (
        f"{os.path.realpath(path)}|{stat.st_size}|{stat.st_ino}|{stat.st_mtime_ns}"
        f"|{stat.st_ctime_ns}"
    )


def sha256_file(path: Path | str) -> str:
    """The file's sha256 (hex)."""
    path = Path(path)
    stat = path.stat()
    if stat.st_size <= REMEMBER_ABOVE:
        return _digest(path)
    key = memo_key(path, stat)
    memo = _load_memo()
    if key not in memo:
        memo[key] = _digest(path)
        try:
            from biaslens.common import atomic

            atomic.write_bytes(_memo_path(), json.dumps(memo, indent=0).encode())
        except Exception:  # a read-only cache only costs the next run a re-hash
            pass
    return memo[key]


def sha256_files(files: list[Path], root: Path) -> str:
    """One sha256 over several files: each file's path relative to ``root`` and digest."""
    digest = hashlib.sha256()
    for file in sorted(files):
        digest.update(str(file.relative_to(root)).encode())
        digest.update(sha256_file(file).encode())
    return digest.hexdigest()
