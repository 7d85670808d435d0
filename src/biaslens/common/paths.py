"""Where biaslens keeps its caches (converted models, downloaded datasets, file hashes)."""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_cache_dir

CACHE_DIR_ENV = "BIASLENS_CACHE_DIR"


def cache_root() -> Path:
    """``$BIASLENS_CACHE_DIR``, else the user cache dir (``~/.cache/biaslens`` on Linux)."""
    return Path(os.environ.get(CACHE_DIR_ENV) or user_cache_dir("biaslens"))
