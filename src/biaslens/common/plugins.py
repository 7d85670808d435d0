"""Plug-ins found through entry points: a package of the user's own adds a method or a backend
without a change to biaslens, as pytest and lm-evaluation-harness find theirs.

A plug-in package declares, in its ``pyproject.toml``::

    [project.entry-points."biaslens.methods"]
    my-probe = "my_package.probe"              # a module whose import registers a MethodSpec

    [project.entry-points."biaslens.backends"]
    my-backend = "my_package.backend:BACKEND"  # a biaslens.models.registry.RegisteredBackend

Once installed, ``biaslens run my-probe`` and ``--backend my-backend`` work like the built-in
ones. A plug-in that cannot be imported never stops biaslens: it is named once on stderr with
its error, left out, and named again where the user asks for it by name.
``BIASLENS_NO_PLUGINS=1`` loads none.
"""

from __future__ import annotations

import os
import sys
from functools import cache
from importlib import metadata

METHODS = "biaslens.methods"
BACKENDS = "biaslens.backends"
NO_PLUGINS_ENV = "BIASLENS_NO_PLUGINS"
"""Set to 1: no plug-in is loaded (biaslens as it ships, whatever is installed beside it)."""

_FAILED: dict[str, dict[str, str]] = {}


def _origin(entry: metadata.EntryPoint) -> str:
    dist = getattr(entry, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else entry.value


@cache
def load(group: str) -> dict[str, object]:
    """Every entry point of ``group`` loaded, by name (sorted); those that fail are left out
    and listed by :func:`failures`."""
    loaded: dict[str, object] = {}
    failed = _FAILED.setdefault(group, {})
    if os.environ.get(NO_PLUGINS_ENV) == "1":
        return loaded
    for entry in sorted(metadata.entry_points(group=group), key=lambda e: e.name):
        try:
            loaded[entry.name] = entry.load()
        except Exception as error:  # a plug-in's own bug must not stop biaslens
            failed[entry.name] = (
                f"the {group} plug-in {entry.name!r} ({entry.value}, from {_origin(entry)}) "
                f"could not be loaded: {type(error).__name__}: {error}"
            )
            print(f"warning: {failed[entry.name]}", file=sys.stderr)
    return loaded


def failures(group: str) -> dict[str, str]:
    """The plug-ins of ``group`` that could not be loaded, by name, with why."""
    load(group)
    return dict(_FAILED.get(group, {}))


def refresh() -> None:
    """Find plug-ins again (after installing one into the running interpreter)."""
    load.cache_clear()
    _FAILED.clear()
