"""Where benchmark files come from: pinned public URLs with sha256, or a local copy.

``biaslens datasets download NAME`` fetches a dataset's files from their repository pinned to
a commit, checks each sha256 and stores them under the data dir (default: the user cache dir).
``--data-dir`` or ``BIASLENS_DATA_DIR`` point at a local copy instead; the layout is
``DATA_DIR/NAME/FILE`` (the layout of the project's shared dataset folder).
"""

from __future__ import annotations

import hashlib
import os
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from biaslens.errors import BiaslensError
from biaslens.store import atomic

PACKAGE_FILES = Path(__file__).resolve().parent / "files"
"""Data files shipped inside the package (templates, name lists, lexicons)."""

ENV_DATA_DIR = "BIASLENS_DATA_DIR"


@dataclass(frozen=True)
class RemoteDataset:
    name: str
    base_url: str  # pinned to a commit
    files: dict[str, tuple[str, str]]  # local name -> (path under base_url, sha256)
    license: str


REMOTE: dict[str, RemoteDataset] = {
    "winogender": RemoteDataset(
        "winogender",
        "https://raw.githubusercontent.com/rudinger/winogender-schemas/"
        "1c7f8b481ad8a234b41e9f76a424d6e856e13f7f/data",
        {
            "templates.tsv": (
                "templates.tsv",
                "496f2e2dc77296bcebcdd8865a8dc5715ce22b772de9abb5f531d5b3114c48a0",
            ),
            "occupations-stats.tsv": (
                "occupations-stats.tsv",
                "3f7f37c16381a70571356982ea7fe613ac700ad04a6d3b19b9f2be18248df567",
            ),
            "all_sentences.tsv": (
                "all_sentences.tsv",
                "bd69da16bf228cb8df63fd0843aec2d8b5c36a7f21bf8c7b168bcc83932556c8",
            ),
        },
        "MIT",
    ),
}


def data_dir(explicit: Path | str | None = None) -> Path:
    """``explicit`` if given, else ``$BIASLENS_DATA_DIR``, else the user cache dir."""
    if explicit is not None:
        return Path(explicit)
    if os.environ.get(ENV_DATA_DIR):
        return Path(os.environ[ENV_DATA_DIR])
    from biaslens.models.offline import cache_root

    return cache_root() / "datasets"


def locate(name: str, explicit: Path | str | None = None) -> Path:
    """The folder holding dataset ``name``'s files; a clear error says how to get them."""
    if name not in REMOTE:
        raise BiaslensError(f"unknown dataset {name!r}; known: {', '.join(REMOTE)}")
    folder = data_dir(explicit) / name
    missing = [f for f in REMOTE[name].files if not (folder / f).is_file()]
    if missing:
        raise BiaslensError(
            f"dataset {name!r} not found in {folder} (missing {', '.join(missing)}): run "
            f"`biaslens datasets download {name}`, or pass --data-dir / set {ENV_DATA_DIR} to a "
            f"folder holding {name}/{missing[0]}"
        )
    return folder


def sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def download(name: str, explicit: Path | str | None = None, base_url: str | None = None) -> Path:
    """Fetch dataset ``name`` (pinned URLs), verify every sha256, store atomically."""
    if name not in REMOTE:
        raise BiaslensError(f"unknown dataset {name!r}; known: {', '.join(REMOTE)}")
    spec = REMOTE[name]
    folder = data_dir(explicit) / name
    for local, (remote, expected) in spec.files.items():
        url = f"{(base_url or spec.base_url).rstrip('/')}/{remote}"
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                payload = response.read()
        except OSError as error:
            raise BiaslensError(f"cannot fetch {url}: {error}") from None
        actual = hashlib.sha256(payload).hexdigest()
        if actual != expected:
            raise BiaslensError(f"{url}: sha256 {actual} does not match the pinned {expected}")
        atomic.write_bytes(folder / local, payload)
    return folder
