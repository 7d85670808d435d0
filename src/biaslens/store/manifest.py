"""The files a finished run consists of, named with their sizes and digests in its summary.

A run's outputs (tables, samples, plots) change together: the first output a process writes
removes ``summary.json`` and ``report.html`` (the run reads as incomplete from then on), and
the new ``summary.json`` names every output with its size and sha256. A run killed while it
replaces its outputs is never read as finished with a mix of two runs' files, and a file changed
after the run finished is a one-line error, not a silent part of a report.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from biaslens.common.hashing import sha256_file
from biaslens.errors import BiaslensError
from biaslens.store.paths import inside_run, output_name

OUTPUTS_KEY = "outputs"


def describe(root: Path, names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``{name: {"bytes": size, "sha256": digest}}`` for each output written (in order)."""
    described = {}
    for name in names:
        path = inside_run(root, name)
        if path.is_file():
            described[name] = {"bytes": path.stat().st_size, "sha256": sha256_file(path)}
    return described


def remove_finished_marks(root: Path, names: Iterable[str]) -> None:
    """Remove the files that say a run finished (its summary and report), durably, before any
    output of a new attempt replaces an old one."""
    removed = False
    for name in names:
        path = inside_run(root, name)
        if path.is_file():
            path.unlink()
            removed = True
    if removed and hasattr(os, "O_DIRECTORY"):
        descriptor = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def checked(root: Path, summary_path: Path, recorded: Any) -> list[Path]:
    """The outputs a summary names, each present with the size and digest it recorded (one
    line naming the file otherwise: the run's files no longer belong together)."""
    if not isinstance(recorded, dict):
        raise BiaslensError(f"{summary_path}: {OUTPUTS_KEY} must be a mapping of file names")
    paths = []
    for name, facts in recorded.items():
        path = inside_run(root, output_name(name, summary_path))
        if not isinstance(facts, dict) or not isinstance(facts.get("sha256"), str):
            raise BiaslensError(f"{summary_path}: {OUTPUTS_KEY}[{name!r}] needs a sha256")
        if not path.is_file():  # a link is refused by inside_run
            problem = "is missing" if not path.exists() else "is not a regular file"
            raise BiaslensError(f"{path} {problem}, but {summary_path.name} names it; {_RERUN}")
        if path.stat().st_size != facts.get("bytes") or sha256_file(path) != facts["sha256"]:
            raise BiaslensError(
                f"{path} changed after the run finished (its size or sha256 differs from "
                f"{summary_path.name}); {_RERUN}"
            )
        paths.append(path)
    return paths


_RERUN = "rerun the same command to rebuild the run's outputs from its request cache"
