"""Provenance of a run: the package versions and the biaslens that wrote it (version, commit,
modified tree), recorded in every ``summary.json``."""

from __future__ import annotations

import importlib.metadata
import platform
import subprocess
from pathlib import Path
from typing import Any

from biaslens.models.registry import known_backends
from biaslens.version import BUILT_COMMIT, BUILT_DIRTY, __version__

PACKAGES = (
    "biaslens",
    "torch",
    "transformers",
    "tokenizers",
    "numpy",
    "pandas",
    "scipy",
    "statsmodels",
)
"""Recorded always (None where one is missing)."""


def package_versions() -> dict[str, str | None]:
    """Python, :data:`PACKAGES` and the packages the backends declare (those installed)."""
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    declared = [p for b in known_backends() for p in b.packages]  # those of the run's too
    for name in dict.fromkeys(declared):
        if name not in versions:
            try:
                versions[name] = importlib.metadata.version(name)
            except importlib.metadata.PackageNotFoundError:
                continue
    return versions


def build_info() -> dict[str, Any]:
    """The biaslens that writes a run: its version, the commit and whether the tree was modified.

    Run from a checkout of biaslens itself (``src/biaslens`` of the repository, an editable
    install), the commit and state are read from that checkout now; installed from a wheel,
    they are what was recorded when it was built. Never the git repository that merely holds the
    current folder or the environment."""
    checkout = _own_checkout()
    if checkout is not None:
        commit = _git(checkout, "rev-parse", "HEAD")
        if commit:
            changes = _git(checkout, "status", "--porcelain", "--untracked-files=no")
            return {
                "version": __version__,
                "commit": commit,
                "dirty": bool(changes),
                "source": "checkout",
            }
    return {"version": __version__, "commit": BUILT_COMMIT, "dirty": BUILT_DIRTY, "source": "build"}


def _own_checkout() -> Path | None:
    """The root of biaslens's own repository when the package runs from its ``src/`` there."""
    package = Path(__file__).resolve().parents[1]
    root = package.parent.parent
    if package.parent.name != "src" or not (root / ".git").exists():
        return None
    try:
        if 'name = "biaslens"' not in (root / "pyproject.toml").read_text(encoding="utf-8"):
            return None
    except OSError:
        return None
    top = _git(root, "rev-parse", "--show-toplevel")
    return root if top and Path(top).resolve() == root else None


def _git(root: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=5
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None
