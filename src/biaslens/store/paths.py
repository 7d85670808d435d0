"""Paths inside a run folder: never through a symbolic link, never outside it."""

from __future__ import annotations

import hashlib
from pathlib import Path, PurePosixPath

from biaslens.errors import BiaslensError

ANOTHER_OUTPUT = "choose another output folder (--output, or output= in Python)"
"""How every message about an unusable run folder ends (the CLI's flag and the API's keyword)."""


def inside_run(root: Path | str, name: str | Path) -> Path:
    """``root / name``, refusing a symbolic link anywhere below ``root`` on the way: a link
    in a run folder (``.lock`` → ``/etc/passwd``, ``plots`` → elsewhere) would make a write land
    outside it. biaslens writes only inside the run folder and never follows links there."""
    root = Path(root)
    current = root
    for part in Path(name).parts:
        current = current / part
        if current.is_symlink():
            raise BiaslensError(
                f"{current} is a symbolic link; biaslens does not follow links inside a run "
                f"folder: remove it, or {ANOTHER_OUTPUT}"
            )
    return current


def output_name(name: object, where: Path) -> str:
    """A file name a run's summary records (``fits.csv``, ``plots/x.png``), checked as untrusted
    input: relative, forward slashes, no ``..``, nothing that leaves the run folder."""
    if not isinstance(name, str) or not name or "\\" in name or "\x00" in name:
        raise BiaslensError(f"{where}: output name {name!r} is not a relative file name")
    parts = PurePosixPath(name).parts
    if PurePosixPath(name).is_absolute() or any(p in ("..", ".") for p in parts):
        raise BiaslensError(f"{where}: output {name!r} lies outside the run folder")
    return name


MAX_FOLDER_NAME = 120
"""Bytes of a run folder name made from a model name (file systems allow 255 per name)."""


def safe_name(model: str) -> str:
    """A model name or path as one folder name (``org/model`` -> ``org--model``); a name too
    long for a folder keeps its start and gets a hash of the whole (so two long names differ)."""
    name = str(model).strip("/").replace("/", "--") or "model"
    if len(name.encode()) <= MAX_FOLDER_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:12]
    head = name.encode()[: MAX_FOLDER_NAME - 13].decode("utf-8", "ignore")
    return f"{head}-{digest}"
